//! The composite GitHub Action (`action.yml`), run for real without GitHub.
//!
//! The emulation does what the runner does for a composite action's `run:` steps: it substitutes
//! the `${{ … }}` expressions (inputs with their defaults, `github.*`, `runner.*`, `env.*`, and
//! `steps.<id>.outputs.*` read back from each step's `GITHUB_OUTPUT` file), sets each step's
//! `env:`, runs the script with `bash --noprofile --norc -eo pipefail` (what `shell: bash`
//! means) in the workspace, stops at the first failing step, applies `GITHUB_ENV`/`GITHUB_PATH`
//! to the steps after, and evaluates the action's `outputs:`. `uses:` steps (the binary cache)
//! are skipped, and `GITOPS_LINT_BIN` points the build step at the test build, so no release
//! build runs here. It does not emulate `if:` on run steps (the test refuses them), expression
//! functions or operators, annotation limits, or the rendering of workflow commands.
#![allow(clippy::unwrap_used)] // a test stops at the first thing that is not as expected

mod common;

use gitops_lint::yaml::{self, Node};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_gitops-lint");

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

// ---------------------------------------------------------------------------------------------
// action.yml

struct Step {
    name: String,
    id: Option<String>,
    run: Option<String>,
    uses: Option<String>,
    shell: Option<String>,
    condition: Option<String>,
    env: Vec<(String, String)>,
    working_directory: Option<String>,
}

struct Action {
    /// Input name → default.
    inputs: BTreeMap<String, String>,
    /// Output name → its `value:` expression.
    outputs: BTreeMap<String, String>,
    steps: Vec<Step>,
}

fn parse_yaml(text: &str, what: &str) -> Node {
    let parsed = yaml::parse(0, text, Default::default());
    assert!(
        parsed.problems.is_empty(),
        "{what} does not parse: {:?}",
        parsed.problems
    );
    assert_eq!(parsed.documents.len(), 1, "{what} has one document");
    parsed.documents.into_iter().next().unwrap().root
}

fn string_map(node: Option<&Node>) -> Vec<(String, String)> {
    node.map(|n| {
        n.entries()
            .iter()
            .map(|e| {
                let key = e.key.as_str().expect("string key").to_string();
                let value = e
                    .value
                    .as_str()
                    .unwrap_or_else(|| panic!("{key}: a scalar"));
                (key, value.to_string())
            })
            .collect()
    })
    .unwrap_or_default()
}

fn load_action() -> Action {
    let text = std::fs::read_to_string(root().join("action.yml")).expect("action.yml exists");
    let doc = parse_yaml(&text, "action.yml");
    let inputs = doc
        .get("inputs")
        .expect("inputs")
        .entries()
        .iter()
        .map(|e| {
            let name = e.key.as_str().unwrap().to_string();
            let default = e.value.str_at("default").unwrap_or("").to_string();
            (name, default)
        })
        .collect();
    let outputs = doc
        .get("outputs")
        .expect("outputs")
        .entries()
        .iter()
        .map(|e| {
            let name = e.key.as_str().unwrap().to_string();
            (
                name,
                e.value.str_at("value").expect("output value").to_string(),
            )
        })
        .collect();
    let runs = doc.get("runs").expect("runs");
    assert_eq!(runs.str_at("using"), Some("composite"));
    let steps = runs
        .get("steps")
        .expect("steps")
        .items()
        .iter()
        .map(|s| Step {
            name: s.str_at("name").unwrap_or("(unnamed)").to_string(),
            id: s.str_at("id").map(str::to_string),
            run: s.str_at("run").map(str::to_string),
            uses: s.str_at("uses").map(str::to_string),
            shell: s.str_at("shell").map(str::to_string),
            condition: s.str_at("if").map(str::to_string),
            env: string_map(s.get("env")),
            working_directory: s.str_at("working-directory").map(str::to_string),
        })
        .collect();
    Action {
        inputs,
        outputs,
        steps,
    }
}

// ---------------------------------------------------------------------------------------------
// The runner

/// One run of the action.
struct Job<'a> {
    with: Vec<(&'a str, &'a str)>,
    /// Extra environment for every step (`None` removes a variable).
    env: Vec<(&'a str, Option<String>)>,
    /// Replaces PATH for every step.
    path: Option<String>,
    /// `github.action_ref` and `github.action_repository`: empty, as for `uses: ./`.
    action_ref: &'a str,
    action_repository: &'a str,
    /// Where the action is checked out (`GITHUB_ACTION_PATH`); this repository by default.
    action_path: Option<PathBuf>,
}

impl Default for Job<'_> {
    fn default() -> Self {
        Job {
            with: Vec::new(),
            env: vec![("GITOPS_LINT_BIN", Some(BIN.to_string()))],
            path: None,
            action_ref: "",
            action_repository: "",
            action_path: None,
        }
    }
}

struct Outcome {
    /// Exit status of the first failing step, or 0.
    code: i32,
    failed_step: Option<String>,
    stdout: String,
    stderr: String,
    /// The action's `outputs:`, evaluated after the steps.
    outputs: BTreeMap<String, String>,
    /// `GITHUB_OUTPUT` of each step with an id.
    step_outputs: BTreeMap<String, BTreeMap<String, String>>,
    /// The steps' `GITHUB_STEP_SUMMARY` files, concatenated as the job summary shows them.
    summary: String,
    skipped: Vec<String>,
}

struct Context<'a> {
    action: &'a Action,
    job: &'a Job<'a>,
    action_path: &'a Path,
    with: &'a [(&'a str, &'a str)],
    workspace: &'a Path,
    temp: &'a Path,
    env: &'a BTreeMap<String, String>,
    step_outputs: &'a BTreeMap<String, BTreeMap<String, String>>,
}

impl Context<'_> {
    fn eval(&self, expr: &str) -> String {
        let parts: Vec<&str> = expr.split('.').collect();
        match parts.as_slice() {
            ["inputs", name] => {
                let default = self
                    .action
                    .inputs
                    .get(*name)
                    .unwrap_or_else(|| panic!("`{expr}`: no input `{name}` is declared"));
                self.with
                    .iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.to_string())
                    .unwrap_or_else(|| default.clone())
            }
            ["github", "action_path"] => self.action_path.display().to_string(),
            ["github", "action_ref"] => self.job.action_ref.to_string(),
            ["github", "action_repository"] => self.job.action_repository.to_string(),
            ["github", "workspace"] => self.workspace.display().to_string(),
            ["runner", "temp"] => self.temp.display().to_string(),
            ["runner", "os"] => "Linux".into(),
            ["runner", "arch"] => "X64".into(),
            ["env", name] => self.env.get(*name).cloned().unwrap_or_default(),
            // A step that did not run or did not set the output yields an empty string.
            ["steps", id, "outputs", name] => self
                .step_outputs
                .get(*id)
                .and_then(|o| o.get(*name))
                .cloned()
                .unwrap_or_default(),
            _ => panic!("the emulation does not evaluate `${{{{ {expr} }}}}`"),
        }
    }

    fn substitute(&self, text: &str) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(start) = rest.find("${{") {
            out.push_str(&rest[..start]);
            let end = rest[start..].find("}}").expect("closed expression") + start;
            out.push_str(&self.eval(rest[start + 3..end].trim()));
            rest = &rest[end + 2..];
        }
        out.push_str(rest);
        out
    }
}

/// Reads a file-command file (`GITHUB_OUTPUT`, `GITHUB_ENV`): `name=value` lines and
/// `name<<DELIMITER` … `DELIMITER` blocks.
fn file_commands(path: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut out = BTreeMap::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.is_empty() {
            continue;
        }
        if let Some((name, delimiter)) = line.split_once("<<") {
            let mut value = Vec::new();
            for l in lines.by_ref() {
                if l == delimiter {
                    break;
                }
                value.push(l);
            }
            out.insert(name.to_string(), value.join("\n"));
        } else {
            let (name, value) = line
                .split_once('=')
                .unwrap_or_else(|| panic!("malformed file command line {line:?}"));
            out.insert(name.to_string(), value.to_string());
        }
    }
    out
}

