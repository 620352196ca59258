//! A `--context FILE` run reports what an edit of FILE causes. Over generated repositories (an
//! app-of-apps root, Applications, kustomize bases and overlays with autoscalers, patches and
//! Secrets, an AppProject, argocd-cm), each case edits one file and checks, against full runs
//! before and after the edit:
//! - every finding the full run gains, or that gets more severe, is reported by the context run
//!   (wherever it is located: deleting an Application's ignore makes an error appear in an
//!   overlay);
//! - every finding the full run places in the edited file is reported;
//! - the context run reports nothing the full run does not.
//!
//! The seed is fixed, so CI sees the same repositories and edits every run.
#![allow(clippy::unwrap_used)] // a test stops at the first thing that is not as expected

mod common;

use common::rng::Rng;
use common::run_in;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);
const REPOS: u64 = 40;
const EDITS_PER_REPO: usize = 8;
const URL: &str = "https://github.com/acme/gitops.git";
const KINDS: [&str; 4] = ["Deployment", "HorizontalPodAutoscaler", "Secret", "Service"];

#[derive(Clone)]
struct Service {
    hpa: bool,
    base_replicas: Option<u32>,
    secret: bool,
    /// By overlay (dev, prod): `replicas:` in the kustomization, a patch file listed, the
    /// count that patch sets.
    overlays: [(Option<u32>, bool, u32); 2],
}

#[derive(Clone)]
struct App {
    service: usize,
    prod: bool,
    self_heal: bool,
    prune: bool,
    ignore_replicas: bool,
    respect: bool,
    team: bool,
    listed: bool,
}

#[derive(Clone)]
struct Model {
    services: Vec<Service>,
    apps: Vec<App>,
    /// Kinds the team project lets its Applications deploy.
    kinds: Vec<bool>,
    namespace: u32,
    root_self_heal: bool,
    /// argocd-cm excludes Secrets from every Application.
    exclude_secrets: bool,
}

fn generate(rng: &mut Rng) -> Model {
    let services = (0..1 + rng.below(3))
        .map(|_| Service {
            hpa: rng.chance(60),
            base_replicas: rng.chance(50).then(|| 1 + rng.below(4) as u32),
            secret: rng.chance(30),
            overlays: [0, 1].map(|_| {
                (
                    rng.chance(40).then(|| 2 + rng.below(3) as u32),
                    rng.chance(30),
                    3 + rng.below(3) as u32,
                )
            }),
        })
        .collect::<Vec<_>>();
    let apps = (0..1 + rng.below(4))
        .map(|_| App {
            service: rng.below(services.len()),
            prod: rng.chance(50),
            self_heal: rng.chance(60),
            prune: rng.chance(50),
            ignore_replicas: rng.chance(50),
            respect: rng.chance(50),
            team: rng.chance(60),
            listed: rng.chance(85),
        })
        .collect();
    Model {
        services,
        apps,
        kinds: KINDS.iter().map(|_| rng.chance(70)).collect(),
        namespace: rng.below(2) as u32,
        root_self_heal: rng.chance(50),
        exclude_secrets: rng.chance(20),
    }
}

/// One change to one setting, which lands in one file.
fn edit(model: &Model, rng: &mut Rng) -> Model {
    let mut m = model.clone();
    let s = rng.below(m.services.len());
    let a = rng.below(m.apps.len());
    let o = rng.below(2);
    match rng.below(17) {
        0 => m.services[s].hpa ^= true,
        1 => {
            m.services[s].base_replicas = match m.services[s].base_replicas {
                Some(_) => None,
                None => Some(2),
            }
        }
        2 => m.services[s].secret ^= true,
        3 => {
            m.services[s].overlays[o].0 = match m.services[s].overlays[o].0 {
                Some(_) => None,
                None => Some(5),
            }
        }
        4 => m.services[s].overlays[o].1 ^= true,
        5 => m.services[s].overlays[o].2 += 1,
        6 => m.apps[a].service = rng.below(m.services.len()),
        7 => m.apps[a].prod ^= true,
        8 => m.apps[a].self_heal ^= true,
        9 => m.apps[a].prune ^= true,
        10 => m.apps[a].ignore_replicas ^= true,
        11 => m.apps[a].respect ^= true,
        12 => m.apps[a].team ^= true,
        13 => m.apps[a].listed ^= true,
        14 => {
            let k = rng.below(KINDS.len());
            m.kinds[k] ^= true;
        }
        15 => m.root_self_heal ^= true,
        _ => m.exclude_secrets ^= true,
    }
    m
}

