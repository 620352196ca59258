//! Rules: each one a file with its metadata and one check function, registered below.

pub mod app;
pub mod ignored;
pub mod project;
pub mod sync_options;
pub mod sync_windows;

pub(crate) mod access;
pub(crate) mod admission;
pub mod custom;
mod fleet;
mod ignore_differences;
pub mod schema;
mod secrets;
mod sync_policy;

use crate::context::RepoContext;
use crate::finding::{Finding, Severity};
use crate::fix::Applicability;
use crate::model::Object;
use crate::render::Graph;
use crate::source::SourceDb;
use crate::yaml::{Node, Span};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Category {
    SyncPolicy,
    IgnoreDifferences,
    Schema,
    Access,
    Secrets,
    Fleet,
    Admission,
    /// The repository's own policies, unless they name a category of the built-in ones.
    Custom,
}

impl Category {
    pub const ALL: [Category; 8] = [
        Category::SyncPolicy,
        Category::IgnoreDifferences,
        Category::Fleet,
        Category::Schema,
        Category::Access,
        Category::Secrets,
        Category::Admission,
        Category::Custom,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Category::SyncPolicy => "sync-policy",
            Category::IgnoreDifferences => "ignore-differences",
            Category::Schema => "schema",
            Category::Access => "access",
            Category::Secrets => "secrets",
            Category::Fleet => "fleet",
            Category::Admission => "admission",
            Category::Custom => "custom",
        }
    }
}

pub type CheckFn = fn(&Cx, &Object, &mut Sink);
pub type GraphFn = fn(&Cx, &Graph, &mut Sink);

/// What a rule looks at.
#[derive(Clone, Copy)]
pub enum Check {
    /// Findings come from the parse or render stage.
    Parse,
    /// One object at a time, rendered objects included.
    Object(CheckFn),
    /// The whole object graph: parents, children, what each Application renders.
    Graph(GraphFn),
    /// A policy of the repository's own, over every object it matches in turn.
    Policy(&'static custom::Policy),
}

pub struct Rule {
    pub id: &'static str,
    pub category: Category,
    pub severity: Severity,
    /// When the check picks the severity case by case: each severity it reports with and
    /// when, the default first, as the doc's table shows them.
    pub severities: Option<&'static str>,
    /// Whether its findings come with an automatic fix, and how safe it is.
    pub fix: FixAvailability,
    /// One line for `gitops-lint rules` and the README table.
    pub summary: &'static str,
    /// The Markdown doc from `rules/<id>.md`.
    pub doc: &'static str,
    /// Where the doc is published, when not in this project's `rules/` folder (a policy's
    /// own `doc` link).
    pub uri: Option<&'static str>,
    pub check: Check,
}

impl Rule {
    /// The severity cell of the rule's doc table: the default, or every severity it reports.
    pub fn severity_text(&self) -> &'static str {
        self.severities.unwrap_or(self.severity.as_str())
    }
}

// Ids are unique (the registry is checked), so a rule is known by its id.
impl PartialEq for Rule {
    fn eq(&self, other: &Rule) -> bool {
        self.id == other.id
    }
}

impl Eq for Rule {}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id)
    }
}

/// What `--fix` can do for a rule's findings: nothing, apply a fix that only spells out what
/// the file already says, or (with `--unsafe-fixes`) one that changes behaviour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FixAvailability {
    None,
    Safe,
    Unsafe,
}

impl FixAvailability {
    pub fn as_str(self) -> &'static str {
        match self {
            FixAvailability::None => "none",
            FixAvailability::Safe => "safe",
            FixAvailability::Unsafe => "unsafe",
        }
    }

    /// Whether a rule declared with this availability may attach a fix of `applicability`.
    /// `Safe` promises that `--fix` alone fixes some findings; where the cure is a reading of
    /// intent the same rule offers an unsafe fix instead. `Unsafe` promises that `--fix` alone
    /// changes nothing.
    pub fn allows(self, applicability: Applicability) -> bool {
        match self {
            FixAvailability::None => false,
            FixAvailability::Safe => true,
            FixAvailability::Unsafe => applicability == Applicability::Unsafe,
        }
    }
}

