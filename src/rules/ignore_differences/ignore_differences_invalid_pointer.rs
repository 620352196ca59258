use super::path_items;
use crate::fix::{Applicability, Fix};
use crate::model::Object;
use crate::rules::{rule, Cx, Sink};

rule! {
    id: "ignore-differences-invalid-pointer",
    category: IgnoreDifferences,
    severity: Error,
    fix: Safe,
    summary: "A jsonPointers entry that is not an RFC 6901 JSON pointer: it ignores nothing, or not the field meant",
    check: Check::Object(check),
}

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    for item in path_items(cx, obj, "jsonPointers") {
        let Some(problem) = problem(&item.text) else {
            continue;
        };
        let finding = out
            .report(
                item.span,
                format!(
                    "`{}` {}: {}",
                    if item.text.is_empty() {
                        "\"\""
                    } else {
                        &item.text
                    },
                    problem.what,
                    problem.why
                ),
            )
            .label(problem.label);
        let Some(meant) = problem.meant else {
            finding.help(problem.help);
            continue;
        };
        finding.help(format!("write `{meant}`"));
        if let Some(node) = item.node {
            let edit = cx.editor().replace_scalar(node, &meant);
            finding.fix(Fix::new(problem.fix, format!("write `{meant}`"), [edit]));
        }
    }
}

struct Problem {
    what: &'static str,
    why: &'static str,
    label: &'static str,
    help: &'static str,
    /// The pointer the text evidently means, when there is exactly one.
    meant: Option<String>,
    /// Whether writing `meant` only respells what the text says (`~1` for a `/` that cannot be
    /// a separator, spaces trimmed) or reads intent into it (a missing `/`, a jq path).
    fix: Applicability,
}

/// Maps whose keys often hold `/` (`example.com/team`) and whose values are strings, so a
/// pointer can never go deeper than one key below them.
const STRING_MAPS: &[&str] = &["annotations", "labels", "matchLabels", "nodeSelector"];

/// What is wrong with a pointer, by RFC 6901 and by what the document can hold.
fn problem(pointer: &str) -> Option<Problem> {
    // The whole document (`""`) and the empty key at its top (`/`) are valid pointers, but
    // Argo CD removes them with a JSON patch (evanphx/json-patch): `""` names no parent and `/`
    // a key no Kubernetes object has, the remove fails, and the normalizer skips it.
    if pointer.is_empty() || pointer == "/" {
        return Some(Problem {
            what: "ignores nothing",
            why: "Argo CD removes each pointer with a JSON patch `remove`, which fails on the whole document (`\"\"`) and on the empty top-level key (`/`); the failure is skipped silently, so no difference is ignored",
            label: "ignores nothing",
            help: "point at the fields that drift, such as `/spec/replicas`; a whole object cannot be ignored this way",
            meant: None,
            fix: Applicability::Unsafe,
        });
    }
    if !pointer.starts_with('/') {
        let trimmed = pointer.trim();
        let fix = if trimmed.starts_with('/') {
            Applicability::Safe
        } else {
            Applicability::Unsafe
        };
        let meant = if trimmed.starts_with('/') {
            Some(trimmed.to_string())
        } else if let Some(jq) = trimmed.strip_prefix('.') {
            // A jq path such as `.spec.replicas`, when it is only plain names.
            let names: Vec<&str> = jq.split('.').collect();
            names
                .iter()
                .all(|n| {
                    !n.is_empty()
                        && n.bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
                })
                .then(|| format!("/{}", names.join("/")))
        } else if !trimmed.is_empty() && !trimmed.contains(char::is_whitespace) {
            Some(format!("/{trimmed}"))
        } else {
            None
        };
        return Some(Problem {
            what: "is not a JSON pointer",
            why: if pointer.starts_with('.') {
                "this is jq syntax, which belongs under `jqPathExpressions`; a JSON pointer starts with `/` and Argo CD ignores nothing with this one"
            } else {
                "a JSON pointer starts with `/`, and Argo CD ignores nothing with this one"
            },
            label: "no leading `/`",
            help: "start the pointer with `/`, for example `/spec/replicas`",
            meant,
            fix,
        });
    }
    let tokens: Vec<&str> = pointer[1..].split('/').collect();
    if tokens.iter().any(|t| bad_escape(t)) {
        return Some(Problem {
            what: "is not a JSON pointer",
            why: "`~` may only be followed by `0` (a literal `~`) or `1` (a `/` inside a key)",
            label: "invalid `~` escape",
            help: "write a `~` inside a key as `~0` and a `/` inside a key as `~1`",
            meant: None,
            fix: Applicability::Unsafe,
        });
    }
    // `/metadata/annotations/example.com/team` walks into the annotation `example.com`,
    // which is a string: the key meant is `example.com/team`.
    for (i, t) in tokens.iter().enumerate() {
        let parent_ok =
            *t != "annotations" && *t != "labels" || i > 0 && tokens[i - 1] == "metadata";
        if STRING_MAPS.contains(t) && parent_ok && tokens.len() > i + 2 {
            let mut meant = String::new();
            for head in &tokens[..=i] {
                meant.push('/');
                meant.push_str(head);
            }
            meant.push('/');
            meant.push_str(&tokens[i + 1..].join("~1"));
            return Some(Problem {
                what: "matches nothing",
                why: "a `/` inside a key must be written `~1`; as written, the pointer walks into a string value",
                label: "`/` inside a key",
                help: "write each `/` inside a key as `~1`",
                meant: Some(meant),
                fix: Applicability::Safe,
            });
        }
    }
    None
}

fn bad_escape(token: &str) -> bool {
    let b = token.as_bytes();
    b.iter()
        .enumerate()
        .any(|(i, &c)| c == b'~' && !matches!(b.get(i + 1), Some(b'0' | b'1')))
}

#[cfg(test)]
mod tests {
    use super::problem;

    fn meant(p: &str) -> Option<String> {
        problem(p).expect(p).meant
    }

    #[test]
    fn valid_pointers_pass() {
        for p in [
            "/spec/replicas",
            "/spec/template/spec/containers/0/image",
            "/metadata/annotations/example.com~1team",
            "/metadata/labels/app.kubernetes.io~1name",
            "/spec/selector/matchLabels/app",
            "/data/a~0b",
            "/spec/template/metadata/annotations/x",
            "/spec/labels/a/b",
        ] {
            assert!(problem(p).is_none(), "{p}");
        }
    }

    #[test]
    fn invalid_pointers_are_told_apart() {
        assert_eq!(meant(""), None, "the whole document ignores nothing");
        assert_eq!(meant("/"), None, "the empty top-level key ignores nothing");
        assert_eq!(meant("spec/replicas").as_deref(), Some("/spec/replicas"));
        assert_eq!(meant("spec replicas"), None);
        assert_eq!(meant(" /spec/replicas").as_deref(), Some("/spec/replicas"));
        assert_eq!(meant(".spec.replicas").as_deref(), Some("/spec/replicas"));
        assert_eq!(meant(".spec.containers[0]"), None);
        assert_eq!(meant("/data/a~b"), None);
        assert_eq!(meant("/data/a~"), None);
        assert_eq!(
            meant("/metadata/annotations/example.com/team").as_deref(),
            Some("/metadata/annotations/example.com~1team")
        );
        assert_eq!(
            meant("/spec/template/metadata/labels/app.kubernetes.io/name").as_deref(),
            Some("/spec/template/metadata/labels/app.kubernetes.io~1name")
        );
        assert_eq!(
            meant("/spec/selector/matchLabels/a.io/b/c").as_deref(),
            Some("/spec/selector/matchLabels/a.io~1b~1c")
        );
    }
}
