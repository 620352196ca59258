//! Micro-benchmarks of the layers of the pipeline, with [divan](https://docs.rs/divan):
//!
//! - `parse`: `yaml::parse` on a Deployment, a file of 50 Applications and a large CRD, and
//!   `yaml::parse_pruned` on the CRD as the lint parses it, with throughput in bytes;
//! - `render`: `render::build_kustomization` on an in-memory base and overlay, and on an
//!   overlay of a large base;
//! - `render_helm`: loading and rendering real Helm charts (`../shared/charts`, else the
//!   fixture chart) with their defaults;
//! - `rules`: `engine::run` on `fixtures/example-repo` and on all of `fixtures/rules` (file
//!   reading included), and `engine::load` alone on `fixtures/rules` to tell reading and
//!   parsing from rendering and rules.
//!
//! Run them with
//!
//! ```text
//! cargo bench --bench pipeline
//! ```
//!
//! and one group, or one benchmark, by naming it: `cargo bench --bench pipeline -- render`.
#![allow(clippy::unwrap_used)] // a test stops at the first thing that is not as expected

use divan::counter::BytesCount;
use divan::{black_box, Bencher};
use gitops_lint::config;
use gitops_lint::engine::{self, Options};
use gitops_lint::model::{FileDocs, Object};
use gitops_lint::render;
use gitops_lint::source::{SourceDb, SourceFile};
use gitops_lint::yaml::{self, FileId, ParseLimits};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

// The allocator the binary runs with (src/main.rs): rendering allocates a node per value, and
// the system allocator would make the figures say more about it than about the linter.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    divan::main();
}

// ---------------------------------------------------------------------------------------------
// Inputs

/// A typical Deployment: probes, resources, env, volumes; about 60 lines.
const DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels:
    app.kubernetes.io/name: web
    app.kubernetes.io/part-of: shop
  annotations:
    deployment.kubernetes.io/revision: "3"
spec:
  replicas: 3
  revisionHistoryLimit: 5
  selector:
    matchLabels:
      app.kubernetes.io/name: web
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxSurge: 25%
      maxUnavailable: 0
  template:
    metadata:
      labels:
        app.kubernetes.io/name: web
    spec:
      serviceAccountName: web
      securityContext:
        runAsNonRoot: true
        fsGroup: 2000
      containers:
        - name: web
          image: ghcr.io/example/web:1.4.2
          imagePullPolicy: IfNotPresent
          args: ["--port=8080", "--log-format=json"]
          ports:
            - name: http
              containerPort: 8080
              protocol: TCP
          env:
            - name: LOG_LEVEL
              value: info
            - name: DATABASE_URL
              valueFrom:
                secretKeyRef:
                  name: web-db
                  key: url
          envFrom:
            - configMapRef:
                name: web-env
          resources:
            requests: {cpu: 100m, memory: 128Mi}
            limits: {cpu: "1", memory: 512Mi}
          readinessProbe:
            httpGet: {path: /healthz, port: http}
            periodSeconds: 10
          volumeMounts:
            - name: config
              mountPath: /etc/web
      volumes:
        - name: config
          configMap:
            name: web-config
"#;

/// 50 Applications, one per document, as an app-of-apps parent would hold them.
static APPLICATIONS: LazyLock<String> = LazyLock::new(|| {
    let mut out = String::new();
    for i in 0..50 {
        write!(
            out,
            r#"---
# Application {i} of the fleet
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: service-{i:02}
  namespace: argocd
  finalizers:
    - resources-finalizer.argocd.argoproj.io
  labels:
    team: team-{team}
spec:
  project: team-{team}
  source:
    repoURL: https://github.com/example-org/gitops.git
    targetRevision: main
    path: services/service-{i:02}/overlays/prod
  destination:
    server: https://kubernetes.default.svc
    namespace: service-{i:02}
  syncPolicy:
    automated:
      prune: true
      selfHeal: true
    syncOptions:
      - CreateNamespace=true
      - ServerSideApply=true
    retry:
      limit: 5
      backoff: {{duration: 5s, factor: 2, maxDuration: 3m}}
"#,
            team = i % 7
        )
        .unwrap();
    }
    out
});

