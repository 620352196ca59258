//! The command line: argument parsing, the exit-code contract, and the `rules`/`explain` verbs.

use crate::baseline::Baseline;
use crate::config::{self, Config, ConfigError, FailOn};
use crate::discover;
use crate::engine;
use crate::escape::{Guard, Stream};
use crate::outcome::Outcome;
use crate::redact::Secrets;
use crate::repo::Markers;
use crate::report::{self, Format, Settings};
use crate::rules::{self, Version};
use crate::yaml;
use clap::{Parser, Subcommand};
use std::collections::BTreeSet;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

/// `eprintln!` through the guard of the log ([`Guard`]): notes and errors name the repository's
/// files and quote its text.
macro_rules! note {
    ($($arg:tt)*) => {
        write_stderr(&format!("{}\n", format_args!($($arg)*)))
    };
}

fn write_stderr(text: &str) {
    let text = crate::escape::guard_lines(text, TEXT);
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// Exit code: no finding at or above --fail-on.
pub const EXIT_OK: i32 = 0;
/// Exit code: findings at or above --fail-on.
pub const EXIT_FINDINGS: i32 = 1;
/// Exit code: usage or internal error.
pub const EXIT_ERROR: i32 = 2;

/// The end of `--help`: the exit-code contract above, and the common invocations.
const AFTER_HELP: &str = "\
Exit codes:
  0  no finding at or above --fail-on
  1  a finding at or above --fail-on, or files left unread past the size limit or the run's
     ceilings (unless --fail-on never)
  2  usage error (bad option, unknown rule, invalid configuration or baseline, missing path,
     unknown git revision) or a report or baseline that could not be written
With --diff, 1 means there is a change to make; --write-baseline exits 0.

Examples:
  gitops-lint path/to/repo                        lint a repository
  gitops-lint --context apps/a.yaml apps/b.yaml   lint changed files in context (pre-commit)
  gitops-lint --changed-since origin/main --format sarif --output gitops-lint.sarif
                                                  a pull request's findings: SARIF, and the log
  gitops-lint --fix path/to/repo                  apply the safe fixes, report what remains
  gitops-lint --select sync-policy,secrets --ignore retry-unbounded path/to/repo
                                                  two categories, less one of their rules";

#[derive(Debug, Parser)]
#[command(
    name = "gitops-lint",
    version,
    about = "Lint a GitOps repository for the Argo CD configurations that hurt in production",
    args_conflicts_with_subcommands = true,
    after_help = AFTER_HELP
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub lint: LintArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List every rule: id, category, default severity, fix and summary.
    Rules {
        /// `text` for aligned columns, `json` for an array of objects.
        #[arg(long, value_enum, default_value_t = ListFormat::Text)]
        format: ListFormat,
        /// The repository whose own policies are listed too (those of its config).
        #[arg(long, value_name = "PATH", default_value = ".")]
        path: PathBuf,
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Print a rule's documentation, or list the rules of a category.
    Explain {
        /// A rule id (self-heal-ignores-not-respected), one of the repository's own policies,
        /// or a category (sync-policy).
        rule: String,
        /// The repository whose own policies can be explained too.
        #[arg(long, value_name = "PATH", default_value = ".")]
        path: PathBuf,
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Print the app-of-apps tree: each Application, what it renders, and its children.
    Graph {
        /// The repository (or a directory in it).
        #[arg(default_value = ".")]
        path: PathBuf,
        #[command(flatten)]
        config: ConfigArgs,
        /// `text` for a tree, `dot` for Graphviz.
        #[arg(long, value_enum, default_value_t = GraphFormat::Text)]
        format: GraphFormat,
        /// A URL that means this repository (repeatable).
        #[arg(long, value_name = "URL")]
        repo_url: Vec<String>,
    },
    /// Print the effective configuration and where each value comes from.
    Config {
        /// The repository (or a directory in it) whose configuration to show.
        #[arg(default_value = ".")]
        path: PathBuf,
        #[command(flatten)]
        config: ConfigArgs,
        /// Print the JSON Schema of the config file instead.
        #[arg(long)]
        schema: bool,
        /// Print the JSON Schema of a policy file instead.
        #[arg(long, conflicts_with = "schema")]
        policy_schema: bool,
    },
    /// Print what the kustomization or Helm chart in DIR renders to, as a JSON array (for
    /// checking the renderers against kustomize and `helm template`).
    #[command(hide = true)]
    Render {
        dir: PathBuf,
        #[command(flatten)]
        chart: ChartArgs,
    },
}

/// How `render` renders a Helm chart: the `helm template` flags Argo CD passes.
#[derive(Debug, clap::Args)]
pub struct ChartArgs {
    #[arg(long, default_value = "release-name")]
    release_name: String,
    #[arg(long, default_value = "default")]
    namespace: String,
    #[arg(long = "values", short = 'f')]
    values: Vec<PathBuf>,
    #[arg(long)]
    set: Vec<String>,
    #[arg(long)]
    set_string: Vec<String>,
    #[arg(long)]
    api_versions: Vec<String>,
    #[arg(long)]
    kube_version: Option<String>,
    #[arg(long)]
    include_crds: bool,
    #[arg(long)]
    skip_tests: bool,
    #[arg(long, hide = true)]
    skip_schema_validation: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ListFormat {
    Text,
    Json,
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
    /// Worker threads (default: all cores).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Run only these rules: rule ids, categories (as `gitops-lint rules` lists them) or `all`,
    /// comma-separated or repeated. Replaces the config's `rules.select`; a rule named here runs
    /// even where the config ignores it or sets it `off`.
    #[arg(
        long,
        value_name = "RULES",
        value_delimiter = ',',
        value_parser = selector,
        help_heading = "Selection"
    )]
    pub select: Option<Vec<Selector>>,
    /// Run these rules as well as the selected ones (the config's `rules.select`, or all), even
    /// where the config ignores them or sets them `off`.
    #[arg(
        long,
        value_name = "RULES",
        value_delimiter = ',',
        value_parser = selector,
        help_heading = "Selection"
    )]
    pub extend_select: Vec<Selector>,
    /// Do not run these rules, on top of the config's `rules.ignore`. Wins over --select and
    /// --extend-select.
    #[arg(
        long,
        value_name = "RULES",
        value_delimiter = ',',
        value_parser = selector,
        help_heading = "Selection"
    )]
    pub ignore: Vec<Selector>,
    /// Ignore `# gitops-lint: ignore[...]` comments and `gitops-lint.io/ignore` annotations:
    /// show everything.
    #[arg(long, help_heading = "Selection")]
    pub no_suppressions: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human, help_heading = "Output")]
    pub format: Format,
    /// Write the report in `--format` to FILE; the human report still goes to the terminal
    /// (one run can feed both a SARIF upload and the log).
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub output: Option<PathBuf>,
    /// Exit with 1 when a finding has at least this severity [default: error, or the
    /// config's `fail-on`].
    #[arg(long, value_enum, help_heading = "Output")]
    pub fail_on: Option<FailOn>,
    /// Count the findings per rule, with the severities they were reported at, in any
    /// `--format`: a table after the findings, or data in JSON, SARIF and JUnit.
    #[arg(long, help_heading = "Output")]
    pub statistics: bool,
    /// Never use colors (NO_COLOR is honoured too).
    #[arg(long, help_heading = "Output")]
    pub no_color: bool,
    /// Print findings only: no summary line.
    #[arg(long, short, help_heading = "Output")]
    pub quiet: bool,
    /// Also list skipped files such as Helm templates.
    #[arg(long, short, help_heading = "Output")]
    pub verbose: bool,
    /// Apply the safe fixes to the files, then report what remains.
    #[arg(long, conflicts_with_all = ["diff", "write_baseline"], help_heading = "Fixing")]
    pub fix: bool,
    /// Print what --fix would change as a unified diff and change nothing (exit 1 when there
    /// is a change).
    #[arg(long, conflicts_with = "write_baseline", help_heading = "Fixing")]
    pub diff: bool,
    /// With --fix or --diff: also apply the fixes that change what Argo CD does (each rule's
    /// doc says which).
    #[arg(long, help_heading = "Fixing")]
    pub unsafe_fixes: bool,
    /// Treat PATHS as the changed files: lint the repositories they belong to, so their
    /// kustomizations and parent Applications are understood, but report only findings caused
    /// by them (what the pre-commit hook does).
    #[arg(long, help_heading = "Context")]
    pub context: bool,
    /// Report only findings caused by files changed since the git revision REF (committed or
    /// not), read in context as with --context. Git data is read in-process.
    #[arg(long, value_name = "REF", help_heading = "Context")]
    pub changed_since: Option<String>,
    /// With --context or --changed-since: keep what the first look at each file found between
    /// runs, in `$XDG_CACHE_HOME/gitops-lint` (`~/.cache/gitops-lint`), so that a run reads only
    /// the files it needs. An entry holds while its file's size, inode and times are unchanged.
    /// The linted tree is never written.
    #[arg(long, help_heading = "Context")]
    pub cache: bool,
    /// --cache, kept in DIR.
    #[arg(long, value_name = "DIR", help_heading = "Context")]
    pub cache_dir: Option<PathBuf>,
    /// Report (and fail on) only findings not recorded in this baseline file [default: the
    /// config's `baseline`].
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "write_baseline",
        help_heading = "Baseline"
    )]
    pub baseline: Option<PathBuf>,
    /// Record the current findings as the baseline in FILE (exit 0).
    #[arg(long, value_name = "FILE", help_heading = "Baseline")]
    pub write_baseline: Option<PathBuf>,
    /// Remove the entries that no longer occur from the baseline file (--baseline, or the
    /// config's `baseline`).
    #[arg(long, conflicts_with = "write_baseline", help_heading = "Baseline")]
    pub prune_baseline: bool,
    /// Only lint files matching this glob (repeatable).
    #[arg(long, value_name = "GLOB", help_heading = "Files")]
    pub include: Vec<String>,
    /// Skip files matching this glob (repeatable).
    #[arg(long, value_name = "GLOB", help_heading = "Files")]
    pub exclude: Vec<String>,
    /// Skip files larger than this many bytes [default: 8 MiB, or the config's
    /// `max-file-size`].
    #[arg(long, value_name = "BYTES", help_heading = "Files")]
    pub max_file_size: Option<u64>,
    /// The Argo CD version the repository deploys to (e.g. 3.1); version-dependent rules take
    /// the cautious reading when it is not given.
    #[arg(long, value_name = "X.Y", value_parser = Version::parse, help_heading = "Repository")]
    pub argocd_version: Option<Version>,
    /// A URL that means the linted repository, besides its git remotes and the config's
    /// `repo-urls` (repeatable).
    #[arg(long, value_name = "URL", help_heading = "Repository")]
    pub repo_url: Vec<String>,
    #[command(flatten, next_help_heading = "Configuration")]
    pub config: ConfigArgs,
    /// Print the wall time of each pipeline stage on stderr.
    #[arg(long, hide = true)]
    pub timings: bool,
}

