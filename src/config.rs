//! `.gitops-lint.yaml`: the repository's own settings. The file is validated as strictly as a
//! command line: an unknown key, rule or glob is a usage error that points into the file.

use crate::finding::Severity;
use crate::policy::Source;
use crate::repo::CONFIG_FILES;
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
    /// Without `--fail-on` or the config's `fail-on`: errors are certainties, so they fail.
    pub const DEFAULT: FailOn = FailOn::Error;

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
    /// The baseline file used when the command line names none.
    pub baseline: Option<BaselineKey>,
    /// Where each top-level key was set: `key` → line in the file.
    pub origins: BTreeMap<&'static str, u32>,
    /// Where it came from when that is not a file on disk (`REV:.gitops-lint.yaml`).
    pub label: Option<String>,
    /// The directory `per-path` globs are relative to, when not the file's own.
    pub glob_dir: Option<PathBuf>,
    /// The settings this config may only make stricter (`--trusted-config`).
    pub trusted: Option<Box<Config>>,
    /// The top-level keys whose value is the trusted config's.
    pub from_trusted: BTreeSet<&'static str>,
    /// What the trusted config overrode, for `gitops-lint config`.
    pub clamped: Vec<Clamp>,
    /// The repository's own policies: those `policies` names, then those of the
    /// `.gitops-lint/policies/` folder beside the config, registered as rules. Added with
    /// [`Config::add_policy`], which keeps `policy_ids` in step.
    pub policies: Vec<&'static rules::Rule>,
    /// The ids of `policies`: a rule is looked up by id for every finding.
    pub(crate) policy_ids: std::collections::HashSet<&'static str>,
    /// The first policy file left unread, or read in part, past
    /// [`crate::policy::MAX_POLICIES`].
    pub policies_cut: Option<PathBuf>,
}

/// The folder of a repository's policies, beside its config file (or at its root).
pub const POLICY_FOLDER: &str = ".gitops-lint/policies";

/// The config's `baseline`, as written, and where: a baseline file that cannot be read is a
/// mistake in the config, reported at this line.
#[derive(Clone, Debug)]
pub struct BaselineKey {
    pub written: String,
    /// The config as [`ConfigError`] shows it: its name, its text, the value's place in it.
    file: PathBuf,
    text: std::sync::Arc<str>,
    span: std::ops::Range<usize>,
}

impl BaselineKey {
    /// A config error at the line that names the baseline.
    pub fn error(&self, message: String, help: Option<String>) -> Box<ConfigError> {
        Box::new(ConfigError {
            more: Vec::new(),
            path: self.file.clone(),
            text: self.text.to_string(),
            span: self.span.clone(),
            message,
            help,
        })
    }
}

/// The rules the command line selects (`--select`, `--extend-select`, `--ignore`), as ids.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    /// `None`: the config's `rules.select` stands.
    pub select: Option<BTreeSet<&'static str>>,
    pub extend_select: BTreeSet<&'static str>,
    pub ignore: BTreeSet<&'static str>,
}

/// A setting of the repository's config that the trusted config overrode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Clamp {
    /// The key, as the file spells it (`fail-on`, `rules`, `per-path`).
    pub key: &'static str,
    pub note: String,
}

impl Config {
    /// The directory the file's globs are relative to.
    pub fn dir(&self) -> Option<&Path> {
        self.glob_dir
            .as_deref()
            .or_else(|| self.path.as_deref().and_then(Path::parent))
    }

    /// The baseline file the config names, relative to the directory its globs are relative
    /// to (the config file's own, or the repository root for a trusted config kept outside it),
    /// with the setting itself. Under a trusted config, only the trusted config's.
    pub fn baseline_file(&self) -> Option<(PathBuf, &BaselineKey)> {
        let owner = match &self.trusted {
            Some(t) => t,
            None => self,
        };
        let key = owner.baseline.as_ref()?;
        let dir = owner.dir().unwrap_or(Path::new(""));
        Some((crate::paths::normalize(&dir.join(&key.written)), key))
    }

