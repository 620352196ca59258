//! Hostile and broken input: every case ends quickly with a diagnostic, and the good file next
//! to it is still linted.
#![allow(clippy::unwrap_used)] // a test stops at the first thing that is not as expected
#![allow(unsafe_code)] // device files and the effective uid come from libc

mod common;

use common::{json, run_command, run_in, Run};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Generous bounds that a hang or a blow-up breaks and a slow, busy CI machine does not: the
/// cases below take milliseconds to a few seconds and tens of megabytes.
const LIMIT: Duration = Duration::from_secs(20);
/// For runs that spend the whole ApplicationSet budget on purpose: a debug build on one
/// thread takes about 10 s per ApplicationSet that spends its own budget, and about 50 s for
/// one that spends the run's; the limit only tells a hang from a slow, busy machine.
const BUDGET_LIMIT: Duration = Duration::from_secs(180);
const MAX_RSS_KIB: u64 = 1024 * 1024;

/// A file with one known finding, to prove the run went on.
const GOOD: &str = "apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: good, namespace: argocd}
spec:
  project: default
  source: {repoURL: 'https://example.com/r.git', path: a, targetRevision: HEAD}
  destination: {server: 'https://kubernetes.default.svc', namespace: a}
";

fn lint_dir(setup: impl FnOnce(&Path)) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("good.yaml"), GOOD).unwrap();
    setup(dir.path());
    lint_at(dir.path())
}

fn lint_at(dir: &Path) -> serde_json::Value {
    let run = run_in(dir, &["--format", "json", "--fail-on", "never", "."], LIMIT);
    checked(&run)
}

/// The report of a run that ended normally, within the memory bound, with the good file linted.
fn checked(run: &Run) -> serde_json::Value {
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    assert!(
        run.max_rss_kib < MAX_RSS_KIB,
        "peak memory {} KiB",
        run.max_rss_kib
    );
    let report = json(run);
    let good = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["rule"] == "default-project" && f["file"] == "good.yaml");
    assert!(good, "the good file was not linted: {report:#}");
    report
}

