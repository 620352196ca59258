//! Baselines: the findings a repository had when it adopted gitops-lint, accepted until they
//! are fixed. An entry identifies a finding by what it is about, never by line numbers, so it
//! survives unrelated edits: rule, file, object (kind, namespace, name; the document index when
//! the object has no name) and the JSON pointer of the node.

use crate::finding::Finding;
use crate::redact::Secrets;
use crate::render::Graph;
use crate::source::SourceDb;
use crate::yaml::{self, Node, ParseLimits};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// What a finding is about, independent of where its lines are.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Fingerprint {
    pub rule: String,
    pub file: String,
    pub object: Option<String>,
    pub pointer: Option<String>,
    /// For findings without an object (a kustomization problem, a parse error): the text of
    /// the node, which moves with it.
    pub text: Option<String>,
}

impl Fingerprint {
    /// Secret values in any part are masked: the fingerprint is written to baselines and
    /// reports, and is compared masked, so that baselines keep matching.
    pub fn of(f: &Finding, sources: &SourceDb, graph: &Graph, secrets: &Secrets) -> Fingerprint {
        let path = crate::paths::normalize(&sources.get(f.primary.span.file).path);
        let object = f
            .unit
            .map(|u| &graph.units[u].obj)
            .map(|o| match (&o.namespace, &o.name) {
                (Some(ns), Some(n)) => format!("{} {ns}/{n}", o.kind),
                (None, Some(n)) => format!("{} {n}", o.kind),
                _ => format!("{} #{}", o.kind, o.doc),
            });
        let pointer = f.pointer.clone().or_else(|| {
            f.unit
                .and_then(|u| graph.units[u].obj.root.pointer_to(f.primary.span))
        });
        let text = (object.is_none() || pointer.is_none()).then(|| {
            let t = sources
                .get(f.primary.span.file)
                .text
                .get(f.primary.span.range())
                .unwrap_or("");
            secrets
                .mask(t)
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        });
        let masked = |s: String| secrets.mask(&s).into_owned();
        Fingerprint {
            rule: f.rule.id.to_string(),
            file: masked(graph.repo.relative(&path)),
            object: object.map(masked),
            pointer: pointer.map(masked),
            text,
        }
    }

    /// The short hash SARIF and other tools can carry.
    pub fn digest(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        for part in [
            Some(self.rule.as_str()),
            Some(self.file.as_str()),
            self.object.as_deref(),
            self.pointer.as_deref(),
            self.text.as_deref(),
        ] {
            h.update(part.unwrap_or("").as_bytes());
            h.update([0]);
        }
        h.finalize()
            .iter()
            .take(8)
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

/// Accepted findings, with how many of each.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Baseline {
    pub entries: BTreeMap<Fingerprint, usize>,
}

/// A file name, an object or a text, as the baseline writes it: the repository's, so that
/// no character of it makes the file unreadable or reads other than it is in a review.
fn quote(s: &str) -> String {
    crate::escape::yaml_quoted(s)
}

impl Baseline {
    pub fn from_findings<'a>(
        findings: impl IntoIterator<Item = &'a Finding>,
        sources: &SourceDb,
        graph: &Graph,
        secrets: &Secrets,
    ) -> Baseline {
        let mut entries = BTreeMap::new();
        for f in findings {
            *entries
                .entry(Fingerprint::of(f, sources, graph, secrets))
                .or_insert(0) += 1;
        }
        Baseline { entries }
    }

    /// YAML, one sorted entry per block, so the file diffs and merges line by line.
    pub fn to_yaml(&self) -> String {
        let mut out = String::from(
            "# gitops-lint baseline: findings accepted when it was written.\n\
             # Only findings not listed here fail the run. Rewrite with --write-baseline,\n\
             # drop fixed entries with --prune-baseline.\n\
             version: 1\n",
        );
        if self.entries.is_empty() {
            out.push_str("findings: []\n");
            return out;
        }
        out.push_str("findings:\n");
        for (fp, count) in &self.entries {
            let _ = writeln!(out, "  - rule: {}", fp.rule);
            let _ = writeln!(out, "    file: {}", quote(&fp.file));
            if let Some(o) = &fp.object {
                let _ = writeln!(out, "    object: {}", quote(o));
            }
            if let Some(p) = &fp.pointer {
                let _ = writeln!(out, "    pointer: {}", quote(p));
            }
            if let Some(t) = &fp.text {
                let _ = writeln!(out, "    text: {}", quote(t));
            }
            if *count > 1 {
                let _ = writeln!(out, "    count: {count}");
            }
        }
        out
    }

    pub fn read(path: &Path) -> Result<Baseline, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read the baseline: {e}", path.display()))?;
        let parsed = yaml::parse(0, &text, ParseLimits::default());
        let bad = |why: &str| format!("{}: not a gitops-lint baseline ({why})", path.display());
        if let Some(p) = parsed.problems.first() {
            return Err(bad(&p.message));
        }
        let Some(doc) = parsed.documents.first() else {
            return Ok(Baseline::default());
        };
        if doc.root.str_at("version") != Some("1") {
            return Err(bad("expected `version: 1`"));
        }
        let mut entries = BTreeMap::new();
        for item in doc.root.get("findings").map(Node::items).unwrap_or(&[]) {
            let field = |k| item.str_at(k).map(str::to_string);
            let (Some(rule), Some(file)) = (field("rule"), field("file")) else {
                return Err(bad("an entry lacks `rule` or `file`"));
            };
            let count = item
                .str_at("count")
                .and_then(|c| c.parse().ok())
                .unwrap_or(1);
            let fp = Fingerprint {
                rule,
                file,
                object: field("object"),
                pointer: field("pointer"),
                text: field("text"),
            };
            *entries.entry(fp).or_insert(0) += count;
        }
        Ok(Baseline { entries })
    }

    /// Removes the findings the baseline accepts; returns how many, and the entries left
    /// over (findings that no longer occur).
    pub fn filter(
        &self,
        findings: Vec<Finding>,
        sources: &SourceDb,
        graph: &Graph,
        secrets: &Secrets,
    ) -> (Vec<Finding>, usize, Baseline) {
        let mut left = self.entries.clone();
        let mut kept = Vec::new();
        let mut accepted = 0;
        for f in findings {
            let fp = Fingerprint::of(&f, sources, graph, secrets);
            match left.get_mut(&fp) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    accepted += 1;
                }
                _ => kept.push(f),
            }
        }
        left.retain(|_, n| *n > 0);
        (kept, accepted, Baseline { entries: left })
    }

    /// This baseline without the entries in `stale`.
    pub fn without(&self, stale: &Baseline) -> Baseline {
        let mut entries = self.entries.clone();
        for (fp, n) in &stale.entries {
            if let Some(have) = entries.get_mut(fp) {
                *have = have.saturating_sub(*n);
            }
        }
        entries.retain(|_, n| *n > 0);
        Baseline { entries }
    }

    pub fn len(&self) -> usize {
        self.entries.values().sum()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