    /// Where the settings came from, as `gitops-lint config` and errors name it.
    pub fn name(&self) -> Option<String> {
        self.label
            .clone()
            .or_else(|| self.path.as_ref().map(|p| p.display().to_string()))
    }

    /// Applies the command line's rule selection, which wins over the file: `--select` replaces
    /// `rules.select`, `--extend-select` adds to it, `--ignore` adds to `rules.ignore` and wins
    /// over both. A rule the command line selects runs even where `rules.ignore` or a `severity`
    /// of `off` would leave it out (`per-path` entries still apply to it). Under a trusted config
    /// both configs take it: the command line belongs to the job, like the trusted config.
    pub fn apply_selection(&mut self, cli: &Selection) {
        let named: BTreeSet<&str> = cli
            .select
            .iter()
            .flatten()
            .chain(&cli.extend_select)
            .copied()
            .collect();
        if let Some(select) = &cli.select {
            self.select = Some(select.clone());
        }
        // With no `select`, every rule is already selected.
        if let Some(select) = &mut self.select {
            select.extend(&cli.extend_select);
        }
        self.ignore.retain(|r| !named.contains(r));
        self.severity
            .retain(|r, level| level.is_some() || !named.contains(r));
        self.ignore.extend(&cli.ignore);
        if let Some(t) = &mut self.trusted {
            t.apply_selection(cli);
        }
    }

    /// Whether a rule runs at all: when this config turns it on, or, under a trusted config,
    /// when either does.
    pub fn enabled(&self, rule: &str) -> bool {
        self.holds(rule) && self.turned_on(rule)
    }

    fn turned_on(&self, rule: &str) -> bool {
        match &self.trusted {
            None => self.enabled_here(rule),
            Some(t) => t.turned_on(rule) || self.asks_for(rule),
        }
    }

    /// The rules of a run under this config: the built-in ones, then its policies (the
    /// trusted config's included).
    pub fn available(&self) -> Vec<&'static rules::Rule> {
        RULES
            .iter()
            .copied()
            .chain(self.policies.iter().copied())
            .collect()
    }

    /// Adds a policy the config loaded, once (one rule per id is registered, so the id
    /// tells two rules apart).
    pub fn add_policy(&mut self, rule: &'static rules::Rule) {
        if self.policy_ids.insert(rule.id) {
            self.policies.push(rule);
        }
    }

    /// Whether the rule is a built-in one or a policy this config (or its trusted config)
    /// loaded: policies another config of the process loaded are not this run's.
    pub fn holds(&self, rule: &str) -> bool {
        let own = |c: &Config| c.policy_ids.contains(rule);
        rules::RULES.iter().any(|r| r.id == rule)
            || own(self)
            || self.trusted.as_deref().is_some_and(own)
    }

    fn enabled_here(&self, rule: &str) -> bool {
        self.select.as_ref().is_none_or(|s| s.contains(rule))
            && !self.ignore.contains(rule)
            && self.severity.get(rule) != Some(&None)
    }

    /// Whether the file names the rule to run it, somewhere.
    fn asks_for(&self, rule: &str) -> bool {
        let on = |level: Option<&Option<Severity>>| matches!(level, Some(Some(_)));
        (self.select.as_ref().is_some_and(|s| s.contains(rule)) && self.enabled_here(rule))
            || on(self.severity.get(rule))
            || self.per_path.iter().any(|p| on(p.severity.get(rule)))
    }

    /// The severity a finding of `rule` at `path` (as discovery writes it) is reported with,
    /// starting from the rule's own `severity`, or `None` when it is not reported. Under a
    /// trusted config, this file's settings apply on top of the trusted config's verdict and
    /// cannot go below it: they can turn a rule on or raise it, never drop or lower it.
    pub fn verdict(&self, rule: &str, severity: Severity, path: &Path) -> Option<Severity> {
        match &self.trusted {
            None => self.verdict_here(rule, Some(severity), severity, path),
            Some(t) => {
                let floor = t.verdict(rule, severity, path);
                floor.max(self.verdict_here(rule, floor, severity, path))
            }
        }
    }

    /// This file's verdict, starting from `start`: the rule's severity, or what the trusted
    /// config decided (`None`: off), which the file keeps where it does not name the rule.
    fn verdict_here(
        &self,
        rule: &str,
        start: Option<Severity>,
        severity: Severity,
        path: &Path,
    ) -> Option<Severity> {
        let mut level = self.global_here(rule, start, severity);
        if self.per_path.is_empty() || !self.enabled_here(rule) {
            return level;
        }
        let path = crate::paths::normalize(path);
        let dir = self.dir().map(crate::paths::normalize).unwrap_or_default();
        let rel = path.strip_prefix(&dir).unwrap_or(&path);
        for p in self.per_path.iter().filter(|p| p.matches(rel)) {
            if p.ignore.contains(rule) {
                return None;
            }
            if let Some(l) = p.severity.get(rule) {
                level = Some((*l)?);
            }
        }
        level
    }

    /// The verdict outside `per-path` entries.
    fn global_here(
        &self,
        rule: &str,
        start: Option<Severity>,
        severity: Severity,
    ) -> Option<Severity> {
        if !self.enabled_here(rule) {
            return None;
        }
        match self.severity.get(rule) {
            Some(level) => *level,
            None if self.select.is_some() => start.or(Some(severity)),
            None => start,
        }
    }
}

