//! Policies of the repository's own: rules written as data, one YAML document each, that
//! match objects (as written, or as their Applications render them) and report those for
//! which a CEL condition holds. They are read with the config (a mistake in one is a config
//! error at its place) and take part in the run as rules like the built-in ones.
//!
//! The format is in `docs/policies.md`, its JSON Schema from [`json_schema`].

use crate::cel::Program;
use crate::config::{ConfigError, Reader};
use crate::finding::Severity;
use crate::rules::custom::{At, Objects, Piece, Policy};
use crate::rules::{self, Category, Check, FixAvailability, Rule};
use crate::yaml::{Node, Span};
use std::path::{Path, PathBuf};

/// The keys of a policy document.
pub const KEYS: [&str; 10] = [
    "id",
    "severity",
    "category",
    "summary",
    "message",
    "help",
    "doc",
    "match",
    "condition",
    "at",
];
const MATCH_KEYS: [&str; 8] = [
    "apiVersion",
    "kind",
    "name",
    "namespace",
    "labels",
    "annotations",
    "objects",
    "paths",
];
const SELECTOR_KEYS: [&str; 2] = ["matchLabels", "matchExpressions"];
const EXPRESSION_KEYS: [&str; 3] = ["key", "operator", "values"];
const OPERATORS: [&str; 4] = ["In", "NotIn", "Exists", "DoesNotExist"];
const OBJECTS: [&str; 3] = ["written", "rendered", "both"];

/// Most files a policy glob looks at.
const MAX_WALK: usize = 100_000;

/// Largest policy file read.
const MAX_FILE: u64 = 1 << 20;

/// Most policies a repository's config may load. Each is a rule the run checks every object
/// against, so their number multiplies the run's work; real repositories hold tens or
/// hundreds, and policy libraries a few hundred. Ten thousand load in well under a second.
/// A trusted config's policies are not counted: the job chose them.
pub const MAX_POLICIES: usize = 10_000;

/// How many more policies a config may load, and the first file that was left unread, or
/// read only in part, because of [`MAX_POLICIES`].
pub struct Ceiling {
    left: usize,
    pub cut: Option<PathBuf>,
}

impl Ceiling {
    pub fn new(src: Source<'_>) -> Ceiling {
        Ceiling {
            left: if src.trusted() {
                usize::MAX
            } else {
                MAX_POLICIES
            },
            cut: None,
        }
    }

    /// Whether one more policy may be loaded; the first time not, `file` is where loading
    /// stopped.
    fn take(&mut self, file: &Path) -> bool {
        if self.left == 0 {
            self.cut.get_or_insert_with(|| file.to_path_buf());
            return false;
        }
        self.left -= 1;
        true
    }
}

/// The policies of the files `patterns` name, relative to `dir` (a file, a folder of
/// `.yaml`/`.yml` files, or a glob), in path order. `node` is where the config names them.
pub(crate) fn load_patterns(
    r: &Reader<'_>,
    dir: &Path,
    patterns: &[(&str, Span)],
    src: Source<'_>,
    ceiling: &mut Ceiling,
) -> Vec<&'static Rule> {
    let dir = written_dir(dir);
    let mut out = Vec::new();
    let bound = bound_of(&dir);
    // One walking budget for all the patterns, each folder walked once, and each file read
    // once however many patterns name it.
    let mut walks = Walks {
        left: MAX_WALK,
        done: Default::default(),
    };
    let mut read = std::collections::BTreeSet::new();
    for &(pattern, span) in patterns {
        let files = match src {
            Source::Disk { .. } => files_of(&dir, pattern, bound.as_deref(), &mut walks),
            Source::Revision(snapshot) => snapshot_files(snapshot, &dir, pattern),
        };
        match files {
            Ok(files) if files.is_empty() => {
                r.keep::<()>(Err(r.error(
                    span,
                    format!("`{pattern}` names no policy file"),
                    Some(
                        "policies are `.yaml` or `.yml` files, named relative to the config".into(),
                    ),
                )));
            }
            Ok(files) => {
                for f in files {
                    if !read.insert(identity(&f)) {
                        continue;
                    }
                    if let Some(rules) = r.keep(load_file(&f, src, ceiling)) {
                        out.extend(rules);
                    }
                }
            }
            Err(message) => {
                r.keep::<()>(Err(r.error(span, message, None)));
            }
        }
    }
    out
}