/// A CustomResourceDefinition whose `openAPIV3Schema` holds a few thousand properties nested
/// three objects deep, about 300 KB: the size of the larger operator CRDs.
static LARGE_CRD: LazyLock<String> = LazyLock::new(|| {
    const GROUPS: usize = 19;
    const SECTIONS: usize = 8;
    const FIELDS: usize = 15;
    let mut out = String::from(
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
  annotations:
    controller-gen.kubebuilder.io/version: v0.16.0
spec:
  group: example.com
  names:
    kind: Widget
    listKind: WidgetList
    plural: widgets
    singular: widget
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      subresources:
        status: {}
      schema:
        openAPIV3Schema:
          description: Widget is the Schema for the widgets API.
          type: object
          properties:
            apiVersion:
              type: string
            kind:
              type: string
            metadata:
              type: object
            spec:
              description: WidgetSpec defines the desired state of Widget.
              type: object
              properties:
"#,
    );
    let pad = |n: usize| " ".repeat(n);
    for g in 0..GROUPS {
        let i = pad(16);
        writeln!(out, "{i}group{g}:").unwrap();
        writeln!(out, "{i}  description: Settings of group {g}.").unwrap();
        writeln!(out, "{i}  type: object").unwrap();
        writeln!(out, "{i}  properties:").unwrap();
        for s in 0..SECTIONS {
            let i = pad(20);
            writeln!(out, "{i}section{s}:").unwrap();
            writeln!(out, "{i}  description: Section {s} of group {g}.").unwrap();
            writeln!(out, "{i}  type: object").unwrap();
            writeln!(out, "{i}  required: [field0]").unwrap();
            writeln!(out, "{i}  properties:").unwrap();
            for f in 0..FIELDS {
                let i = pad(24);
                writeln!(out, "{i}field{f}:").unwrap();
                match f % 3 {
                    0 => writeln!(out, "{i}  description: Field {f}.\n{i}  type: string").unwrap(),
                    1 => writeln!(out, "{i}  type: integer\n{i}  format: int32").unwrap(),
                    _ => writeln!(out, "{i}  type: array\n{i}  items: {{type: string}}").unwrap(),
                }
            }
        }
    }
    out
});

// ---------------------------------------------------------------------------------------------
// parse

#[divan::bench_group]
mod parse {
    use super::*;

    fn parse_text(bencher: Bencher, text: &str) {
        // Once, outside the timed loop: the input is what it claims to be.
        let parsed = yaml::parse(0, text, ParseLimits::default());
        assert!(parsed.problems.is_empty(), "{:?}", parsed.problems);
        bencher
            .counter(BytesCount::of_str(text))
            .bench(|| yaml::parse(0, black_box(text), ParseLimits::default()));
    }

    #[divan::bench]
    fn deployment(bencher: Bencher) {
        assert!((55..=70).contains(&DEPLOYMENT.lines().count()));
        parse_text(bencher, DEPLOYMENT);
    }

    #[divan::bench]
    fn applications_50(bencher: Bencher) {
        assert_eq!(
            yaml::parse(0, &APPLICATIONS, ParseLimits::default())
                .documents
                .len(),
            50
        );
        parse_text(bencher, &APPLICATIONS);
    }

    #[divan::bench]
    fn crd_large(bencher: Bencher) {
        assert!(
            (250_000..=350_000).contains(&LARGE_CRD.len()),
            "{}",
            LARGE_CRD.len()
        );
        parse_text(bencher, &LARGE_CRD);
    }

    /// The same CRD as the lint parses it: its schemas are read, and checked, but not built.
    #[divan::bench]
    fn crd_large_pruned(bencher: Bencher) {
        let text: &str = &LARGE_CRD;
        let parse = || {
            yaml::parse_pruned(
                0,
                black_box(text),
                ParseLimits::default(),
                gitops_lint::model::PRUNE,
            )
        };
        let parsed = parse();
        assert!(parsed.problems.is_empty() && parsed.pruned.is_some());
        bencher.counter(BytesCount::of_str(text)).bench(parse);
    }
}

