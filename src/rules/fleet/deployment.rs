//! Which Applications one Argo CD holds together. `duplicate-application-name` and
//! `shared-resource` compare Applications only within one deployment, decided here.
//!
//! What the repository applies by hand (an Application or ApplicationSet that no Application
//! of the repository renders) is the top of a deployment. Only what one `kubectl apply` surely
//! takes together is one: a kustomization root, or else one file. Folders per cluster, per
//! variant or per demo are common and each goes to its own Argo CD; files side by side may be
//! alternatives of which one is applied (`console.yaml` and `console-arm.yaml`), or may be
//! reached by a parent whose path is not known offline. An Application rendered by a parent
//! lives where the parent puts it: in the
//! parent's destination cluster, in its own `metadata.namespace` or else the parent's
//! destination namespace. An Application an ApplicationSet generates lives in the
//! ApplicationSet's namespace (`applicationset/controllers/template/template.go`, v3.5.1), in
//! the cluster the ApplicationSet lives in.

use crate::render::Graph;
use crate::rules::project::{known, Cluster, ClusterRegistry, IN_CLUSTER_SERVER};
use crate::rules::Cx;
use foldhash::HashMap;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One Argo CD, as far as the repository tells: where an Application object lives.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Home {
    /// What was applied by hand at the top of the Application's chain of parents: a
    /// kustomization root, or a file.
    pub root: PathBuf,
    /// The cluster the Application object is on, as the destinations above it name it; the
    /// cluster the root was applied to is the in-cluster one.
    pub cluster: String,
    /// The namespace the Application object is in; `None` for one applied by hand without
    /// `metadata.namespace` (it lands where the one applying it points).
    pub namespace: Option<String>,
}

pub struct Deployments<'g> {
    g: &'g Graph,
    registry: ClusterRegistry,
    /// By Application index: every deployment it is part of.
    homes: Vec<Vec<Home>>,
}

#[derive(Clone, Copy, PartialEq)]
enum State {
    New,
    Visiting,
    Done,
}

/// The key [`Cluster::key`] gives the in-cluster destination, however it is spelt.
fn in_cluster() -> String {
    Cluster {
        server: Some(IN_CLUSTER_SERVER.to_string()),
        name: None,
    }
    .key()
}

impl<'g> Deployments<'g> {
    pub fn collect(cx: &Cx, g: &'g Graph) -> Deployments<'g> {
        let root_of: HashMap<usize, &Path> = g
            .roots
            .iter()
            .flat_map(|(dir, units)| units.iter().map(move |&u| (u, dir.as_path())))
            .collect();
        let mut d = Deployments {
            g,
            registry: ClusterRegistry::collect(g),
            homes: vec![Vec::new(); g.apps.len()],
        };
        let mut walk = Walk {
            cx,
            root_of,
            state: vec![State::New; g.apps.len()],
            in_cluster: in_cluster(),
        };
        for a in 0..g.apps.len() {
            walk.visit(&mut d, a);
        }
        d
    }

    /// Every deployment Application `app` is part of; none when where it lives is templated.
    pub fn homes(&self, app: usize) -> &[Home] {
        &self.homes[app]
    }

    /// Where Application `app`, living in `home`, deploys: the cluster (its in-cluster
    /// destination is the cluster it lives on) and the destination namespace (empty when
    /// not set). None when the destination is templated or missing.
    pub fn target(&self, app: usize, home: &Home) -> Option<(String, &'g str)> {
        let dest = self.g.app_obj(app).root.path(&["spec", "destination"])?;
        let mut cluster = Cluster::of_destination(dest, &self.registry)?.key();
        if cluster == in_cluster() {
            cluster.clone_from(&home.cluster);
        }
        let ns = match dest.get("namespace") {
            Some(n) if !n.is_null() => known(Some(n))?,
            _ => "",
        };
        Some((cluster, ns))
    }
}

struct Walk<'c, 'g> {
    cx: &'c Cx<'c>,
    root_of: HashMap<usize, &'g Path>,
    state: Vec<State>,
    in_cluster: String,
}

impl Walk<'_, '_> {
    fn visit(&mut self, d: &mut Deployments, a: usize) {
        if self.state[a] != State::New {
            return;
        }
        self.state[a] = State::Visiting;
        let g = d.g;
        // The object whose parents place it: the Application, or the ApplicationSet that
        // generated it (the generated one takes its namespace).
        let placed = g.apps[a].generated_by.unwrap_or(g.apps[a].unit);
        let namespace = match g.units[placed].obj.root.path(&["metadata", "namespace"]) {
            None => None,
            Some(n) => match known(Some(n)) {
                Some(ns) => Some(ns.to_string()),
                // Templated (or not a string): where it lives is not guessed.
                None => {
                    self.state[a] = State::Done;
                    return;
                }
            },
        };
        let parents: Vec<usize> = g.units[placed]
            .apps
            .iter()
            .copied()
            .filter(|&p| p != a && g.apps[p].unit != placed)
            .collect();
        let mut homes = BTreeSet::new();
        let mut placed_by_parent = false;
        for p in parents {
            self.visit(d, p);
            // A parent still being visited renders its own ancestor: a ring, which places
            // nothing.
            if self.state[p] != State::Done {
                continue;
            }
            placed_by_parent = true;
            let Some(dest) = g.app_obj(p).root.path(&["spec", "destination"]) else {
                continue;
            };
            let Some(cluster) = Cluster::of_destination(dest, &d.registry) else {
                continue;
            };
            let ns = match &namespace {
                Some(ns) => ns.clone(),
                None => match dest.get("namespace") {
                    Some(n) if !n.is_null() => match known(Some(n)) {
                        Some(ns) => ns.to_string(),
                        None => continue,
                    },
                    _ => String::new(),
                },
            };
            let key = cluster.key();
            for h in &d.homes[p] {
                let cluster = if key == self.in_cluster {
                    h.cluster.clone()
                } else {
                    key.clone()
                };
                homes.insert(Home {
                    root: h.root.clone(),
                    cluster,
                    namespace: Some(ns.clone()),
                });
            }
        }
        if !placed_by_parent {
            let root = match self.root_of.get(&placed) {
                Some(dir) => dir.to_path_buf(),
                None => self.cx.sources.get(g.units[placed].obj.file).path.clone(),
            };
            homes.insert(Home {
                root,
                cluster: self.in_cluster.clone(),
                namespace,
            });
        }
        d.homes[a] = homes.into_iter().collect();
        self.state[a] = State::Done;
    }
}
