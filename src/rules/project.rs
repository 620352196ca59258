//! AppProjects as Argo CD evaluates them, and where an Application's objects land: what the
//! project and ownership rules share.

use super::app::Tri;
use crate::glob::{gobwas as glob_match, path as path_match};
use crate::model::Object;
use crate::render::Graph;
use crate::repo;
use crate::source::SourceDb;
use crate::yaml::{typing, FileId, Node, Span};
use foldhash::HashMap;
use std::path::{Path, PathBuf};

/// The repository each file belongs to: the nearest folder holding `.gitops-lint.yaml` or
/// `.git` (under a trusted config, the run's root that holds it). Applications and projects of
/// two repositories linted together never meet.
pub struct Repos<'a> {
    sources: &'a SourceDb,
    repo: &'a repo::Repo,
    cache: HashMap<PathBuf, PathBuf>,
}

impl<'a> Repos<'a> {
    pub fn new(sources: &'a SourceDb, graph: &'a Graph) -> Repos<'a> {
        Repos {
            sources,
            repo: &graph.repo,
            cache: HashMap::default(),
        }
    }

    pub fn of(&mut self, file: FileId) -> PathBuf {
        repo::root_of_file(&self.sources.get(file).path, self.repo, &mut self.cache)
    }
}

/// A written value that is known: present, a string, and not a template.
pub fn known(node: Option<&Node>) -> Option<&str> {
    node?.as_str().filter(|s| !typing::is_template(s))
}

/// The project an Application names: an empty or missing `project` means `default`.
pub fn project_of(app: &Object) -> Option<(&str, Option<&Node>)> {
    let node = app.root.path(&["spec", "project"]);
    match node {
        None => Some(("default", None)),
        Some(n) if n.is_null() || n.as_str() == Some("") => Some(("default", node)),
        Some(n) => known(Some(n)).map(|p| (p, node)),
    }
}

/// AppProjects by repository and name. A name defined twice in different places is ambiguous
/// (an overlay per environment, say) and left out of `unique`.
pub struct Projects<'g> {
    pub by_name: HashMap<(PathBuf, String), Vec<&'g Object>>,
    pub repos_with_projects: foldhash::HashSet<PathBuf>,
}

impl<'g> Projects<'g> {
    pub fn collect(g: &'g Graph, repos: &mut Repos) -> Projects<'g> {
        let mut by_name: HashMap<(PathBuf, String), Vec<&Object>> = HashMap::default();
        let mut repos_with_projects = foldhash::HashSet::default();
        for unit in &g.units {
            let obj = &*unit.obj;
            if !obj.is_argocd("AppProject") {
                continue;
            }
            let r = repos.of(obj.file);
            repos_with_projects.insert(r.clone());
            let Some(name) = obj.name.as_deref().filter(|n| !typing::is_template(n)) else {
                continue;
            };
            let list = by_name.entry((r, name.to_string())).or_default();
            if !list.iter().any(|o| o.root.span == obj.root.span) {
                list.push(obj);
            }
        }
        Projects {
            by_name,
            repos_with_projects,
        }
    }

    /// The one definition of a project in a repository.
    pub fn unique(&self, repo: &Path, name: &str) -> Option<&'g Object> {
        match self
            .by_name
            .get(&(repo.to_path_buf(), name.to_string()))?
            .as_slice()
        {
            [one] => Some(*one),
            _ => None,
        }
    }

    pub fn names_in(&self, repo: &Path) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .by_name
            .keys()
            .filter(|(r, _)| r == repo)
            .map(|(_, n)| n.as_str())
            .collect();
        names.sort();
        names
    }
}

/// The in-cluster destination: Argo CD knows it under both spellings.
pub const IN_CLUSTER_SERVER: &str = "https://kubernetes.default.svc";
pub const IN_CLUSTER_NAME: &str = "in-cluster";

/// A destination cluster, as far as it can be known offline.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Cluster {
    pub server: Option<String>,
    pub name: Option<String>,
}

impl Cluster {
    /// The cluster an Application's `destination` names; None when it is templated or absent.
    pub fn of_destination(dest: &Node, registry: &ClusterRegistry) -> Option<Cluster> {
        let server = known(dest.get("server")).filter(|s| !s.is_empty());
        let name = known(dest.get("name")).filter(|s| !s.is_empty());
        let templated = |k| {
            dest.get(k)
                .and_then(Node::as_str)
                .is_some_and(typing::is_template)
        };
        if templated("server") || templated("name") {
            return None;
        }
        match (server, name) {
            (Some(s), None) => Some(Cluster {
                server: Some(s.trim_end_matches('/').to_string()),
                name: registry.name_of(s),
            }),
            (None, Some(n)) => Some(Cluster {
                server: registry.server_of(n),
                name: Some(n.to_string()),
            }),
            _ => None,
        }
    }

