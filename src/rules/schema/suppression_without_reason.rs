use crate::rules::rule;

rule! {
    id: "suppression-without-reason",
    category: Schema,
    severity: Info,
    fix: None,
    summary: "A gitops-lint suppression that does not say why",
    check: Check::Parse,
}