/// `dir` as a path to join onto: the empty path (a config at the top of a relative
/// checkout) is `.`.
fn written_dir(dir: &Path) -> PathBuf {
    if dir.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        dir.to_path_buf()
    }
}

/// What makes two spellings of one file the same file: its resolved path, when it has one.
fn identity(path: &Path) -> PathBuf {
    path.canonicalize()
        .unwrap_or_else(|_| crate::paths::normalize(path))
}

/// Where policy files are read from.
#[derive(Clone, Copy)]
pub enum Source<'a> {
    /// The file system, within the repository of the config; `trusted` for the config of
    /// `--trusted-config`.
    Disk { trusted: bool },
    /// The tree of a revision, for a config read from that revision: a change under review
    /// can no more rewrite its policies than the config itself.
    Revision(&'a crate::changed::Snapshot),
}

impl Source<'_> {
    /// Whether the policies come from the trusted config: those win over the repository's
    /// own version of a policy of the same id.
    fn trusted(self) -> bool {
        match self {
            Source::Disk { trusted } => trusted,
            Source::Revision(_) => true,
        }
    }
}

/// What `pattern` names in a revision's tree, relative to `dir`.
fn snapshot_files(
    snapshot: &crate::changed::Snapshot,
    dir: &Path,
    pattern: &str,
) -> Result<Vec<PathBuf>, String> {
    let in_folder = |folder: &Path| -> Vec<PathBuf> {
        let key = snapshot.key(folder);
        snapshot
            .files_below(folder)
            .into_iter()
            .filter(|p| p.parent() == Some(key.as_path()) && is_yaml(p))
            .collect()
    };
    if !crate::glob::is_glob(pattern) {
        let p = dir.join(pattern);
        return Ok(if snapshot.is_file(&p) {
            vec![snapshot.key(&p)]
        } else {
            in_folder(&p)
        });
    }
    let matcher = crate::glob::files(pattern, true)
        .ok_or_else(|| format!("`{pattern}` is not a valid glob"))?;
    let base = snapshot.key(dir);
    Ok(snapshot
        .files_below(dir)
        .into_iter()
        .filter(|p| is_yaml(p) && p.strip_prefix(&base).is_ok_and(|rel| matcher.is_match(rel)))
        .collect())
}

/// What policy files may be read from, for a config in `dir`: its git repository (the
/// nearest folder above holding `.git`), or the config's folder when there is none. A pull
/// request's config must not read files of the machine it runs on, through `..`, an
/// absolute path or a link.
pub(crate) fn bound_of(dir: &Path) -> Option<PathBuf> {
    let abs = dir.canonicalize().ok()?;
    let top = abs
        .ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(&abs);
    Some(top.to_path_buf())
}

/// Whether `file` lies inside `bound` once links are resolved, and not in its git data (the
/// job's token is kept there).
pub(crate) fn inside(file: &Path, bound: Option<&Path>) -> bool {
    match (file.canonicalize(), bound) {
        (Ok(f), Some(b)) => f.starts_with(b) && !crate::paths::in_git_data(&f, b),
        _ => false,
    }
}

/// The policy files of the policy folder beside a config in `dir` (`.gitops-lint/policies/`),
/// in path order. A folder that leads out of the repository (a link) is a mistake.
pub fn load_folder(
    dir: &Path,
    src: Source<'_>,
    ceiling: &mut Ceiling,
) -> Result<Vec<&'static Rule>, Box<ConfigError>> {
    let dir = written_dir(dir);
    let folder = dir.join(crate::config::POLICY_FOLDER);
    let files = match src {
        Source::Disk { .. } => {
            if !folder.is_dir() {
                return Ok(Vec::new());
            }
            if !inside(&folder, bound_of(&dir).as_deref()) {
                return Err(Box::new(ConfigError {
                    path: folder.clone(),
                    text: String::new(),
                    span: 0..0,
                    message: "the policy folder leads outside the repository".into(),
                    help: Some("keep policy files in the repository, not behind a link".into()),
                    more: Vec::new(),
                }));
            }
            yaml_files(&folder)
        }
        Source::Revision(snapshot) => snapshot_files(snapshot, &folder, ".").unwrap_or_default(),
    };
    // Every file is read, so that one run shows the mistakes of all of them.
    let mut out = Vec::new();
    let mut errors: Vec<ConfigError> = Vec::new();
    for f in files {
        match load_file(&f, src, ceiling) {
            Ok(rules) => out.extend(rules),
            Err(e) => {
                let mut e = *e;
                let more = std::mem::take(&mut e.more);
                errors.push(e);
                errors.extend(more);
            }
        }
    }
    if errors.is_empty() {
        return Ok(out);
    }
    let mut first = errors.remove(0);
    first.more = errors;
    Err(Box::new(first))
}