    /// One spelling for comparing clusters: the server when known, else the name.
    pub fn key(&self) -> String {
        match (&self.server, &self.name) {
            (Some(s), _) => format!("server {s}"),
            (None, Some(n)) => format!("name {n}"),
            (None, None) => String::new(),
        }
    }
}

/// Cluster names and servers the repository declares (cluster Secrets), and in-cluster.
#[derive(Default)]
pub struct ClusterRegistry {
    pairs: Vec<(String, String)>,
}

impl ClusterRegistry {
    pub fn collect(g: &Graph) -> ClusterRegistry {
        let mut pairs = vec![(IN_CLUSTER_NAME.to_string(), IN_CLUSTER_SERVER.to_string())];
        for unit in &g.units {
            let obj = &unit.obj;
            let is_cluster = obj.is("", "Secret")
                && obj
                    .root
                    .path(&["metadata", "labels", "argocd.argoproj.io/secret-type"])
                    .and_then(Node::as_str)
                    == Some("cluster");
            if !is_cluster {
                continue;
            }
            let field = |key: &str| {
                known(obj.root.path(&["stringData", key]))
                    .map(str::to_string)
                    .or_else(|| {
                        use base64::Engine;
                        let raw = known(obj.root.path(&["data", key]))?;
                        let bytes = base64::engine::general_purpose::STANDARD
                            .decode(raw.trim())
                            .ok()?;
                        String::from_utf8(bytes).ok()
                    })
            };
            if let (Some(n), Some(s)) = (field("name"), field("server")) {
                pairs.push((n, s.trim_end_matches('/').to_string()));
            }
        }
        ClusterRegistry { pairs }
    }

    pub fn server_of(&self, name: &str) -> Option<String> {
        let mut found = self.pairs.iter().filter(|(n, _)| n == name);
        match (found.next(), found.next()) {
            (Some((_, s)), None) => Some(s.clone()),
            _ => None,
        }
    }

    pub fn name_of(&self, server: &str) -> Option<String> {
        let server = server.trim_end_matches('/');
        let mut found = self.pairs.iter().filter(|(_, s)| s == server);
        match (found.next(), found.next()) {
            (Some((n, _)), None) => Some(n.clone()),
            _ => None,
        }
    }
}

/// A repository URL the way Argo CD compares them (`git.NormalizeGitURL`): lower-cased, the
/// scp-like SSH form turned into a path, `.git` dropped. `https://` stays, so an HTTPS pattern
/// does not allow the SSH spelling of the same repository.
pub fn normalize_git_url(url: &str) -> String {
    let mut u = url.trim().to_lowercase();
    let ssh = u.starts_with("ssh://")
        || (!u.contains("://")
            && u.split(['/', ':'])
                .next()
                .is_some_and(|head| head.contains('@')));
    if ssh && !u.starts_with("ssh://") {
        u = format!("ssh://{}", u.replacen(':', "/", 1));
    }
    let u = u.strip_suffix(".git").unwrap_or(&u).to_string();
    u.strip_prefix("ssh://").map(str::to_string).unwrap_or(u)
}

fn deny(pattern: &str) -> Option<&str> {
    pattern.strip_prefix('!')
}

/// Argo CD's `globMatch`: a `!` pattern matches what its glob does not.
fn glob_allow(pattern: &str, value: &str, separator: Option<char>) -> bool {
    match deny(pattern) {
        Some(inner) => !glob_match(inner, value, separator),
        None => pattern == "*" || glob_match(pattern, value, separator),
    }
}

/// `IsSourcePermitted`: some entry matches, and no `!` entry excludes the URL. The deciding
/// entry comes back: the excluding one, or none when nothing allowed it.
pub fn source_permitted<'n>(project: &'n Node, url: &str) -> (bool, Option<&'n Node>) {
    let src = normalize_git_url(url);
    let mut any = false;
    for item in project.get("sourceRepos").map(Node::items).unwrap_or(&[]) {
        let Some(p) = item.as_str() else { continue };
        let normalized = match deny(p) {
            Some(inner) => format!("!{}", normalize_git_url(inner)),
            None => normalize_git_url(p),
        };
        if glob_allow(&normalized, &src, Some('/')) {
            any = true;
        } else if deny(&normalized).is_some() {
            return (false, Some(item));
        }
    }
    (any, None)
}

