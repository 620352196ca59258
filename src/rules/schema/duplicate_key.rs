use crate::rules::rule;

rule! {
    id: "duplicate-key",
    category: Schema,
    severity: Error,
    fix: None,
    summary: "A mapping key written twice: the cluster keeps only one of the values",
    check: Check::Parse,
}
