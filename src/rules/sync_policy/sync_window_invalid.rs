use crate::model::Object;
use crate::rules::sync_windows::{load_location, parse_duration, parse_schedule, zones};
use crate::rules::{rule, Cx, Sink};
use crate::text::did_you_mean;
use crate::yaml::typing::{self, Kind};
use crate::yaml::Node;

rule! {
    id: "sync-window-invalid",
    category: SyncPolicy,
    severity: Error,
    fix: None,
    summary: "An AppProject sync window Argo CD cannot read: a schedule or duration that does not parse blocks every sync of the apps it matches; a bad kind or timeZone is silently ignored",
    check: Check::Object(check),
}

const SELECTORS: [&str; 3] = ["applications", "namespaces", "clusters"];

/// What a field holds, as the controller reads it.
enum Field<'a> {
    /// Not written, or null: the empty string.
    Missing,
    Text(&'a Node, &'a str),
    /// A template, or a value of another type (refused by the API server, not here).
    Unknown,
}

fn field<'a>(window: &'a Node, key: &str) -> Field<'a> {
    let Some(node) = window.get(key).filter(|n| !n.is_null()) else {
        return Field::Missing;
    };
    match node.as_scalar() {
        Some(s) if typing::yaml11(s) == Kind::Str && !typing::is_template(s.text) => {
            Field::Text(node, s.text)
        }
        _ => Field::Unknown,
    }
}

fn check(_cx: &Cx, obj: &Object, out: &mut Sink) {
    if !obj.is_argocd("AppProject") {
        return;
    }
    let Some(spec) = obj.spec() else { return };
    for window in spec.get("syncWindows").map(Node::items).unwrap_or(&[]) {
        if !window.is_map() {
            continue;
        }
        // A window with no selector matches no application (`SyncWindows.Matches`): whatever
        // it holds, it changes nothing.
        if !SELECTORS
            .iter()
            .any(|k| window.get(k).is_some_and(|n| !n.items().is_empty()))
        {
            continue;
        }
        check_window(window, out);
    }
}

fn check_window(window: &Node, out: &mut Sink) {
    const BLOCKED: &str = "every sync of the applications this window matches, automatic or by hand, fails with \"invalid sync window\"";
    let kind = match field(window, "kind") {
        Field::Text(node, text) if text != "allow" && text != "deny" => {
            let help = match did_you_mean(text, ["allow", "deny"]) {
                Some(s) => format!("write `kind: {s}` (the kind is case-sensitive)"),
                None => "a sync window's kind is `allow` or `deny`".to_string(),
            };
            out.report(node.span, format!("sync window kind `{text}` is neither `allow` nor `deny`: Argo CD ignores the window, which neither allows nor blocks anything (only the API and CLI check the kind; an AppProject applied from Git is not checked)"))
                .label("not allow or deny")
                .help(help);
            None
        }
        Field::Text(_, text) => Some(text),
        Field::Missing => {
            out.report(window.span, "this sync window has no `kind`: Argo CD ignores it, and it neither allows nor blocks anything")
                .label("no kind")
                .help("add `kind: allow` or `kind: deny`");
            None
        }
        Field::Unknown => None,
    };
    match field(window, "schedule") {
        Field::Text(node, text) => match parse_schedule(text) {
            Err(e) => {
                out.report(node.span, format!("sync window schedule `{text}` does not parse ({e}): {BLOCKED}"))
                    .label("not a cron schedule Argo CD reads")
                    .help("write five cron fields, `minute hour day-of-month month day-of-week`, such as `0 22 * * *`; descriptors (`@daily`) and a seconds field are not accepted, and days of the week run from 0 (Sunday) to 6");
            }
            Ok(schedule) => {
                if let Some(why) = schedule.never_fires() {
                    let what = match kind {
                        Some("deny") => ", blocking the applications it matches for good",
                        _ => "",
                    };
                    out.report(node.span, format!("sync window schedule `{text}` never starts ({why}): the cron library then returns no next start, and Argo CD counts the window as active all the time{what}"))
                        .label("never starts")
                        .help("fix the date fields so that the schedule names a day that exists");
                }
            }
        },
        Field::Missing => {
            out.report(
                window.span,
                format!("this sync window has no `schedule`: {BLOCKED}"),
            )
            .label("no schedule")
            .help("add a cron `schedule` such as `0 22 * * *`");
        }
        Field::Unknown => {}
    }
    match field(window, "duration") {
        Field::Text(node, text) => match parse_duration(text) {
            Err(e) => {
                out.report(node.span, format!("sync window duration `{text}` does not parse ({e}): {BLOCKED}"))
                    .label("not a Go duration")
                    .help("write a Go duration such as `1h`, `90m` or `2h30m`; there is no day unit, so one day is `24h`");
            }
            Ok(nanos) if nanos <= 0 => {
                let what = match kind {
                    Some("allow") => "; as an allow window it never opens, so unless another allow window is open the applications it matches do not sync automatically",
                    Some("deny") => "; as a deny window it never blocks anything",
                    _ => "",
                };
                out.report(node.span, format!("sync window duration `{text}` is not positive: the window is never active{what}"))
                    .label("never active")
                    .help("give the window a positive duration such as `1h`");
            }
            Ok(_) => {}
        },
        Field::Missing => {
            out.report(
                window.span,
                format!("this sync window has no `duration`: {BLOCKED}"),
            )
            .label("no duration")
            .help("add a `duration` such as `1h`");
        }
        Field::Unknown => {}
    }
    if let Field::Text(node, text) = field(window, "timeZone") {
        if !load_location(text) {
            let finding = out
                .report(node.span, format!("sync window timeZone `{text}` is not a time zone Argo CD can load: it logs a warning and runs the window in UTC"))
                .label("unknown time zone");
            match did_you_mean(text, zones()) {
                Some(z) => finding.help(format!("write `{z}` (zone names are case-sensitive)")),
                None => finding.help("use a tz database name such as `Europe/Berlin` or `America/New_York`, or `UTC`"),
            };
        }
    }
}
