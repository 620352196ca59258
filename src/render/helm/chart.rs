//! Loading a chart from its folder as Helm's loader does (helm v3.17.2
//! `pkg/chart/loader/directory.go` and `load.go`, `pkg/ignore/rules.go`): `.helmignore`,
//! `Chart.yaml`, `values.yaml`, `templates/`, every other file for `.Files`, and the subcharts
//! vendored under `charts/`, as folders or as archives (`archive.rs`). Only the chart's own tree is read, never a file a link
//! leads to outside the repository, and within fixed bounds.

use super::values::{self, Map};
use super::FailureKind;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Files one chart (its subcharts included) may hold; real charts hold a few hundred.
const MAX_FILES: usize = 20_000;
/// Bytes one chart may hold; the largest popular charts are under 10 MB.
const MAX_BYTES: u64 = 64 << 20;
/// Subcharts inside subcharts.
const MAX_DEPTH: usize = 16;

/// One chart, as loaded: Helm's `chart.Chart`.
#[derive(Debug, Clone)]
pub struct Chart {
    /// The folder on disk; for a chart unpacked from an archive, the archive's path with the
    /// chart's place inside it (`charts/dep-1.0.0.tgz`), which names no file.
    pub dir: PathBuf,
    /// The archive on disk the chart was unpacked from, when it was.
    pub archive: Option<PathBuf>,
    /// `Chart.yaml`, as the fields Helm's `chart.Metadata` gives templates (`.Chart.Name`).
    pub meta: Map,
    pub name: String,
    pub version: String,
    /// `type: library`: its templates are only partials.
    pub library: bool,
    /// `values.yaml`, typed as Helm reads it (numbers are float64).
    pub values: Map,
    /// Where `values.yaml` is, when there is one.
    pub values_file: Option<PathBuf>,
    /// `templates/...` files: name relative to the chart, text.
    pub templates: Vec<(String, String)>,
    /// Every other file, for `.Files` and `crds/`: name relative to the chart, bytes.
    pub files: Vec<(String, Vec<u8>)>,
    /// `dependencies:` of `Chart.yaml` (or `requirements.yaml` for apiVersion v1).
    pub deps: Vec<Dependency>,
    /// Subcharts found under `charts/`.
    pub subcharts: Vec<Chart>,
    /// `values.schema.json`, as read (helm's loader keeps its bytes, `chart.Schema`).
    pub schema: Option<Vec<u8>>,
}

#[derive(Debug, Clone, Default)]
pub struct Dependency {
    pub name: String,
    pub version: String,
    pub repository: String,
    pub condition: String,
    pub tags: Vec<String>,
    pub alias: String,
    pub import_values: Vec<Value>,
    pub enabled: bool,
}

/// Why a chart was not loaded; the message names the file. `kind` says whether Helm refuses
/// the chart too ([`FailureKind::Invalid`]) or it is past a bound of this loader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    pub message: String,
    pub kind: FailureKind,
}

impl LoadError {
    pub(super) fn invalid(message: String) -> LoadError {
        LoadError {
            message,
            kind: FailureKind::Invalid,
        }
    }

    fn limit(message: String) -> LoadError {
        LoadError {
            message,
            kind: FailureKind::Limit,
        }
    }
}

struct Budget {
    files: usize,
    bytes: u64,
    /// Bytes unpacked from archives, tar headers included.
    unpacked: u64,
}

/// Bytes all the archives of one chart may unpack to: the files' bound, and their headers.
const MAX_UNPACKED: u64 = MAX_BYTES + MAX_FILES as u64 * 1024;

/// Loads the chart in `dir`. `root` bounds where links may lead.
pub fn load(dir: &Path, root: &Path) -> Result<Chart, LoadError> {
    let dot = |p: &Path| {
        if p.as_os_str().is_empty() {
            Path::new(".").to_path_buf()
        } else {
            p.to_path_buf()
        }
    };
    let real_root = dot(root)
        .canonicalize()
        .map_err(|e| LoadError::invalid(format!("{}: {e}", root.display())))?;
    let mut budget = Budget {
        files: 0,
        bytes: 0,
        unpacked: 0,
    };
    let files = read_tree(&dot(dir), &real_root, &mut budget)?;
    from_files(dir, None, files, 0, &mut budget)
}

