//! The binary reaches no network and runs no program; it reads nothing outside the linted tree
//! through a symlink, and writes only where `--fix`, `--output` and `--write-baseline` tell it.
//!
//! Three layers, each catching what the one before cannot:
//! - our own source uses no process or socket API (a scan of `src/`, with a two-entry allow-list);
//! - no crate the binary links may spawn or connect except a reviewed few, whose code that can is
//!   not reached (a scan of the resolved dependency tree from `cargo metadata`);
//! - the real binary, run under `strace -f` in every mode, makes no `execve` but its own, no
//!   `fork`, no `socket`/`connect`, opens nothing behind an escaping symlink and writes only to
//!   the paths it was given. Without strace on PATH that test is ignored, with the reason
//!   (see `build.rs`), and only the file-tree checks run; under CI (`CI` set) it runs and
//!   fails instead: `.ci/run` installs strace.
#![allow(clippy::unwrap_used)] // a test stops at the first thing that is not as expected

mod common;

use common::{copy_tree, git};

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

/// What spawns a process or opens a socket, as it would be written in Rust source.
const FORBIDDEN: &[&str] = &[
    "process::Command",
    "Command::new(",
    "std::net::",
    "TcpStream",
    "TcpListener",
    "UdpSocket",
    "os::unix::net",
    "UnixStream",
    "UnixListener",
    "UnixDatagram",
    "libc::",
    "rustix::",
    "extern \"C\"",
    "asm!",
];

/// Forbidden-looking uses in our own source that do neither.
const OWN_ALLOWED: &[(&str, &str)] = &[
    // The exit code, and the per-process temporary name of earlier versions, which a test plants
    // as a link to show it is not followed.
    ("src/main.rs", "std::process::exit("),
    ("src/fix/apply.rs", "std::process::id()"),
];