fn rules_in(report: &serde_json::Value, file: &str) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["file"] == file)
        .map(|f| f["rule"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn billion_laughs_is_refused_quickly() {
    let mut bomb = String::from(
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    for (i, c) in ('b'..='j').enumerate() {
        let prev = (b'a' + i as u8) as char;
        bomb.push_str(&format!(
            "{c}: &{c} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"
        ));
    }
    let report = lint_dir(|d| std::fs::write(d.join("bomb.yaml"), &bomb).unwrap());
    assert_eq!(rules_in(&report, "bomb.yaml"), ["invalid-yaml"]);
}

#[test]
fn quadratic_aliases_are_bounded() {
    // Each line refers to the previous one twice: linear text, exponential tree.
    let mut text = String::from("l0: &l0 [x]\n");
    for i in 1..60 {
        text.push_str(&format!("l{i}: &l{i} [*l{}, *l{}]\n", i - 1, i - 1));
    }
    let report = lint_dir(|d| std::fs::write(d.join("aliases.yaml"), &text).unwrap());
    assert_eq!(rules_in(&report, "aliases.yaml"), ["invalid-yaml"]);
}

#[test]
fn deep_nesting_is_refused() {
    let text = "[".repeat(10_000) + &"]".repeat(10_000);
    let block: String = (0..1_000)
        .map(|i| format!("{}k:\n", " ".repeat(i)))
        .collect();
    let report = lint_dir(|d| {
        std::fs::write(d.join("flow.yaml"), &text).unwrap();
        std::fs::write(d.join("block.yaml"), &block).unwrap();
    });
    assert_eq!(rules_in(&report, "flow.yaml"), ["invalid-yaml"]);
    assert_eq!(rules_in(&report, "block.yaml"), ["invalid-yaml"]);
}

#[test]
fn encodings_and_binary_files_are_reported() {
    let report = lint_dir(|d| {
        let utf16: Vec<u8> = [0xFF, 0xFE]
            .into_iter()
            .chain("a: b\n".encode_utf16().flat_map(|u| u.to_le_bytes()))
            .collect();
        std::fs::write(d.join("utf16.yaml"), utf16).unwrap();
        std::fs::write(d.join("latin1.yaml"), b"name: caf\xe9\n").unwrap();
        std::fs::write(d.join("binary.yaml"), b"\x7fELF\x00\x00\x01").unwrap();
        std::fs::write(d.join("bom-crlf.yaml"), "\u{feff}a: b\r\nc: d\r\n").unwrap();
    });
    for file in ["latin1.yaml", "binary.yaml"] {
        assert_eq!(rules_in(&report, file), ["invalid-yaml"], "{file}");
    }
    // Argo CD follows a byte-order mark: a UTF-16 file is YAML like any other.
    assert!(rules_in(&report, "utf16.yaml").is_empty());
    assert!(rules_in(&report, "bom-crlf.yaml").is_empty());
}

#[test]
fn oversized_files_are_skipped_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("good.yaml"), GOOD).unwrap();
    std::fs::write(dir.path().join("big.yaml"), "a: b\n".repeat(1000)).unwrap();
    let run = run_in(
        dir.path(),
        &["--format", "json", "--max-file-size", "1000", "."],
        LIMIT,
    );
    let report = json(&run);
    let skipped = &report["summary"]["files_skipped"];
    assert_eq!(skipped[0]["path"], "big.yaml");
    assert_eq!(skipped[0]["reason"], "too-large");
    assert_eq!(report["summary"]["files_scanned"], 1);
    // What was not read was not checked: a change could grow a file past the limit to keep it
    // from the rules, so the run fails, unless it never fails.
    assert_eq!(run.code, 1, "{}", run.stderr);
    let run = run_in(
        dir.path(),
        &["--max-file-size", "1000", "--fail-on", "never", "."],
        LIMIT,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[cfg(unix)]
#[test]
fn symlink_loops_and_fifos_do_not_hang() {
    let report = lint_dir(|d| {
        std::fs::create_dir(d.join("loop")).unwrap();
        std::os::unix::fs::symlink("..", d.join("loop/up")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", d.join("escape.yaml")).unwrap();
        let fifo = d.join("pipe.yaml");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo failed");
    });
    assert!(rules_in(&report, "escape.yaml").is_empty());
    let skipped = report["summary"]["files_skipped"].as_array().unwrap();
    assert!(
        skipped.iter().any(|s| s["path"] == "pipe.yaml"),
        "{skipped:?}"
    );
}

#[test]
fn helm_templates_are_skipped_not_reported() {
    let report = lint_dir(|d| {
        std::fs::create_dir_all(d.join("chart/templates")).unwrap();
        std::fs::write(
            d.join("chart/Chart.yaml"),
            "apiVersion: v2\nname: c\nversion: 0.1.0\n",
        )
        .unwrap();
        std::fs::write(
            d.join("chart/templates/dep.yaml"),
            "{{- if .Values.x }}\na: b\n{{- end }}\n",
        )
        .unwrap();
        std::fs::write(
            d.join("loose-template.yaml"),
            "kind: {{ .Kind }}\n  bad: [\n",
        )
        .unwrap();
    });
    let skipped = report["summary"]["files_skipped"].as_array().unwrap();
    let reasons: Vec<_> = skipped
        .iter()
        .map(|s| (s["path"].as_str().unwrap(), s["reason"].as_str().unwrap()))
        .collect();
    assert!(
        reasons.contains(&("chart/templates/dep.yaml", "helm-template")),
        "{reasons:?}"
    );
    assert!(
        reasons.contains(&("loose-template.yaml", "template")),
        "{reasons:?}"
    );
    assert!(rules_in(&report, "loose-template.yaml").is_empty());
}

#[test]
fn a_broken_document_does_not_hide_the_next_one() {
    let report = lint_dir(|d| {
        let text = format!("a: [1\n---\n{GOOD}");
        std::fs::write(d.join("multi.yaml"), text).unwrap();
    });
    assert_eq!(
        rules_in(&report, "multi.yaml"),
        ["invalid-yaml", "default-project"]
    );
}

fn messages(report: &serde_json::Value, rule: &str) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == rule)
        .map(|f| {
            format!(
                "{}:{} {}",
                f["file"].as_str().unwrap(),
                f["start"]["line"],
                f["message"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn kustomizations_that_loop_or_leave_the_repository_are_refused() {
    let report = lint_dir(|d| {
        for (dir, next) in [("a", "../b"), ("b", "../c"), ("c", "../a")] {
            std::fs::create_dir(d.join(dir)).unwrap();
            std::fs::write(
                d.join(dir).join("kustomization.yaml"),
                format!("resources:\n  - {next}\n"),
            )
            .unwrap();
        }
        std::fs::create_dir(d.join("out")).unwrap();
        std::os::unix::fs::symlink("/etc", d.join("out/etc")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", d.join("out/passwd.yaml")).unwrap();
        std::fs::write(
            d.join("out/kustomization.yaml"),
            "resources:\n  - etc\n  - ../../../../../../etc/passwd\n  - /etc/hosts\n  - passwd.yaml\n  - etc/hosts\n",
        )
        .unwrap();
    });
    let found = messages(&report, "kustomize-error");
    let has = |file: &str, needle: &str| {
        found
            .iter()
            .any(|m| m.starts_with(file) && m.contains(needle))
    };
    assert!(has("c/kustomization.yaml", "cycle"), "{found:#?}");
    assert!(
        has("out/kustomization.yaml:2", "symbolic link"),
        "{found:#?}"
    );
    assert!(
        has("out/kustomization.yaml:3", "outside the repository"),
        "{found:#?}"
    );
    assert!(
        has("out/kustomization.yaml:4", "absolute path"),
        "{found:#?}"
    );
    // Links are followed only while they stay inside: a file link and a path through a
    // directory link that leave the repository are refused like the link itself.
    for line in [5, 6] {
        assert!(
            has(
                &format!("out/kustomization.yaml:{line}"),
                "symbolic link (or goes through one) that leads outside the repository"
            ),
            "{found:#?}"
        );
    }
}

/// `(path, reason code)` of every skipped file.
fn skipped(report: &serde_json::Value) -> Vec<(String, String)> {
    report["summary"]["files_skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let text = |v: &serde_json::Value| v.as_str().unwrap().to_string();
            (text(&s["path"]), text(&s["reason"]))
        })
        .collect()
}

fn skipped_as(report: &serde_json::Value, path: &str) -> Option<String> {
    skipped(report)
        .into_iter()
        .find(|(p, _)| p == path)
        .map(|(_, r)| r)
}

#[test]
fn many_alias_bombs_in_one_file_hit_the_file_budget() {
    // Each document stays inside its own alias budget; together they would build tens of
    // millions of nodes.
    let mut doc = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
    for (name, prev) in [("b", "a"), ("c", "b"), ("d", "c")] {
        doc.push_str(&format!(
            "{name}: &{name} [{}]\n",
            vec![format!("*{prev}"); 10].join(", ")
        ));
    }
    doc.push_str(&format!("e: [{}]\n", ["*d"].repeat(6).join(", ")));
    let text = vec![doc; 200].join("---\n");
    let report = lint_dir(|d| std::fs::write(d.join("bombs.yaml"), &text).unwrap());
    assert_eq!(rules_in(&report, "bombs.yaml"), ["invalid-yaml"]);
    let budget = gitops_lint::yaml::FILE_NODES;
    let found = messages(&report, "invalid-yaml");
    assert!(
        found[0].starts_with("bombs.yaml:")
            && found[0].contains(&format!("per-file budget of {budget} nodes")),
        "{found:?}"
    );
}

#[test]
fn merging_a_large_mapping_into_another_is_not_quadratic() {
    let keys = |prefix: &str, n: usize| -> String {
        (0..n).map(|i| format!("{prefix}{i}: 0\n")).collect()
    };
    let indent = |text: String| -> String { text.lines().map(|l| format!("  {l}\n")).collect() };
    // 24,000 merged keys against 100,000 own ones: their product is billions of comparisons.
    let text = format!(
        "base: &base\n{}own:\n  <<: *base\n{}",
        indent(keys("m", 24_000)),
        indent(keys("k", 100_000))
    );
    let report = lint_dir(|d| std::fs::write(d.join("merge.yaml"), &text).unwrap());
    assert!(rules_in(&report, "merge.yaml").is_empty());
}

#[test]
fn a_sparse_gigabyte_and_a_200_mb_line_are_skipped_unread() {
    let report = lint_dir(|d| {
        let sparse = std::fs::File::create(d.join("sparse.yaml")).unwrap();
        sparse.set_len(1 << 30).unwrap();
        let mut line = std::io::BufWriter::new(std::fs::File::create(d.join("line.yaml")).unwrap());
        std::io::Write::write_all(&mut line, b"a: ").unwrap();
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..200 {
            std::io::Write::write_all(&mut line, &chunk).unwrap();
        }
        std::io::Write::flush(&mut line).unwrap();
    });
    // The memory bound in `checked` would not hold had either been read.
    assert_eq!(
        skipped_as(&report, "sparse.yaml").as_deref(),
        Some("too-large")
    );
    assert_eq!(
        skipped_as(&report, "line.yaml").as_deref(),
        Some("too-large")
    );
    assert_eq!(report["summary"]["files_scanned"], 1);
}

#[test]
fn a_long_line_under_the_size_limit_is_linted() {
    // One line of 1.4 MB holding 5,000 objects with a finding each: positions are found
    // without rescanning the line for each one (which took minutes).
    let items: Vec<String> = (0..5_000)
        .map(|i| {
            format!(
                "{{apiVersion: argoproj.io/v1alpha1, kind: Application, metadata: {{name: g{i}, namespace: argocd}}, \
                 spec: {{project: default, source: {{repoURL: 'https://example.com/r.git', path: a, targetRevision: HEAD}}, \
                 destination: {{server: 'https://kubernetes.default.svc', namespace: a}}}}}}"
            )
        })
        .collect();
    let text = format!(
        "{{apiVersion: v1, kind: List, items: [{}]}}",
        items.join(", ")
    );
    let report = lint_dir(|d| std::fs::write(d.join("long.yaml"), &text).unwrap());
    let found = rules_in(&report, "long.yaml");
    assert_eq!(found, vec!["default-project"; 5_000]);
}

#[test]
fn messages_name_the_encoding_problem() {
    let report = lint_dir(|d| {
        let utf16: Vec<u8> = [0xFE, 0xFF]
            .into_iter()
            .chain("a: b\na: é\n".encode_utf16().flat_map(|u| u.to_be_bytes()))
            .collect();
        std::fs::write(d.join("utf16be.yaml"), utf16).unwrap();
        std::fs::write(d.join("bad.yaml"), b"a: b\nc: \xff\xfe\n").unwrap();
        std::fs::write(d.join("nul.yaml"), b"a: b\x00\n").unwrap();
    });
    let found = messages(&report, "invalid-yaml");
    for want in [
        "bad.yaml:2 invalid UTF-8 at byte 8",
        "nul.yaml:1 the file contains NUL bytes",
    ] {
        assert!(
            found.iter().any(|m| m.starts_with(want)),
            "{want}: {found:#?}"
        );
    }
    // A UTF-16 file is read, and its findings are at their lines.
    assert_eq!(
        messages(&report, "duplicate-key")
            .iter()
            .map(|m| m.split(' ').next().unwrap())
            .collect::<Vec<_>>(),
        ["utf16be.yaml:2"]
    );
}

#[cfg(unix)]
#[test]
fn device_files_and_links_to_them_are_not_read() {
    use std::os::unix::ffi::OsStrExt;
    let mut made_device = false;
    let report = lint_dir(|d| {
        std::os::unix::fs::symlink("/dev/zero", d.join("zero-link.yaml")).unwrap();
        // /dev/zero's own numbers: an endless file. Only root may make one.
        let path = std::ffi::CString::new(d.join("zero.yaml").as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid C string and plain integer arguments.
        let made =
            unsafe { libc::mknod(path.as_ptr(), libc::S_IFCHR | 0o644, libc::makedev(1, 5)) };
        made_device = made == 0;
    });
    assert!(rules_in(&report, "zero-link.yaml").is_empty());
    assert_eq!(skipped_as(&report, "zero-link.yaml"), None);
    if made_device {
        assert_eq!(
            skipped_as(&report, "zero.yaml").as_deref(),
            Some("not-a-file")
        );
    } else {
        eprintln!("not root: no device file made, only the link to one checked");
    }
    assert_eq!(report["summary"]["files_scanned"], 1);
}

#[cfg(unix)]
#[test]
fn unreadable_files_and_directories_are_reported() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("good.yaml"), GOOD).unwrap();
    std::fs::write(d.join("locked.yaml"), "a: b\n").unwrap();
    std::fs::create_dir(d.join("closed")).unwrap();
    std::fs::write(d.join("closed/inner.yaml"), "a: b\n").unwrap();
    let mode = |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m));
    mode(d, 0o755).unwrap();
    mode(&d.join("good.yaml"), 0o644).unwrap();
    mode(&d.join("locked.yaml"), 0o000).unwrap();
    mode(&d.join("closed"), 0o000).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gitops-lint"));
    cmd.args(["--format", "json", "--fail-on", "never", "."])
        .current_dir(d)
        .env("NO_COLOR", "1");
    // Root reads everything: the run drops to an unprivileged user to meet a permission error.
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        use std::os::unix::process::CommandExt;
        cmd.uid(65534).gid(65534);
    }
    let run = run_command(cmd, "gitops-lint on unreadable files", LIMIT);
    mode(&d.join("closed"), 0o755).unwrap();
    let report = checked(&run);
    let reasons = report["summary"]["files_skipped"].as_array().unwrap();
    for path in ["locked.yaml", "closed"] {
        let entry = reasons.iter().find(|s| s["path"] == path);
        let entry = entry.unwrap_or_else(|| panic!("{path} not reported: {reasons:#?}"));
        assert_eq!(entry["reason"], "unreadable");
        assert!(
            entry["detail"]
                .as_str()
                .is_some_and(|m| m.contains("Permission denied")),
            "{entry}"
        );
    }
}

#[cfg(unix)]
#[test]
fn links_that_loop_or_leave_the_repository_are_not_followed() {
    let report = lint_dir(|d| {
        std::os::unix::fs::symlink("b.yaml", d.join("a.yaml")).unwrap();
        std::os::unix::fs::symlink("a.yaml", d.join("b.yaml")).unwrap();
        std::os::unix::fs::symlink("self.yaml", d.join("self.yaml")).unwrap();
        std::os::unix::fs::symlink("/", d.join("root")).unwrap();
        std::fs::create_dir(d.join("deep")).unwrap();
        std::os::unix::fs::symlink("../deep", d.join("deep/again")).unwrap();
    });
    assert_eq!(report["summary"]["files_scanned"], 1);
    let files: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["file"].as_str())
        .collect();
    assert!(files.iter().all(|f| *f == "good.yaml"), "{files:?}");
}

#[test]
fn a_patch_over_ten_thousand_objects_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("good.yaml"), GOOD).unwrap();
    {
        let objects: String = (0..10_000)
            .map(|i| format!("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}}}\ndata: {{a: b}}\n"))
            .collect();
        std::fs::write(d.join("objects.yaml"), objects).unwrap();
        std::fs::write(
            d.join("kustomization.yaml"),
            "resources: [objects.yaml]\npatches:\n  - target: {kind: ConfigMap}\n    patch: |\n      - op: add\n        path: /data/c\n        value: d\n",
        )
        .unwrap();
    }
    let report = lint_at(d);
    assert_eq!(report["summary"]["objects_by_kind"]["ConfigMap"], 10_000);
    // What the kustomization builds: every object patched.
    let run = run_in(dir.path(), &["render", "."], LIMIT);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let built = json(&run);
    let patched = built
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["data"]["c"] == "d")
        .count();
    assert_eq!(patched, 10_000);
}