/// One word of --select, --extend-select or --ignore. It is read once the config is: a
/// word may name one of the repository's own policies.
#[derive(Clone, Debug)]
pub struct Selector(String);

fn selector(word: &str) -> Result<Selector, String> {
    Ok(Selector(word.trim().to_string()))
}

impl LintArgs {
    /// The rule selection the command line asks for, among the rules of the run under
    /// `config`.
    fn selection(&self, config: &Config) -> Result<config::Selection, Failure> {
        let known = config.available();
        let ids = |option: &str, words: &[Selector]| -> Result<BTreeSet<&'static str>, Failure> {
            let mut out = BTreeSet::new();
            for w in words {
                let ids = rules::select_in(&w.0, &known).map_err(|u| {
                    Failure::Message(format!(
                        "invalid value '{}' for '{option} <RULES>': {u}",
                        w.0
                    ))
                })?;
                out.extend(ids);
            }
            Ok(out)
        };
        Ok(config::Selection {
            select: self
                .select
                .as_deref()
                .map(|w| ids("--select", w))
                .transpose()?,
            extend_select: ids("--extend-select", &self.extend_select)?,
            ignore: ids("--ignore", &self.ignore)?,
        })
    }
}

/// Which config file applies.
#[derive(Debug, Clone, clap::Args)]
pub struct ConfigArgs {
    /// Use this config file instead of the `.gitops-lint.yaml` found above the linted paths.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Ignore config files.
    #[arg(long, conflicts_with = "config")]
    pub no_config: bool,
    /// A config the CI job controls (e.g. the base branch's copy, kept outside the checkout):
    /// the repository's config may make its settings stricter, never looser.
    #[arg(long, value_name = "FILE")]
    pub trusted_config: Option<PathBuf>,
    /// --trusted-config, read from the git revision REV (e.g. origin/main) where the working
    /// tree's config is looked for; defaults apply when REV has none. Read in-process.
    #[arg(long, value_name = "REV", conflicts_with = "trusted_config")]
    pub trusted_config_rev: Option<String>,
}