use super::archive::FileList;

/// Every file of the chart folder not ignored, by name relative to it with `/`, in the order
/// of Go's `filepath.Walk` (lexical, a folder's contents right after it).
fn read_tree(dir: &Path, real_root: &Path, budget: &mut Budget) -> Result<FileList, LoadError> {
    let real_dir = dir
        .canonicalize()
        .map_err(|e| LoadError::invalid(format!("{}: {e}", dir.display())))?;
    if !real_dir.starts_with(real_root) || crate::paths::in_git_data(&real_dir, real_root) {
        return Err(outside(dir));
    }
    // Read where it leads, and only inside the repository, as every other file of the chart.
    let ignore_file = dir.join(".helmignore");
    let rules = match ignore_file.canonicalize() {
        Ok(real) if !real.starts_with(real_root) || crate::paths::in_git_data(&real, real_root) => {
            return Err(outside(&ignore_file))
        }
        // A FIFO would never end, and a rule file is small.
        Ok(real) if std::fs::metadata(&real).is_ok_and(|m| m.is_file() && m.len() <= 1 << 20) => {
            match std::fs::read(real) {
                Ok(bytes) => Ignore::parse(&String::from_utf8_lossy(&bytes))?,
                Err(_) => Ignore::default(),
            }
        }
        Ok(_) | Err(_) => Ignore::default(),
    }
    .with_defaults();
    let mut out = Vec::new();
    walk(
        dir, &real_dir, "", 0, &rules, real_root, budget, &mut out, dir,
    )?;
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn walk(
    path: &Path,
    real_dir: &Path,
    rel: &str,
    depth: usize,
    rules: &Ignore,
    real_root: &Path,
    budget: &mut Budget,
    out: &mut FileList,
    chart: &Path,
) -> Result<(), LoadError> {
    if depth > 64 {
        return Err(LoadError::limit(format!(
            "{}: folders nest too deep",
            path.display()
        )));
    }
    let mut entries: Vec<(String, std::path::PathBuf, bool)> = std::fs::read_dir(path)
        .map_err(|e| LoadError::invalid(format!("{}: {e}", path.display())))?
        .flatten()
        .map(|e| {
            let link = e.file_type().map_or(true, |t| t.is_symlink());
            (e.file_name().to_string_lossy().into_owned(), e.path(), link)
        })
        .collect();
    entries.sort();
    for (name, full, link) in entries {
        // A chart at the top of the checkout holds its git data too: not the chart's, and
        // where the job's token is kept.
        if crate::paths::is_git_name(name.as_bytes()) {
            continue;
        }
        let n = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        // Helm follows links (`sympath.Walk`); here only those that stay in the repository,
        // and a loop ends at the depth bound. An entry that is no link lies where the folder
        // does, and the folder was checked: resolving every path cost a system call per
        // component of it, a tenth of loading a large chart.
        let real = if link {
            full.canonicalize()
                .map_err(|e| LoadError::invalid(format!("{}: {e}", full.display())))?
        } else {
            real_dir.join(&name)
        };
        if !real.starts_with(real_root) || (link && crate::paths::in_git_data(&real, real_root)) {
            return Err(outside(&full));
        }
        let meta = std::fs::metadata(&real)
            .map_err(|e| LoadError::invalid(format!("{}: {e}", full.display())))?;
        if meta.is_dir() {
            // What a `.git` file points to, kept under another name.
            if !rules.ignore(&n, true) && !crate::paths::is_git_dir(&real) {
                walk(
                    &full,
                    &real,
                    &n,
                    depth + 1,
                    rules,
                    real_root,
                    budget,
                    out,
                    chart,
                )?;
            }
            continue;
        }
        if rules.ignore(&n, false) {
            continue;
        }
        if !meta.is_file() {
            return Err(LoadError::invalid(format!(
                "cannot load irregular file {} as it has file mode type bits set",
                full.display()
            )));
        }
        budget.files += 1;
        budget.bytes += meta.len();
        if budget.files > MAX_FILES || budget.bytes > MAX_BYTES {
            return Err(LoadError::limit(format!(
                "{}: the chart holds more than {MAX_FILES} files or {MAX_BYTES} bytes; not rendered",
                chart.display()
            )));
        }
        let mut data = std::fs::read(&real)
            .map_err(|e| LoadError::invalid(format!("{}: {e}", full.display())))?;
        if data.starts_with(b"\xEF\xBB\xBF") {
            data.drain(..3);
        }
        out.push((n, data));
    }
    Ok(())
}

/// The error for a path that leads outside the repository, or into its git data.
fn outside(path: &Path) -> LoadError {
    LoadError::invalid(format!(
        "{}: a link leads outside the repository; not followed",
        path.display()
    ))
}

fn from_files(
    dir: &Path,
    archive: Option<&Path>,
    files: FileList,
    depth: usize,
    budget: &mut Budget,
) -> Result<Chart, LoadError> {
    if depth > MAX_DEPTH {
        return Err(LoadError::limit(format!(
            "{}: subcharts nest deeper than {MAX_DEPTH} levels",
            dir.display()
        )));
    }
    let chart_yaml = files
        .iter()
        .find(|(n, _)| n == "Chart.yaml")
        .ok_or_else(|| {
            LoadError::invalid(format!("{}: Chart.yaml file is missing", dir.display()))
        })?;
    let text = |data: &[u8], what: &str| {
        String::from_utf8(data.to_vec())
            .map_err(|_| LoadError::invalid(format!("{}/{what}: not UTF-8 text", dir.display())))
    };
    let meta_json = values::read_yaml(&text(&chart_yaml.1, "Chart.yaml")?)
        .map_err(|e| LoadError::invalid(format!("cannot load Chart.yaml: {e}")))?;
    let Value::Object(raw_meta) = meta_json else {
        return Err(LoadError::invalid(format!(
            "{}: cannot load Chart.yaml: not a mapping",
            dir.display()
        )));
    };
    let api_version = raw_meta
        .get("apiVersion")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or("v1")
        .to_string();
    let mut chart = Chart {
        dir: dir.to_path_buf(),
        archive: archive.map(Path::to_path_buf),
        meta: Map::new(),
        name: str_of(&raw_meta, "name"),
        version: str_of(&raw_meta, "version"),
        library: str_of(&raw_meta, "type").eq_ignore_ascii_case("library"),
        values: Map::new(),
        values_file: None,
        templates: Vec::new(),
        files: Vec::new(),
        deps: deps_of(&raw_meta),
        subcharts: Vec::new(),
        schema: None,
    };
    let mut sub: Vec<(String, FileList)> = Vec::new();
    for (name, data) in files {
        match name.as_str() {
            "values.schema.json" => chart.schema = Some(data),
            "Chart.yaml" | "Chart.lock" | "requirements.lock" => {
                if name == "requirements.lock" && api_version == "v1" {
                    chart.files.push((name, data));
                }
            }
            "values.yaml" => {
                let v = values::read_yaml(&text(&data, "values.yaml")?)
                    .map_err(|e| LoadError::invalid(format!("cannot load values.yaml: {e}")))?;
                chart.values = match v {
                    Value::Object(m) => m,
                    Value::Null => Map::new(),
                    _ => {
                        return Err(LoadError::invalid(
                            "cannot load values.yaml: not a mapping".to_string(),
                        ))
                    }
                };
                chart.values_file = Some(dir.join("values.yaml"));
            }
            "requirements.yaml" => {
                if let Ok(Value::Object(m)) = values::read_yaml(&String::from_utf8_lossy(&data)) {
                    chart.deps = deps_of(&m);
                }
                if api_version == "v1" {
                    chart.files.push((name, data));
                }
            }
            n if n.starts_with("templates/") => {
                let t = text(&data, n)?;
                chart.templates.push((name, t));
            }
            n if n.starts_with("charts/") && !n.ends_with(".prov") => {
                let rest = &n["charts/".len()..];
                let (top, inner) = rest.split_once('/').unwrap_or((rest, ""));
                match sub.iter_mut().find(|(t, _)| t == top) {
                    Some((_, list)) => list.push((inner.to_string(), data)),
                    None => sub.push((top.to_string(), vec![(inner.to_string(), data)])),
                }
            }
            _ => chart.files.push((name, data)),
        }
    }
    chart.meta = metadata(&raw_meta, &api_version);
    for (top, list) in sub {
        if top.starts_with(['_', '.']) {
            continue;
        }
        let sub_dir = dir.join("charts").join(&top);
        let wrap = |e: LoadError| LoadError {
            message: format!(
                "error unpacking subchart {top} in {}: {}",
                chart.name, e.message
            ),
            kind: e.kind,
        };
        let loaded = if top.ends_with(".tgz") {
            // load.go: the archive is the first file of its name; a folder so named is not one.
            let Some((first, data)) = list.into_iter().next() else {
                continue;
            };
            if !first.is_empty() {
                return Err(LoadError::invalid(format!(
                    "error unpacking subchart tar in {}: expected {top}, got {top}/{first}",
                    chart.name
                )));
            }
            let unpacked = unpack(&data, budget).map_err(wrap)?;
            let on_disk = archive.unwrap_or(&sub_dir);
            from_files(&sub_dir, Some(on_disk), unpacked, depth + 1, budget).map_err(wrap)?
        } else {
            // Files directly in charts/ that are not folders are not charts.
            let list: Vec<_> = list.into_iter().filter(|(n, _)| !n.is_empty()).collect();
            from_files(&sub_dir, archive, list, depth + 1, budget).map_err(wrap)?
        };
        chart.subcharts.push(loaded);
    }
    chart
        .subcharts
        .sort_by(|a, b| a.name.cmp(&b.name).then(a.dir.cmp(&b.dir)));
    if chart.name.is_empty() {
        return Err(LoadError::invalid(format!(
            "validation: chart.metadata.name is required ({})",
            dir.display()
        )));
    }
    Ok(chart)
}

/// The files of a chart archive, counted against the chart's bounds.
fn unpack(data: &[u8], budget: &mut Budget) -> Result<FileList, LoadError> {
    let left = MAX_UNPACKED.saturating_sub(budget.unpacked);
    let files_left = MAX_FILES.saturating_sub(budget.files);
    let (files, used) = super::archive::files(data, left, files_left).map_err(|e| match e {
        super::archive::Refused::Limit(m) => LoadError::limit(m),
        super::archive::Refused::Invalid(m) => LoadError::invalid(m),
    })?;
    budget.unpacked += used;
    budget.files += files.len();
    budget.bytes += files.iter().map(|(_, d)| d.len() as u64).sum::<u64>();
    if budget.files > MAX_FILES || budget.bytes > MAX_BYTES {
        return Err(LoadError::limit(format!(
            "the chart holds more than {MAX_FILES} files or {MAX_BYTES} bytes; not rendered"
        )));
    }
    Ok(files)
}

impl Chart {
    /// Every file the chart was loaded from, subcharts included: what a change to would
    /// change the render.
    pub fn paths(&self, out: &mut Vec<PathBuf>) {
        if let Some(archive) = &self.archive {
            out.push(archive.clone());
            return;
        }
        out.push(self.dir.join("Chart.yaml"));
        if let Some(v) = &self.values_file {
            out.push(v.clone());
        }
        if self.schema.is_some() {
            out.push(self.dir.join("values.schema.json"));
        }
        out.extend(self.templates.iter().map(|(n, _)| self.dir.join(n)));
        out.extend(self.files.iter().map(|(n, _)| self.dir.join(n)));
        for sub in &self.subcharts {
            sub.paths(out);
        }
    }
}

fn str_of(m: &Map, key: &str) -> String {
    match m.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => super::values::go_number(n),
        Some(Value::Bool(b)) => b.to_string(),
        _ => String::new(),
    }
}