#[test]
fn a_hundred_thousand_tiny_files_are_all_linted() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("good.yaml"), GOOD).unwrap();
    {
        let many = d.join("many");
        std::fs::create_dir(&many).unwrap();
        for i in 0..100_000 {
            std::fs::write(many.join(format!("f{i}.yaml")), "a: 1\n").unwrap();
        }
    }
    // A debug build on a busy 2-core machine needs 8-12 s for this run; the common limit is
    // meant for single files.
    let run = run_in(
        d,
        &["--format", "json", "--fail-on", "never", "."],
        3 * LIMIT,
    );
    let report = checked(&run);
    assert_eq!(report["summary"]["files_scanned"], 100_001);
}

#[test]
fn a_glob_with_many_stars_is_matched_quickly() {
    let pattern = "*a".repeat(30) + "x";
    let app = GOOD.replace(
        "  project: default\n",
        &format!("  project: default\n  ignoreDifferences:\n    - {{group: '{pattern}', kind: VirtualService}}\n"),
    );
    let report = lint_dir(|d| std::fs::write(d.join("globs.yaml"), app).unwrap());
    assert!(
        rules_in(&report, "globs.yaml").contains(&"ignore-differences-never-matches".to_string()),
        "{report:#}"
    );
}

#[test]
fn the_readme_states_the_limits_the_code_applies() {
    use gitops_lint::{discover, yaml};
    let readme = std::fs::read_to_string(common::root().join("README.md")).unwrap();
    let value = |label: &str| -> u64 {
        let row = readme
            .lines()
            .find(|l| l.starts_with(&format!("| {label} |")))
            .unwrap_or_else(|| panic!("no README row `{label}`"));
        let code = row.split('`').nth(1).unwrap();
        code.parse()
            .unwrap_or_else(|e| panic!("`{code}` in `{label}`: {e}"))
    };
    assert_eq!(value("Size of one file"), discover::DEFAULT_MAX_FILE_SIZE);
    assert_eq!(value("Files in one run"), discover::MAX_FILES as u64);
    assert_eq!(
        value("Bytes in one run, all files together"),
        discover::MAX_TOTAL_BYTES
    );
    assert_eq!(value("Nesting of collections"), yaml::MAX_DEPTH as u64);
    assert_eq!(
        value("Nodes copied by anchors and aliases, per document"),
        yaml::ALIAS_NODES as u64
    );
    assert_eq!(
        value("Nodes per file, aliases expanded (the per-file work budget)"),
        yaml::FILE_NODES as u64
    );
    assert_eq!(
        value("Nodes in one run, all files together (the run's work budget)"),
        yaml::RUN_NODES as u64
    );
    assert_eq!(
        value("Nesting of kustomizations (resources, bases, components)"),
        gitops_lint::render::MAX_NESTING as u64
    );
    assert_eq!(
        value(
            "Steps to expand one ApplicationSet (generators, every templated field of every parameter set, templatePatch)"
        ),
        gitops_lint::render::budget::UNIT_STEPS
    );
    assert_eq!(
        value("Steps to expand all ApplicationSets of a run together"),
        gitops_lint::render::budget::RUN_STEPS
    );
}