fn lines(out: &mut BTreeMap<String, String>, path: String, lines: &[&str]) {
    let mut text = lines.join("\n");
    text.push('\n');
    out.insert(path, text);
}

/// The repository's files. Every file is always written, listed or not, so that an edit
/// changes one file's text and adds or removes none.
fn files(m: &Model) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    lines(
        &mut out,
        ".gitops-lint.yaml".into(),
        &["repo-urls:", &format!("  - {URL}")],
    );
    for (i, s) in m.services.iter().enumerate() {
        let base = format!("services/svc{i}/base");
        let mut k = vec!["resources:", "  - deployment.yaml"];
        if s.hpa {
            k.push("  - hpa.yaml");
        }
        if s.secret {
            k.push("  - secret.yaml");
        }
        lines(&mut out, format!("{base}/kustomization.yaml"), &k);
        let replicas = s.base_replicas.map(|r| format!("  replicas: {r}"));
        let mut d = vec![
            "apiVersion: apps/v1".to_string(),
            "kind: Deployment".into(),
            "metadata:".into(),
            format!("  name: svc{i}"),
            "spec:".into(),
        ];
        d.extend(replicas);
        d.extend(
            [
                "  selector:",
                "    matchLabels:",
                &format!("      app: svc{i}"),
                "  template:",
                "    metadata:",
                "      labels:",
                &format!("        app: svc{i}"),
                "    spec:",
                "      containers:",
                "        - name: app",
                "          image: nginx:1.27.3",
            ]
            .map(String::from),
        );
        let d: Vec<&str> = d.iter().map(String::as_str).collect();
        lines(&mut out, format!("{base}/deployment.yaml"), &d);
        lines(
            &mut out,
            format!("{base}/hpa.yaml"),
            &[
                "apiVersion: autoscaling/v2",
                "kind: HorizontalPodAutoscaler",
                "metadata:",
                &format!("  name: svc{i}"),
                "spec:",
                "  scaleTargetRef:",
                "    apiVersion: apps/v1",
                "    kind: Deployment",
                &format!("    name: svc{i}"),
                "  minReplicas: 2",
                "  maxReplicas: 6",
            ],
        );
        lines(
            &mut out,
            format!("{base}/secret.yaml"),
            &[
                "apiVersion: v1",
                "kind: Secret",
                "metadata:",
                &format!("  name: svc{i}-db"),
                "stringData:",
                "  password: Zq8!vR2#mT6wLp4x",
            ],
        );
        for (env, (replicas, patch, count)) in ["dev", "prod"].iter().zip(&s.overlays) {
            let dir = format!("services/svc{i}/overlays/{env}");
            let mut k = vec![
                "resources:".to_string(),
                "  - ../../base".into(),
                format!("namespace: {env}"),
            ];
            if let Some(r) = replicas {
                k.extend([
                    "replicas:".into(),
                    format!("  - name: svc{i}"),
                    format!("    count: {r}"),
                ]);
            }
            if *patch {
                k.extend(["patches:".into(), "  - path: replicas.yaml".into()]);
            }
            let k: Vec<&str> = k.iter().map(String::as_str).collect();
            lines(&mut out, format!("{dir}/kustomization.yaml"), &k);
            lines(
                &mut out,
                format!("{dir}/replicas.yaml"),
                &[
                    "apiVersion: apps/v1",
                    "kind: Deployment",
                    "metadata:",
                    &format!("  name: svc{i}"),
                    "spec:",
                    &format!("  replicas: {count}"),
                ],
            );
        }
    }
    let mut listed = vec!["resources:", "  - ../projects/team.yaml"];
    let names: Vec<String> = (0..m.apps.len())
        .map(|i| format!("  - app{i}.yaml"))
        .collect();
    for (a, name) in m.apps.iter().zip(&names) {
        if a.listed {
            listed.push(name);
        }
    }
    lines(&mut out, "apps/kustomization.yaml".into(), &listed);
    for (i, a) in m.apps.iter().enumerate() {
        let env = if a.prod { "prod" } else { "dev" };
        let mut t = vec![
            "apiVersion: argoproj.io/v1alpha1".to_string(),
            "kind: Application".into(),
            "metadata:".into(),
            format!("  name: app{i}"),
            "  namespace: argocd".into(),
            "spec:".into(),
            format!("  project: {}", if a.team { "team" } else { "default" }),
            "  source:".into(),
            format!("    repoURL: {URL}"),
            "    targetRevision: main".into(),
            format!("    path: services/svc{}/overlays/{env}", a.service),
            "  destination:".into(),
            "    server: https://kubernetes.default.svc".into(),
            format!("    namespace: {env}"),
            "  syncPolicy:".into(),
            "    automated:".into(),
            format!("      selfHeal: {}", a.self_heal),
            format!("      prune: {}", a.prune),
        ];
        if a.respect {
            t.extend([
                "    syncOptions:".into(),
                "      - RespectIgnoreDifferences=true".into(),
            ]);
        }
        if a.ignore_replicas {
            t.extend([
                "  ignoreDifferences:".into(),
                "    - group: apps".into(),
                "      kind: Deployment".into(),
                "      jsonPointers:".into(),
                "        - /spec/replicas".into(),
            ]);
        }
        let t: Vec<&str> = t.iter().map(String::as_str).collect();
        lines(&mut out, format!("apps/app{i}.yaml"), &t);
    }
    lines(
        &mut out,
        "root.yaml".into(),
        &[
            "apiVersion: argoproj.io/v1alpha1",
            "kind: Application",
            "metadata:",
            "  name: root",
            "  namespace: argocd",
            "spec:",
            "  project: default",
            "  source:",
            &format!("    repoURL: {URL}"),
            "    targetRevision: main",
            "    path: apps",
            "  destination:",
            "    server: https://kubernetes.default.svc",
            "    namespace: argocd",
            "  syncPolicy:",
            "    automated:",
            &format!("      selfHeal: {}", m.root_self_heal),
        ],
    );
    let mut p = vec![
        "apiVersion: argoproj.io/v1alpha1".to_string(),
        "kind: AppProject".into(),
        "metadata:".into(),
        "  name: team".into(),
        "  namespace: argocd".into(),
        "spec:".into(),
        "  sourceRepos:".into(),
        format!("    - {URL}"),
        "  destinations:".into(),
        "    - server: https://kubernetes.default.svc".into(),
        format!(
            "      namespace: {}",
            if m.namespace == 0 { "'*'" } else { "prod" }
        ),
        "  namespaceResourceWhitelist:".into(),
    ];
    for (kind, on) in KINDS.iter().zip(&m.kinds) {
        if *on {
            let group = if kind.starts_with('H') {
                "autoscaling"
            } else if *kind == "Deployment" {
                "apps"
            } else {
                "''"
            };
            p.extend([
                format!("    - group: {group}"),
                format!("      kind: {kind}"),
            ]);
        }
    }
    if !m.kinds.iter().any(|k| *k) {
        p.push("    []".into());
        let last = p.len() - 2;
        p[last] = "  namespaceResourceWhitelist: []".into();
        p.pop();
    }
    let p: Vec<&str> = p.iter().map(String::as_str).collect();
    lines(&mut out, "projects/team.yaml".into(), &p);
    let mut cm = vec![
        "apiVersion: v1",
        "kind: ConfigMap",
        "metadata:",
        "  name: argocd-cm",
        "  namespace: argocd",
        "data:",
    ];
    if m.exclude_secrets {
        cm.extend([
            "  resource.exclusions: |",
            "    - apiGroups: ['']",
            "      kinds: [Secret]",
            "      clusters: ['*']",
        ]);
    } else {
        cm.push("  timeout.reconciliation: 180s");
    }
    lines(&mut out, "argocd/argocd-cm.yaml".into(), &cm);
    out
}

