#![allow(dead_code)]
//! Runs the real binary the way a user would.

pub mod gen;
pub mod rng;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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

/// The cells of the doc's `| category | default severity | fix |` table.
pub fn doc_table(id: &str, doc: &str) -> Result<[String; 3], String> {
    let mut lines = doc.lines().skip_while(|l| {
        l.replace(' ', "")
            .trim_end_matches('|')
            .ne("|category|defaultseverity|fix")
    });
    lines.next().ok_or(format!(
        "rules/{id}.md has no `| category | default severity | fix |` table"
    ))?;
    let row = lines
        .nth(1)
        .ok_or(format!("rules/{id}.md: the table has no row"))?;
    let cells: Vec<String> = row
        .trim()
        .trim_matches('|')
        .split('|')
        .map(|c| c.trim().to_string())
        .collect();
    <[String; 3]>::try_from(cells)
        .map_err(|c| format!("rules/{id}.md: the table row has {} cells", c.len()))
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