#[test]
fn past_the_run_ceiling_the_rest_is_skipped_in_path_order() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a.yaml", "b.yaml", "c.yaml", "d.yaml"] {
        std::fs::write(dir.path().join(name), "a: 1\n").unwrap();
    }
    let discover = |max_files, max_total_bytes| {
        let opts = gitops_lint::discover::Options {
            max_files,
            max_total_bytes,
            ..Default::default()
        };
        let found = gitops_lint::discover::discover(&[dir.path().to_path_buf()], &opts).unwrap();
        let name = |p: &Path| p.file_name().unwrap().to_str().unwrap().to_string();
        let kept: Vec<String> = found.files.iter().map(|p| name(p)).collect();
        let left: Vec<String> = found
            .skipped
            .iter()
            .map(|(p, r)| format!("{} {}", name(p), r.code()))
            .collect();
        (kept, left)
    };
    for _ in 0..3 {
        assert_eq!(
            discover(2, u64::MAX),
            (
                vec!["a.yaml".into(), "b.yaml".into()],
                vec!["c.yaml run-limit".into(), "d.yaml run-limit".into()]
            )
        );
    }
    let (kept, left) = discover(usize::MAX, 15);
    assert_eq!(kept, ["a.yaml", "b.yaml", "c.yaml"]);
    assert_eq!(left, ["d.yaml run-limit"]);
}

/// A chain of kustomizations far deeper than the nesting cap: the walk stops at the cap with an
/// error at the entry that passes it, on the default thread stack, in every mode.
#[test]
fn a_deep_chain_of_kustomizations_stops_at_the_cap() {
    // Ten times the cap: without it, a debug build overflows its stack well before the end.
    let depth = gitops_lint::render::MAX_NESTING * 10;
    let report = lint_dir(|d| {
        for i in 0..depth {
            let dir = d.join(format!("k{i}"));
            std::fs::create_dir(&dir).unwrap();
            let next = if i + 1 < depth {
                format!("../k{}", i + 1)
            } else {
                "cm.yaml".into()
            };
            std::fs::write(
                dir.join("kustomization.yaml"),
                format!("resources:\n- {next}\n"),
            )
            .unwrap();
        }
        std::fs::write(
            d.join(format!("k{}/cm.yaml", depth - 1)),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
        )
        .unwrap();
    });
    let found = messages(&report, "kustomize-error");
    let cap = gitops_lint::render::MAX_NESTING;
    let first = format!("k{}/kustomization.yaml:2 ", cap - 1);
    assert!(
        found
            .iter()
            .any(|m| m.starts_with(&first) && m.contains(&format!("more than {cap} levels"))),
        "{found:#?}"
    );
    // The same in the partial modes, which walk the chain from a changed file.
    let dir = tempfile::tempdir().unwrap();
    for i in 0..depth {
        let d = dir.path().join(format!("k{i}"));
        std::fs::create_dir(&d).unwrap();
        std::fs::write(
            d.join("kustomization.yaml"),
            format!("resources:\n- ../k{}\n", (i + 1).min(depth - 1)),
        )
        .unwrap();
    }
    let run = run_in(
        dir.path(),
        &[
            "--context",
            "--format",
            "json",
            "--fail-on",
            "never",
            "k0/kustomization.yaml",
        ],
        LIMIT,
    );
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let run = run_in(dir.path(), &["graph", "."], LIMIT);
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
}