/// An Argo CD release, as given with `--argocd-version`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
}

impl Version {
    /// The oldest release we assume when none is given: the oldest minor Argo CD still supports.
    pub const OLDEST_SUPPORTED: Version = Version { major: 3, minor: 3 };

    pub const fn new(major: u32, minor: u32) -> Version {
        Version { major, minor }
    }

    pub fn parse(s: &str) -> Result<Version, String> {
        let t = s.trim().trim_start_matches('v');
        let mut parts = t.split('.');
        let num = |p: Option<&str>| p.and_then(|p| p.parse::<u32>().ok());
        match (num(parts.next()), num(parts.next())) {
            (Some(major), Some(minor)) => Ok(Version { major, minor }),
            _ => Err(format!(
                "`{s}` is not an Argo CD version like 3.1 or v2.14.3"
            )),
        }
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// What every rule may consult besides the object itself.
pub struct Cx<'a> {
    /// The Argo CD version the repository deploys to, when known.
    pub version: Option<Version>,
    pub repo: &'a RepoContext,
    pub sources: &'a SourceDb,
    pub graph: &'a Graph,
    /// Whether a rule runs in this run (the repository's settings decide): a rule that leaves
    /// something to another asks whether that one will speak.
    pub enabled: &'a (dyn Fn(&str) -> bool + Sync),
}

impl<'a> Cx<'a> {
    pub fn runs(&self, rule: &str) -> bool {
        (self.enabled)(rule)
    }

    /// The given version, or the oldest supported one: the cautious reading.
    pub fn version_or_oldest(&self) -> Version {
        self.version.unwrap_or(Version::OLDEST_SUPPORTED)
    }

    /// Builds fixes on the files these objects came from.
    pub fn editor(&self) -> crate::fix::Editor<'a> {
        crate::fix::Editor::new(self.sources)
    }

    /// The span of `needle` inside a scalar node's source text, or the whole node when the
    /// text cannot be found verbatim (escapes, folding).
    pub fn span_in(&self, node: &Node, needle: &str, from: usize) -> Span {
        let text = &self.sources.get(node.span.file).text;
        let range = node.span.range();
        if let Some(src) = text.get(range.clone()) {
            if !needle.is_empty() {
                if let Some(i) = src.get(from.min(src.len())..).and_then(|s| s.find(needle)) {
                    let start = range.start + from.min(src.len()) + i;
                    return Span::new(node.span.file, start, start + needle.len());
                }
            }
        }
        node.span
    }
}

/// Collects one rule's findings on one object.
pub struct Sink {
    rule: &'static Rule,
    pub findings: Vec<Finding>,
}

impl Sink {
    pub fn new(rule: &'static Rule) -> Sink {
        Sink {
            rule,
            findings: Vec::new(),
        }
    }

    pub fn report(&mut self, span: Span, message: impl Into<String>) -> &mut Finding {
        self.findings.push(Finding::new(self.rule, span, message));
        self.findings.last_mut().expect("just pushed")
    }

    /// The findings, once the check is done.
    pub fn finish(self) -> Vec<Finding> {
        // `--fix`, `rules` and the docs promise what the declaration says; a check that
        // attaches other fixes breaks that promise silently.
        debug_assert!(
            self.findings.iter().all(|f| f
                .fix
                .as_ref()
                .is_none_or(|x| self.rule.fix.allows(x.applicability))),
            "{} is declared with fix `{}` but made a fix it does not allow",
            self.rule.id,
            self.rule.fix.as_str()
        );
        self.findings
    }
}

macro_rules! registry {
    ($($category:ident :: $rule:ident),* $(,)?) => {
        /// Every rule, in the order `gitops-lint rules` lists them.
        pub static RULES: &[&Rule] = &[$(&$category::$rule::RULE),*];
    };
}