/// Whether `a` fails a run on more findings than `b` does.
fn stricter(a: FailOn, b: FailOn) -> bool {
    let rank = |f: FailOn| f.threshold().map_or(0, |s| 3 - s as u8);
    rank(a) > rank(b)
}

fn level_name(level: Option<Severity>) -> &'static str {
    level.map_or("off", Severity::as_str)
}

/// The repository's config `repo` under the trusted config `trusted`: the repository's may make
/// a setting stricter, never looser. Limits are the lower of the two; `fail-on` the stricter;
/// `exclude` only the trusted config's (a repository exclude could hide any file); the Argo CD
/// version only the trusted config's (either direction can silence a version-dependent rule);
/// `repo-urls` add up (they only widen what is read); rules and `per-path` are decided for
/// each finding by both configs, the stricter verdict winning (see [`Config::verdict`]).
pub fn pin(repo: Config, trusted: Config) -> Config {
    let mut c = repo;
    let at = |c: &Config, key: &str| match (c.name(), c.origins.get(key)) {
        (Some(name), Some(line)) => format!("{name}:{line}"),
        (Some(name), None) => name,
        (None, _) => "the repository's config".into(),
    };
    let trusted_name = trusted
        .name()
        .unwrap_or_else(|| "the trusted config".into());
    let mut clamped = Vec::new();
    let mut from_trusted = BTreeSet::new();

    let floor = trusted.fail_on.unwrap_or(FailOn::Error);
    match c.fail_on {
        Some(own) if !stricter(own, floor) && own != floor => {
            clamped.push(Clamp {
                key: "fail-on",
                note: format!(
                    "{} sets `{}`, looser than the trusted `{}`",
                    at(&c, "fail-on"),
                    own.as_str(),
                    floor.as_str()
                ),
            });
            c.fail_on = trusted.fail_on.or(Some(floor));
            from_trusted.insert("fail-on");
        }
        Some(_) => {}
        None => {
            c.fail_on = trusted.fail_on;
            from_trusted.insert("fail-on");
        }
    }

    let limit = trusted
        .max_file_size
        .unwrap_or(crate::discover::DEFAULT_MAX_FILE_SIZE);
    match c.max_file_size {
        Some(own) if own > limit => {
            clamped.push(Clamp {
                key: "max-file-size",
                note: format!(
                    "{} sets {own}, above the trusted limit {limit}",
                    at(&c, "max-file-size")
                ),
            });
            c.max_file_size = Some(limit);
            from_trusted.insert("max-file-size");
        }
        Some(_) => {}
        None => {
            c.max_file_size = trusted.max_file_size;
            from_trusted.insert("max-file-size");
        }
    }

    if !c.exclude.is_empty() {
        clamped.push(Clamp {
            key: "exclude",
            note: format!(
                "{} excludes [{}]; under a trusted config only its excludes apply",
                at(&c, "exclude"),
                c.exclude.join(", ")
            ),
        });
    }
    c.exclude = trusted.exclude.clone();
    from_trusted.insert("exclude");

    if let Some(own) = c
        .argocd_version
        .filter(|v| Some(*v) != trusted.argocd_version)
    {
        clamped.push(Clamp {
            key: "argocd-version",
            note: format!(
                "{} sets {own}; under a trusted config only it or --argocd-version sets it",
                at(&c, "argocd-version")
            ),
        });
    }
    c.argocd_version = trusted.argocd_version;
    from_trusted.insert("argocd-version");

    // A baseline hides the findings it records: only the trusted config's is used.
    if let Some(own) = &c.baseline {
        let mine = c.dir().unwrap_or(Path::new("")).join(&own.written);
        let theirs = trusted
            .baseline
            .as_ref()
            .map(|t| trusted.dir().unwrap_or(Path::new("")).join(&t.written));
        if theirs.map(|t| crate::paths::normalize(&t)) != Some(crate::paths::normalize(&mine)) {
            clamped.push(Clamp {
                key: "baseline",
                note: format!(
                    "{} names `{}`; under a trusted config only its baseline applies",
                    at(&c, "baseline"),
                    own.written
                ),
            });
        }
    }
    c.baseline = None;
    from_trusted.insert("baseline");

    let mut urls = trusted.repo_urls.clone();
    urls.extend(
        c.repo_urls
            .iter()
            .filter(|u| !trusted.repo_urls.contains(u))
            .cloned(),
    );
    c.repo_urls = urls;

    // Rules and per-path are not merged into one set (the verdict asks both configs); these
    // notes say where the repository's would have been looser.
    for rule in rules::all() {
        let floor = trusted.global_here(rule.id, Some(rule.severity), rule.severity);
        let own = c.global_here(rule.id, floor, rule.severity);
        if own < floor {
            clamped.push(Clamp {
                key: "rules",
                note: format!(
                    "`{}` is {} in {}, kept at {} by {trusted_name}",
                    rule.id,
                    level_name(own),
                    at(&c, "rules"),
                    level_name(floor)
                ),
            });
        }
    }
    for p in &c.per_path {
        let lowered: Vec<String> = rules::all()
            .into_iter()
            .filter_map(|rule| {
                let floor = trusted.global_here(rule.id, Some(rule.severity), rule.severity)?;
                let own = if p.ignore.contains(rule.id) {
                    None
                } else {
                    *p.severity.get(rule.id)?
                };
                (own < Some(floor)).then(|| format!("`{}` {}", rule.id, level_name(own)))
            })
            .collect();
        if !lowered.is_empty() {
            clamped.push(Clamp {
                key: "per-path",
                note: format!(
                    "[{}] in {} sets {}, kept at the level of {trusted_name}",
                    p.globs.join(", "),
                    at(&c, "per-path"),
                    lowered.join(", ")
                ),
            });
        }
    }

    for p in &trusted.policies {
        c.add_policy(p);
    }
    c.clamped = clamped;
    c.from_trusted = from_trusted;
    c.trusted = Some(Box::new(trusted));
    c
}

