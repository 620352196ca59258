//! SARIF 2.1.0 output, for GitHub code scanning and other SARIF viewers.
//!
//! One run. `tool.driver.rules` lists every rule, whether it fired or not, with its doc as help,
//! so that a viewer can explain a result without the tool at hand.
//!
//! Locations:
//! - `artifactLocation.uri` is the file path relative to the working directory, with forward
//!   slashes and percent-encoding, against the base id `%SRCROOT%` (the working directory,
//!   given in `originalUriBaseIds`). A file outside the working directory gets an absolute
//!   `file://` URI and no base id.
//! - Columns are UTF-16 code units, SARIF's default `columnKind`, stated explicitly; they are
//!   computed from the source text, so they can differ from the character columns of the other
//!   formats on lines with characters outside the Basic Multilingual Plane. A leading byte-order
//!   mark is not counted.
//! - A region that ends just after a line break ends at the end of that line instead, so that
//!   it does not reach into a line it does not cover.
//!
//! Never any source text: no `region.snippet`, no `contextRegion`. Secret values would
//! otherwise leak; messages never contain them.

use super::{Reporter, Settings};
use crate::escape::sarif_text;
use crate::finding::{Finding, Severity};
use crate::outcome::Outcome;
use crate::rules::{Check, Rule};
use crate::yaml::{FileId, Span};
use serde::Serialize;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::{Component, Path};

pub const SCHEMA_URI: &str = "https://json.schemastore.org/sarif-2.1.0.json";
pub const INFORMATION_URI: &str = "https://github.com/gitops-lint/gitops-lint";
/// The key of our fingerprint in `partialFingerprints`.
pub const FINGERPRINT_KEY: &str = "gitopsLint/v1";
const SRCROOT: &str = "%SRCROOT%";

pub struct Sarif;

#[derive(Serialize)]
struct Log<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    version: &'static str,
    runs: Vec<Run<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Run<'a> {
    tool: Tool<'a>,
    invocations: Vec<Invocation>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    original_uri_base_ids: BTreeMap<&'static str, BaseUri>,
    artifacts: Vec<Artifact>,
    column_kind: &'static str,
    results: Vec<SarifResult<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    properties: Option<RunProperties>,
}

/// The run's property bag: findings per rule, with `--statistics` only.
#[derive(Serialize)]
struct RunProperties {
    statistics: Vec<super::RuleStatistics>,
}

#[derive(Serialize)]
struct Tool<'a> {
    driver: Driver<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Driver<'a> {
    name: &'static str,
    version: &'static str,
    semantic_version: &'static str,
    information_uri: &'static str,
    rules: Vec<Descriptor<'a>>,
}

#[derive(Serialize)]
struct Text<'a> {
    text: Cow<'a, str>,
}

#[derive(Serialize)]
struct Help<'a> {
    text: Cow<'a, str>,
    markdown: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Descriptor<'a> {
    id: &'a str,
    name: String,
    short_description: Text<'a>,
    full_description: OwnedText,
    help: Help<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    help_uri: Option<String>,
    default_configuration: Configuration,
    properties: DescriptorProperties,
}

#[derive(Serialize)]
struct Configuration {
    level: &'static str,
}

#[derive(Serialize)]
struct DescriptorProperties {
    tags: Vec<&'static str>,
    precision: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Invocation {
    execution_successful: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_execution_notifications: Vec<Notification>,
}

#[derive(Serialize)]
struct Notification {
    level: &'static str,
    message: OwnedText,
    locations: Vec<Location>,
    #[serde(skip_serializing_if = "Option::is_none")]
    properties: Option<NotificationProperties>,
}

#[derive(Serialize)]
struct NotificationProperties {
    reason: &'static str,
}

#[derive(Serialize)]
struct BaseUri {
    uri: String,
    description: Text<'static>,
}

#[derive(Serialize)]
struct Artifact {
    location: ArtifactLocation,
}

#[derive(Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct ArtifactLocation {
    uri: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    uri_base_id: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    index: Option<usize>,
}

