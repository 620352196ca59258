//! `.gitops-lint.yaml`: the repository's own settings. The file is validated as strictly as a
//! command line: an unknown key, rule or glob is a usage error that points into the file.

use crate::finding::Severity;
use crate::render::repo::CONFIG_FILES;
use crate::rules::{self, Category, Version, RULES};
use crate::yaml::{self, Node, ParseLimits, Span};
use globset::{Glob, GlobSet, GlobSetBuilder};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The lowest severity that fails the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    Error,
    Warning,
    Info,
    Never,
}

impl FailOn {
    pub fn threshold(self) -> Option<Severity> {
        match self {
            FailOn::Error => Some(Severity::Error),
            FailOn::Warning => Some(Severity::Warning),
            FailOn::Info => Some(Severity::Info),
            FailOn::Never => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            FailOn::Error => "error",
            FailOn::Warning => "warning",
            FailOn::Info => "info",
            FailOn::Never => "never",
        }
    }
}

/// Rules for part of the repository (`docs/**`, `examples/**`).
#[derive(Clone, Debug)]
pub struct PerPath {
    pub globs: Vec<String>,
    matcher: GlobSet,
    pub ignore: BTreeSet<&'static str>,
    pub severity: BTreeMap<&'static str, Option<Severity>>,
}

impl PerPath {
    pub fn matches(&self, rel: &Path) -> bool {
        self.matcher.is_match(rel)
    }
}

#[derive(Clone, Debug, Default)]
pub struct Config {
    /// The file it came from, if any.
    pub path: Option<PathBuf>,
    pub argocd_version: Option<Version>,
    pub repo_urls: Vec<String>,
    pub fail_on: Option<FailOn>,
    /// Rules turned on; `None` means all.
    pub select: Option<BTreeSet<&'static str>>,
    pub ignore: BTreeSet<&'static str>,
    /// Per-rule severity; `None` turns the rule off.
    pub severity: BTreeMap<&'static str, Option<Severity>>,
    pub exclude: Vec<String>,
    pub per_path: Vec<PerPath>,
    pub max_file_size: Option<u64>,
    /// Where each top-level key was set: `key` → line in the file.
    pub origins: BTreeMap<&'static str, u32>,
}

impl Config {
    /// The directory the file's globs are relative to.
    pub fn dir(&self) -> Option<&Path> {
        self.path.as_deref().and_then(Path::parent)
    }

    /// Whether a rule runs at all.
    pub fn enabled(&self, rule: &str) -> bool {
        self.select.as_ref().is_none_or(|s| s.contains(rule))
            && !self.ignore.contains(rule)
            && self.severity.get(rule) != Some(&None)
    }
}

/// A mistake in the config file, with the place it is at.
#[derive(Debug)]
pub struct ConfigError {
    pub path: PathBuf,
    pub text: String,
    pub span: std::ops::Range<usize>,
    pub message: String,
    pub help: Option<String>,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

impl std::error::Error for ConfigError {}

impl miette::Diagnostic for ConfigError {
    fn help<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn std::fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(&self.text)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        Some(Box::new(std::iter::once(
            miette::LabeledSpan::new_primary_with_span(
                Some("here".into()),
                (self.span.start, self.span.end - self.span.start),
            ),
        )))
    }
}

/// The keys the file may hold, for validation, "did you mean" and the JSON Schema.
pub const KEYS: [&str; 8] = [
    "argocd-version",
    "repo-urls",
    "fail-on",
    "rules",
    "exclude",
    "per-path",
    "max-file-size",
    "$schema",
];
const RULE_KEYS: [&str; 3] = ["select", "ignore", "severity"];
const PER_PATH_KEYS: [&str; 3] = ["paths", "ignore", "severity"];
pub const SEVERITIES: [&str; 4] = ["error", "warning", "info", "off"];