fn deps_of(m: &Map) -> Vec<Dependency> {
    let Some(Value::Array(list)) = m.get("dependencies") else {
        return Vec::new();
    };
    list.iter()
        .filter_map(Value::as_object)
        .map(|d| Dependency {
            name: str_of(d, "name"),
            version: str_of(d, "version"),
            repository: str_of(d, "repository"),
            condition: str_of(d, "condition"),
            tags: match d.get("tags") {
                Some(Value::Array(t)) => t
                    .iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect(),
                _ => Vec::new(),
            },
            alias: str_of(d, "alias"),
            import_values: match d.get("import-values") {
                Some(Value::Array(t)) => t.clone(),
                _ => Vec::new(),
            },
            enabled: true,
        })
        .collect()
}

/// `Chart.yaml` under the names Go templates use for `chart.Metadata`'s fields.
fn metadata(raw: &Map, api_version: &str) -> Map {
    const FIELDS: &[(&str, &str)] = &[
        ("name", "Name"),
        ("home", "Home"),
        ("sources", "Sources"),
        ("version", "Version"),
        ("description", "Description"),
        ("keywords", "Keywords"),
        ("maintainers", "Maintainers"),
        ("icon", "Icon"),
        ("apiVersion", "APIVersion"),
        ("condition", "Condition"),
        ("tags", "Tags"),
        ("appVersion", "AppVersion"),
        ("deprecated", "Deprecated"),
        ("annotations", "Annotations"),
        ("kubeVersion", "KubeVersion"),
        ("dependencies", "Dependencies"),
        ("type", "Type"),
    ];
    let mut out = Map::new();
    for (yaml, go) in FIELDS {
        let v = match (*yaml, raw.get(*yaml)) {
            ("apiVersion", _) => Value::String(api_version.to_string()),
            (_, Some(Value::Number(n))) => Value::String(values::go_number(n)),
            ("deprecated", v) => Value::Bool(v.and_then(Value::as_bool).unwrap_or(false)),
            (
                "sources" | "keywords" | "maintainers" | "annotations" | "dependencies",
                None | Some(Value::Null),
            ) => Value::Null,
            (_, Some(v)) => v.clone(),
            (_, None) => Value::String(String::new()),
        };
        out.insert((*go).to_string(), v);
    }
    out
}

