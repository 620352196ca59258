use crate::rules::rule;

rule! {
    id: "unused-suppression",
    category: Schema,
    severity: Warning,
    fix: None,
    summary: "A gitops-lint suppression that suppresses nothing (stale, misspelt or misplaced)",
    check: Check::Parse,
}
