//! Every Helm render of a run, together: each chart folder is loaded once, a chart rendered
//! with the same options again is not rendered again, and all of them share one work budget,
//! spent in a fixed order so that which renders it stops never depends on the threads.
//!
//! The order is the graph's: first every `helmCharts` entry of every kustomization, in path
//! order and entry order ([`Renders::prefill`], rendered in parallel and then checked against
//! the run's [`Ledger`] in that order, as ApplicationSets are), then each Application's chart
//! in the order the graph meets the Application.

use super::chart::{Chart, LoadError};
use super::{render_known as render, Failure, FailureKind, Manifest, Options, WORK_STEPS};
use crate::render::budget::{Budget, Ledger, RunMeter, BYTES_PER_STEP};
use foldhash::HashMap;
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Work all the Helm renders of a run may take together: twice what one chart may. Common
/// charts take a fraction of a percent of one chart's budget, so a fleet of a thousand distinct
/// renders fits; a repository of costly ones stops after about 10 s of a release build.
pub const RUN_WORK_STEPS: u64 = 2 * WORK_STEPS;

/// A render's outcome, shared by every use of it.
pub type Rendered = Result<Arc<Vec<Manifest>>, Failure>;

/// A chart as loaded, with a digest of everything it holds.
#[derive(Debug)]
pub struct Loaded {
    pub chart: Chart,
    digest: [u8; 32],
}

/// The run's Helm renders.
#[derive(Debug)]
pub struct Renders {
    charts: HashMap<(PathBuf, PathBuf), Result<Arc<Loaded>, LoadError>>,
    done: HashMap<[u8; 32], Rendered>,
    ledger: Ledger,
    /// Renders the run's budget stopped.
    pub cut: usize,
}

impl Default for Renders {
    fn default() -> Self {
        Renders::new(RUN_WORK_STEPS)
    }
}

impl Renders {
    pub fn new(run_steps: u64) -> Renders {
        Renders {
            charts: HashMap::default(),
            done: HashMap::default(),
            ledger: Ledger::new(WORK_STEPS, run_steps),
            cut: 0,
        }
    }

    /// The chart in `dir`, loaded once per run. `root` bounds where links may lead.
    pub fn load(&mut self, dir: &Path, root: &Path) -> Result<Arc<Loaded>, LoadError> {
        self.charts
            .entry((dir.to_path_buf(), root.to_path_buf()))
            .or_insert_with(|| {
                super::chart::load(dir, root).map(|chart| {
                    let mut h = Sha256::new();
                    digest_chart(&chart, &mut h);
                    Arc::new(Loaded {
                        chart,
                        digest: h.finalize().into(),
                    })
                })
            })
            .clone()
    }

    /// `chart` rendered with `opts`, charged to the run: a first render costs its work, a
    /// render already done costs the bytes it hands out again. Past the run's budget, a
    /// [`FailureKind::Run`] failure.
    pub fn render(&mut self, chart: &Loaded, opts: &Options) -> Rendered {
        let key = key(chart, opts);
        if let Some(done) = self.done.get(&key) {
            let cost = again(done);
            let cut = matches!(done, Err(f) if f.kind == FailureKind::Run);
            if cut || cost > self.ledger.allowance() {
                self.ledger.spend(cost);
                return Err(self.spent());
            }
            self.ledger.spend(cost);
            return done.clone();
        }
        self.fresh(key, chart, opts)
    }

    /// A first render, with what the ledger allows now.
    fn fresh(&mut self, key: [u8; 32], chart: &Loaded, opts: &Options) -> Rendered {
        if self.ledger.spent() {
            let cut = Err(self.spent());
            self.done.insert(key, cut.clone());
            return cut;
        }
        let mut work = self.ledger.budget();
        let result = render(&chart.chart, opts, &mut work).map(Arc::new);
        self.settle(key, result, &work)
    }

