//! The benchmark: a deterministic GitOps fleet generator and a runner that times the real
//! binary on it, next to a read-only and a parse-only floor.
//!
//! ```sh
//! cargo build --release && cargo run --release --example bench -- fleet
//! cargo run --release --example bench -- generate fleet /tmp/fleet   # only write the corpus
//! ```
//!
//! Sizes: `small` (~1k files), `fleet` (400 services × 3 environments, ~15k files), `huge`
//! (4× fleet). The corpus goes to `target/bench/<size>` and is generated once (same seed, same
//! bytes). Each measurement runs in its own process, once per round, for `--runs` rounds
//! (default 5); medians are printed, with peak RSS from the kernel's accounting of that process,
//! and each ratio is the median of the ratios between runs of the same round. `bench huge` also
//! runs the fleet's lint in its rounds, for the ratio of the two.
#![allow(clippy::unwrap_used)] // a test stops at the first thing that is not as expected

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
#[path = "../tests/common/rng.rs"]
mod rng;

use rng::Rng;

const ENVS: [&str; 3] = ["dev", "staging", "prod"];
const TEAMS: usize = 20;

fn services_for(size: &str) -> Option<usize> {
    match size {
        "small" => Some(28),
        "fleet" => Some(400),
        "huge" => Some(1600),
        _ => None,
    }
}

struct Writer {
    root: PathBuf,
    files: usize,
    bytes: usize,
}

impl Writer {
    fn put(&mut self, rel: &str, text: &str) {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        self.files += 1;
        self.bytes += text.len();
    }
}

const REPO: &str = "https://github.com/acme/platform-gitops.git";

fn application(name: &str, env: &str, team: usize, path: &str, rng: &mut Rng) -> String {
    let mut t = format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: {name}\n  namespace: argocd\n  labels:\n    team: team-{team:02}\n    env: {env}\n  finalizers:\n    - resources-finalizer.argocd.argoproj.io\nspec:\n  project: team-{team:02}\n  source:\n    repoURL: {REPO}\n    targetRevision: main\n    path: {path}\n  destination:\n    server: https://kubernetes.default.svc\n    namespace: {name}\n"
    );
    if rng.chance(40) {
        t.push_str("  ignoreDifferences:\n    - group: apps\n      kind: Deployment\n      jsonPointers:\n        - /spec/replicas\n");
    }
    t.push_str("  syncPolicy:\n    automated:\n      prune: true\n");
    if rng.chance(85) {
        t.push_str("      selfHeal: true\n");
    }
    t.push_str("    syncOptions:\n      - CreateNamespace=true\n");
    if rng.chance(70) {
        t.push_str("      - PruneLast=true\n");
    }
    if rng.chance(50) {
        t.push_str("      - RespectIgnoreDifferences=true\n");
    }
    t.push_str("    retry:\n      limit: 5\n      backoff:\n        duration: 5s\n        factor: 2\n        maxDuration: 3m\n");
    t
}

fn deployment(svc: &str, rng: &mut Rng) -> String {
    let mut env = String::new();
    for i in 0..(4 + rng.below(8)) {
        let _ = write!(
            env,
            "            - name: SETTING_{i}\n              value: \"{}\"\n",
            rng.below(100_000)
        );
    }
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {svc}\n  labels:\n    app.kubernetes.io/name: {svc}\nspec:\n  replicas: 2\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: {svc}\n  template:\n    metadata:\n      labels:\n        app.kubernetes.io/name: {svc}\n      annotations:\n        prometheus.io/scrape: \"true\"\n    spec:\n      serviceAccountName: {svc}\n      securityContext:\n        runAsNonRoot: true\n      containers:\n        - name: app\n          image: registry.acme.io/{svc}:1.{}.{}\n          ports:\n            - name: http\n              containerPort: 8080\n          env:\n{env}          envFrom:\n            - configMapRef:\n                name: {svc}-config\n            - secretRef:\n                name: {svc}-secrets\n          resources:\n            requests:\n              cpu: 100m\n              memory: 128Mi\n            limits:\n              memory: 512Mi\n          readinessProbe:\n            httpGet:\n              path: /ready\n              port: http\n          livenessProbe:\n            httpGet:\n              path: /healthz\n              port: http\n",
        rng.below(40),
        rng.below(10)
    )
}