fn write(dir: &Path, files: &BTreeMap<String, String>) {
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

/// A finding by what decides a commit: its rule, severity and place. (Its message may name
/// the first of the objects that share it, and a run that reads fewer overlays of a base may
/// name another.)
fn key(f: &Value) -> String {
    format!(
        "{} {} {}:{}:{}",
        f["rule"], f["severity"], f["file"], f["start"]["line"], f["start"]["column"]
    )
}

fn lint(dir: &Path, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["--format", "json", "--fail-on", "never"];
    all.extend_from_slice(args);
    let run = run_in(dir, &all, LIMIT);
    assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
    common::json(&run)["findings"].as_array().unwrap().clone()
}

fn keys(findings: &[Value]) -> BTreeSet<String> {
    findings.iter().map(key).collect()
}

fn rank(severity: &Value) -> u8 {
    match severity.as_str() {
        Some("error") => 3,
        Some("warning") => 2,
        _ => 1,
    }
}

/// Each finding's rule and place, with its highest severity.
fn worst(findings: &[Value]) -> BTreeMap<String, u8> {
    let mut out = BTreeMap::new();
    for f in findings {
        let place = format!(
            "{} {}:{}:{}",
            f["rule"], f["file"], f["start"]["line"], f["start"]["column"]
        );
        let r = out.entry(place).or_insert(0);
        *r = (*r).max(rank(&f["severity"]));
    }
    out
}

fn in_file(f: &Value, file: &str) -> bool {
    f["file"] == file
        || f["labels"]
            .as_array()
            .is_some_and(|ls| ls.iter().any(|l| l["file"] == file))
}

/// The source directories an edit took out of an Application.
fn left_behind(before: &str, after: &str) -> Vec<String> {
    let paths = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| l.trim().strip_prefix("path: "))
            .map(|p| format!("{p}/"))
            .collect()
    };
    let now = paths(after);
    paths(before)
        .into_iter()
        .filter(|p| !now.contains(p))
        .collect()
}