registry! {
    sync_policy::self_heal_ignores_not_respected,
    sync_policy::half_enforced_sync,
    sync_policy::prune_disabled,
    sync_policy::prune_without_prune_last,
    sync_policy::self_heal_disabled,
    sync_policy::automated_enabled_ignored,
    sync_policy::automated_misuse,
    sync_policy::allow_empty,
    sync_policy::sync_option_invalid,
    sync_policy::sync_option_unsupported,
    sync_policy::compare_option_invalid,
    sync_policy::risky_sync_option,
    sync_policy::retry_unbounded,
    sync_policy::retry_without_limit,
    sync_policy::managed_namespace_metadata_ignored,
    sync_policy::sync_window_no_break_glass,
    sync_policy::sync_window_invalid,
    sync_policy::floating_target_revision,
    sync_policy::sync_wave_invalid,
    sync_policy::hook_invalid,
    ignore_differences::ignore_differences_wildcard,
    ignore_differences::ignore_differences_never_matches,
    ignore_differences::ignore_replicas_without_managers,
    ignore_differences::ignore_differences_invalid_pointer,
    ignore_differences::ignore_differences_invalid_jq,
    fleet::hpa_replicas_conflict,
    fleet::job_ttl_recreated,
    fleet::parent_sync_disabled,
    fleet::child_break_glass_reverted,
    fleet::child_application_namespace_ignored,
    fleet::child_sync_wave_no_health,
    fleet::manual_sync_not_enforced,
    fleet::cascade_delete_risk,
    fleet::operator_drift_not_ignored,
    fleet::duplicate_application_name,
    fleet::shared_resource,
    schema::application_shape,
    schema::unknown_field,
    schema::ambiguous_boolean,
    schema::invalid_yaml,
    schema::duplicate_key,
    schema::application_source_missing,
    schema::helm_values_missing,
    schema::ref_source_unused,
    schema::kustomize_error,
    schema::helm_error,
    schema::helm_render_limit,
    schema::helm_unsupported,
    schema::appset_template_error,
    schema::appset_template_patch_go_syntax,
    schema::appset_missingkey_not_error,
    schema::appset_applications_sync_invalid,
    schema::suppression_without_reason,
    schema::unused_suppression,
    access::default_project,
    access::project_too_open,
    access::project_missing,
    access::project_scope_violation,
    access::rbac_override_broad,
    access::rbac_default_admin,
    access::anonymous_access_enabled,
    secrets::secret_in_git,
    secrets::external_secret_deprecated_api,
    secrets::external_secret_never_refreshes,
    secrets::external_secret_policy_conflict,
    secrets::secret_store_static_credentials,
    admission::admission_policy_violation,
}

/// The policies of the repository's own that configs have loaded in this process, after
/// the built-in rules, each with whether a trusted config loaded it: a rule once loaded lives
/// as long as the process (findings and reports hold it by reference, as they hold the
/// built-in ones).
/// The policies' rules in the order registered, each with whether a trusted config loaded
/// it, and where each id is in that list: loading and looking up stay linear in their number.
#[derive(Default)]
struct Custom {
    list: Vec<(&'static Rule, bool)>,
    at: std::collections::HashMap<&'static str, usize>,
    /// The first id of each spelling [`crate::text::folded_name`] gives: what a mistyped
    /// word is told it may mean.
    folded: std::collections::HashMap<String, &'static str>,
}

static CUSTOM: std::sync::LazyLock<std::sync::RwLock<Custom>> =
    std::sync::LazyLock::new(Default::default);

fn custom() -> Vec<&'static Rule> {
    CUSTOM
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .list
        .iter()
        .map(|(r, _)| *r)
        .collect()
}

/// Every rule: the built-in ones in registry order, then the loaded policies in the order
/// they were loaded.
pub fn all() -> Vec<&'static Rule> {
    RULES.iter().copied().chain(custom()).collect()
}

