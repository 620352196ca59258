//! `--format sarif`: valid SARIF 2.1.0 for every fixture, and what GitHub code scanning needs
//! on top of the schema.
//!
//! The schema is the OASIS one (draft-04), kept in `tests/data` so that the test runs offline.
//! GitHub's own requirements come from "SARIF support for code scanning" (required properties,
//! which may not be empty strings) and the upload limits it links to.
#![allow(clippy::unwrap_used)] // a test stops at the first thing that is not as expected

mod common;

use common::{root, rule_ids, run};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// GitHub rejects a SARIF upload above 10 MB (gzip-compressed); the uncompressed size is a
/// stricter bound that needs no compressor.
const MAX_BYTES: usize = 10 * 1024 * 1024;

fn validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string(root().join("tests/data/sarif-2.1.0.json")).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::draft4::options()
        .should_validate_formats(true)
        .build(&schema)
        .expect("the SARIF schema compiles")
}

/// Every rule fixture (each file and each case folder), and the two sample repositories.
fn targets() -> Vec<String> {
    let mut out = Vec::new();
    let rules = root().join("fixtures/rules");
    let mut ids: Vec<_> = std::fs::read_dir(&rules)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    ids.sort();
    for id in ids {
        let mut cases: Vec<_> = std::fs::read_dir(&id)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        cases.sort();
        out.extend(cases.iter().map(|p| rel(p)));
    }
    out.push("fixtures/example-repo".into());
    out.push("fixtures/fleet-repo".into());
    out
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root())
        .unwrap()
        .to_string_lossy()
        .replace('\\', "/")
}

fn sarif(target: &str) -> (String, Value) {
    let out = run(&["--format", "sarif", "--fail-on", "never", target]);
    assert_eq!(out.code, 0, "{target}: {}", out.stderr);
    let value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{target}: not JSON: {e}\n{}", out.stdout));
    (out.stdout, value)
}

fn text<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn number(v: &Value, pointer: &str) -> Option<u64> {
    v.pointer(pointer).and_then(Value::as_u64)
}

/// A line's length in UTF-16 code units, without its line break (and the BOM of line 1).
fn utf16_len(line: &str) -> u64 {
    line.trim_end_matches('\r')
        .chars()
        .filter(|&c| c != '\u{feff}')
        .map(|c| c.len_utf16() as u64)
        .sum()
}