    /// Renders `requests` as [`Renders::render`] would one after the other, the distinct ones
    /// in parallel. A request made before in the list is not charged again: the builds that
    /// look it up share its one render.
    pub fn prefill(&mut self, requests: &[(Arc<Loaded>, Options)]) {
        let mut seen = foldhash::HashSet::default();
        let first: Vec<([u8; 32], &Loaded, &Options)> = requests
            .iter()
            .map(|(c, o)| (key(c, o), &**c, o))
            .filter(|(k, _, _)| !self.done.contains_key(k) && seen.insert(*k))
            .collect();
        // Each task stops once the run's meter is spent; which ones it stops depends on
        // timing, so each is checked below, in order, against what the ledger allows then.
        let meter = RunMeter::new(self.ledger.left());
        let ahead: Vec<(Rendered, Budget)> = first
            .par_iter()
            .with_max_len(1)
            .map(|(_, chart, opts)| {
                let mut work = Budget::metered(WORK_STEPS, meter.clone());
                let result = render(&chart.chart, opts, &mut work).map(Arc::new);
                work.flush();
                (result, work)
            })
            .collect();
        for ((key, chart, opts), (result, work)) in first.into_iter().zip(ahead) {
            // Kept in `done`, where the builds look it up.
            let _kept = if self.ledger.accepts(&work) {
                self.settle(key, result, &work)
            } else {
                self.fresh(key, chart, opts)
            };
        }
    }

    /// What is loaded and rendered so far, for builders on other threads to look up.
    pub fn prefilled(&self) -> Prefilled {
        Prefilled {
            charts: self.charts.clone(),
            done: self.done.clone(),
        }
    }

    /// Records a first render and charges its work.
    fn settle(&mut self, key: [u8; 32], result: Rendered, work: &Budget) -> Rendered {
        let cut = work.run_spent();
        self.ledger.spend(work.used());
        let result = if cut { Err(self.spent()) } else { result };
        self.done.insert(key, result.clone());
        result
    }

    fn spent(&mut self) -> Failure {
        self.cut += 1;
        Failure {
            kind: FailureKind::Run,
            message: format!(
                "the charts rendered before this one spent the run's budget for Helm ({RUN_WORK_STEPS} steps)"
            ),
            at: None,
            values: Vec::new(),
        }
    }
}

/// The renders [`Renders::prefill`] made: looked up, never charged again (each request was
/// charged once, in order, when it was made).
#[derive(Debug, Default)]
pub struct Prefilled {
    charts: HashMap<(PathBuf, PathBuf), Result<Arc<Loaded>, LoadError>>,
    done: HashMap<[u8; 32], Rendered>,
}

impl Prefilled {
    /// The chart in `dir` as loaded, if it was asked for.
    pub fn load(&self, dir: &Path, root: &Path) -> Option<Result<Arc<Loaded>, LoadError>> {
        self.charts
            .get(&(dir.to_path_buf(), root.to_path_buf()))
            .cloned()
    }

    /// `chart` rendered with `opts`, if it was asked for.
    pub fn rendered(&self, chart: &Loaded, opts: &Options) -> Option<Rendered> {
        self.done.get(&key(chart, opts)).cloned()
    }
}

/// What handing out a render again costs: copying what it printed.
fn again(done: &Rendered) -> u64 {
    let bytes: usize = match done {
        Ok(manifests) => manifests
            .iter()
            .map(|m| m.text.len() + m.traced.len() * BYTES_PER_STEP)
            .sum(),
        Err(_) => 0,
    };
    u64::try_from(bytes / BYTES_PER_STEP).unwrap_or(u64::MAX) + 1
}

/// What a render depends on: the chart's digest and every option, each field framed by its
/// length so that no two inputs read the same.
fn key(chart: &Loaded, opts: &Options) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(chart.digest);
    let Options {
        release_name,
        namespace,
        values,
        set,
        include_crds,
        skip_tests,
        kube_version,
        api_versions,
        skip_schema_validation,
    } = opts;
    field(&mut h, release_name.as_bytes());
    field(&mut h, namespace.as_bytes());
    for v in values {
        field(&mut h, &serde_json::to_vec(v).unwrap_or_default());
    }
    field(&mut h, b"--set");
    for (line, string) in set {
        field(&mut h, line.as_bytes());
        field(&mut h, &[u8::from(*string)]);
    }
    field(
        &mut h,
        &[
            u8::from(*include_crds),
            u8::from(*skip_tests),
            u8::from(*skip_schema_validation),
        ],
    );
    field(&mut h, kube_version.as_bytes());
    for a in api_versions {
        field(&mut h, a.as_bytes());
    }
    h.finalize().into()
}

