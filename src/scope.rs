//! Narrowing a run to what a few changed files need. With `--context`, only the changed files
//! are reported, but they are understood in their repository: the kustomizations that include
//! them (and those kustomizations' other inputs) and every Application that could render
//! them. Everything else is not parsed, so a one-file change does not cost a whole-repository
//! lint. The choice is made on paths and a cheap text check, before the parse stage.

use crate::discover::is_kustomization_file;
use crate::paths::normalize;
use crate::paths::normalized;
use crate::yaml::{self, Node};
use foldhash::{HashMap, HashSet};
use rayon::prelude::*;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// Paths a kustomization names: resources, bases, components, patch files.
fn references(dir: &Path, k: &Node) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut push = |s: &str| {
        if !s.contains("://") && !s.contains('\n') {
            out.push(normalize(&dir.join(s)));
        }
    };
    for field in ["resources", "bases", "components", "patchesStrategicMerge"] {
        for item in k.get(field).map(Node::items).unwrap_or(&[]) {
            if let Some(s) = item.as_str() {
                push(s);
            }
        }
    }
    for field in ["patches", "patchesJson6902"] {
        for item in k.get(field).map(Node::items).unwrap_or(&[]) {
            if let Some(s) = item.as_str().or_else(|| item.str_at("path")) {
                push(s);
            }
        }
    }
    out
}

/// A directory an Application (or an ApplicationSet's template) reads, below its root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    pub dir: PathBuf,
    pub recurse: bool,
    /// The fixed part of a templated path (`services/` of `services/{{.name}}`): whichever
    /// directory below it an Application ends up reading, plain or through a kustomization.
    pub prefix: bool,
}

/// What the first look at a file found: all that choosing the files of a `--context` run
/// needs to know about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seen {
    /// A kustomization: its directory and the paths it references.
    Kustomization(PathBuf, Vec<PathBuf>),
    /// A file that mentions Argo CD, or declares cluster-scoped kinds (a CRD).
    Argo(Argo),
    Other,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Argo {
    /// The local directories its Applications (and ApplicationSet templates) read.
    pub sources: Vec<Source>,
    /// ApplicationSet git generator patterns, below the root: directories, and files it reads.
    pub dir_globs: Vec<String>,
    pub file_globs: Vec<String>,
    /// It holds Argo CD objects, not only a manifest that names Argo CD in an annotation.
    pub objects: bool,
    /// It is needed whatever changed: it holds an object whose reach paths cannot tell (an
    /// ApplicationSet, an Application with a templated path) or settings that other objects
    /// read (an AppProject, an `argocd-*` ConfigMap or Secret, a cluster or repository
    /// Secret, a CRD that makes its kind cluster-scoped, which projects' cluster whitelists
    /// then apply to, a ValidatingAdmissionPolicy or its binding). Applications that a kustomization includes are needed too (a patch may
    /// change their paths): [`wanted`] sees to those.
    pub always: bool,
    /// It holds settings that Applications or projects read whatever they deploy (an
    /// AppProject, an `argocd-*` ConfigMap or Secret, a cluster or repository Secret, a CRD
    /// that makes its kind cluster-scoped, an admission policy or binding): a change to it may change a finding on any object
    /// any Application deploys, so all of them are read.
    pub global: bool,
    /// It holds an admission policy that takes params (`paramKind`): they may be objects of
    /// any kind in any file, deployed or not, so every file is read whatever changed.
    pub params: bool,
}

/// The root `path` lies in: the deepest of `roots`.
fn root_of<'r>(roots: &'r [PathBuf], path: &Path) -> &'r Path {
    crate::paths::deepest_root(roots, path).unwrap_or(Path::new(""))
}

