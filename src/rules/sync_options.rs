//! What Argo CD knows as sync options, where each works, and since when. Argo CD matches
//! `syncOptions` items as exact, case-sensitive strings, so a near miss silently does nothing.

use super::Version;
use crate::model::Object;
use crate::yaml::{Node, Span};

pub struct KnownOption {
    pub name: &'static str,
    pub values: &'static [&'static str],
    /// First release that reads it from an Application's `syncOptions`; `None` when it is a
    /// resource annotation option only.
    pub app_since: Option<Version>,
    /// Whether the `argocd.argoproj.io/sync-options` annotation on a resource honours it.
    pub resource: bool,
}

const BOOL: &[&str] = &["true", "false"];

pub static OPTIONS: &[KnownOption] = &[
    KnownOption {
        name: "Validate",
        values: BOOL,
        app_since: Some(Version::new(1, 0)),
        resource: true,
    },
    KnownOption {
        name: "SkipDryRunOnMissingResource",
        values: BOOL,
        app_since: Some(Version::new(3, 1)),
        resource: true,
    },
    KnownOption {
        name: "Prune",
        values: &["true", "false", "confirm"],
        app_since: Some(Version::new(3, 4)),
        resource: true,
    },
    KnownOption {
        name: "Delete",
        values: &["true", "false", "confirm"],
        app_since: Some(Version::new(3, 4)),
        resource: true,
    },
    KnownOption {
        name: "ApplyOutOfSyncOnly",
        values: BOOL,
        app_since: Some(Version::new(2, 0)),
        resource: false,
    },
    KnownOption {
        name: "PrunePropagationPolicy",
        values: &["foreground", "background", "orphan"],
        app_since: Some(Version::new(2, 0)),
        resource: false,
    },
    KnownOption {
        name: "PruneLast",
        values: BOOL,
        app_since: Some(Version::new(2, 0)),
        resource: true,
    },
    KnownOption {
        name: "Replace",
        values: BOOL,
        app_since: Some(Version::new(1, 0)),
        resource: true,
    },
    KnownOption {
        name: "Force",
        values: BOOL,
        app_since: None,
        resource: true,
    },
    KnownOption {
        name: "ServerSideApply",
        values: BOOL,
        app_since: Some(Version::new(2, 5)),
        resource: true,
    },
    KnownOption {
        name: "ClientSideApplyMigration",
        values: BOOL,
        // `controller/sync.go` reads `ClientSideApplyMigration=false` from v3.1.0 on.
        app_since: Some(Version::new(3, 1)),
        resource: false,
    },
    KnownOption {
        name: "FailOnSharedResource",
        values: BOOL,
        app_since: Some(Version::new(2, 2)),
        resource: false,
    },
    KnownOption {
        name: "RespectIgnoreDifferences",
        values: BOOL,
        app_since: Some(Version::new(2, 3)),
        resource: false,
    },
    KnownOption {
        name: "CreateNamespace",
        values: BOOL,
        app_since: Some(Version::new(1, 8)),
        resource: false,
    },
];

pub fn lookup(name: &str) -> Option<&'static KnownOption> {
    OPTIONS.iter().find(|o| o.name == name)
}

/// The options of the `argocd.argoproj.io/compare-options` annotation, matched by
/// `HasAnnotationOption` (exact, case-sensitive tokens). `app_since` marks those read from an
/// Application's own annotation (`controller/state.go`); `resource` those read from any
/// object the app manages. `IgnoreExtraneous` takes no value.
pub static COMPARE_OPTIONS: &[KnownOption] = &[
    KnownOption {
        name: "IgnoreExtraneous",
        values: &[],
        app_since: None,
        resource: true,
    },
    KnownOption {
        name: "ServerSideDiff",
        values: BOOL,
        app_since: Some(Version::new(2, 10)),
        resource: false,
    },
    KnownOption {
        name: "IncludeMutationWebhook",
        values: BOOL,
        app_since: Some(Version::new(2, 10)),
        resource: false,
    },
];

/// How a written option relates to the known ones.
pub enum Parsed {
    Exact(&'static KnownOption, &'static str),
    /// Close to a known spelling (case, spaces, a typo): the canonical form.
    NearMiss(String),
    Unknown,
}

/// A sync option token, read against [`OPTIONS`].
pub fn parse(token: &str) -> Parsed {
    parse_in(OPTIONS, token)
}

