//! A view of an Application spec: an Application's `spec`, or an ApplicationSet's
//! `spec.template.spec`. Every rule about Applications reads it through here, so both kinds
//! are covered by one check.

use super::sync_options::{annotation_uses, Level, Use};
use super::{Cx, Version};
use crate::model::Object;
use crate::yaml::typing::{self, as_bool};
use crate::yaml::{Node, Span};

/// A three-valued answer: templated or malformed values are `Unknown` and never guessed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tri {
    Yes,
    No,
    Unknown,
}

impl Tri {
    pub fn is_yes(self) -> bool {
        self == Tri::Yes
    }
    pub fn is_no(self) -> bool {
        self == Tri::No
    }
}

pub struct App<'a> {
    pub obj: &'a Object,
    pub spec: &'a Node,
    /// An ApplicationSet template rather than an Application.
    pub template: bool,
    /// Not the whole Application: a spec without any source, or a template completed by
    /// `templatePatch`. Rules about what is absent skip partial apps.
    pub partial: bool,
}

pub fn app<'a>(_cx: &Cx, obj: &'a Object) -> Option<App<'a>> {
    let (spec, template) = if obj.is_argocd("Application") {
        (obj.spec()?, false)
    } else if obj.is_argocd("ApplicationSet") {
        (obj.root.path(&["spec", "template", "spec"])?, true)
    } else {
        return None;
    };
    if !spec.is_map() {
        return None;
    }
    let no_source = spec.get("source").is_none() && spec.get("sources").is_none();
    let patched = template && obj.root.path(&["spec", "templatePatch"]).is_some();
    Some(App {
        obj,
        spec,
        template,
        partial: no_source || patched,
    })
}

fn tri_bool(node: Option<&Node>) -> Tri {
    match node {
        None => Tri::No,
        Some(n) if n.is_null() => Tri::No,
        Some(n) => match n.as_scalar().and_then(as_bool) {
            Some(true) => Tri::Yes,
            Some(false) => Tri::No,
            None => Tri::Unknown,
        },
    }
}

impl<'a> App<'a> {
    pub fn sync_policy(&self) -> Option<&'a Node> {
        self.spec.get("syncPolicy").filter(|n| !n.is_null())
    }

    /// `syncPolicy.automated` when it is a mapping.
    pub fn automated(&self) -> Option<&'a Node> {
        self.sync_policy()?.get("automated").filter(|n| n.is_map())
    }

    /// Whether Argo CD auto-syncs this app. `enabled: false` turns it off only where Argo CD
    /// knows the field (3.1+); older API servers prune it and keep auto-sync on.
    pub fn auto_sync(&self, cx: &Cx) -> Tri {
        let Some(policy) = self.spec.get("syncPolicy") else {
            return Tri::No;
        };
        if policy.is_null() {
            return Tri::No;
        }
        if !policy.is_map() {
            return Tri::Unknown;
        }
        let Some(automated) = policy.get("automated") else {
            return Tri::No;
        };
        if automated.is_null() {
            return Tri::No;
        }
        if !automated.is_map() {
            return Tri::Unknown;
        }
        match automated.get("enabled") {
            None => Tri::Yes,
            Some(n) if n.is_null() => Tri::Yes,
            Some(n) => match n.as_scalar().and_then(as_bool) {
                Some(true) => Tri::Yes,
                Some(false) if cx.version.is_some_and(|v| v < Version::new(3, 1)) => Tri::Yes,
                Some(false) => Tri::No,
                None => Tri::Unknown,
            },
        }
    }

    /// A flag under `automated` (`prune`, `selfHeal`, `allowEmpty`); absent means false.
    pub fn flag(&self, key: &str) -> Tri {
        match self.automated() {
            Some(a) => tri_bool(a.get(key)),
            None => Tri::No,
        }
    }

    /// The `syncOptions` node, when it is a list.
    pub fn sync_options_node(&self) -> Option<&'a Node> {
        self.sync_policy()?
            .get("syncOptions")
            .filter(|n| n.is_seq())
    }

    /// Whether `syncOptions` may hold `option` exactly: `Yes`, `No`, or `Unknown` when an item
    /// is templated.
    pub fn has_option(&self, option: &str) -> Tri {
        let Some(policy) = self.sync_policy() else {
            return Tri::No;
        };
        let Some(list) = policy.get("syncOptions") else {
            return Tri::No;
        };
        if list.is_null() {
            return Tri::No;
        }
        if !list.is_seq() {
            return Tri::Unknown;
        }
        let mut unknown = false;
        for item in list.items() {
            match item.as_str() {
                Some(s) if s == option => return Tri::Yes,
                Some(s) if typing::is_template(s) => unknown = true,
                _ => {}
            }
        }
        if unknown {
            Tri::Unknown
        } else {
            Tri::No
        }
    }

    /// Where to add a sync option: the `syncOptions` list, else `syncPolicy`, else `spec`.
    pub fn options_anchor(&self) -> Span {
        if let Some(list) = self.sync_policy().and_then(|p| p.entry("syncOptions")) {
            return list.key.span;
        }
        if let Some(policy) = self.spec.entry("syncPolicy") {
            return policy.key.span;
        }
        self.spec.span
    }

    /// Where a flag under `automated` is written, or the `automated` key when it is absent.
    pub fn flag_anchor(&self, key: &str) -> Option<Span> {
        let automated = self.automated()?;
        Some(match automated.entry(key) {
            Some(e) => e.value.span,
            None => self.automated_key().unwrap_or(automated.span),
        })
    }

    /// The `automated` key, for labelling the auto-sync decision.
    pub fn automated_key(&self) -> Option<Span> {
        self.sync_policy()?.entry("automated").map(|e| e.key.span)
    }

    /// The edit that adds `option` to `syncPolicy.syncOptions`, creating the list when it
    /// is missing or empty.
    pub fn add_option(&self, cx: &Cx, option: &str) -> Option<crate::fix::Edit> {
        let ed = cx.editor();
        let policy = self.sync_policy().filter(|p| p.is_map())?;
        // A misspelt copy is respelt by sync-option-invalid's fix; adding another would
        // leave two.
        // An explicit `PruneLast=false` is a choice to respect, not a slip; a misspelt copy is
        // respelt by sync-option-invalid's fix. Adding another item would contradict either.
        let name = option.split('=').next().unwrap_or(option);
        let written = self.sync_options_node().is_some_and(|l| {
            l.items().iter().filter_map(Node::as_str).any(|t| {
                use super::sync_options::{parse, Parsed};
                match parse(t) {
                    Parsed::NearMiss(c) => c.split('=').next() == Some(name),
                    Parsed::Exact(o, _) => o.name == name,
                    Parsed::Unknown => false,
                }
            })
        });
        if written {
            return None;
        }
        match policy.entry("syncOptions") {
            Some(e) if e.value.is_seq() => ed.append_item(&e.value, option),
            Some(e) if e.value.is_null() => ed.fill_null(&e.key, &e.value, &[option]),
            Some(_) => None,
            None => ed.insert_entry(policy, "syncOptions", crate::fix::NewValue::List(&[option])),
        }
    }

    /// The edit that sets flags under `automated` to `true`, whether they are written false
    /// or missing.
    pub fn set_flags(&self, cx: &Cx, flags: &[&str]) -> Option<Vec<crate::fix::Edit>> {
        let ed = cx.editor();
        let automated = self.automated()?;
        // A flag written beside `automated` is moved in by automated-misuse's fix, comment and
        // all; setting it here as well would leave the stray one behind.
        let policy = self.sync_policy()?;
        if flags.iter().any(|f| policy.get(f).is_some()) {
            return None;
        }
        let mut edits = Vec::new();
        let mut missing = Vec::new();
        for flag in flags {
            match automated.get(flag) {
                Some(v) => edits.push(ed.replace_raw(v, "true")?),
                None => missing.push((*flag, crate::fix::NewValue::Raw("true"))),
            }
        }
        if !missing.is_empty() {
            edits.push(ed.insert_entries(automated, &missing)?);
        }
        Some(edits)
    }

    /// `spec.ignoreDifferences` items.
    pub fn ignore_differences(&self) -> &'a [Node] {
        self.spec
            .get("ignoreDifferences")
            .map(Node::items)
            .unwrap_or(&[])
    }

    pub fn kind_name(&self) -> &'static str {
        if self.template {
            "ApplicationSet template"
        } else {
            "Application"
        }
    }
}

