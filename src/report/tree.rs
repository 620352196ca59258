//! The app-of-apps tree, as text or as Graphviz dot.

use crate::escape::visible;
use crate::outcome::Outcome;
use crate::render::{Graph, SourceKind};
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::Path;

// Every text below is the repository's (names, kinds, paths, URLs): each is shown with
// [`visible`], so that a tree line stays one line whatever it holds.

fn label(g: &Graph, unit: usize) -> String {
    visible(&g.units[unit].obj.display()).into_owned()
}

fn location(outcome: &Outcome, unit: usize) -> String {
    let obj = &outcome.graph.units[unit].obj;
    let at = outcome.sources.start(obj.root.span);
    format!(
        "{}:{}",
        visible(
            &outcome
                .sources
                .get(obj.root.span.file)
                .path
                .display()
                .to_string()
        ),
        at.line
    )
}

/// What an Application's sources render, counted by kind (its children excluded).
fn counts(g: &Graph, app: usize) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    let me = g.apps[app].unit;
    for &u in &g.apps[app].rendered {
        let o = &g.units[u].obj;
        if u != me && !o.is_argocd("Application") && !o.is_argocd("ApplicationSet") {
            *out.entry(o.kind.clone()).or_default() += 1;
        }
    }
    out
}

fn describe(kind: &SourceKind, repo: &crate::repo::Repo) -> String {
    visible(&describe_raw(kind, repo)).into_owned()
}

fn describe_raw(kind: &SourceKind, repo: &crate::repo::Repo) -> String {
    let rel = |p: &std::path::Path| repo.relative(p);
    match kind {
        SourceKind::External(url) => {
            format!("{url}, another repository, which gitops-lint does not read")
        }
        SourceKind::Kustomize(p) => format!("{}, built with kustomize", rel(p)),
        SourceKind::Helm(p) => format!("{}, a Helm chart rendered as helm template renders it", rel(p)),
        SourceKind::Directory(p) => format!("{}, a directory of manifests", rel(p)),
        SourceKind::NotRendered(why) => format!("{why}, which gitops-lint does not render"),
        SourceKind::Missing(p) => format!("{}, which is not a directory in the repository", rel(p)),
        SourceKind::Ref(name) => format!(
            "ref `{name}`, this repository, where the other sources read value files as `${name}/...`"
        ),
        SourceKind::Unknown => {
            "not followed: its repoURL or path is templated, or it has no path in the repository"
                .to_string()
        }
    }
}

/// `renders 1 Deployment, 2 Services`: what an Application's sources render, by kind.
fn summary(counts: &BTreeMap<String, usize>) -> String {
    let parts: Vec<String> = counts
        .iter()
        .map(|(kind, &n)| match n {
            1 => format!("1 {kind}"),
            n => format!("{n} {}", kinds(kind)),
        })
        .collect();
    let text = match parts.as_slice() {
        [] => String::new(),
        [one] => format!("renders {one}"),
        [init @ .., last] => format!("renders {} and {last}", init.join(", ")),
    };
    visible(&text).into_owned()
}

/// The plural of a kind as English forms it: `Services`, `NetworkPolicies`, `Ingresses`. A kind
/// already in the plural (`Endpoints`) stays as it is.
fn kinds(kind: &str) -> String {
    let consonant_y =
        kind.ends_with('y') && !kind[..kind.len() - 1].ends_with(['a', 'e', 'i', 'o', 'u']);
    if consonant_y {
        format!("{}ies", &kind[..kind.len() - 1])
    } else if ["ss", "us", "x", "z", "ch", "sh"]
        .iter()
        .any(|end| kind.ends_with(end))
    {
        format!("{kind}es")
    } else if kind.ends_with('s') {
        kind.to_string()
    } else {
        format!("{kind}s")
    }
}