fn is_yaml(p: &Path) -> bool {
    matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml"))
}

/// The YAML files right in `dir`, sorted. Links are not followed out of it: a policy
/// folder holds its policies.
fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .map(|e| e.path())
                .filter(|p| is_yaml(p))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// What `pattern` names below `dir`, on disk. Nothing outside `bound` is listed or read:
/// the path a pattern starts from is checked first, and links are never followed below it.
/// The folders policy globs walked, and what is left of their budget.
struct Walks {
    left: usize,
    /// Every file below a folder, or `None` when the budget ran out in it.
    done: std::collections::BTreeMap<PathBuf, Option<Vec<PathBuf>>>,
}

fn files_of(
    dir: &Path,
    pattern: &str,
    bound: Option<&Path>,
    walks: &mut Walks,
) -> Result<Vec<PathBuf>, String> {
    let outside = || Err(format!("`{pattern}` leads outside the repository"));
    // Git data is refused as what lies outside is, whether or not it is there.
    if crate::paths::names_git(crate::paths::bytes(&crate::paths::normalize(Path::new(
        pattern,
    )))) {
        return outside();
    }
    if !crate::glob::is_glob(pattern) {
        let p = dir.join(pattern);
        if p.symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink())
        {
            return Err(format!(
                "`{pattern}` is a link: links are not followed, name the file or folder it points to"
            ));
        }
        if !p.exists() {
            return Ok(Vec::new());
        }
        if !inside(&p, bound) {
            return outside();
        }
        return Ok(if p.is_dir() {
            yaml_files(&p)
        } else if p.symlink_metadata().is_ok_and(|m| m.is_file()) {
            vec![p]
        } else {
            Vec::new()
        });
    }
    let matcher = crate::glob::files(pattern, true)
        .ok_or_else(|| format!("`{pattern}` is not a valid glob"))?;
    // The folders before the first segment with a pattern are walked, to a bounded depth.
    let fixed: PathBuf = Path::new(pattern)
        .components()
        .take_while(|c| !crate::glob::is_glob(&c.as_os_str().to_string_lossy()))
        .collect();
    let base = dir.join(&fixed);
    if !base.is_dir() {
        return Ok(Vec::new());
    }
    if !inside(&base, bound) {
        return outside();
    }
    let walked = walks.done.entry(base.clone()).or_insert_with(|| {
        let mut all = Vec::new();
        walk(&base, 0, &mut walks.left, &mut |p| {
            all.push(p.to_path_buf())
        });
        (walks.left > 0).then_some(all)
    });
    let Some(all) = walked else {
        // What lies past the budget was not seen: saying so beats loading some policies.
        return Err(format!(
            "`{pattern}` looks through more than {MAX_WALK} files and folders; name the folder that holds the policies"
        ));
    };
    let mut out: Vec<PathBuf> = all
        .iter()
        .filter(|p| is_yaml(p) && p.strip_prefix(dir).is_ok_and(|rel| matcher.is_match(rel)))
        .cloned()
        .collect();
    out.sort();
    Ok(out)
}

/// Every file below `dir`, to a bounded depth, links not followed (a link loop or a link
/// out of the repository leads nowhere).
/// `left` is how many more entries it may look at.
fn walk(dir: &Path, depth: usize, left: &mut usize, found: &mut dyn FnMut(&Path)) {
    if depth > 16 {
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries = Vec::new();
    for e in rd.filter_map(Result::ok) {
        if *left == 0 {
            return;
        }
        *left -= 1;
        entries.push(e);
    }
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        match e.file_type() {
            // A repository's own database holds no policies.
            Ok(t)
                if t.is_dir()
                    && (crate::paths::is_git_name(e.file_name().as_encoded_bytes())
                        || crate::paths::is_git_dir(&e.path())) => {}
            Ok(t) if t.is_dir() => walk(&e.path(), depth + 1, left, found),
            Ok(t) if t.is_file() => found(&e.path()),
            _ => {}
        }
    }
}

