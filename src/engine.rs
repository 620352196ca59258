//! The pipeline, in one direction: discover → parse → recognise → context → rules → sorted
//! findings. Reporting is left to the caller.

use crate::context::{self, RepoContext};
use crate::discover::{self, SkipReason};
use crate::finding::{Finding, ObjectRef, Severity};
use crate::model::{self, Object};
use crate::rules::{Cx, Sink, Version, RULES};
use crate::source::{self, SourceDb, SourceFile};
use crate::yaml::{self, FileId, ParseLimits, ProblemKind, Span};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct Options {
    pub paths: Vec<PathBuf>,
    pub discover: discover::Options,
    pub version: Option<Version>,
    pub limits: ParseLimits,
}

#[derive(Debug, Default)]
pub struct Summary {
    pub files_scanned: usize,
    pub objects_by_kind: BTreeMap<String, usize>,
    pub skipped: Vec<(PathBuf, SkipReason)>,
    pub elapsed: Duration,
}

impl Summary {
    pub fn objects(&self) -> usize {
        self.objects_by_kind.values().sum()
    }
}

pub struct Outcome {
    pub sources: SourceDb,
    pub findings: Vec<Finding>,
    pub summary: Summary,
    /// Byte ranges whose text no output may show (Secret values).
    pub redactions: Vec<Span>,
}

impl Outcome {
    pub fn count(&self, severity: Severity) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == severity)
            .count()
    }
}

/// What one file yields before anything cross-file happens.
struct FileResult {
    source: SourceFile,
    objects: Vec<Object>,
    problems: Vec<Finding>,
    redactions: Vec<Span>,
    skip: Option<SkipReason>,
}

fn problem_finding(
    kind: ProblemKind,
    span: Span,
    message: String,
    related: Option<(Span, String)>,
    help: &str,
) -> Finding {
    let rule = match kind {
        ProblemKind::InvalidYaml => "invalid-yaml",
        ProblemKind::DuplicateKey => "duplicate-key",
    };
    let mut f = Finding::new(rule, Severity::Error, span, message);
    if let Some((span, text)) = related {
        f.also(span, text);
    }
    f.help(help);
    f
}

fn process_file(id: FileId, path: PathBuf, limits: ParseLimits) -> FileResult {
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            return FileResult {
                source: SourceFile::new(path, String::new()),
                objects: Vec::new(),
                problems: Vec::new(),
                redactions: Vec::new(),
                skip: Some(SkipReason::Unreadable(e.to_string())),
            }
        }
    };
    let (text, decode_error) = source::decode(bytes);
    if let Some(err) = decode_error {
        let end = text[err.offset.min(text.len())..]
            .chars()
            .next()
            .map_or(err.offset, |c| err.offset + c.len_utf8());
        let f = problem_finding(
            ProblemKind::InvalidYaml,
            Span::new(id, err.offset, end),
            err.message,
            None,
            err.help,
        );
        return FileResult {
            source: SourceFile::new(path, text),
            objects: Vec::new(),
            problems: vec![f],
            redactions: Vec::new(),
            skip: None,
        };
    }
    let parsed = yaml::parse(id, &text, limits);
    // A Go template that does not parse is not a broken manifest: it is skipped, not reported.
    let broken = parsed
        .problems
        .iter()
        .any(|p| p.kind == ProblemKind::InvalidYaml);
    if broken && text.contains("{{") {
        return FileResult {
            source: SourceFile::new(path, text),
            objects: Vec::new(),
            problems: Vec::new(),
            redactions: Vec::new(),
            skip: Some(SkipReason::HelmTemplate),
        };
    }
    let problems = parsed
        .problems
        .into_iter()
        .map(|p| problem_finding(p.kind, p.span, p.message, p.related, p.help))
        .collect();
    let objects = model::recognise(id, &path, parsed.documents);
    let redactions = objects
        .iter()
        .flat_map(Object::secret_value_spans)
        .collect();
    FileResult {
        source: SourceFile::new(path, text),
        objects,
        problems,
        redactions,
        skip: None,
    }
}

fn run_rules(cx: &Cx, obj: &Object) -> Vec<Finding> {
    let mut out = Vec::new();
    for rule in RULES {
        let Some(check) = rule.check else { continue };
        let mut sink = Sink::new(rule);
        check(cx, obj, &mut sink);
        for mut f in sink.findings {
            f.object = Some(ObjectRef::of(obj));
            f.pointer = obj.root.pointer_to(f.primary.span);
            out.push(f);
        }
    }
    out
}

pub fn run(opts: &Options) -> Result<Outcome, String> {
    let started = Instant::now();
    let found = discover::discover(&opts.paths, &opts.discover)?;
    let results: Vec<FileResult> = found
        .files
        .into_par_iter()
        .enumerate()
        .map(|(i, path)| process_file(i as FileId, path, opts.limits))
        .collect();

    let mut summary = Summary {
        skipped: found.skipped,
        ..Summary::default()
    };
    let mut sources = SourceDb::default();
    let mut objects = Vec::new();
    let mut findings = Vec::new();
    let mut redactions = Vec::new();
    for r in results {
        match r.skip {
            Some(reason) => summary.skipped.push((r.source.path.clone(), reason)),
            None => summary.files_scanned += 1,
        }
        sources.add(r.source);
        objects.extend(r.objects);
        findings.extend(r.problems);
        redactions.extend(r.redactions);
    }
    for obj in &objects {
        *summary.objects_by_kind.entry(obj.kind.clone()).or_default() += 1;
    }

    let repo: RepoContext = context::build(&objects, &sources);
    let cx = Cx {
        version: opts.version,
        repo: &repo,
        sources: &sources,
    };
    let rule_findings: Vec<Vec<Finding>> = objects.par_iter().map(|o| run_rules(&cx, o)).collect();
    findings.extend(rule_findings.into_iter().flatten());
    findings.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    findings.dedup();
    summary.skipped.sort();
    summary.elapsed = started.elapsed();
    Ok(Outcome {
        sources,
        findings,
        summary,
        redactions,
    })
}