/// A mistake in the config file, with the place it is at.
#[derive(Debug)]
pub struct ConfigError {
    pub path: PathBuf,
    pub text: String,
    pub span: std::ops::Range<usize>,
    pub message: String,
    pub help: Option<String>,
    /// The file's other mistakes, in the order they are written: a config is checked whole,
    /// so that one run shows everything to correct.
    pub more: Vec<ConfigError>,
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
pub const KEYS: [&str; 10] = [
    "argocd-version",
    "policies",
    "repo-urls",
    "fail-on",
    "rules",
    "exclude",
    "per-path",
    "max-file-size",
    "baseline",
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
                let found = crate::paths::normalize(&written.join(name));
                // Below a linked directory, `..` written after the link climbs from its
                // target, not from where the link sits: the written form is used only when it
                // names the same file.
                let same = found.canonicalize().ok() == dir.join(name).canonicalize().ok();
                return Some(if same { found } else { dir.join(name) });
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
    load_from_disk(path, false)
}

/// Reads the config of `--trusted-config`: its policies win over the repository's own
/// version of a policy of the same id.
pub fn load_trusted(path: &Path) -> Result<Config, Box<ConfigError>> {
    load_from_disk(path, true)
}

fn load_from_disk(path: &Path, trusted: bool) -> Result<Config, Box<ConfigError>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Box::new(ConfigError {
            path: path.to_path_buf(),
            text: String::new(),
            span: 0..0,
            message: format!("cannot read the config file: {e}"),
            help: None,
            more: Vec::new(),
        })
    })?;
    parse(
        path,
        text,
        crate::paths::dir_of(path),
        Source::Disk { trusted },
    )
}

