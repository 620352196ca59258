//! Properties of every run, over generated repositories: Applications in every formatting
//! style, kustomize bases and overlays with patches and components, and odd YAML (anchors,
//! merge keys, duplicate keys, tabs, BOMs, CRLF, invalid UTF-8, templates, non-ASCII text).
//!
//! For each repository: the output is the same with one worker thread and with several; every
//! reported place (finding, label, fix edit) lies inside its file, on a character boundary and
//! on the line it names; JSON and SARIF parse; and no file is changed, in bytes or mtime.
//!
//! The case count and seed are fixed, so CI sees the same repositories every run.
#![allow(clippy::unwrap_used)] // a test stops at the first thing that is not as expected

mod common;

use common::gen::{self, s, G};
use common::rng::Rng;
use common::run_in;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

const LIMIT: Duration = Duration::from_secs(60);
const CASES: u32 = 24;
const REPO_URL: &str = "https://github.com/acme/gitops.git";

fn m(entries: Vec<(&str, G)>) -> G {
    G::Map(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        false,
    )
}

fn seq(items: Vec<G>, flow: bool) -> G {
    G::Seq(items, flow)
}

/// Text that is not ASCII, so that a span cut by bytes shows.
const WORDS: [&str; 6] = ["web", "café", "наш", "日本", "a😀b", "e\u{301}"];

fn word(rng: &mut Rng) -> &'static str {
    WORDS[rng.below(WORDS.len())]
}

fn resource(rng: &mut Rng, i: usize) -> G {
    let name = |rng: &mut Rng| s(&format!("'{}-{i}'", word(rng)));
    match rng.below(4) {
        0 => m(vec![
            ("apiVersion", s("apps/v1")),
            ("kind", s("Deployment")),
            ("metadata", m(vec![("name", s(&format!("app-{i}")))])),
            (
                "spec",
                m(vec![
                    ("replicas", s(if rng.chance(50) { "2" } else { "'2'" })),
                    (
                        "template",
                        m(vec![(
                            "spec",
                            m(vec![(
                                "containers",
                                seq(
                                    vec![m(vec![
                                        ("name", name(rng)),
                                        (
                                            "image",
                                            s(if rng.chance(50) {
                                                "nginx"
                                            } else {
                                                "nginx:1.27"
                                            }),
                                        ),
                                    ])],
                                    rng.chance(20),
                                ),
                            )]),
                        )]),
                    ),
                ]),
            ),
        ]),
        1 => m(vec![
            ("apiVersion", s("v1")),
            ("kind", s("Secret")),
            ("metadata", m(vec![("name", s(&format!("creds-{i}")))])),
            ("data", m(vec![("password", s("aHVudGVyMg=="))])),
            (
                "stringData",
                m(vec![("token", s(&format!("'t0k3n-{}'", word(rng))))]),
            ),
        ]),
        2 => m(vec![
            ("apiVersion", s("v1")),
            ("kind", s("ConfigMap")),
            ("metadata", m(vec![("name", s(&format!("conf-{i}")))])),
            ("data", m(vec![("greeting", name(rng)), ("count", s("3"))])),
        ]),
        _ => m(vec![
            ("apiVersion", s("v1")),
            ("kind", s("Service")),
            (
                "metadata",
                m(vec![
                    ("name", s(&format!("svc-{i}"))),
                    ("annotations", m(vec![("note", name(rng))])),
                ]),
            ),
            (
                "spec",
                m(vec![("ports", seq(vec![m(vec![("port", s("80"))])], true))]),
            ),
        ]),
    }
}

fn strings(items: &[String], flow: bool) -> G {
    seq(items.iter().map(|i| s(i)).collect(), flow)
}