/// The forbidden patterns on code lines (not comments) of `text`, minus the allowed ones.
fn forbidden_uses(file: &str, text: &str, allowed: &[(&str, &str)]) -> Vec<String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        let mut rest = code.to_string();
        for (f, what) in allowed {
            if *f == file {
                rest = rest.replace(what, "");
            }
        }
        for pattern in FORBIDDEN {
            if rest.contains(pattern) {
                out.push(format!("{file}:{}: `{pattern}` in {}", n + 1, line.trim()));
            }
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn own_source_uses_no_process_or_socket_api() {
    // The scanner itself must see a spawn and a socket, or the test proves nothing.
    let planted =
        "let c = std::process::Command::new(\"sh\");\nlet s = std::net::TcpStream::connect(a);";
    assert_eq!(forbidden_uses("x.rs", planted, OWN_ALLOWED).len(), 4);
    assert!(forbidden_uses("src/main.rs", "    std::process::exit(code);", OWN_ALLOWED).is_empty());

    let root = common::root();
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files.push(root.join("build.rs"));
    let mut found = Vec::new();
    for path in files.iter().filter(|p| p.exists()) {
        let rel = path
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        found.extend(forbidden_uses(
            &rel,
            &std::fs::read_to_string(path).unwrap(),
            OWN_ALLOWED,
        ));
    }
    assert!(
        found.is_empty(),
        "process or socket APIs in src/:\n{}",
        found.join("\n")
    );
}

/// Crates whose library source names a process or socket API, and why the binary never gets
/// there. A crate that starts to (a new dependency, or a new version) fails the test until it is
/// reviewed and listed here; one that stops must be removed, so the list stays true.
const DEPENDENCIES_ALLOWED: &[(&str, &str)] = &[
    ("gix", "commit signing runs gpg/ssh; gitops-lint never creates commits"),
    ("gix-command", "runs git helpers for transports and credentials; no network feature is built"),
    ("gix-diff", "external diff/textconv drivers; gitops-lint hashes blobs itself and diffs nothing with gix"),
    ("gix-error", "formats std::process::Command in error metadata only"),
    ("gix-filter", "clean/smudge driver processes; gitops-lint applies no filter (documented in src/changed.rs)"),
    ("gix-object", "signature signing/verification via gpg; never called"),
    ("gix-path", "asks the git binary for its installation config only when `git_binary` is enabled; gix::discover leaves it off"),
    ("gix-transport", "file/ssh/git:// transports; the `blocking-client` features that build them are off"),
    ("gix-url", "parses IP addresses in URLs (std::net types only)"),
    ("log", "formats std::net address types as log values"),
    ("rustix", "socket address types; its `net` and `process` APIs are not enabled"),
    ("terminal_size", "its unit tests run `stty`; not compiled into the library"),
];

#[test]
fn dependencies_that_could_spawn_or_connect_are_reviewed() {
    let host = String::from_utf8(
        Command::new(std::env::var("RUSTC").unwrap_or("rustc".into()))
            .arg("-vV")
            .output()
            .expect("rustc -vV")
            .stdout,
    )
    .unwrap()
    .lines()
    .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
    .expect("rustc -vV names the host");
    let out = Command::new(std::env::var("CARGO").unwrap_or("cargo".into()))
        .args(["metadata", "--format-version", "1", "--locked", "--offline"])
        .args(["--filter-platform", &host])
        .current_dir(common::root())
        .output()
        .expect("cargo metadata");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();

    // The crates the binary links: the normal (not dev, not build) dependencies, transitively.
    let nodes: BTreeMap<&str, &serde_json::Value> = meta["resolve"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["id"].as_str().unwrap(), n))
        .collect();
    let mut linked = BTreeSet::new();
    let mut todo = vec![meta["resolve"]["root"].as_str().unwrap()];
    while let Some(id) = todo.pop() {
        if !linked.insert(id) {
            continue;
        }
        for dep in nodes[id]["deps"].as_array().unwrap() {
            let normal = dep["dep_kinds"]
                .as_array()
                .unwrap()
                .iter()
                .any(|k| k["kind"].is_null());
            if normal {
                todo.push(dep["pkg"].as_str().unwrap());
            }
        }
    }
    assert!(
        linked.len() > 50,
        "the dependency walk found only {linked:?}"
    );

    let mut flagged: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for package in meta["packages"].as_array().unwrap() {
        let name = package["name"].as_str().unwrap();
        if !linked.contains(package["id"].as_str().unwrap()) || name == "gitops-lint" {
            continue;
        }
        let base = Path::new(package["manifest_path"].as_str().unwrap())
            .parent()
            .unwrap();
        // Library code only: build scripts, tests and examples are not in the binary.
        for target in package["targets"].as_array().unwrap() {
            let kinds = target["kind"].as_array().unwrap();
            if !kinds
                .iter()
                .any(|k| k == "lib" || k == "rlib" || k == "proc-macro")
            {
                continue;
            }
            let dir = Path::new(target["src_path"].as_str().unwrap())
                .parent()
                .unwrap();
            let mut files = Vec::new();
            rust_files(dir, &mut files);
            for file in files {
                let rel = file
                    .strip_prefix(base)
                    .unwrap_or(&file)
                    .to_string_lossy()
                    .into_owned();
                let text = std::fs::read_to_string(&file).unwrap_or_default();
                // Crates implement FFI and intrinsics themselves, and `Command::new` is also
                // clap's; what matters here is `std::process` and sockets.
                let uses: Vec<String> = forbidden_uses(&rel, &text, &[])
                    .into_iter()
                    .filter(|u| {
                        ![
                            "libc::",
                            "rustix::",
                            "extern \"C\"",
                            "asm!",
                            "Command::new(",
                        ]
                        .iter()
                        .any(|p| u.contains(&format!("`{p}`")))
                    })
                    .collect();
                flagged.entry(name.to_string()).or_default().extend(uses);
            }
        }
    }
    flagged.retain(|_, uses| !uses.is_empty());
    let allowed: BTreeSet<&str> = DEPENDENCIES_ALLOWED.iter().map(|(n, _)| *n).collect();
    let unreviewed: Vec<String> = flagged
        .iter()
        .filter(|(n, _)| !allowed.contains(n.as_str()))
        .map(|(n, uses)| format!("{n}:\n  {}", uses.join("\n  ")))
        .collect();
    assert!(
        unreviewed.is_empty(),
        "dependencies that name process or socket APIs, not reviewed:\n{}",
        unreviewed.join("\n")
    );
    let stale: Vec<&&str> = allowed
        .iter()
        .filter(|n| !flagged.contains_key(**n))
        .collect();
    assert!(
        stale.is_empty(),
        "reviewed dependencies that no longer name such APIs (remove them): {stale:?}"
    );
}