fn service(svc: &str) -> String {
    format!("apiVersion: v1\nkind: Service\nmetadata:\n  name: {svc}\nspec:\n  selector:\n    app.kubernetes.io/name: {svc}\n  ports:\n    - name: http\n      port: 80\n      targetPort: http\n")
}

fn configmap(svc: &str, rng: &mut Rng) -> String {
    let mut t =
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {svc}-config\ndata:\n");
    for i in 0..(10 + rng.below(30)) {
        let _ = writeln!(t, "  key_{i}: \"value-{}\"", rng.below(1_000_000));
    }
    t
}

fn external_secret(svc: &str) -> String {
    format!("apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata:\n  name: {svc}-secrets\nspec:\n  refreshInterval: 1h\n  secretStoreRef:\n    kind: ClusterSecretStore\n    name: vault\n  target:\n    name: {svc}-secrets\n  dataFrom:\n    - extract:\n        key: services/{svc}\n")
}

fn hpa(svc: &str) -> String {
    format!("apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: {svc}\nspec:\n  scaleTargetRef:\n    apiVersion: apps/v1\n    kind: Deployment\n    name: {svc}\n  minReplicas: 2\n  maxReplicas: 10\n  metrics:\n    - type: Resource\n      resource:\n        name: cpu\n        target:\n          type: Utilization\n          averageUtilization: 70\n")
}

fn crd(i: usize, rng: &mut Rng) -> String {
    let mut t = format!("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets{i}.acme.io\nspec:\n  group: acme.io\n  names:\n    kind: Widget{i}\n    plural: widgets{i}\n  scope: Namespaced\n  versions:\n    - name: v1\n      served: true\n      storage: true\n      schema:\n        openAPIV3Schema:\n          type: object\n          properties:\n");
    for p in 0..(600 + rng.below(600)) {
        let _ = write!(
            t,
            "            field{p}:\n              type: object\n              description: \"Field {p} of the widget; long enough to look like generated documentation text.\"\n              properties:\n                name:\n                  type: string\n                count:\n                  type: integer\n                  format: int32\n"
        );
    }
    t
}

