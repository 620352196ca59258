//! Fixes: text edits on the original bytes that make a finding go away.
//!
//! Rules attach a [`Fix`] to a finding when the cure has one right answer; [`Editor`] builds
//! the edits from the spans the parser kept, so comments, quoting, indentation and line
//! endings outside the edited node are left exactly as they were. [`apply`] decides which
//! fixes run and writes the result.

pub mod apply;
mod editor;

pub use editor::{Editor, NewValue};

use crate::yaml::Span;
use serde::Serialize;

/// Whether a fix runs with `--fix` alone or needs `--unsafe-fixes` too.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Applicability {
    /// Keeps what the author evidently meant; only the broken spelling or the missing
    /// companion setting changes.
    Safe,
    /// Changes what Argo CD does (turns a flag on, removes a field): a reviewer should see it.
    Unsafe,
}

impl Applicability {
    pub fn as_str(self) -> &'static str {
        match self {
            Applicability::Safe => "safe",
            Applicability::Unsafe => "unsafe",
        }
    }
}

/// Replace the bytes of `span` by `content` (an empty span inserts).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Edit {
    pub span: Span,
    pub content: String,
}

/// One finding's cure: all of its edits apply together or not at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fix {
    pub applicability: Applicability,
    /// What the fix does, in the imperative: "add `PruneLast=true` to syncOptions".
    pub message: String,
    /// In text order, non-overlapping, all in one file.
    pub edits: Vec<Edit>,
}

impl Fix {
    /// A fix from edits that must all be possible; `None` when any is not.
    pub fn new(
        applicability: Applicability,
        message: impl Into<String>,
        edits: impl IntoIterator<Item = Option<Edit>>,
    ) -> Option<Fix> {
        let mut edits: Vec<Edit> = edits.into_iter().collect::<Option<_>>()?;
        // Stable: insertions at one point keep the order the rule gave (the deeper line
        // first).
        edits.sort_by_key(|e| e.span);
        let file = edits.first()?.span.file;
        let disjoint = edits.windows(2).all(|w| {
            w[0].span.end <= w[1].span.start
                && (w[0].span.start != w[1].span.start || w[0].span.start == w[0].span.end)
        });
        if !disjoint || edits.iter().any(|e| e.span.file != file) {
            return None;
        }
        Some(Fix {
            applicability,
            message: message.into(),
            edits,
        })
    }

    pub fn safe(message: impl Into<String>, edit: Option<Edit>) -> Option<Fix> {
        Fix::new(Applicability::Safe, message, [edit])
    }

    pub fn unsafe_(message: impl Into<String>, edit: Option<Edit>) -> Option<Fix> {
        Fix::new(Applicability::Unsafe, message, [edit])
    }

    pub fn file(&self) -> crate::yaml::FileId {
        self.edits[0].span.file
    }

    /// The smallest span covering every edit.
    pub fn extent(&self) -> Span {
        let first = self.edits[0].span;
        self.edits.iter().fold(first, |acc, e| acc.to(e.span))
    }
}

/// Applies sorted, non-overlapping edits to `text`.
pub fn apply_edits(text: &str, edits: &[&Edit]) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    let mut at = 0;
    for e in edits {
        let r = e.span.range();
        out.push_str(&text[at..r.start]);
        out.push_str(&e.content);
        at = r.end;
    }
    out.push_str(&text[at..]);
    out
}