// ---------------------------------------------------------------------------------------------
// render

/// The in-memory kustomize tree: a base and a production overlay, under the root `bench`.
const TREE: &[(&str, &str)] = &[
    (
        "bench/base/kustomization.yaml",
        r#"apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
commonLabels:
  app.kubernetes.io/part-of: shop
resources:
  - deployment.yaml
  - service.yaml
  - configmap.yaml
  - hpa.yaml
"#,
    ),
    ("bench/base/deployment.yaml", DEPLOYMENT),
    (
        "bench/base/service.yaml",
        r#"apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: shop
spec:
  selector:
    app.kubernetes.io/name: web
  ports:
    - name: http
      port: 80
      targetPort: http
"#,
    ),
    (
        "bench/base/configmap.yaml",
        r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
  namespace: shop
data:
  web.yaml: |
    listen: :8080
    cache: 64Mi
"#,
    ),
    (
        "bench/base/hpa.yaml",
        r#"apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
  namespace: shop
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: web
  minReplicas: 3
  maxReplicas: 10
  metrics:
    - type: Resource
      resource:
        name: cpu
        target: {type: Utilization, averageUtilization: 70}
"#,
    ),
    (
        "bench/overlays/prod/kustomization.yaml",
        r#"apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namePrefix: prod-
resources:
  - ../../base
replicas:
  - name: web
    count: 5
images:
  - name: ghcr.io/example/web
    newTag: "2.0.1"
patches:
  - path: resources-patch.yaml
configMapGenerator:
  - name: web-env
    literals:
      - LOG_LEVEL=warn
      - FEATURE_CHECKOUT=true
"#,
    ),
    (
        "bench/overlays/prod/resources-patch.yaml",
        r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
        - name: web
          resources:
            limits: {cpu: "2", memory: 1Gi}
"#,
    ),
];

/// What `engine::load` makes of files, for texts in memory: parse → recognise → `FileDocs`.
fn load_tree(files: &[(&str, &str)]) -> (SourceDb, Vec<FileDocs>) {
    let mut sources = SourceDb::default();
    let mut docs = Vec::new();
    for (i, (path, text)) in files.iter().enumerate() {
        let id = i as FileId;
        let path = PathBuf::from(path);
        let parsed = yaml::parse(id, text, ParseLimits::default());
        assert!(
            parsed.problems.is_empty(),
            "{}: {:?}",
            path.display(),
            parsed.problems
        );
        docs.push(FileDocs::new(id, &path, parsed));
        assert_eq!(sources.add(SourceFile::new(path, text.to_string())), id);
    }
    (sources, docs)
}

/// The overlay build is what it should be: every object prefixed, replicas, image, patch and
/// generator applied.
fn check_overlay(objects: &[Object]) {
    let mut names: Vec<(&str, &str)> = objects
        .iter()
        .map(|o| (o.kind.as_str(), o.name.as_deref().unwrap_or("")))
        .collect();
    names.sort();
    assert_eq!(names.len(), 5, "{names:?}");
    assert!(
        names.iter().all(|(_, n)| n.starts_with("prod-")),
        "{names:?}"
    );
    assert!(names
        .iter()
        .any(|&(k, n)| k == "ConfigMap" && n.starts_with("prod-web-env-")));
    assert!(names.contains(&("ConfigMap", "prod-web-config")));
    assert!(names.contains(&("Service", "prod-web")));
    assert!(names.contains(&("HorizontalPodAutoscaler", "prod-web")));

    let deploy = objects.iter().find(|o| o.kind == "Deployment").unwrap();
    let spec = deploy.root.get("spec").unwrap();
    assert_eq!(spec.str_at("replicas"), Some("5"));
    let container = &spec
        .path(&["template", "spec", "containers"])
        .unwrap()
        .items()[0];
    assert_eq!(container.str_at("image"), Some("ghcr.io/example/web:2.0.1"));
    let resources = container.get("resources").unwrap();
    assert_eq!(
        resources.path(&["limits", "memory"]).unwrap().as_str(),
        Some("1Gi")
    );
    assert_eq!(
        resources.path(&["requests", "cpu"]).unwrap().as_str(),
        Some("100m")
    );
    let labels = deploy.root.path(&["metadata", "labels"]).unwrap();
    assert_eq!(labels.str_at("app.kubernetes.io/part-of"), Some("shop"));
    let env_from = &container.get("envFrom").unwrap().items()[0];
    let env_ref = env_from.path(&["configMapRef", "name"]).unwrap().as_str();
    assert!(
        env_ref.is_some_and(|n| n.starts_with("prod-web-env-")),
        "{env_ref:?}"
    );
}