/// Parses config text that is not a file on disk, named `name` (`REV:.gitops-lint.yaml`),
/// its `per-path` globs relative to `dir`, its policies read from `src`.
pub fn parse_named(
    name: &str,
    dir: PathBuf,
    text: String,
    src: Source<'_>,
) -> Result<Config, Box<ConfigError>> {
    let mut c = parse(Path::new(name), text, dir.clone(), src)?;
    c.label = Some(name.to_string());
    c.glob_dir = Some(dir);
    Ok(c)
}

/// Reads the config of the repository that holds `start`, if it has one; without one, the
/// policies of a `.gitops-lint/policies/` folder at the repository's root still apply.
pub fn load_for(start: &Path) -> Result<Config, Box<ConfigError>> {
    match find(start) {
        Some(path) => {
            // Found by its name in the tree, it may be a link: what it leads to is read only
            // inside the repository and outside its git data, or its errors would quote them.
            let dir = crate::paths::dir_of(&path);
            if !crate::policy::inside(&path, crate::policy::bound_of(&dir).as_deref()) {
                return Err(Box::new(ConfigError {
                    path: path.clone(),
                    text: String::new(),
                    span: 0..0,
                    message: "the config file leads outside the repository; it is not read".into(),
                    help: Some("keep the config in the repository, not behind a link".into()),
                    more: Vec::new(),
                }));
            }
            load(&path)
        }
        None => {
            let root = crate::repo::find_root(start, crate::repo::Markers::ConfigOrGit);
            let src = Source::Disk { trusted: false };
            let mut ceiling = crate::policy::Ceiling::new(src);
            let mut c = Config::default();
            for rule in crate::policy::load_folder(&root, src, &mut ceiling)? {
                c.add_policy(rule);
            }
            c.policies_cut = ceiling.cut;
            Ok(c)
        }
    }
}

/// Reads a file of settings (the config, a policy file) with every mistake kept, each at its
/// place, so that one run shows everything to correct.
pub(crate) struct Reader<'t> {
    pub(crate) path: &'t Path,
    pub(crate) text: &'t str,
    /// Mistakes found so far; reading goes on past each one.
    errors: std::cell::RefCell<Vec<ConfigError>>,
}