/// A chain of Applications, each deploying the directory of the next: the tree `graph` prints
/// stops at its depth cap instead of recursing (and indenting) once per link.
#[test]
fn a_deep_chain_of_applications_is_shown_to_a_bounded_depth() {
    let dir = tempfile::tempdir().unwrap();
    let depth = 2_000;
    for i in 0..depth {
        let d = dir.path().join(format!("apps/a{i}"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("app.yaml"),
            format!(
                "apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {{name: a{next}, namespace: argocd}}
spec:
  project: default
  source: {{repoURL: 'https://example.com/r.git', path: apps/a{next}, targetRevision: HEAD}}
  destination: {{server: 'https://kubernetes.default.svc', namespace: a}}
",
                next = i + 1
            ),
        )
        .unwrap();
    }
    let run = run_in(
        dir.path(),
        &["graph", "--repo-url", "https://example.com/r.git", "."],
        LIMIT,
    );
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    assert!(run.stdout.contains("levels, not shown"), "{}", run.stdout);
    assert!(run.stdout.len() < 100_000, "{} bytes", run.stdout.len());
}

/// Every file is within the per-file budget, but together they pass the run's: the files past
/// it in path order are skipped, the same ones whatever the number of threads.
#[test]
fn past_the_run_node_budget_the_rest_is_skipped_in_path_order() {
    use gitops_lint::{engine, yaml::ParseLimits};
    let dir = tempfile::tempdir().unwrap();
    // A mapping, its key, a list and 1,000 items.
    let text = format!("a: [{}]\n", vec!["1"; 1000].join(","));
    for name in ["a", "b", "c", "d", "e", "f", "g", "h"] {
        std::fs::write(dir.path().join(format!("{name}.yaml")), &text).unwrap();
    }
    let limits = ParseLimits {
        run_nodes: 3 * 1003 + 100,
        ..ParseLimits::default()
    };
    let opts = engine::Options {
        limits,
        ..engine::Options::new(vec![dir.path().to_path_buf()])
    };
    let skipped = |threads: usize, opts: &engine::Options| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let loaded = pool.install(|| engine::load(opts)).unwrap();
        let names: Vec<String> = loaded
            .summary
            .skipped
            .iter()
            .map(|(p, r)| format!("{} {}", p.file_name().unwrap().to_str().unwrap(), r.code()))
            .collect();
        (loaded.summary.files_scanned, loaded.summary.nodes, names)
    };
    let want = (
        3,
        3 * 1003,
        ["d", "e", "f", "g", "h"]
            .map(|n| format!("{n}.yaml run-limit"))
            .to_vec(),
    );
    for threads in [1, 2, 4, 8] {
        for _ in 0..5 {
            assert_eq!(skipped(threads, &opts), want, "{threads} threads");
        }
    }
    // A `--context` run keeps to the same budget.
    let context = engine::Options {
        report_only: Some(vec![dir.path().join("a.yaml")]),
        ..opts.clone()
    };
    let (_, nodes, _) = skipped(2, &context);
    assert!(nodes <= limits.run_nodes, "{nodes}");
}

/// An ApplicationSet of about 16 KB that multiplies: a 32×32 matrix of lists (1024 parameter
/// sets) and 100 annotations that each loop over a heavy function.
fn costly_appset(name: &str) -> String {
    let elements = |key: &str| -> String {
        (0..32)
            .map(|i| format!("              - {key}: v{i:02}\n"))
            .collect()
    };
    let annotations: String = (0..100)
        .map(|i| {
            format!(
                "        a{i:03}: '{{{{ range splitList \",\" (repeat 9999 \"a,\") }}}}{{{{ sha256sum (print (repeat 40 $.x) $.y) | trunc 4 | upper }}}}{{{{ end }}}}'\n"
            )
        })
        .collect();
    format!(
        "apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {{name: {name}, namespace: argocd}}
spec:
  goTemplate: true
  generators:
    - matrix:
        generators:
          - list:
              elements:
{}          - list:
              elements:
{}  template:
    metadata:
      name: '{name}-{{{{ .x }}}}-{{{{ .y }}}}'
      annotations:
{annotations}    spec:
      project: default
      source: {{repoURL: 'https://example.com/r.git', path: a, targetRevision: HEAD}}
      destination: {{server: 'https://kubernetes.default.svc', namespace: a}}
",
        elements("x"),
        elements("y")
    )
}

fn lint_costly(dir: &Path) -> serde_json::Value {
    let args = ["--format", "json", "--fail-on", "never", "."];
    checked(&run_in(dir, &args, BUDGET_LIMIT))
}

fn template_findings(report: &serde_json::Value) -> Vec<(String, u64, String)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "appset-template-error")
        .map(|f| {
            (
                f["file"].as_str().unwrap().to_string(),
                f["start"]["line"].as_u64().unwrap(),
                f["message"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_costly_applicationset_stops_at_its_budget_with_one_finding() {
    let text = costly_appset("costly");
    assert!(
        (14_000..18_000).contains(&text.len()),
        "{} bytes",
        text.len()
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("good.yaml"), GOOD).unwrap();
    std::fs::write(dir.path().join("appset.yaml"), &text).unwrap();
    let report = lint_costly(dir.path());
    let found = template_findings(&report);
    assert_eq!(found.len(), 1, "{found:#?}");
    let (file, line, message) = &found[0];
    assert_eq!(file, "appset.yaml");
    // An annotation of some parameter set: where the work was when it ran out.
    assert!((81..181).contains(line), "{line}: {message}");
    assert!(message.contains("more than 10000000 steps"), "{message}");
    // What it generates past its budget was not checked: the run fails even where the finding
    // is hidden, as past the run's other ceilings.
    let run = run_in(
        dir.path(),
        &[
            "--format",
            "json",
            "--ignore",
            "appset-template-error,default-project",
            ".",
        ],
        BUDGET_LIMIT,
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("1 ApplicationSet not expanded whole"),
        "{}",
        run.stderr
    );
}

#[test]
fn costly_applicationsets_together_stop_at_the_run_budget() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("good.yaml"), GOOD).unwrap();
    for i in 0..6 {
        let name = format!("costly{i}");
        std::fs::write(
            dir.path().join(format!("{name}.yaml")),
            costly_appset(&name),
        )
        .unwrap();
    }
    let report = lint_costly(dir.path());
    let found = template_findings(&report);
    assert_eq!(found.len(), 6, "{found:#?}");
    // The run's 40 million steps are four ApplicationSets' 10 million: the rest find the
    // run's budget spent, in file order.
    for (i, (file, _, message)) in found.iter().enumerate() {
        assert_eq!(file, &format!("costly{i}.yaml"));
        let run_spent = message.contains("spent the run's budget");
        assert_eq!(run_spent, i >= 4, "{i}: {message}");
    }
}

#[test]
fn template_errors_are_reported_at_their_line_whatever_the_threads() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("good.yaml"), GOOD).unwrap();
    std::fs::write(
        dir.path().join("appset.yaml"),
        "apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: errors, namespace: argocd}
spec:
  goTemplate: true
  goTemplateOptions: [missingkey=error]
  generators:
    - list:
        elements: [{env: a}, {env: b, region: r}, {env: c}]
  template:
    metadata:
      name: 'errors-{{ .env }}'
      annotations:
        region: '{{ .region }}'
        owner: '{{ nope .env }}'
        tier: '{{ genPrivateKey .env }}'
    spec:
      project: default
      source: {repoURL: 'https://example.com/r.git', path: a, targetRevision: HEAD}
      destination: {server: 'https://kubernetes.default.svc', namespace: a}
",
    )
    .unwrap();
    // Past the run's budget too: which ApplicationSets it stops must not depend on threads.
    for i in 0..5 {
        std::fs::write(
            dir.path().join(format!("costly{i}.yaml")),
            costly_appset(&format!("costly{i}")),
        )
        .unwrap();
    }
    let concise = |threads: &str| {
        let run = run_in(
            dir.path(),
            &[
                "--format",
                "concise",
                "--fail-on",
                "never",
                "--threads",
                threads,
                ".",
            ],
            BUDGET_LIMIT,
        );
        assert_eq!(run.code, 0, "stderr: {}", run.stderr);
        run.stdout
    };
    let one = concise("1");
    assert_eq!(one, concise("2"));
    assert_eq!(one.matches("spent the run's budget").count(), 2, "{one}");
    let lines: Vec<&str> = one
        .lines()
        .filter(|l| l.starts_with("appset.yaml:") && l.contains("appset-template-error"))
        .collect();
    assert_eq!(lines.len(), 2, "{one}");
    assert!(lines[0].starts_with("appset.yaml:14:"), "{}", lines[0]);
    assert!(
        lines[0].contains("2 of 3 parameter sets") && lines[0].contains("no entry for key"),
        "{}",
        lines[0]
    );
    assert!(lines[1].starts_with("appset.yaml:15:"), "{}", lines[1]);
    assert!(
        lines[1].contains("function \"nope\" not defined"),
        "{}",
        lines[1]
    );
    assert!(
        !one.contains("appset.yaml:16:"),
        "a gap of the linter is a note: {one}"
    );
    for i in 0..5 {
        std::fs::remove_file(dir.path().join(format!("costly{i}.yaml"))).unwrap();
    }
    let human = run_in(dir.path(), &["--verbose", "--fail-on", "never", "."], LIMIT);
    assert!(
        human.stdout.contains("note: appset.yaml:16:")
            && human
                .stdout
                .contains("function \"genPrivateKey\" is not supported offline"),
        "the note is missing: {}",
        human.stdout
    );
}