/// A token read against a table of options: `Name=value`, or a bare `Name` for an option
/// without values.
pub fn parse_in(options: &'static [KnownOption], token: &str) -> Parsed {
    let find = |name: &str| options.iter().find(|o| o.name == name);
    match token.split_once('=') {
        Some((name, value)) => {
            if let Some(opt) = find(name) {
                if let Some(v) = opt.values.iter().find(|v| **v == value) {
                    return Parsed::Exact(opt, v);
                }
            }
        }
        None => {
            if let Some(opt) = find(token).filter(|o| o.values.is_empty()) {
                return Parsed::Exact(opt, "");
            }
        }
    }
    let squashed: String = token.chars().filter(|c| !c.is_whitespace()).collect();
    let (name, value) = squashed.split_once('=').unwrap_or((&squashed, ""));
    let opt = options
        .iter()
        .find(|o| o.name.eq_ignore_ascii_case(name))
        .or_else(|| crate::text::did_you_mean(name, options.iter().map(|o| o.name)).and_then(find));
    let Some(opt) = opt else {
        return Parsed::Unknown;
    };
    if opt.values.is_empty() {
        // A bare option: only `=true` says the same thing.
        return if value.is_empty() || value.eq_ignore_ascii_case("true") {
            Parsed::NearMiss(opt.name.to_string())
        } else {
            Parsed::Unknown
        };
    }
    let value = opt
        .values
        .iter()
        .find(|v| v.eq_ignore_ascii_case(value))
        .or_else(|| (opt.values == BOOL && value.is_empty()).then_some(&"true"));
    match value {
        Some(v) => Parsed::NearMiss(format!("{}={}", opt.name, v)),
        None => Parsed::NearMiss(format!("{}={}", opt.name, opt.values.join("|"))),
    }
}

/// How sure a respelling is: case and spacing slips (and `=true` after an option that takes
/// no value) are safe to correct; a corrected typo in the name is a guess a reviewer should
/// confirm.
pub fn respell_applicability(written: &str, canonical: &str) -> crate::fix::Applicability {
    let fold = |s: &str| {
        s.chars()
            .filter(|c| !c.is_whitespace())
            .collect::<String>()
            .to_ascii_lowercase()
    };
    let (w, c) = (fold(written), fold(canonical));
    if w == c || (!c.contains('=') && w == format!("{c}=true")) {
        crate::fix::Applicability::Safe
    } else {
        crate::fix::Applicability::Unsafe
    }
}

/// Where an option is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    App,
    Resource,
}

pub struct Use<'a> {
    pub text: &'a str,
    pub span: Span,
    pub node: &'a Node,
    pub level: Level,
}

/// The `argocd.argoproj.io/sync-options` annotation of any object, split the way Argo CD splits
/// it (comma-separated, whitespace trimmed), with a span per token.
pub fn annotation_uses<'a>(cx: &super::Cx, obj: &'a Object) -> Vec<Use<'a>> {
    annotation_tokens(cx, obj, "argocd.argoproj.io/sync-options")
        .into_iter()
        .map(|(text, span, node)| Use {
            text,
            span,
            node,
            level: Level::Resource,
        })
        .collect()
}

/// The tokens of a comma-separated Argo CD annotation (`sync-options`, `hook`,
/// `hook-delete-policy`), split as Argo CD splits them: on commas, whitespace trimmed, empty
/// tokens dropped. Each comes with its own span and the annotation's node.
pub fn annotation_tokens<'a>(
    cx: &super::Cx,
    obj: &'a Object,
    key: &str,
) -> Vec<(&'a str, Span, &'a Node)> {
    let Some(node) = obj.annotation(key) else {
        return Vec::new();
    };
    let Some(text) = node.as_str() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut from = 0;
    for token in text.split(',') {
        let trimmed = token.trim();
        if trimmed.is_empty() {
            continue;
        }
        let span = cx.span_in(node, trimmed, from);
        from = (span.end - node.span.start) as usize;
        out.push((trimmed, span, node));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fix::Applicability;

    fn compare(token: &str) -> String {
        match parse_in(COMPARE_OPTIONS, token) {
            Parsed::Exact(o, "") => format!("exact {}", o.name),
            Parsed::Exact(o, v) => format!("exact {}={v}", o.name),
            Parsed::NearMiss(c) => format!("near {c}"),
            Parsed::Unknown => "unknown".into(),
        }
    }

    #[test]
    fn compare_options_are_matched_exactly() {
        assert_eq!(compare("IgnoreExtraneous"), "exact IgnoreExtraneous");
        assert_eq!(
            compare("ServerSideDiff=false"),
            "exact ServerSideDiff=false"
        );
        assert_eq!(compare("IgnoreExtraneous=true"), "near IgnoreExtraneous");
        assert_eq!(compare("ignoreextraneous"), "near IgnoreExtraneous");
        assert_eq!(compare("IgnoreExtraneous=false"), "unknown");
        assert_eq!(compare("ServerSideDiff=True"), "near ServerSideDiff=true");
        assert_eq!(
            compare("IncludeMutatingWebhook=true"),
            "near IncludeMutationWebhook=true"
        );
        assert_eq!(compare("PruneLast=true"), "unknown");
        // A bare sync option still reads as `=true`.
        let Parsed::NearMiss(bare) = parse("PruneLast") else {
            panic!("PruneLast is a near miss")
        };
        assert_eq!(bare, "PruneLast=true");
    }

    #[test]
    fn respelling_is_safe_only_for_case_spacing_and_a_redundant_true() {
        let safe = |w, c| respell_applicability(w, c) == Applicability::Safe;
        assert!(safe("ServerSideDiff=True", "ServerSideDiff=true"));
        assert!(safe("IgnoreExtraneous=true", "IgnoreExtraneous"));
        assert!(!safe("PruneLast", "PruneLast=true"));
        assert!(!safe(
            "IncludeMutatingWebhook=true",
            "IncludeMutationWebhook=true"
        ));
    }
}