/// Which Applications and ApplicationSets (by unit) the tree shows: all of them, or, for a
/// folder below the repository's root, those whose files it holds and what they deploy.
pub fn shown(outcome: &Outcome, only: Option<&Path>) -> Vec<bool> {
    let g = &outcome.graph;
    let Some(only) = only else {
        return vec![true; g.units.len()];
    };
    let mut shown: Vec<bool> = g
        .units
        .iter()
        .map(|u| {
            (u.obj.is_argocd("Application") || u.obj.is_argocd("ApplicationSet"))
                && !u.obj.generated
                && outcome
                    .sources
                    .get(u.obj.file)
                    .path
                    .canonicalize()
                    .is_ok_and(|p| p.starts_with(only))
        })
        .collect();
    // Down the tree: children and generated Applications.
    loop {
        let mut grew = false;
        for (a, app) in g.apps.iter().enumerate() {
            let from = shown[app.unit] || app.generated_by.is_some_and(|s| shown[s]);
            if !from {
                continue;
            }
            for u in std::iter::once(app.unit).chain(g.children(a)) {
                if !shown[u] {
                    shown[u] = true;
                    grew = true;
                }
            }
        }
        if !grew {
            return shown;
        }
    }
}

pub fn text(outcome: &Outcome, shown: &[bool], out: &mut dyn Write) -> io::Result<()> {
    let g = &outcome.graph;
    let on = |u: usize| shown[u];
    // At the top: what no shown Application deploys.
    let tops: Vec<usize> = (0..g.apps.len())
        .filter(|&a| on(g.apps[a].unit))
        .filter(|&a| {
            g.apps[a].parents.iter().all(|&p| !on(g.apps[p].unit))
                && g.apps[a].generated_by.is_none_or(|s| !on(s))
        })
        .collect();
    // ApplicationSets no shown Application renders stand at the top too.
    let sets: Vec<usize> = (0..g.units.len())
        .filter(|&u| {
            let unit = &g.units[u];
            on(u)
                && unit.lint
                && unit.obj.is_argocd("ApplicationSet")
                && unit.apps.iter().all(|&a| !on(g.apps[a].unit))
        })
        .collect();
    if tops.is_empty() && sets.is_empty() {
        writeln!(out, "No Applications found.")?;
    }
    let mut seen = vec![false; g.apps.len()];
    for a in tops {
        app_text(outcome, a, "", &mut seen, out)?;
    }
    for set in sets {
        set_text(outcome, set, "", &mut seen, out)?;
    }
    super::write_not_rendered(outcome, out)?;
    Ok(())
}

fn app_text(
    outcome: &Outcome,
    app: usize,
    indent: &str,
    seen: &mut [bool],
    out: &mut dyn Write,
) -> io::Result<()> {
    let g = &outcome.graph;
    let unit = g.apps[app].unit;
    if too_deep(indent, out)? {
        return Ok(());
    }
    if seen[app] {
        return writeln!(out, "{indent}{} (shown above)", label(g, unit));
    }
    seen[app] = true;
    writeln!(
        out,
        "{indent}{}  [{}]",
        label(g, unit),
        location(outcome, unit)
    )?;
    let inner = format!("{indent}    ");
    for s in &g.apps[app].sources {
        writeln!(out, "{inner}source: {}", describe(&s.kind, &g.repo))?;
    }
    let c = summary(&counts(g, app));
    if !c.is_empty() {
        writeln!(out, "{inner}{c}")?;
    }
    for child in g.children(app).collect::<Vec<_>>() {
        if let Some(&a) = g.app_of_unit.get(&child) {
            app_text(outcome, a, &inner, seen, out)?;
        } else {
            set_text(outcome, child, &inner, seen, out)?;
        }
    }
    Ok(())
}

