//! Text from the repository reaches no output raw: in every format and every command, over a
//! repository whose file names, object names and policy texts are attacks on the output they
//! land in (tests/common/hostile.rs), no line starts a workflow command but the tool's own, no
//! control or bidirectional character is written, the XML parses, and the Markdown has no
//! live link or HTML. Then the escapers themselves, over generated strings.
#![allow(clippy::unwrap_used)] // a test stops at the first thing that is not as expected

mod common;

use common::hostile::{self, log_problems, markdown_problems};
use common::run_in;
use gitops_lint::escape::{self, Guard, Stream};
use proptest::prelude::*;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

fn repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    common::git_init(dir.path());
    hostile::write(dir.path());
    dir
}

/// The workflow commands the `github` format writes: annotations and the statistics' group.
fn own_command(line: &str) -> bool {
    ["::error file=", "::warning file=", "::notice file="]
        .iter()
        .any(|c| line.starts_with(c))
        || line == "::group::Findings by rule"
        || line == "::endgroup::"
}

fn expect_inert(what: &str, text: &str, own: impl Fn(&str) -> bool) {
    let problems = log_problems(text, own);
    assert!(problems.is_empty(), "{what}: {problems:#?}\n{text}");
}

fn run(dir: &Path, args: &[&str]) -> common::Run {
    let run = run_in(dir, args, LIMIT);
    assert!(run.code < 2, "{args:?}: {}\n{}", run.code, run.stderr);
    run
}

#[test]
fn every_format_keeps_the_repository_text_inert() {
    let dir = repository();
    let at = dir.path();
    let all = ["--fail-on", "never", "--verbose", "--statistics", "."];
    for format in ["human", "concise", "github", "json", "sarif", "junit"] {
        let run = run(at, &[&["--format", format][..], &all].concat());
        assert!(
            run.stdout.contains("hostile-texts"),
            "{format}: the policy did not report\n{}",
            run.stderr
        );
        if format == "human" {
            // --verbose: the remote base named with the attacks is noted.
            assert!(
                run.stdout
                    .contains("not rendered: gitops-lint never fetches"),
                "{}",
                run.stdout
            );
        }
        let own = |line: &str| format == "github" && own_command(line);
        expect_inert(&format!("{format} stdout"), &run.stdout, own);
        expect_inert(&format!("{format} stderr"), &run.stderr, |_| false);
        match format {
            "json" => {
                serde_json::from_str::<serde_json::Value>(&run.stdout).unwrap();
            }
            "sarif" => sarif_is_inert(&run.stdout),
            "junit" => {
                common::parse_xml(&run.stdout).unwrap();
            }
            _ => {}
        }
    }
    // One line per finding, whatever a file name holds.
    let concise = run(at, &["--format", "concise", "--fail-on", "never", "."]);
    for line in concise.stdout.lines() {
        assert!(
            line.contains(": warning[") || line.contains(": error[") || line.contains(": info["),
            "{line:?}"
        );
    }
}

/// SARIF: JSON, no message a viewer reads as a link, and the policy's Markdown help inert.
fn sarif_is_inert(text: &str) {
    let log: serde_json::Value = serde_json::from_str(text).unwrap();
    let run = &log["runs"][0];
    let policy = run["tool"]["driver"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "hostile-texts")
        .unwrap();
    let markdown = policy["help"]["markdown"].as_str().unwrap();
    let problems = markdown_problems(markdown);
    assert!(problems.is_empty(), "{problems:#?}\n{markdown}");
    for result in run["results"].as_array().unwrap() {
        let message = result["message"]["text"].as_str().unwrap();
        let unescaped = message.replace("\\[", "").replace("\\]", "");
        assert!(!unescaped.contains('['), "{message}");
    }
}