fn run_action(action: &Action, workspace: &Path, runner_temp: &Path, job: &Job) -> Outcome {
    for (name, _) in &job.with {
        assert!(action.inputs.contains_key(*name), "no input `{name}`");
    }
    let files = tempfile::tempdir().unwrap();
    let mut env: BTreeMap<String, String> = std::env::vars()
        .filter(|(k, _)| {
            !(k.starts_with("GITHUB_") || k.starts_with("RUNNER_") || k.starts_with("INPUT_"))
        })
        .collect();
    env.remove("GITOPS_LINT_BIN");
    env.remove("CI");
    for (k, v) in &job.env {
        match v {
            Some(v) => env.insert(k.to_string(), v.clone()),
            None => env.remove(*k),
        };
    }
    if let Some(path) = &job.path {
        env.insert("PATH".into(), path.clone());
    }
    let action_path = job.action_path.clone().unwrap_or_else(root);
    let runner: [(&str, String); 7] = [
        ("CI", "true".into()),
        ("GITHUB_ACTIONS", "true".into()),
        ("GITHUB_ACTION_PATH", action_path.display().to_string()),
        ("GITHUB_WORKSPACE", workspace.display().to_string()),
        ("RUNNER_TEMP", runner_temp.display().to_string()),
        ("RUNNER_OS", "Linux".into()),
        ("RUNNER_ARCH", "X64".into()),
    ];
    for (k, v) in runner {
        env.insert(k.into(), v);
    }

    let mut outcome = Outcome {
        code: 0,
        failed_step: None,
        stdout: String::new(),
        stderr: String::new(),
        outputs: BTreeMap::new(),
        step_outputs: BTreeMap::new(),
        summary: String::new(),
        skipped: Vec::new(),
    };
    for (i, step) in action.steps.iter().enumerate() {
        let Some(script) = &step.run else {
            outcome.skipped.push(step.name.clone());
            continue;
        };
        assert_eq!(
            step.shell.as_deref(),
            Some("bash"),
            "{}: shell: bash",
            step.name
        );
        assert!(
            step.condition.is_none(),
            "{}: the emulation does not evaluate `if:` on run steps",
            step.name
        );
        let cx = Context {
            action,
            job,
            action_path: &action_path,
            with: &job.with,
            workspace,
            temp: runner_temp,
            env: &env,
            step_outputs: &outcome.step_outputs,
        };
        let mut step_env = env.clone();
        for (k, v) in &step.env {
            step_env.insert(k.clone(), cx.substitute(v));
        }
        let dir = step
            .working_directory
            .as_ref()
            .map(|d| PathBuf::from(cx.substitute(d)))
            .unwrap_or_else(|| workspace.to_path_buf());
        let script = cx.substitute(script);
        let file = |kind: &str| files.path().join(format!("{kind}-{i}"));
        for kind in ["output", "summary", "env", "path"] {
            std::fs::write(file(kind), "").unwrap();
        }
        step_env.insert("GITHUB_OUTPUT".into(), file("output").display().to_string());
        step_env.insert(
            "GITHUB_STEP_SUMMARY".into(),
            file("summary").display().to_string(),
        );
        step_env.insert("GITHUB_ENV".into(), file("env").display().to_string());
        step_env.insert("GITHUB_PATH".into(), file("path").display().to_string());
        let script_file = files.path().join(format!("step-{i}.sh"));
        std::fs::write(&script_file, &script).unwrap();

        let mut cmd = Command::new("bash");
        cmd.args(["--noprofile", "--norc", "-eo", "pipefail"])
            .arg(&script_file)
            .current_dir(&dir)
            .env_clear()
            .envs(&step_env);
        let common::Run {
            code,
            stdout,
            stderr,
            ..
        } = common::run_command(cmd, "an action step", Duration::from_secs(120));
        outcome.stdout.push_str(&stdout);
        outcome.stderr.push_str(&stderr);
        outcome
            .summary
            .push_str(&std::fs::read_to_string(file("summary")).unwrap());
        if let Some(id) = &step.id {
            outcome
                .step_outputs
                .insert(id.clone(), file_commands(&file("output")));
        }
        env.extend(file_commands(&file("env")));
        let added = std::fs::read_to_string(file("path")).unwrap();
        for dir in added.lines().filter(|l| !l.is_empty()) {
            let path = format!("{dir}:{}", env.get("PATH").cloned().unwrap_or_default());
            env.insert("PATH".into(), path);
        }
        if code != 0 {
            outcome.code = code;
            outcome.failed_step = Some(step.name.clone());
            break;
        }
    }
    let cx = Context {
        action,
        job,
        action_path: &action_path,
        with: &job.with,
        workspace,
        temp: runner_temp,
        env: &env,
        step_outputs: &outcome.step_outputs,
    };
    outcome.outputs = action
        .outputs
        .iter()
        .map(|(k, v)| (k.clone(), cx.substitute(v)))
        .collect();
    outcome
}

// ---------------------------------------------------------------------------------------------
// Fixtures and expectations

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A workspace holding a copy of the example repository, and a runner temp directory.
struct Sandbox {
    _dir: tempfile::TempDir,
    workspace: PathBuf,
    temp: PathBuf,
}

fn sandbox() -> Sandbox {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("workspace");
    let temp = dir.path().join("runner-temp");
    copy_dir(&root().join("fixtures/example-repo"), &workspace);
    std::fs::create_dir_all(&temp).unwrap();
    Sandbox {
        _dir: dir,
        workspace,
        temp,
    }
}

/// What `gitops-lint --format json` reports for the workspace with these flags.
fn direct_report(workspace: &Path, args: &[&str]) -> serde_json::Value {
    let out = Command::new(BIN)
        .args(["--format", "json", "--fail-on", "never"])
        .args(args)
        .current_dir(workspace)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn counts(report: &serde_json::Value) -> [u64; 3] {
    let c = &report["summary"]["findings_by_severity"];
    ["error", "warning", "info"].map(|s| c[s].as_u64().unwrap_or(0))
}

fn expect_outputs(outcome: &Outcome, report: &serde_json::Value, sarif: &str) {
    let [errors, warnings, infos] = counts(report);
    let expected = [
        ("findings", (errors + warnings + infos).to_string()),
        ("errors", errors.to_string()),
        ("warnings", warnings.to_string()),
        ("infos", infos.to_string()),
        ("sarif-file", sarif.to_string()),
    ];
    let lint = &outcome.step_outputs["lint"];
    for (name, value) in expected {
        assert_eq!(
            lint.get(name),
            Some(&value),
            "GITHUB_OUTPUT {name}: {lint:?}"
        );
        assert_eq!(
            outcome.outputs.get(name),
            Some(&value),
            "action output {name}"
        );
    }
    assert_eq!(
        report["findings"].as_array().unwrap().len() as u64,
        errors + warnings + infos
    );
}

/// The annotations: every workflow command in the log is well formed, and each annotation
/// points at a file of the workspace.
fn annotations(outcome: &Outcome, workspace: &Path) -> Vec<(String, String, String)> {
    let mut found = Vec::new();
    for line in outcome.stdout.lines().filter(|l| l.starts_with("::")) {
        let (head, _message) = line[2..]
            .split_once("::")
            .unwrap_or_else(|| panic!("malformed workflow command {line:?}"));
        let (command, props) = head.split_once(' ').unwrap_or((head, ""));
        if !matches!(command, "error" | "warning" | "notice") {
            assert!(
                matches!(command, "group" | "endgroup" | "debug"),
                "unexpected workflow command {line:?}"
            );
            continue;
        }
        let props: BTreeMap<&str, &str> = props
            .split(',')
            .filter(|p| !p.is_empty())
            .map(|p| p.split_once('=').unwrap_or_else(|| panic!("{line:?}")))
            .collect();
        let Some(file) = props.get("file") else {
            continue; // a plain ::error:: message of the script
        };
        assert!(workspace.join(file).is_file(), "{file} in {line:?}");
        let line_no: u64 = props["line"].parse().unwrap();
        assert!(line_no >= 1, "{line:?}");
        let title = props.get("title").copied().unwrap_or_default();
        found.push((command.to_string(), file.to_string(), title.to_string()));
    }
    found
}

// ---------------------------------------------------------------------------------------------
// Tests

/// What the summary writes for `text` of printable ASCII: punctuation but `-` as references.
fn markdown_cell(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            c if c.is_ascii_punctuation() && c != '-' => format!("&#{};", c as u32),
            c => c.to_string(),
        })
        .collect()
}

