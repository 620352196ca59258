//! Which vendored subcharts take part, under which names, with which values: helm v3.17.2
//! `pkg/chartutil/dependencies.go` (`ProcessDependenciesWithMerge`, as `helm template` calls
//! it) and `coalesce.go`.

use super::chart::Chart;
use super::values::{coalesce_tables, Map};
use serde_json::Value;

/// Subcharts inside subcharts, as loading bounds them.
const MAX_DEPTH: usize = 32;

/// Enables, aliases and drops subcharts by `condition`, `tags` and `alias`, then imports
/// their values (`import-values`) into their parents' defaults.
pub fn process(chart: &mut Chart, user: &Map) -> Result<(), String> {
    enabled(chart, user, "", 0)?;
    import_values(chart, 0)
}

/// `processDependencyEnabled`.
fn enabled(c: &mut Chart, v: &Map, path: &str, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH || c.deps.is_empty() {
        return Ok(());
    }
    let existing = std::mem::take(&mut c.subcharts);
    // Subcharts no dependency names (with a version it accepts) stay as they are.
    let mut kept: Vec<Chart> = existing
        .iter()
        .filter(|e| {
            !c.deps
                .iter()
                .any(|r| e.name == r.name && compatible(&r.version, &e.version))
        })
        .cloned()
        .collect();
    for req in &mut c.deps {
        if let Some(found) = existing
            .iter()
            .find(|e| e.name == req.name && compatible(&req.version, &e.version))
        {
            let mut copy = found.clone();
            if !req.alias.is_empty() {
                copy.name = req.alias.clone();
                copy.meta
                    .insert("Name".into(), Value::String(req.alias.clone()));
            }
            kept.push(copy);
        }
        if !req.alias.is_empty() {
            req.name = req.alias.clone();
        }
        req.enabled = true;
    }
    c.subcharts = kept;
    let mut cvals = v.clone();
    coalesce(c, &mut cvals, false)?;
    tags(c, &cvals);
    conditions(c, &cvals, path);
    let off: Vec<String> = c
        .deps
        .iter()
        .filter(|r| !r.enabled)
        .map(|r| r.name.clone())
        .collect();
    c.subcharts.retain(|s| !off.contains(&s.name));
    c.deps.retain(|r| !off.contains(&r.name));
    // The metadata templates see (`.Chart.Dependencies`) is what was processed: aliases as
    // names, disabled ones gone, `Enabled` set.
    let listed: Vec<Value> = c.deps.iter().map(go_dependency).collect();
    c.meta.insert("Dependencies".into(), Value::Array(listed));
    for sub in &mut c.subcharts {
        let sub_path = format!("{path}{}.", sub.name);
        enabled(sub, &cvals, &sub_path, depth + 1)?;
    }
    Ok(())
}

/// A dependency as the fields of Go's `chart.Dependency`.
fn go_dependency(d: &super::chart::Dependency) -> Value {
    let list = |v: Vec<Value>| {
        if v.is_empty() {
            Value::Null
        } else {
            Value::Array(v)
        }
    };
    serde_json::json!({
        "Name": d.name,
        "Version": d.version,
        "Repository": d.repository,
        "Condition": d.condition,
        "Tags": list(d.tags.iter().cloned().map(Value::String).collect()),
        "Enabled": d.enabled,
        "ImportValues": list(d.import_values.clone()),
        "Alias": d.alias,
    })
}

/// `processDependencyTags`: any true tag enables, only false tags disable.
fn tags(c: &mut Chart, cvals: &Map) {
    let Some(Value::Object(table)) = cvals.get("tags") else {
        return;
    };
    for r in &mut c.deps {
        let (mut yes, mut no) = (false, false);
        for t in &r.tags {
            match table.get(t) {
                Some(Value::Bool(true)) => yes = true,
                Some(Value::Bool(false)) => no = true,
                _ => {}
            }
        }
        r.enabled = yes || !no;
    }
}

/// `processDependencyConditions`: the first condition path holding a boolean decides.
fn conditions(c: &mut Chart, cvals: &Map, path: &str) {
    for r in &mut c.deps {
        for cond in r.condition.trim().split(',') {
            if cond.is_empty() {
                continue;
            }
            if let Some(Value::Bool(b)) = path_value(cvals, &format!("{path}{cond}")) {
                r.enabled = *b;
                break;
            }
        }
    }
}

/// `Values.PathValue`: a value that is not a table, at a dotted path.
fn path_value<'v>(v: &'v Map, path: &str) -> Option<&'v Value> {
    let (table, last) = match path.rsplit_once('.') {
        Some((t, l)) => (table(v, t)?, l),
        None => (v, path),
    };
    table.get(last).filter(|x| !x.is_object())
}

