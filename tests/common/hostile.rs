//! A repository whose every text a pull request controls is an attack on the output it lands
//! in: file and folder names, object names, and a policy whose summary, message and help hold
//! workflow commands, terminal escapes, bidirectional overrides, Markdown and HTML. And the
//! checks that an output kept all of it inert.

use std::path::Path;

/// What the texts hold: each attack once, and all of them together.
pub const ATTACKS: &[&str] = &[
    "\n::stop-commands::tok",
    "::stop-commands::x",
    "\r::error::cr",
    " \u{a0}::warning::spaced",
    "\u{200b}::notice::invisible",
    "%0A::error::percent",
    "##[error]legacy",
    "\u{1b}[2J\u{1b}]0;title\u{7}",
    "\u{9b}31m",
    "bidi\u{202e}lmth.exe",
    "\u{2066}isolate\u{2069}\u{200f}\u{61c}",
    "line\u{2028}sep\u{2029}\u{85}",
    "<img src=x onerror=alert(1)>",
    "<details><summary>x</summary>",
    "[click](https://evil.example)",
    "![i](https://evil.example/i.png)",
    "`tick` ``` | pipe |",
    "# heading",
    "@admin www.evil.example https://evil.example",
    "$x^2$ *em* _u_ ~~s~~ \\",
];

/// Several attacks in one name short enough for a file name.
pub const MIXED: &str =
    "\n::stop-commands::t\r##[error]e\u{1b}[2J\u{202e}<img src=x>[c](https:%2F%2Fe)`|";

/// A name for a file or an object: the attacks that a file name may hold (no `/`, no NUL).
fn names() -> Vec<String> {
    ATTACKS
        .iter()
        .copied()
        .chain([MIXED])
        .map(|a| a.replace('/', "%2F"))
        .collect()
}

const APP: &str = "apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: NAME
  namespace: argocd
spec:
  project: default
  source: {repoURL: 'https://example.com/r.git', path: a, targetRevision: HEAD}
  destination: {server: 'https://kubernetes.default.svc', namespace: a}
  syncPolicy:
    automated: {prune: on}
";

/// A YAML double-quoted scalar of `s`: what YAML cannot hold raw as escapes.
pub fn quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            c if (c as u32) <= 0xffff => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// Writes the repository into `dir`: an Application per attack, in a file and a folder named
/// with it, named with it, with a finding `--fix` cures (`prune: on`); a policy that reports on
/// each with the attacks in every text; a file that does not parse, with the attacks raw in it
/// (its snippet is shown); a kustomization with a remote base named with them (a note of what
/// is not rendered).
pub fn write(dir: &Path) {
    let all = ATTACKS.concat();
    let policies = dir.join(".gitops-lint/policies");
    std::fs::create_dir_all(&policies).unwrap();
    let policy = format!(
        "id: hostile-texts\nseverity: warning\nsummary: {}\nmessage: {}\nhelp: {}\ndoc: {}\nmatch:\n  kind: Application\ncondition: \"true\"\n",
        quoted(&format!("summary {all}")),
        quoted(&format!("message {all} {{{{ object.metadata.name }}}}")),
        quoted(&format!("help {all}\n::stop-commands::help\n[x](https://evil.example)")),
        quoted(&format!("https://evil.example/doc\n{all}")),
    );
    std::fs::write(policies.join("hostile.yaml"), policy).unwrap();
    for (i, name) in names().iter().enumerate() {
        let folder = dir.join(format!("{name}{i}"));
        std::fs::create_dir_all(&folder).unwrap();
        let app = APP.replace("NAME", &quoted(&format!("{name}{i}")));
        std::fs::write(folder.join(format!("{name}.yaml")), &app).unwrap();
        std::fs::write(dir.join(format!("{name}{i}.yaml")), &app).unwrap();
    }
    let remote = format!("https://evil.example/{}?ref=v1", MIXED.replace('/', "%2F"));
    std::fs::write(
        dir.join("kustomization.yaml"),
        format!("resources:\n  - {}\n", quoted(&remote)),
    )
    .unwrap();
    // Raw, so the file is invalid YAML and its snippet shows them.
    std::fs::write(dir.join("broken.yaml"), format!("a: [\n{all}\n")).unwrap();
}

/// Whether a reader of log lines may skip `c` before a command: .NET's `TrimStart` and its
/// culture-aware comparison skip whitespace, controls and format characters.
fn skipped_before_a_command(c: char) -> bool {
    c.is_whitespace() || gitops_lint::escape::hidden(c) || ('\u{fe00}'..='\u{fe0f}').contains(&c)
}

/// A character no output may hold raw: controls (but LF and tab), bidirectional and
/// invisible format characters, line and paragraph separators.
fn raw_hidden(c: char) -> bool {
    c != '\n' && c != '\t' && gitops_lint::escape::hidden(c)
}

/// What is wrong with `text` as lines of a CI log: a raw hidden character, a line a runner
/// reads as a workflow command (lines end at LF, CR or CR LF, as the runner reads them) unless
/// `own` says the tool wrote it, or a legacy `##[` command anywhere.
pub fn log_problems(text: &str, own: impl Fn(&str) -> bool) -> Vec<String> {
    let mut problems = Vec::new();
    // A CR that ends a line with its LF is a line end (a CRLF file's lines in a diff).
    for c in text
        .replace("\r\n", "\n")
        .chars()
        .filter(|&c| raw_hidden(c))
    {
        problems.push(format!("raw {c:?}"));
    }
    for line in text.split(['\n', '\r']) {
        let start = line.trim_start_matches(skipped_before_a_command);
        let command = start.strip_prefix(':').is_some_and(|s| {
            s.trim_start_matches(skipped_before_a_command)
                .starts_with(':')
        });
        if command && !own(line) {
            problems.push(format!("a command line: {line:?}"));
        }
        if line.contains("##[") {
            problems.push(format!("a legacy command: {line:?}"));
        }
    }
    problems
}

/// What is wrong with `text` as Markdown that GitHub renders, where only the tool's own markup
/// may be live: a raw hidden character, an HTML tag, a link or image, or the attacks' words
/// as the tool would never write them.
pub fn markdown_problems(text: &str) -> Vec<String> {
    let mut problems: Vec<String> = text
        .chars()
        .filter(|&c| raw_hidden(c))
        .map(|c| format!("raw {c:?}"))
        .collect();
    for live in [
        "<", "](", "![", "https://", "www.", "@admin", "$x", "*em*", "_u_", "~~",
    ] {
        if text.contains(live) {
            problems.push(format!("live {live:?}"));
        }
    }
    problems
}