#[test]
fn action_yml_declares_the_inputs_and_keeps_expressions_out_of_scripts() {
    let action = load_action();
    for (input, default) in [
        ("path", "."),
        ("config", ""),
        ("fail-on", ""),
        ("argocd-version", ""),
        ("sarif-file", "gitops-lint.sarif"),
        ("baseline", ""),
        ("args", ""),
        ("trusted-config", ""),
        ("config-from-base", "false"),
    ] {
        assert_eq!(
            action.inputs.get(input).map(String::as_str),
            Some(default),
            "input {input}"
        );
    }
    for output in ["findings", "errors", "warnings", "sarif-file"] {
        assert!(action.outputs.contains_key(output), "output {output}");
    }
    for step in &action.steps {
        match (&step.run, &step.uses) {
            (Some(run), None) => {
                assert_eq!(step.shell.as_deref(), Some("bash"), "{}", step.name);
                // Script-injection hygiene: values reach scripts through `env:` only.
                assert!(!run.contains("${{"), "{}: an expression in run:", step.name);
            }
            (None, Some(uses)) => {
                assert!(uses.contains('@'), "{uses} is pinned to a version");
            }
            _ => panic!("{}: a step has run: or uses:", step.name),
        }
    }
    let cache = action
        .steps
        .iter()
        .find(|s| s.uses.as_deref() == Some("actions/cache@v4"))
        .expect("the binary is cached with actions/cache@v4");
    assert!(
        cache.condition.is_some(),
        "no cache when GITOPS_LINT_BIN is set"
    );
}

#[test]
fn example_repository_fails_on_warnings_with_outputs_summary_sarif_and_annotations() {
    let action = load_action();
    let sb = sandbox();
    let outcome = run_action(&action, &sb.workspace, &sb.temp, &Job::default());
    assert_eq!(outcome.code, 1, "stderr: {}", outcome.stderr);
    assert_eq!(outcome.failed_step.as_deref(), Some("Run gitops-lint"));
    assert_eq!(outcome.skipped, ["Restore the gitops-lint release archive"]);

    let report = direct_report(&sb.workspace, &[]);
    let [errors, warnings, infos] = counts(&report);
    assert!(
        errors > 0 && warnings > 0 && infos > 0,
        "the fixture has every severity"
    );
    expect_outputs(&outcome, &report, "gitops-lint.sarif");
    let key = &outcome.step_outputs["key"]["key"];
    assert!(key.starts_with("gitops-lint-archive-Linux-X64-"), "{key}");

    // The job summary: severity counts, one row per rule, then the top findings.
    let summary = &outcome.summary;
    assert!(summary.contains("| Severity | Findings |"), "{summary}");
    assert!(
        summary.contains(&format!("| error | {errors} |")),
        "{summary}"
    );
    assert!(
        summary.contains(&format!("| warning | {warnings} |")),
        "{summary}"
    );
    assert!(
        summary.contains(&format!("| info | {infos} |")),
        "{summary}"
    );
    let findings = report["findings"].as_array().unwrap();
    let mut by_rule: BTreeMap<&str, (usize, &str)> = BTreeMap::new();
    for f in findings {
        let e = by_rule
            .entry(f["rule"].as_str().unwrap())
            .or_insert((0, f["severity"].as_str().unwrap()));
        e.0 += 1;
    }
    for (rule, (n, severity)) in &by_rule {
        let row = format!("| `{rule}` | {severity} | {n} |");
        assert!(summary.contains(&row), "{row} in\n{summary}");
    }
    let first_error = findings.iter().find(|f| f["severity"] == "error").unwrap();
    // Plain text, its punctuation written as character references.
    let location = format!(
        "{}&#58;{}",
        markdown_cell(first_error["file"].as_str().unwrap()),
        first_error["start"]["line"]
    );
    assert!(summary.contains(&location), "{location} in\n{summary}");
    let top = summary
        .lines()
        .filter(|l| l.starts_with("| error |") || l.starts_with("| warning |"))
        .filter(|l| l.contains("` | "))
        .count();
    assert!(top > 0, "{summary}");

    // The SARIF file is where the output says, and is JSON.
    let sarif = sb.workspace.join("gitops-lint.sarif");
    let text = std::fs::read_to_string(&sarif).expect("the SARIF file is written");
    serde_json::from_str::<serde_json::Value>(&text).expect("SARIF is JSON");

    // Annotations: one per finding, with the finding's severity and rule.
    let found = annotations(&outcome, &sb.workspace);
    assert_eq!(found.len(), findings.len(), "{}", outcome.stdout);
    assert!(
        outcome.stdout.contains("::error file="),
        "{}",
        outcome.stdout
    );
    for f in findings {
        let command = match f["severity"].as_str().unwrap() {
            "info" => "notice",
            s => s,
        };
        let wanted = (
            command.to_string(),
            f["file"].as_str().unwrap().to_string(),
            f["rule"].as_str().unwrap().to_string(),
        );
        assert!(found.contains(&wanted), "{wanted:?}");
    }
    // The human report went to the log too.
    assert!(outcome.stdout.contains("Checked "), "{}", outcome.stdout);
}

#[test]
fn fail_on_never_passes_and_still_reports() {
    let action = load_action();
    let sb = sandbox();
    let job = Job {
        with: vec![("fail-on", "never"), ("sarif-file", "reports/lint.sarif")],
        ..Job::default()
    };
    let outcome = run_action(&action, &sb.workspace, &sb.temp, &job);
    assert_eq!(outcome.code, 0, "stderr: {}", outcome.stderr);
    expect_outputs(
        &outcome,
        &direct_report(&sb.workspace, &[]),
        "reports/lint.sarif",
    );
    assert!(sb.workspace.join("reports/lint.sarif").is_file());
    assert!(outcome.stdout.contains("::error file="));
}

#[test]
fn fail_on_error_and_an_empty_fail_on_that_leaves_it_to_the_config() {
    let action = load_action();
    let sb = sandbox();
    // Errors exist: fail-on error fails.
    let job = Job {
        with: vec![("fail-on", "error")],
        ..Job::default()
    };
    assert_eq!(run_action(&action, &sb.workspace, &sb.temp, &job).code, 1);
    // An empty fail-on defers to the config file, here `never`.
    let config = std::fs::read_to_string(sb.workspace.join(".gitops-lint.yaml")).unwrap();
    std::fs::write(
        sb.workspace.join(".gitops-lint.yaml"),
        format!("{config}fail-on: never\n"),
    )
    .unwrap();
    let job = Job {
        with: vec![("fail-on", "")],
        ..Job::default()
    };
    let outcome = run_action(&action, &sb.workspace, &sb.temp, &job);
    assert_eq!(outcome.code, 0, "stderr: {}", outcome.stderr);
    assert_ne!(outcome.outputs["errors"], "0");
}