/// A base with a few resources, and overlays that patch it (and sometimes themselves, a
/// missing file, a remote base or a component).
fn kustomize(rng: &mut Rng, overlays: usize, files: &mut BTreeMap<String, Vec<u8>>) {
    let count = 1 + rng.below(4);
    let mut names = Vec::new();
    for i in 0..count {
        let name = format!("r{i}.yaml");
        files.insert(
            format!("base/{name}"),
            gen::write_docs(rng, 2, |rng, d| resource(rng, i * 10 + d)).into_bytes(),
        );
        names.push(name);
    }
    let mut base = vec![
        ("apiVersion", s("kustomize.config.k8s.io/v1beta1")),
        ("kind", s("Kustomization")),
        ("resources", strings(&names, rng.chance(30))),
    ];
    if rng.chance(40) {
        base.push(("namePrefix", s("pre-")));
    }
    if rng.chance(40) {
        base.push(("commonLabels", m(vec![("team", s(word(rng)))])));
    }
    if rng.chance(30) {
        base.push((
            "configMapGenerator",
            seq(
                vec![m(vec![
                    ("name", s("generated")),
                    ("literals", strings(&["a=1".into(), "b=2".into()], false)),
                ])],
                false,
            ),
        ));
    }
    let base = m(base);
    files.insert(
        "base/kustomization.yaml".into(),
        gen::write_docs(rng, 1, |_, _| base.clone()).into_bytes(),
    );
    if rng.chance(30) {
        files.insert(
            "components/extra/kustomization.yaml".into(),
            b"apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n- patch: |-\n    - op: add\n      path: /metadata/labels\n      value: {extra: 'yes'}\n  target: {kind: Deployment}\n".to_vec(),
        );
    }
    for o in 0..overlays {
        let dir = format!("apps/app-{o}-0");
        let mut resources = vec!["../../base".to_string()];
        if rng.chance(15) {
            resources.push("missing.yaml".into());
        }
        if rng.chance(15) {
            resources.push("https://github.com/other/repo//base?ref=v1".into());
        }
        if rng.chance(10) {
            // Includes itself: a cycle to report, not to follow forever.
            resources.push(".".into());
        }
        let mut k = vec![
            ("apiVersion", s("kustomize.config.k8s.io/v1beta1")),
            ("kind", s("Kustomization")),
            ("resources", strings(&resources, rng.chance(30))),
        ];
        if rng.chance(50) {
            k.push(("namespace", s(&format!("ns-{o}"))));
        }
        if rng.chance(30) && files.contains_key("components/extra/kustomization.yaml") {
            k.push((
                "components",
                strings(&["../../components/extra".into()], false),
            ));
        }
        let mut patches = Vec::new();
        if rng.chance(60) {
            files.insert(
                format!("{dir}/patch.yaml"),
                format!(
                    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-{}\nspec:\n  replicas: {}\n",
                    rng.below(4) * 10,
                    rng.below(3)
                )
                .into_bytes(),
            );
            patches.push(m(vec![("path", s("patch.yaml"))]));
        }
        if rng.chance(50) {
            let op = ["replace", "remove", "add", "test"][rng.below(4)];
            patches.push(m(vec![
                (
                    "patch",
                    s(&format!(
                        "'[{{\"op\": \"{op}\", \"path\": \"/spec/replicas\", \"value\": 5}}]'"
                    )),
                ),
                (
                    "target",
                    m(vec![
                        ("kind", s("Deployment")),
                        (
                            "name",
                            s(["app-*", "*", "app-?0", "a*p*-*0*"][rng.below(4)]),
                        ),
                    ]),
                ),
            ]));
        }
        if rng.chance(30) {
            patches.push(m(vec![(
                "patch",
                s("'{kind: Secret, metadata: {name: creds-10}, $patch: delete}'"),
            )]));
        }
        if !patches.is_empty() {
            k.push(("patches", seq(patches, false)));
        }
        let k = m(k);
        files.insert(
            format!("{dir}/kustomization.yaml"),
            gen::write_docs(rng, 1, |_, _| k.clone()).into_bytes(),
        );
    }
}