fn generate(size: &str, root: &Path) -> (usize, usize) {
    let services = services_for(size).expect("size");
    let _ = std::fs::remove_dir_all(root);
    let mut w = Writer {
        root: root.to_path_buf(),
        files: 0,
        bytes: 0,
    };
    let mut rng = Rng(0x6172_676f_6364 ^ services as u64);
    w.put(".gitops-lint.yaml", &format!("repo-urls:\n  - {REPO}\n"));
    w.put(
        "README.md",
        "# platform-gitops\n\nGenerated benchmark fleet.\n",
    );
    w.put("argocd/argocd-cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cm\n  namespace: argocd\ndata:\n  resource.customizations.ignoreDifferences.admissionregistration.k8s.io_MutatingWebhookConfiguration: |\n    jqPathExpressions:\n    - '.webhooks[]?.clientConfig.caBundle'\n");
    w.put("argocd/argocd-rbac-cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-rbac-cm\n  namespace: argocd\ndata:\n  policy.default: role:readonly\n  policy.csv: |\n    p, role:deployer, applications, sync, */*, allow\n    g, acme:platform, role:admin\n");
    for team in 0..TEAMS {
        w.put(
            &format!("projects/team-{team:02}.yaml"),
            &format!("apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata:\n  name: team-{team:02}\n  namespace: argocd\nspec:\n  sourceRepos:\n    - {REPO}\n  destinations:\n    - server: https://kubernetes.default.svc\n      namespace: 'svc-*'\n  clusterResourceWhitelist:\n    - group: ''\n      kind: Namespace\n"),
        );
    }
    for (i, env) in ENVS.iter().enumerate() {
        // The app-of-apps parent of each environment, and an ApplicationSet over the
        // platform services' overlays.
        w.put(
            &format!("bootstrap/{env}.yaml"),
            &format!("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: root-{env}\n  namespace: argocd\nspec:\n  project: default\n  source:\n    repoURL: {REPO}\n    targetRevision: main\n    path: apps/{env}\n  destination:\n    server: https://kubernetes.default.svc\n    namespace: argocd\n  syncPolicy:\n    automated:\n      prune: true\n      selfHeal: {}\n    syncOptions:\n      - PruneLast=true\n", i != 0),
        );
        w.put(
            &format!("apps/{env}/platform-appset.yaml"),
            &format!("apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata:\n  name: platform-{env}\n  namespace: argocd\nspec:\n  goTemplate: true\n  generators:\n    - git:\n        repoURL: {REPO}\n        revision: main\n        directories:\n          - path: services/platform-*/overlays/{env}\n  template:\n    metadata:\n      name: '{{{{index .path.segments 1}}}}-{env}'\n    spec:\n      project: team-00\n      source:\n        repoURL: {REPO}\n        targetRevision: main\n        path: '{{{{.path.path}}}}'\n      destination:\n        server: https://kubernetes.default.svc\n        namespace: '{{{{index .path.segments 1}}}}'\n      syncPolicy:\n        automated:\n          prune: true\n          selfHeal: true\n        syncOptions:\n          - PruneLast=true\n"),
        );
    }
    for i in 0..(services / 20).max(1) {
        w.put(&format!("crds/widget-{i}.yaml"), &crd(i, &mut rng));
    }
    for s in 0..services {
        let platform = s % 4 == 0;
        let svc = if platform {
            format!("platform-{s:04}")
        } else {
            format!("svc-{s:04}")
        };
        let team = s % TEAMS;
        let has_hpa = rng.chance(50);
        let base = format!("services/{svc}/base");
        let mut resources = vec![
            "deployment.yaml",
            "service.yaml",
            "serviceaccount.yaml",
            "configmap.yaml",
            "externalsecret.yaml",
            "pdb.yaml",
            "networkpolicy.yaml",
        ];
        if has_hpa {
            resources.push("hpa.yaml");
        }
        w.put(
            &format!("{base}/kustomization.yaml"),
            &format!(
                "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nlabels:\n  - pairs:\n      app.kubernetes.io/part-of: {svc}\n      team: team-{team:02}\nresources:\n{}",
                resources
                    .iter()
                    .map(|r| format!("  - {r}\n"))
                    .collect::<String>()
            ),
        );
        w.put(
            &format!("{base}/deployment.yaml"),
            &deployment(&svc, &mut rng),
        );
        w.put(&format!("{base}/service.yaml"), &service(&svc));
        w.put(
            &format!("{base}/serviceaccount.yaml"),
            &format!("apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {svc}\n"),
        );
        w.put(
            &format!("{base}/configmap.yaml"),
            &configmap(&svc, &mut rng),
        );
        w.put(
            &format!("{base}/externalsecret.yaml"),
            &external_secret(&svc),
        );
        w.put(
            &format!("{base}/pdb.yaml"),
            &format!("apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: {svc}\nspec:\n  minAvailable: 1\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: {svc}\n"),
        );
        w.put(
            &format!("{base}/networkpolicy.yaml"),
            &format!("apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: {svc}\nspec:\n  podSelector:\n    matchLabels:\n      app.kubernetes.io/name: {svc}\n  ingress:\n    - from:\n        - namespaceSelector:\n            matchLabels:\n              kubernetes.io/metadata.name: ingress\n"),
        );
        if has_hpa {
            w.put(&format!("{base}/hpa.yaml"), &hpa(&svc));
        }
        for env in ENVS {
            let dir = format!("services/{svc}/overlays/{env}");
            let replicas = if has_hpa && rng.chance(30) {
                // A classic mistake: the overlay pins replicas under an HPA.
                format!("replicas:\n  - name: {svc}\n    count: 3\n")
            } else {
                String::new()
            };
            w.put(
                &format!("{dir}/kustomization.yaml"),
                &format!(
                    "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: {svc}\nnamePrefix: {env}-\nresources:\n  - ../../base\nimages:\n  - name: registry.acme.io/{svc}\n    newTag: \"{env}-{}\"\n{replicas}patches:\n  - path: deployment-patch.yaml\n  - path: configmap-patch.yaml\n  - path: externalsecret-patch.yaml\n  - path: service-patch.yaml\n  - path: labels-patch.yaml\n  - path: pdb-patch.yaml\nconfigMapGenerator:\n  - name: {svc}-env\n    literals:\n      - ENVIRONMENT={env}\n      - LOG_LEVEL=info\n",
                    rng.below(1000)
                ),
            );
            w.put(
                &format!("{dir}/deployment-patch.yaml"),
                &format!("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {svc}\nspec:\n  template:\n    spec:\n      containers:\n        - name: app\n          resources:\n            requests:\n              cpu: {}m\n              memory: 256Mi\n", 100 + rng.below(400)),
            );
            w.put(
                &format!("{dir}/configmap-patch.yaml"),
                &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {svc}-config\ndata:\n  environment: {env}\n  endpoint: https://{env}.acme.io/{svc}\n"),
            );
            w.put(
                &format!("{dir}/externalsecret-patch.yaml"),
                &format!("apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata:\n  name: {svc}-secrets\nspec:\n  dataFrom:\n    - extract:\n        key: {env}/services/{svc}\n"),
            );
            w.put(
                &format!("{dir}/service-patch.yaml"),
                &format!("apiVersion: v1\nkind: Service\nmetadata:\n  name: {svc}\n  annotations:\n    acme.io/env: {env}\n"),
            );
            w.put(
                &format!("{dir}/labels-patch.yaml"),
                &format!("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {svc}\n  labels:\n    acme.io/env: {env}\n"),
            );
            w.put(
                &format!("{dir}/pdb-patch.yaml"),
                &format!("apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: {svc}\nspec:\n  minAvailable: {}\n", 1 + rng.below(2)),
            );
            if !platform {
                w.put(
                    &format!("apps/{env}/{svc}.yaml"),
                    &application(&format!("{svc}-{env}"), env, team, &dir, &mut rng),
                );
            }
        }
        // Noise: a Helm chart with templates, docs.
        if s % 3 == 0 {
            let chart = format!("charts/{svc}");
            w.put(
                &format!("{chart}/Chart.yaml"),
                &format!("apiVersion: v2\nname: {svc}\nversion: 0.1.{s}\n"),
            );
            w.put(
                &format!("{chart}/values.yaml"),
                "replicaCount: 2\nimage:\n  repository: registry.acme.io/app\n  tag: latest\nresources: {}\n",
            );
            for env in ENVS {
                w.put(
                    &format!("{chart}/values-{env}.yaml"),
                    &format!("replicaCount: 3\nenv: {env}\n"),
                );
            }
            for t in [
                "deployment",
                "service",
                "ingress",
                "hpa",
                "configmap",
                "serviceaccount",
            ] {
                w.put(
                    &format!("{chart}/templates/{t}.yaml"),
                    &format!("apiVersion: v1\nkind: {t}\nmetadata:\n  name: {{{{ include \"chart.fullname\" . }}}}\n  labels:\n    {{{{- include \"chart.labels\" . | nindent 4 }}}}\nspec:\n  {{{{- if .Values.enabled }}}}\n  replicas: {{{{ .Values.replicaCount }}}}\n  {{{{- end }}}}\n"),
                );
            }
        }
        w.put(
            &format!("services/{svc}/README.md"),
            &format!("# {svc}\n\nOwned by team-{team:02}.\n"),
        );
    }
    // A few broken files, as any large repository has.
    w.put(
        "broken/invalid.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: broken\ndata:\n  a: b\n",
    );
    w.put("broken/tabs.yaml", "a:\n\t- b\n");
    w.put(
        "broken/duplicate.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dup\n  name: dup2\n",
    );
    std::fs::write(root.join("broken/latin1.yaml"), b"a: caf\xe9\n").unwrap();
    w.files += 1;
    (w.files, w.bytes)
}