/// The policies of one file, each document one policy, registered as rules.
/// Past the `ceiling`, nothing more is read: the file where it stopped is recorded.
pub fn load_file(
    path: &Path,
    src: Source<'_>,
    ceiling: &mut Ceiling,
) -> Result<Vec<&'static Rule>, Box<ConfigError>> {
    let shown = match src {
        Source::Disk { .. } => path.to_path_buf(),
        Source::Revision(snapshot) => snapshot.name(path),
    };
    if ceiling.left == 0 {
        ceiling.take(&shown);
        return Ok(Vec::new());
    }
    let failed = |message: String| {
        Box::new(ConfigError {
            path: shown.clone(),
            text: String::new(),
            span: 0..0,
            message,
            help: None,
            more: Vec::new(),
        })
    };
    let text = match src {
        Source::Disk { .. } => {
            let bytes = crate::source::read_limited(path, MAX_FILE).map_err(|e| {
                failed(match e {
                    crate::source::ReadError::TooLarge { size, limit } => format!(
                        "the policy file is {size} bytes, over the {limit} bytes a policy file may have"
                    ),
                    crate::source::ReadError::Io(e) => format!("cannot read the policy file: {e}"),
                })
            })?;
            String::from_utf8(bytes).map_err(|_| failed("the policy file is not UTF-8".into()))?
        }
        Source::Revision(snapshot) => snapshot
            .read(path, MAX_FILE)
            .map_err(|e| failed(format!("cannot read the policy file: {e}")))?,
    };
    let r = Reader::new(&shown, &text);
    let mut out: Vec<&'static Rule> = Vec::new();
    let mut ids = std::collections::HashSet::new();
    for doc in r.documents() {
        if doc.root.is_null() {
            continue;
        }
        if !ceiling.take(&shown) {
            break;
        }
        if let Some(rule) = read(&r, &doc.root, src.trusted()) {
            if !ids.insert(rule.id) {
                let at = doc.root.get("id").map_or(doc.root.span, |n| n.span);
                r.keep::<()>(Err(r.error(
                    at,
                    format!("`{}` is the id of another policy of this file", rule.id),
                    Some("give each policy an id of its own".into()),
                )));
                continue;
            }
            out.push(rule);
        }
    }
    r.finish().map(|()| out)
}