/// Files that are hard to read, each chosen by one bit.
fn odd(bits: u16, rng: &mut Rng, files: &mut BTreeMap<String, Vec<u8>>) {
    let w = word(rng);
    let texts: [(&str, Vec<u8>); 12] = [
        (
            "odd/anchors.yaml",
            format!(
                "base: &b {{prune: true, selfHeal: false}}\napiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {{name: '{w}', namespace: argocd}}\nspec:\n  syncPolicy:\n    automated:\n      <<: *b\n      selfHeal: true\n  destination: &d {{server: 'https://kubernetes.default.svc', namespace: x}}\n  source: {{repoURL: '{REPO_URL}', path: base}}\n"
            )
            .into_bytes(),
        ),
        (
            "odd/duplicate.yaml",
            format!("kind: ConfigMap\napiVersion: v1\nmetadata: {{name: dup}}\ndata: {{a: '{w}', a: b}}\n")
                .into_bytes(),
        ),
        ("odd/tabs.yaml", b"kind: ConfigMap\n\tmetadata:\n\t  name: x\n".to_vec()),
        (
            "odd/bom-crlf.yaml",
            format!("\u{feff}apiVersion: v1\r\nkind: Secret\r\nmetadata: {{name: '{w}'}}\r\ndata:\r\n  key: c2VjcmV0\r\n")
                .into_bytes(),
        ),
        ("odd/latin1.yaml", b"kind: ConfigMap\nmetadata: {name: caf\xe9}\n".to_vec()),
        (
            "odd/template.yaml",
            b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.name }}\n{{- if .x }}\n".to_vec(),
        ),
        (
            "odd/nested.yaml",
            format!("deep: {}'{w}'{}\n", "[".repeat(60), "]".repeat(60)).into_bytes(),
        ),
        (
            "odd/documents.yaml",
            format!("---\n...\n---\n# only a comment ({w})\n---\n~\n---\n- a\n- {w}\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns\n...\n")
                .into_bytes(),
        ),
        ("odd/empty.yaml", Vec::new()),
        (
            "odd/appset.yaml",
            format!("apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {{name: set, namespace: argocd}}\nspec:\n  generators:\n  - list:\n      elements:\n      - {{cluster: '{w}', url: 'https://1.2.3.4'}}\n  template:\n    metadata: {{name: '{{{{cluster}}}}-app'}}\n    spec:\n      project: default\n      source: {{repoURL: '{REPO_URL}', path: 'apps/{{{{cluster}}}}', targetRevision: HEAD}}\n      destination: {{server: '{{{{url}}}}', namespace: x}}\n")
                .into_bytes(),
        ),
        (
            "odd/ignore.yaml",
            format!("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: '{w}'\n  namespace: argocd # gitops-lint: ignore[default-project]\nspec:\n  project: default # gitops-lint: ignore[no-such-rule]\n  source: {{repoURL: '{REPO_URL}', path: apps/app-0-0}}\n  destination: {{name: in-cluster, namespace: x}}\n")
                .into_bytes(),
        ),
        ("odd/binary.yaml", b"\x7fELF\x00\x01\x02".to_vec()),
    ];
    for (i, (path, text)) in texts.into_iter().enumerate() {
        if bits & (1 << i) != 0 {
            files.insert(path.to_string(), text);
        }
    }
}

fn repository(apps: usize, overlays: usize, bits: u16, seed: u64) -> BTreeMap<String, Vec<u8>> {
    let mut rng = Rng(seed | 1);
    let mut files = BTreeMap::new();
    for i in 0..apps {
        files.insert(
            format!("apps/app-{i}.yaml"),
            gen::file(&mut rng, i).into_bytes(),
        );
    }
    kustomize(&mut rng, overlays, &mut files);
    odd(bits, &mut rng, &mut files);
    files
}

/// What a run may not change: each file's bytes and modification time.
fn state(root: &Path) -> BTreeMap<PathBuf, (Vec<u8>, SystemTime)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
                out.insert(path.clone(), (std::fs::read(&path).unwrap(), mtime));
            }
        }
    }
    out
}