/// Lexically normalised absolute path (no symlink resolution: the question is which name the
/// binary asked for).
fn normal(base: &Path, p: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for c in base.join(p).components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// One traced system call: its name, the paths it names (resolved), and its text.
struct Call {
    name: String,
    paths: Vec<PathBuf>,
    line: String,
}

/// Parses `strace -f -y` output. An interrupted call (`<unfinished ...>`) keeps its arguments
/// on the first line; the `resumed` line carries only the result and is skipped.
fn parse_trace(text: &str, cwd: &Path) -> Vec<Call> {
    let mut calls = Vec::new();
    for line in text.lines() {
        let rest = line.split_once(' ').map_or(line, |(_, r)| r).trim_start();
        if rest.starts_with("<...") || rest.starts_with("+++") || rest.starts_with("---") {
            continue;
        }
        let Some((name, args)) = rest.split_once('(') else {
            continue;
        };
        // Each quoted path, relative to the directory fd printed just before it (`-y` shows
        // `3</abs/dir>`), or to the working directory.
        let mut paths = Vec::new();
        let mut base = cwd.to_path_buf();
        let mut chars = args.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            match c {
                '<' => {
                    let end = args[i + 1..].find('>').map_or(args.len(), |e| i + 1 + e);
                    base = PathBuf::from(&args[i + 1..end]);
                    while chars.peek().is_some_and(|(j, _)| *j <= end) {
                        chars.next();
                    }
                }
                'A' if args[i..].starts_with("AT_FDCWD") => base = cwd.to_path_buf(),
                '"' => {
                    let end = args[i + 1..].find('"').map_or(args.len(), |e| i + 1 + e);
                    paths.push(normal(&base, &args[i + 1..end]));
                    base = cwd.to_path_buf();
                    while chars.peek().is_some_and(|(j, _)| *j <= end) {
                        chars.next();
                    }
                }
                _ => {}
            }
        }
        calls.push(Call {
            name: name.to_string(),
            paths,
            line: line.to_string(),
        });
    }
    calls
}

const WRITE_FLAGS: &[&str] = &["O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND"];

const TRACED: &str = "trace=%process,%network,open,openat,openat2,creat,rename,renameat,renameat2,\
unlink,unlinkat,rmdir,mkdir,mkdirat,link,linkat,symlink,symlinkat,truncate,chmod,fchmodat,\
chown,fchownat,lchown,mknod,mknodat";