/// One policy document, compiled and registered; `None` when it has mistakes (kept in `r`).
fn read(r: &Reader<'_>, root: &Node, trusted: bool) -> Option<&'static Rule> {
    let before = r.mistakes();
    if !r.keys(root, &KEYS, "a policy") {
        return None;
    }
    let required = |key: &str| {
        let node = root.get(key);
        if node.is_none() {
            r.keep::<()>(Err(r.error(
                root.entries().first().map_or(root.span, |e| e.key.span),
                format!("a policy needs `{key}`"),
                None,
            )));
        }
        node
    };
    let id_node = required("id");
    let message_node = required("message");
    let condition_node = required("condition");
    let id = id_node.and_then(|n| r.keep(policy_id(r, n)));
    let severity = match root.get("severity") {
        None => Some(Severity::Warning),
        Some(n) => r.keep(r.string(n, "severity").and_then(|s| match s {
            "error" => Ok(Severity::Error),
            "warning" => Ok(Severity::Warning),
            "info" => Ok(Severity::Info),
            other => {
                let levels = ["error", "warning", "info"];
                let help = crate::text::did_you_mean(other, levels)
                    .or_else(|| levels.into_iter().find(|l| l.starts_with(other)))
                    .map(|l| format!("did you mean `{l}`?"))
                    .unwrap_or_else(|| "a policy's severity is error, warning or info; turn it off with `rules.ignore` in the config".into());
                Err(r.error(n.span, format!("`{other}` is not a severity"), Some(help)))
            }
        })),
    };
    let category = match root.get("category") {
        None => Some(Category::Custom),
        Some(n) => r.keep(r.string(n, "category").and_then(|s| {
            Category::ALL
                .into_iter()
                .find(|c| c.as_str() == s)
                .ok_or_else(|| {
                    let names = Category::ALL.map(Category::as_str);
                    let help = crate::text::did_you_mean(s, names)
                        .map(|c| format!("did you mean `{c}`?"))
                        .unwrap_or_else(|| format!("categories: {}", names.join(", ")));
                    r.error(n.span, format!("`{s}` is not a category"), Some(help))
                })
        })),
    };
    let text = |key: &str| root.get(key).and_then(|n| r.keep(r.string(n, key)));
    let summary = text("summary");
    let help = text("help");
    let doc = text("doc");
    let message = message_node.and_then(|n| {
        let s = r.keep(r.string(n, "message"))?;
        r.keep(pieces(r, n, s))
    });
    let condition = condition_node.and_then(|n| {
        let s = r.keep(r.string(n, "condition"))?;
        r.keep(compile(r, n, s, s))
    });
    let at = root.get("at").and_then(|n| {
        let s = r.keep(r.string(n, "at"))?;
        r.keep(at(r, n, s))
    });
    let matcher = match root.get("match") {
        Some(m) => read_match(r, m),
        None => Some(Match::default()),
    };
    if r.mistakes() != before {
        return None;
    }
    let (id, severity, category, message, condition, matcher) =
        (id?, severity?, category?, message?, condition?, matcher?);
    let written = message_text(root.get("message"));
    let summary = summary.unwrap_or(&written).to_string();
    let policy = Policy {
        id: leak(id),
        file: r.path.to_path_buf(),
        text: r.text[root.span.range()].to_string(),
        link: doc.map(str::to_string),
        api_versions: matcher.api_versions,
        kinds: matcher.kinds,
        names: matcher.names,
        namespaces: matcher.namespaces,
        labels: matcher.labels,
        annotations: matcher.annotations,
        objects: matcher.objects,
        paths: matcher.paths,
        condition_path: condition.only_path("object"),
        reads_application: condition.reads_beyond("application", &[])
            || condition.reads_beyond("objectNamespace", &[]),
        condition,
        at,
        message,
        help: help.map(str::to_string),
        trusted,
    };
    let rule = Rule {
        id: policy.id,
        category,
        severity,
        severities: None,
        fix: FixAvailability::None,
        summary: leak(&summary),
        doc: leak(&policy.doc(&summary, true)),
        uri: doc
            .filter(|d| d.starts_with("https://") || d.starts_with("http://"))
            .map(leak),
        check: Check::Policy(Box::leak(Box::new(policy))),
    };
    let file = identity(r.path);
    let text = rule_text(&rule).to_string();
    match rules::register(
        rule,
        |other| matches!(other.check, Check::Policy(p) if identity(&p.file) == file && p.text == text),
        trusted,
    ) {
        Ok(rule) => Some(rule),
        Err(other) => {
            let place = match other.check {
                Check::Policy(p) => format!("the policy in {}", p.file.display()),
                _ => "a built-in rule".into(),
            };
            r.keep::<()>(Err(r.error(
                id_node.map_or(root.span, |n| n.span),
                format!("`{}` is already the id of {place}", other.id),
                Some("give each policy an id of its own".into()),
            )));
            None
        }
    }
}

fn rule_text(rule: &Rule) -> &str {
    match rule.check {
        Check::Policy(p) => &p.text,
        _ => "",
    }
}

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_string().into_boxed_str())
}

/// A policy id: lowercase words joined by `-`, not a built-in rule's or a category's name.
fn policy_id<'n>(r: &Reader<'_>, node: &'n Node) -> Result<&'n str, Box<ConfigError>> {
    let id = r.string(node, "id")?;
    let well_formed = id.len() <= 64
        && id.split('-').all(|w| {
            !w.is_empty()
                && w.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        });
    if !well_formed {
        return Err(r.error(
            node.span,
            format!("`{id}` is not a policy id"),
            Some("an id is lowercase letters and digits in words joined by `-`, like `prod-apps-self-heal`".into()),
        ));
    }
    if crate::discover::SkipReason::CODES.contains(&id) {
        return Err(r.error(
            node.span,
            format!("`{id}` is the code of a skipped file in reports"),
            Some("give the policy an id of its own".into()),
        ));
    }
    if id == "all" || Category::ALL.iter().any(|c| c.as_str() == id) {
        return Err(r.error(
            node.span,
            format!("`{id}` names a category of rules"),
            Some("give the policy an id of its own".into()),
        ));
    }
    Ok(id)
}