/// Why a command could not run: exit 2.
enum Failure {
    Message(String),
    Config(Box<ConfigError>),
}

impl From<String> for Failure {
    fn from(s: String) -> Failure {
        Failure::Message(s)
    }
}

impl From<Box<ConfigError>> for Failure {
    fn from(e: Box<ConfigError>) -> Failure {
        Failure::Config(e)
    }
}

fn print_failure(f: Failure) {
    match f {
        // A closed pipe (`gitops-lint | head`) is the reader's choice, not an error to report.
        Failure::Message(m) if m.contains("Broken pipe") => {}
        // What fails before the run knows its secret values may still quote a credential a
        // file holds: masked by its shape.
        Failure::Message(m) => note!("gitops-lint: {}", Secrets::default().mask(&m)),
        Failure::Config(e) => {
            let terminal = std::io::stderr().is_terminal();
            let theme = if terminal {
                miette::GraphicalTheme::unicode_nocolor()
            } else {
                miette::GraphicalTheme::none()
            };
            let handler = miette::GraphicalReportHandler::new_themed(theme).with_width(100);
            let count = 1 + e.more.len();
            let heading = if count == 1 {
                "gitops-lint: invalid configuration".to_string()
            } else {
                format!("gitops-lint: invalid configuration ({count} mistakes)")
            };
            note!("{heading}");
            for one in std::iter::once(&*e).chain(&e.more) {
                let mut text = String::new();
                if handler.render_report(&mut text, &NamedConfig(one)).is_err() {
                    text = one.to_string();
                }
                note!("{}", Secrets::default().mask(text.trim_end()));
            }
        }
    }
}

/// A config error shown with its file name.
struct NamedConfig<'a>(&'a ConfigError);

impl std::fmt::Debug for NamedConfig<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

impl std::fmt::Display for NamedConfig<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::escape::visible_lines(&self.0.message))
    }
}

impl std::error::Error for NamedConfig<'_> {}

impl miette::Diagnostic for NamedConfig<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn std::fmt::Display + 'b>> {
        self.0.code()
    }
    fn help<'b>(&'b self) -> Option<Box<dyn std::fmt::Display + 'b>> {
        miette::Diagnostic::help(self.0)
    }
    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(self)
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        self.0.labels()
    }
}

impl miette::SourceCode for NamedConfig<'_> {
    fn read_span<'b>(
        &'b self,
        span: &miette::SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<Box<dyn miette::SpanContents<'b> + 'b>, miette::MietteError> {
        let inner = self.0.text.read_span(span, before, after)?;
        Ok(Box::new(miette::MietteSpanContents::new_named(
            crate::escape::visible(&self.0.path.display().to_string()).into_owned(),
            inner.data(),
            *inner.span(),
            inner.line(),
            inner.column(),
            inner.line_count(),
        )))
    }
}

/// The governing config (from `--config`, or found above the first path, clamped by the trusted
/// one if any) and the `repo-urls` of every linted repository.
fn configs(paths: &[PathBuf], args: &ConfigArgs) -> Result<(Config, Vec<String>), Failure> {
    // The trusted config first: its policies stand against the repository's own version of
    // one, which is then not loaded.
    let trusted = trusted_config(paths, args)?;
    let (governing, mut urls) = repo_configs(paths, args)?;
    let Some(trusted) = trusted else {
        return Ok((governing, urls));
    };
    urls.extend(trusted.repo_urls.iter().cloned());
    Ok((config::pin(governing, trusted), urls))
}

fn repo_configs(paths: &[PathBuf], args: &ConfigArgs) -> Result<(Config, Vec<String>), Failure> {
    if args.no_config {
        return Ok((Config::default(), Vec::new()));
    }
    if let Some(file) = &args.config {
        let c = config::load(file)?;
        let urls = c.repo_urls.clone();
        return Ok((c, urls));
    }
    let mut governing = None;
    let mut urls = Vec::new();
    for p in paths {
        let c = config::load_for(p)?;
        urls.extend(c.repo_urls.clone());
        governing.get_or_insert(c);
    }
    Ok((governing.unwrap_or_default(), urls))
}