fn and(a: Tri, b: Tri) -> Tri {
    match (a, b) {
        (Tri::No, _) | (_, Tri::No) => Tri::No,
        (Tri::Yes, Tri::Yes) => Tri::Yes,
        _ => Tri::Unknown,
    }
}

fn or(a: Tri, b: Tri) -> Tri {
    match (a, b) {
        (Tri::Yes, _) | (_, Tri::Yes) => Tri::Yes,
        (Tri::No, Tri::No) => Tri::No,
        _ => Tri::Unknown,
    }
}

fn not(a: Tri) -> Tri {
    match a {
        Tri::Yes => Tri::No,
        Tri::No => Tri::Yes,
        Tri::Unknown => Tri::Unknown,
    }
}

fn tri(b: bool) -> Tri {
    if b {
        Tri::Yes
    } else {
        Tri::No
    }
}

/// `IsDestinationPermitted` (`isDestinationMatched`), three-valued: a cluster spelling that
/// cannot be known offline (the server behind a cluster name, say) leaves the answer unknown
/// rather than guessed. The deciding entry comes back when the answer is no: the `!` entry that
/// excluded it; and whether some entry names the cluster, which tells a wrong cluster from a
/// wrong namespace.
///
/// Argo CD (`pkg/apis/application/v1alpha1/app_project_types.go`, the same from 2.x to 3.5)
/// judges each entry that does not match on its own terms: a `!` name denies whatever the
/// namespace; a `!` server denies only when the entry's namespace matches; a `!` namespace
/// denies only when the entry's *server* matches, so on an entry that names its cluster by
/// `name` a `!` namespace denies nothing. (`permitOnlyProjectScopedClusters` adds a condition
/// the repository cannot see; only refusals are reported, so it changes nothing here.)
pub fn destination_permitted<'n>(
    project: &'n Node,
    registry: &ClusterRegistry,
    cluster: &Cluster,
    namespace: &str,
) -> (Tri, Option<&'n Node>, bool) {
    let mut cluster_listed = false;
    let mut any = Tri::No;
    let mut excluded: Option<&Node> = None;
    let mut maybe_excluded = false;
    for item in project.get("destinations").map(Node::items).unwrap_or(&[]) {
        let field = |k| item.str_at(k).unwrap_or("");
        let (p_server, p_name, p_ns) = (field("server"), field("name"), field("namespace"));
        let side = |value: &Option<String>, pattern: &str, elsewhere: bool| match value {
            Some(v) if v.is_empty() => Tri::No,
            Some(v) => tri(glob_allow(pattern, v, None)),
            // Whatever the unknown spelling is, an empty pattern matches no cluster.
            None if pattern.is_empty() || elsewhere => Tri::No,
            None => Tri::Unknown,
        };
        let literal = |p: &'n str| {
            let plain = !p.is_empty() && !p.contains(['!', '*', '?', '[', '{', '\\']);
            plain.then_some(p)
        };
        // An entry that names a known cluster the other way round, while the application's
        // cluster is another one.
        let elsewhere_by_name = literal(p_name)
            .and_then(|n| registry.server_of(n))
            .zip(cluster.server.as_ref())
            .is_some_and(|(s, mine)| s != *mine);
        let elsewhere_by_server = literal(p_server)
            .and_then(|s| registry.name_of(s))
            .zip(cluster.name.as_ref())
            .is_some_and(|(n, mine)| n != *mine);
        let name_ok = side(&cluster.name, p_name, elsewhere_by_name);
        let server_ok = side(&cluster.server, p_server, elsewhere_by_server);
        let ns_ok = tri(glob_allow(p_ns, namespace, None));
        cluster_listed |= or(server_ok, name_ok).is_yes();
        let matched = and(or(server_ok, name_ok), ns_ok);
        any = or(any, matched);
        let is_deny = |p: &str| tri(deny(p).is_some());
        let by_name = and(not(name_ok), is_deny(p_name));
        let by_server = and(and(not(server_ok), is_deny(p_server)), ns_ok);
        let by_namespace = and(and(not(ns_ok), is_deny(p_ns)), server_ok);
        let deny_hit = or(or(by_name, by_server), by_namespace);
        // Argo CD only looks at the denials of entries that did not match.
        match and(not(matched), deny_hit) {
            Tri::Yes => excluded = excluded.or(Some(item)),
            Tri::Unknown => maybe_excluded = true,
            Tri::No => {}
        }
    }
    if excluded.is_some() {
        return (Tri::No, excluded, cluster_listed);
    }
    match any {
        Tri::Yes if maybe_excluded => (Tri::Unknown, None, cluster_listed),
        other => (other, None, cluster_listed),
    }
}