/// A base whose ConfigMap holds 5,000 keys (dashboards, say), and one overlay on it that
/// sets the namespace and a name prefix.
static LARGE_BASE: LazyLock<Vec<(&str, String)>> = LazyLock::new(|| {
    let mut data = String::new();
    for i in 0..5000 {
        let _ = writeln!(data, "  key-{i:04}: value {i} of a large base");
    }
    vec![
        (
            "bench/base/configmap.yaml",
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dashboards\ndata:\n{data}"
            ),
        ),
        (
            "bench/base/kustomization.yaml",
            "resources:\n  - configmap.yaml\n".to_string(),
        ),
        (
            "bench/overlays/prod/kustomization.yaml",
            "namespace: prod\nnamePrefix: prod-\nresources:\n  - ../../base\n".to_string(),
        ),
    ]
});

/// A generator that reads a 5,000-line env file (settings exported from another system).
static LARGE_ENV: LazyLock<Vec<(&str, String)>> = LazyLock::new(|| {
    let mut env = String::new();
    for i in 0..5000 {
        let _ = writeln!(env, "SETTING_{i:04}=value {i}");
    }
    vec![
        ("bench/gen/settings.env", env),
        (
            "bench/gen/kustomization.yaml",
            "configMapGenerator:\n  - name: settings\n    envs:\n      - settings.env\n"
                .to_string(),
        ),
    ]
});

#[divan::bench_group]
mod render_kustomize {
    use super::*;

    fn build(bencher: Bencher, tree: &[(&str, &str)], dir: &str, check: fn(&[Object])) {
        let (sources, docs) = load_tree(tree);
        let (root, dir) = (Path::new("bench"), Path::new(dir));
        let (objects, problems) = render::build_kustomization(&sources, &docs, root, dir);
        assert!(problems.is_empty(), "{problems:?}");
        check(&objects);
        bencher.bench(|| render::build_kustomization(&sources, &docs, root, black_box(dir)));
    }

    /// The base alone: four resources and commonLabels.
    #[divan::bench]
    fn base(bencher: Bencher) {
        build(bencher, TREE, "bench/base", |objects| {
            assert_eq!(objects.len(), 4);
            assert!(objects.iter().all(|o| {
                o.root
                    .path(&["metadata", "labels", "app.kubernetes.io/part-of"])
                    .and_then(|n| n.as_str())
                    == Some("shop")
            }));
        });
    }

    /// The overlay on the base: namePrefix, replicas, images, a patch and a generator.
    #[divan::bench]
    fn overlay(bencher: Bencher) {
        build(bencher, TREE, "bench/overlays/prod", check_overlay);
    }

    /// An overlay that renames and namespaces a large base: what it leaves alone (the 5,000
    /// keys) is shared with the base, not copied.
    #[divan::bench]
    fn overlay_of_large_base(bencher: Bencher) {
        let tree: Vec<(&str, &str)> = LARGE_BASE.iter().map(|(p, t)| (*p, t.as_str())).collect();
        build(bencher, &tree, "bench/overlays/prod", |objects| {
            assert_eq!(objects.len(), 1);
            let cm = &objects[0];
            assert_eq!(cm.name.as_deref(), Some("prod-dashboards"));
            assert_eq!(cm.namespace.as_deref(), Some("prod"));
            assert_eq!(cm.root.get("data").map(|d| d.entries().len()), Some(5000));
        });
    }

