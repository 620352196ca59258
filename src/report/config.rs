//! `gitops-lint config`: the effective configuration, and where each value comes from.

use crate::config::Config;
use crate::escape::visible;
use crate::finding::Severity;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write};

fn origin(c: &Config, key: &str) -> String {
    match (c.origins.get(key), c.name()) {
        (Some(line), Some(name)) => format!("# {name}:{line}"),
        _ => "# default".to_string(),
    }
}

/// A URL as it may be printed: `https://user:token@host/x` is shown as `https://host/x`.
fn without_credentials(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let host_end = rest.find('/').unwrap_or(rest.len());
    match rest[..host_end].rfind('@') {
        Some(at) if scheme.starts_with("http") => format!("{scheme}://{}", &rest[at + 1..]),
        // Any scheme may carry a password (`ssh://git:TOKEN@host/...`); the user name is kept.
        Some(at) => match rest[..at].split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}@{}", &rest[at + 1..]),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

/// Values written in the repository's config (globs, URLs) are shown with [`visible`]: one line
/// each, whatever they hold.
fn list(items: impl IntoIterator<Item = String>) -> String {
    let items: Vec<String> = items
        .into_iter()
        .map(|i| visible(&i).into_owned())
        .collect();
    format!("[{}]", items.join(", "))
}

fn severities(map: &BTreeMap<&'static str, Option<Severity>>) -> String {
    let parts: Vec<String> = map
        .iter()
        .map(|(k, v)| format!("{k}: {}", v.map_or("off", Severity::as_str)))
        .collect();
    format!("{{{}}}", parts.join(", "))
}

fn ids(set: &BTreeSet<&'static str>) -> String {
    list(set.iter().map(|s| s.to_string()))
}

/// `remotes`: the URLs of the repository's git remotes, which sources are matched against
/// besides `repo-urls`.
pub fn print(
    c: &Config,
    disabled: bool,
    remotes: &[String],
    out: &mut dyn Write,
) -> io::Result<()> {
    let file = match (&c.path, disabled) {
        (_, true) => "none (--no-config)".to_string(),
        (Some(p), _) => visible(&p.display().to_string()).into_owned(),
        (None, _) => "none found (defaults apply)".to_string(),
    };
    writeln!(out, "# the configuration gitops-lint uses here")?;
    writeln!(out, "config-file: {file}")?;
    if let Some(t) = &c.trusted {
        writeln!(
            out,
            "trusted-config: {} (the config file may make it stricter, never looser)",
            t.name().unwrap_or_else(|| "defaults".into())
        )?;
    }
    if !c.policies.is_empty() {
        writeln!(
            out,
            "policies:                                    # the repository's own rules"
        )?;
        for p in &c.policies {
            let file = match p.check {
                crate::rules::Check::Policy(policy) => {
                    visible(&policy.file.display().to_string()).into_owned()
                }
                _ => String::new(),
            };
            writeln!(out, "  - {} ({}, {})", p.id, p.severity.as_str(), file)?;
        }
    }
    let from = |key: &str| match &c.trusted {
        Some(t) if c.from_trusted.contains(key) => origin(t, key),
        _ => origin(c, key),
    };
    let clamps = |key: &str, out: &mut dyn Write| -> io::Result<()> {
        for clamp in c.clamped.iter().filter(|k| k.key == key) {
            writeln!(out, "  # clamped: {}", clamp.note)?;
        }
        Ok(())
    };
    let rows: Vec<(&str, String)> = vec![
        (
            "argocd-version",
            c.argocd_version.map_or(
                "unset (the oldest supported release, 3.3, is assumed)".into(),
                |v| v.to_string(),
            ),
        ),
        ("repo-urls", list(c.repo_urls.iter().cloned())),
        (
            "fail-on",
            c.fail_on
                .unwrap_or(crate::config::FailOn::DEFAULT)
                .as_str()
                .to_string(),
        ),
        ("exclude", list(c.exclude.iter().cloned())),
        (
            "max-file-size",
            c.max_file_size
                .unwrap_or(crate::discover::DEFAULT_MAX_FILE_SIZE)
                .to_string(),
        ),
        ("baseline", baseline(c)),
    ];
    for (key, value) in rows {
        writeln!(out, "{:<44} {}", format!("{key}: {value}"), from(key))?;
        clamps(key, out)?;
        if key == "repo-urls" {
            let value = list(remotes.iter().map(|u| without_credentials(u)));
            writeln!(
                out,
                "{:<44} # .git/config: sources with these URLs are this repository too",
                format!("git-remotes: {value}")
            )?;
        }
    }
    rules(c, "", out)?;
    clamps("rules", out)?;
    per_path(c, "", out)?;
    clamps("per-path", out)?;
    if let Some(t) = &c.trusted {
        rules(t, "trusted ", out)?;
        per_path(t, "trusted ", out)?;
    }
    Ok(())
}

/// The baseline file a run uses without `--baseline`, and whether it is there to read.
fn baseline(c: &Config) -> String {
    match c.baseline_file() {
        None => "none".into(),
        Some((file, _)) if file.is_file() => visible(&file.display().to_string()).into_owned(),
        Some((file, _)) => format!(
            "{} (missing: a run without --baseline stops)",
            visible(&file.display().to_string())
        ),
    }
}

fn rules(c: &Config, prefix: &str, out: &mut dyn Write) -> io::Result<()> {
    let head = format!("{prefix}rules:");
    writeln!(out, "{head:<44} {}", origin(c, "rules"))?;
    let select = c.select.as_ref().map_or("all".to_string(), ids);
    writeln!(out, "  select: {select}")?;
    writeln!(out, "  ignore: {}", ids(&c.ignore))?;
    writeln!(out, "  severity: {}", severities(&c.severity))
}

fn per_path(c: &Config, prefix: &str, out: &mut dyn Write) -> io::Result<()> {
    let head = format!("{prefix}per-path:");
    writeln!(out, "{head:<44} {}", origin(c, "per-path"))?;
    for p in &c.per_path {
        writeln!(out, "  - paths: {}", list(p.globs.iter().cloned()))?;
        writeln!(out, "    ignore: {}", ids(&p.ignore))?;
        writeln!(out, "    severity: {}", severities(&p.severity))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn remote_credentials_are_not_printed() {
        for (url, shown) in [
            (
                "https://x-access-token:ghs_abc@github.com/a/b.git",
                "https://github.com/a/b.git",
            ),
            ("https://github.com/a/b.git", "https://github.com/a/b.git"),
            ("git@github.com:a/b.git", "git@github.com:a/b.git"),
            ("ssh://git@github.com/a/b", "ssh://git@github.com/a/b"),
            ("ssh://git:s3cret@host/a/b", "ssh://git@host/a/b"),
            ("git+https://u:tok@host/a", "git+https://u@host/a"),
        ] {
            assert_eq!(super::without_credentials(url), shown);
        }
    }
}