fn argo(root: &Path, docs: &[&Node]) -> Argo {
    let mut seen = Argo::default();
    let add_sources = |spec: Option<&Node>, out: &mut Argo| {
        let Some(spec) = spec else { return };
        for src in crate::render::app_sources(spec) {
            let Some(path) = src.str_at("path") else {
                continue;
            };
            if let Some(at) = path.find("{{") {
                out.always = true;
                let fixed = path[..at].rsplit_once('/').map_or("", |(dir, _)| dir);
                out.sources.push(Source {
                    dir: normalize(&root.join(fixed)),
                    recurse: true,
                    prefix: true,
                });
                continue;
            }
            let recurse = src
                .path(&["directory", "recurse"])
                .and_then(Node::as_scalar)
                .and_then(yaml::typing::as_bool)
                .unwrap_or(false);
            out.sources.push(Source {
                dir: normalize(&root.join(path)),
                recurse,
                prefix: false,
            });
        }
    };
    for doc in docs {
        let argo_api = doc
            .str_at("apiVersion")
            .is_some_and(|v| v.starts_with("argoproj.io/"));
        let argocd_named = doc
            .path(&["metadata", "name"])
            .and_then(Node::as_str)
            .is_some_and(|n| n.starts_with("argocd-"));
        // Cluster, repository and credential Secrets, which Applications and projects name.
        let argocd_secret = doc
            .path(&["metadata", "labels", "argocd.argoproj.io/secret-type"])
            .is_some();
        let settings = argocd_named || argocd_secret;
        seen.objects |= argo_api || settings;
        let group = doc.str_at("apiVersion").map_or("", crate::model::group_of);
        let kind = doc.str_at("kind").unwrap_or_default();
        let cluster_kind = crate::model::declares_cluster_kind(group, kind, doc);
        // An admission policy or binding applies to whatever any Application deploys.
        let admission = group == "admissionregistration.k8s.io"
            && matches!(
                kind,
                "ValidatingAdmissionPolicy" | "ValidatingAdmissionPolicyBinding"
            );
        seen.always |= cluster_kind || admission;
        seen.params |= admission
            && kind == "ValidatingAdmissionPolicy"
            && doc.path(&["spec", "paramKind"]).is_some();
        seen.global |= cluster_kind || admission || settings || (argo_api && kind == "AppProject");
        match kind {
            "Application" => add_sources(doc.get("spec"), &mut seen),
            "ApplicationSet" => {
                seen.always = true;
                add_sources(doc.path(&["spec", "template", "spec"]), &mut seen);
                let mut stack: Vec<&Node> = doc.path(&["spec", "generators"]).into_iter().collect();
                while let Some(n) = stack.pop() {
                    if let Some(git) = n.get("git") {
                        for (key, out) in [
                            ("directories", &mut seen.dir_globs),
                            ("files", &mut seen.file_globs),
                        ] {
                            for e in git.get(key).map(Node::items).unwrap_or(&[]) {
                                let pattern = e.str_at("path").unwrap_or("");
                                let full = normalize(&root.join(pattern));
                                out.push(full.to_string_lossy().into_owned());
                            }
                        }
                    }
                    match &n.value {
                        yaml::Value::Map { entries, .. } => {
                            stack.extend(entries.iter().map(|e| &e.value))
                        }
                        yaml::Value::Seq { items, .. } => stack.extend(items.iter()),
                        yaml::Value::Scalar(_) => {}
                    }
                }
            }
            _ => seen.always |= argo_api || settings,
        }
    }
    seen
}

/// Why the first look at a file needs its documents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// A kustomization, for what it references.
    Kustomization,
    /// It may hold Argo CD objects, for the directories they read, or admission policies,
    /// which every Application's objects are checked against.
    Argo,
    /// It may hold a CRD that makes its kind cluster-scoped (its text holds `Cluster`).
    Kinds,
}

/// Whether the first look at a file needs its documents, and why. Every other file is only
/// named.
pub fn needs_documents(path: &Path, bytes: &[u8]) -> Option<Need> {
    let has = |needle: &[u8]| memchr::memmem::find(bytes, needle).is_some();
    if is_kustomization_file(path) {
        Some(Need::Kustomization)
    } else if has(b"argoproj.io") || has(b"argocd-") || has(b"ValidatingAdmissionPolicy") {
        Some(Need::Argo)
    } else if has(b"CustomResourceDefinition") && has(b"Cluster") {
        Some(Need::Kinds)
    } else {
        None
    }
}