#[test]
fn every_command_keeps_the_repository_text_inert() {
    let dir = repository();
    let at = dir.path();
    for args in [
        &["graph", "."][..],
        &["graph", "--format", "dot", "."],
        &["explain", "hostile-texts"],
        &["rules"],
        &["rules", "--format", "json"],
        &["config", "."],
    ] {
        let run = run(at, args);
        expect_inert(&format!("{args:?} stdout"), &run.stdout, |_| false);
        expect_inert(&format!("{args:?} stderr"), &run.stderr, |_| false);
    }
    // A baseline of the findings reads back and holds every one of them.
    let written = run(at, &["--write-baseline", "baseline.yaml", "."]);
    expect_inert("--write-baseline", &written.stderr, |_| false);
    let text = std::fs::read_to_string(at.join("baseline.yaml")).unwrap();
    assert!(
        !text.chars().any(|c| c != '\n' && escape::hidden(c)),
        "{text}"
    );
    let again = run(
        at,
        &["--baseline", "baseline.yaml", "--format", "json", "."],
    );
    let report: serde_json::Value = serde_json::from_str(&again.stdout).unwrap();
    assert_eq!(
        report["findings"].as_array().unwrap().len(),
        0,
        "{}",
        again.stdout
    );
    let explained = run(at, &["explain", "hostile-texts"]).stdout;
    assert!(explained.contains(":stop-commands::help"), "{explained}");
    // The diff's headers name the files, then the notes of --fix do.
    let diff = run(at, &["--diff", "."]);
    assert!(diff.stdout.contains("+++ b/"), "{}", diff.stdout);
    expect_inert("--diff", &diff.stdout, |_| false);
    expect_inert("--diff stderr", &diff.stderr, |_| false);
    let fixed = run(at, &["--fix", "--fail-on", "never", "."]);
    assert!(
        fixed.stderr.contains("gitops-lint: fixed "),
        "{}",
        fixed.stderr
    );
    expect_inert("--fix stdout", &fixed.stdout, |_| false);
    expect_inert("--fix stderr", &fixed.stderr, |_| false);
}

/// A policy file that does not load: the config error quotes its file and its text.
#[test]
fn a_config_error_keeps_the_repository_text_inert() {
    let dir = tempfile::tempdir().unwrap();
    common::git_init(dir.path());
    let policies = dir.path().join(".gitops-lint/policies");
    std::fs::create_dir_all(&policies).unwrap();
    let all = hostile::ATTACKS.concat();
    std::fs::write(
        policies.join(format!("{}.yaml", hostile::MIXED)),
        format!(
            "id: {}\nmessage: m\ncondition: \"true\"\nbogus: {}\n",
            hostile::quoted(&all),
            hostile::quoted(&all)
        ),
    )
    .unwrap();
    let run = run_in(dir.path(), &["."], LIMIT);
    assert_eq!(run.code, 2, "{}", run.stderr);
    expect_inert("config error", &run.stderr, |_| false);
    expect_inert("config error stdout", &run.stdout, |_| false);
}

/// The binary prints through the guard only: no print macro anywhere in its source, and the
/// standard streams opened once each (the report's writer, the guarded notes on stderr) besides
/// asking whether they are terminals. A print added later, or merged from elsewhere, fails here.
#[test]
fn the_binary_prints_only_through_the_guard() {
    let mut files = vec![common::root().join("src")];
    let mut prints = Vec::new();
    let (mut stdout, mut stderr) = (0, 0);
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for print in ["println!", "eprintln!", "print!(", "eprint!(", "dbg!("] {
                if code.contains(print) {
                    prints.push(format!("{}:{}: {line}", path.display(), n + 1));
                }
            }
            let opened = |stream: &str| {
                code.matches(stream).count()
                    - code.matches(&format!("{stream}.is_terminal()")).count()
            };
            stdout += opened("std::io::stdout()");
            stderr += opened("std::io::stderr()");
        }
    }
    assert!(
        prints.is_empty(),
        "print through `note!` or a guarded writer:\n{}",
        prints.join("\n")
    );
    assert_eq!(
        (stdout, stderr),
        (1, 1),
        "the standard streams are opened once each"
    );
}

