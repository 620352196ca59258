//! Generated YAML written in every formatting style we can think of: indentation widths,
//! indented and indentless lists, block and flow collections, comments, quoting, CRLF, missing
//! final newlines, several documents per file. Shared by the `--fix` and property tests.

use super::rng::Rng;

/// A YAML value to emit: mappings and lists may be written block or flow.
#[derive(Clone)]
pub enum G {
    Scalar(String),
    Map(Vec<(String, G)>, bool),
    Seq(Vec<G>, bool),
}

pub struct Style {
    pub indent: usize,
    pub indentless: bool,
    pub comments: bool,
}

impl G {
    pub fn flow_text(&self) -> String {
        match self {
            G::Scalar(s) => s.clone(),
            G::Map(entries, _) => format!(
                "{{{}}}",
                entries
                    .iter()
                    .map(|(k, v)| format!("{k}: {}", v.flow_text()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            G::Seq(items, _) => format!(
                "[{}]",
                items
                    .iter()
                    .map(G::flow_text)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    pub fn is_block(&self) -> bool {
        match self {
            G::Scalar(_) => false,
            G::Map(e, flow) => !flow && !e.is_empty(),
            G::Seq(i, flow) => !flow && !i.is_empty(),
        }
    }

    /// Writes the entries of a block mapping at `col`; `first` is the prefix of the first
    /// line (`- ` of a list item) when the mapping is a list item.
    pub fn emit_map(
        entries: &[(String, G)],
        col: usize,
        first: Option<&str>,
        st: &Style,
        rng: &mut Rng,
        out: &mut Vec<String>,
    ) {
        for (i, (k, v)) in entries.iter().enumerate() {
            let lead = match (i, first) {
                (0, Some(p)) => p.to_string(),
                _ => " ".repeat(col),
            };
            if st.comments && i > 0 && rng.chance(15) {
                out.push(format!("{}# about {k}", " ".repeat(col)));
            }
            let comment = |rng: &mut Rng| {
                if st.comments && rng.chance(25) {
                    format!("  # {k} note")
                } else {
                    String::new()
                }
            };
            if v.is_block() {
                let c = comment(rng);
                out.push(format!("{lead}{k}:{c}"));
                v.emit_block(col, st, rng, out);
            } else {
                let c = comment(rng);
                let text = v.flow_text();
                if text.is_empty() {
                    out.push(format!("{lead}{k}:{c}"));
                } else {
                    out.push(format!("{lead}{k}: {text}{c}"));
                }
            }
        }
    }

    /// Writes a block value that belongs to a key at `col`.
    pub fn emit_block(&self, col: usize, st: &Style, rng: &mut Rng, out: &mut Vec<String>) {
        match self {
            G::Map(entries, _) => G::emit_map(entries, col + st.indent, None, st, rng, out),
            G::Seq(items, _) => {
                let dash = if st.indentless { col } else { col + st.indent };
                for item in items {
                    match item {
                        G::Map(entries, false) if !entries.is_empty() => {
                            let prefix = format!("{}- ", " ".repeat(dash));
                            G::emit_map(entries, dash + 2, Some(&prefix), st, rng, out);
                        }
                        other => {
                            let c = if st.comments && rng.chance(20) {
                                "  # item".to_string()
                            } else {
                                String::new()
                            };
                            out.push(format!("{}- {}{c}", " ".repeat(dash), other.flow_text()));
                        }
                    }
                }
            }
            G::Scalar(_) => {}
        }
    }
}

pub fn s(text: &str) -> G {
    G::Scalar(text.to_string())
}

pub fn quoted(rng: &mut Rng, text: &str) -> G {
    match rng.below(3) {
        0 => s(text),
        1 => s(&format!("'{text}'")),
        _ => s(&format!("\"{text}\"")),
    }
}

pub fn application(rng: &mut Rng, name: &str, flow_policy: bool) -> G {
    let mut automated = Vec::new();
    for flag in ["prune", "selfHeal"] {
        // A slip in the key's case, which automated-misuse's fix respells.
        let key = if flag == "selfHeal" && rng.chance(15) {
            "selfheal"
        } else {
            flag
        };
        match rng.below(4) {
            0 => {}
            1 => automated.push((key.to_string(), s("false"))),
            _ => automated.push((key.to_string(), s("true"))),
        }
    }
    if rng.chance(30) {
        automated.reverse();
    }
    let automated = G::Map(automated, flow_policy || rng.chance(30));
    let options = match rng.below(6) {
        0 => None,
        1 => Some(s("")),
        2 => Some(G::Seq(Vec::new(), true)),
        _ => {
            let n = 1 + rng.below(2);
            let mut items: Vec<G> = ["CreateNamespace=true", "ServerSideApply=true"][..n]
                .iter()
                .map(|t| quoted(rng, t))
                .collect();
            // A misspelt option, sometimes next to the right spelling.
            if rng.chance(20) {
                items.insert(rng.below(items.len() + 1), quoted(rng, "prunelast=true"));
                if rng.chance(40) {
                    items.push(s("PruneLast=true"));
                }
            }
            Some(G::Seq(items, flow_policy || rng.chance(30)))
        }
    };
    let mut policy = vec![("automated".to_string(), automated)];
    if let Some(o) = options {
        // An empty value cannot stand inside a flow mapping.
        if !(flow_policy && matches!(&o, G::Scalar(t) if t.is_empty())) {
            policy.push(("syncOptions".to_string(), o));
        }
    }
    if rng.chance(30) {
        policy.push((
            "retry".to_string(),
            G::Map(vec![("limit".to_string(), s("3"))], flow_policy),
        ));
    }
    if rng.chance(40) {
        policy.reverse();
    }
    let mut spec = vec![
        ("project".to_string(), s("payments")),
        (
            "source".to_string(),
            G::Map(
                vec![
                    ("repoURL".into(), s("https://github.com/acme/gitops.git")),
                    ("targetRevision".into(), s("main")),
                    ("path".into(), s(&format!("apps/{name}"))),
                ],
                false,
            ),
        ),
        (
            "destination".to_string(),
            G::Map(
                vec![
                    ("server".into(), s("https://kubernetes.default.svc")),
                    ("namespace".into(), s(name)),
                ],
                rng.chance(20),
            ),
        ),
    ];
    if rng.chance(60) {
        let entry = G::Map(
            vec![
                ("group".into(), s("apps")),
                ("kind".into(), s("Deployment")),
                (
                    "jsonPointers".into(),
                    G::Seq(vec![s("/spec/replicas")], rng.chance(50)),
                ),
            ],
            rng.chance(30),
        );
        spec.push(("ignoreDifferences".into(), G::Seq(vec![entry], false)));
    }
    let at = rng.below(spec.len() + 1);
    spec.insert(at, ("syncPolicy".into(), G::Map(policy, flow_policy)));
    G::Map(
        vec![
            ("apiVersion".into(), s("argoproj.io/v1alpha1")),
            ("kind".into(), s("Application")),
            (
                "metadata".into(),
                G::Map(
                    vec![("name".into(), s(name)), ("namespace".into(), s("argocd"))],
                    false,
                ),
            ),
            ("spec".into(), G::Map(spec, false)),
        ],
        false,
    )
}

/// A file of one to three Applications named `app-{index}-{document}`.
pub fn file(rng: &mut Rng, index: usize) -> String {
    write_docs(rng, 3, |rng, d| {
        let flow = rng.chance(25);
        application(rng, &format!("app-{index}-{d}"), flow)
    })
}

/// Writes one to `max_docs` documents made by `make`, in one randomly chosen style.
pub fn write_docs(
    rng: &mut Rng,
    max_docs: usize,
    mut make: impl FnMut(&mut Rng, usize) -> G,
) -> String {
    let st = Style {
        indent: if rng.chance(70) { 2 } else { 4 },
        indentless: rng.chance(50),
        comments: rng.chance(70),
    };
    let mut lines = Vec::new();
    if rng.chance(30) {
        lines.push("# generated case".to_string());
    }
    if rng.chance(20) {
        lines.push("---".to_string());
    }
    let docs = 1 + rng.below(max_docs);
    for d in 0..docs {
        if d > 0 {
            lines.push("---".to_string());
            if st.comments && rng.chance(30) {
                lines.push(format!("# document {d}"));
            }
        }
        match make(rng, d) {
            G::Map(entries, _) => G::emit_map(&entries, 0, None, &st, rng, &mut lines),
            other => lines.push(other.flow_text()),
        }
    }
    let nl = if rng.chance(25) { "\r\n" } else { "\n" };
    let mut text = lines.join(nl);
    if rng.chance(80) {
        text.push_str(nl);
    }
    text
}
