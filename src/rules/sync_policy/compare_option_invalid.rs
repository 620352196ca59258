use crate::finding::Severity;
use crate::fix::Fix;
use crate::model::Object;
use crate::rules::sync_options::{self, annotation_tokens, parse_in, Parsed, COMPARE_OPTIONS};
use crate::rules::{rule, Cx, Sink};
use crate::yaml::typing;

rule! {
    id: "compare-option-invalid",
    category: SyncPolicy,
    severity: Error,
    fix: Safe,
    summary: "A compare-options annotation value Argo CD does not recognise, or one it reads only from an Application",
    check: Check::Object(check),
}

const KEY: &str = "argocd.argoproj.io/compare-options";

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    let on_app = obj.is_argocd("Application");
    for (text, span, node) in annotation_tokens(cx, obj, KEY) {
        if typing::is_template(text) {
            continue;
        }
        match parse_in(COMPARE_OPTIONS, text) {
            Parsed::Exact(opt, _) if !opt.resource && !on_app => {
                out.report(span, format!("`{text}` is read only from an Application's own compare-options annotation: on this {} it does nothing", obj.kind))
                    .severity(Severity::Warning)
                    .label("no effect here")
                    .help(format!("annotate the Application that manages this object with `{KEY}: {text}`"));
            }
            Parsed::Exact(..) => {}
            Parsed::NearMiss(canonical) => {
                let fix = (!canonical.contains('|'))
                    .then(|| {
                        Fix::new(
                            sync_options::respell_applicability(text, &canonical),
                            format!("write `{canonical}`"),
                            [cx.editor().replace_within(node, span, &canonical)],
                        )
                    })
                    .flatten();
                out.report(span, format!("`{text}` is not a compare option Argo CD recognises: options are matched exactly, so this one does nothing"))
                    .label("not an exact match")
                    .help(format!("write `{canonical}`"))
                    .fix(fix);
            }
            Parsed::Unknown => {
                let bare = text
                    .split_once('=')
                    .is_some_and(|(n, _)| n.trim().eq_ignore_ascii_case("IgnoreExtraneous"));
                let help = if bare {
                    "`IgnoreExtraneous` takes no value: write it alone to ignore this object when it is extraneous, or remove it"
                } else {
                    "the options are `IgnoreExtraneous`, `ServerSideDiff=true|false` and `IncludeMutationWebhook=true`; see https://argo-cd.readthedocs.io/en/stable/user-guide/compare-options/"
                };
                out.report(
                    span,
                    format!("`{text}` is not an Argo CD compare option: it does nothing"),
                )
                .label("unknown option")
                .help(help);
            }
        }
    }
}