/// The config of `--trusted-config` or `--trusted-config-rev`. A file's `per-path` globs are
/// relative to the linted repository's root, wherever the file is kept.
fn trusted_config(paths: &[PathBuf], args: &ConfigArgs) -> Result<Option<Config>, Failure> {
    let first = paths.first().cloned().unwrap_or_else(|| PathBuf::from("."));
    if let Some(rev) = &args.trusted_config_rev {
        let trusted = match crate::changed::config_at(&first, rev)? {
            Some(found) => {
                let snapshot = crate::changed::Snapshot::at(&first, rev)?;
                config::parse_named(
                    &found.name,
                    found.dir,
                    found.text,
                    crate::policy::Source::Revision(&snapshot),
                )?
            }
            None => Config {
                label: Some(format!("none at {rev} (defaults)")),
                ..Config::default()
            },
        };
        return Ok(Some(trusted));
    }
    let Some(file) = &args.trusted_config else {
        return Ok(None);
    };
    let mut trusted = config::load_trusted(file)?;
    let dir = crate::paths::normalize(&crate::repo::find_root(
        &first,
        crate::repo::Markers::GitTop,
    ));
    if inside(file, &dir) {
        note!(
            "gitops-lint: warning: the trusted config {} is inside the linted repository, where a \
             change under review can rewrite it; keep it outside the checkout or use \
             --trusted-config-rev",
            file.display()
        );
    }
    trusted.glob_dir = Some(dir);
    Ok(Some(trusted))
}

/// Whether `file` is below `dir`, both resolved.
fn inside(file: &std::path::Path, dir: &std::path::Path) -> bool {
    let dir = if dir.as_os_str().is_empty() {
        std::path::Path::new(".")
    } else {
        dir
    };
    match (file.canonicalize(), dir.canonicalize()) {
        (Ok(f), Ok(d)) => f.starts_with(d),
        _ => false,
    }
}

/// `gitops-lint config` where `config/` exists: the user may mean the command or the directory,
/// and guessing either way lets a CI step that meant to lint the directory pass without linting
/// it. A command name given alone, beside a file or directory of that name, is refused with both
/// spellings.
fn shadowed_command(args: &[std::ffi::OsString]) -> Option<String> {
    let [name] = args else { return None };
    let name = name.to_str()?;
    let run_it = match name {
        "rules" => "gitops-lint rules --format text",
        "config" => "gitops-lint config .",
        "graph" => "gitops-lint graph .",
        _ => return None,
    };
    std::path::Path::new(name).symlink_metadata().ok()?;
    Some(format!(
        "`{name}` is both a command and a path in this directory, so nothing was run\n  \
         to lint the path:      gitops-lint ./{name}   (or gitops-lint -- {name})\n  \
         to run the command:    {run_it}"
    ))
}

pub fn main() -> i32 {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if let Some(message) = shadowed_command(&args) {
        note!("gitops-lint: {message}");
        return EXIT_ERROR;
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { EXIT_ERROR } else { EXIT_OK };
        }
    };
    // Reports are written in many small pieces; the standard output flushes at every line.
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let result = match cli.command {
        Some(Command::Rules {
            format,
            path,
            config,
        }) => configs(&[path], &config).and_then(|(c, _)| {
            let stream = match format {
                ListFormat::Text => TEXT,
                ListFormat::Json => Stream::Json,
            };
            guarded(&mut out, stream, |out| {
                list_rules(c.available().into_iter(), format, out)
                    .map(|_| EXIT_OK)
                    .map_err(|e| Failure::Message(e.to_string()))
            })
        }),
        Some(Command::Explain { rule, path, config }) => configs(&[path], &config)
            .and_then(|(c, _)| guarded(&mut out, TEXT, |out| Ok(explain(&rule, &c, out)?))),
        Some(Command::Graph {
            path,
            config,
            format,
            repo_url,
        }) => guarded(&mut out, TEXT, |out| {
            graph(path, &config, format, repo_url, out)
        }),
        Some(Command::Config {
            path,
            config,
            schema,
            policy_schema,
        }) => guarded(&mut out, TEXT, |out| {
            show_config(&path, &config, schema, policy_schema, out)
        }),
        // A folder holding both is a kustomization to Argo CD: its discovery walks the folder in
        // lexical order and the kustomization file, after `Chart.yaml`, decides
        // (`util/app/discovery/discovery.go`, v3.5.1).
        Some(Command::Render { dir, chart }) => if dir.join("Chart.yaml").is_file()
            && !crate::discover::KUSTOMIZATION_FILES
                .iter()
                .any(|k| dir.join(k).is_file())
        {
            render_chart(&dir, &chart, &mut out)
        } else {
            render(dir, &mut out)
        }
        .map_err(Failure::from),
        None => lint(&cli.lint, &mut out),
    };
    let flushed = out.flush().map_err(|e| Failure::Message(e.to_string()));
    match result.and_then(|code| flushed.map(|_| code)) {
        Ok(code) => code,
        Err(e) => {
            print_failure(e);
            EXIT_ERROR
        }
    }
}

/// What the plain-text outputs of the command line (lists, explanations, the tree, the
/// configuration, a diff, notes on stderr) pass through: none of them writes color codes.
const TEXT: Stream = Stream::Text { color: false };

/// Runs `f` with its output behind a [`Guard`] for `stream`.
fn guarded<T, E: From<String>>(
    out: &mut dyn Write,
    stream: Stream,
    f: impl FnOnce(&mut dyn Write) -> Result<T, E>,
) -> Result<T, E> {
    let mut guard = Guard::new(out, stream);
    let result = f(&mut guard);
    let finished = guard.finish().map_err(|e| E::from(e.to_string()));
    let value = result?;
    finished?;
    Ok(value)
}