impl App<'_> {
    /// Whether an `ignoreDifferences` entry covers one of `pointers` (or the jq path written
    /// the same way) on objects of this group, kind and name. Group and kind are globs; an
    /// omitted group means the core group.
    pub fn ignores(&self, group: &str, kind: &str, name: Option<&str>, pointers: &[&str]) -> bool {
        self.ignore_differences().iter().any(|e| {
            let g = e.str_at("group").unwrap_or("");
            let k = e.str_at("kind").unwrap_or("");
            let n = e.str_at("name");
            if !crate::glob::gobwas(g, group, None) || !crate::glob::gobwas(k, kind, None) {
                return false;
            }
            if n.is_some_and(|n| Some(n) != name) {
                return false;
            }
            covers(e, pointers)
        })
    }
}

/// Whether an ignore entry (`jsonPointers`, `jqPathExpressions`) names one of `pointers`
/// (RFC 6901 form; the jq form `.a.b` is accepted too).
pub fn covers(entry: &Node, pointers: &[&str]) -> bool {
    let listed = |key| {
        entry
            .get(key)
            .map(Node::items)
            .unwrap_or(&[])
            .iter()
            .filter_map(Node::as_str)
            .map(str::trim)
            .collect::<Vec<_>>()
    };
    let jq: Vec<String> = pointers.iter().map(|p| p.replace('/', ".")).collect();
    listed("jsonPointers").iter().any(|p| pointers.contains(p))
        || listed("jqPathExpressions")
            .iter()
            .any(|p| jq.iter().any(|j| j == p))
}

/// Every sync option an object writes: its annotation tokens and, for an Application or
/// ApplicationSet template, its `syncOptions` items.
pub fn all_uses<'a>(cx: &Cx, obj: &'a Object) -> Vec<Use<'a>> {
    let mut uses = annotation_uses(cx, obj);
    if let Some(app) = app(cx, obj) {
        uses.extend(app_uses(app.sync_options_node()));
    }
    uses
}

/// The items of an app's `syncOptions`.
fn app_uses<'a>(list: Option<&'a Node>) -> Vec<Use<'a>> {
    list.map(Node::items)
        .unwrap_or(&[])
        .iter()
        .filter_map(|n| {
            Some(Use {
                text: n.as_str()?,
                span: n.span,
                node: n,
                level: Level::App,
            })
        })
        .collect()
}