/// Runs a command, returning its wall time and peak RSS (KiB) from `wait4`.
// wait4 for one child's peak RSS: the benchmark, not the linter, calls into C.
#[allow(unsafe_code)]
fn measure(cmd: &mut Command) -> (Duration, u64, i32) {
    let started = Instant::now();
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the command starts");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our child, and status/usage point to live locals.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4");
    let elapsed = started.elapsed();
    std::mem::forget(child);
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    (elapsed, usage.ru_maxrss as u64, code)
}

fn median<T: Copy + Ord>(mut v: Vec<T>) -> T {
    v.sort();
    v[v.len() / 2]
}

struct Row {
    name: String,
    /// One wall time per round, in round order.
    walls: Vec<Duration>,
    rss: u64,
}

impl Row {
    fn wall(&self) -> Duration {
        median(self.walls.clone())
    }
}

type Make = Box<dyn FnMut() -> Command>;

/// Runs every command once per round, round after round. This machine's speed drifts over
/// seconds; interleaving puts each round's runs under the same conditions, so the ratios below
/// compare runs of one round with each other.
fn run_rounds(runs: usize, mut benches: Vec<(String, Make)>) -> Vec<Row> {
    let mut rows: Vec<(Row, Vec<u64>)> = benches
        .iter()
        .map(|(name, _)| {
            let row = Row {
                name: name.clone(),
                walls: Vec::new(),
                rss: 0,
            };
            (row, Vec::new())
        })
        .collect();
    for _ in 0..runs {
        for ((name, make), (row, rss)) in benches.iter_mut().zip(&mut rows) {
            let (wall, peak, code) = measure(&mut make());
            assert!(code == 0 || code == 1, "{name} exited with {code}");
            row.walls.push(wall);
            rss.push(peak);
        }
    }
    rows.into_iter()
        .map(|(mut row, rss)| {
            row.rss = median(rss);
            row
        })
        .collect()
}