    /// The generated ConfigMap's data is made from the env file's keys at once, not key by
    /// key.
    #[divan::bench]
    fn generator_of_large_env(bencher: Bencher) {
        let tree: Vec<(&str, &str)> = LARGE_ENV.iter().map(|(p, t)| (*p, t.as_str())).collect();
        build(bencher, &tree, "bench/gen", |objects| {
            assert_eq!(objects.len(), 1);
            let data = objects[0].root.get("data").unwrap();
            assert_eq!(data.entries().len(), 5000);
            assert_eq!(data.str_at("SETTING_4999"), Some("value 4999"));
        });
    }
}

// ---------------------------------------------------------------------------------------------
// render_helm

/// The Helm charts `tests/helm_diff.rs` checks against `helm template`: `../shared/charts`
/// (or `GITOPS_LINT_CHARTS`) when present, else only the project's own fixture chart.
fn chart_dir(name: &str) -> Option<PathBuf> {
    if name == "basic" {
        return Some(fixture("fixtures/helm/basic"));
    }
    let base = std::env::var_os("GITOPS_LINT_CHARTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| fixture("../shared/charts"));
    Some(base.join(name)).filter(|d| d.join("Chart.yaml").is_file())
}

/// `helm template rel CHART` with the chart's defaults, from loading the chart folder (values,
/// templates, vendored subcharts) to the split, sorted manifests.
#[divan::bench_group(sample_count = 20)]
mod render_helm {
    use super::*;
    use gitops_lint::render::helm;

    fn render(bencher: Bencher, name: &str) {
        let Some(dir) = chart_dir(name) else {
            eprintln!("render_helm: chart {name} not found, skipped");
            return;
        };
        let opts = helm::Options {
            release_name: "rel".into(),
            include_crds: true,
            ..helm::Options::default()
        };
        let run = || {
            let chart = helm::load(&dir, &dir).unwrap();
            let mut work = render::budget::Budget::new(helm::WORK_STEPS);
            helm::render(&chart, &opts, &mut work).unwrap()
        };
        assert!(!run().is_empty());
        bencher.bench(|| black_box(run()));
    }

    #[divan::bench(args = ["basic", "podinfo", "argo-cd", "kube-prometheus-stack"])]
    fn chart(bencher: Bencher, name: &str) {
        render(bencher, name);
    }
}

// ---------------------------------------------------------------------------------------------
// rules

/// Options as the CLI builds them for `gitops-lint PATH`: the repository's config file, if
/// it has one, and its repository URLs.
fn lint_options(path: PathBuf) -> Options {
    let config = config::load_for(&path).expect("the fixture's config loads");
    Options {
        paths: vec![path],
        discover: gitops_lint::discover::Options::default(),
        version: None,
        limits: ParseLimits::default(),
        repo_urls: config.repo_urls.clone(),
        config,
        suppressions: true,
        baseline: None,
        report_only: None,
        overlay: Default::default(),
        cache: None,
        timings: false,
    }
}

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn lint(bencher: Bencher, rel: &str) {
    let opts = lint_options(fixture(rel));
    let outcome = engine::run(&opts).expect("the fixture lints");
    assert!(outcome.summary.files_scanned > 0);
    assert!(!outcome.findings.is_empty(), "{rel}: no findings");
    bencher.bench(|| engine::run(black_box(&opts)).expect("the fixture lints"));
}

#[divan::bench_group(sample_count = 30)]
mod rules {
    use super::*;

    /// The example repository: Applications, ApplicationSets, kustomize overlays.
    #[divan::bench]
    fn lint_example_repo(bencher: Bencher) {
        lint(bencher, "fixtures/example-repo");
    }

    /// Every rule fixture, linted as one tree.
    #[divan::bench]
    fn lint_rule_fixtures(bencher: Bencher) {
        lint(bencher, "fixtures/rules");
    }

    /// The part of `lint_rule_fixtures` before rendering: discover, read, parse, recognise.
    #[divan::bench]
    fn load_rule_fixtures(bencher: Bencher) {
        let opts = lint_options(fixture("fixtures/rules"));
        bencher.bench(|| engine::load(black_box(&opts)).expect("the fixtures load"));
    }
}