impl<'t> Reader<'t> {
    pub(crate) fn new(path: &'t Path, text: &'t str) -> Reader<'t> {
        Reader {
            path,
            text,
            errors: Default::default(),
        }
    }

    /// How many mistakes have been found so far.
    pub(crate) fn mistakes(&self) -> usize {
        self.errors.borrow().len()
    }

    /// The mistakes found, the first written first with the others after it.
    pub(crate) fn finish(self) -> Result<(), Box<ConfigError>> {
        let mut errors = self.errors.into_inner();
        if errors.is_empty() {
            return Ok(());
        }
        // Each file's mistakes in the order they are written, the config's first.
        errors.sort_by(|a, b| {
            (a.path != self.path, &a.path, a.span.start, a.span.end).cmp(&(
                b.path != self.path,
                &b.path,
                b.span.start,
                b.span.end,
            ))
        });
        let mut first = errors.remove(0);
        first.more = errors;
        Err(Box::new(first))
    }

    /// The YAML documents of the text, its syntax errors kept.
    pub(crate) fn documents(&self) -> Vec<yaml::Document> {
        let parsed = yaml::parse(0, self.text, ParseLimits::default());
        for p in &parsed.problems {
            self.keep::<()>(Err(self.error(
                p.span,
                p.message.clone(),
                Some(p.help.to_string()),
            )));
        }
        if parsed.problems.is_empty() {
            parsed.documents
        } else {
            Vec::new()
        }
    }
}

impl Reader<'_> {
    pub(crate) fn error(
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
            more: Vec::new(),
        })
    }

    /// The value of a check that passed; a failed one is kept for the report and gives `None`.
    /// An error that carries others (a policy file's, read whole) is kept as each of them.
    pub(crate) fn keep<T>(&self, checked: Result<T, Box<ConfigError>>) -> Option<T> {
        checked
            .map_err(|e| {
                let mut e = *e;
                let more = std::mem::take(&mut e.more);
                let mut errors = self.errors.borrow_mut();
                errors.push(e);
                errors.extend(more);
            })
            .ok()
    }

    /// Every unknown key of `map` is a mistake; `false` when `map` is not a mapping at all.
    pub(crate) fn keys(&self, map: &Node, allowed: &[&str], what: &str) -> bool {
        if !map.is_map() {
            self.keep::<()>(Err(self.error(
                map.span,
                format!("{what} must be a mapping"),
                None,
            )));
            return false;
        }
        for e in map.entries() {
            let key = e.key.as_str().unwrap_or_default();
            if !allowed.contains(&key) {
                let help = crate::text::did_you_mean(key, allowed.iter().copied())
                    .map(|s| format!("did you mean `{s}`?"))
                    .or_else(|| Some(format!("known keys: {}", allowed.join(", "))));
                self.keep::<()>(Err(self.error(
                    e.key.span,
                    format!("unknown key `{key}` in {what}"),
                    help,
                )));
            }
        }
        true
    }

    pub(crate) fn string<'n>(
        &self,
        node: &'n Node,
        what: &str,
    ) -> Result<&'n str, Box<ConfigError>> {
        node.as_str()
            .filter(|_| !node.is_null())
            .ok_or_else(|| self.error(node.span, format!("{what} must be a string"), None))
    }

    pub(crate) fn list<'n>(
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

    /// A rule id, a category name or `all`, as the set of rule ids it stands for.
    fn selector(&self, word: &str, span: Span) -> Result<Vec<&'static str>, Box<ConfigError>> {
        rules::select(word).map_err(|u| self.error(span, u.message(), Some(u.help())))
    }

    fn selectors(
        &self,
        node: &Node,
        what: &str,
    ) -> Result<BTreeSet<&'static str>, Box<ConfigError>> {
        let mut out = BTreeSet::new();
        for (word, span) in self.list(node, what)? {
            out.extend(self.keep(self.selector(word, span)).unwrap_or_default());
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
            let Some(ids) = self.keep(
                self.string(&e.key, "a rule id")
                    .and_then(|word| self.selector(word, e.key.span)),
            ) else {
                continue;
            };
            let Some(level) = self.keep(self.level(&e.value)) else {
                continue;
            };
            for id in ids {
                out.insert(id, level);
            }
        }
        Ok(out)
    }

    pub(crate) fn level(&self, value: &Node) -> Result<Option<Severity>, Box<ConfigError>> {
        Ok(match self.string(value, "a severity")? {
            "error" => Some(Severity::Error),
            "warning" => Some(Severity::Warning),
            "info" => Some(Severity::Info),
            "off" => None,
            other => {
                let help = crate::text::did_you_mean(other, SEVERITIES)
                    .map(|s| format!("did you mean `{s}`?"))
                    .or_else(|| Some("use error, warning, info or off".into()));
                return Err(self.error(value.span, format!("`{other}` is not a severity"), help));
            }
        })
    }

    pub(crate) fn globs(
        &self,
        node: &Node,
        what: &str,
    ) -> Result<(Vec<String>, GlobSet), Box<ConfigError>> {
        let mut builder = GlobSetBuilder::new();
        let mut raw = Vec::new();
        for (pattern, span) in self.list(node, what)? {
            let Some(glob) = self.keep(Glob::new(pattern).map_err(|e| {
                self.error(
                    span,
                    format!("`{pattern}` is not a valid glob: {}", e.kind()),
                    None,
                )
            })) else {
                continue;
            };
            builder.add(glob);
            raw.push(pattern.to_string());
        }
        let set = builder
            .build()
            .map_err(|e| self.error(node.span, e.to_string(), None))?;
        Ok((raw, set))
    }
}

