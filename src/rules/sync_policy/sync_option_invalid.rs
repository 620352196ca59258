use crate::model::Object;
use crate::rules::app::app;
use crate::rules::sync_options::{self, all_uses, Parsed};
use crate::rules::{rule, Cx, Sink};
use crate::yaml::typing;

rule! {
    id: "sync-option-invalid",
    category: SyncPolicy,
    severity: Error,
    summary: "A sync option Argo CD does not recognise (it matches exact, case-sensitive strings)",
    check: Check::Object(check),
}

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    // Items that are not strings never reach the option parser; report them here.
    if let Some(list) = app(cx, obj).and_then(|a| a.sync_options_node()) {
        for item in list.items().iter().filter(|i| i.as_scalar().is_none()) {
            out.report(
                item.span,
                "a sync option must be a string such as `PruneLast=true`",
            )
            .label("not a string");
        }
    }
    for u in all_uses(cx, obj) {
        if typing::is_template(u.text) {
            continue;
        }
        match sync_options::parse(u.text) {
            Parsed::Exact(..) => {}
            Parsed::NearMiss(canonical) => {
                out.report(u.span, format!("`{}` is not a sync option Argo CD recognises: options are matched exactly, so this one does nothing", u.text))
                    .label("not an exact match")
                    .help(format!("write `{canonical}`"));
            }
            Parsed::Unknown => {
                out.report(u.span, format!("`{}` is not an Argo CD sync option", u.text))
                    .label("unknown option")
                    .help("see https://argo-cd.readthedocs.io/en/stable/user-guide/sync-options/ for the options and their exact spelling");
            }
        }
    }
}