#[test]
fn config_argocd_version_and_args_reach_the_linter() {
    let action = load_action();
    let sb = sandbox();
    let config = std::fs::read_to_string(sb.workspace.join(".gitops-lint.yaml")).unwrap();
    std::fs::create_dir_all(sb.workspace.join("ci")).unwrap();
    std::fs::write(
        sb.workspace.join("ci/lint.yaml"),
        format!("{config}rules:\n  ignore: [secrets]\n"),
    )
    .unwrap();
    // `apps/**` would be expanded by the shell if the arguments were globbed.
    let args = [
        "--exclude",
        "apps/**",
        "--exclude",
        "argocd/projects/*.yaml",
    ];
    let flags = [
        &["--config", "ci/lint.yaml", "--argocd-version", "2.14"][..],
        &args[..],
    ]
    .concat();
    let expected = direct_report(&sb.workspace, &flags);
    let all = direct_report(&sb.workspace, &[]);
    assert_ne!(
        counts(&expected),
        counts(&all),
        "the flags change the findings"
    );
    let job = Job {
        with: vec![
            ("config", "ci/lint.yaml"),
            ("argocd-version", "2.14"),
            (
                "args",
                "--exclude apps/**\n  --exclude argocd/projects/*.yaml",
            ),
            ("fail-on", "never"),
        ],
        ..Job::default()
    };
    let outcome = run_action(&action, &sb.workspace, &sb.temp, &job);
    assert_eq!(outcome.code, 0, "stderr: {}", outcome.stderr);
    expect_outputs(&outcome, &expected, "gitops-lint.sarif");
}

#[test]
fn a_baseline_hides_recorded_findings() {
    let action = load_action();
    let sb = sandbox();
    let out = Command::new(BIN)
        .args(["--write-baseline", "baseline.yaml"])
        .current_dir(&sb.workspace)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let job = Job {
        with: vec![("baseline", "baseline.yaml")],
        ..Job::default()
    };
    let outcome = run_action(&action, &sb.workspace, &sb.temp, &job);
    assert_eq!(outcome.code, 0, "stderr: {}", outcome.stderr);
    assert_eq!(outcome.outputs["findings"], "0");
    assert!(
        outcome.summary.contains("No findings."),
        "{}",
        outcome.summary
    );
    assert!(annotations(&outcome, &sb.workspace).is_empty());
}

#[test]
fn usage_errors_fail_the_step_with_status_2() {
    let action = load_action();
    let sb = sandbox();
    for with in [("fail-on", "sometimes"), ("argocd-version", "three")] {
        let job = Job {
            with: vec![with],
            ..Job::default()
        };
        let outcome = run_action(&action, &sb.workspace, &sb.temp, &job);
        assert_eq!(outcome.code, 2, "{with:?}: {}", outcome.stderr);
        assert!(
            outcome
                .stdout
                .contains("::error::gitops-lint exited with 2"),
            "{}",
            outcome.stdout
        );
    }
}

#[test]
fn inputs_are_data_not_shell_code() {
    let action = load_action();
    let sb = sandbox();
    let marker = sb.temp.join("pwned");
    let evil = format!("x\"; touch {} #", marker.display());
    let evil_args = format!("$(touch {}) `touch {}`", marker.display(), marker.display());
    let job = Job {
        with: vec![("path", &evil), ("args", &evil_args)],
        ..Job::default()
    };
    let outcome = run_action(&action, &sb.workspace, &sb.temp, &job);
    assert!(!marker.exists(), "an input ran as shell code");
    assert_eq!(
        outcome.code, 2,
        "a path that does not exist: {}",
        outcome.stderr
    );
}

/// A binary an earlier step of the job left where the action installs (a pull request's code
/// runs with the same rights) is never run: the action installs afresh.
#[test]
fn a_binary_left_in_the_install_directory_is_never_run() {
    let action = load_action();
    let sb = sandbox();
    let ran: Vec<PathBuf> = ["gitops-lint-bin", "gitops-lint-cache"]
        .iter()
        .map(|dir| {
            std::fs::create_dir_all(sb.temp.join(dir)).unwrap();
            look_alike(&sb.temp.join(dir).join("gitops-lint"))
        })
        .collect();
    let cargo = FakeCargo::new(&sb.temp);
    let job = Job {
        env: vec![
            ("GITOPS_LINT_BIN", None),
            ("GITOPS_LINT_RELEASES", Some("file:///nonexistent".into())),
        ],
        ..release_job(&sb.temp, &cargo, "main")
    };
    let outcome = run_action(&action, &sb.workspace, &sb.temp, &job);
    expect_built(&outcome, &cargo, &sb.temp, "planted binary");
    assert!(
        !ran.iter().any(|r| r.exists()),
        "the planted binary was run"
    );
}

/// The cache holds the release archive, which is checked against the checksum the release
/// publishes, fetched in every run, before anything in it runs: a genuine one is used without
/// downloading it again, a swapped one is replaced by a fresh download and never run.
#[test]
#[cfg_attr(
    not(all(has_curl, has_tar, has_sha256)),
    ignore = "needs curl, tar and sha256sum (or shasum) on PATH"
)]
fn a_cached_archive_is_checked_against_the_release_before_it_runs() {
    let action = load_action();
    let tag = format!("v{VERSION}");
    let asset = format!("gitops-lint-{tag}-{TARGET}.tar.gz");

    // A genuine archive in the cache; the release's archive is gone, its checksum is there.
    let sb = sandbox();
    let releases = sb.temp.join("releases");
    let archive = publish(&releases, &tag, Path::new(BIN));
    let cache = sb.temp.join("gitops-lint-cache");
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::rename(&archive, cache.join(&asset)).unwrap();
    let cargo = FakeCargo::new(&sb.temp);
    let outcome = run_action(
        &action,
        &sb.workspace,
        &sb.temp,
        &release_job(&releases, &cargo, &tag),
    );
    let installed = expect_installed(&outcome, &sb.temp, "cached archive");
    assert!(installed == std::fs::read(BIN).unwrap());
    assert!(
        outcome
            .stderr
            .contains(&format!("using the cached {asset}")),
        "{}",
        outcome.stderr
    );
    assert_eq!(cargo.args(), None, "nothing was built");

    // A look-alike archive in the cache, under the right name.
    let sb = sandbox();
    let forged = sb.temp.join("forged");
    let ran = look_alike(&forged);
    let cache = sb.temp.join("gitops-lint-cache");
    std::fs::create_dir_all(&cache).unwrap();
    let forged_archive = publish(&sb.temp.join("elsewhere"), &tag, &forged);
    std::fs::copy(&forged_archive, cache.join(&asset)).unwrap();
    let releases = sb.temp.join("releases");
    let genuine = publish(&releases, &tag, Path::new(BIN));
    let cargo = FakeCargo::new(&sb.temp);
    let outcome = run_action(
        &action,
        &sb.workspace,
        &sb.temp,
        &release_job(&releases, &cargo, &tag),
    );
    let installed = expect_installed(&outcome, &sb.temp, "swapped cached archive");
    assert!(installed == std::fs::read(BIN).unwrap());
    assert!(!ran.exists(), "the cached look-alike was run");
    assert!(
        outcome
            .stdout
            .contains("does not match the release's checksum; it is not used"),
        "{}",
        outcome.stdout
    );
    // The next run finds the verified download.
    assert!(std::fs::read(cache.join(&asset)).unwrap() == std::fs::read(genuine).unwrap());
    assert_eq!(cargo.args(), None, "nothing was built");
}