/// The first look at a file that [`needs_documents`] for `need`: `docs` holds the roots of its
/// documents in order, and `roots` the run's roots, normalized. (Every other file is
/// [`Seen::Other`].)
pub fn first_look(path: &Path, need: Need, docs: &[&Node], roots: &[PathBuf]) -> Seen {
    let path = normalize(path);
    match need {
        Need::Kustomization => {
            let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
            let refs = docs
                .first()
                .map(|root| references(&dir, root))
                .unwrap_or_default();
            Seen::Kustomization(dir, refs)
        }
        Need::Argo => Seen::Argo(argo(root_of(roots, &path), docs)),
        Need::Kinds => match argo(root_of(roots, &path), docs) {
            a if a.always => Seen::Argo(a),
            _ => Seen::Other,
        },
    }
}

fn globs(patterns: &[String]) -> Vec<globset::GlobMatcher> {
    patterns
        .iter()
        .filter_map(|p| crate::glob::files(p, true))
        .collect()
}

/// Which of `files` to parse so that findings caused by `changed` are found as in a full run:
/// the changed files; the kustomizations that include a changed file (and what they include),
/// and those that list a needed Argo CD file; the plain directories an Application reads where
/// they hold a changed file; and the Argo CD files that can matter. When a changed file holds
/// Argo CD objects, that is all of them, as rules across Applications may then place a finding
/// in it. Otherwise it is those [`Argo::always`] needed, and the Applications that render a
/// needed file, their parents, and so on up. `seen` holds each file's [`first_look`].
pub fn wanted(files: &[PathBuf], seen: &[Seen], changed: &[PathBuf]) -> Vec<bool> {
    use crate::paths::{bytes as key, parent_normal, starts_with_normal};
    // Every path here is normalized, so byte equality is path equality and the sets below are
    // keyed by bytes: hashing a `Path` parses its components, for every lookup.
    let paths: Vec<Cow<Path>> = files.par_iter().map(|p| normalized(p)).collect();
    let changed: Vec<PathBuf> = changed.iter().map(|p| normalize(p)).collect();
    let is_changed = |p: &[u8]| changed.iter().any(|c| starts_with_normal(p, key(c)));
    let mine: Vec<bool> = paths.par_iter().map(|p| is_changed(key(p))).collect();
    let holds_change = |s: &Source| {
        changed.iter().any(|c| {
            // A chart is rendered whole: any file in it changes what it renders.
            c.starts_with(&s.dir)
                && (s.recurse
                    || c.parent() == Some(s.dir.as_path())
                    || *c == s.dir
                    || s.dir.join("Chart.yaml").is_file())
        })
    };
    let every_argo = seen
        .iter()
        .zip(&mine)
        .any(|(s, &m)| m && matches!(s, Seen::Argo(a) if a.objects));
    let params = seen.iter().any(|s| matches!(s, Seen::Argo(a) if a.params));
    if params
        || seen
            .iter()
            .zip(&mine)
            .any(|(s, &m)| m && matches!(s, Seen::Argo(a) if a.global))
    {
        return vec![true; files.len()];
    }
    // Kustomization directory → what it references, and the reverse.
    let mut kustomizations: HashMap<&[u8], &[PathBuf]> = HashMap::default();
    let mut included_by: HashMap<&[u8], Vec<&[u8]>> = HashMap::default();
    let mut seeds: HashSet<&[u8]> = HashSet::default();
    // Plain directories to read whole: (dir, recurse).
    let mut dirs: Vec<(&Path, bool)> = Vec::new();
    let mut file_globs = Vec::new();
    let mut dir_globs = Vec::new();
    let mut prefixes: Vec<&Path> = Vec::new();
    for (seen, &mine) in seen.iter().zip(&mine) {
        match seen {
            Seen::Kustomization(dir, refs) => {
                let d = key(dir);
                if mine || is_changed(d) || refs.iter().any(|r| is_changed(key(r))) {
                    seeds.insert(d);
                }
                kustomizations.insert(d, refs);
                for r in refs {
                    included_by.entry(key(r)).or_default().push(d);
                }
            }
            Seen::Argo(a) => {
                file_globs.extend(globs(&a.file_globs));
                for s in &a.sources {
                    // A templated path reaches every directory below its fixed part, so only
                    // a change to the file itself reads all of them; a change below is read
                    // already, with what includes it.
                    if s.prefix && mine {
                        prefixes.push(&s.dir);
                        dirs.push((&s.dir, true));
                    } else if !s.prefix && (mine || holds_change(s)) {
                        seeds.insert(key(&s.dir));
                        dirs.push((&s.dir, s.recurse));
                    }
                }
                if mine {
                    dir_globs.extend(globs(&a.dir_globs));
                }
            }
            Seen::Other => {}
        }
    }
    // An Application that a changed kustomization lists (or one that includes a change, or
    // includes one of those) may have just come into its parent's render: read its sources
    // as if its own file had changed.
    let mut reaching: HashSet<&[u8]> = seeds
        .iter()
        .copied()
        .filter(|d| kustomizations.contains_key(d))
        .collect();
    let mut stack: Vec<&[u8]> = reaching.iter().copied().collect();
    while let Some(dir) = stack.pop() {
        for &up in included_by.get(dir).into_iter().flatten() {
            if reaching.insert(up) {
                stack.push(up);
            }
        }
    }
    for ((seen, &mine), path) in seen.iter().zip(&mine).zip(&paths) {
        let Seen::Argo(a) = seen else { continue };
        let listed = !mine
            && included_by
                .get(key(path))
                .is_some_and(|by| by.iter().any(|d| reaching.contains(d)));
        if !listed {
            continue;
        }
        for s in &a.sources {
            if s.prefix {
                prefixes.push(&s.dir);
                dirs.push((&s.dir, true));
            } else {
                seeds.insert(key(&s.dir));
                dirs.push((&s.dir, s.recurse));
            }
        }
    }
    // The kustomizations below a changed templated path, with what they include.
    for seen in seen {
        if let Seen::Kustomization(dir, _) = seen {
            if prefixes.iter().any(|p| dir.starts_with(p)) {
                seeds.insert(key(dir));
            }
        }
    }
    // An Argo CD file that a kustomization includes may come out of kustomize with other paths
    // than it holds (a patch, a prefix), so its first look cannot tell what it renders.
    let mut argo_wanted: Vec<bool> = seen
        .iter()
        .zip(&mine)
        .zip(&paths)
        .map(|((s, &m), path)| match s {
            Seen::Argo(a) => {
                every_argo
                    || a.always
                    || m
                    || a.sources.iter().any(holds_change)
                    || (a.objects && included_by.contains_key(key(path)))
            }
            _ => false,
        })
        .collect();
    // Directories a changed ApplicationSet generates Applications for.
    let mut matched: Vec<&Path> = Vec::new();
    if !dir_globs.is_empty() {
        let parents: HashSet<&Path> = paths.iter().filter_map(|p| p.parent()).collect();
        matched = seen
            .iter()
            .filter_map(|s| match s {
                Seen::Kustomization(dir, _) => Some(dir.as_path()),
                _ => None,
            })
            .chain(parents)
            .filter(|d| {
                dir_globs
                    .iter()
                    .any(|m: &globset::GlobMatcher| m.is_match(d))
            })
            .collect();
        matched.sort();
        matched.dedup();
    }
    for d in matched {
        seeds.insert(key(d));
        dirs.push((d, false));
    }
    loop {
        let want = wanted_with(
            &paths,
            &mine,
            &argo_wanted,
            &kustomizations,
            &included_by,
            &seeds,
            &dirs,
            &file_globs,
        );
        // The Applications that render a needed file are needed too: their rules and their
        // parents see it. Each round adds a level of app-of-apps.
        let mut parents: HashSet<&[u8]> = HashSet::default();
        let mut ancestors: HashSet<&[u8]> = HashSet::default();
        for (p, _) in paths.iter().zip(&want).filter(|(_, w)| **w) {
            let mut up = parent_normal(key(p));
            if let Some(d) = up {
                parents.insert(d);
            }
            while let Some(d) = up {
                if !ancestors.insert(d) {
                    break;
                }
                up = parent_normal(d);
            }
        }
        let mut grew = false;
        for (s, w) in seen.iter().zip(argo_wanted.iter_mut()) {
            if let (Seen::Argo(a), false) = (s, *w) {
                let renders = |s: &Source| {
                    let d = key(&s.dir);
                    parents.contains(d) || (s.recurse && ancestors.contains(d))
                };
                if a.sources.iter().any(renders) {
                    *w = true;
                    grew = true;
                }
            }
        }
        if !grew {
            return want;
        }
    }
}