#[test]
fn context_runs_report_what_an_edit_causes() {
    let mut failures = Vec::new();
    let mut edits = 0;
    let mut gained = 0;
    let mut elsewhere = 0;
    let mut gaps = 0;
    for seed in 0..REPOS {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (seed + 1).wrapping_mul(0x1234_5678_9ABC_DEF1));
        let model = generate(&mut rng);
        let work = tempfile::tempdir().unwrap();
        let before_files = files(&model);
        write(work.path(), &before_files);
        let before = worst(&lint(work.path(), &["."]));
        for _ in 0..EDITS_PER_REPO {
            let edited = edit(&model, &mut rng);
            let after_files = files(&edited);
            let changed: Vec<&String> = after_files
                .iter()
                .filter(|(p, t)| before_files.get(*p) != Some(*t))
                .map(|(p, _)| p)
                .collect();
            let [file] = changed[..] else {
                continue;
            };
            if std::env::var("DUMP").is_ok() {
                let d = std::path::PathBuf::from(format!("/tmp/ce/{seed}-{edits}"));
                write(&d.join("before"), &before_files);
                write(&d.join("after"), &after_files);
                std::fs::write(d.join("file"), file).unwrap();
            }
            write(work.path(), &after_files);
            let full = lint(work.path(), &["."]);
            let narrowed = keys(&lint(work.path(), &["--context", file]));
            edits += 1;
            let case = format!("repo {seed}, edit of {file}");
            for f in &full {
                let k = key(f);
                let place = format!(
                    "{} {}:{}:{}",
                    f["rule"], f["file"], f["start"]["line"], f["start"]["column"]
                );
                // New, or worse than it was: what a commit must not let through unseen.
                let new = before.get(&place).is_none_or(|&r| r < rank(&f["severity"]));
                gained += usize::from(new);
                elsewhere += usize::from(new && !in_file(f, file));
                // Known gap: a kustomization the edited Application no longer deploys stands
                // alone after the edit, and its findings are the edit's; a context run reads
                // the file as it is now, which no longer points there.
                let left = new
                    && f["applications"].as_array().is_some_and(Vec::is_empty)
                    && left_behind(&before_files[file], &after_files[file])
                        .iter()
                        .any(|dir| f["file"].as_str().is_some_and(|p| p.starts_with(dir)));
                if left {
                    gaps += 1;
                    continue;
                }
                if (new || in_file(f, file)) && !narrowed.contains(&k) {
                    let why = if new { "gains" } else { "places in the file" };
                    failures.push(format!(
                        "{case}: the full run {why} {k}, --context misses it"
                    ));
                }
            }
            let all = keys(&full);
            for k in narrowed.difference(&all) {
                failures.push(format!(
                    "{case}: --context reports what the full run does not: {k}"
                ));
            }
            write(work.path(), &before_files);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    eprintln!("{edits} edits, {gained} findings gained ({elsewhere} outside the edited file), {gaps} left behind by an Application that moved");
    // The generator must keep producing the edits this test is about.
    assert!(edits >= 40, "only {edits} single-file edits");
    assert!(
        elsewhere >= 5,
        "only {elsewhere} of {gained} gained findings lie outside the edited file"
    );
}

/// The commit and the pull request see the error an Application's edit causes in an overlay:
/// deleting the ignore of `/spec/replicas` makes the prod overlay's `replicas:` fight the
/// autoscaler, and Argo CD's self-heal reverts every scaling.
#[test]
fn deleting_an_ignore_reports_the_overlay_it_breaks() {
    let work = tempfile::tempdir().unwrap();
    let repo = work.path();
    let mut model = Model {
        services: vec![Service {
            hpa: true,
            base_replicas: None,
            secret: false,
            overlays: [(None, false, 3), (Some(3), false, 3)],
        }],
        apps: vec![App {
            service: 0,
            prod: true,
            self_heal: true,
            prune: true,
            ignore_replicas: true,
            respect: true,
            team: false,
            listed: true,
        }],
        kinds: vec![true; KINDS.len()],
        namespace: 0,
        root_self_heal: true,
        exclude_secrets: false,
    };
    write(repo, &files(&model));
    common::git_init(repo);
    common::git(repo, &["add", "-A"]);
    common::git(repo, &["commit", "-qm", "apps"]);
    let conflict = |findings: &[Value]| {
        findings
            .iter()
            .filter(|f| f["rule"] == "hpa-replicas-conflict")
            .map(|f| {
                (
                    f["severity"].clone(),
                    f["file"].clone(),
                    f["start"]["line"].clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert!(conflict(&lint(repo, &["."])).is_empty());
    model.apps[0].ignore_replicas = false;
    write(repo, &files(&model));
    let want = vec![(
        Value::from("error"),
        Value::from("services/svc0/overlays/prod/kustomization.yaml"),
        Value::from(6),
    )];
    assert_eq!(conflict(&lint(repo, &["."])), want, "full run");
    for args in [
        &["--context", "apps/app0.yaml"][..],
        &["--changed-since", "HEAD"],
    ] {
        assert_eq!(conflict(&lint(repo, args)), want, "{args:?}");
    }
}

/// A subfolder is linted in its repository: `gitops-lint apps` and `cd apps && gitops-lint`
/// resolve the Applications' paths against the repository root and report what the
/// Applications cause in the overlays they deploy, as the full run does.
#[test]
fn a_subfolder_is_judged_in_its_repository() {
    let work = tempfile::tempdir().unwrap();
    let repo = work.path();
    let model = Model {
        services: vec![Service {
            hpa: true,
            base_replicas: None,
            secret: false,
            overlays: [(None, false, 3), (Some(3), false, 3)],
        }],
        apps: vec![App {
            service: 0,
            prod: true,
            self_heal: true,
            prune: true,
            ignore_replicas: false,
            respect: false,
            team: true,
            listed: true,
        }],
        kinds: vec![true, false, true, true],
        namespace: 1,
        root_self_heal: true,
        exclude_secrets: false,
    };
    write(repo, &files(&model));
    let full = lint(repo, &["."]);
    let rules = |findings: &[Value]| {
        let mut r: Vec<String> = findings
            .iter()
            .map(|f| f["rule"].as_str().unwrap().to_string())
            .collect();
        r.sort();
        r.dedup();
        r
    };
    let from_apps: Vec<Value> = full
        .iter()
        .filter(|f| {
            f["applications"]
                .as_array()
                .is_some_and(|a| a.iter().any(|n| n == "app0"))
                || f["file"].as_str().unwrap().starts_with("apps/")
        })
        .cloned()
        .collect();
    for rule in ["hpa-replicas-conflict", "project-scope-violation"] {
        assert!(rules(&from_apps).iter().any(|r| r == rule), "{full:#?}");
    }
    let sub = lint(repo, &["apps"]);
    assert!(
        !rules(&sub)
            .iter()
            .any(|r| r == "application-source-missing"),
        "{sub:#?}"
    );
    assert_eq!(keys(&sub), keys(&from_apps), "gitops-lint apps");
    let inside = lint(&repo.join("apps"), &[]);
    let moved: BTreeSet<String> = inside
        .iter()
        .map(|f| {
            let mut f = f.clone();
            let file = f["file"].as_str().unwrap().to_string();
            f["file"] = Value::from(
                file.strip_prefix("../")
                    .map_or(format!("apps/{file}"), str::to_string),
            );
            key(&f)
        })
        .collect();
    assert_eq!(moved, keys(&from_apps), "cd apps && gitops-lint");
}

/// A folder named through a link (a catalogue's alias for a renamed component) is a root of
/// its own: a generator's file beside its kustomization is inside it, as kustomize, which
/// resolves its root's links, finds it. A file really outside stays an error.
#[cfg(unix)]
#[test]
fn a_linked_folder_keeps_its_files_inside() {
    let work = tempfile::tempdir().unwrap();
    let repo = work.path();
    std::fs::create_dir(repo.join(".git")).unwrap();
    let files = BTreeMap::from([
        (
            "real/kustomization.yaml".to_string(),
            "configMapGenerator:\n  - name: job\n    files:\n      - job.sh\n".to_string(),
        ),
        ("real/job.sh".to_string(), "echo hi\n".to_string()),
        (
            "out/kustomization.yaml".to_string(),
            "configMapGenerator:\n  - name: job\n    files:\n      - ../real/job.sh\n".to_string(),
        ),
    ]);
    write(repo, &files);
    std::os::unix::fs::symlink("real/", repo.join("alias")).unwrap();
    let errors = |findings: &[Value]| -> Vec<String> {
        findings
            .iter()
            .filter(|f| f["rule"] == "kustomize-error")
            .map(|f| f["file"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(errors(&lint(repo, &["alias"])), Vec::<String>::new());
    assert_eq!(errors(&lint(repo, &["alias/"])), Vec::<String>::new());
    assert_eq!(errors(&lint(repo, &["."])), ["out/kustomization.yaml"]);
}
