//! No output ever shows a secret value. A repository full of secret-bearing objects, each value a
//! distinctive canary, is linted in every format and mode that writes something; no canary may
//! appear in stdout, stderr or any file the run writes.
#![allow(clippy::unwrap_used)] // a test stops at the first thing that is not as expected

mod common;

use common::run_in;
use std::path::Path;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

/// Every canary, as it is written in the files (base64 ones also decoded: a tool that decodes
/// `data` must not print the clear text either).
const CANARIES: &[&str] = &[
    "cAnArY1-data-b64",
    "cAnArY2-stringdata-plain",
    "cAnArY3-repo-password",
    "cAnArY4-ssh-private-key-line",
    "cAnArY5-generator-literal",
    "cAnArY6-generator-file",
    "cAnArY7-generator-env",
    "cAnArY8-fake-provider",
    "cAnArY9-broken-secret",
    "cAnArYA-flow-secret",
    "cAnArYB-json-secret",
    "cAnArYC-duplicate-key",
    "cAnArYD-next-to-a-fix",
    "cAnArYE-repo-creds-password",
    "cAnArYF-broken-generator",
    "cAnArYG-sync-option",
    "cAnArYH-configmap-value",
    "cAnArYI-label-value",
    "cAnArYJ-comment-text",
    "cAnArYK-helm-parameter",
    "cAnArYL-generator-in-patch",
    "cAnArYM-decoded-elsewhere",
    "cAnArYN-key-line-reused",
    "cAnArYO-env-in-configmap",
    "cAnArYP-annotation-base64",
    "cAnArYQ-ünïcödé-value",
];