fn list_rules<'r>(
    rules: impl Iterator<Item = &'r rules::Rule>,
    format: ListFormat,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    #[derive(serde::Serialize)]
    struct Listed {
        id: &'static str,
        category: &'static str,
        severity: &'static str,
        fix: &'static str,
        summary: std::borrow::Cow<'static, str>,
    }
    let rows: Vec<Listed> = rules
        .map(|r| Listed {
            id: r.id,
            category: r.category.as_str(),
            severity: r.severity.as_str(),
            fix: r.fix.as_str(),
            // A policy's summary is the repository's: one line in the table.
            summary: if format == ListFormat::Json {
                r.summary.into()
            } else {
                crate::escape::visible(r.summary)
            },
        })
        .collect();
    if format == ListFormat::Json {
        let text = serde_json::to_string_pretty(&rows).map_err(std::io::Error::other)?;
        return writeln!(out, "{text}");
    }
    let header = Listed {
        id: "RULE",
        category: "CATEGORY",
        severity: "SEVERITY",
        fix: "FIX",
        summary: "SUMMARY".into(),
    };
    let width = |cell: fn(&Listed) -> &str| {
        rows.iter()
            .chain([&header])
            .map(|r| cell(r).len())
            .max()
            .unwrap_or(0)
    };
    let id = width(|r| r.id);
    let category = width(|r| r.category);
    let severity = width(|r| r.severity);
    let fix = width(|r| r.fix);
    for r in std::iter::once(&header).chain(&rows) {
        writeln!(
            out,
            "{:<id$}  {:<category$}  {:<severity$}  {:<fix$}  {}",
            r.id, r.category, r.severity, r.fix, r.summary
        )?;
    }
    Ok(())
}

fn explain(id: &str, config: &Config, out: &mut dyn Write) -> Result<i32, String> {
    // A category explains itself by the rules it holds.
    if let Some(category) = rules::Category::ALL.into_iter().find(|c| c.as_str() == id) {
        let members = config
            .available()
            .into_iter()
            .filter(|r| r.category == category);
        list_rules(members, ListFormat::Text, out).map_err(|e| e.to_string())?;
        return Ok(EXIT_OK);
    }
    match config.available().into_iter().find(|r| r.id == id) {
        Some(rule) => {
            // A policy's doc holds the repository's texts: shown as they read, not as Markdown.
            let doc = match rule.check {
                rules::Check::Policy(p) => std::borrow::Cow::Owned(p.doc(rule.summary, false)),
                _ => std::borrow::Cow::Borrowed(rule.doc),
            };
            out.write_all(doc.as_bytes()).map_err(|e| e.to_string())?;
            Ok(EXIT_OK)
        }
        None => {
            let hint = rules::select(id)
                .err()
                .and_then(|u| u.nearest)
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
        repo_urls,
        ..engine::Options::new(paths)
    }
}

/// The repository root of `path`, written plainly, so that reported paths read `repo/x.yaml`,
/// not `repo/a/../x.yaml`.
fn written_root(path: &std::path::Path, markers: Markers) -> PathBuf {
    let root = crate::paths::normalize(&crate::repo::find_root(path, markers));
    if root.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        root
    }
}

/// The repository root `path` lies below, when it is not the root itself: the nearest folder
/// up with `.git` or a config file (under a trusted config, the git top level).
fn root_above(path: &std::path::Path, markers: Markers) -> Option<PathBuf> {
    let root = written_root(path, markers);
    let real = root.canonicalize().ok()?;
    (crate::repo::is_root(&real) && Some(&real) != path.canonicalize().ok().as_ref())
        .then_some(root)
}

fn graph(
    path: PathBuf,
    config_args: &ConfigArgs,
    format: GraphFormat,
    mut repo_urls: Vec<String>,
    out: &mut dyn Write,
) -> Result<i32, Failure> {
    let (config, urls) = configs(std::slice::from_ref(&path), config_args)?;
    repo_urls.extend(urls);
    // Below the root, the repository is read whole (Applications' paths are relative to the
    // root), and the tree shows the Applications the path holds.
    let (read, only) = match root_above(&path, Markers::trusted(config.trusted.is_some())) {
        Some(root) => (root, path.canonicalize().ok()),
        None => (path, None),
    };
    let mut opts = options(vec![read], repo_urls);
    opts.discover.ignore_files = config.trusted.is_none();
    opts.config = config;
    let mut outcome = engine::run(&opts)?;
    report::mask(&mut outcome);
    let shown = report::tree::shown(&outcome, only.as_deref());
    // The tree is plain text for people: it is masked whole. Graphviz input is masked in its
    // labels only, so that its syntax stays whole.
    let written = match format {
        GraphFormat::Text => report::write_masked(&outcome.secrets, out, |out| {
            report::tree::text(&outcome, &shown, out)
        }),
        GraphFormat::Dot => report::tree::dot(&outcome, &shown, out),
    };
    written.map_err(|e| e.to_string())?;
    Ok(EXIT_OK)
}

fn show_config(
    path: &std::path::Path,
    args: &ConfigArgs,
    schema: bool,
    policy_schema: bool,
    out: &mut dyn Write,
) -> Result<i32, Failure> {
    let io = |e: std::io::Error| Failure::Message(e.to_string());
    if schema || policy_schema {
        let value = if schema {
            config::json_schema()
        } else {
            crate::policy::json_schema()
        };
        let text = serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?;
        writeln!(out, "{text}").map_err(io)?;
        return Ok(EXIT_OK);
    }
    let (c, urls) = configs(&[path.to_path_buf()], args)?;
    // The file may repeat a value a Secret of the repository holds (a URL with its token).
    let mut opts = options(vec![path.to_path_buf()], urls);
    opts.config = c.clone();
    let secrets = engine::secrets(&opts)?;
    report::write_masked(&secrets, out, |out| {
        let root = crate::repo::find_root(path, Markers::trusted(c.trusted.is_some()));
        report::config::print(&c, args.no_config, &crate::repo::git_remotes(&root), out)
    })
    .map_err(io)?;
    Ok(EXIT_OK)
}