fn set_text(
    outcome: &Outcome,
    set: usize,
    indent: &str,
    seen: &mut [bool],
    out: &mut dyn Write,
) -> io::Result<()> {
    let g = &outcome.graph;
    if too_deep(indent, out)? {
        return Ok(());
    }
    writeln!(
        out,
        "{indent}{}  [{}]",
        label(g, set),
        location(outcome, set)
    )?;
    for a in g.generated(set).collect::<Vec<_>>() {
        app_text(outcome, a, &format!("{indent}    "), seen, out)?;
    }
    Ok(())
}

/// Levels of the tree shown. The walk is recursive and each level indents further, so a chain of
/// thousands of Applications would overflow the stack and print an output quadratic in its
/// length; no real app-of-apps tree comes near this.
const MAX_LEVELS: usize = 50;

/// Whether `indent` is past [`MAX_LEVELS`]; if so, says so in place of the rest of the branch.
fn too_deep(indent: &str, out: &mut dyn Write) -> io::Result<bool> {
    if indent.len() < MAX_LEVELS * 4 {
        return Ok(false);
    }
    writeln!(
        out,
        "{indent}... (deeper than {MAX_LEVELS} levels, not shown)"
    )?;
    Ok(true)
}

/// A DOT string whose lines are `s`'s.
fn quote(s: &str) -> String {
    let lines: Vec<_> = s.split('\n').map(crate::escape::dot).collect();
    format!("\"{}\"", lines.join("\\n"))
}

pub fn dot(outcome: &Outcome, shown: &[bool], out: &mut dyn Write) -> io::Result<()> {
    let g = &outcome.graph;
    writeln!(out, "digraph gitops {{")?;
    writeln!(out, "  rankdir=LR;")?;
    writeln!(out, "  node [shape=box];")?;
    for (a, app) in g.apps.iter().enumerate() {
        if !shown[app.unit] {
            continue;
        }
        let mut text = label(g, app.unit);
        for s in &app.sources {
            text.push_str(&format!("\n{}", describe(&s.kind, &g.repo)));
        }
        let c = summary(&counts(g, a));
        if !c.is_empty() {
            text.push_str(&format!("\n{c}"));
        }
        // Only labels are masked: a value that is also a dot keyword must not break the graph.
        let text = outcome.secrets.mask(&text);
        writeln!(out, "  app{a} [label={}];", quote(&text))?;
    }
    for (a, app) in g.apps.iter().enumerate() {
        if !shown[app.unit] {
            continue;
        }
        for &p in app.parents.iter().filter(|&&p| shown[g.apps[p].unit]) {
            writeln!(out, "  app{p} -> app{a};")?;
        }
        if let Some(set) = app.generated_by.filter(|&s| shown[s]) {
            writeln!(out, "  set{set} -> app{a} [style=dashed];")?;
        }
    }
    let mut sets: Vec<usize> = g
        .apps
        .iter()
        .filter_map(|a| a.generated_by)
        .filter(|&s| shown[s])
        .collect();
    sets.sort();
    sets.dedup();
    for set in sets {
        writeln!(
            out,
            "  set{set} [label={}, shape=folder];",
            quote(&outcome.secrets.mask(&label(g, set)))
        )?;
        for a in (0..g.apps.len()).filter(|&a| shown[g.apps[a].unit]) {
            if g.children(a).any(|c| c == set) {
                writeln!(out, "  app{a} -> set{set};")?;
            }
        }
    }
    writeln!(out, "}}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_counted_in_english() {
        let counts: BTreeMap<String, usize> = [
            ("Deployment", 1),
            ("Ingress", 2),
            ("NetworkPolicy", 3),
            ("Endpoints", 2),
            ("Gateway", 2),
            ("Service", 2),
        ]
        .into_iter()
        .map(|(k, n)| (k.to_string(), n))
        .collect();
        assert_eq!(
            summary(&counts),
            "renders 1 Deployment, 2 Endpoints, 2 Gateways, 2 Ingresses, 3 NetworkPolicies and 2 Services"
        );
        assert_eq!(summary(&BTreeMap::new()), "");
    }
}