/// One ustar header for a regular file of `size` bytes named `name`, written as given.
fn tar_header(name: &str, size: u64) -> [u8; 512] {
    let mut h = [0u8; 512];
    h[..name.len()].copy_from_slice(name.as_bytes());
    h[100..107].copy_from_slice(b"0000644");
    h[108..115].copy_from_slice(b"0000000");
    h[116..123].copy_from_slice(b"0000000");
    h[124..135].copy_from_slice(format!("{size:011o}").as_bytes());
    h[136..147].copy_from_slice(b"00000000000");
    h[156] = b'0';
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|b| u32::from(*b)).sum();
    h[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
    h
}

/// A chart archive in `charts/` that names a file above its folder, or unpacks to far more than
/// a chart may hold: the chart is not rendered, with helm's reason (a `helm-error`, as Helm
/// refuses it too) or the bound it passed (`helm-render-limit`), nothing is written, and the run
/// goes on.
#[test]
fn hostile_chart_archives_are_refused() {
    use std::io::Write;
    let chart_app = "apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, namespace: argocd}
spec:
  project: web
  source: {repoURL: 'https://example.com/r.git', path: chart, targetRevision: HEAD}
  destination: {server: 'https://kubernetes.default.svc', namespace: web}
";
    let cases: [(&str, &str, &str); 2] = [
        (
            "traversal",
            "helm-error",
            "chart illegally references parent directory",
        ),
        ("bomb", "helm-render-limit", "more"),
    ];
    for (case, rule, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("good.yaml"), GOOD).unwrap();
        std::fs::write(d.join("app.yaml"), chart_app).unwrap();
        std::fs::create_dir_all(d.join("chart/charts")).unwrap();
        std::fs::write(
            d.join("chart/Chart.yaml"),
            "apiVersion: v2\nname: web\nversion: 0.1.0\n",
        )
        .unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let meta = b"name: dep\n";
        gz.write_all(&tar_header("dep/Chart.yaml", meta.len() as u64))
            .unwrap();
        gz.write_all(meta).unwrap();
        gz.write_all(&[0u8; 512 - 10]).unwrap();
        if case == "traversal" {
            gz.write_all(&tar_header("dep/../../../escaped.txt", 1))
                .unwrap();
            gz.write_all(&[b'x'; 512]).unwrap();
        } else {
            // 128 MiB of zeros: about 128 KiB once compressed.
            let size = 128u64 << 20;
            gz.write_all(&tar_header("dep/big.bin", size)).unwrap();
            let chunk = vec![0u8; 1 << 20];
            for _ in 0..128 {
                gz.write_all(&chunk).unwrap();
            }
        }
        gz.write_all(&[0u8; 1024]).unwrap();
        std::fs::write(d.join("chart/charts/dep-1.0.0.tgz"), gz.finish().unwrap()).unwrap();
        let run = run_in(
            d,
            &[
                "--format",
                "json",
                "--fail-on",
                "never",
                "--repo-url",
                "https://example.com/r.git",
                ".",
            ],
            LIMIT,
        );
        let report = checked(&run);
        let found: Vec<String> = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["rule"] == rule && f["file"] == "app.yaml")
            .map(|f| f["message"].as_str().unwrap().to_string())
            .collect();
        assert!(
            found
                .iter()
                .any(|n| n.contains("dep-1.0.0.tgz") && n.contains(expected)),
            "{case}: {report:#}"
        );
        assert!(
            !d.join("escaped.txt").exists() && !d.parent().unwrap().join("escaped.txt").exists()
        );
    }
}

/// A repository whose one Application deploys `charts/web` (a `ClusterRoleBinding` to
/// `cluster-admin`, which the repository's policy forbids) and whose kustomization renders the
/// same chart through `helmCharts`; `extra` adds files.
fn chart_repo(d: &Path, extra: &[(&str, &str)]) {
    let files: &[(&str, &str)] = &[
        (
            ".gitops-lint.yaml",
            "repo-urls: ['https://example.com/r.git']\n",
        ),
        (
            ".gitops-lint/policies/no-cluster-admin.yaml",
            "id: no-cluster-admin
severity: error
summary: No binding to cluster-admin
message: binding to cluster-admin
help: bind a narrower role
match: {kind: ClusterRoleBinding, objects: rendered}
condition: object.roleRef.name == 'cluster-admin'
",
        ),
        ("good.yaml", GOOD),
        (
            "apps/web.yaml",
            "apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, namespace: argocd}
spec:
  project: web
  source:
    repoURL: 'https://example.com/r.git'
    path: charts/web
    targetRevision: HEAD
  destination: {server: 'https://kubernetes.default.svc', namespace: web}
",
        ),
        (
            "charts/web/Chart.yaml",
            "apiVersion: v2\nname: web\nversion: 0.1.0\n",
        ),
        ("charts/web/values.yaml", "{}\n"),
        (
            "charts/web/templates/binding.yaml",
            "apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: '{{ .Release.Name }}-admin'}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: default, namespace: web}]
",
        ),
        (
            "kustomization.yaml",
            "helmCharts:\n  - name: web\n    releaseName: kweb\nhelmGlobals: {chartHome: charts}\n",
        ),
    ];
    for (path, text) in files.iter().chain(extra) {
        let p = d.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

fn lint_chart_repo(d: &Path, extra_args: &[&str], limit: Duration) -> Run {
    let mut args = vec![
        "--format",
        "json",
        "--repo-url",
        "https://example.com/r.git",
    ];
    args.extend(extra_args);
    args.push(".");
    run_in(d, &args, limit)
}

fn rules_at(report: &serde_json::Value) -> Vec<(String, String)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap().to_string(),
                format!("{}:{}", f["file"].as_str().unwrap(), f["start"]["line"]),
            )
        })
        .collect()
}

