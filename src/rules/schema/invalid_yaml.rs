use crate::rules::rule;

rule! {
    id: "invalid-yaml",
    category: Schema,
    severity: Error,
    fix: None,
    summary: "A file that is not valid YAML or not in an encoding Argo CD reads; nothing in it is checked",
    check: Check::Parse,
}
