use crate::fix::Fix;
use crate::model::Object;
use crate::rules::app::all_uses;
use crate::rules::app::app;
use crate::rules::sync_options::{self, Parsed};
use crate::rules::sync_options::{Level, Use};
use crate::rules::{rule, Cx, Sink};
use crate::yaml::typing;

rule! {
    id: "sync-option-invalid",
    category: SyncPolicy,
    severity: Error,
    fix: Safe,
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
                    .help(format!("write `{canonical}`"))
                    .fix(respell(cx, obj, &u, &canonical));
            }
            Parsed::Unknown => {
                out.report(u.span, format!("`{}` is not an Argo CD sync option", u.text))
                    .label("unknown option")
                    .help("see https://argo-cd.readthedocs.io/en/stable/user-guide/sync-options/ for the options and their exact spelling");
            }
        }
    }
}

/// The canonical spelling in place of the written one. Case and spacing slips are safe to
/// correct; a corrected typo in the name is a guess a reviewer should confirm.
fn respell(cx: &Cx, obj: &Object, u: &Use, canonical: &str) -> Option<Fix> {
    if canonical.contains('|') {
        // The value is not known: several would fit.
        return None;
    }
    let ed = cx.editor();
    if u.level == Level::App {
        // The right spelling is in the list already: this copy only ever did nothing.
        let list = app(cx, obj)?.sync_options_node()?;
        let items = list.items();
        if items.iter().any(|i| i.as_str() == Some(canonical)) {
            let index = items.iter().position(|i| i.span == u.span)?;
            return Fix::safe(
                format!("remove it: `{canonical}` is in the list already"),
                ed.remove_item(list, index),
            );
        }
    }
    let applicability = sync_options::respell_applicability(u.text, canonical);
    let edit = match u.level {
        Level::App if u.span == u.node.span => ed.replace_scalar(u.node, canonical),
        Level::App => None,
        Level::Resource => ed.replace_within(u.node, u.span, canonical),
    };
    Fix::new(applicability, format!("write `{canonical}`"), [edit])
}