/// A chart rendered as `helm template` would, printed as [`render`] prints a kustomization.
fn render_chart(
    dir: &std::path::Path,
    args: &ChartArgs,
    out: &mut dyn Write,
) -> Result<i32, String> {
    use crate::render::helm;
    let root = crate::repo::find_root(dir, Markers::ConfigOrGit);
    let chart = helm::load(dir, &root).map_err(|e| e.message)?;
    let mut values = Vec::new();
    for file in &args.values {
        let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        match helm::values::read_yaml(&text).map_err(|e| format!("{}: {e}", file.display()))? {
            serde_json::Value::Object(m) => values.push(m),
            serde_json::Value::Null => {}
            _ => return Err(format!("{}: not a mapping", file.display())),
        }
    }
    let opts = helm::Options {
        release_name: args.release_name.clone(),
        namespace: args.namespace.clone(),
        values,
        set: args
            .set
            .iter()
            .map(|s| (s.clone(), false))
            .chain(args.set_string.iter().map(|s| (s.clone(), true)))
            .collect(),
        include_crds: args.include_crds,
        skip_tests: args.skip_tests,
        kube_version: args
            .kube_version
            .clone()
            .unwrap_or_else(|| helm::DEFAULT_KUBE_VERSION.to_string()),
        api_versions: args.api_versions.clone(),
        skip_schema_validation: args.skip_schema_validation,
    };
    let mut work = crate::render::budget::Budget::new(helm::WORK_STEPS);
    let manifests = helm::render(&chart, &opts, &mut work).map_err(|e| e.message)?;
    let mut json = Vec::new();
    for m in &manifests {
        let parsed = yaml::parse(0, &m.text, yaml::ParseLimits::default());
        let broken = parsed
            .problems
            .iter()
            .find(|p| p.kind == yaml::ProblemKind::InvalidYaml);
        if let Some(p) = broken {
            return Err(format!("{}: {}", m.source, p.message));
        }
        json.extend(
            parsed
                .documents
                .iter()
                .map(|d| yaml::to_json(&d.root))
                .filter(|v| !v.is_null()),
        );
    }
    serde_json::to_writer_pretty(&mut *out, &json).map_err(|e| e.to_string())?;
    writeln!(out)
        .and_then(|_| out.flush())
        .map_err(|e| e.to_string())?;
    Ok(EXIT_OK)
}

fn render(dir: PathBuf, out: &mut dyn Write) -> Result<i32, String> {
    let root = crate::repo::find_root(&dir, Markers::ConfigOrGit);
    let loaded = engine::load(&options(vec![root.clone()], Vec::new()))?;
    let (objects, problems) =
        crate::render::build_kustomization(&loaded.sources, &loaded.docs, &root, &dir);
    let json: Vec<serde_json::Value> = objects.iter().map(|o| yaml::to_json(&o.root)).collect();
    serde_json::to_writer_pretty(&mut *out, &json).map_err(|e| e.to_string())?;
    writeln!(out)
        .and_then(|_| out.flush())
        .map_err(|e| e.to_string())?;
    for p in &problems {
        let at = loaded.sources.start(p.span);
        note!(
            "{}:{}:{}: {}",
            crate::paths::normalize(&loaded.sources.get(p.span.file).path).display(),
            at.line,
            at.column,
            p.message
        );
    }
    Ok(EXIT_OK)
}

/// A lint run, in the order it happens: the thread pool, the options (config, command line,
/// baseline), the narrowing to changed files, the run (with fixes if asked), the baseline
/// written or pruned, the report, the verdict.
fn lint(args: &LintArgs, out: &mut dyn Write) -> Result<i32, Failure> {
    // The global pool: every parallel step of the run, the report's included, keeps to it. It is
    // set before anything runs in parallel, which would start it with its default size.
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(n) = args.threads {
        pool = pool.num_threads(n.max(1));
    }
    pool.build_global().map_err(|e| e.to_string())?;
    let (mut opts, fail_on, baseline_file) = lint_options(args)?;
    narrow(args, &mut opts)?;
    if args.prune_baseline && baseline_file.is_none() {
        return Err(Failure::Message(
            "--prune-baseline needs a baseline: --baseline FILE, or `baseline` in the config"
                .into(),
        ));
    }
    let baseline = match &baseline_file {
        Some(file) => Some(Baseline::read(file)?),
        None => None,
    };
    opts.baseline = baseline.clone();
    if args.unsafe_fixes && !(args.fix || args.diff) {
        return Err(Failure::Message(
            "--unsafe-fixes needs --fix or --diff".into(),
        ));
    }
    let mut outcome = if args.fix || args.diff {
        match fix(args, &opts, out)? {
            Fixed::Diffed(code) => return Ok(code),
            Fixed::Written(outcome) => *outcome,
        }
    } else {
        in_pool(|| engine::run(&opts))?
    };
    report::mask(&mut outcome);

    if let Some(file) = &args.write_baseline {
        let b = Baseline::from_findings(
            &outcome.findings,
            &outcome.sources,
            &outcome.graph,
            &outcome.secrets,
        );
        write_file(file, &b.to_yaml())?;
        note!(
            "gitops-lint: wrote {} baseline entries to {}",
            b.len(),
            file.display()
        );
        return Ok(EXIT_OK);
    }
    if let (true, Some(file), Some(b)) = (args.prune_baseline, &baseline_file, &baseline) {
        if !outcome.stale.is_empty() {
            write_file(file, &b.without(&outcome.stale).to_yaml())?;
            note!(
                "gitops-lint: removed {} entries that no longer occur from {}",
                outcome.stale.len(),
                file.display()
            );
        }
    }
    if args.timings {
        print_timings(&outcome);
    }
    write_report(args, &outcome, out)?;
    let cut_short = outcome.summary.cut_short();
    if cut_short > 0 && fail_on.threshold().is_some() {
        note!(
            "gitops-lint: {} not linted, past the size limit or the run's ceilings (listed above): the run fails, since what lies past them was not checked",
            crate::text::plural(cut_short, "file", "files")
        );
    }
    // Charts left unrendered by the run's Helm budget are a finding each; the run fails even
    // where a suppression or a severity hides them.
    let charts_cut = outcome.graph.helm_cut;
    if charts_cut > 0 && fail_on.threshold().is_some() {
        note!(
            "gitops-lint: {} not rendered, past the run's budget for Helm: the run fails, since what they deploy was not checked",
            crate::text::plural(charts_cut, "chart", "charts")
        );
    }
    let appsets_cut = outcome.graph.appset_cut;
    if appsets_cut > 0 && fail_on.threshold().is_some() {
        note!(
            "gitops-lint: {} not expanded whole, past the budget for ApplicationSets: the run fails, since what they generate past it was not checked",
            crate::text::plural(appsets_cut, "ApplicationSet", "ApplicationSets")
        );
    }
    let failing = fail_on.threshold().is_some_and(|t| {
        cut_short > 0
            || charts_cut > 0
            || appsets_cut > 0
            || outcome.findings.iter().any(|f| f.severity >= t)
    });
    // The process ends next: freeing every parsed and rendered tree one node at a time would
    // only delay the exit.
    std::mem::forget(outcome);
    Ok(if failing { EXIT_FINDINGS } else { EXIT_OK })
}

