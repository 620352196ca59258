//! What the fuzz targets do with their input. tests/fuzz_regressions.rs includes this file
//! too, so every saved reproducer goes through exactly the same checks under `cargo test`.

use gitops_lint::config::Config;
use gitops_lint::discover;
use gitops_lint::engine::{self, Options, Outcome};
use gitops_lint::fix::apply;
use gitops_lint::render::budget::{Budget, UNIT_STEPS};
use gitops_lint::render::template;
use gitops_lint::report::{self, Format, Settings};
use gitops_lint::yaml::ParseLimits;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A root that does not exist: whatever rendering looks up on disk there is simply missing,
/// so the fuzzers read nothing but their input.
pub const ROOT: &str = "/nonexistent/gitops-lint-fuzz";

/// Files in a packed repository: enough for a chain of kustomizations past the nesting cap
/// ([`gitops_lint::render::MAX_NESTING`]), which the fuzzer must be able to reach.
const MAX_FILES: usize = 2 * gitops_lint::render::MAX_NESTING + 16;

/// The bytes as one manifest, and as a kustomization beside it.
pub fn lint_file(data: &[u8]) {
    let root = Path::new(ROOT);
    check(vec![
        (root.join("apps/manifest.yaml"), data.to_vec()),
        (root.join("base/kustomization.yaml"), data.to_vec()),
    ]);
}

/// The bytes as a packed repository (see [`unpack`]).
pub fn render_repo(data: &[u8]) {
    check(unpack(data));
}

/// The bytes as the parts of an ApplicationSet whose generators multiply, so that a short
/// input reaches expansions of up to a thousand parameter sets: byte 0 picks goTemplate,
/// `missingkey=error` and matrix or merge, bytes 1 and 2 the sizes of two list generators (up
/// to 48 elements each); the rest, line by line, is the element value (first line) and up to
/// 32 templated annotations. Strings are written as JSON, which is YAML, so every input parses.
pub fn expand_appset(data: &[u8]) {
    let [flags, a, b, rest @ ..] = data else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let mut lines = text.lines();
    let value = lines.next().unwrap_or("v");
    let q = |s: &str| serde_json::Value::String(s.to_string()).to_string();
    let list = |key: &str, n: u8| -> String {
        let items: Vec<String> = (0..usize::from(n % 49))
            .map(|i| format!("{{{key}: {}, i: {i}}}", q(&format!("{value}{i}"))))
            .collect();
        format!("{{list: {{elements: [{}]}}}}", items.join(", "))
    };
    let combine = if flags & 4 == 0 {
        "matrix: {generators: [".to_string()
    } else {
        "merge: {mergeKeys: [i], generators: [".to_string()
    };
    let annotations: Vec<String> = lines
        .take(32)
        .enumerate()
        .map(|(i, t)| format!("a{i}: {}", q(t)))
        .collect();
    let appset = format!(
        "apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {{name: fuzz, namespace: argocd}}
spec:
  goTemplate: {}
  goTemplateOptions: [{}]
  generators:
    - {combine}{}, {}]}}
  template:
    metadata:
      name: {}
      annotations: {{{}}}
    spec:
      project: default
      source: {{repoURL: 'https://example.com/org/repo.git', path: apps, targetRevision: HEAD}}
      destination: {{server: 'https://kubernetes.default.svc', namespace: apps}}
",
        flags & 1 == 0,
        if flags & 2 == 0 {
            ""
        } else {
            "missingkey=error"
        },
        list("x", *a),
        list("y", *b),
        q("fuzz-{{ .x }}-{{ .y }}"),
        annotations.join(", "),
    );
    let root = Path::new(ROOT);
    let outcome = check(vec![(root.join("appset.yaml"), appset.into_bytes())]);
    // However costly, an expansion stops once, with one finding.
    let stopped = outcome
        .findings
        .iter()
        .filter(|f| {
            *f.rule == gitops_lint::rules::schema::appset_template_error::RULE
                && f.message
                    .starts_with("expanding this ApplicationSet takes more than")
        })
        .count();
    assert!(
        stopped <= 1,
        "{stopped} budget findings for one ApplicationSet"
    );
}