/// The config file for `start`: the nearest `.gitops-lint.yaml` walking up to the
/// repository root (the first directory holding `.git`).
pub fn find(start: &Path) -> Option<PathBuf> {
    let base = crate::paths::dir_of(start);
    let abs = base.canonicalize().ok()?;
    let mut written = base;
    for dir in abs.ancestors() {
        for name in CONFIG_FILES {
            if dir.join(name).is_file() {
                return Some(crate::render::normalize(&written.join(name)));
            }
        }
        if dir.join(".git").exists() {
            return None;
        }
        written = written.join("..");
    }
    None
}

/// Reads and validates the config file at `path`.
pub fn load(path: &Path) -> Result<Config, Box<ConfigError>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Box::new(ConfigError {
            path: path.to_path_buf(),
            text: String::new(),
            span: 0..0,
            message: format!("cannot read the config file: {e}"),
            help: None,
        })
    })?;
    parse(path, text)
}

/// Reads the config of the repository that holds `start`, if it has one.
pub fn load_for(start: &Path) -> Result<Config, Box<ConfigError>> {
    match find(start) {
        Some(path) => load(&path),
        None => Ok(Config::default()),
    }
}

struct Reader<'t> {
    path: &'t Path,
    text: &'t str,
}

impl Reader<'_> {
    fn error(
        &self,
        span: Span,
        message: impl Into<String>,
        help: Option<String>,
    ) -> Box<ConfigError> {
        Box::new(ConfigError {
            path: self.path.to_path_buf(),
            text: self.text.to_string(),
            span: span.range(),
            message: message.into(),
            help,
        })
    }

    fn keys(&self, map: &Node, allowed: &[&str], what: &str) -> Result<(), Box<ConfigError>> {
        if !map.is_map() {
            return Err(self.error(map.span, format!("{what} must be a mapping"), None));
        }
        for e in map.entries() {
            let key = e.key.as_str().unwrap_or_default();
            if !allowed.contains(&key) {
                let help = rules::did_you_mean(key, allowed.iter().copied())
                    .map(|s| format!("did you mean `{s}`?"))
                    .or_else(|| Some(format!("known keys: {}", allowed.join(", "))));
                return Err(self.error(e.key.span, format!("unknown key `{key}` in {what}"), help));
            }
        }
        Ok(())
    }

    fn string<'n>(&self, node: &'n Node, what: &str) -> Result<&'n str, Box<ConfigError>> {
        node.as_str()
            .filter(|_| !node.is_null())
            .ok_or_else(|| self.error(node.span, format!("{what} must be a string"), None))
    }

    fn list<'n>(
        &self,
        node: &'n Node,
        what: &str,
    ) -> Result<Vec<(&'n str, Span)>, Box<ConfigError>> {
        if !node.is_seq() {
            return Err(self.error(node.span, format!("{what} must be a list"), None));
        }
        node.items()
            .iter()
            .map(|i| Ok((self.string(i, what)?, i.span)))
            .collect()
    }

    /// A rule id or a category name, as the set of rule ids it stands for.
    fn selector(&self, word: &str, span: Span) -> Result<Vec<&'static str>, Box<ConfigError>> {
        if word == "all" {
            return Ok(RULES.iter().map(|r| r.id).collect());
        }
        if let Some(c) = Category::ALL.iter().find(|c| c.as_str() == word) {
            return Ok(RULES
                .iter()
                .filter(|r| r.category == *c)
                .map(|r| r.id)
                .collect());
        }
        if let Some(r) = rules::find(word) {
            return Ok(vec![r.id]);
        }
        let names = RULES
            .iter()
            .map(|r| r.id)
            .chain(Category::ALL.iter().map(|c| c.as_str()));
        let help = rules::did_you_mean(word, names)
            .map(|s| format!("did you mean `{s}`?"))
            .or_else(|| Some("`gitops-lint rules` lists rule ids and categories".into()));
        Err(self.error(span, format!("unknown rule or category `{word}`"), help))
    }

    fn selectors(
        &self,
        node: &Node,
        what: &str,
    ) -> Result<BTreeSet<&'static str>, Box<ConfigError>> {
        let mut out = BTreeSet::new();
        for (word, span) in self.list(node, what)? {
            out.extend(self.selector(word, span)?);
        }
        Ok(out)
    }

    fn severities(
        &self,
        node: &Node,
    ) -> Result<BTreeMap<&'static str, Option<Severity>>, Box<ConfigError>> {
        if !node.is_map() {
            return Err(self.error(
                node.span,
                "severity must map rule ids to error, warning, info or off",
                None,
            ));
        }
        let mut out = BTreeMap::new();
        for e in node.entries() {
            let word = self.string(&e.key, "a rule id")?;
            let ids = self.selector(word, e.key.span)?;
            let level = match self.string(&e.value, "a severity")? {
                "error" => Some(Severity::Error),
                "warning" => Some(Severity::Warning),
                "info" => Some(Severity::Info),
                "off" => None,
                other => {
                    let help = rules::did_you_mean(other, SEVERITIES)
                        .map(|s| format!("did you mean `{s}`?"))
                        .or_else(|| Some("use error, warning, info or off".into()));
                    return Err(self.error(
                        e.value.span,
                        format!("`{other}` is not a severity"),
                        help,
                    ));
                }
            };
            for id in ids {
                out.insert(id, level);
            }
        }
        Ok(out)
    }

    fn globs(&self, node: &Node, what: &str) -> Result<(Vec<String>, GlobSet), Box<ConfigError>> {
        let mut builder = GlobSetBuilder::new();
        let mut raw = Vec::new();
        for (pattern, span) in self.list(node, what)? {
            let glob = Glob::new(pattern).map_err(|e| {
                self.error(
                    span,
                    format!("`{pattern}` is not a valid glob: {}", e.kind()),
                    None,
                )
            })?;
            builder.add(glob);
            raw.push(pattern.to_string());
        }
        let set = builder
            .build()
            .map_err(|e| self.error(node.span, e.to_string(), None))?;
        Ok((raw, set))
    }
}

