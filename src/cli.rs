//! The command line: argument parsing, the exit-code contract, and the `rules`/`explain` verbs.

use crate::discover;
use crate::engine::{self, Outcome};
use crate::finding::Severity;
use crate::report::{self, Format, Settings};
use crate::rules::{self, Version, RULES};
use crate::yaml::{self, ParseLimits};
use clap::{Parser, Subcommand, ValueEnum};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

/// Exit code: no finding at or above --fail-on.
pub const EXIT_OK: i32 = 0;
/// Exit code: findings at or above --fail-on.
pub const EXIT_FINDINGS: i32 = 1;
/// Exit code: usage or internal error.
pub const EXIT_ERROR: i32 = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    Error,
    Warning,
    Info,
    Never,
}

impl FailOn {
    fn threshold(self) -> Option<Severity> {
        match self {
            FailOn::Error => Some(Severity::Error),
            FailOn::Warning => Some(Severity::Warning),
            FailOn::Info => Some(Severity::Info),
            FailOn::Never => None,
        }
    }
}

#[derive(Debug, Parser)]
#[command(
    name = "gitops-lint",
    version,
    about = "Lint a GitOps repository for the Argo CD configurations that hurt in production",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub lint: LintArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List every rule: id, category, default severity and summary.
    Rules,
    /// Print a rule's documentation.
    Explain {
        /// The rule id, e.g. self-heal-ignores-not-respected.
        rule: String,
    },
    /// Print the app-of-apps tree: each Application, what it renders, and its children.
    Graph {
        /// The repository (or a directory in it).
        #[arg(default_value = ".")]
        path: PathBuf,
        /// `text` for a tree, `dot` for Graphviz.
        #[arg(long, value_enum, default_value_t = GraphFormat::Text)]
        format: GraphFormat,
        /// A URL that means this repository (repeatable).
        #[arg(long, value_name = "URL")]
        repo_url: Vec<String>,
    },
    /// Print what the kustomization in DIR builds to, as a JSON array (for checking the
    /// renderer against kustomize).
    #[command(hide = true)]
    Render { dir: PathBuf },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum GraphFormat {
    Text,
    Dot,
}

#[derive(Debug, clap::Args)]
pub struct LintArgs {
    /// Directories (walked recursively) and files to lint.
    #[arg(default_value = ".")]
    pub paths: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Exit with 1 when a finding has at least this severity.
    #[arg(long, value_enum, default_value_t = FailOn::Warning)]
    pub fail_on: FailOn,
    /// The Argo CD version the repository deploys to (e.g. 3.1); version-dependent rules take
    /// the cautious reading when it is not given.
    #[arg(long, value_name = "X.Y", value_parser = Version::parse)]
    pub argocd_version: Option<Version>,
    /// Worker threads (default: all cores).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Only lint files matching this glob (repeatable).
    #[arg(long, value_name = "GLOB")]
    pub include: Vec<String>,
    /// Skip files matching this glob (repeatable).
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Skip files larger than this many bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 8 * 1024 * 1024)]
    pub max_file_size: u64,
    /// Never use colors (NO_COLOR is honoured too).
    #[arg(long)]
    pub no_color: bool,
    /// Print findings only: no summary line.
    #[arg(long, short)]
    pub quiet: bool,
    /// Also list skipped files such as Helm templates.
    #[arg(long, short)]
    pub verbose: bool,
    /// Print the number of findings per rule.
    #[arg(long)]
    pub statistics: bool,
    /// A URL that means the linted repository, besides its git remotes and the config's
    /// `repo-urls` (repeatable).
    #[arg(long, value_name = "URL")]
    pub repo_url: Vec<String>,
}

pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { EXIT_ERROR } else { EXIT_OK };
        }
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let result = match cli.command {
        Some(Command::Rules) => list_rules(&mut out)
            .map(|_| EXIT_OK)
            .map_err(|e| e.to_string()),
        Some(Command::Explain { rule }) => explain(&rule, &mut out),
        Some(Command::Graph {
            path,
            format,
            repo_url,
        }) => graph(path, format, repo_url, &mut out),
        Some(Command::Render { dir }) => render(dir, &mut out),
        None => lint(&cli.lint, &mut out),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("gitops-lint: {e}");
            EXIT_ERROR
        }
    }
}

