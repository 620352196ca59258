//! The repository's `.gitops-lint.yaml`. Only the keys the pipeline needs so far are read.

use crate::render::repo::CONFIG_FILES;
use crate::yaml::{self, Node, ParseLimits};
use std::path::Path;

#[derive(Clone, Debug, Default)]
pub struct Config {
    /// URLs that mean "this repository" besides its git remotes.
    pub repo_urls: Vec<String>,
}

/// Reads the config file at the repository root, if there is one.
pub fn load(root: &Path) -> Result<Config, String> {
    let Some(path) = CONFIG_FILES
        .iter()
        .map(|f| root.join(f))
        .find(|p| p.is_file())
    else {
        return Ok(Config::default());
    };
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let parsed = yaml::parse(0, &text, ParseLimits::default());
    if let Some(p) = parsed.problems.first() {
        return Err(format!("{}: {}", path.display(), p.message));
    }
    let mut config = Config::default();
    if let Some(doc) = parsed.documents.first() {
        let urls = doc.root.get("repo-urls");
        if let Some(urls) = urls.filter(|u| !u.is_null()) {
            if !urls.is_seq() {
                return Err(format!(
                    "{}: `repo-urls` must be a list of URLs",
                    path.display()
                ));
            }
            config.repo_urls = urls
                .items()
                .iter()
                .filter_map(Node::as_str)
                .map(str::to_string)
                .collect();
        }
    }
    Ok(config)
}
