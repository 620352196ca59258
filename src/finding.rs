//! A finding is plain data; every output format is a function of findings and sources.

use crate::fix::Fix;
use crate::model::Object;
use crate::rules::Rule;
use crate::yaml::Span;
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    pub span: Span,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ObjectRef {
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    pub kind: String,
    pub name: Option<String>,
    pub namespace: Option<String>,
}

impl ObjectRef {
    pub fn of(obj: &Object) -> ObjectRef {
        ObjectRef {
            api_version: obj.api_version.clone(),
            kind: obj.kind.clone(),
            name: obj.name.clone(),
            namespace: obj.namespace.clone(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The rule that reports it, from the registry: its id is what every output names.
    pub rule: &'static Rule,
    pub severity: Severity,
    pub message: String,
    pub help: Option<String>,
    /// The node that causes the finding, or where the fix goes when the cause is an absence.
    pub primary: Label,
    pub secondary: Vec<Label>,
    pub object: Option<ObjectRef>,
    /// RFC 6901 pointer of the primary node inside its object.
    pub pointer: Option<String>,
    /// Applications whose rendered objects carry the finding (sorted, distinct).
    pub applications: Vec<String>,
    /// How many rendered objects share this finding (one overlay patch used by 40 apps is
    /// one finding with 40 occurrences).
    pub occurrences: usize,
    /// The graph unit the finding is about, for annotations and baselines.
    pub unit: Option<usize>,
    /// The edits that cure it, when there is one right answer.
    pub fix: Option<Fix>,
}

impl Finding {
    /// A finding of `rule` with its declared severity (a check may change it afterwards).
    pub fn new(rule: &'static Rule, span: Span, message: impl Into<String>) -> Finding {
        Finding {
            rule,
            severity: rule.severity,
            message: message.into(),
            help: None,
            primary: Label {
                span,
                message: String::new(),
            },
            secondary: Vec::new(),
            object: None,
            pointer: None,
            applications: Vec::new(),
            occurrences: 1,
            unit: None,
            fix: None,
        }
    }

    pub fn help(&mut self, help: impl Into<String>) -> &mut Self {
        self.help = Some(help.into());
        self
    }

    /// The text shown under the primary node.
    pub fn label(&mut self, text: impl Into<String>) -> &mut Self {
        self.primary.message = text.into();
        self
    }

    /// A second place that explains why the finding matters.
    pub fn also(&mut self, span: Span, text: impl Into<String>) -> &mut Self {
        self.secondary.push(Label {
            span,
            message: text.into(),
        });
        self
    }

    /// The object (graph unit) the finding is about.
    pub fn on(&mut self, unit: usize) -> &mut Self {
        self.unit = Some(unit);
        self
    }

    /// The object (graph unit `unit`, `obj`) the finding is about, named in JSON and SARIF
    /// output with the pointer of the primary node inside it. The pointer stays empty when
    /// the node is not part of the object (an absence reported where the fix goes elsewhere).
    pub fn about(&mut self, unit: usize, obj: &Object) -> &mut Self {
        self.unit = Some(unit);
        self.object = Some(ObjectRef::of(obj));
        self.pointer = obj.root.pointer_to(self.primary.span);
        self
    }

    /// The cure, when the rule could build one.
    pub fn fix(&mut self, fix: Option<Fix>) -> &mut Self {
        self.fix = fix;
        self
    }

    pub fn severity(&mut self, severity: Severity) -> &mut Self {
        self.severity = severity;
        self
    }

    /// Whether two findings are one problem: the same rule at the same node. Rendered objects
    /// that share a base line produce copies that differ only in the object they name.
    pub fn same(&self, other: &Finding) -> bool {
        self.rule == other.rule
            && self.primary.span == other.primary.span
            && self.severity == other.severity
    }

    /// The order in which findings are reported, independent of scheduling.
    pub fn sort_key(&self) -> (u32, u32, &'static str, u32, &str) {
        (
            self.primary.span.file,
            self.primary.span.start,
            self.rule.id,
            self.primary.span.end,
            &self.message,
        )
    }
}