/// `.helmignore` rules (`pkg/ignore/rules.go`): `filepath.Match` against the base name, or
/// the whole relative path when the rule holds a `/`; `dir/` for folders only; `!` negates,
/// with Helm's own reading (a negated rule that does not match ignores the file).
#[derive(Default)]
struct Ignore {
    rules: Vec<Rule>,
}

struct Rule {
    pattern: crate::glob::PathPattern,
    negate: bool,
    dir_only: bool,
    whole_path: bool,
}

impl Ignore {
    fn parse(text: &str) -> Result<Ignore, LoadError> {
        let mut out = Ignore::default();
        for line in text.lines() {
            out.add(line)?;
        }
        Ok(out)
    }

    fn with_defaults(mut self) -> Ignore {
        let _ = self.add("templates/.?*");
        self
    }

    fn add(&mut self, line: &str) -> Result<(), LoadError> {
        let mut rule = line.trim();
        if rule.is_empty() || rule.starts_with('#') {
            return Ok(());
        }
        if rule.contains("**") {
            return Err(LoadError::invalid(
                ".helmignore: double-star (**) syntax is not supported".to_string(),
            ));
        }
        let negate = rule.starts_with('!');
        if negate {
            rule = &rule[1..];
        }
        let dir_only = rule.ends_with('/');
        let rule = rule.trim_end_matches('/');
        let whole_path = rule.contains('/');
        self.rules.push(Rule {
            pattern: crate::glob::PathPattern::new(rule.trim_start_matches('/')),
            negate,
            dir_only,
            whole_path,
        });
        Ok(())
    }