/// Parses a config whose `policies` and policy folder are relative to `dir`.
fn parse(
    path: &Path,
    text: String,
    dir: PathBuf,
    src: Source<'_>,
) -> Result<Config, Box<ConfigError>> {
    let r = Reader::new(path, &text);
    let mut config = Config {
        path: Some(path.to_path_buf()),
        ..Config::default()
    };
    let docs = r.documents();
    let root = docs.first().map(|d| &d.root).filter(|n| !n.is_null());
    // Policies first: the rest of the config may name them.
    let mut ceiling = crate::policy::Ceiling::new(src);
    if let Some(list) = root.filter(|n| n.is_map()).and_then(|n| n.get("policies")) {
        if let Some(patterns) = r.keep(r.list(list, "policies")) {
            for rule in crate::policy::load_patterns(&r, &dir, &patterns, src, &mut ceiling) {
                config.add_policy(rule);
            }
        }
    }
    if let Some(found) = r.keep(crate::policy::load_folder(&dir, src, &mut ceiling)) {
        for rule in found {
            config.add_policy(rule);
        }
    }
    config.policies_cut = ceiling.cut;
    if let Some(root) = root {
        read(&r, root, &mut config);
    }
    r.finish().map(|()| config)
}

/// Reads the config's keys into `config`, each on its own: a mistake in one is kept in `r`
/// and the others are still read.
fn read(r: &Reader<'_>, root: &Node, config: &mut Config) {
    if !r.keys(root, &KEYS, "the config file") {
        return;
    }
    let text = r.text;
    let path = r.path;
    let line = |span: Span| text[..span.start as usize].matches('\n').count() as u32 + 1;
    for e in root.entries() {
        let Some(key) = KEYS.iter().copied().find(|k| Some(*k) == e.key.as_str()) else {
            continue;
        };
        config.origins.insert(key, line(e.key.span));
        let v = &e.value;
        match key {
            "argocd-version" => {
                let s = v.as_str().unwrap_or_default();
                config.argocd_version =
                    r.keep(Version::parse(s).map_err(|m| r.error(v.span, m, None)));
            }
            "repo-urls" => {
                if let Some(urls) = r.keep(r.list(v, "repo-urls")) {
                    config.repo_urls = urls.into_iter().map(|(u, _)| u.to_string()).collect();
                }
            }
            "fail-on" => {
                config.fail_on = r.keep(r.string(v, "fail-on").and_then(|s| {
                    <FailOn as clap::ValueEnum>::from_str(s, false).map_err(|_| {
                        let help =
                            crate::text::did_you_mean(s, ["error", "warning", "info", "never"])
                                .map(|s| format!("did you mean `{s}`?"));
                        r.error(
                            v.span,
                            format!("`{s}` is not error, warning, info or never"),
                            help,
                        )
                    })
                }));
            }
            "rules" => {
                if !r.keys(v, &RULE_KEYS, "rules") {
                    continue;
                }
                if let Some(s) = v.get("select") {
                    config.select = r.keep(r.selectors(s, "rules.select"));
                }
                if let Some(i) = v.get("ignore") {
                    config.ignore = r.keep(r.selectors(i, "rules.ignore")).unwrap_or_default();
                }
                if let Some(s) = v.get("severity") {
                    config.severity = r.keep(r.severities(s)).unwrap_or_default();
                }
            }
            "exclude" => {
                config.exclude = r.keep(r.globs(v, "exclude")).unwrap_or_default().0;
            }
            "per-path" => {
                for item in r.keep(r.list_nodes(v, "per-path")).unwrap_or_default() {
                    if let Some(entry) = per_path(r, item) {
                        config.per_path.push(entry);
                    }
                }
            }
            "max-file-size" => {
                config.max_file_size = r.keep(
                    v.as_str()
                        .and_then(|s| s.parse::<u64>().ok())
                        .ok_or_else(|| {
                            r.error(v.span, "max-file-size must be a number of bytes", None)
                        }),
                );
            }
            "baseline" => {
                let written = r.string(v, "baseline").and_then(|w| {
                    if w.trim().is_empty() {
                        Err(r.error(v.span, "baseline must be the path of a baseline file", None))
                    } else {
                        Ok(w)
                    }
                });
                config.baseline = r.keep(written).map(|written| BaselineKey {
                    written: written.to_string(),
                    file: path.to_path_buf(),
                    text: text.into(),
                    span: v.span.range(),
                });
            }
            _ => {}
        }
    }
}