/// scripts/install-rust.sh runs rustup-init only once it matches its published checksum.
#[test]
#[cfg_attr(
    not(all(has_curl, has_sha256)),
    ignore = "needs curl and sha256sum (or shasum) on PATH"
)]
fn rustup_init_runs_only_when_it_matches_its_checksum() {
    let temp = tempfile::tempdir().unwrap();
    let dist = temp.path().join("dist");
    let target = format!("{}-unknown-linux-gnu", std::env::consts::ARCH);
    std::fs::create_dir_all(dist.join(&target)).unwrap();
    let ran = temp.path().join("rustup-init-ran");
    let init = format!("#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\n", ran.display());
    std::fs::write(dist.join(&target).join("rustup-init"), &init).unwrap();
    let publish_sum = |bytes: &[u8]| {
        std::fs::write(
            dist.join(&target).join("rustup-init.sha256"),
            format!("{} *rustup-init\n", sha256_hex(bytes)),
        )
        .unwrap()
    };
    let run = || {
        let mut cmd = Command::new("bash");
        cmd.arg(root().join("scripts/install-rust.sh"))
            .env(
                "GITOPS_LINT_RUSTUP_DIST",
                format!("file://{}", dist.display()),
            )
            .env("RUNNER_OS", "Linux")
            .env("RUNNER_ARCH", std::env::consts::ARCH)
            .env("RUNNER_TEMP", temp.path())
            .env("GITHUB_ACTIONS", "true");
        common::run_command(cmd, "scripts/install-rust.sh", Duration::from_secs(60))
    };
    // The checksum of something else: nothing runs.
    publish_sum(b"another installer");
    let out = run();
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("::error::gitops-lint install-rust: checksum mismatch for rustup-init"),
        "{}",
        out.stdout
    );
    assert!(!ran.exists(), "an unverified rustup-init ran");
    // Its own checksum: it runs, with a minimal stable toolchain and the shell profile left alone.
    publish_sum(init.as_bytes());
    let out = run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let args = std::fs::read_to_string(&ran).unwrap();
    assert_eq!(
        args.lines().collect::<Vec<_>>(),
        [
            "-y",
            "--profile",
            "minimal",
            "--default-toolchain",
            "stable",
            "--no-modify-path"
        ]
    );
}

#[test]
fn a_missing_gitops_lint_bin_is_an_error() {
    let action = load_action();
    let sb = sandbox();
    let job = Job {
        env: vec![("GITOPS_LINT_BIN", Some("/no/such/gitops-lint".into()))],
        ..Job::default()
    };
    let outcome = run_action(&action, &sb.workspace, &sb.temp, &job);
    assert_eq!(outcome.code, 1);
    assert_eq!(outcome.failed_step.as_deref(), Some("Install gitops-lint"));
    assert!(outcome.stdout.contains("::error::GITOPS_LINT_BIN"));
}

/// A pull request whose config turns the linter off, against a base branch whose config does
/// not: pinned by `config-from-base` or `trusted-config`, the base's settings hold.
#[test]
#[cfg_attr(not(has_git), ignore = "git is not on PATH")]
fn a_pinned_config_holds_against_the_pull_request_config() {
    common::require_program(
        "git",
        Command::new("git").arg("--version").output().is_ok(),
        "your system's git package",
    );
    let action = load_action();
    let sb = sandbox();
    let ws = &sb.workspace;
    let git = |args: &[&str]| common::git(ws, args);
    let origin = sb.temp.join("origin.git");
    common::git(
        &sb.temp,
        &["init", "-q", "--bare", origin.to_str().unwrap()],
    );
    git(&["init", "-q", "-b", "feature"]);
    for (k, v) in [
        ("user.name", "Test"),
        ("user.email", "test@example.com"),
        ("commit.gpgsign", "false"),
    ] {
        git(&["config", k, v]);
    }
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "base"]);
    git(&["remote", "add", "origin", origin.to_str().unwrap()]);
    git(&["push", "-q", "origin", "HEAD:refs/heads/main"]);
    // As after actions/checkout of a pull request: the base branch is not fetched.
    common::git(ws, &["update-ref", "-d", "refs/remotes/origin/main"]);
    let base = std::fs::read_to_string(ws.join(".gitops-lint.yaml")).unwrap();
    std::fs::write(sb.temp.join("trusted.yaml"), &base).unwrap();
    std::fs::write(
        ws.join(".gitops-lint.yaml"),
        format!("{base}fail-on: never\nexclude: ['**']\nrules:\n  ignore: [all]\n"),
    )
    .unwrap();
    fn pull_request<'a>(with: Vec<(&'a str, &'a str)>) -> Job<'a> {
        Job {
            with,
            env: vec![
                ("GITOPS_LINT_BIN", Some(BIN.to_string())),
                ("GITHUB_BASE_REF", Some("main".to_string())),
            ],
            ..Job::default()
        }
    }

    // Unpinned, the pull request's config silences everything.
    let outcome = run_action(&action, ws, &sb.temp, &pull_request(vec![("fail-on", "")]));
    assert_eq!(outcome.code, 0, "stderr: {}", outcome.stderr);
    assert_eq!(outcome.outputs["findings"], "0");

    let pinned = direct_report(ws, &["--trusted-config", "../runner-temp/trusted.yaml"]);
    assert_eq!(
        counts(&pinned),
        counts(&direct_report(
            ws,
            &["--config", "../runner-temp/trusted.yaml"]
        )),
        "the pinned run reports what the base config does"
    );
    let job = pull_request(vec![("fail-on", ""), ("config-from-base", "true")]);
    let outcome = run_action(&action, ws, &sb.temp, &job);
    assert_eq!(outcome.code, 1, "stderr: {}", outcome.stderr);
    expect_outputs(&outcome, &pinned, "gitops-lint.sarif");
    // The base branch was fetched for it.
    git(&[
        "rev-parse",
        "--verify",
        "--quiet",
        "refs/remotes/origin/main",
    ]);
    // Fetched already: used as it is.
    let outcome = run_action(&action, ws, &sb.temp, &job);
    assert_eq!(outcome.code, 1, "stderr: {}", outcome.stderr);

    let trusted = sb.temp.join("trusted.yaml");
    let job = pull_request(vec![
        ("fail-on", ""),
        ("trusted-config", trusted.to_str().unwrap()),
    ]);
    let outcome = run_action(&action, ws, &sb.temp, &job);
    assert_eq!(outcome.code, 1, "stderr: {}", outcome.stderr);
    expect_outputs(&outcome, &pinned, "gitops-lint.sarif");

    // A push has no base branch: the checked-out config applies, with a notice.
    let job = Job {
        with: vec![("fail-on", ""), ("config-from-base", "true")],
        ..Job::default()
    };
    let outcome = run_action(&action, ws, &sb.temp, &job);
    assert_eq!(outcome.code, 0, "stderr: {}", outcome.stderr);
    assert!(
        outcome.stdout.contains("::notice::config-from-base"),
        "{}",
        outcome.stdout
    );
    let job = pull_request(vec![("config-from-base", "yes")]);
    assert_eq!(run_action(&action, ws, &sb.temp, &job).code, 2);
}