/// Adds a policy's rule. The same policy loaded again (one config read for two paths) is
/// the rule already there. Between a trusted config's policy and the repository's own of the
/// same id, the trusted one stands (a change under review cannot rewrite it); any other rule
/// of its id is an `Err` naming that one.
pub fn register(
    rule: Rule,
    same: impl Fn(&Rule) -> bool,
    trusted: bool,
) -> Result<&'static Rule, &'static Rule> {
    if let Some(r) = RULES.iter().copied().find(|r| r.id == rule.id) {
        return Err(r);
    }
    let mut custom = CUSTOM.write().unwrap_or_else(|e| e.into_inner());
    if let Some(&i) = custom.at.get(rule.id) {
        let (r, was_trusted) = custom.list[i];
        return match (same(r), was_trusted, trusted) {
            (true, ..) | (false, true, false) => Ok(r),
            (false, false, true) => {
                let leaked: &'static Rule = Box::leak(Box::new(rule));
                custom.list[i] = (leaked, true);
                custom.at.insert(leaked.id, i);
                Ok(leaked)
            }
            _ => Err(r),
        };
    }
    let leaked: &'static Rule = Box::leak(Box::new(rule));
    let i = custom.list.len();
    custom.list.push((leaked, trusted));
    custom.at.insert(leaked.id, i);
    custom
        .folded
        .entry(crate::text::folded_name(leaked.id))
        .or_insert(leaked.id);
    Ok(leaked)
}

pub fn find(id: &str) -> Option<&'static Rule> {
    RULES.iter().copied().find(|r| r.id == id).or_else(|| {
        let custom = CUSTOM.read().unwrap_or_else(|e| e.into_inner());
        custom.at.get(id).map(|&i| custom.list[i].0)
    })
}

/// The rules a word names: a rule id, a category, or `all`. The config file, the suppressions
/// in the manifests and the command line all read rule names through this one function, so
/// that a name means the same everywhere.
pub fn select(word: &str) -> Result<Vec<&'static str>, Unknown> {
    select_shared(word).map(|ids| ids.to_vec())
}

/// [`select`], sorted, and shared between the words that name the same rules: a
/// repository can write `ignore[all]` in a hundred thousand comments, and its config can
/// load thousands of policies. An id is looked up, not searched for; what `all` and each
/// category stand for is listed once per set of rules; an unknown word is compared with the
/// built-in rules and categories, and with policies only as spelt the same but for case, `-`
/// and `_`, so that it costs the same however many policies there are.
pub fn select_shared(word: &str) -> Result<std::sync::Arc<[&'static str]>, Unknown> {
    use std::sync::{Arc, Mutex};
    type Lists = std::collections::HashMap<(String, usize), Arc<[&'static str]>>;
    static LISTS: std::sync::LazyLock<Mutex<Lists>> = std::sync::LazyLock::new(Default::default);
    if let Some(rule) = find(word) {
        return Ok(Arc::from([rule.id]));
    }
    if word == "all" || Category::ALL.iter().any(|c| c.as_str() == word) {
        // Policies are only ever added: their number tells one set of rules from another.
        let count = CUSTOM.read().unwrap_or_else(|e| e.into_inner()).list.len();
        let mut lists = LISTS.lock().unwrap_or_else(|e| e.into_inner());
        let ids = lists.entry((word.to_string(), count)).or_insert_with(|| {
            let mut ids = select_in(word, &all()).unwrap_or_default();
            ids.sort_unstable();
            Arc::from(ids)
        });
        return Ok(Arc::clone(ids));
    }
    let names = RULES
        .iter()
        .map(|r| r.id)
        .chain(Category::ALL.iter().map(|c| c.as_str()));
    let nearest = crate::text::did_you_mean(word, names).or_else(|| {
        let custom = CUSTOM.read().unwrap_or_else(|e| e.into_inner());
        custom.folded.get(&crate::text::folded_name(word)).copied()
    });
    Err(Unknown {
        word: word.to_string(),
        nearest,
    })
}

/// [`select`] among `rules` only (a run's: the built-in ones and its config's policies).
pub fn select_in(word: &str, rules: &[&'static Rule]) -> Result<Vec<&'static str>, Unknown> {
    if word == "all" {
        return Ok(rules.iter().map(|r| r.id).collect());
    }
    if let Some(c) = Category::ALL.iter().find(|c| c.as_str() == word) {
        return Ok(rules
            .iter()
            .filter(|r| r.category == *c)
            .map(|r| r.id)
            .collect());
    }
    if let Some(r) = rules.iter().find(|r| r.id == word) {
        return Ok(vec![r.id]);
    }
    let names = rules
        .iter()
        .map(|r| r.id)
        .chain(Category::ALL.iter().map(|c| c.as_str()));
    Err(Unknown {
        word: word.to_string(),
        nearest: crate::text::did_you_mean(word, names),
    })
}

/// A word that names no rule: what [`select`] says about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unknown {
    pub word: String,
    /// The rule id or category closest to it, if one is close.
    pub nearest: Option<&'static str>,
}

impl Unknown {
    pub fn message(&self) -> String {
        format!("unknown rule or category `{}`", self.word)
    }

    /// The nearest name, or where the names are listed.
    pub fn help(&self) -> String {
        match self.nearest {
            Some(s) => format!("did you mean `{s}`?"),
            None => "`gitops-lint rules` lists rule ids and categories".into(),
        }
    }
}

impl std::fmt::Display for Unknown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}; {}", self.message(), self.help())
    }
}