/// One `per-path` entry, or `None` when it has mistakes (kept in `r`).
fn per_path(r: &Reader<'_>, item: &Node) -> Option<PerPath> {
    let before = r.errors.borrow().len();
    if !r.keys(item, &PER_PATH_KEYS, "a per-path entry") {
        return None;
    }
    let Some(paths) = item.get("paths") else {
        r.keep::<()>(Err(r.error(
            item.span,
            "a per-path entry needs `paths`",
            None,
        )));
        return None;
    };
    let globs = r.keep(r.globs(paths, "per-path paths"));
    let ignore = match item.get("ignore") {
        Some(i) => r.keep(r.selectors(i, "per-path ignore")),
        None => Some(BTreeSet::new()),
    };
    let severity = match item.get("severity") {
        Some(s) => r.keep(r.severities(s)),
        None => Some(BTreeMap::new()),
    };
    let (globs, matcher) = globs?;
    (r.errors.borrow().len() == before).then_some(PerPath {
        globs,
        matcher,
        ignore: ignore?,
        severity: severity?,
    })
}

impl Reader<'_> {
    pub(crate) fn list_nodes<'n>(
        &self,
        node: &'n Node,
        what: &str,
    ) -> Result<&'n [Node], Box<ConfigError>> {
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
    // A policy of the repository's own is named by its id too.
    let name = json!({ "anyOf": [
        { "enum": names },
        { "type": "string", "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$" }
    ]});
    let selector = json!({ "type": "array", "items": name });
    let severity = json!({
        "type": "object",
        "propertyNames": name,
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
            "policies": {
                "description": "Policy files of the repository's own (files, folders or globs, relative to this file); see docs/policies.md.",
                "type": "array",
                "items": { "type": "string" }
            },
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
            },
            "baseline": {
                "description": "A baseline file (as --write-baseline writes it), relative to this file: the findings it records are not reported. Used when --baseline is not given; it must exist.",
                "type": "string",
                "minLength": 1
            }
        }
    })
}