fn list_rules(out: &mut dyn Write) -> std::io::Result<()> {
    for r in RULES {
        writeln!(
            out,
            "{:<36} {:<19} {:<8} {}",
            r.id,
            r.category.as_str(),
            r.severity,
            r.summary
        )?;
    }
    Ok(())
}

fn explain(id: &str, out: &mut dyn Write) -> Result<i32, String> {
    match rules::find(id) {
        Some(rule) => {
            out.write_all(rule.doc.as_bytes())
                .map_err(|e| e.to_string())?;
            Ok(EXIT_OK)
        }
        None => {
            let hint = rules::did_you_mean(id, RULES.iter().map(|r| r.id))
                .map(|s| format!("; did you mean `{s}`?"))
                .unwrap_or_default();
            Err(format!(
                "unknown rule `{id}`{hint} (`gitops-lint rules` lists them)"
            ))
        }
    }
}

fn options(paths: Vec<PathBuf>, repo_urls: Vec<String>) -> engine::Options {
    engine::Options {
        paths,
        discover: discover::Options {
            include: Vec::new(),
            exclude: Vec::new(),
            max_file_size: 8 * 1024 * 1024,
        },
        version: None,
        limits: ParseLimits::default(),
        repo_urls,
    }
}

fn graph(
    path: PathBuf,
    format: GraphFormat,
    repo_urls: Vec<String>,
    out: &mut dyn Write,
) -> Result<i32, String> {
    let outcome = engine::run(&options(vec![path], repo_urls))?;
    let written = match format {
        GraphFormat::Text => report::tree::text(&outcome, out),
        GraphFormat::Dot => report::tree::dot(&outcome, out),
    };
    written.map_err(|e| e.to_string())?;
    Ok(EXIT_OK)
}

fn render(dir: PathBuf, out: &mut dyn Write) -> Result<i32, String> {
    let root = crate::render::repo::find_root(&dir);
    let loaded = engine::load(&options(vec![root.clone()], Vec::new()))?;
    let (objects, problems) =
        crate::render::build_kustomization(&loaded.sources, &loaded.docs, &root, &dir);
    let json: Vec<serde_json::Value> = objects.iter().map(|o| yaml::to_json(&o.root)).collect();
    serde_json::to_writer_pretty(&mut *out, &json).map_err(|e| e.to_string())?;
    writeln!(out).map_err(|e| e.to_string())?;
    for p in &problems {
        let at = loaded.sources.start(p.span);
        eprintln!(
            "{}:{}:{}: {}",
            crate::render::normalize(&loaded.sources.get(p.span.file).path).display(),
            at.line,
            at.column,
            p.message
        );
    }
    Ok(EXIT_OK)
}

fn lint(args: &LintArgs, out: &mut dyn Write) -> Result<i32, String> {
    let mut opts = options(args.paths.clone(), args.repo_url.clone());
    opts.discover.include = args.include.clone();
    opts.discover.exclude = args.exclude.clone();
    opts.discover.max_file_size = args.max_file_size;
    opts.version = args.argocd_version;
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(n) = args.threads {
        pool = pool.num_threads(n.max(1));
    }
    let pool = pool.build().map_err(|e| e.to_string())?;
    let outcome: Outcome = pool.install(|| engine::run(&opts))?;

    let terminal = std::io::stdout().is_terminal();
    let color =
        terminal && !args.no_color && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let settings = Settings {
        color,
        unicode: terminal,
        width: if terminal {
            terminal_width().unwrap_or(100)
        } else {
            100
        },
        quiet: args.quiet,
        verbose: args.verbose,
        statistics: args.statistics,
    };
    report::reporter(args.format)
        .report(&outcome, &settings, out)
        .map_err(|e| e.to_string())?;
    let failing = args
        .fail_on
        .threshold()
        .is_some_and(|t| outcome.findings.iter().any(|f| f.severity >= t));
    Ok(if failing { EXIT_FINDINGS } else { EXIT_OK })
}

fn terminal_width() -> Option<usize> {
    std::env::var("COLUMNS").ok()?.parse().ok()
}