fn parse(path: &Path, text: String) -> Result<Config, Box<ConfigError>> {
    let r = Reader { path, text: &text };
    let parsed = yaml::parse(0, &text, ParseLimits::default());
    if let Some(p) = parsed.problems.first() {
        return Err(r.error(p.span, p.message.clone(), Some(p.help.to_string())));
    }
    let mut config = Config {
        path: Some(path.to_path_buf()),
        ..Config::default()
    };
    let Some(doc) = parsed.documents.first().filter(|d| !d.root.is_null()) else {
        return Ok(config);
    };
    let root = &doc.root;
    r.keys(root, &KEYS, "the config file")?;
    let line = |span: Span| text[..span.start as usize].matches('\n').count() as u32 + 1;
    for e in root.entries() {
        let key = KEYS
            .iter()
            .copied()
            .find(|k| Some(*k) == e.key.as_str())
            .unwrap_or("$schema");
        config.origins.insert(key, line(e.key.span));
        let v = &e.value;
        match key {
            "argocd-version" => {
                let s = v.as_str().unwrap_or_default();
                let version = Version::parse(s).map_err(|m| r.error(v.span, m, None))?;
                config.argocd_version = Some(version);
            }
            "repo-urls" => {
                config.repo_urls = r
                    .list(v, "repo-urls")?
                    .into_iter()
                    .map(|(u, _)| u.to_string())
                    .collect();
            }
            "fail-on" => {
                let s = r.string(v, "fail-on")?;
                let f = <FailOn as clap::ValueEnum>::from_str(s, false).map_err(|_| {
                    let help = rules::did_you_mean(s, ["error", "warning", "info", "never"])
                        .map(|s| format!("did you mean `{s}`?"));
                    r.error(
                        v.span,
                        format!("`{s}` is not error, warning, info or never"),
                        help,
                    )
                })?;
                config.fail_on = Some(f);
            }
            "rules" => {
                r.keys(v, &RULE_KEYS, "rules")?;
                if let Some(s) = v.get("select") {
                    config.select = Some(r.selectors(s, "rules.select")?);
                }
                if let Some(i) = v.get("ignore") {
                    config.ignore = r.selectors(i, "rules.ignore")?;
                }
                if let Some(s) = v.get("severity") {
                    config.severity = r.severities(s)?;
                }
            }
            "exclude" => {
                config.exclude = r.globs(v, "exclude")?.0;
            }
            "per-path" => {
                for item in r.list_nodes(v, "per-path")? {
                    r.keys(item, &PER_PATH_KEYS, "a per-path entry")?;
                    let Some(paths) = item.get("paths") else {
                        return Err(r.error(item.span, "a per-path entry needs `paths`", None));
                    };
                    let (globs, matcher) = r.globs(paths, "per-path paths")?;
                    let ignore = match item.get("ignore") {
                        Some(i) => r.selectors(i, "per-path ignore")?,
                        None => BTreeSet::new(),
                    };
                    let severity = match item.get("severity") {
                        Some(s) => r.severities(s)?,
                        None => BTreeMap::new(),
                    };
                    config.per_path.push(PerPath {
                        globs,
                        matcher,
                        ignore,
                        severity,
                    });
                }
            }
            "max-file-size" => {
                let n = v
                    .as_str()
                    .and_then(|s| s.parse::<u64>().ok())
                    .ok_or_else(|| {
                        r.error(v.span, "max-file-size must be a number of bytes", None)
                    })?;
                config.max_file_size = Some(n);
            }
            _ => {}
        }
    }
    Ok(config)
}