/// Where the text of a scalar node starts in the file, when the file holds it verbatim
/// (plain and single-line quoted scalars do; folded blocks and escapes do not).
fn verbatim(r: &Reader<'_>, node: &Node, s: &str) -> Option<usize> {
    let range = node.span.range();
    r.text.get(range.clone())?.find(s).map(|i| range.start + i)
}

/// Compiles `expr`, a part of `whole` (the node's string): a syntax error points at its
/// place in the file where the text is there verbatim, else at the node.
fn compile(
    r: &Reader<'_>,
    node: &Node,
    whole: &str,
    expr: &str,
) -> Result<Program, Box<ConfigError>> {
    Program::compile(expr).map_err(|e| {
        let offset = whole.find(expr).unwrap_or(0);
        let span = match verbatim(r, node, whole) {
            Some(start) => {
                let a = start + offset + e.start;
                let b = (start + offset + e.end.max(e.start + 1)).min(node.span.range().end);
                Span::new(node.span.file, a, b.max(a))
            }
            None => node.span,
        };
        r.error(span, format!("CEL: {}", e.message), None)
    })
}

/// A message: text with `{{ expression }}` parts, each compiled.
fn pieces(r: &Reader<'_>, node: &Node, s: &str) -> Result<Vec<Piece>, Box<ConfigError>> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(open) = rest.find("{{") {
        let Some(close) = rest[open + 2..].find("}}") else {
            return Err(r.error(
                node.span,
                "`{{` without its `}}` in the message",
                Some("an interpolation is `{{ object.metadata.name }}`".into()),
            ));
        };
        if open > 0 {
            out.push(Piece::Text(rest[..open].to_string()));
        }
        let expr = &rest[open + 2..open + 2 + close];
        out.push(Piece::Expr(compile(r, node, s, expr)?));
        rest = &rest[open + 2 + close + 2..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest.to_string()));
    }
    Ok(out)
}

fn message_text(node: Option<&Node>) -> String {
    node.and_then(Node::as_str).unwrap_or_default().to_string()
}

/// `at`: an expression over `object` or `application`, or a path under the object
/// (`spec.source.targetRevision`, `spec.containers[0].image`).
fn at(r: &Reader<'_>, node: &Node, s: &str) -> Result<At, Box<ConfigError>> {
    let head = s.trim_start();
    let root = head
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .next()
        .unwrap_or_default();
    if root == "object" {
        return compile(r, node, s, s).map(At::Expr);
    }
    if root == "application" {
        // The finding belongs to the object: its suppressions and baseline are there.
        return Err(r.error(
            node.span,
            "`at` names a node of the object, not of its Application",
            Some("write a path under the object, or an expression over `object`".into()),
        ));
    }
    let mut path = Vec::new();
    for part in s.trim().split('.') {
        let (name, mut index) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if name.is_empty() && path.is_empty() && index.is_empty() {
            return Err(r.error(node.span, format!("`{s}` is not a path"), None));
        }
        if !name.is_empty() {
            path.push(name.to_string());
        }
        while let Some(rest) = index.strip_prefix('[') {
            let Some(end) = rest.find(']') else { break };
            let i = &rest[..end];
            if i.parse::<usize>().is_err() {
                return Err(r.error(
                    node.span,
                    format!("`[{i}]` is not a list index"),
                    Some("write a path like `spec.containers[0].image`, or an expression over `object`".into()),
                ));
            }
            path.push(i.to_string());
            index = &rest[end + 1..];
        }
        if !index.is_empty() {
            return Err(r.error(node.span, format!("`{s}` is not a path"), None));
        }
    }
    Ok(At::Path(path))
}

#[derive(Default)]
struct Match {
    api_versions: Vec<String>,
    kinds: Vec<String>,
    names: Vec<String>,
    namespaces: Vec<String>,
    labels: Option<Node>,
    annotations: Option<Node>,
    objects: Objects,
    paths: Vec<globset::GlobMatcher>,
}