/// The run's options from the config and the command line (flags win over the file; excludes
/// add up), the fail-on level, and the baseline file the run reads.
fn lint_options(args: &LintArgs) -> Result<(engine::Options, FailOn, Option<PathBuf>), Failure> {
    let (mut config, urls) = configs(&args.paths, &args.config)?;
    let selection = args.selection(&config)?;
    config.apply_selection(&selection);
    let mut opts = options(
        args.paths.clone(),
        args.repo_url.iter().cloned().chain(urls).collect(),
    );
    opts.discover.include = args.include.clone();
    opts.discover.ignore_files = config.trusted.is_none();
    opts.discover.exclude = config
        .exclude
        .iter()
        .chain(&args.exclude)
        .cloned()
        .collect();
    opts.discover.max_file_size = args
        .max_file_size
        .or(config.max_file_size)
        .unwrap_or(discover::DEFAULT_MAX_FILE_SIZE);
    opts.version = args.argocd_version.or(config.argocd_version);
    let fail_on = args.fail_on.or(config.fail_on).unwrap_or(FailOn::DEFAULT);
    // --write-baseline records every finding: the config's baseline would hide those it holds.
    let baseline_file = match (&args.baseline, &args.write_baseline) {
        (Some(file), _) => Some(file.clone()),
        (None, Some(_)) => None,
        (None, None) => match config.baseline_file() {
            Some((file, key)) => {
                // The repository's own config names it: it is read, and pruned, only inside
                // the repository and outside its git data.
                let dir = config
                    .dir()
                    .map_or_else(|| PathBuf::from("."), crate::paths::dir_of);
                if config.trusted.is_none()
                    && file.exists()
                    && !crate::policy::inside(&file, crate::policy::bound_of(&dir).as_deref())
                {
                    return Err(Failure::Config(key.error(
                        format!(
                            "the baseline file {} leads outside the repository; it is not read",
                            file.display()
                        ),
                        Some("keep the baseline in the repository, not behind a link".into()),
                    )));
                }
                if !file.is_file() {
                    return Err(Failure::Config(key.error(
                        format!("the baseline file {} does not exist", file.display()),
                        Some(format!(
                            "record the current findings there with `gitops-lint --write-baseline {}`, or correct the path",
                            file.display()
                        )),
                    )));
                }
                Some(file)
            }
            None => None,
        },
    };
    opts.config = config;
    opts.suppressions = !args.no_suppressions;
    opts.timings = args.timings;
    Ok((opts, fail_on, baseline_file))
}

/// Narrows a `--context`, `--changed-since` or subfolder run: the repository roots are read,
/// and only what the changed (or named) paths hold or cause is reported.
fn narrow(args: &LintArgs, opts: &mut engine::Options) -> Result<(), Failure> {
    let markers = Markers::trusted(opts.config.trusted.is_some());
    let written_root = |p: &std::path::Path| written_root(p, markers);
    let mut paths = args.paths.clone();
    if let Some(rev) = &args.changed_since {
        let mut changed = Vec::new();
        for p in &args.paths {
            let root = written_root(p);
            changed.extend(crate::changed::changed_since(&root, rev)?);
        }
        changed.sort();
        changed.dedup();
        if changed.is_empty() {
            note!("gitops-lint: no file changed since {rev}");
        }
        paths = changed;
    }
    // A path below its repository's root is judged in its repository, as `--context` judges
    // a changed file: the root's kustomizations and Applications are read, and only what the
    // path holds or causes is reported.
    // (A symbolic link named on the command line is not followed to its repository: it is
    // skipped, and said so, as discovery does.)
    let named_link = args.paths.iter().any(|p| {
        p.symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink())
    });
    let below_root = !named_link && args.paths.iter().any(|p| root_above(p, markers).is_some());
    if !(args.context || args.changed_since.is_some() || below_root) {
        if args.cache || args.cache_dir.is_some() {
            note!(
                "gitops-lint: --cache only serves --context and --changed-since runs; a full run reads every file anyway"
            );
        }
        return Ok(());
    }
    let mut roots: Vec<PathBuf> = args.paths.iter().map(|p| written_root(p)).collect();
    roots.sort();
    roots.dedup();
    // The changed paths, written below their root the way discovery will write them.
    let changed = paths
        .iter()
        .map(|p| {
            let abs = p.canonicalize().ok();
            roots
                .iter()
                .find_map(|r| {
                    let rest = abs.as_ref()?.strip_prefix(r.canonicalize().ok()?).ok()?;
                    Some(crate::paths::normalize(&r.join(rest)))
                })
                .unwrap_or_else(|| p.clone())
        })
        .collect();
    opts.report_only = Some(changed);
    opts.paths = roots;
    opts.cache = match (&args.cache_dir, args.cache) {
        (Some(dir), _) => Some(dir.clone()),
        (None, true) => {
            let dir = crate::cache::default_dir();
            if dir.is_none() {
                note!(
                    "gitops-lint: --cache: neither XDG_CACHE_HOME nor HOME is an absolute path; use --cache-dir DIR"
                );
            }
            dir
        }
        (None, false) => None,
    };
    Ok(())
}