    fn ignore(&self, path: &str, is_dir: bool) -> bool {
        for r in &self.rules {
            let subject = if r.whole_path {
                path
            } else {
                path.rsplit('/').next().unwrap_or(path)
            };
            if r.negate {
                if r.dir_only && !is_dir {
                    return true;
                }
                if !r.pattern.matches(subject) {
                    return true;
                }
                continue;
            }
            if r.dir_only && !is_dir {
                continue;
            }
            if r.pattern.matches(subject) {
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helmignore_reads_as_helm_does() {
        let rules = Ignore::parse("# c\n*.tgz\n.git/\n/ci/\ntemplates/skip.yaml\n")
            .unwrap()
            .with_defaults();
        assert!(rules.ignore("charts/x.tgz", false));
        assert!(rules.ignore(".git", true));
        assert!(!rules.ignore(".git", false));
        assert!(rules.ignore("ci", true));
        assert!(rules.ignore("templates/skip.yaml", false));
        assert!(rules.ignore("templates/.hidden", false));
        assert!(!rules.ignore("templates/deploy.yaml", false));
        assert!(Ignore::parse("a/**/b").is_err());
    }

    #[test]
    fn archives_in_charts_load_as_folders_and_hostile_ones_fail() {
        use crate::render::helm::archive::tests::tgz;
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path();
        std::fs::create_dir_all(top.join("charts")).unwrap();
        std::fs::write(
            top.join("Chart.yaml"),
            "apiVersion: v2\nname: top\nversion: 1.0.0\n",
        )
        .unwrap();
        let dep = tgz(&[
            (
                "dep/Chart.yaml",
                b'0',
                b"apiVersion: v2\nname: dep\nversion: 0.1.0\n",
            ),
            ("dep/values.yaml", b'0', b"a: 1\n"),
            ("dep/templates/cm.yaml", b'0', b"kind: ConfigMap\n"),
            ("dep/.helmignore", b'0', b"*.yaml\n"),
        ]);
        std::fs::write(top.join("charts/dep-0.1.0.tgz"), &dep).unwrap();
        let chart = load(top, top).unwrap();
        assert_eq!(chart.subcharts.len(), 1);
        let sub = &chart.subcharts[0];
        assert_eq!(sub.name, "dep");
        assert_eq!(
            sub.templates.len(),
            1,
            "an archive's .helmignore does not apply"
        );
        assert_eq!(sub.values.get("a"), Some(&Value::from(1.0)));
        let mut paths = Vec::new();
        chart.paths(&mut paths);
        assert!(paths.contains(&top.join("charts/dep-0.1.0.tgz")));

        let evil = tgz(&[
            ("dep/Chart.yaml", b'0', b"name: dep\n"),
            ("dep/../../../tmp/x", b'0', b"x"),
        ]);
        std::fs::write(top.join("charts/dep-0.1.0.tgz"), &evil).unwrap();
        assert_eq!(
            load(top, top).unwrap_err().message,
            "error unpacking subchart dep-0.1.0.tgz in top: chart illegally references parent directory"
        );
        let big = vec![b'#'; (MAX_BYTES + 1) as usize];
        let bomb = tgz(&[
            ("dep/Chart.yaml", b'0', b"name: dep\n"),
            ("dep/big", b'0', &big),
        ]);
        std::fs::write(top.join("charts/dep-0.1.0.tgz"), &bomb).unwrap();
        let err = load(top, top).unwrap_err();
        assert!(err.message.contains("more"), "{err:?}");
        assert_eq!(err.kind, FailureKind::Limit);
        std::fs::write(top.join("charts/dep-0.1.0.tgz"), b"plain text").unwrap();
        assert!(load(top, top)
            .unwrap_err()
            .message
            .starts_with("error unpacking subchart dep-0.1.0.tgz"));
    }
}