fn field(h: &mut Sha256, bytes: &[u8]) {
    h.update((bytes.len() as u64).to_le_bytes());
    h.update(bytes);
}

/// Everything a chart holds that a render reads, its place on disk included (rendered objects
/// point into its files).
fn digest_chart(c: &Chart, h: &mut Sha256) {
    field(h, crate::paths::bytes(&c.dir));
    field(
        h,
        c.archive
            .as_deref()
            .map(crate::paths::bytes)
            .unwrap_or_default(),
    );
    field(h, &serde_json::to_vec(&c.meta).unwrap_or_default());
    field(h, c.name.as_bytes());
    field(h, c.version.as_bytes());
    field(h, &[u8::from(c.library)]);
    field(h, &serde_json::to_vec(&c.values).unwrap_or_default());
    for (name, text) in &c.templates {
        field(h, name.as_bytes());
        field(h, text.as_bytes());
    }
    field(h, b"files");
    for (name, data) in &c.files {
        field(h, name.as_bytes());
        field(h, data);
    }
    field(h, c.schema.as_deref().unwrap_or_default());
    field(h, format!("{:?}", c.deps).as_bytes());
    field(h, &(c.subcharts.len() as u64).to_le_bytes());
    for sub in &c.subcharts {
        digest_chart(sub, h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chart whose render costs about `rounds` thousand steps.
    fn chart(dir: &Path) {
        std::fs::create_dir_all(dir.join("templates")).unwrap();
        std::fs::write(
            dir.join("Chart.yaml"),
            "apiVersion: v2\nname: c\nversion: 1.0.0\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("templates/cm.yaml"),
            "kind: ConfigMap\nmetadata: {name: '{{ .Release.Name }}'}\n{{- range until 1000 }}{{ range until (int $.Values.rounds) }}{{ end }}{{ end }}\n",
        )
        .unwrap();
        std::fs::write(dir.join("values.yaml"), "rounds: 20\n").unwrap();
    }

    fn opts(name: &str) -> Options {
        Options {
            release_name: name.into(),
            ..Options::default()
        }
    }

    #[test]
    fn a_render_done_before_costs_only_its_output() {
        let dir = tempfile::tempdir().unwrap();
        chart(dir.path());
        let mut renders = Renders::new(WORK_STEPS);
        let c = renders.load(dir.path(), dir.path()).unwrap();
        let first = renders.render(&c, &opts("a")).unwrap();
        let left = renders.ledger.left();
        let again = renders.render(&c, &opts("a")).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        assert!(left - renders.ledger.left() < 10);
        assert!(Arc::ptr_eq(
            &renders.load(dir.path(), dir.path()).unwrap(),
            &c
        ));
    }

    #[test]
    fn the_run_budget_stops_renders_in_order_whatever_was_rendered_ahead() {
        let dir = tempfile::tempdir().unwrap();
        chart(dir.path());
        let names = ["a", "b", "c", "d"];
        // What one render costs, to give the run room for two and a half.
        let mut probe = Renders::new(WORK_STEPS);
        let c = probe.load(dir.path(), dir.path()).unwrap();
        probe.render(&c, &opts("x")).unwrap();
        let one = WORK_STEPS - probe.ledger.left();
        let run = one * 5 / 2;

        let mut one_by_one = Renders::new(run);
        let outcomes: Vec<bool> = names
            .iter()
            .map(|n| one_by_one.render(&c, &opts(n)).is_ok())
            .collect();
        assert_eq!(outcomes, [true, true, false, false]);
        assert_eq!(one_by_one.cut, 2);
        // The render the budget stops spends what was left: a render done before, after it, is
        // stopped too.
        assert!(one_by_one.render(&c, &opts("a")).is_err());

        let mut ahead = Renders::new(run);
        let requests: Vec<_> = names.iter().map(|n| (c.clone(), opts(n))).collect();
        ahead.prefill(&requests);
        let prefilled = ahead.prefilled();
        let looked_up: Vec<bool> = names
            .iter()
            .map(|n| prefilled.rendered(&c, &opts(n)).unwrap().is_ok())
            .collect();
        assert_eq!(looked_up, outcomes);
        assert_eq!(ahead.cut, 2);
        assert_eq!(ahead.ledger.left(), 0);
    }
}