/// The hostile repository (tests/common/hostile.rs) through the action, with python and with
/// jq: the log holds no command but the annotations, and the job summary no live Markdown.
#[test]
fn repository_text_stays_inert_in_the_log_and_the_job_summary() {
    let action = load_action();
    let sb = sandbox();
    std::fs::remove_dir_all(&sb.workspace).unwrap();
    std::fs::create_dir_all(&sb.workspace).unwrap();
    common::git_init(&sb.workspace);
    common::hostile::write(&sb.workspace);
    let farm = without_python(&sb.temp);
    let has_jq = Command::new("jq").arg("--version").output().is_ok();
    let mut summaries = Vec::new();
    for path in [None, Some(farm.display().to_string())] {
        if path.is_some() && !has_jq {
            continue;
        }
        let outcome = run_action(
            &action,
            &sb.workspace,
            &sb.temp,
            &Job {
                with: vec![("fail-on", "never")],
                path,
                ..Job::default()
            },
        );
        assert_eq!(outcome.code, 0, "stderr: {}", outcome.stderr);
        let own = |line: &str| {
            ["::error file=", "::warning file=", "::notice file="]
                .iter()
                .any(|c| line.starts_with(c))
        };
        let problems = common::hostile::log_problems(&outcome.stdout, own);
        assert!(problems.is_empty(), "{problems:#?}\n{}", outcome.stdout);
        let problems = common::hostile::log_problems(&outcome.stderr, |_| false);
        assert!(problems.is_empty(), "{problems:#?}\n{}", outcome.stderr);
        let summary = &outcome.summary;
        assert!(summary.contains("hostile-texts"), "{summary}");
        let problems = common::hostile::markdown_problems(summary);
        assert!(problems.is_empty(), "{problems:#?}\n{summary}");
        // Each row is one line with its four cells: nothing in a text ends a cell or a row.
        for row in summary.lines().filter(|l| l.starts_with("| warning | `")) {
            assert_eq!(row.matches('|').count(), 5, "{row}");
        }
        summaries.push(outcome.summary);
    }
    summaries.dedup();
    assert_eq!(summaries.len(), 1, "python and jq differ");
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A look-alike binary at `path` that says the right version and leaves a mark beside it,
/// `PATH-ran`, if it is ever run; returns the mark.
fn look_alike(path: &Path) -> PathBuf {
    let ran = PathBuf::from(format!("{}-ran", path.display()));
    std::fs::write(
        path,
        format!(
            "#!/bin/sh\ntouch '{}'\necho 'gitops-lint {VERSION}'\n",
            ran.display()
        ),
    )
    .unwrap();
    make_executable(path);
    ran
}

/// A folder under `temp` with a link to every program on PATH but python's, for a PATH on
/// which the action builds its outputs and summary with jq.
fn without_python(temp: &Path) -> PathBuf {
    let farm = temp.join("no-python-bin");
    std::fs::create_dir_all(&farm).unwrap();
    for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap()) {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let target = farm.join(&name);
            if name.to_string_lossy().starts_with("python") || target.exists() {
                continue;
            }
            std::os::unix::fs::symlink(entry.path(), target).ok();
        }
    }
    farm
}

/// A PATH with every program of the current one except python: the action must then build its
/// outputs and summary with jq, identical to python's.
#[test]
#[cfg_attr(not(has_jq), ignore = "jq is not on PATH")]
fn the_jq_fallback_writes_the_same_outputs_and_summary() {
    common::require_program(
        "jq",
        Command::new("jq").arg("--version").output().is_ok(),
        "apt-get install jq",
    );
    let action = load_action();
    let sb = sandbox();
    let farm = without_python(&sb.temp);
    for with in [vec![], vec![("baseline", "baseline.yaml")]] {
        if !with.is_empty() {
            Command::new(BIN)
                .args(["--write-baseline", "baseline.yaml"])
                .current_dir(&sb.workspace)
                .output()
                .unwrap();
        }
        let python = run_action(
            &action,
            &sb.workspace,
            &sb.temp,
            &Job {
                with: with.clone(),
                ..Job::default()
            },
        );
        let jq = run_action(
            &action,
            &sb.workspace,
            &sb.temp,
            &Job {
                with,
                path: Some(farm.display().to_string()),
                ..Job::default()
            },
        );
        assert_eq!(jq.code, python.code, "stderr: {}", jq.stderr);
        assert_eq!(jq.step_outputs["lint"], python.step_outputs["lint"]);
        assert_eq!(jq.summary, python.summary);
    }
}

/// The README's workflow uses only inputs and outputs the action declares.
#[test]
fn the_readme_workflow_matches_the_action() {
    let action = load_action();
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let start = readme
        .find("## In CI and pre-commit")
        .expect("README has the CI section");
    let section = &readme[start..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
    let block = section
        .split("```yaml\n")
        .skip(1)
        .map(|b| &b[..b.find("```").unwrap()])
        .find(|b| b.contains("runs-on:"))
        .expect("a workflow in a yaml block");
    let workflow = parse_yaml(block, "the README workflow");
    let job = workflow
        .get("jobs")
        .and_then(|j| j.entries().first())
        .map(|e| &e.value)
        .expect("a job");
    assert_eq!(
        job.path(&["permissions", "security-events"])
            .and_then(Node::as_str),
        Some("write")
    );
    let steps = job.get("steps").expect("steps").items();
    let lint = steps
        .iter()
        .find(|s| s.str_at("uses").is_some_and(|u| u.contains("gitops-lint")))
        .expect("a step uses the action");
    // The moving major tag of the current version, which the release workflow maintains.
    let major = VERSION.split('.').next().unwrap();
    assert_eq!(
        lint.str_at("uses"),
        Some(format!("gitops-lint/gitops-lint@v{major}").as_str())
    );
    let id = lint.str_at("id").expect("the lint step has an id");
    for (input, _) in string_map(lint.get("with")) {
        assert!(action.inputs.contains_key(&input), "README input {input}");
    }
    let upload = steps
        .iter()
        .find(|s| {
            s.str_at("uses")
                .is_some_and(|u| u.starts_with("github/codeql-action/upload-sarif@"))
        })
        .expect("a step uploads the SARIF file");
    assert_eq!(upload.str_at("if"), Some("always()"));
    let prefix = format!("steps.{id}.outputs.");
    let mut rest = block;
    while let Some(i) = rest.find(&prefix) {
        rest = &rest[i + prefix.len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '-' || *c == '_')
            .collect();
        assert!(action.outputs.contains_key(&name), "README output {name}");
    }
}

// ---------------------------------------------------------------------------------------------
// The release download (scripts/install.sh) and the build from source when there is none

/// The archive an emulated Linux X64 runner downloads. It holds the test build, whatever the
/// machine running the tests: only its name says x86_64.
const TARGET: &str = "x86_64-unknown-linux-musl";
const VERSION: &str = env!("CARGO_PKG_VERSION");

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Publishes `binary` as release `tag` under `releases` the way .github/workflows/release.yml
/// lays it out: `TAG/gitops-lint-TAG-TARGET.tar.gz`, holding `gitops-lint-TAG-TARGET/gitops-lint`,
/// and beside it the `.sha256` file. Returns the archive's path.
fn publish(releases: &Path, tag: &str, binary: &Path) -> PathBuf {
    let name = format!("gitops-lint-{tag}-{TARGET}");
    let stage = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(stage.path().join(&name)).unwrap();
    std::fs::copy(binary, stage.path().join(&name).join("gitops-lint")).unwrap();
    std::fs::create_dir_all(releases.join(tag)).unwrap();
    let archive = releases.join(tag).join(format!("{name}.tar.gz"));
    let out = Command::new("tar")
        .arg("-czf")
        .arg(&archive)
        .arg("-C")
        .arg(stage.path())
        .arg(&name)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sum = sha256_hex(&std::fs::read(&archive).unwrap());
    std::fs::write(
        archive.with_extension("gz.sha256"),
        format!("{sum}  {name}.tar.gz\n"),
    )
    .unwrap();
    archive
}

/// A directory of fake programs put first on PATH: a `cargo` that records its arguments and,
/// asked to build, leaves the test build where `cargo build --target-dir DIR` would.
struct FakeCargo {
    bin: PathBuf,
    record: PathBuf,
}

impl FakeCargo {
    fn new(temp: &Path) -> FakeCargo {
        let bin = temp.join("fake-bin");
        std::fs::create_dir_all(&bin).unwrap();
        let record = temp.join("cargo-args");
        std::fs::write(
            bin.join("cargo"),
            format!(
                "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\n\
                 while [ $# -gt 0 ]; do\n  if [ \"$1\" = --target-dir ]; then dir=$2; fi\n  shift\ndone\n\
                 mkdir -p \"$dir/release\" && cp '{BIN}' \"$dir/release/gitops-lint\"\n",
                record.display()
            ),
        )
        .unwrap();
        make_executable(&bin.join("cargo"));
        FakeCargo { bin, record }
    }

    fn path(&self) -> String {
        format!("{}:{}", self.bin.display(), std::env::var("PATH").unwrap())
    }

    /// The arguments of the one cargo run, if any.
    fn args(&self) -> Option<Vec<String>> {
        let text = std::fs::read_to_string(&self.record).ok()?;
        Some(text.lines().map(str::to_string).collect())
    }
}

/// A job with no binary given, the releases at `file://releases`, and the fake cargo on PATH.
fn release_job<'a>(releases: &Path, cargo: &FakeCargo, action_ref: &'a str) -> Job<'a> {
    Job {
        env: vec![
            ("GITOPS_LINT_BIN", None),
            (
                "GITOPS_LINT_RELEASES",
                Some(format!("file://{}", releases.display())),
            ),
        ],
        path: Some(cargo.path()),
        action_ref,
        action_repository: "gitops-lint/gitops-lint",
        ..Job::default()
    }
}