/// One round of [`wanted`], with the Argo CD files chosen so far.
#[allow(clippy::too_many_arguments)]
fn wanted_with(
    paths: &[Cow<Path>],
    mine: &[bool],
    argo_wanted: &[bool],
    kustomizations: &HashMap<&[u8], &[PathBuf]>,
    included_by: &HashMap<&[u8], Vec<&[u8]>>,
    seeds: &HashSet<&[u8]>,
    dirs: &[(&Path, bool)],
    file_globs: &[globset::GlobMatcher],
) -> Vec<bool> {
    use crate::paths::{bytes as key, parent_normal, starts_with_normal};
    let argo_files: HashSet<&[u8]> = paths
        .iter()
        .zip(argo_wanted)
        .filter(|(_, w)| **w)
        .map(|(p, _)| key(p))
        .collect();
    let mut seeds = seeds.clone();
    // Kustomizations that list a needed Argo CD file: the app-of-apps containers.
    for (dir, refs) in kustomizations {
        if refs.iter().any(|r| argo_files.contains(key(r))) {
            seeds.insert(dir);
        }
    }
    // Those kustomizations, then those that include them (overlays), then what all of those
    // include (bases and components).
    let mut related: HashSet<&[u8]> = seeds
        .into_iter()
        .filter(|d| kustomizations.contains_key(d))
        .collect();
    let mut stack: Vec<&[u8]> = related.iter().copied().collect();
    while let Some(dir) = stack.pop() {
        for &up in included_by.get(dir).into_iter().flatten() {
            if related.insert(up) {
                stack.push(up);
            }
        }
    }
    let mut stack: Vec<&[u8]> = related.iter().copied().collect();
    while let Some(dir) = stack.pop() {
        for r in kustomizations.get(dir).copied().unwrap_or_default() {
            let r = key(r);
            if kustomizations.contains_key(r) && related.insert(r) {
                stack.push(r);
            }
        }
    }
    let inputs: HashSet<&[u8]> = related
        .iter()
        .flat_map(|d| kustomizations.get(d).copied().unwrap_or_default())
        .map(|r| key(r))
        .collect();
    paths
        .par_iter()
        .zip(mine.par_iter().zip(argo_wanted))
        .map(|(path, (&mine, &argo))| {
            let p = key(path);
            let parent = parent_normal(p);
            let in_related_dir = parent.is_some_and(|d| related.contains(d));
            let in_read_dir = dirs.iter().any(|(d, recurse)| {
                parent == Some(key(d)) || (*recurse && starts_with_normal(p, key(d)))
            });
            let generator_input = file_globs.iter().any(|m| m.is_match(path));
            mine || argo || inputs.contains(p) || in_related_dir || in_read_dir || generator_input
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn look(text: &str) -> Option<Seen> {
        let path = Path::new("crds/widgets.yaml");
        let need = needs_documents(path, text.as_bytes())?;
        let parsed = yaml::parse(0, text, yaml::ParseLimits::default());
        let docs: Vec<&Node> = parsed.documents.iter().map(|d| &d.root).collect();
        Some(first_look(path, need, &docs, &[PathBuf::new()]))
    }

    #[test]
    fn only_crds_that_make_a_kind_cluster_scoped_are_always_needed() {
        let crd = |scope: &str| {
            format!("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.acme.io\nspec:\n  group: acme.io\n  names:\n    kind: Widget\n  scope: {scope}\n")
        };
        assert!(matches!(look(&crd("Cluster")), Some(Seen::Argo(a)) if a.always && !a.objects));
        assert!(matches!(look(&crd("\"Cluster\"")), Some(Seen::Argo(a)) if a.always));
        // Namespaced, though the text says `Cluster` elsewhere: parsed, and found not needed.
        let text = crd("Namespaced") + "  # see ClusterWidget\n";
        assert_eq!(look(&text), Some(Seen::Other));
        // Not parsed at all.
        assert_eq!(look(&crd("Namespaced")), None);
        // A file that mentions Argo CD keeps its look, and a cluster CRD in it makes it needed.
        let text = crd("Cluster").replace(
            "metadata:\n",
            "metadata:\n  annotations:\n    argocd.argoproj.io/sync-options: Replace=true\n",
        );
        assert!(matches!(look(&text), Some(Seen::Argo(a)) if a.always));
    }
}