fn has_strace() -> bool {
    Command::new("strace")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn has_git() -> bool {
    Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Every regular file under `dir` (not following symlinks) with its content.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                walk(&entry.path(), out);
            } else if kind.is_file() {
                out.insert(entry.path(), std::fs::read(entry.path()).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, &mut out);
    out
}

/// A repository with something for every mode to do, a fixable file, and two symlinks that
/// lead out of it to a directory holding a valid Application and a file the tool must not read.
fn hostile_workspace(work: &Path) -> PathBuf {
    let repo = work.join("repo");
    copy_tree(&common::root().join("fixtures/example-repo"), &repo);
    copy_tree(
        &common::root().join("fixtures/fix/prune-last-block/before"),
        &repo.join("fixable"),
    );
    let outside = work.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(
        outside.join("app.yaml"),
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: outside}\nspec: {project: default}\n",
    )
    .unwrap();
    std::os::unix::fs::symlink("../outside/app.yaml", repo.join("escape.yaml")).unwrap();
    std::os::unix::fs::symlink("../outside", repo.join("escape-dir")).unwrap();
    // A kustomization that names the outside through links of its own: as a resource, as a
    // directory and as a generator's file. Each is a kustomize-error, and none is opened.
    let leaky = repo.join("leaky");
    std::fs::create_dir_all(&leaky).unwrap();
    std::os::unix::fs::symlink("../../outside/app.yaml", leaky.join("app.yaml")).unwrap();
    std::os::unix::fs::symlink("../../outside", leaky.join("dir")).unwrap();
    std::fs::write(
        leaky.join("kustomization.yaml"),
        "resources:\n  - app.yaml\n  - dir\nconfigMapGenerator:\n  - name: leak\n    files:\n      - dir/app.yaml\n",
    )
    .unwrap();
    std::fs::create_dir_all(work.join("out")).unwrap();
    if has_git() {
        git(&repo, &["init", "-q"]);
        git(&repo, &["add", "-A"]);
        git(
            &repo,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-qm",
                "base",
            ],
        );
        std::fs::write(
            repo.join("apps/new.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: n}\n",
        )
        .unwrap();
    }
    repo
}

/// Whether a run told to write `writes` may write `path`: inside one of them, or the temporary
/// file next to one that is renamed over it (`.NAME.gitops-lint-RANDOM`).
fn may_write(writes: &[PathBuf], path: &Path) -> bool {
    writes.iter().any(|w| {
        let temporary = w.file_name().is_some_and(|name| {
            path.parent() == w.parent()
                && path.file_name().is_some_and(|n| {
                    n.to_string_lossy()
                        .starts_with(&format!(".{}.gitops-lint-", name.to_string_lossy()))
                })
        });
        path.starts_with(w) || temporary
    })
}

#[test]
#[cfg_attr(not(any(has_strace, ci)), ignore = "strace is not on PATH")]
fn the_binary_runs_nothing_connects_nowhere_and_writes_only_where_told() {
    common::require_program("strace", has_strace(), "apt-get install strace");
    every_mode(true);
}

/// Where strace is missing the file-tree half still runs; where it is there, the test above
/// does all of it.
#[cfg(not(has_strace))]
#[test]
fn without_strace_the_binary_still_writes_only_where_told() {
    every_mode(false);
}