#[derive(Serialize)]
struct OwnedText {
    text: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Region {
    start_line: u32,
    start_column: u32,
    end_line: u32,
    end_column: u32,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PhysicalLocation {
    artifact_location: ArtifactLocation,
    #[serde(skip_serializing_if = "Option::is_none")]
    region: Option<Region>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Location {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<usize>,
    physical_location: PhysicalLocation,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<OwnedText>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifResult<'a> {
    rule_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    rule_index: Option<usize>,
    level: &'static str,
    message: OwnedText,
    locations: Vec<Location>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    related_locations: Vec<Location>,
    partial_fingerprints: BTreeMap<&'static str, String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    fixes: Vec<SarifFix>,
    properties: ResultProperties<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifFix {
    description: OwnedText,
    artifact_changes: Vec<ArtifactChange>,
    properties: FixProperties,
}

#[derive(Serialize)]
struct FixProperties {
    applicability: crate::fix::Applicability,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ArtifactChange {
    artifact_location: ArtifactLocation,
    replacements: Vec<Replacement>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Replacement {
    deleted_region: Region,
    inserted_content: OwnedText,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ObjectProperty<'a> {
    api_version: &'a str,
    kind: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
}

#[derive(Serialize)]
struct ResultProperties<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    object: Option<ObjectProperty<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pointer: Option<&'a str>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    applications: &'a [String],
    occurrences: usize,
}

/// SARIF's name for a severity.
pub fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

/// `self-heal-disabled` → `SelfHealDisabled`.
pub fn camel_case(id: &str) -> String {
    id.split(['-', '_'])
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|first| first.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        })
        .collect()
}

/// The first paragraph after the doc's `# title`: the rule's one-sentence summary.
pub fn first_paragraph(doc: &str) -> String {
    let mut lines = doc.lines().skip_while(|l| l.trim().is_empty());
    let mut first = lines.next();
    if first.is_some_and(|l| l.starts_with("# ")) {
        first = None;
    }
    first
        .into_iter()
        .chain(lines)
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ")
}

fn descriptor(rule: &'static Rule) -> Descriptor<'static> {
    // A doc without a summary paragraph would leave an empty description, which code scanning
    // rejects; the registry's summary always exists. A policy's texts are the repository's: its
    // doc is Markdown with each of them escaped, the plain-text fields have them as they read.
    let mut full = match rule.check {
        Check::Policy(_) => sarif_text(rule.summary).into_owned(),
        _ => first_paragraph(rule.doc),
    };
    if full.is_empty() {
        full = rule.summary.to_string();
    }
    let help_text = match rule.check {
        Check::Policy(p) => Cow::Owned(p.doc(rule.summary, false)),
        _ => Cow::Borrowed(rule.doc),
    };
    Descriptor {
        id: rule.id,
        name: camel_case(rule.id),
        short_description: Text {
            text: sarif_text(rule.summary),
        },
        full_description: OwnedText { text: full },
        help: Help {
            text: help_text,
            markdown: rule.doc,
        },
        help_uri: match rule.check {
            Check::Policy(_) => rule.uri.map(str::to_string),
            _ => Some(format!("{INFORMATION_URI}/blob/main/rules/{}.md", rule.id)),
        },
        default_configuration: Configuration {
            level: level(rule.severity),
        },
        properties: DescriptorProperties {
            tags: vec![
                rule.category.as_str(),
                match rule.check {
                    Check::Policy(_) => "policy",
                    _ => "argo-cd",
                },
            ],
            precision: "high",
        },
    }
}

/// Percent-encodes everything but unreserved characters and `/` (and `:` when asked: it may
/// not appear in the first segment of a relative reference, where it would read as a scheme).
fn encode(s: &str, keep_colon: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        let keep = b.is_ascii_alphanumeric()
            || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/')
            || (keep_colon && b == b':');
        if keep {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The URI of a path as shown to the user: relative (against `%SRCROOT%`) or absolute.
fn artifact_location(path: &Path) -> ArtifactLocation {
    if path.is_absolute() || path.has_root() {
        return ArtifactLocation {
            uri: file_uri(path, false),
            uri_base_id: None,
            index: None,
        };
    }
    let parts: Vec<String> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(encode(&s.to_string_lossy(), false)),
            Component::ParentDir => Some("..".to_string()),
            _ => None,
        })
        .collect();
    ArtifactLocation {
        uri: parts.join("/"),
        uri_base_id: Some(SRCROOT),
        index: None,
    }
}

/// `file:///abs/path` (with a trailing `/` for a directory).
fn file_uri(path: &Path, dir: bool) -> String {
    let text = path.to_string_lossy().replace('\\', "/");
    let mut uri = String::from("file://");
    if !text.starts_with('/') {
        uri.push('/');
    }
    uri.push_str(&encode(&text, true));
    if dir && !uri.ends_with('/') {
        uri.push('/');
    }
    uri
}

/// The 1-based column of `offset` in UTF-16 code units, not counting a byte-order mark.
fn utf16_column(text: &str, offset: usize) -> u32 {
    let mut offset = offset.min(text.len());
    while offset > 0 && !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    text[line_start..offset]
        .chars()
        .filter(|&c| c != '\u{feff}')
        .map(char::len_utf16)
        .sum::<usize>() as u32
        + 1
}

fn region(outcome: &Outcome, span: Span) -> Region {
    let file = outcome.sources.get(span.file);
    let text = file.text.as_str();
    let start = (span.start as usize).min(text.len());
    let mut end = (span.end as usize).clamp(start, text.len());
    // Stop at the end of the last covered line rather than at the start of the next one.
    if end > start && text.as_bytes()[end - 1] == b'\n' {
        end -= 1;
        if end > start && text.as_bytes()[end - 1] == b'\r' {
            end -= 1;
        }
    }
    let (s, e) = (file.line_col(start as u32), file.line_col(end as u32));
    Region {
        start_line: s.line,
        start_column: utf16_column(text, start),
        end_line: e.line,
        end_column: utf16_column(text, end),
    }
}

/// Maps files to their index in `run.artifacts`.
struct Artifacts {
    list: Vec<Artifact>,
    index: BTreeMap<FileId, usize>,
}

impl Artifacts {
    /// Every linted file, plus any other file a finding points into, in URI order. Skipped
    /// files are left out, and so are files without text: with `--context`, the files a change
    /// cannot touch are kept as names only and never read (an empty file has nothing to show).
    fn collect(outcome: &Outcome) -> Artifacts {
        let skipped: std::collections::BTreeSet<&Path> = outcome
            .summary
            .skipped
            .iter()
            .map(|(p, _)| p.as_path())
            .collect();
        let mut referenced = std::collections::BTreeSet::new();
        for f in &outcome.findings {
            referenced.insert(f.primary.span.file);
            referenced.extend(f.secondary.iter().map(|l| l.span.file));
        }
        let mut files: Vec<(String, FileId, ArtifactLocation)> = outcome
            .sources
            .files()
            .iter()
            .enumerate()
            .map(|(i, f)| (i as FileId, f))
            .filter(|(i, f)| {
                referenced.contains(i)
                    || (!f.text.is_empty() && !skipped.contains(f.path.as_path()))
            })
            .map(|(i, f)| {
                let loc = artifact_location(&f.path);
                (loc.uri.clone(), i, loc)
            })
            .collect();
        files.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        let mut index = BTreeMap::new();
        let list = files
            .into_iter()
            .enumerate()
            .map(|(n, (_, id, location))| {
                index.insert(id, n);
                Artifact { location }
            })
            .collect();
        Artifacts { list, index }
    }

    fn location(&self, outcome: &Outcome, file: FileId) -> ArtifactLocation {
        let mut loc = artifact_location(&outcome.sources.get(file).path);
        loc.index = self.index.get(&file).copied();
        loc
    }
}

fn location(
    outcome: &Outcome,
    artifacts: &Artifacts,
    id: Option<usize>,
    span: Span,
    message: &str,
) -> Location {
    Location {
        id,
        physical_location: PhysicalLocation {
            artifact_location: artifacts.location(outcome, span.file),
            region: Some(region(outcome, span)),
        },
        message: (!message.is_empty()).then(|| OwnedText {
            text: sarif_text(message).into_owned(),
        }),
    }
}

fn result<'a>(
    outcome: &'a Outcome,
    artifacts: &Artifacts,
    rules: &[&'static Rule],
    f: &'a Finding,
) -> SarifResult<'a> {
    let mut text = sarif_text(&f.message).into_owned();
    if let Some(help) = f.help.as_deref().filter(|h| !h.is_empty()) {
        text.push_str("\nhelp: ");
        text.push_str(&sarif_text(help));
    }
    let fingerprint =
        crate::baseline::Fingerprint::of(f, &outcome.sources, &outcome.graph, &outcome.secrets)
            .digest();
    SarifResult {
        rule_id: f.rule.id,
        rule_index: rules.iter().position(|r| *r == f.rule),
        level: level(f.severity),
        message: OwnedText { text },
        locations: vec![location(
            outcome,
            artifacts,
            None,
            f.primary.span,
            &f.primary.message,
        )],
        related_locations: f
            .secondary
            .iter()
            .enumerate()
            .map(|(i, l)| location(outcome, artifacts, Some(i + 1), l.span, &l.message))
            .collect(),
        partial_fingerprints: BTreeMap::from([(FINGERPRINT_KEY, fingerprint)]),
        fixes: f
            .fix
            .iter()
            .map(|fix| SarifFix {
                description: OwnedText {
                    text: sarif_text(&fix.message).into_owned(),
                },
                artifact_changes: vec![ArtifactChange {
                    artifact_location: artifacts.location(outcome, fix.file()),
                    replacements: fix
                        .edits
                        .iter()
                        .map(|e| Replacement {
                            deleted_region: region(outcome, e.span),
                            inserted_content: OwnedText {
                                text: e.content.clone(),
                            },
                        })
                        .collect(),
                }],
                properties: FixProperties {
                    applicability: fix.applicability,
                },
            })
            .collect(),
        properties: ResultProperties {
            object: f.object.as_ref().map(|o| ObjectProperty {
                api_version: &o.api_version,
                kind: &o.kind,
                namespace: o.namespace.as_deref(),
                name: o.name.as_deref(),
            }),
            pointer: f.pointer.as_deref(),
            applications: &f.applications,
            occurrences: f.occurrences,
        },
    }
}

/// Files that were not checked, and things that were not rendered: nothing is lost silently.
fn notifications(outcome: &Outcome, artifacts: &Artifacts) -> Vec<Notification> {
    let skipped = outcome
        .summary
        .skipped
        .iter()
        .map(|(path, reason)| Notification {
            level: "note",
            message: OwnedText {
                text: sarif_text(&format!("not checked: {reason}")).into_owned(),
            },
            locations: vec![Location {
                id: None,
                physical_location: PhysicalLocation {
                    artifact_location: artifact_location(path),
                    region: None,
                },
                message: None,
            }],
            properties: Some(NotificationProperties {
                reason: reason.code(),
            }),
        });
    let not_rendered = outcome.summary.not_rendered.iter().map(|n| Notification {
        level: "note",
        message: OwnedText {
            text: sarif_text(&n.message).into_owned(),
        },
        locations: vec![location(outcome, artifacts, None, n.span, "")],
        properties: None,
    });
    skipped.chain(not_rendered).collect()
}

/// `%SRCROOT%`: the working directory, which relative paths are relative to.
fn base_ids() -> BTreeMap<&'static str, BaseUri> {
    let mut ids = BTreeMap::new();
    if let Ok(cwd) = std::env::current_dir() {
        ids.insert(
            SRCROOT,
            BaseUri {
                uri: file_uri(&cwd, true),
                description: Text {
                    text: "The directory gitops-lint ran in; file paths are relative to it.".into(),
                },
            },
        );
    }
    ids
}

impl Reporter for Sarif {
    fn report(
        &self,
        outcome: &Outcome,
        settings: &Settings,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        let artifacts = Artifacts::collect(outcome);
        let rules = &outcome.rules;
        let results = outcome
            .findings
            .iter()
            .map(|f| result(outcome, &artifacts, rules, f))
            .collect();
        let notifications = notifications(outcome, &artifacts);
        let log = Log {
            schema: SCHEMA_URI,
            version: "2.1.0",
            runs: vec![Run {
                tool: Tool {
                    driver: Driver {
                        name: "gitops-lint",
                        version: env!("CARGO_PKG_VERSION"),
                        semantic_version: env!("CARGO_PKG_VERSION"),
                        information_uri: INFORMATION_URI,
                        rules: rules.iter().map(|r| descriptor(r)).collect(),
                    },
                },
                invocations: vec![Invocation {
                    execution_successful: true,
                    tool_execution_notifications: notifications,
                }],
                original_uri_base_ids: base_ids(),
                artifacts: artifacts.list,
                column_kind: "utf16CodeUnits",
                results,
                properties: settings.statistics.then(|| RunProperties {
                    statistics: super::statistics(outcome),
                }),
            }],
        };
        serde_json::to_writer_pretty(&mut *out, &log)?;
        writeln!(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_paragraphs() {
        assert_eq!(camel_case("self-heal-disabled"), "SelfHealDisabled");
        assert_eq!(camel_case("rbac-default-admin"), "RbacDefaultAdmin");
        assert_eq!(
            first_paragraph("# x\n\nOne line\ncontinued.\n\n| t |\n"),
            "One line continued."
        );
    }

    #[test]
    fn uris_are_encoded_relative_references() {
        let loc = artifact_location(Path::new("./a b/c:d/ü.yaml"));
        assert_eq!(loc.uri, "a%20b/c%3Ad/%C3%BC.yaml");
        assert_eq!(loc.uri_base_id, Some(SRCROOT));
        let loc = artifact_location(Path::new("/srv/x y/a.yaml"));
        assert_eq!(loc.uri, "file:///srv/x%20y/a.yaml");
        assert_eq!(loc.uri_base_id, None);
    }

    #[test]
    fn columns_count_utf16_units() {
        let text = "\u{feff}a: 😀x\nb";
        // BOM ignored; "a: " is 3 units, the emoji 2.
        assert_eq!(utf16_column(text, text.find('x').unwrap()), 6);
        assert_eq!(utf16_column(text, text.find('b').unwrap()), 1);
    }
}