/// The human report without its one varying part, the time taken.
fn untimed(text: String) -> String {
    regex::Regex::new(r" in \d+ ms")
        .unwrap()
        .replace_all(&text, " in _ ms")
        .into_owned()
}

/// Every place the report names lies inside its file, on character boundaries, and on the
/// line it says.
fn places_are_real(root: &Path, report: &Value) -> Result<(), String> {
    let mut places = Vec::new();
    for f in report["findings"].as_array().unwrap() {
        places.push(f);
        places.extend(f["labels"].as_array().unwrap());
        if let Some(edits) = f["fix"]["edits"].as_array() {
            places.extend(edits);
        }
    }
    for p in places {
        let file = p["file"].as_str().unwrap();
        let bytes = std::fs::read(root.join(file)).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        for end in ["start", "end"] {
            let offset = p[end]["offset"].as_u64().unwrap() as usize;
            let line = p[end]["line"].as_u64().unwrap() as usize;
            if offset > bytes.len() {
                return Err(format!(
                    "{file}: {end} {offset} beyond {} bytes",
                    bytes.len()
                ));
            }
            // Offsets count in the text as decoded; only in a UTF-8 file are they its bytes.
            if std::str::from_utf8(&bytes).is_err() {
                continue;
            }
            if !text.is_char_boundary(offset) {
                return Err(format!("{file}: {end} {offset} inside a character"));
            }
            let lines = 1 + bytes[..offset].iter().filter(|&&b| b == b'\n').count();
            if line != lines {
                return Err(format!(
                    "{file}: {end} {offset} is on line {lines}, not {line}"
                ));
            }
        }
        if p["start"]["offset"].as_u64() > p["end"]["offset"].as_u64() {
            return Err(format!("{file}: span ends before it starts: {p}"));
        }
    }
    Ok(())
}

fn check(files: &BTreeMap<String, Vec<u8>>) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
    }
    let before = state(dir.path());
    let lint = |format: &str, threads: &str| {
        let run = run_in(
            dir.path(),
            &[
                "--no-config",
                "--repo-url",
                REPO_URL,
                "--format",
                format,
                "--threads",
                threads,
                ".",
            ],
            LIMIT,
        );
        assert!(
            run.code == 0 || run.code == 1,
            "exit {}: {}",
            run.code,
            run.stderr
        );
        run.stdout
    };
    let parse = |text: &str, what: &str| -> Result<Value, TestCaseError> {
        serde_json::from_str(text)
            .map_err(|e| TestCaseError::fail(format!("{what} does not parse: {e}\n{text}")))
    };
    let one = parse(&lint("json", "1"), "JSON")?;
    let many = parse(&lint("json", "4"), "JSON")?;
    prop_assert_eq!(&one, &many);
    places_are_real(dir.path(), &one).map_err(TestCaseError::fail)?;
    let sarif = parse(&lint("sarif", "3"), "SARIF")?;
    prop_assert_eq!(&sarif["version"], "2.1.0");
    prop_assert_eq!(lint("concise", "1"), lint("concise", "4"));
    prop_assert_eq!(untimed(lint("human", "1")), untimed(lint("human", "2")));
    prop_assert!(before == state(dir.path()), "linting changed a file");
    Ok(())
}

#[test]
fn every_run_keeps_its_promises() {
    let config = Config {
        cases: CASES,
        rng_seed: RngSeed::Fixed(0x6170_706c_6963),
        failure_persistence: None,
        max_shrink_iters: 200,
        ..Config::default()
    };
    let shape = (0..4usize, 0..3usize, any::<u16>(), any::<u64>());
    TestRunner::new(config)
        .run(&shape, |(apps, overlays, bits, seed)| {
            check(&repository(apps, overlays, bits, seed))
        })
        .unwrap();
}