/// Runs the binary in every mode, under strace when `strace` is true, and checks each run's
/// file tree before and after and, under strace, its system calls.
fn every_mode(strace: bool) {
    let work = tempfile::tempdir().unwrap();
    let work = work.path().canonicalize().unwrap();
    let repo = hostile_workspace(&work);
    let out = work.join("out");
    let trace = work.join("trace.txt");
    let report = out.join("report.sarif");
    let baseline = out.join("baseline.json");

    let mut scenarios: Vec<(Vec<String>, Vec<PathBuf>)> = Vec::new();
    let mut add = |args: &[&str], writes: &[&Path]| {
        scenarios.push((
            args.iter().map(|s| s.to_string()).collect(),
            writes.iter().map(|p| p.to_path_buf()).collect(),
        ));
    };
    add(&["."], &[]);
    add(&["--format", "json", "--threads", "1", "."], &[]);
    add(
        &[
            "--format",
            "sarif",
            "--output",
            report.to_str().unwrap(),
            ".",
        ],
        &[&report],
    );
    add(
        &["--write-baseline", baseline.to_str().unwrap(), "."],
        &[&baseline],
    );
    add(
        &[
            "--baseline",
            baseline.to_str().unwrap(),
            "--format",
            "github",
            ".",
        ],
        &[],
    );
    add(&["--diff", "--unsafe-fixes", "."], &[]);
    add(&["--context", "fixable/apps/payments.yaml"], &[]);
    add(&["--format", "json", "escape.yaml", "."], &[]);
    add(&["graph", "."], &[]);
    add(&["config", "."], &[]);
    add(&["explain", "secret-in-git"], &[]);
    add(&["rules", "--format", "json"], &[]);
    if has_git() {
        add(&["--changed-since", "HEAD", "."], &[]);
        add(&["--trusted-config-rev", "HEAD", "."], &[]);
        add(&["config", "--trusted-config-rev", "HEAD", "."], &[]);
    }
    // Late, so that the workspace's files are old enough to be stored.
    let cache = out.join("cache");
    add(
        &[
            "--context",
            "--cache-dir",
            cache.to_str().unwrap(),
            "fixable/apps/payments.yaml",
        ],
        &[&cache],
    );
    // Last: it changes the tree.
    add(&["--fix", "--unsafe-fixes", "."], &[&repo]);

    for (args, writes) in &scenarios {
        let before = snapshot(&work);
        let mut cmd = if strace {
            let mut c = Command::new("strace");
            c.args([
                "-f",
                "-qq",
                "-y",
                "-s",
                "4096",
                "-e",
                TRACED,
                "-e",
                "signal=none",
                "-o",
            ])
            .arg(&trace)
            .arg(env!("CARGO_BIN_EXE_gitops-lint"));
            c
        } else {
            Command::new(env!("CARGO_BIN_EXE_gitops-lint"))
        };
        cmd.args(args).current_dir(&repo).env("NO_COLOR", "1");
        let run = common::run_command(cmd, &format!("gitops-lint {args:?}"), LIMIT);
        assert!(
            run.code == 0 || run.code == 1,
            "{args:?} exited {}: {}",
            run.code,
            run.stderr
        );
        if args.contains(&"escape.yaml".to_string()) {
            let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
            let skipped = &report["summary"]["files_skipped"];
            assert!(
                skipped
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|s| s["path"] == "escape.yaml" && s["reason"] == "not-a-file"),
                "a symlink named on the command line is skipped, and said so: {skipped}"
            );
        }
        // The file tree: nothing changed but what the run was told to write.
        let after = snapshot(&work);
        let changed: Vec<&PathBuf> = before
            .keys()
            .chain(after.keys())
            .filter(|p| before.get(*p) != after.get(*p) && **p != trace)
            .collect();
        for path in &changed {
            assert!(
                may_write(writes, path),
                "{args:?} changed {}",
                path.display()
            );
        }
        assert!(!writes.is_empty() || changed.is_empty());
        if !strace {
            continue;
        }

        let text = std::fs::read_to_string(&trace).unwrap();
        let calls = parse_trace(&text, &repo);
        assert!(calls.len() > 10, "{args:?}: the trace is empty:\n{text}");
        let bad = |why: &str, call: &Call| panic!("{args:?}: {why}:\n{}", call.line);
        let mut execs = 0;
        for call in &calls {
            match call.name.as_str() {
                "execve" | "execveat" => {
                    execs += 1;
                    if execs > 1 {
                        bad("runs a program", call);
                    }
                }
                "fork" | "vfork" => bad("forks", call),
                "clone" | "clone3" if !call.line.contains("CLONE_THREAD") => {
                    bad("starts a process", call)
                }
                "socket" | "socketpair" | "connect" | "bind" | "listen" | "accept" | "accept4"
                | "sendto" | "sendmsg" | "sendmmsg" | "recvfrom" | "recvmsg" => {
                    bad("uses a socket", call)
                }
                _ => {}
            }
            if call.paths.iter().any(|p| {
                p.starts_with(work.join("outside"))
                    || p.starts_with(repo.join("escape.yaml"))
                    || p.starts_with(repo.join("escape-dir"))
                    || p.starts_with(repo.join("leaky/app.yaml"))
                    || p.starts_with(repo.join("leaky/dir"))
            }) && call.name.starts_with("open")
            {
                bad(
                    "opens a path behind a symlink that leaves the repository",
                    call,
                );
            }
            let writing = match call.name.as_str() {
                "open" | "openat" | "openat2" => WRITE_FLAGS.iter().any(|f| call.line.contains(f)),
                "execve" | "execveat" | "clone" | "clone3" | "exit" | "exit_group" | "wait4" => {
                    false
                }
                n => TRACED.contains(&format!(",{n},")) || TRACED.ends_with(&format!(",{n}")),
            };
            if writing {
                for path in &call.paths {
                    if !may_write(writes, path) {
                        bad(
                            &format!("writes {} without being told to", path.display()),
                            call,
                        );
                    }
                }
            }
        }
        assert_eq!(
            execs, 1,
            "{args:?}: expected the binary's own execve:\n{text}"
        );
    }
}