/// `IsGroupKindNamePermitted`: a cluster-scoped kind must be in `clusterResourceWhitelist`
/// (absent or empty allows none) and not in `clusterResourceBlacklist`. A namespaced kind must
/// not be in `namespaceResourceBlacklist`, and must be in `namespaceResourceWhitelist` unless
/// that list is absent: Go tells a nil list (absent, or written `null`), which allows every
/// namespaced kind, from a written empty one (`[]`), which allows none. `named` says whether
/// the cluster lists' `name` narrows an entry (from Argo CD 3.3; before, the lists held bare
/// group/kind pairs and a name narrowed nothing). The list entry that decides comes back: the
/// blacklist entry, or the whitelist key.
pub fn kind_permitted<'n>(
    project: &'n Node,
    group: &str,
    kind: &str,
    name: Option<&str>,
    cluster_scoped: bool,
    named: bool,
) -> Result<(), (&'static str, Option<&'n Node>)> {
    // An entry narrowed by a name the object's unknown name may or may not match counts as
    // matching in the whitelist and as not matching in the blacklist: nothing is guessed.
    let in_list = |key: &str, unknown_name_matches: bool| -> Option<&'n Node> {
        project
            .get(key)
            .map(Node::items)
            .unwrap_or(&[])
            .iter()
            .find(|e| {
                let k = e.str_at("kind").unwrap_or("");
                let g = e.str_at("group").unwrap_or("");
                // Only the cluster lists know `name`; empty means every name.
                let n = e
                    .str_at("name")
                    .filter(|n| !n.is_empty() && cluster_scoped && named);
                let name_ok = match (n, name) {
                    (None, _) => true,
                    (Some(p), Some(name)) => path_match(p, name),
                    (Some(_), None) => unknown_name_matches,
                };
                path_match(k, kind) && path_match(g, group) && name_ok
            })
    };
    let (white, black) = if cluster_scoped {
        ("clusterResourceWhitelist", "clusterResourceBlacklist")
    } else {
        ("namespaceResourceWhitelist", "namespaceResourceBlacklist")
    };
    let whitelisted = match project.get(white).filter(|w| !w.is_null()) {
        Some(w) if w.is_seq() => in_list(white, true).is_some(),
        // Not a list (a template): nothing is known.
        Some(_) => return Ok(()),
        None => !cluster_scoped,
    };
    if !whitelisted {
        return Err((white, project.entry(white).map(|e| &e.key)));
    }
    if let Some(entry) = in_list(black, false) {
        return Err((black, Some(entry)));
    }
    Ok(())
}

/// Which objects are cluster-scoped: the built-in kinds, and the kinds a
/// CustomResourceDefinition in the graph declares `scope: Cluster`.
pub struct Scopes {
    /// Cluster-scoped custom kinds → their groups. Keyed by kind so that a lookup for every
    /// rendered object allocates nothing.
    crds: HashMap<String, Vec<String>>,
}

impl Scopes {
    pub fn collect(g: &Graph) -> Scopes {
        let mut crds: HashMap<String, Vec<String>> = HashMap::default();
        for o in g.units.iter().map(|u| &u.obj) {
            if !crate::model::declares_cluster_kind(o.group(), &o.kind, &o.root) {
                continue;
            }
            let group = o.root.path(&["spec", "group"]).and_then(Node::as_str);
            let kind = o
                .root
                .path(&["spec", "names", "kind"])
                .and_then(Node::as_str);
            if let (Some(group), Some(kind)) = (group, kind) {
                crds.entry(kind.to_string())
                    .or_default()
                    .push(group.to_string());
            }
        }
        Scopes { crds }
    }

    pub fn cluster_scoped(&self, o: &Object) -> bool {
        crate::kinds::is_cluster_scoped(&o.kind)
            || self
                .crds
                .get(o.kind.as_str())
                .is_some_and(|groups| groups.iter().any(|g| g == o.group()))
    }
}

/// The span of a key in a map, for labels that point at a list as a whole.
pub fn key_span(map: &Node, key: &str) -> Option<Span> {
    map.entry(key).map(|e| e.key.span)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_normalize_like_argo_cd() {
        assert_eq!(
            normalize_git_url("https://GitHub.com/Org/Repo.git"),
            "https://github.com/org/repo"
        );
        assert_eq!(
            normalize_git_url("git@github.com:org/repo.git"),
            "git@github.com/org/repo"
        );
        assert_eq!(
            normalize_git_url("ssh://git@github.com/org/repo"),
            "git@github.com/org/repo"
        );
    }
}