/// The median over rounds of `a`'s wall time over `b`'s in the same round.
fn paired(a: &Row, b: &Row) -> f64 {
    let mut ratios: Vec<f64> = a
        .walls
        .iter()
        .zip(&b.walls)
        .map(|(x, y)| x.as_secs_f64() / y.as_secs_f64())
        .collect();
    ratios.sort_by(f64::total_cmp);
    ratios[ratios.len() / 2]
}

/// The floors, in this process: discover like the linter, then read (and parse) every file
/// on `threads` threads.
fn floor(kind: &str, dir: &Path, threads: usize) {
    use rayon::prelude::*;
    let opts = gitops_lint::discover::Options::default();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    let parse = kind == "parse";
    // The walk too runs on as many threads as the pool has, as the linter's does.
    let total: usize = pool.install(|| {
        let found = gitops_lint::discover::discover(&[dir.to_path_buf()], &opts).unwrap();
        found
            .files
            .par_iter()
            .enumerate()
            // Split as finely as the linter's own parse, so that neither ends on one thread.
            .with_max_len(8)
            .map(|(i, p)| {
                let text = std::fs::read(p).unwrap_or_default();
                if !parse {
                    return text.len();
                }
                let text = String::from_utf8_lossy(&text);
                let parsed = gitops_lint::yaml::parse(
                    i as u32,
                    &text,
                    gitops_lint::yaml::ParseLimits::default(),
                );
                parsed.documents.len()
            })
            .sum()
    });
    std::hint::black_box(total);
}