fn b64(s: &str) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in s.as_bytes().chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (*b as u32) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The secret-bearing files. Each object also triggers findings of its own, so that snippets,
/// messages and fixes are produced right next to the values.
fn write_repo(root: &Path) {
    let write = |rel: &str, text: &str| {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "apps/secret.yaml",
        &format!(
            "apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: payments
type: Opaque
data:
  password: {}
stringData:
  token: {}
  again: cAnArYC-duplicate-key
  again: cAnArYC-duplicate-key
  enabled: yes
  unknown: cAnArY2-stringdata-plain
",
            b64("cAnArY1-data-b64"),
            "cAnArY2-stringdata-plain",
        ),
    );
    write(
        "apps/repo-credentials.yaml",
        "apiVersion: v1
kind: Secret
metadata:
  name: private-repo
  namespace: argocd
  labels:
    argocd.argoproj.io/secret-type: repository
stringData:
  url: https://git.example.com/team/deploy.git
  username: deploy
  password: cAnArY3-repo-password
  sshPrivateKey: |
    -----BEGIN OPENSSH PRIVATE KEY-----
    cAnArY4-ssh-private-key-line
    -----END OPENSSH PRIVATE KEY-----
---
apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: argocd
  labels:
    argocd.argoproj.io/secret-type: repo-creds
data: {url: aHR0cHM6Ly9naXQuZXhhbXBsZS5jb20=, password: cAnArYE-repo-creds-password}
",
    );
    write(
        "apps/flow.yaml",
        "{apiVersion: v1, kind: Secret, metadata: {name: flow, namespace: a}, stringData: {key: cAnArYA-flow-secret}}\n",
    );
    write(
        "apps/secret.json",
        r#"{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "j", "namespace": "a"},
 "stringData": {"key": "cAnArYB-json-secret"}}
"#,
    );
    // A Secret that does not parse: no object is recognised, and the parse error sits a line
    // below the value.
    write(
        "apps/broken-secret.yaml",
        "apiVersion: v1
kind: Secret
metadata:
  name: broken
stringData:
  password: cAnArY9-broken-secret
  other: [unclosed
",
    );
    // A fixable Application in the same file as a Secret: a diff's context lines must not
    // carry the Secret's values.
    write(
        "apps/mixed.yaml",
        "apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: mixed
  namespace: argocd
spec:
  project: default
  source: {repoURL: 'https://example.com/r.git', path: a, targetRevision: HEAD}
  destination: {server: 'https://kubernetes.default.svc', namespace: a}
  syncPolicy:
    automated: {prune: true, selfHeal: true}
---
{apiVersion: v1, kind: Secret, metadata: {name: mixed, namespace: a}, stringData: {key: cAnArYD-next-to-a-fix}}
",
    );
    write(
        "gen/kustomization.yaml",
        "secretGenerator:
  - name: app
    literals:
      - PASSWORD=cAnArY5-generator-literal
    files:
      - key.txt
    envs:
      - app.env
resources:
  - missing.yaml
",
    );
    write("gen/key.txt", "cAnArY6-generator-file\n");
    write("gen/app.env", "TOKEN=cAnArY7-generator-env\n");
    write(
        "broken-gen/kustomization.yaml",
        "secretGenerator:
  - name: app
    literals:
      - PASSWORD=cAnArYF-broken-generator
    bad: [unclosed
",
    );
    write(
        "stores/store.yaml",
        "apiVersion: external-secrets.io/v1
kind: SecretStore
metadata:
  name: fake
  namespace: payments
spec:
  provider:
    aws:
      service: SecretsManager
      auth:
        secretRef: {accessKeyIDSecretRef: {name: aws, key: id}}
    fake:
      data: [{key: /db/password, value: cAnArY8-fake-provider}]
",
    );
    write_reuse(root);
}

/// Secret values that also appear outside their Secret or generator, each next to a finding
/// (in its snippet, its message or a fix's diff): they are masked there too.
fn write_reuse(root: &Path) {
    let write = |rel: &str, text: &str| {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "reuse/secret.yaml",
        &format!(
            "apiVersion: v1
kind: Secret
metadata:
  name: reused
  namespace: payments
data:
  decoded: {}
  encoded: {}
stringData:
  option: cAnArYG-sync-option
  config: cAnArYH-configmap-value
  label: cAnArYI-label-value
  comment: cAnArYJ-comment-text
  helm: cAnArYK-helm-parameter
  unicode: cAnArYQ-ünïcödé-value
  key: |
    -----BEGIN OPENSSH PRIVATE KEY-----
    cAnArYN-key-line-reused
    -----END OPENSSH PRIVATE KEY-----
",
            b64("cAnArYM-decoded-elsewhere"),
            b64("cAnArYP-annotation-base64"),
        ),
    );
    write(
        "reuse/app.yaml",
        &format!(
            "apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: reuse
  namespace: argocd
  labels:
    team: cAnArYI-label-value
  annotations:
    argocd.argoproj.io/sync-options: Prune=nope
    checksum: {}
spec:
  project: default
  source:
    repoURL: https://charts.example.com
    chart: db
    targetRevision: '*'
    helm:
      parameters:
        - name: password
          value: cAnArYK-helm-parameter
        - name: enabled
          value: true
  destination: {{server: 'https://kubernetes.default.svc', namespace: a}}
  syncPolicy:
    automated: {{prune: true, selfHeal: true}}
    syncOptions:
      - cAnArYG-sync-option
      # cAnArYJ-comment-text cAnArYN-key-line-reused
      - createNamespace=true
",
            b64("cAnArYP-annotation-base64"),
        ),
    );
    write(
        "reuse/configmap.yaml",
        "apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: payments
data:
  url: cAnArYH-configmap-value
  plain: cAnArYM-decoded-elsewhere
  env: cAnArYO-env-in-configmap
  unicode: x-cAnArYQ-ünïcödé-value-x
  url: twice
",
    );
    write(
        "reuse-gen/kustomization.yaml",
        "secretGenerator:
  - name: api
    literals:
      - API_KEY=cAnArYL-generator-in-patch
    envs:
      - api.env
patches:
  - patch: |
      apiVersion: apps/v1
      kind: Deployment
      metadata:
        name: missing
        annotations:
          key: cAnArYL-generator-in-patch
",
    );
    write("reuse-gen/api.env", "TOKEN=cAnArYO-env-in-configmap\n");
}

fn assert_no_canary(what: &str, text: &str) {
    for canary in CANARIES {
        for form in [canary.to_string(), b64(canary)] {
            assert!(
                !text.contains(&form),
                "{what} shows the secret value {form:?}:\n{text}"
            );
        }
    }
}

/// The repository really is linted: the values are read and the rules next to them fire, so an
/// empty report cannot pass for a redacted one.
fn assert_findings_near_the_values(json: &str) {
    let report: serde_json::Value = serde_json::from_str(json).unwrap();
    let found = common::found(&report);
    for (rule, file) in [
        ("secret-in-git", "apps/secret.yaml"),
        ("duplicate-key", "apps/secret.yaml"),
        ("secret-in-git", "apps/repo-credentials.yaml"),
        ("secret-in-git", "apps/flow.yaml"),
        ("secret-in-git", "apps/secret.json"),
        ("invalid-yaml", "apps/broken-secret.yaml"),
        ("invalid-yaml", "broken-gen/kustomization.yaml"),
        ("secret-in-git", "apps/mixed.yaml"),
        ("secret-in-git", "gen/kustomization.yaml"),
        ("secret-store-static-credentials", "stores/store.yaml"),
        ("sync-option-invalid", "reuse/app.yaml"),
        ("floating-target-revision", "reuse/app.yaml"),
        ("ambiguous-boolean", "reuse/app.yaml"),
        ("duplicate-key", "reuse/configmap.yaml"),
        ("secret-in-git", "reuse/secret.yaml"),
        ("secret-in-git", "reuse-gen/kustomization.yaml"),
        ("kustomize-error", "reuse-gen/kustomization.yaml"),
    ] {
        assert!(
            found.iter().any(|(r, f, _)| r == rule && f == file),
            "expected {rule} in {file}: {found:?}"
        );
    }
}

#[test]
fn no_format_prints_a_secret_value() {
    let dir = tempfile::tempdir().unwrap();
    write_repo(dir.path());
    let out = tempfile::tempdir().unwrap();
    for format in ["human", "json", "sarif", "github", "concise", "junit"] {
        let file = out.path().join(format!("report.{format}"));
        let file_arg = file.to_str().unwrap();
        for extra in [
            &[][..],
            &["--verbose", "--statistics"],
            &["--output", file_arg],
        ] {
            let mut args = vec!["--no-config", "--format", format, "."];
            args.extend_from_slice(extra);
            let run = run_in(dir.path(), &args, LIMIT);
            assert_eq!(run.code, 1, "{args:?}: {}", run.stderr);
            let what = format!("gitops-lint {args:?}");
            assert_no_canary(&format!("stdout of {what}"), &run.stdout);
            assert_no_canary(&format!("stderr of {what}"), &run.stderr);
            if format == "json" && extra.is_empty() {
                assert_findings_near_the_values(&run.stdout);
            }
        }
        let written = std::fs::read_to_string(&file).unwrap();
        assert!(!written.is_empty(), "--output {format} wrote nothing");
        assert_no_canary(&format!("--output of --format {format}"), &written);
    }
}

#[test]
fn human_snippets_show_the_secret_masked() {
    let dir = tempfile::tempdir().unwrap();
    write_repo(dir.path());
    let run = run_in(dir.path(), &["--no-config", "apps/secret.yaml"], LIMIT);
    assert_eq!(run.code, 1, "{}", run.stderr);
    // The snippet is there, with the key and a mask where the value was.
    assert!(
        run.stdout.contains("  token: ************************"),
        "{}",
        run.stdout
    );
    assert_no_canary("the human report", &run.stdout);
}

#[test]
fn other_modes_do_not_print_secret_values() {
    let dir = tempfile::tempdir().unwrap();
    write_repo(dir.path());
    let out = tempfile::tempdir().unwrap();
    let baseline = out.path().join("baseline.json");
    let baseline_arg = baseline.to_str().unwrap();
    let runs: &[&[&str]] = &[
        &["--no-config", "--diff", "--unsafe-fixes", "."],
        &["--no-config", "--write-baseline", baseline_arg, "."],
        &["--no-config", "--context", "apps/mixed.yaml"],
        &["graph", "."],
        &["graph", "--format", "dot", "."],
        &["config", "."],
        &["--no-config", "--fix", "--unsafe-fixes", "."],
    ];
    for args in runs {
        let run = run_in(dir.path(), args, LIMIT);
        assert_ne!(run.code, 2, "{args:?}: {}", run.stderr);
        if args.contains(&"--diff") {
            // The fix lands on the Application's last line, right above the Secret.
            assert!(
                run.stdout.contains("+++ b/apps/mixed.yaml"),
                "{}",
                run.stdout
            );
        }
        let what = format!("gitops-lint {args:?}");
        assert_no_canary(&format!("stdout of {what}"), &run.stdout);
        assert_no_canary(&format!("stderr of {what}"), &run.stderr);
    }
    let written = std::fs::read_to_string(&baseline).unwrap();
    assert!(written.contains("secret-in-git"), "{written}");
    assert_no_canary("the baseline file", &written);
}