/// A string or a list of strings.
fn words(r: &Reader<'_>, node: &Node, what: &str) -> Option<Vec<String>> {
    if node.is_seq() {
        r.keep(r.list(node, what))
            .map(|l| l.into_iter().map(|(s, _)| s.to_string()).collect())
    } else {
        r.keep(r.string(node, what)).map(|s| vec![s.to_string()])
    }
}

fn read_match(r: &Reader<'_>, m: &Node) -> Option<Match> {
    let before = r.mistakes();
    if !r.keys(m, &MATCH_KEYS, "match") {
        return None;
    }
    let mut out = Match::default();
    let field = |key: &str| {
        m.get(key)
            .and_then(|n| words(r, n, &format!("match.{key}")))
    };
    out.api_versions = field("apiVersion").unwrap_or_default();
    out.kinds = field("kind").unwrap_or_default();
    out.names = field("name").unwrap_or_default();
    out.namespaces = field("namespace").unwrap_or_default();
    for (key, slot) in [
        ("labels", &mut out.labels),
        ("annotations", &mut out.annotations),
    ] {
        if let Some(sel) = m.get(key) {
            if selector(r, sel, &format!("match.{key}")) {
                *slot = Some(sel.clone());
            }
        }
    }
    if let Some(n) = m.get("objects") {
        if let Some(s) = r.keep(r.string(n, "match.objects")) {
            out.objects = match s {
                "written" => Objects::Written,
                "rendered" => Objects::Rendered,
                "both" => Objects::Both,
                other => {
                    let help = crate::text::did_you_mean(other, OBJECTS)
                        .map(|c| format!("did you mean `{c}`?"))
                        .unwrap_or_else(|| "use written, rendered or both".into());
                    r.keep::<()>(Err(r.error(
                        n.span,
                        format!("`{other}` is not written, rendered or both"),
                        Some(help),
                    )));
                    Objects::Both
                }
            };
        }
    }
    if let Some(n) = m.get("paths") {
        for (pattern, span) in words_spans(r, n, "match.paths").unwrap_or_default() {
            match crate::glob::files(&pattern, true) {
                Some(g) => out.paths.push(g),
                None => {
                    r.keep::<()>(Err(r.error(
                        span,
                        format!("`{pattern}` is not a valid glob"),
                        None,
                    )));
                }
            }
        }
    }
    (r.mistakes() == before).then_some(out)
}

fn words_spans(r: &Reader<'_>, node: &Node, what: &str) -> Option<Vec<(String, Span)>> {
    if node.is_seq() {
        r.keep(r.list(node, what))
            .map(|l| l.into_iter().map(|(s, sp)| (s.to_string(), sp)).collect())
    } else {
        r.keep(r.string(node, what))
            .map(|s| vec![(s.to_string(), node.span)])
    }
}

/// A Kubernetes label selector, checked: `false` when it has mistakes (kept in `r`).
fn selector(r: &Reader<'_>, sel: &Node, what: &str) -> bool {
    let before = r.mistakes();
    if !r.keys(sel, &SELECTOR_KEYS, what) {
        return false;
    }
    if let Some(ml) = sel.get("matchLabels") {
        if !ml.is_map() {
            r.keep::<()>(Err(r.error(ml.span, "matchLabels must be a mapping", None)));
        } else {
            for e in ml.entries() {
                r.keep(r.string(&e.value, "a matchLabels value"));
            }
        }
    }
    if let Some(mx) = sel.get("matchExpressions") {
        for x in r
            .keep(r.list_nodes(mx, "matchExpressions"))
            .unwrap_or_default()
        {
            if !r.keys(x, &EXPRESSION_KEYS, "a match expression") {
                continue;
            }
            match x.get("key") {
                Some(k) => {
                    r.keep(r.string(k, "key"));
                }
                None => {
                    r.keep::<()>(Err(r.error(x.span, "a match expression needs `key`", None)));
                }
            }
            let op = x
                .get("operator")
                .and_then(|o| r.keep(r.string(o, "operator")).map(|s| (s, o)));
            match op {
                Some((s, _)) if OPERATORS.contains(&s) => {
                    let takes_values = matches!(s, "In" | "NotIn");
                    let values = x.get("values");
                    if takes_values && values.is_none_or(|v| v.items().is_empty()) {
                        r.keep::<()>(Err(r.error(
                            x.span,
                            format!("operator {s} needs `values`"),
                            None,
                        )));
                    }
                    if let Some(v) = values {
                        r.keep(r.list(v, "values"));
                    }
                }
                Some((s, o)) => {
                    let help = crate::text::did_you_mean(s, OPERATORS)
                        .map(|c| format!("did you mean `{c}`?"))
                        .unwrap_or_else(|| format!("operators: {}", OPERATORS.join(", ")));
                    r.keep::<()>(Err(r.error(
                        o.span,
                        format!("`{s}` is not an operator"),
                        Some(help),
                    )));
                }
                None => {
                    if x.get("operator").is_none() {
                        r.keep::<()>(Err(r.error(
                            x.span,
                            "a match expression needs `operator`",
                            None,
                        )));
                    }
                }
            }
        }
    }
    r.mistakes() == before
}

