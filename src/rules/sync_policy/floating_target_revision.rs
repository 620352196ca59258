use crate::model::Object;
use crate::render::app_sources;
use crate::rules::app::app;
use crate::rules::{rule, Cx, Sink};
use crate::yaml::typing;

rule! {
    id: "floating-target-revision",
    category: SyncPolicy,
    severity: Warning,
    fix: None,
    summary: "A Helm chart source whose targetRevision is a range or wildcard: what is deployed is not written in Git",
    check: Check::Object(check),
}

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    let Some(app) = app(cx, obj) else { return };
    for source in app_sources(app.spec) {
        let Some(chart) = source.entry("chart") else {
            continue;
        };
        let Some(name) = chart.value.as_str().filter(|c| !c.is_empty()) else {
            continue;
        };
        if typing::is_template(name) {
            continue;
        }
        let Some(rev) = source.get("targetRevision").filter(|n| !n.is_null()) else {
            out.report(chart.key.span, format!("Helm chart `{name}` has no targetRevision: the chart version it deploys is not written in Git"))
                .label("no version pinned")
                .help("set `targetRevision` to an exact chart version such as `1.4.2`");
            continue;
        };
        let Some(text) = rev.as_str() else { continue };
        // `=1.2.3` is a constraint that admits one version.
        let exact = text.trim().strip_prefix('=').unwrap_or(text).trim_start();
        if typing::is_template(text) || is_pinned(text) || is_pinned(exact) {
            continue;
        }
        let what = if is_version(exact) {
            // Helm looks for a chart version spelt exactly so, then reads the text as a
            // constraint, in which missing parts are wildcards.
            "is a partial version, which Helm reads as a range (`1.4` takes the newest 1.4.x)"
        } else if text.trim().is_empty() {
            "is empty"
        } else if text.contains(['*', 'x', 'X']) && !text.contains(['<', '>', '^', '~', '=', '|']) {
            "is a wildcard"
        } else if text.contains(['*', 'x', 'X', '<', '>', '^', '~', '=', '|', ',', ' ']) {
            "is a version range"
        } else {
            // Neither a version nor a constraint (`latest`, a branch name): Argo CD fails to
            // resolve it, which is another problem than a floating version.
            continue;
        };
        out.report(rev.span, format!("targetRevision `{text}` of Helm chart `{name}` {what}: each sync may deploy a different chart version, and Git no longer says which one runs"))
            .label("not an exact chart version")
            .help("pin an exact version such as `1.4.2`, and raise it in a commit (Renovate or Dependabot can open those)");
    }
}

/// Whether the text names one chart version: a version with all three parts. Argo CD passes
/// any text that parses as a version to Helm unchanged, and Helm reads one that names no
/// chart version exactly as a constraint, where `1.4` admits every 1.4.x.
fn is_pinned(text: &str) -> bool {
    let t = text.strip_prefix('v').unwrap_or(text);
    let core = t.split(['-', '+']).next().unwrap_or(t);
    is_version(text) && core.split('.').count() == 3
}

/// Whether the text is one version, as Argo CD's Helm client decides (`semver.NewVersion`,
/// lenient): `v`, major, optional `.minor` and `.patch`, optional `-prerelease` and `+build`.
fn is_version(text: &str) -> bool {
    let t = text.strip_prefix('v').unwrap_or(text);
    let (t, build) = match t.split_once('+') {
        Some((t, b)) => (t, Some(b)),
        None => (t, None),
    };
    let (core, pre) = match t.split_once('-') {
        Some((c, p)) => (c, Some(p)),
        None => (t, None),
    };
    let numbers: Vec<&str> = core.split('.').collect();
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let idents = |s: &str| {
        s.split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
    };
    numbers.len() <= 3
        && numbers.iter().all(|n| digits(n))
        && pre.is_none_or(idents)
        && build.is_none_or(idents)
}

#[cfg(test)]
mod tests {
    use super::{is_pinned, is_version};

    #[test]
    fn only_a_full_version_is_pinned() {
        for v in [
            "1.4.2",
            "v1.4.2",
            "1.4.2-rc.1",
            "1.4.2+build.5",
            "1.0.0-alpha-1+x.y",
        ] {
            assert!(is_pinned(v), "{v}");
        }
        for v in ["1", "1.4", "v1.4", "1.4-rc.1", "*", "1.x", ">=1.2"] {
            assert!(!is_pinned(v), "{v}");
        }
    }

    #[test]
    fn versions_are_told_from_constraints_as_argo_cd_does() {
        for v in [
            "1.4.2",
            "v1.4.2",
            "1",
            "1.4",
            "1.4.2-rc.1",
            "1.4.2+build.5",
            "1.0.0-alpha-1+x.y",
        ] {
            assert!(is_version(v), "{v}");
        }
        for c in [
            "",
            "*",
            "1.*",
            "1.x",
            "1.4.X",
            ">=1.2",
            "^1",
            "~1.2",
            ">=1.0 <2.0",
            "1.2 - 1.4",
            "1.2 || 1.3",
            "latest",
            "1.2.3.4",
            "1..2",
            "1.2.3-",
        ] {
            assert!(!is_version(c), "{c}");
        }
    }
}
