use crate::finding::Severity;
use crate::render::{Graph, ProblemKind, ValueGlob};
use crate::rules::{rule, Cx, Sink, Version};

rule! {
    id: "helm-values-missing",
    category: Schema,
    severity: Error,
    fix: None,
    summary: "A Helm valueFiles entry (local or $ref/...) that does not exist in the repository, or a glob the target Argo CD version does not expand",
    check: Check::Graph(check),
}

/// The first release that expands globs in `valueFiles` (argoproj/argo-cd#26768, in 3.4.0
/// through its cherry-pick #26919).
const GLOBS_SINCE: Version = Version::new(3, 4);

fn check(cx: &Cx, g: &Graph, out: &mut Sink) {
    super::report_problems(g, out, ProblemKind::ValuesMissing, "no such file");
    for glob in &g.value_globs {
        check_glob(cx, glob, out);
    }
}

fn check_glob(cx: &Cx, glob: &ValueGlob, out: &mut Sink) {
    let version = cx.version_or_oldest();
    let text = &glob.text;
    let nothing = glob.matches == Some(false);
    if version >= GLOBS_SINCE {
        if nothing && !glob.ignore_missing {
            out.report(glob.span, format!("value file pattern `{text}` matches nothing in this repository (`{}`): Argo CD fails with \"values file glob matched no files\"", glob.rel))
                .label("matches no file")
                .help(glob.help.clone());
        }
        return;
    }
    // Before 3.4 the pattern is one file name; a file of exactly that name is read.
    if glob.literal {
        return;
    }
    let assumed = cx.version.is_none();
    let on = if assumed {
        format!("Argo CD {version} (assumed: no --argocd-version given)")
    } else {
        format!("Argo CD {version}")
    };
    if glob.ignore_missing {
        // Nothing is lost when the pattern matches nothing anyway.
        if nothing {
            return;
        }
        out.report(glob.span, format!("{on} does not expand globs in valueFiles (3.4 does): `{text}` is read as one file name, which does not exist, so `ignoreMissingValueFiles` skips it and none of the files it matches is used"))
            .severity(if assumed { Severity::Warning } else { Severity::Error })
            .label("not expanded by this version")
            .help(format!("list the files one by one, or upgrade to {GLOBS_SINCE}+ (pass --argocd-version if you already run it)"));
        return;
    }
    if nothing && assumed {
        out.report(glob.span, format!("value file pattern `{text}` matches nothing in this repository (`{}`): Argo CD fails whether it expands the glob (3.4 and later) or reads it as one file name (before 3.4)", glob.rel))
            .label("matches no file")
            .help(glob.help.clone());
        return;
    }
    out.report(glob.span, format!("{on} does not expand globs in valueFiles (3.4 does): `{text}` is read as one file name, and no such file exists, so manifest generation fails"))
        .severity(if assumed { Severity::Warning } else { Severity::Error })
        .label("not expanded by this version")
        .help(format!("list the files one by one, or upgrade to {GLOBS_SINCE}+ (pass --argocd-version if you already run it)"));
}