/// What a run that got a working binary looks like: the lint ran (the example repository fails
/// on its findings) with the binary in the cache directory.
fn expect_installed(outcome: &Outcome, temp: &Path, what: &str) -> Vec<u8> {
    assert_eq!(
        outcome.failed_step.as_deref(),
        Some("Run gitops-lint"),
        "{what}: stdout {}\nstderr {}",
        outcome.stdout,
        outcome.stderr
    );
    assert_eq!(outcome.code, 1, "{what}: {}", outcome.stderr);
    let installed = temp.join("gitops-lint-bin/gitops-lint");
    assert_eq!(
        outcome.step_outputs["install"]["bin"],
        installed.display().to_string(),
        "{what}"
    );
    assert_ne!(outcome.outputs["findings"], "0", "{what}");
    std::fs::read(&installed).unwrap()
}

#[test]
#[cfg_attr(
    not(all(has_curl, has_tar, has_sha256)),
    ignore = "needs curl, tar and sha256sum (or shasum) on PATH"
)]
fn at_a_release_tag_the_action_installs_the_verified_release_binary() {
    let action = load_action();
    let major = format!("v{}", VERSION.split('.').next().unwrap());
    let tag = format!("v{VERSION}");
    // The release tag itself, and the moving major tag that points at its commit.
    for action_ref in [tag.as_str(), major.as_str()] {
        let sb = sandbox();
        let releases = sb.temp.join("releases");
        publish(&releases, &tag, Path::new(BIN));
        let cargo = FakeCargo::new(&sb.temp);
        let job = release_job(&releases, &cargo, action_ref);
        let outcome = run_action(&action, &sb.workspace, &sb.temp, &job);
        let installed = expect_installed(&outcome, &sb.temp, action_ref);
        assert!(installed == std::fs::read(BIN).unwrap(), "{action_ref}");
        assert_eq!(cargo.args(), None, "{action_ref}: nothing was built");
        assert!(
            outcome
                .stderr
                .contains(&format!("installed {tag} for {TARGET}")),
            "{action_ref}: {}",
            outcome.stderr
        );
    }
}

#[test]
#[cfg_attr(
    not(all(has_curl, has_tar, has_sha256)),
    ignore = "needs curl, tar and sha256sum (or shasum) on PATH"
)]
fn a_tampered_release_fails_the_step_and_nothing_is_installed_or_built() {
    let action = load_action();
    let tag = format!("v{VERSION}");

    // A look-alike binary that says the right version, and leaves a mark if it is ever run.
    let sb = sandbox();
    let forged = sb.temp.join("forged");
    let ran = look_alike(&forged);
    let releases = sb.temp.join("releases");
    let archive = publish(&releases, &tag, Path::new(BIN));
    let checksum = std::fs::read(archive.with_extension("gz.sha256")).unwrap();
    // The archive is swapped; the checksum published with the release stays.
    publish(&releases, &tag, &forged);
    std::fs::write(archive.with_extension("gz.sha256"), &checksum).unwrap();
    let cargo = FakeCargo::new(&sb.temp);
    let outcome = run_action(
        &action,
        &sb.workspace,
        &sb.temp,
        &release_job(&releases, &cargo, &tag),
    );
    assert_eq!(outcome.code, 1, "{}", outcome.stderr);
    assert_eq!(outcome.failed_step.as_deref(), Some("Install gitops-lint"));
    assert!(
        outcome
            .stdout
            .contains("::error::gitops-lint install: checksum mismatch for gitops-lint-"),
        "{}",
        outcome.stdout
    );
    assert!(!ran.exists(), "the unverified binary was run");
    assert!(!sb.temp.join("gitops-lint-bin/gitops-lint").exists());
    assert_eq!(cargo.args(), None, "a bad download is no reason to build");

    // An archive without its checksum is not used either.
    let sb = sandbox();
    let releases = sb.temp.join("releases");
    let archive = publish(&releases, &tag, Path::new(BIN));
    std::fs::remove_file(archive.with_extension("gz.sha256")).unwrap();
    let cargo = FakeCargo::new(&sb.temp);
    let outcome = run_action(
        &action,
        &sb.workspace,
        &sb.temp,
        &release_job(&releases, &cargo, &tag),
    );
    assert_eq!(outcome.code, 1, "{}", outcome.stderr);
    assert_eq!(outcome.failed_step.as_deref(), Some("Install gitops-lint"));
    assert!(
        outcome
            .stdout
            .contains(".tar.gz.sha256 could not be fetched"),
        "{}",
        outcome.stdout
    );
    assert!(!sb.temp.join("gitops-lint-bin/gitops-lint").exists());
    assert_eq!(cargo.args(), None);
}

/// The build the action falls back to, as the fake cargo recorded it.
fn expect_built(outcome: &Outcome, cargo: &FakeCargo, temp: &Path, what: &str) {
    let installed = expect_installed(outcome, temp, what);
    assert!(installed == std::fs::read(BIN).unwrap(), "{what}");
    let manifest = root().join("Cargo.toml").display().to_string();
    let target_dir = temp.join("gitops-lint-target").display().to_string();
    assert_eq!(
        cargo.args(),
        Some(
            [
                "build",
                "--release",
                "--locked",
                "--manifest-path",
                &manifest,
                "--target-dir",
                &target_dir
            ]
            .map(str::to_string)
            .to_vec()
        ),
        "{what}"
    );
    assert!(
        outcome
            .stdout
            .contains("Building gitops-lint from the action's source"),
        "{what}: {}",
        outcome.stdout
    );
}

/// A branch, a commit or no ref at all (`uses: ./`) has no release: the action builds, and the
/// releases are never looked at.
#[test]
fn at_a_branch_or_a_commit_the_action_builds_from_source() {
    let action = load_action();
    for action_ref in ["", "main", "0123456789abcdef0123456789abcdef01234567"] {
        let sb = sandbox();
        let cargo = FakeCargo::new(&sb.temp);
        let job = Job {
            env: vec![
                ("GITOPS_LINT_BIN", None),
                ("GITOPS_LINT_RELEASES", Some("file:///nonexistent".into())),
            ],
            ..release_job(&sb.temp, &cargo, action_ref)
        };
        let outcome = run_action(&action, &sb.workspace, &sb.temp, &job);
        expect_built(&outcome, &cargo, &sb.temp, action_ref);
        assert!(
            outcome.stderr.contains("no prebuilt binary to install"),
            "{action_ref:?}: {}",
            outcome.stderr
        );
    }
}

/// A release tag whose archive is not there (a release not published yet, one whose build
/// failed), and a tag of another version than the action's checkout: built from source.
#[test]
#[cfg_attr(
    not(all(has_curl, has_tar, has_sha256)),
    ignore = "needs curl, tar and sha256sum (or shasum) on PATH"
)]
fn a_release_without_the_archive_or_of_another_version_is_built_from_source() {
    let action = load_action();
    let tag = format!("v{VERSION}");
    let sb = sandbox();
    let releases = sb.temp.join("releases");
    std::fs::create_dir_all(releases.join(&tag)).unwrap();
    let cargo = FakeCargo::new(&sb.temp);
    let outcome = run_action(
        &action,
        &sb.workspace,
        &sb.temp,
        &release_job(&releases, &cargo, &tag),
    );
    expect_built(&outcome, &cargo, &sb.temp, "no archive");
    assert!(
        outcome.stderr.contains(&format!(
            "release {tag} has no gitops-lint-{tag}-{TARGET}.tar.gz"
        )),
        "{}",
        outcome.stderr
    );

    // Its archive exists, but it was not built from the action's checkout.
    let sb = sandbox();
    let releases = sb.temp.join("releases");
    publish(&releases, "v999.0.0", Path::new(BIN));
    let cargo = FakeCargo::new(&sb.temp);
    let outcome = run_action(
        &action,
        &sb.workspace,
        &sb.temp,
        &release_job(&releases, &cargo, "v999.0.0"),
    );
    expect_built(&outcome, &cargo, &sb.temp, "another version");
    assert!(
        outcome.stderr.contains(&format!(
            "v999.0.0 is not the version of this checkout ({VERSION})"
        )),
        "{}",
        outcome.stderr
    );
}