impl std::error::Error for Unknown {}

/// Declares a rule's metadata next to its check; the doc is embedded from `rules/<id>.md`.
/// `severities` is for a rule whose check sets the severity case by case: each severity and
/// when it applies, the default first (`"error (below 3.1) / warning (otherwise)"`).
macro_rules! rule {
    (id: $id:literal, category: $cat:ident, severity: $sev:ident, $(severities: $sevs:literal,)? fix: $fix:ident, summary: $summary:literal, check: $check:expr $(,)?) => {
        pub static RULE: $crate::rules::Rule = $crate::rules::Rule {
            id: $id,
            category: $crate::rules::Category::$cat,
            severity: $crate::finding::Severity::$sev,
            severities: $crate::rules::rule!(@some $($sevs)?),
            fix: $crate::rules::FixAvailability::$fix,
            summary: $summary,
            doc: include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/rules/", $id, ".md")),
            uri: None,
            check: {
                #[allow(unused_imports)]
                use $crate::rules::Check;
                $check
            },
        };
    };
    (@some) => {
        None
    };
    (@some $sevs:literal) => {
        Some($sevs)
    };
}
pub(crate) use rule;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_names_a_rule_a_category_or_all() {
        assert_eq!(select("allow-empty"), Ok(vec!["allow-empty"]));
        let secrets = select("secrets").unwrap();
        assert!(secrets.contains(&"secret-in-git") && !secrets.contains(&"allow-empty"));
        let every = select("all").unwrap();
        assert!(RULES.iter().all(|r| every.contains(&r.id)));
        let typo = select("Secrets-").unwrap_err();
        assert_eq!(typo.message(), "unknown rule or category `Secrets-`");
        assert_eq!(typo.help(), "did you mean `secrets`?");
        assert_eq!(
            select("*").unwrap_err().help(),
            "`gitops-lint rules` lists rule ids and categories"
        );
    }

    #[test]
    fn declarations_are_consistent() {
        let mut ids: Vec<&str> = RULES.iter().map(|r| r.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), RULES.len(), "rule ids are unique");
        for r in RULES {
            if let Some(s) = r.severities {
                assert!(
                    s.starts_with(&format!("{} (", r.severity)) && s.contains(" / "),
                    "{}: `severities` names the default first, then the others",
                    r.id
                );
            }
        }
    }
}