/// One line a pull request adds to a template (past a bound of the renderer, or calling what
/// is not evaluated offline) keeps the chart from being rendered. It must not keep the chart
/// from being checked: the cause is a finding at that line, an error for a bound (the run
/// fails, as the policy finding it hides would have made it), a warning a trusted config can
/// raise for a function Helm renders; never only a note. The same through `helmCharts`.
#[test]
fn one_line_does_not_hide_a_chart() {
    // The chart rendered and its binding checked.
    let checked = |found: &[(String, String)]| {
        found
            .iter()
            .any(|(r, at)| r == "no-cluster-admin" && at.starts_with("charts/web/"))
    };
    let dir = tempfile::tempdir().unwrap();
    chart_repo(dir.path(), &[]);
    let run = lint_chart_repo(dir.path(), &[], LIMIT);
    assert_eq!(run.code, 1, "stderr: {}", run.stderr);
    let found = rules_at(&json(&run));
    assert!(checked(&found), "{found:?}");

    let bounds: &[(&str, &str)] = &[
        ("value", "{{ repeat 5000000 \"x\" | quote }}"),
        (
            "recursion",
            "{{- define \"r\" }}{{ include \"r\" . }}{{ end }}{{ include \"r\" . }}",
        ),
        (
            "range",
            "{{- range until 1000 }}{{ range until 1000 }}.{{ end }}{{ end }}",
        ),
    ];
    for (case, line) in bounds {
        // Deployed by the Application and the kustomization, then by the kustomization alone.
        for app in [None, Some("# no Application\n")] {
            let d = tempfile::tempdir().unwrap();
            let template = format!("data:\n  pad: x\n{line}\n");
            let mut extra = vec![("charts/web/templates/pad.yaml", template.as_str())];
            extra.extend(app.map(|a| ("apps/web.yaml", a)));
            chart_repo(d.path(), &extra);
            let run = lint_chart_repo(d.path(), &[], BUDGET_LIMIT);
            assert_eq!(run.code, 1, "{case}: stderr: {}", run.stderr);
            let found = rules_at(&json(&run));
            let at = "charts/web/templates/pad.yaml:3".to_string();
            assert!(
                found.contains(&("helm-render-limit".to_string(), at)),
                "{case} {app:?}: {found:?}"
            );
        }
    }

    // A function whose output is random in Helm has a stand-in: the chart is checked.
    let d = tempfile::tempdir().unwrap();
    let template = "data:\n  pad: x\n{{- $ca := genCA \"web\" 365 }}\n";
    chart_repo(d.path(), &[("charts/web/templates/pad.yaml", template)]);
    let run = lint_chart_repo(d.path(), &[], LIMIT);
    assert_eq!(run.code, 1, "stderr: {}", run.stderr);
    let found = rules_at(&json(&run));
    assert!(checked(&found), "{found:?}");

    // A function Helm renders and gitops-lint does not: a warning, raised by a trusted config.
    let d = tempfile::tempdir().unwrap();
    let template = "data:\n  pad: x\n{{- $t := toToml .Values }}\n";
    chart_repo(d.path(), &[("charts/web/templates/pad.yaml", template)]);
    let run = lint_chart_repo(d.path(), &[], LIMIT);
    let found = rules_at(&json(&run));
    let at = "charts/web/templates/pad.yaml:3".to_string();
    assert!(
        found.contains(&("helm-unsupported".to_string(), at.clone())),
        "{found:?}"
    );
    let trusted = tempfile::tempdir().unwrap();
    let config = trusted.path().join("trusted.yaml");
    std::fs::write(&config, "rules:\n  severity: {helm-unsupported: error}\n").unwrap();
    let run = lint_chart_repo(
        d.path(),
        &["--trusted-config", config.to_str().unwrap()],
        LIMIT,
    );
    assert_eq!(run.code, 1, "stderr: {}", run.stderr);

    // A value file the Application names is read for the render even when the lint leaves it
    // out (an ignore file in the pull request), and a glob is not expanded but said.
    let d = tempfile::tempdir().unwrap();
    let app = "apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, namespace: argocd}
spec:
  project: web
  source:
    repoURL: 'https://example.com/r.git'
    path: charts/web
    targetRevision: HEAD
    helm:
      valueFiles: [hidden.yaml]
  destination: {server: 'https://kubernetes.default.svc', namespace: web}
";
    chart_repo(
        d.path(),
        &[
            ("apps/web.yaml", app),
            (".ignore", "hidden.yaml\n"),
            ("charts/web/hidden.yaml", "replicas: 1\n"),
        ],
    );
    let found = rules_at(&json(&lint_chart_repo(d.path(), &[], LIMIT)));
    assert!(checked(&found), "{found:?}");
    // A dependency Argo CD fetches is unknown offline; the chart's own templates still render.
    let d = tempfile::tempdir().unwrap();
    chart_repo(
        d.path(),
        &[(
            "charts/web/Chart.yaml",
            "apiVersion: v2\nname: web\nversion: 0.1.0\ndependencies:\n  - {name: nginx, version: 1.0.0, repository: 'https://charts.example.com'}\n",
        )],
    );
    let found = rules_at(&json(&lint_chart_repo(d.path(), &[], LIMIT)));
    assert!(checked(&found), "{found:?}");

    let d = tempfile::tempdir().unwrap();
    chart_repo(d.path(), &[("apps/web.yaml", app)]);
    let globbed = app.replace("[hidden.yaml]", "['value*.yaml']");
    chart_repo(d.path(), &[("apps/web.yaml", &globbed)]);
    let found = rules_at(&json(&lint_chart_repo(d.path(), &[], LIMIT)));
    assert!(
        found
            .iter()
            .any(|(r, at)| r == "helm-unsupported" && at == "apps/web.yaml:11"),
        "{found:?}"
    );
}