/// How a `--fix` or `--diff` run ended.
enum Fixed {
    /// `--diff`: the diff is printed, nothing written; the exit code.
    Diffed(i32),
    /// `--fix`: the files are written; what is left to report.
    Written(Box<Outcome>),
}

fn fix(args: &LintArgs, opts: &engine::Options, out: &mut dyn Write) -> Result<Fixed, Failure> {
    let (mut outcome, mut fixed) = in_pool(|| engine::fix(opts, args.unsafe_fixes))?;
    let files = crate::text::plural(fixed.changes.len(), "file", "files");
    if args.diff {
        // The final round read every changed file with its fixes applied.
        let after_shown = |c: &crate::fix::apply::Change| {
            (0..outcome.sources.files().len())
                .map(|i| i as crate::yaml::FileId)
                .find(|id| outcome.sources.get(*id).path == c.path)
                .map_or_else(|| c.after.clone(), |id| outcome.redacted_text(id))
        };
        let secrets = &outcome.secrets;
        guarded(out, TEXT, |out| {
            report::write_masked(secrets, out, |out| {
                out.write_all(fixed.diff(after_shown).as_bytes())
            })
            .map_err(|e| e.to_string())
        })?;
        out.flush().map_err(|e| e.to_string())?;
        for p in &fixed.problems {
            note!("gitops-lint: {}", secrets.mask(p));
        }
        note!(
            "gitops-lint: would fix {} in {files}",
            crate::text::plural(fixed.count(), "finding", "findings")
        );
        return Ok(Fixed::Diffed(if fixed.changes.is_empty() {
            EXIT_OK
        } else {
            EXIT_FINDINGS
        }));
    }
    let wanted = fixed.changes.len();
    fixed.write();
    if !args.quiet {
        for c in &fixed.changes {
            let mut rules = c.fixed.clone();
            rules.sort();
            rules.dedup();
            let path = c.path.display().to_string();
            note!(
                "gitops-lint: fixed {} ({})",
                crate::escape::visible(&outcome.secrets.mask(&path)),
                rules.join(", ")
            );
        }
    }
    for p in &fixed.problems {
        note!("gitops-lint: {}", outcome.secrets.mask(p));
    }
    note!(
        "gitops-lint: fixed {} in {}",
        crate::text::plural(fixed.count(), "finding", "findings"),
        crate::text::plural(fixed.changes.len(), "file", "files")
    );
    if fixed.changes.len() != wanted {
        // What remains is what is on disk now.
        outcome = in_pool(|| engine::run(opts))?;
    }
    Ok(Fixed::Written(Box::new(outcome)))
}

/// `--timings`: each stage's time and peak RSS, on stderr.
fn print_timings(outcome: &Outcome) {
    for (phase, took, rss) in &outcome.summary.phases {
        let rss = rss.map_or(String::new(), |kib| {
            format!("   peak RSS {:>5} MB", kib / 1024)
        });
        note!("{phase:>24}: {:>7.1} ms{rss}", took.as_secs_f64() * 1e3);
    }
    note!(
        "{:>24}: {:>7.1} ms",
        "total",
        outcome.summary.elapsed.as_secs_f64() * 1e3
    );
    note!(
        "{:>24}: {} of the run's budget of {}",
        "YAML nodes parsed",
        outcome.summary.nodes,
        crate::yaml::RUN_NODES
    );
}

/// The report in the chosen format, to `--output` (with the human one on stdout) or stdout.
fn write_report(args: &LintArgs, outcome: &Outcome, out: &mut dyn Write) -> Result<(), Failure> {
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
    match &args.output {
        Some(file) => {
            let mut buf = Vec::new();
            report::write(args.format, outcome, &settings, &mut buf).map_err(|e| e.to_string())?;
            write_file(file, &String::from_utf8_lossy(&buf))?;
            report::write(Format::Human, outcome, &settings, out).map_err(|e| e.to_string())?;
        }
        None => {
            report::write(args.format, outcome, &settings, out).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// Runs `f` on a thread of the pool, as `ThreadPool::install` does: the run's serial steps
/// then allocate from the heaps its parallel steps use, not from the main thread's own.
fn in_pool<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    rayon::scope(|_| f())
}

fn write_file(path: &std::path::Path, text: &str) -> Result<(), String> {
    crate::fix::apply::atomic_write(path, text.as_bytes(), None)
}

fn terminal_width() -> Option<usize> {
    std::env::var("COLUMNS").ok()?.parse().ok()
}