#[test]
fn the_trace_parser_sees_what_it_must() {
    let cwd = Path::new("/w/repo");
    let trace = r#"10 execve("/bin/gitops-lint", ["gitops-lint"], 0x7ff /* 3 vars */) = 0
10 openat(AT_FDCWD</w/repo>, "../outside/app.yaml", O_RDONLY|O_CLOEXEC) = 3</w/outside/app.yaml>
11 openat(4</w/repo/apps>, "x.yaml", O_WRONLY|O_CREAT|O_TRUNC, 0666 <unfinished ...>
11 <... openat resumed>) = 5
12 renameat2(AT_FDCWD, "/w/repo/.a.tmp", AT_FDCWD, "a.yaml", 0) = 0
"#;
    let calls = parse_trace(trace, cwd);
    assert_eq!(calls.len(), 4);
    assert_eq!(calls[1].paths, [PathBuf::from("/w/outside/app.yaml")]);
    assert_eq!(calls[2].paths, [PathBuf::from("/w/repo/apps/x.yaml")]);
    assert_eq!(
        calls[3].paths,
        [
            PathBuf::from("/w/repo/.a.tmp"),
            PathBuf::from("/w/repo/a.yaml")
        ]
    );
}

/// A pull request that plants links at the report's name, at every temporary name earlier
/// versions used for the next few thousand process ids, and at a directory the report is to go
/// into, gets none of them followed: the file outside the checkout is untouched.
#[test]
fn output_never_follows_a_planted_link() {
    let work = tempfile::tempdir().unwrap();
    let repo = work.path().join("repo");
    let outside = work.path().join("home/.ssh");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    copy_tree(&common::root().join("fixtures/example-repo"), &repo);
    let keys = outside.join("authorized_keys");
    std::fs::write(&keys, "ssh-ed25519 AAAA owner\n").unwrap();
    let me = std::process::id();
    for name in ["gitops-lint.sarif", "baseline.yaml"] {
        std::os::unix::fs::symlink(&keys, repo.join(name)).unwrap();
        for pid in me..me + 3000 {
            let planted = repo.join(format!(".{name}.gitops-lint-{pid}"));
            std::os::unix::fs::symlink(&keys, planted).unwrap();
        }
    }
    std::os::unix::fs::symlink(&outside, repo.join("reports")).unwrap();
    let run = |args: &[&str]| common::run_in(&repo, args, LIMIT);

    let out = run(&["--format", "sarif", "--output", "gitops-lint.sarif", "."]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let report = std::fs::read_to_string(repo.join("gitops-lint.sarif")).unwrap();
    assert!(report.contains("\"runs\""), "{report}");
    let out = run(&["--write-baseline", "baseline.yaml", "."]);
    assert!(out.code <= 1, "{}", out.stderr);
    for name in ["gitops-lint.sarif", "baseline.yaml"] {
        let meta = std::fs::symlink_metadata(repo.join(name)).unwrap();
        assert!(meta.file_type().is_file(), "{name} is still a link");
    }
    // Through a linked directory: refused, nothing written there.
    let out = run(&[
        "--format",
        "sarif",
        "--output",
        "reports/gitops-lint.sarif",
        ".",
    ]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("symbolic link"), "{}", out.stderr);

    assert_eq!(
        std::fs::read_to_string(&keys).unwrap(),
        "ssh-ed25519 AAAA owner\n"
    );
    let names: Vec<_> = std::fs::read_dir(&outside)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["authorized_keys"]);
}