fn percent_decode(uri: &str) -> String {
    let b = uri.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (b[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A location as code scanning reads it: a relative URI of a file in the repository and a
/// complete region that lies inside that file.
fn check_location(
    loc: &Value,
    artifacts: &[Value],
    problems: &mut Vec<String>,
    what: &str,
    cache: &mut BTreeMap<String, Option<Vec<u64>>>,
) {
    let Some(uri) = text(loc, "/physicalLocation/artifactLocation/uri") else {
        problems.push(format!("{what}: no physicalLocation.artifactLocation.uri"));
        return;
    };
    if uri.starts_with('/') || uri.contains(':') || uri.contains('\\') {
        problems.push(format!("{what}: URI `{uri}` is not a relative path"));
    }
    if uri
        .split('/')
        .any(|s| s == "." || s == ".." || s.is_empty())
    {
        problems.push(format!("{what}: URI `{uri}` is not normalised"));
    }
    if let Some(i) = number(loc, "/physicalLocation/artifactLocation/index") {
        let listed = artifacts
            .get(i as usize)
            .and_then(|a| a.pointer("/location/uri"))
            .and_then(Value::as_str);
        if listed != Some(uri) {
            problems.push(format!(
                "{what}: artifact index {i} names {listed:?}, not `{uri}`"
            ));
        }
    }
    let region: Vec<Option<u64>> = ["startLine", "startColumn", "endLine", "endColumn"]
        .iter()
        .map(|k| number(loc, &format!("/physicalLocation/region/{k}")))
        .collect();
    let [Some(sl), Some(sc), Some(el), Some(ec)] = region[..] else {
        problems.push(format!("{what}: incomplete region {region:?}"));
        return;
    };
    if sl < 1 || sc < 1 || (el, ec) < (sl, sc) {
        problems.push(format!("{what}: region {sl}:{sc}-{el}:{ec} is reversed"));
    }
    // The region must exist in the file on disk (paths are relative to the run's directory).
    let lines = cache.entry(uri.to_string()).or_insert_with(|| {
        let bytes = std::fs::read(root().join(percent_decode(uri))).ok()?;
        let text = String::from_utf8_lossy(&bytes);
        Some(text.split('\n').map(utf16_len).collect())
    });
    let Some(lines) = lines else {
        problems.push(format!("{what}: `{uri}` is not a file in the repository"));
        return;
    };
    for (line, col, end) in [(sl, sc, "start"), (el, ec, "end")] {
        match lines.get(line as usize - 1) {
            None => problems.push(format!(
                "{what}: {end} line {line} is past the end of `{uri}` ({} lines)",
                lines.len()
            )),
            Some(len) if col > len + 1 => problems.push(format!(
                "{what}: {end} column {col} is past the end of {uri}:{line} ({len} units)"
            )),
            Some(_) => {}
        }
    }
}

/// What GitHub code scanning requires beyond the schema.
fn github_problems(target: &str, raw: &str, log: &Value, rules: &[String]) -> Vec<String> {
    let mut p = Vec::new();
    let mut cache = BTreeMap::new();
    if raw.len() > MAX_BYTES {
        p.push(format!("{} bytes: over the 10 MB upload limit", raw.len()));
    }
    if text(log, "/$schema").is_none() {
        p.push("no $schema".into());
    }
    if log["version"] != "2.1.0" {
        p.push("version is not 2.1.0".into());
    }
    let runs = log["runs"].as_array().cloned().unwrap_or_default();
    if runs.len() != 1 {
        p.push(format!("{} runs, expected one", runs.len()));
    }
    for run in &runs {
        if text(run, "/tool/driver/name") != Some("gitops-lint") {
            p.push("tool.driver.name is not gitops-lint".into());
        }
        if text(run, "/tool/driver/version") != Some(env!("CARGO_PKG_VERSION")) {
            p.push("tool.driver.version is not the package version".into());
        }
        let descriptors = run["tool"]["driver"]["rules"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let ids: Vec<&str> = descriptors
            .iter()
            .map(|r| r["id"].as_str().unwrap_or(""))
            .collect();
        if ids != rules {
            p.push(format!(
                "tool.driver.rules is not every rule in order: {ids:?}"
            ));
        }
        if descriptors.len() > 25_000 {
            p.push("over 25,000 rules".into());
        }
        for r in &descriptors {
            let id = r["id"].as_str().unwrap_or("?");
            for field in [
                "/id",
                "/shortDescription/text",
                "/fullDescription/text",
                "/help/text",
                "/help/markdown",
                "/helpUri",
                "/name",
            ] {
                if text(r, field).is_none() {
                    p.push(format!("rule {id}: no {field}"));
                }
            }
            for (field, max) in [
                ("/name", 255),
                ("/shortDescription/text", 1024),
                ("/fullDescription/text", 1024),
            ] {
                let n = text(r, field).map_or(0, |s| s.chars().count());
                if n > max {
                    p.push(format!("rule {id}: {field} has {n} characters, over {max}"));
                }
            }
            if !matches!(
                text(r, "/defaultConfiguration/level"),
                Some("note" | "warning" | "error")
            ) {
                p.push(format!("rule {id}: defaultConfiguration.level"));
            }
            if !matches!(
                text(r, "/properties/precision"),
                Some("very-high" | "high" | "medium" | "low")
            ) {
                p.push(format!("rule {id}: properties.precision"));
            }
            // Code scanning shows at most 10 tags per rule and rejects more than 20.
            let tags = r["properties"]["tags"].as_array().map_or(0, Vec::len);
            if !(1..=10).contains(&tags) {
                p.push(format!("rule {id}: {tags} tags"));
            }
        }
        let artifacts = run["artifacts"].as_array().cloned().unwrap_or_default();
        let results = run["results"].as_array().cloned().unwrap_or_default();
        if results.len() > 25_000 {
            p.push("over 25,000 results".into());
        }
        for (n, res) in results.iter().enumerate() {
            let id = text(res, "/ruleId").unwrap_or("");
            let what = format!("result {n} ({id})");
            if !rules.iter().any(|r| r == id) {
                p.push(format!("{what}: ruleId is not a rule"));
            }
            if let Some(i) = number(res, "/ruleIndex") {
                if ids.get(i as usize) != Some(&id) {
                    p.push(format!("{what}: ruleIndex {i} names another rule"));
                }
            }
            if !matches!(
                text(res, "/level"),
                Some("note" | "warning" | "error" | "none")
            ) {
                p.push(format!("{what}: level"));
            }
            if text(res, "/message/text").is_none() {
                p.push(format!("{what}: no message.text"));
            }
            let locations = res["locations"].as_array().cloned().unwrap_or_default();
            if locations.is_empty() || locations.len() > 10 {
                p.push(format!("{what}: {} locations", locations.len()));
            }
            for loc in &locations {
                check_location(loc, &artifacts, &mut p, &what, &mut cache);
            }
            let related = res["relatedLocations"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if related.len() > 1000 {
                p.push(format!("{what}: over 1,000 related locations"));
            }
            for loc in &related {
                check_location(
                    loc,
                    &artifacts,
                    &mut p,
                    &format!("{what} related"),
                    &mut cache,
                );
                if text(loc, "/message/text").is_none() {
                    p.push(format!("{what}: a related location without a message"));
                }
            }
            // Our fingerprint is the baseline's identity (rule, file, object, pointer); two
            // same-named objects in one file share it, as they share a baseline entry.
            if text(res, "/partialFingerprints/gitopsLint~1v1").is_none() {
                p.push(format!("{what}: no partialFingerprints"));
            }
        }
        // Source text could carry Secret values: it is never copied into the log.
        if raw.contains("\"snippet\"") || raw.contains("\"contextRegion\"") {
            p.push("the log copies source text".into());
        }
    }
    p.into_iter().map(|m| format!("{target}: {m}")).collect()
}

#[test]
fn every_fixture_is_valid_sarif_that_code_scanning_accepts() {
    let schema = validator();
    let rules = rule_ids();
    let targets = targets();
    assert!(targets.len() > 100, "{targets:?}");
    let mut failures = Vec::new();
    let mut results = 0;
    for target in &targets {
        let (raw, log) = sarif(target);
        for e in schema.iter_errors(&log) {
            failures.push(format!("{target}: schema: {e} at {}", e.instance_path()));
        }
        failures.extend(github_problems(target, &raw, &log, &rules));
        results += log["runs"][0]["results"].as_array().map_or(0, Vec::len);
    }
    assert!(results > 100, "only {results} results in all fixtures");
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn the_schema_check_catches_a_broken_log() {
    let schema = validator();
    let (_, mut log) = sarif("fixtures/example-repo");
    assert!(schema.is_valid(&log));
    log["runs"][0]["results"][0]["level"] = "fatal".into();
    log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] =
        0.into();
    assert!(schema.iter_errors(&log).count() >= 2);
}

#[test]
fn rules_carry_their_docs() {
    let (_, log) = sarif("fixtures/rules/self-heal-disabled/fires.yaml");
    let rules = log["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .unwrap();
    let rule = rules
        .iter()
        .find(|r| r["id"] == "self-heal-disabled")
        .unwrap();
    for r in rules {
        let id = r["id"].as_str().unwrap();
        let doc = std::fs::read_to_string(root().join(format!("rules/{id}.md"))).unwrap();
        assert_eq!(r["help"]["markdown"], doc.as_str(), "{id}");
        assert_eq!(r["help"]["text"], doc.as_str(), "{id}");
    }
    let doc = std::fs::read_to_string(root().join("rules/self-heal-disabled.md")).unwrap();
    assert_eq!(rule["name"], "SelfHealDisabled");
    assert_eq!(rule["help"]["markdown"], doc.as_str());
    assert_eq!(rule["help"]["text"], doc.as_str());
    assert_eq!(
        rule["fullDescription"]["text"],
        doc.split("\n\n").nth(1).unwrap().trim()
    );
    assert_eq!(
        rule["helpUri"],
        "https://github.com/gitops-lint/gitops-lint/blob/main/rules/self-heal-disabled.md"
    );
    assert_eq!(rule["defaultConfiguration"]["level"], "warning");
    assert_eq!(
        rule["properties"]["tags"],
        serde_json::json!(["sync-policy", "argo-cd"])
    );
    // Every rule's category and default severity, as the registry declares them; info rules
    // are SARIF notes.
    let mut notes = 0;
    assert_eq!(rules.len(), gitops_lint::rules::RULES.len());
    for (declared, rule) in gitops_lint::rules::RULES.iter().zip(rules) {
        let level = match declared.severity.to_string().as_str() {
            "info" => "note".to_string(),
            other => other.to_string(),
        };
        notes += usize::from(level == "note");
        assert_eq!(rule["id"], declared.id);
        assert_eq!(
            rule["defaultConfiguration"]["level"], level,
            "{}",
            declared.id
        );
        assert_eq!(
            rule["properties"]["tags"][0],
            declared.category.as_str(),
            "{}",
            declared.id
        );
    }
    assert!(notes > 0, "no info rule to check");
    let result = &log["runs"][0]["results"][0];
    assert_eq!(result["ruleId"], "self-heal-disabled");
    assert_eq!(
        rules[result["ruleIndex"].as_u64().unwrap() as usize]["id"],
        result["ruleId"]
    );
}

#[test]
fn results_match_the_json_findings() {
    let target = "fixtures/fleet-repo";
    let (_, log) = sarif(target);
    let json = common::json(&run(&["--format", "json", "--fail-on", "never", target]));
    let findings = json["findings"].as_array().unwrap();
    let results = log["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), findings.len());
    for (r, f) in results.iter().zip(findings) {
        assert_eq!(r["ruleId"], f["rule"]);
        let level = match f["severity"].as_str().unwrap() {
            "info" => "note",
            other => other,
        };
        assert_eq!(r["level"], level);
        // SARIF messages escape square brackets, which a viewer would read as a link.
        let message = r["message"]["text"]
            .as_str()
            .unwrap()
            .replace("\\[", "[")
            .replace("\\]", "]");
        let message = message.as_str();
        assert!(message.starts_with(f["message"].as_str().unwrap()));
        if let Some(help) = f["help"].as_str() {
            assert!(message.ends_with(&format!("\nhelp: {help}")), "{message}");
        }
        let loc = &r["locations"][0]["physicalLocation"];
        assert_eq!(loc["artifactLocation"]["uri"], f["file"]);
        assert_eq!(loc["artifactLocation"]["uriBaseId"], "%SRCROOT%");
        // The fixtures are ASCII: UTF-16 columns are character columns.
        assert_eq!(loc["region"]["startLine"], f["start"]["line"]);
        assert_eq!(loc["region"]["startColumn"], f["start"]["column"]);
        assert_eq!(r["partialFingerprints"]["gitopsLint/v1"], f["fingerprint"]);
        assert_eq!(r["properties"]["occurrences"], f["occurrences"]);
        if f["pointer"].is_string() {
            assert_eq!(r["properties"]["pointer"], f["pointer"]);
        }
        if let Some(o) = f["object"].as_object() {
            assert_eq!(r["properties"]["object"]["kind"], o["kind"]);
            assert_eq!(r["properties"]["object"]["name"], o["name"]);
        }
        let labels = f["labels"].as_array().unwrap();
        let related = r["relatedLocations"]
            .as_array()
            .map_or(&[][..], Vec::as_slice);
        assert_eq!(related.len(), labels.len());
        for (l, j) in related.iter().zip(labels) {
            assert_eq!(l["message"]["text"], j["message"]);
            assert_eq!(l["physicalLocation"]["artifactLocation"]["uri"], j["file"]);
            assert_eq!(
                l["physicalLocation"]["region"]["startLine"],
                j["start"]["line"]
            );
        }
    }
    assert_eq!(
        log["runs"][0]["invocations"][0]["executionSuccessful"],
        true
    );
    assert_eq!(log["runs"][0]["columnKind"], "utf16CodeUnits");
}

/// `--statistics` puts the JSON report's rows in the run's property bag, and the log stays
/// valid; without it the run has no properties.
#[test]
fn statistics_are_run_properties() {
    let schema = validator();
    let rules = rule_ids();
    // One rule reported at two severities, and the example repository.
    let targets = [
        "fixtures/rules/hpa-replicas-conflict/fires-pinned-replicas",
        "fixtures/rules/hpa-replicas-conflict/fires-overlay-patch",
        "fixtures/example-repo",
    ];
    let with = |format: &str| {
        let mut args = vec!["--statistics", "--format", format, "--fail-on", "never"];
        args.extend(targets);
        let out = run(&args);
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.stdout
    };
    let raw = with("sarif");
    let log: Value = serde_json::from_str(&raw).unwrap();
    let errors: Vec<String> = schema.iter_errors(&log).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    let problems = github_problems("statistics", &raw, &log, &rules);
    assert!(problems.is_empty(), "{problems:?}");
    let json: Value = serde_json::from_str(&with("json")).unwrap();
    let statistics = &log["runs"][0]["properties"]["statistics"];
    assert_eq!(statistics, &json["statistics"]);
    let hpa = statistics
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["rule"] == "hpa-replicas-conflict")
        .unwrap();
    assert_eq!(
        hpa["severities"],
        serde_json::json!({"error": 1, "info": 1})
    );
    let (_, plain) = sarif("fixtures/example-repo");
    assert!(plain["runs"][0].get("properties").is_none());
}

/// Columns are UTF-16 code units (as `columnKind` says), and paths are percent-encoded.
#[test]
fn columns_and_uris_outside_ascii() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("my apps")).unwrap();
    let line = r#"spec: {destination: {server: "https://kubernetes.default.svc", namespace: "😀ü"}, project: default, source: {repoURL: "https://github.com/acme/x.git", path: ".", targetRevision: main}}"#;
    std::fs::write(
        dir.path().join("my apps/app.yaml"),
        format!("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: payments-api\n  namespace: argocd\n{line}\n"),
    )
    .unwrap();
    let out = common::run_in(
        dir.path(),
        &["--format", "sarif", "--fail-on", "never", "."],
        std::time::Duration::from_secs(60),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let log: Value = serde_json::from_str(&out.stdout).unwrap();
    let errors: Vec<String> = validator()
        .iter_errors(&log)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let result = log["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["ruleId"] == "default-project")
        .expect("default-project fires");
    let loc = &result["locations"][0]["physicalLocation"];
    assert_eq!(loc["artifactLocation"]["uri"], "my%20apps/app.yaml");
    let at = line.find("default,").unwrap();
    let utf16 = line[..at].encode_utf16().count() as u64 + 1;
    assert_eq!(
        utf16,
        line[..at].chars().count() as u64 + 2,
        "one astral character"
    );
    assert_eq!(loc["region"]["startLine"], 6);
    assert_eq!(loc["region"]["startColumn"], utf16);
    assert_eq!(loc["region"]["endColumn"], utf16 + "default".len() as u64);
    let base = log["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"]
        .as_str()
        .unwrap();
    assert!(
        base.starts_with("file:///") && base.ends_with('/'),
        "{base}"
    );
}

/// Values under `data:` / `stringData:` in the fixture's Secrets.
fn secret_values(text: &str) -> Vec<String> {
    let mut values = Vec::new();
    let mut under: Option<usize> = None;
    for line in text.lines() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        if under.is_some_and(|d| indent <= d) {
            under = None;
        }
        if t == "data:" || t == "stringData:" {
            under = Some(indent);
        } else if under.is_some() {
            if let Some((_, v)) = t.split_once(": ") {
                let v = v.trim_matches(['"', '\'']);
                if v.len() >= 8 && !v.starts_with('<') {
                    values.push(v.to_string());
                }
            }
        }
    }
    values
}

#[test]
fn secret_values_stay_out_of_the_log() {
    let target = "fixtures/rules/secret-in-git/fires.yaml";
    let (raw, log) = sarif(target);
    assert!(log["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["ruleId"] == "secret-in-git"));
    let values = secret_values(&std::fs::read_to_string(root().join(target)).unwrap());
    assert!(!values.is_empty());
    for v in values {
        assert!(!raw.contains(&v), "the SARIF log shows `{v}`");
    }
}

#[test]
fn output_is_deterministic() {
    let (a, _) = sarif("fixtures/fleet-repo");
    let (b, _) = sarif("fixtures/fleet-repo");
    assert_eq!(a, b);
}

#[test]
fn example_repo_snapshot() {
    let (raw, log) = sarif("fixtures/example-repo");
    let base = log["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"]
        .as_str()
        .expect("originalUriBaseIds gives %SRCROOT%");
    assert!(
        base.starts_with("file:///") && base.ends_with('/'),
        "{base}"
    );
    // The working directory differs from machine to machine.
    let mut stable = raw.replace(&format!("\"{base}\""), "\"file:///[CWD]/\"");
    // Each doc is carried twice (text and Markdown) and checked by `rules_carry_their_docs`;
    // the snapshot names it instead of changing with every edit to a doc.
    for id in rule_ids() {
        let doc = std::fs::read_to_string(root().join(format!("rules/{id}.md"))).unwrap();
        let quoted = serde_json::to_string(&doc).unwrap();
        assert_eq!(
            stable.matches(&quoted).count(),
            2,
            "{id}: help text and Markdown"
        );
        stable = stable.replace(&quoted, &format!("\"[rules/{id}.md]\""));
    }
    insta::assert_snapshot!("example-sarif", stable);
}

/// `run.artifacts` lists the files that were linted: with `--context`, not the ones left unread.
#[test]
fn artifacts_are_the_linted_files() {
    let file = "fixtures/fleet-repo/services/worker/overlays/prod/kustomization.yaml";
    for args in [
        &[
            "--format",
            "sarif",
            "--fail-on",
            "never",
            "fixtures/fleet-repo",
        ][..],
        &["--context", "--format", "sarif", "--fail-on", "never", file][..],
    ] {
        let out = run(args);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let log: Value = serde_json::from_str(&out.stdout).unwrap();
        assert!(validator().is_valid(&log), "{args:?}");
        let json_args: Vec<&str> = args
            .iter()
            .map(|a| if *a == "sarif" { "json" } else { *a })
            .collect();
        let summary = common::json(&run(&json_args))["summary"].clone();
        let artifacts = log["runs"][0]["artifacts"].as_array().unwrap();
        assert_eq!(
            artifacts.len() as u64,
            summary["files_scanned"].as_u64().unwrap(),
            "{args:?}"
        );
        let uris: Vec<&str> = artifacts
            .iter()
            .map(|a| a["location"]["uri"].as_str().unwrap())
            .collect();
        assert!(uris.windows(2).all(|w| w[0] < w[1]), "sorted and distinct");
        let notes = log["runs"][0]["invocations"][0]["toolExecutionNotifications"]
            .as_array()
            .map_or(0, Vec::len);
        let expected = summary["files_skipped"].as_array().unwrap().len()
            + summary["not_rendered"].as_array().unwrap().len();
        assert_eq!(notes, expected, "{args:?}");
    }
}
