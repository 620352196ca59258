use crate::model::Object;
use crate::rules::{rule, Cx, Sink};
use crate::yaml::typing::{self, Kind};

rule! {
    id: "sync-wave-invalid",
    category: SyncPolicy,
    severity: Error,
    fix: None,
    summary: "An argocd.argoproj.io/sync-wave annotation that is not an integer string: the object syncs in wave 0",
    check: Check::Object(check),
}

const KEY: &str = "argocd.argoproj.io/sync-wave";

fn check(_cx: &Cx, obj: &Object, out: &mut Sink) {
    let Some(node) = obj.annotation(KEY) else {
        return;
    };
    let Some(scalar) = node.as_scalar() else {
        out.report(
            node.span,
            "the sync wave must be a string holding an integer, such as `\"5\"`",
        )
        .label("not a string")
        .help(format!("write `{KEY}: \"0\"` with the wave you mean"));
        return;
    };
    let text = scalar.text;
    if typing::is_template(text) {
        return;
    }
    match typing::yaml11(scalar) {
        Kind::Str => {}
        // The API server only takes string annotations; Argo CD's own reading of the object
        // drops every annotation it has when one is not a string.
        Kind::Int if is_wave(text) => {
            out.report(node.span, format!("sync wave `{text}` is a number, but annotation values must be strings: the object is rejected"))
                .label("a YAML number")
                .help(format!("quote it: `{KEY}: \"{text}\"`"));
            return;
        }
        _ => {
            out.report(node.span, format!("sync wave `{text}` is not a string"))
                .label("not a string")
                .help(format!("write `{KEY}: \"0\"` with the wave you mean"));
            return;
        }
    }
    if !is_wave(text) {
        out.report(node.span, format!("sync wave `{text}` is not an integer: Argo CD ignores it and syncs the object in wave 0"))
            .label("not an integer")
            .help(match suggestion(text) {
                Some(n) => format!("write `{KEY}: \"{n}\"`"),
                None => "a sync wave is a whole number such as \"-1\", \"0\" or \"5\"; lower waves sync first".to_string(),
            });
    }
}

/// Whether Go's `strconv.Atoi` reads the text: an optional sign, then ASCII digits, within
/// the range of a 64-bit integer.
fn is_wave(text: &str) -> bool {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && text.parse::<i64>().is_ok()
}

/// The integer the text evidently means: the same number with spaces around it, or written
/// as a whole float (`5.0`).
fn suggestion(text: &str) -> Option<String> {
    let t = text.trim();
    if is_wave(t) {
        return Some(t.to_string());
    }
    let f: f64 = t.parse().ok()?;
    (f.fract() == 0.0
        && f.abs() < 1e15
        && t.bytes().all(|b| b.is_ascii_digit() || b"+-.".contains(&b)))
    .then(|| format!("{}", f as i64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_waves_as_go_atoi_does() {
        for ok in ["0", "5", "-1", "+3", "007", "-9223372036854775808"] {
            assert!(is_wave(ok), "{ok}");
        }
        for bad in [
            "",
            " 1",
            "1 ",
            "1.0",
            "1e3",
            "one",
            "0x10",
            "1_000",
            "--1",
            "+",
            "9223372036854775808",
            "１",
        ] {
            assert!(!is_wave(bad), "{bad}");
        }
    }

    #[test]
    fn suggests_only_the_evident_integer() {
        assert_eq!(suggestion(" 2 ").as_deref(), Some("2"));
        assert_eq!(suggestion("3.0").as_deref(), Some("3"));
        assert_eq!(suggestion("2.5"), None);
        assert_eq!(suggestion("late"), None);
        assert_eq!(suggestion("inf"), None);
    }
}