/// The bytes as one template string, rendered in both of Argo CD's modes against a small fixed
/// parameter set: goTemplate under an ApplicationSet's whole work budget, with and without
/// `missingkey=error`, and fasttemplate under the output bound. Nothing may panic, no output
/// may pass the bound, and every error must read as a template error.
pub fn render_template(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let value = serde_json::json!({
        "path": {"path": "apps/foo", "basename": "foo", "segments": ["apps", "foo"]},
        "name": "MyApp",
        "replicas": 3,
        "ratio": 1.5,
        "enabled": true,
        "nothing": null,
        "labels": {"team": "core", "tier": "web"},
        "empty": "",
    });
    for missing_error in [false, true] {
        let mut work = Budget::new(UNIT_STEPS);
        match template::render_go(&text, &value, missing_error, &mut work) {
            Ok(out) => assert!(
                out.len() <= template::MAX_FIELD_OUTPUT,
                "output past the bound"
            ),
            Err(e) => assert!(e.message.starts_with("template: "), "{:?}", e.message),
        }
    }
    let params: BTreeMap<String, String> = [("path", "apps/foo"), ("path.basename", "foo")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    match template::render_fast_within(&text, &params, template::MAX_FIELD_OUTPUT) {
        Ok(out) => assert!(
            out.len() <= template::MAX_FIELD_OUTPUT,
            "output past the bound"
        ),
        Err(e) => assert!(e.message.starts_with("template: "), "{:?}", e.message),
    }
    template_set(&text);
}

/// Answers `.Files.Get` with the name asked for, and fails every other method.
struct FuzzHost;

impl template::Host for FuzzHost {
    fn call(
        &self,
        _receiver: &serde_json::Map<String, serde_json::Value>,
        method: &str,
        args: &[serde_json::Value],
    ) -> Result<serde_json::Value, String> {
        match (method, args) {
            ("Get", [serde_json::Value::String(name)]) => Ok(name.as_str().into()),
            _ => Err(format!("no method {method}")),
        }
    }
}

/// The text as two files of one chart, split at the first NUL byte (the first defines what
/// the second includes), in both dialects, each file executed on its own.
fn template_set(text: &str) {
    let (helpers, main) = text.split_once('\0').unwrap_or(("", text));
    let value = serde_json::json!({
        "Values": {"name": "x", "list": [1, "a"], "nothing": null},
        "Release": {"Name": "rel"},
        "Files": {template::HOST_KEY: "files"},
    });
    for dialect in [template::Dialect::Helm, template::Dialect::ArgoCd] {
        let mut set = template::TemplateSet::new(dialect);
        let mut work = Budget::new(UNIT_STEPS);
        let files = [
            ("c/templates/_helpers.tpl", helpers),
            ("c/templates/a.yaml", main),
        ];
        for (name, file) in files {
            if let Err(e) = set.add(name, file, &mut work) {
                assert!(e.message.starts_with("template: "), "{:?}", e.message);
            }
        }
        for (name, _) in files {
            match set.execute(name, &value, Some(&FuzzHost), &mut work) {
                Ok(out) => assert!(
                    out.len() <= template::MAX_FIELD_OUTPUT,
                    "output past the bound"
                ),
                Err(e) => assert!(e.message.starts_with("template: "), "{:?}", e.message),
            }
        }
    }
}

/// A repository packed into one input: every line that starts with `@@ ` names the file the
/// lines after it belong to, relative to the root. Text before the first such line is
/// `kustomization.yaml` at the root. Names are kept inside the root (no `..`, no absolute
/// paths), so what a mutation produces is still a repository.
pub fn unpack(data: &[u8]) -> Vec<(PathBuf, Vec<u8>)> {
    let root = Path::new(ROOT);
    let mut files: Vec<(PathBuf, Vec<u8>)> = vec![(root.join("kustomization.yaml"), Vec::new())];
    for line in data.split_inclusive(|&b| b == b'\n') {
        if let Some(name) = line.strip_prefix(b"@@ ") {
            if files.len() == MAX_FILES {
                break;
            }
            let name = String::from_utf8_lossy(name);
            let rel: PathBuf = name
                .trim()
                .split(['/', '\\'])
                .filter(|c| !c.is_empty() && *c != "." && *c != "..")
                .collect();
            let rel = if rel.as_os_str().is_empty() {
                PathBuf::from("kustomization.yaml")
            } else {
                rel
            };
            files.push((root.join(rel), Vec::new()));
        } else if let Some(last) = files.last_mut() {
            last.1.extend_from_slice(line);
        }
    }
    // A later file of the same name replaces the earlier one, as on disk.
    let mut seen = std::collections::HashSet::new();
    let mut kept: Vec<_> = files
        .into_iter()
        .rev()
        .filter(|(p, _)| seen.insert(p.clone()))
        .collect();
    kept.reverse();
    kept
}

pub fn options() -> Options {
    Options {
        paths: vec![PathBuf::from(ROOT)],
        discover: discover::Options {
            max_file_size: 8 * 1024 * 1024,
            ..discover::Options::default()
        },
        version: None,
        limits: ParseLimits::default(),
        repo_urls: vec!["https://example.com/org/repo.git".to_string()],
        config: Config::default(),
        suppressions: true,
        baseline: None,
        report_only: None,
        overlay: Default::default(),
        cache: None,
        timings: false,
    }
}

/// Lints the files and holds the result to what every run promises: no panic, spans inside
/// their file on character boundaries, fixes that apply, every output format written, and
/// JSON and SARIF that parse.
pub fn check(files: Vec<(PathBuf, Vec<u8>)>) -> Outcome {
    let opts = options();
    let loaded = engine::load_memory(files, PathBuf::from(ROOT), &opts);
    let outcome = engine::lint(&opts, loaded, Instant::now());
    for f in &outcome.findings {
        let labels = std::iter::once(&f.primary).chain(&f.secondary);
        for span in labels
            .map(|l| l.span)
            .chain(f.fix.iter().flat_map(|x| x.edits.iter().map(|e| e.span)))
        {
            let text = &outcome.sources.get(span.file).text;
            let (start, end) = (span.start as usize, span.end as usize);
            assert!(
                start <= end && end <= text.len(),
                "{} span {start}..{end} outside a file of {} bytes",
                f.rule.id,
                text.len()
            );
            assert!(
                text.is_char_boundary(start) && text.is_char_boundary(end),
                "{} span {start}..{end} splits a character",
                f.rule.id
            );
        }
        if let Some(fix) = &f.fix {
            let before = &outcome.sources.get(fix.file()).text;
            let after = apply::rewrite(before, &[fix]);
            // A fix may be refused as breaking the file; it must not panic on the way.
            let _ = apply::check(before, &after);
        }
    }
    let settings = Settings {
        width: 100,
        verbose: true,
        statistics: true,
        ..Settings::default()
    };
    for format in [
        Format::Human,
        Format::Json,
        Format::Sarif,
        Format::Github,
        Format::Concise,
        Format::Junit,
    ] {
        let mut out = Vec::new();
        report::reporter(format)
            .report(&outcome, &settings, &mut out)
            .expect("writing to memory does not fail");
        if matches!(format, Format::Json | Format::Sarif) {
            if let Err(e) = serde_json::from_slice::<serde_json::Value>(&out) {
                panic!("{format:?} output does not parse: {e}");
            }
        }
    }
    outcome
}

/// bytes → one CEL expression, compiled and evaluated on a small Deployment under a small
/// budget. Nothing may panic; a budget error must leave the budget spent.
pub fn cel_eval(data: &[u8]) {
    use gitops_lint::cel;
    let text = String::from_utf8_lossy(data);
    let Ok(program) = cel::Program::compile(&text) else {
        return;
    };
    let yaml = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels: {app: web, tier: '1'}\nspec:\n  replicas: 3\n  template:\n    spec:\n      containers:\n        - {name: a, image: 'nginx:1.25'}\n        - {name: b, image: busybox, ports: [{containerPort: 80}]}\n";
    let parsed = gitops_lint::yaml::parse(0, yaml, gitops_lint::yaml::ParseLimits::default());
    let Some(doc) = parsed.documents.first() else {
        return;
    };
    let mut bindings = cel::Bindings::new();
    bindings.node("object", &doc.root);
    bindings.set("oldObject", cel::Value::Null);
    let mut budget = cel::Budget::new(20_000);
    match program.eval(&bindings, &mut budget) {
        Ok(v) => {
            let _ = v.to_text();
            let _ = v.type_name();
        }
        Err(cel::EvalError::Budget) => assert_eq!(budget.remaining, 0),
        Err(_) => {}
    }
}