/// Runners that leave `github.action_ref` empty in a composite action still check it out at
/// `.../_actions/OWNER/NAME/REF`: the ref is read from there.
#[test]
#[cfg_attr(
    not(all(has_curl, has_tar, has_sha256)),
    ignore = "needs curl, tar and sha256sum (or shasum) on PATH"
)]
fn the_ref_is_read_from_the_action_path_when_the_runner_does_not_say() {
    let action = load_action();
    let tag = format!("v{VERSION}");
    let sb = sandbox();
    let checkout = sb.temp.join("_actions/gitops-lint/gitops-lint").join(&tag);
    for dir in ["src", "rules", "scripts"] {
        copy_dir(&root().join(dir), &checkout.join(dir));
    }
    for file in ["Cargo.toml", "Cargo.lock", "build.rs"] {
        std::fs::copy(root().join(file), checkout.join(file)).unwrap();
    }
    let releases = sb.temp.join("releases");
    publish(&releases, &tag, Path::new(BIN));
    let cargo = FakeCargo::new(&sb.temp);
    let job = Job {
        action_repository: "",
        action_path: Some(checkout),
        ..release_job(&releases, &cargo, "")
    };
    let outcome = run_action(&action, &sb.workspace, &sb.temp, &job);
    expect_installed(&outcome, &sb.temp, "ref from the path");
    assert_eq!(cargo.args(), None, "nothing was built");
}

/// scripts/install.sh run directly, as a user would: `RELEASES_DIR` stands in for the releases.
fn install_script(releases: &Path, dest: &Path, action_ref: &str, os: &str) -> common::Run {
    let mut cmd = Command::new("bash");
    cmd.arg(root().join("scripts/install.sh"))
        .args([action_ref, dest.to_str().unwrap()])
        .env(
            "GITOPS_LINT_RELEASES",
            format!("file://{}", releases.display()),
        )
        .env("RUNNER_OS", os)
        .env("RUNNER_ARCH", "X64")
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITOPS_LINT_REPOSITORY");
    common::run_command(cmd, "scripts/install.sh", Duration::from_secs(60))
}

#[test]
#[cfg_attr(
    not(all(has_curl, has_tar, has_sha256)),
    ignore = "needs curl, tar and sha256sum (or shasum) on PATH"
)]
fn the_install_script_installs_only_what_it_verified() {
    let tag = format!("v{VERSION}");
    let dir = tempfile::tempdir().unwrap();
    let releases = dir.path().join("releases");
    let archive = publish(&releases, &tag, Path::new(BIN));
    let dest = dir.path().join("bin");

    let run = install_script(&releases, &dest, &tag, "Linux");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = Command::new(dest.join("gitops-lint"))
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("gitops-lint {VERSION}")
    );

    // No archive is built for this platform: the caller builds (status 3).
    let run = install_script(&releases, &dir.path().join("win"), &tag, "Windows");
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("no release archive is built for Windows/X64"),
        "{}",
        run.stderr
    );

    // A checksum line for another file, and one that is no checksum, are failures (status 1).
    let sum_file = archive.with_extension("gz.sha256");
    let good = std::fs::read_to_string(&sum_file).unwrap();
    let hash = good.split_whitespace().next().unwrap().to_string();
    for bad in [
        format!("{hash}  gitops-lint-{tag}-aarch64-apple-darwin.tar.gz\n"),
        "not a checksum\n".to_string(),
        String::new(),
    ] {
        std::fs::write(&sum_file, &bad).unwrap();
        let dest = dir.path().join("bad");
        let run = install_script(&releases, &dest, &tag, "Linux");
        assert_eq!(run.code, 1, "{bad:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("is not a SHA-256 checksum line for"),
            "{bad:?}: {}",
            run.stderr
        );
        assert!(!dest.join("gitops-lint").exists(), "{bad:?}");
    }
    // The same checksum in capitals, and sha256sum's binary-mode marker, are accepted.
    std::fs::write(
        &sum_file,
        format!(
            "{}  *gitops-lint-{tag}-{TARGET}.tar.gz\n",
            hash.to_uppercase()
        ),
    )
    .unwrap();
    let run = install_script(&releases, &dir.path().join("upper"), &tag, "Linux");
    assert_eq!(run.code, 0, "{}", run.stderr);
}

/// The release workflow builds an archive for every platform the install script downloads
/// for, by the names it downloads, with least privilege and third-party actions pinned by
/// commit.
#[test]
fn the_release_workflow_publishes_what_the_install_script_downloads() {
    let text = std::fs::read_to_string(root().join(".github/workflows/release.yml")).unwrap();
    let workflow = parse_yaml(&text, "release.yml");
    let tags: Vec<_> = workflow
        .path(&["on", "push", "tags"])
        .expect("on.push.tags")
        .items()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(
        tags,
        ["v[0-9]+.[0-9]+.[0-9]+", "v[0-9]+.[0-9]+.[0-9]+-*"],
        "release tags only: the moving v0 is no release"
    );
    assert!(
        workflow
            .get("permissions")
            .is_some_and(|p| p.entries().is_empty()),
        "no permissions but those a job asks for"
    );
    let jobs = workflow.get("jobs").expect("jobs");
    let permission = |job: &str| {
        jobs.path(&[job, "permissions", "contents"])
            .and_then(Node::as_str)
            .map(str::to_string)
    };
    assert_eq!(permission("build").as_deref(), Some("read"));
    assert_eq!(permission("release").as_deref(), Some("write"));
    let pinned = regex::Regex::new(r"^[\w.-]+/[\w.-]+@[0-9a-f]{40}$").unwrap();
    for job in jobs.entries() {
        for step in job.value.get("steps").expect("steps").items() {
            if let Some(uses) = step.str_at("uses") {
                assert!(pinned.is_match(uses), "{uses} is pinned by a commit");
            }
            if let Some(run) = step.str_at("run") {
                assert!(!run.contains("${{"), "an expression in run: {run}");
            }
        }
    }

    let matrix: Vec<String> = jobs
        .path(&["build", "strategy", "matrix", "include"])
        .expect("a build matrix")
        .items()
        .iter()
        .map(|i| i.str_at("target").expect("target").to_string())
        .collect();
    let script = std::fs::read_to_string(root().join("scripts/install.sh")).unwrap();
    let wanted: Vec<&str> = script
        .lines()
        .filter_map(|l| l.split_once(") target=").map(|(_, t)| t))
        .map(|t| t.trim_end_matches(" ;;"))
        .collect();
    assert_eq!(wanted.len(), 4, "{wanted:?}");
    for target in &wanted {
        assert!(matrix.iter().any(|m| m == target), "{target} is built");
    }
    assert!(matrix.iter().any(|m| m == "x86_64-pc-windows-msvc"));
    assert!(text.contains(r#"cargo build --release --locked --target "$TARGET""#));
    assert!(text.contains("name=gitops-lint-$TAG-$TARGET"));
    assert!(text.contains("asset=$name.tar.gz"));
    assert!(text.contains(r#"printf '%s  %s\n' "$hash" "$asset" > "$asset.sha256""#));
    assert!(script.contains("name=gitops-lint-$tag-$target\nasset=$name.tar.gz\n"));
    assert!(script.contains(r#""$base/$tag/$asset.sha256""#));
}