/// The job summary's scripts (python, and the jq fallback) hide what the binary hides: each
/// holds the ranges of [`escape::hidden`] besides C0, DEL and C1.
#[test]
fn the_summary_scripts_hide_what_the_binary_hides() {
    let action = std::fs::read_to_string(common::root().join("action.yml")).unwrap();
    let pairs = regex::Regex::new(r"[(\[](\d+), (\d+)[)\]]").unwrap();
    let ranges = |from: &str, to: &str| -> Vec<(u32, u32)> {
        let start = action.find(from).unwrap();
        let text = &action[start..start + action[start..].find(to).unwrap()];
        pairs
            .captures_iter(text)
            .map(|c| (c[1].parse().unwrap(), c[2].parse().unwrap()))
            .collect()
    };
    let python = ranges("HIDDEN = (", "\n\n");
    let jq = ranges("def hidden:", "| any(");
    assert_eq!(python, jq, "python and jq hide the same characters");
    for c in (0..=0x10ffff).filter_map(char::from_u32) {
        let listed = python
            .iter()
            .any(|&(lo, hi)| lo <= c as u32 && c as u32 <= hi);
        assert_eq!(listed, escape::hidden(c), "{c:?}");
    }
}

/// Strings made of the pieces that attacks are made of, and of anything else.
fn hostile_string() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        3 => prop::sample::select(vec![
            "::", ":", "##[", "#", "[", "]", "(", ")", "<", ">", "`", "!", "@", "|", "&", "%",
            "%0A", "\\", "\"", "'", "-", " ", "\t", "\n", "\r", "\r\n", "\u{1b}", "\u{7f}",
            "\u{85}", "\u{9b}", "\u{a0}", "\u{ad}", "\u{200b}", "\u{200e}", "\u{202e}",
            "\u{2066}", "\u{2028}", "\u{2029}", "\u{feff}", "\u{fe0f}", "\u{301}", "\u{fffe}",
            "\u{e0041}", "a", "é", "漢", "😀", "https://", "www.", "]]>",
        ])
        .prop_map(str::to_string),
        1 => any::<String>(),
    ];
    prop::collection::vec(piece, 0..12).prop_map(|p| p.concat())
}

/// What the runner makes of an escaped workflow-command value (its `Unescape`).
fn runner_unescape(s: &str, property: bool) -> String {
    let mut out = s.replace("%0D", "\r").replace("%0A", "\n");
    if property {
        out = out.replace("%3A", ":").replace("%2C", ",");
    }
    out.replace("%25", "%")
}