/// `Values.Table`: the table at a dotted path.
fn table<'v>(v: &'v Map, path: &str) -> Option<&'v Map> {
    let mut cur = v;
    for key in path.split('.') {
        cur = cur.get(key)?.as_object()?;
    }
    Some(cur)
}

/// `processDependencyImportValues` with merge: children first, then each chart takes what its
/// dependencies export; a value the parent already has wins.
fn import_values(c: &mut Chart, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Ok(());
    }
    for sub in &mut c.subcharts {
        import_values(sub, depth + 1)?;
    }
    if c.deps.is_empty() {
        return Ok(());
    }
    let mut cvals = Map::new();
    coalesce(c, &mut cvals, true)?;
    let mut imported = Map::new();
    for r in &c.deps {
        for iv in &r.import_values {
            let (child, parent) = match iv {
                Value::Object(m) => (
                    m.get("child").and_then(Value::as_str).unwrap_or(""),
                    m.get("parent").and_then(Value::as_str).unwrap_or(""),
                ),
                Value::String(s) => {
                    if let Some(t) = table(&cvals, &format!("{}.exports.{s}", r.name)) {
                        coalesce_tables(&mut imported, t, true);
                    }
                    continue;
                }
                _ => continue,
            };
            let Some(t) = table(&cvals, &format!("{}.{child}", r.name)) else {
                continue;
            };
            let mut at = t.clone();
            if parent != "." {
                for key in parent.split('.').rev() {
                    let mut m = Map::new();
                    m.insert(key.to_string(), Value::Object(at));
                    at = m;
                }
            }
            coalesce_tables(&mut imported, &at, true);
        }
    }
    coalesce_tables(&mut cvals, &imported, true);
    c.values = cvals;
    Ok(())
}

/// `coalesce`: the chart's defaults under `dest`, then each subchart's under its name, with
/// globals handed down.
pub fn coalesce(c: &Chart, dest: &mut Map, merge: bool) -> Result<(), String> {
    coalesce_depth(c, dest, merge, 0)
}

fn coalesce_depth(c: &Chart, dest: &mut Map, merge: bool, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Ok(());
    }
    // coalesceValues
    for (key, val) in &c.values {
        match dest.get_mut(key) {
            Some(Value::Null) if !merge => {
                dest.remove(key);
            }
            Some(Value::Object(d)) => {
                if let Value::Object(s) = val {
                    let m = merge || c.subcharts.iter().any(|sub| &sub.name == key);
                    coalesce_tables(d, s, m);
                }
            }
            Some(_) => {}
            None => {
                dest.insert(key.clone(), val.clone());
            }
        }
    }
    // coalesceDeps
    for sub in &c.subcharts {
        match dest.get(&sub.name) {
            None => {
                dest.insert(sub.name.clone(), Value::Object(Map::new()));
            }
            Some(Value::Object(_)) => {}
            Some(other) => {
                return Err(format!(
                    "type mismatch on {}: {}",
                    sub.name,
                    matches!(other, Value::Bool(true))
                ));
            }
        }
        let parent_global = dest.get("global").cloned();
        let Some(Value::Object(sub_dest)) = dest.get_mut(&sub.name) else {
            continue;
        };
        globals(sub_dest, parent_global.as_ref());
        coalesce_depth(sub, sub_dest, merge, depth + 1)?;
    }
    Ok(())
}

/// `coalesceGlobals`: the parent's `global` over the subchart's, tables merged.
fn globals(dest: &mut Map, parent: Option<&Value>) {
    let mut dg = match dest.get("global") {
        None => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return,
    };
    let sg = match parent {
        None => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return,
    };
    for (key, val) in sg {
        match (&val, dg.get(&key)) {
            (Value::Object(v), None) => {
                dg.insert(key, Value::Object(v.clone()));
            }
            (Value::Object(v), Some(Value::Object(d))) => {
                let mut vv = v.clone();
                coalesce_tables(&mut vv, d, true);
                dg.insert(key, Value::Object(vv));
            }
            (Value::Object(_), Some(_)) => {}
            (_, Some(Value::Object(_))) => {}
            _ => {
                dg.insert(key, val);
            }
        }
    }
    dest.insert("global".into(), Value::Object(dg));
}

/// `IsCompatibleRange`: whether `version` meets the constraint (Masterminds semver).
fn compatible(constraint: &str, version: &str) -> bool {
    crate::render::template::semver_matches(constraint, version).unwrap_or(false)
}
