#![allow(dead_code)]
//! Runs the real binary the way a user would.

pub mod gen;
pub mod hostile;
pub mod objects;
pub mod rng;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The `helm` oracle (scripts/install-helm.sh): on PATH, else in `~/.local/bin`.
pub fn find_helm() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    let home = std::env::var_os("HOME").map(|h| Path::new(&h).join(".local/bin"));
    on_path
        .into_iter()
        .chain(home)
        .map(|dir| dir.join("helm"))
        .find(|p| p.is_file())
}

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
    /// The child's own peak resident memory, in KiB, as the kernel counted it when it ended.
    pub max_rss_kib: u64,
}

/// Runs `gitops-lint ARGS` in `dir`, killing it after `limit`.
pub fn run_in(dir: &Path, args: &[&str], limit: Duration) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gitops-lint"));
    cmd.args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("COLUMNS");
    run_command(cmd, &format!("gitops-lint {args:?}"), limit)
}

/// Runs a prepared command in its own process group with its output collected, ending the
/// whole group after `limit` (so a timeout also stops what it started: cargo, rustc).
// The child is reaped by `wait4` in `reap`, which clippy cannot see.
#[allow(clippy::zombie_processes)]
pub fn run_command(mut cmd: Command, what: &str, limit: Duration) -> Run {
    use std::os::unix::process::CommandExt;
    let started = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("{what} starts: {e}"));
    // Drain pipes on threads so a large output cannot block the child.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut out, &mut s).ok();
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut err, &mut s).ok();
        s
    });
    let (status, max_rss_kib) = loop {
        if let Some(done) = reap(child.id()) {
            break done;
        }
        if started.elapsed() > limit {
            let group = format!("-{}", child.id());
            Command::new("kill")
                .args(["-KILL", "--", &group])
                .status()
                .ok();
            child.kill().ok();
            child.wait().ok();
            panic!(
                "{what} did not finish within {limit:?}\n{}{}",
                t_out.join().unwrap(),
                t_err.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Run {
        code: status.code().unwrap_or(-1),
        stdout: t_out.join().unwrap(),
        stderr: t_err.join().unwrap(),
        elapsed: started.elapsed(),
        max_rss_kib,
    }
}

/// Reaps the child if it has ended, with the resources it used: `wait4` reports them for
/// this one child, where `getrusage(RUSAGE_CHILDREN)` would mix in every other test's.
// The one place the project calls into C: the test harness, not the linter.
#[allow(unsafe_code)]
fn reap(pid: u32) -> Option<(std::process::ExitStatus, u64)> {
    use std::os::unix::process::ExitStatusExt;
    let mut status = 0;
    // SAFETY: plain system call on our own child, with valid pointers to locals.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let got = unsafe { libc::wait4(pid as i32, &mut status, libc::WNOHANG, &mut usage) };
    assert!(got >= 0, "wait4: {}", std::io::Error::last_os_error());
    // Linux counts ru_maxrss in KiB.
    (got != 0).then(|| {
        (
            std::process::ExitStatus::from_raw(status),
            usage.ru_maxrss as u64,
        )
    })
}

pub fn run(args: &[&str]) -> Run {
    run_in(&root(), args, Duration::from_secs(60))
}

/// The timing in the summary line changes from run to run.
pub fn stable(human: &str) -> String {
    let mut out = String::new();
    for line in human.lines() {
        if line.starts_with("Checked ") {
            if let (Some(a), Some(b)) = (line.find(" in "), line.find(" ms")) {
                out.push_str(&line[..a]);
                out.push_str(" in [TIME]");
                out.push_str(&line[b + 3..]);
                out.push('\n');
                continue;
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

pub fn json(run: &Run) -> serde_json::Value {
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("JSON output: {e}\n{}", run.stdout))
}

/// `(rule, file, line)` of every finding in a JSON report.
pub fn found(report: &serde_json::Value) -> Vec<(String, String, u64)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap().to_string(),
                f["file"].as_str().unwrap().to_string(),
                f["start"]["line"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The JSON report of `gitops-lint PATH --no-config EXTRA...` run in `dir`, whatever it finds.
pub fn lint_json(dir: &Path, path: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        path,
        "--format",
        "json",
        "--fail-on",
        "never",
        "--no-config",
    ];
    args.extend_from_slice(extra);
    let run = run_in(dir, &args, Duration::from_secs(120));
    assert_eq!(run.code, 0, "{}", run.stderr);
    json(&run)
}

/// The first finding that still offers a fix `--fix` (with `--unsafe-fixes` when `unsafe_ok`)
/// would apply: after `--fix`, there must be none.
pub fn still_fixable(report: &serde_json::Value, unsafe_ok: bool) -> Option<String> {
    report["findings"].as_array()?.iter().find_map(|f| {
        let fix = &f["fix"];
        (fix.is_object() && (unsafe_ok || fix["applicability"] == "safe")).then(|| {
            format!(
                "{} at {}:{}: {}",
                f["rule"], f["file"], f["start"]["line"], fix["message"]
            )
        })
    })
}

/// Every rule id, in the order the registry declares them.
pub fn rule_ids() -> Vec<String> {
    gitops_lint::rules::RULES
        .iter()
        .map(|r| r.id.to_string())
        .collect()
}

pub fn doc(id: &str) -> String {
    std::fs::read_to_string(root().join("rules").join(format!("{id}.md")))
        .unwrap_or_else(|e| panic!("rules/{id}.md: {e}"))
}

/// Where the row of the doc's `| category | default severity | fix |` table is: the byte
/// range of its line, without the line break.
pub fn doc_table(id: &str, doc: &str) -> Result<std::ops::Range<usize>, String> {
    let mut at = 0;
    let mut lines = doc.split_inclusive('\n').map(|l| {
        let start = at;
        at += l.len();
        (start, l.trim_end_matches(['\n', '\r']))
    });
    lines
        .find(|(_, l)| {
            l.replace(' ', "")
                .trim_end_matches('|')
                .eq("|category|defaultseverity|fix")
        })
        .ok_or(format!(
            "rules/{id}.md has no `| category | default severity | fix |` table"
        ))?;
    let (start, row) = lines
        .nth(1)
        .filter(|(_, l)| l.starts_with('|'))
        .ok_or(format!("rules/{id}.md: the table has no row"))?;
    Ok(start..start + row.len())
}

/// Runs git in `dir`, isolated from the user's and the system's configuration.
pub fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Copies the directory tree `from` to `to` (regular files and directories).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// For a test that drives another program: `build.rs` looked for it on PATH, and a test whose
/// program was missing is compiled as ignored, with the reason. So a test that runs and finds
/// its program missing fails: under CI (`CI` set, where `.ci/run` installs the ones it needs),
/// or because the program went away after the tests were built.
pub fn require_program(program: &str, available: bool, install: &str) {
    if available {
        return;
    }
    if std::env::var_os("CI").is_some() {
        panic!("{program} cannot be run, and under CI this test may not be skipped ({install})");
    }
    panic!(
        "{program} cannot be run, though it was on PATH when the tests were built: install it \
         ({install}), or `touch build.rs` and the test is ignored"
    );
}

/// An XML element as [`parse_xml`] reads it.
#[derive(Debug)]
pub struct Element {
    pub name: String,
    pub attributes: Vec<(String, String)>,
    pub children: Vec<Element>,
}

impl Element {
    pub fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Reads a well-formed XML 1.0 document (the subset a report may use: a declaration,
/// comments, elements, attributes, text and the predefined and numeric character references)
/// and returns its root element, or says where it is not well-formed.
pub fn parse_xml(text: &str) -> Result<Element, String> {
    let mut rest = text.trim_start_matches('\u{feff}');
    if let Some(after) = rest.strip_prefix("<?xml") {
        let end = after.find("?>").ok_or("the XML declaration does not end")?;
        rest = &after[end + 2..];
    }
    let mut stack: Vec<Element> = Vec::new();
    let mut root = None;
    while !rest.is_empty() {
        let Some(lt) = rest.find('<') else {
            check_text(rest)?;
            if stack.is_empty() && !rest.trim().is_empty() {
                return Err(format!("text outside the root element: {rest:?}"));
            }
            break;
        };
        let (text, tag) = rest.split_at(lt);
        check_text(text)?;
        if stack.is_empty() && !text.trim().is_empty() {
            return Err(format!("text outside the root element: {text:?}"));
        }
        if let Some(after) = tag.strip_prefix("<!--") {
            let end = after.find("-->").ok_or("a comment does not end")?;
            rest = &after[end + 3..];
            continue;
        }
        let end = tag.find('>').ok_or("a tag does not end")?;
        let inner = &tag[1..end];
        rest = &tag[end + 1..];
        if let Some(name) = inner.strip_prefix('/') {
            let open = stack.pop().ok_or(format!("`</{name}>` closes nothing"))?;
            if open.name != name.trim_end() {
                return Err(format!("`<{}>` is closed by `</{name}>`", open.name));
            }
            match stack.last_mut() {
                Some(parent) => parent.children.push(open),
                None => root = Some(open),
            }
            continue;
        }
        if root.is_some() {
            return Err(format!("a second root element: `<{inner}>`"));
        }
        let (inner, empty) = match inner.strip_suffix('/') {
            Some(i) => (i, true),
            None => (inner, false),
        };
        let element = parse_tag(inner)?;
        if empty {
            match stack.last_mut() {
                Some(parent) => parent.children.push(element),
                None => root = Some(element),
            }
        } else {
            stack.push(element);
        }
    }
    if let Some(open) = stack.pop() {
        return Err(format!("`<{}>` is never closed", open.name));
    }
    root.ok_or_else(|| "no root element".to_string())
}

fn parse_tag(inner: &str) -> Result<Element, String> {
    let name_end = inner
        .find(|c: char| c.is_whitespace())
        .unwrap_or(inner.len());
    let name = &inner[..name_end];
    check_name(name)?;
    let mut attributes: Vec<(String, String)> = Vec::new();
    let mut rest = inner[name_end..].trim_start();
    while !rest.is_empty() {
        let eq = rest
            .find('=')
            .ok_or(format!("attribute without a value in `<{inner}>`"))?;
        let key = rest[..eq].trim_end();
        check_name(key)?;
        let value = rest[eq + 1..].trim_start();
        let quote = value
            .chars()
            .next()
            .filter(|c| *c == '"' || *c == '\'')
            .ok_or(format!("unquoted attribute `{key}` in `<{inner}>`"))?;
        let close = value[1..]
            .find(quote)
            .ok_or(format!("attribute `{key}` does not end in `<{inner}>`"))?;
        let raw = &value[1..close + 1];
        if raw.contains('<') {
            return Err(format!("`<` in attribute `{key}` of `<{inner}>`"));
        }
        if attributes.iter().any(|(k, _)| k == key) {
            return Err(format!("attribute `{key}` twice in `<{inner}>`"));
        }
        attributes.push((key.to_string(), unescape(raw)?));
        let after = &value[close + 2..];
        if !after.is_empty() && !after.starts_with(char::is_whitespace) {
            return Err(format!("no space after attribute `{key}` in `<{inner}>`"));
        }
        rest = after.trim_start();
    }
    Ok(Element {
        name: name.to_string(),
        attributes,
        children: Vec::new(),
    })
}

fn check_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let ok = chars
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_alphanumeric() || matches!(c, '_' | ':' | '-' | '.'));
    if ok {
        Ok(())
    } else {
        Err(format!("`{name}` is not an XML name"))
    }
}

fn check_text(text: &str) -> Result<(), String> {
    if text.contains("]]>") {
        return Err("`]]>` in text".into());
    }
    unescape(text).map(drop)
}

/// Text with its references replaced; an `&` that starts no reference, or a character XML 1.0
/// cannot hold, is an error.
fn unescape(text: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let end = rest[amp..]
            .find(';')
            .ok_or(format!("a bare `&` in {text:?}"))?;
        let reference = &rest[amp + 1..amp + end];
        let c = match reference {
            "amp" => '&',
            "lt" => '<',
            "gt" => '>',
            "quot" => '"',
            "apos" => '\'',
            r => {
                let code = match r.strip_prefix("#x") {
                    Some(hex) => u32::from_str_radix(hex, 16).ok(),
                    None => r.strip_prefix('#').and_then(|d| d.parse().ok()),
                };
                code.and_then(char::from_u32)
                    .ok_or(format!("unknown reference `&{r};` in {text:?}"))?
            }
        };
        out.push(c);
        rest = &rest[amp + end + 1..];
    }
    out.push_str(rest);
    match out
        .chars()
        .find(|&c| (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r'))
    {
        Some(c) => Err(format!("character {:?} cannot be written in XML 1.0", c)),
        None => Ok(out),
    }
}

/// `(file relative to the case, line)` of every `# expect: <id>` mark in a case folder: the
/// lines a rule (or policy) must report in a fixture repository, exactly.
pub fn marks(dir: &Path, id: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(text) = std::fs::read_to_string(&p) {
                for (i, line) in text.lines().enumerate() {
                    if line.trim_end().ends_with(&format!("# expect: {id}")) {
                        let rel = p.strip_prefix(dir).unwrap().display().to_string();
                        out.push((rel, i + 1));
                    }
                }
            }
        }
    }
    out.sort();
    out
}

/// `git init` in `dir`, with an identity and no signing, so that tests can commit anywhere.
pub fn git_init(dir: &Path) {
    git(dir, &["init", "-q"]);
    for (k, v) in [
        ("user.name", "Test"),
        ("user.email", "test@example.com"),
        ("commit.gpgsign", "false"),
    ] {
        git(dir, &["config", k, v]);
    }
}