/// Writes `text` through a guard in the pieces `cuts` makes of it.
fn guarded(text: &str, stream: Stream, cuts: &[usize]) -> String {
    let mut out = Vec::new();
    {
        let mut guard = Guard::new(&mut out, stream);
        let bytes = text.as_bytes();
        let mut at = 0;
        for &cut in cuts {
            let cut = cut % (bytes.len() + 1);
            if cut > at {
                guard.write_all(&bytes[at..cut]).unwrap();
                at = cut;
            }
        }
        guard.write_all(&bytes[at..]).unwrap();
        guard.finish().unwrap();
    }
    String::from_utf8(out).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn visible_text_is_one_inert_line(s in hostile_string()) {
        let v = escape::visible(&s);
        prop_assert!(!v.contains(['\n', '\r']));
        prop_assert!(log_problems(&v, |_| false).is_empty(), "{v:?}");
        // A plain text is passed as it is.
        if s.bytes().all(|b| (0x20..0x7f).contains(&b)) && !s.contains("##[") && !s.trim_start().starts_with("::") {
            prop_assert_eq!(&v, &s);
        }
    }

    #[test]
    fn visible_lines_keep_their_line_ends_and_nothing_else(s in hostile_string()) {
        let v = escape::visible_lines(&s);
        prop_assert_eq!(v.matches('\n').count(), s.matches('\n').count());
        prop_assert!(log_problems(&v, |_| false).is_empty(), "{v:?}");
    }

    #[test]
    fn the_guard_holds_every_line_however_the_text_is_written(
        s in hostile_string(),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
        color in any::<bool>(),
    ) {
        let whole = guarded(&s, Stream::Text { color: false }, &[]);
        prop_assert!(log_problems(&whole, |_| false).is_empty(), "{whole:?}");
        prop_assert_eq!(&guarded(&s, Stream::Text { color: false }, &cuts), &whole);
        // With color, only ESC itself passes.
        let colored = guarded(&s, Stream::Text { color }, &cuts);
        let without_esc = colored.replace('\u{1b}', "");
        prop_assert!(log_problems(&without_esc, |_| false).is_empty(), "{colored:?}");
    }

    #[test]
    fn json_through_the_guard_reads_back_the_same(s in hostile_string(), cuts in prop::collection::vec(any::<usize>(), 0..6)) {
        let json = serde_json::to_string_pretty(&serde_json::json!({ "message": s, "list": [s] })).unwrap();
        let out = guarded(&json, Stream::Json, &cuts);
        prop_assert!(log_problems(&out, |_| false).is_empty(), "{out:?}");
        let back: serde_json::Value = serde_json::from_str(&out).unwrap();
        prop_assert_eq!(back["message"].as_str().unwrap(), s.as_str());
    }

    #[test]
    fn xml_text_parses_and_is_inert(s in hostile_string()) {
        let x = escape::xml(&s);
        let doc = format!("<?xml version=\"1.0\"?>\n<a b=\"{x}\">{x}</a>\n");
        let doc = guarded(&doc, Stream::Xml, &[]);
        prop_assert!(common::parse_xml(&doc).is_ok(), "{doc:?}");
        prop_assert!(log_problems(&doc, |_| false).is_empty(), "{doc:?}");
    }

    #[test]
    fn markdown_text_has_no_markup(s in hostile_string()) {
        let m = escape::markdown(&s);
        prop_assert!(markdown_problems(&m).is_empty(), "{m:?}");
        // Past its character references, no punctuation but `-`, and that not first.
        let bare = regex::Regex::new("&#[0-9]+;").unwrap().replace_all(&m, "");
        prop_assert!(!bare.contains(|c: char| c.is_ascii_punctuation() && c != '-'), "{m:?}");
        prop_assert!(!m.trim_start_matches(' ').starts_with('-'), "{m:?}");
        prop_assert!(!m.contains(['\n', '\r']), "{m:?}");
        prop_assert!(log_problems(&m, |_| false).is_empty(), "{m:?}");
    }

    #[test]
    fn workflow_values_read_back_exactly(s in hostile_string()) {
        let data = escape::workflow_data(&s);
        prop_assert!(!data.contains(['\r', '\n']));
        prop_assert_eq!(runner_unescape(&data, false), s.clone());
        let property = escape::workflow_property(&s);
        prop_assert!(!property.contains(['\r', '\n', ':', ',']));
        prop_assert_eq!(runner_unescape(&property, true), s);
    }

    #[test]
    fn sarif_messages_have_no_link(s in hostile_string()) {
        let t = escape::sarif_text(&s);
        let bare = t.replace("\\[", "").replace("\\]", "");
        prop_assert!(!bare.contains(['[', ']']), "{t:?}");
        prop_assert!(log_problems(&t, |_| false).is_empty(), "{t:?}");
    }

    #[test]
    fn yaml_scalars_read_back_exactly_and_hold_nothing_hidden(s in hostile_string()) {
        let q = escape::yaml_quoted(&s);
        prop_assert!(!q.chars().any(|c| c != '\t' && escape::hidden(c)), "{q:?}");
        let doc = format!("key: {q}\n");
        let parsed = gitops_lint::yaml::parse(0, &doc, gitops_lint::yaml::ParseLimits::default());
        prop_assert!(parsed.problems.is_empty(), "{q:?}: {:?}", parsed.problems);
        prop_assert_eq!(parsed.documents[0].root.str_at("key"), Some(s.as_str()));
    }

    #[test]
    fn dot_strings_stay_closed_on_one_line(s in hostile_string()) {
        let d = escape::dot(&s);
        prop_assert!(!d.contains(['\n', '\r']));
        // Every `"` is escaped: preceded by an odd run of backslashes.
        let b = d.as_bytes();
        for (i, _) in d.match_indices('"') {
            let run = b[..i].iter().rev().take_while(|&&c| c == b'\\').count();
            prop_assert!(!run.is_multiple_of(2), "{d:?}");
        }
        prop_assert!((d.len() - d.trim_end_matches('\\').len()).is_multiple_of(2), "{d:?}");
    }
}
