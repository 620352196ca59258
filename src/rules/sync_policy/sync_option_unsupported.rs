use crate::model::Object;
use crate::rules::app::all_uses;
use crate::rules::sync_options::{self, Level, Parsed};
use crate::rules::{rule, Cx, Sink};

rule! {
    id: "sync-option-unsupported",
    category: SyncPolicy,
    severity: Warning,
    fix: None,
    summary: "A sync option written where the target Argo CD version does not read it",
    check: Check::Object(check),
}

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    let uses = all_uses(cx, obj);
    let version = cx.version_or_oldest();
    let assumed = if cx.version.is_some() {
        ""
    } else {
        " (assumed: no --argocd-version given)"
    };
    for u in uses {
        let Parsed::Exact(opt, _) = sync_options::parse(u.text) else {
            continue;
        };
        match u.level {
            Level::App => match opt.app_since {
                None => {
                    out.report(u.span, format!("`{}` is read only from a resource's argocd.argoproj.io/sync-options annotation, not from an Application's syncOptions", u.text))
                        .label("no effect here")
                        .help(format!("annotate the resources that need it with `argocd.argoproj.io/sync-options: {}`", u.text));
                }
                Some(since) if since > version => {
                    out.report(u.span, format!("`{}` in an Application's syncOptions needs Argo CD {since} or later; the target is {version}{assumed}", u.text))
                        .label("not read by this version")
                        .help(format!("upgrade to {since}+, pass --argocd-version if you already run it, or set the option as a resource annotation"));
                }
                Some(_) => {}
            },
            Level::Resource if !opt.resource => {
                out.report(u.span, format!("`{}` is an Application-level option: in a resource annotation it does nothing", u.text))
                    .label("no effect here")
                    .help(format!("move `{}` to the Application's spec.syncPolicy.syncOptions", u.text));
            }
            Level::Resource => {}
        }
    }
}