/// A JSON Schema for policy files, so editors can complete and check them.
pub fn json_schema() -> serde_json::Value {
    use serde_json::json;
    let strings = json!({ "oneOf": [
        { "type": "string" },
        { "type": "array", "items": { "type": "string" } }
    ]});
    let selector = json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "matchLabels": { "type": "object", "additionalProperties": { "type": "string" } },
            "matchExpressions": { "type": "array", "items": {
                "type": "object",
                "additionalProperties": false,
                "required": ["key", "operator"],
                "properties": {
                    "key": { "type": "string" },
                    "operator": { "enum": OPERATORS },
                    "values": { "type": "array", "items": { "type": "string" } }
                }
            }}
        }
    });
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://github.com/gitops-lint/gitops-lint/schema/gitops-lint-policy.schema.json",
        "title": "gitops-lint policy",
        "description": "A policy of the repository's own: objects it matches are reported where `condition` holds. See docs/policies.md.",
        "type": "object",
        "additionalProperties": false,
        "required": ["id", "message", "condition"],
        "properties": {
            "id": { "type": "string", "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$", "maxLength": 64,
                    "description": "The rule id: how selection, severity overrides, suppressions and baselines name the policy." },
            "severity": { "enum": ["error", "warning", "info"], "default": "warning" },
            "category": { "enum": Category::ALL.map(Category::as_str), "default": "custom" },
            "summary": { "type": "string", "description": "One line for `gitops-lint rules`; the message as written when absent." },
            "message": { "type": "string", "description": "The finding's message; `{{ expr }}` parts are CEL expressions whose values are written in." },
            "help": { "type": "string", "description": "How to fix it." },
            "doc": { "type": "string", "description": "A link (or text) to the policy's documentation." },
            "match": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "apiVersion": strings, "kind": strings, "name": strings, "namespace": strings,
                    "labels": selector, "annotations": selector,
                    "objects": { "enum": OBJECTS, "default": "both" },
                    "paths": strings
                }
            },
            "condition": { "type": "string", "description": "CEL over `object` (and `application`, the Application that deploys it, or null): the policy reports where it is true." },
            "at": { "type": "string", "description": "Where the finding points: a path under the object (`spec.source.targetRevision`) or a CEL expression over `object` giving a node." }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_walk_skips_git_and_stops_at_its_budget() {
        let dir = tempfile::tempdir().expect("temp dir");
        for f in [".git/objects/p.yaml", "a/p.yaml", "b/c/q.yaml"] {
            let p = dir.path().join(f);
            std::fs::create_dir_all(p.parent().expect("a parent")).expect("mkdir");
            std::fs::write(p, "").expect("write");
        }
        let mut seen = Vec::new();
        let mut left = MAX_WALK;
        walk(dir.path(), 0, &mut left, &mut |p| {
            seen.push(p.to_path_buf())
        });
        let rel: Vec<_> = seen
            .iter()
            .map(|p| p.strip_prefix(dir.path()).expect("below").to_path_buf())
            .collect();
        assert_eq!(
            rel,
            [PathBuf::from("a/p.yaml"), PathBuf::from("b/c/q.yaml")]
        );
        let mut left = 2;
        seen.clear();
        walk(dir.path(), 0, &mut left, &mut |p| {
            seen.push(p.to_path_buf())
        });
        assert_eq!(left, 0);
        assert!(seen.len() < 2);
    }
}