// The same allocator as the linter, so the floors are the linter's own parse and read.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage =
        "usage: bench SIZE [--runs N] | bench generate SIZE DIR   (SIZE: small, fleet, huge)";
    match args.first().map(String::as_str) {
        Some("generate") => {
            let (size, dir) = (args.get(1).expect(usage), args.get(2).expect(usage));
            let (files, bytes) = generate(size, Path::new(dir));
            println!("{files} files, {:.1} MB in {dir}", bytes as f64 / 1e6);
            return;
        }
        Some("floor") => {
            // bench floor read|parse DIR THREADS: one measured child.
            floor(&args[1], Path::new(&args[2]), args[3].parse().unwrap());
            return;
        }
        _ => {}
    }
    let size = args.first().map(String::as_str).unwrap_or("fleet");
    if services_for(size).is_none() {
        eprintln!("{usage}");
        std::process::exit(2);
    }
    let runs: usize = args
        .iter()
        .position(|a| a == "--runs")
        .and_then(|i| args.get(i + 1)?.parse().ok())
        .unwrap_or(5);
    let me = std::env::current_exe().unwrap();
    // target/release/examples/bench → target/release/gitops-lint
    let bin = me.parent().unwrap().parent().unwrap().join("gitops-lint");
    assert!(
        bin.exists(),
        "{} is missing: run `cargo build --release` first",
        bin.display()
    );
    let target = me.ancestors().nth(3).unwrap().to_path_buf();
    let (dir, files, bytes) = corpus(&target, size);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let lint = |dir: &Path, threads: usize| -> Make {
        let (bin, dir) = (bin.clone(), dir.to_path_buf());
        Box::new(move || {
            let mut c = Command::new(&bin);
            c.arg(&dir)
                .args(["--fail-on", "never", "-q", "--threads"])
                .arg(threads.to_string());
            c
        })
    };
    let floor_cmd = |kind: &'static str, threads: usize| -> Make {
        let (me, dir) = (me.clone(), dir.clone());
        Box::new(move || {
            let mut c = Command::new(&me);
            c.args(["floor", kind]).arg(&dir).arg(threads.to_string());
            c
        })
    };
    // A pre-commit run: one changed overlay patch, read in the context of its repository. As
    // pre-commit runs hooks, from the repository's top with the path below it.
    let changed = "services/svc-0001/overlays/prod/deployment-patch.yaml";
    let precommit = |cache: Option<PathBuf>| -> Make {
        let (bin, dir) = (bin.clone(), dir.clone());
        Box::new(move || {
            let mut c = Command::new(&bin);
            c.current_dir(&dir)
                .arg("--context")
                .arg(changed)
                .args(["--fail-on", "never", "-q"]);
            if let Some(dir) = &cache {
                c.arg("--cache-dir").arg(dir);
            }
            c
        })
    };
    // The hook's own setting: the cache is filled by the first commit and read by the next.
    let cache = target.join("bench").join(format!("cache-{size}"));
    let _ = std::fs::remove_dir_all(&cache);
    let (_, _, code) = measure(&mut precommit(Some(cache.clone()))());
    assert!(
        code == 0 || code == 1,
        "filling the cache exited with {code}"
    );
    let mut benches: Vec<(String, Make)> = vec![
        (format!("lint ({cores} threads)"), lint(&dir, cores)),
        ("lint (1 thread)".into(), lint(&dir, 1)),
        (
            format!("parse floor ({cores} threads)"),
            floor_cmd("parse", cores),
        ),
        (
            format!("read floor ({cores} threads)"),
            floor_cmd("read", cores),
        ),
        ("pre-commit, one changed file".into(), precommit(None)),
        ("pre-commit, warm --cache".into(), precommit(Some(cache))),
        // What the machine itself gives from more threads, on work that shares nothing.
        ("parse floor (1 thread)".into(), floor_cmd("parse", 1)),
    ];
    // Above `fleet`, the fleet's lint runs in the same rounds: how the lint scales with the
    // repository is a ratio of two runs, and drift between invocations would swamp it.
    let fleet = (size == "huge").then(|| corpus(&target, "fleet"));
    if let Some((fleet_dir, ..)) = &fleet {
        benches.push((
            format!("lint fleet ({cores} threads)"),
            lint(fleet_dir, cores),
        ));
    }
    // The same lint with ten policies of the repository's own: the five examples and five
    // over rendered workloads.
    let policies = policy_config(&target, &dir);
    benches.push((
        format!("lint + 10 policies ({cores} threads)"),
        Box::new({
            let (bin, dir) = (bin.clone(), dir.clone());
            move || {
                let mut c = Command::new(&bin);
                c.arg(&dir)
                    .arg("--config")
                    .arg(&policies)
                    .args(["--fail-on", "never", "-q", "--threads"])
                    .arg(cores.to_string());
                c
            }
        }),
    ));
    let with_policies = benches.len() - 1;
    let rows = run_rounds(runs, benches);
    println!(
        "corpus: {size}, {} files, {:.1} MB, {cores} cores, median of {runs} rounds\n",
        files as usize,
        bytes / 1e6
    );
    println!(
        "{:<32} {:>9} {:>10} {:>8} {:>10}",
        "", "wall ms", "files/s", "MB/s", "peak RSS"
    );
    for (i, r) in rows.iter().enumerate() {
        let s = r.wall().as_secs_f64();
        let (files, bytes) = match &fleet {
            Some((_, f, b)) if i == 7 => (*f, *b),
            _ => (files, bytes),
        };
        println!(
            "{:<32} {:>9.0} {:>10.0} {:>8.1} {:>7} MB",
            r.name,
            s * 1e3,
            files / s,
            bytes / 1e6 / s,
            r.rss / 1024
        );
    }
    println!("\nmedians of the ratios of runs in the same round:");
    println!(
        "lint / parse floor: {:.2}x   lint / read floor: {:.2}x   1 → {cores} threads: {:.2}x speedup",
        paired(&rows[0], &rows[2]),
        paired(&rows[0], &rows[3]),
        paired(&rows[1], &rows[0])
    );
    println!(
        "parse floor 1 → {cores} threads: {:.2}x speedup (what this machine gives)",
        paired(&rows[6], &rows[2])
    );
    if fleet.is_some() {
        println!("{size} / fleet: {:.2}x", paired(&rows[0], &rows[7]));
    }
    println!(
        "lint + 10 policies / lint: {:.2}x",
        paired(&rows[with_policies], &rows[0])
    );
}