/// A chart whose render costs most of one chart's Helm budget (about 420 million steps, half a
/// second of a debug build: 3,000 copies of a 4 MB string), with the values `seed` shows.
fn costly_chart(d: &Path) {
    let files: &[(&str, &str)] = &[
        (
            ".gitops-lint.yaml",
            "repo-urls: ['https://example.com/r.git']\n",
        ),
        ("good.yaml", GOOD),
        (
            ".gitops-lint/policies/rendered.yaml",
            "id: rendered-configmap
severity: info
summary: A ConfigMap an Application renders
message: rendered
help: nothing to do
match: {kind: ConfigMap, objects: rendered}
condition: 'true'
",
        ),
        (
            "charts/costly/Chart.yaml",
            "apiVersion: v2\nname: costly\nversion: 0.1.0\n",
        ),
        ("charts/costly/values.yaml", "rounds: 30\n"),
        (
            "charts/costly/templates/cm.yaml",
            "apiVersion: v1
kind: ConfigMap
metadata: {name: '{{ .Release.Name }}'}
data:
  seed: {{ .Values.seed | default 0 | quote }}
{{- $s := repeat 4000000 \"x\" }}
{{- range until (int .Values.rounds) }}{{ range until 100 }}{{ $t := printf \"%s\" $s }}{{ end }}{{ end }}
",
        ),
    ];
    for (path, text) in files {
        let p = d.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

/// An Application of the costly chart: with a `seed`, its own values; without, the release
/// name and values every other such Application has too (one chart deployed to many clusters).
fn costly_app(name: &str, seed: Option<usize>) -> String {
    let values = match seed {
        Some(s) => format!("\n    helm: {{valuesObject: {{seed: {s}}}}}"),
        None => "\n    helm: {releaseName: costly}".to_string(),
    };
    format!(
        "apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {{name: {name}, namespace: argocd}}
spec:
  project: default
  source:
    repoURL: 'https://example.com/r.git'
    path: charts/costly
    targetRevision: HEAD{values}
  destination: {{server: 'https://kubernetes.default.svc', namespace: costly}}
---
"
    )
}

/// All the Helm rendering of a run shares one budget: kustomize `helmCharts` entries first, in
/// path order, then Applications in the order the graph meets them. Each render below costs most
/// of a chart's own budget, and with distinct values none is a render done before: the two
/// kustomizations render, the Applications after them are each a `helm-render-limit` error at
/// their source, and the run fails even where the repository's config turns the rule off. Which
/// charts the budget stops does not depend on the threads.
#[test]
fn helm_renders_share_one_run_budget() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    costly_chart(d);
    let apps: String = (0..4)
        .map(|i| costly_app(&format!("app-{i}"), Some(i)))
        .collect();
    std::fs::write(d.join("apps.yaml"), apps).unwrap();
    for k in ["k1", "k2"] {
        let chart = d.join(k).join("charts/costly/templates");
        std::fs::create_dir_all(&chart).unwrap();
        for f in ["Chart.yaml", "values.yaml", "templates/cm.yaml"] {
            std::fs::copy(
                d.join("charts/costly").join(f),
                d.join(k).join("charts/costly").join(f),
            )
            .unwrap();
        }
        std::fs::write(
            d.join(k).join("kustomization.yaml"),
            format!("helmCharts:\n  - name: costly\n    releaseName: {k}\n    valuesInline: {{seed: {k}}}\n"),
        )
        .unwrap();
    }
    let lint = |threads: &str, config: &str| {
        std::fs::write(
            d.join(".gitops-lint.yaml"),
            format!("repo-urls: ['https://example.com/r.git']\n{config}"),
        )
        .unwrap();
        let run = run_in(
            d,
            &["--format", "json", "--threads", threads, "."],
            BUDGET_LIMIT,
        );
        assert_eq!(run.code, 1, "stderr: {}", run.stderr);
        assert!(
            run.max_rss_kib < MAX_RSS_KIB,
            "peak memory {} KiB",
            run.max_rss_kib
        );
        (json(&run), run.stderr)
    };
    let (one, stderr) = lint("1", "");
    let (two, _) = lint("2", "");
    assert_eq!(rules_at(&one), rules_at(&two));
    let cut: Vec<String> = rules_at(&one)
        .into_iter()
        .filter(|(r, _)| r == "helm-render-limit")
        .map(|(_, at)| at)
        .collect();
    assert_eq!(
        cut,
        [
            "apps.yaml:8",
            "apps.yaml:20",
            "apps.yaml:32",
            "apps.yaml:44"
        ],
        "{one:#}"
    );
    assert!(
        stderr.contains("past the run's budget for Helm"),
        "{stderr}"
    );
    let (off, _) = lint("2", "rules: {ignore: [helm-render-limit]}\n");
    assert!(!rules_at(&off).iter().any(|(r, _)| r == "helm-render-limit"));
}

/// Applications that deploy one chart with the same values render it once: a thousand of them on
/// a chart that costs most of its own budget take one render, not a thousand (which would also
/// spend the run's budget), and each still gets the chart's objects.
#[test]
fn one_chart_for_a_thousand_applications_renders_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    costly_chart(d);
    let apps: String = (0..1000)
        .map(|i| costly_app(&format!("app-{i}"), None))
        .collect();
    std::fs::write(d.join("apps.yaml"), apps).unwrap();
    let run = run_in(
        d,
        &["--format", "json", "--fail-on", "never", "."],
        BUDGET_LIMIT,
    );
    let report = checked(&run);
    let rendered: u64 = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "rendered-configmap")
        .map(|f| f["occurrences"].as_u64().unwrap())
        .sum();
    assert_eq!(rendered, 1000, "{report:#}");
    assert!(!rules_at(&report)
        .iter()
        .any(|(r, _)| r.starts_with("helm-")));
}

/// Suppression comments cost their number, not a product: a run of directive lines, and files
/// whose every object carries one, each directive looked up once and each finding matched
/// against its own file's directives.
#[test]
fn many_suppression_comments_are_matched_in_linear_time() {
    let report = lint_dir(|d| {
        let mut run: String = (0..30_000)
            .map(|i| format!("# gitops-lint: ignore[default-project] kept {i}\n"))
            .collect();
        run.push_str("k: v\n");
        std::fs::write(d.join("run.yaml"), run).unwrap();
        for file in 0..4 {
            let apps: String = (0..2_500)
                .map(|i| {
                    format!(
                        "---\n# gitops-lint: ignore[default-project] shared on purpose\n\
                         {{apiVersion: argoproj.io/v1alpha1, kind: Application, \
                         metadata: {{name: a{file}-{i}, namespace: argocd}}, spec: {{project: \
                         default, source: {{repoURL: r, path: a}}, destination: {{server: s, \
                         namespace: a}}}}}}\n"
                    )
                })
                .collect();
            std::fs::write(d.join(format!("apps{file}.yaml")), apps).unwrap();
        }
    });
    assert_eq!(
        report["summary"]["suppressed"], 10_000,
        "{:#}",
        report["summary"]
    );
    let findings = report["findings"].as_array().unwrap();
    assert!(!findings
        .iter()
        .any(|f| f["rule"] == "default-project" && f["file"] != "good.yaml"));
    let unused = findings
        .iter()
        .filter(|f| f["rule"] == "unused-suppression" && f["file"] == "run.yaml")
        .count();
    assert_eq!(unused, 30_000);
}