impl Reader<'_> {
    fn list_nodes<'n>(&self, node: &'n Node, what: &str) -> Result<&'n [Node], Box<ConfigError>> {
        if node.is_seq() {
            Ok(node.items())
        } else {
            Err(self.error(node.span, format!("{what} must be a list"), None))
        }
    }
}

/// A JSON Schema for the file, so editors can complete and check it.
pub fn json_schema() -> serde_json::Value {
    use serde_json::json;
    let mut names: Vec<String> = vec!["all".into()];
    names.extend(Category::ALL.iter().map(|c| c.as_str().to_string()));
    names.extend(RULES.iter().map(|r| r.id.to_string()));
    let selector = json!({ "type": "array", "items": { "enum": names } });
    let severity = json!({
        "type": "object",
        "propertyNames": { "enum": names },
        "additionalProperties": { "enum": SEVERITIES },
    });
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://github.com/gitops-lint/gitops-lint/schema/gitops-lint.schema.json",
        "title": "gitops-lint configuration (.gitops-lint.yaml)",
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "$schema": { "type": "string" },
            "argocd-version": {
                "description": "The Argo CD release the repository deploys to, e.g. 3.1.",
                "type": ["string", "number"],
                "pattern": "^v?[0-9]+\\.[0-9]+"
            },
            "repo-urls": {
                "description": "URLs that mean this repository (besides its git remotes).",
                "type": "array",
                "items": { "type": "string" }
            },
            "fail-on": {
                "description": "Lowest severity that makes the exit code 1.",
                "enum": ["error", "warning", "info", "never"]
            },
            "rules": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "select": selector,
                    "ignore": selector,
                    "severity": severity
                }
            },
            "exclude": {
                "description": "Globs of files not to lint.",
                "type": "array",
                "items": { "type": "string" }
            },
            "per-path": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["paths"],
                    "properties": {
                        "paths": { "type": "array", "items": { "type": "string" } },
                        "ignore": selector,
                        "severity": severity
                    }
                }
            },
            "max-file-size": {
                "description": "Skip files larger than this many bytes.",
                "type": "integer",
                "minimum": 0
            }
        }
    })
}