/// Five policies over rendered workloads, besides the examples in `examples/policies/`.
const BENCH_POLICIES: &str = r#"id: containers-have-limits
message: "`{{ object.metadata.name }}` has a container without resource limits"
match: {kind: [Deployment, StatefulSet, DaemonSet], objects: rendered}
condition: >-
  has(object.spec.template.spec.containers) &&
  object.spec.template.spec.containers.exists(c, !has(c.resources) || !has(c.resources.limits))
at: spec.template.spec.containers
---
id: no-latest-image
severity: error
message: "`{{ object.metadata.name }}` runs an image without a pinned tag"
match: {kind: [Deployment, StatefulSet, DaemonSet], objects: rendered}
condition: >-
  has(object.spec.template.spec.containers) &&
  object.spec.template.spec.containers.exists(c, c.image.endsWith(":latest") || !c.image.contains(":"))
---
id: hpa-min-two
message: "HPA `{{ object.metadata.name }}` may scale to one replica"
match: {apiVersion: autoscaling/*, kind: HorizontalPodAutoscaler}
condition: "!has(object.spec.minReplicas) || object.spec.minReplicas < 2"
at: spec.minReplicas
---
id: configmap-app-label
severity: info
message: "ConfigMap `{{ object.metadata.name }}` in {{ objectNamespace }} has no app label"
match: {apiVersion: v1, kind: ConfigMap, objects: rendered}
condition: "!has(object.metadata.labels) || !('app' in object.metadata.labels)"
---
id: app-project-not-default
message: "Application `{{ object.metadata.name }}` is in the default project"
match: {kind: Application, namespace: argocd}
condition: "has(object.spec.project) && object.spec.project == 'default'"
at: spec.project
"#;

/// A config for the corpus in `dir` with ten policies, written under `target/bench`.
fn policy_config(target: &Path, dir: &Path) -> PathBuf {
    let out = target.join("bench").join("policies");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(out.join("policies")).unwrap();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/policies");
    for e in std::fs::read_dir(&examples).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, out.join("policies").join(p.file_name().unwrap())).unwrap();
    }
    std::fs::write(out.join("policies/bench.yaml"), BENCH_POLICIES).unwrap();
    let repo = std::fs::read_to_string(dir.join(".gitops-lint.yaml")).unwrap();
    let config = out.join(".gitops-lint.yaml");
    std::fs::write(
        &config,
        format!(
            "{repo}policies: [policies]
"
        ),
    )
    .unwrap();
    config
}

/// The corpus of `size` under `target/bench`, generated on first use: its directory, files
/// and bytes.
fn corpus(target: &Path, size: &str) -> (PathBuf, f64, f64) {
    let dir = target.join("bench").join(size);
    let stamp = dir.join(".generated");
    if !stamp.exists() {
        let started = Instant::now();
        let (files, bytes) = generate(size, &dir);
        std::fs::write(&stamp, format!("{files} {bytes}\n")).unwrap();
        eprintln!(
            "generated {files} files ({:.1} MB) in {} in {:.1} s",
            bytes as f64 / 1e6,
            dir.display(),
            started.elapsed().as_secs_f64()
        );
    }
    let stamp = std::fs::read_to_string(&stamp).unwrap();
    let mut it = stamp.split_whitespace().map(|n| n.parse::<f64>().unwrap());
    (dir, it.next().unwrap(), it.next().unwrap())
}
