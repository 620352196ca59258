//! Resources, bases and components: where the paths a kustomization writes lead, and what
//! loading them adds.

use super::{is_remote, problem, Kustomizer, Res, MAX_NESTING};
use crate::render::{self, Linked, Note};
use crate::yaml::Node;
use std::path::{Path, PathBuf};

impl Kustomizer<'_> {
    /// Resolves a path written in a kustomization, recording why it cannot be followed.
    pub(super) fn resolve(&mut self, dir: &Path, item: &Node) -> Option<(String, PathBuf)> {
        let Some(written) = item.as_str().filter(|_| !item.is_null()) else {
            self.problems.push(problem(
                item.span,
                "expected a path, found a mapping or list",
                "write the path as a string",
            ));
            return None;
        };
        if is_remote(written) {
            self.opaque = true;
            self.notes.push(Note {
                span: item.span,
                message: format!(
                    "remote resource `{written}` not rendered: gitops-lint never fetches"
                ),
            });
            return None;
        }
        match self.files.resolve(dir, written) {
            Ok(p) => Some((written.to_string(), p)),
            Err(e) => {
                self.problems.push(problem(
                    item.span,
                    e.message(written),
                    "keep kustomizations inside the repository; kustomize refuses such paths too",
                ));
                None
            }
        }
    }

    /// Where `path` (resolved from `written`) leads: kustomize follows symbolic links
    /// (`filepath.EvalSymlinks`), so a link whose target is inside the repository stands for
    /// that target, found by its own path among the linted files. A link leading out of the
    /// repository is refused, as Argo CD refuses a repository holding one; its target is never
    /// read. What is neither in the index nor reached through a link is returned as it is, for
    /// [`Kustomizer::missing`] to explain.
    pub(super) fn through_links(
        &mut self,
        path: PathBuf,
        written: &str,
        item: &Node,
    ) -> Option<PathBuf> {
        if self.files.file(&path).is_some() || self.files.kustomization(&path).is_some() {
            return Some(path);
        }
        match self.files.follow(&path) {
            Linked::Inside(real) => Some(real),
            Linked::Missing => Some(path),
            Linked::Outside => {
                self.problems.push(problem(
                    item.span,
                    format!("`{written}` is a symbolic link (or goes through one) that leads outside the repository: Argo CD refuses such a repository, and gitops-lint does not follow it"),
                    "point the link at a path inside the repository, or copy what it names into it",
                ));
                None
            }
        }
    }

    /// Files (not kustomization directories) must sit under the kustomization's own directory
    /// once symbolic links are resolved on both (`path` and `dir` here are): kustomize's
    /// default load restrictor refuses anything else.
    pub(super) fn restricted(
        &mut self,
        dir: &Path,
        path: &Path,
        written: &str,
        item: &Node,
    ) -> bool {
        // Both in normal form, as every path here is.
        render::debug_assert_normal(dir);
        render::debug_assert_normal(path);
        if crate::paths::starts_with_normal(crate::paths::bytes(path), crate::paths::bytes(dir)) {
            return false;
        }
        // A directory reached through a link named on the command line keeps the link's name,
        // while kustomize confirms its root with its links resolved (`ConfirmedDir`).
        if let Linked::Inside(real) = self.files.follow(dir) {
            if real != dir
                && crate::paths::starts_with_normal(
                    crate::paths::bytes(path),
                    crate::paths::bytes(&real),
                )
            {
                return false;
            }
        }
        // Only on this rare path: whether the written path was a link to the file.
        let linked = self.files.resolve(dir, written).is_ok_and(|p| p != path);
        let how = if linked {
            let root = self.files.root_of(path);
            let rel = render::relative(crate::paths::bytes(&root), crate::paths::bytes(path));
            format!(" (a symbolic link to `{rel}`)")
        } else {
            String::new()
        };
        self.problems.push(problem(
            item.span,
            format!("`{written}` is a file outside this kustomization's directory{how}: kustomize refuses to load it"),
            "move the file under the kustomization, or reference the directory holding it as a kustomization",
        ));
        true
    }

    pub(super) fn load(&mut self, dir: &Path, item: &Node, res: &mut Vec<Res>) {
        let Some((written, path)) = self.resolve(dir, item) else {
            return;
        };
        let Some(path) = self.through_links(path, &written, item) else {
            return;
        };
        if let Some(id) = self.files.file(&path) {
            if self.restricted(dir, &path, &written, item) {
                return;
            }
            self.read_file(id);
            res.extend(
                self.files
                    .whole(id)
                    .into_objects()
                    .into_iter()
                    .map(Res::new),
            );
            return;
        }
        if self.files.kustomization(&path).is_some() {
            if self.stack.contains(&path) {
                self.problems.push(problem(
                    item.span,
                    format!("`{written}` closes a cycle: it includes this kustomization again"),
                    "remove the reference that makes the kustomizations include each other",
                ));
                return;
            }
            if self.too_deep(&written, item) {
                return;
            }
            if let Some(sub) = self.accumulate(&path) {
                res.extend(sub.iter().cloned());
            }
            return;
        }
        self.missing(&path, &written, item);
    }

    /// A problem that depends on what it is applied to: raised inside a component, which many
    /// kustomizations may include, it names the build it failed in.
    pub(super) fn in_context(&self, message: String) -> String {
        match (self.stack.last(), self.builds.last()) {
            (Some(at), Some(build)) if at != build => {
                let root = self.files.root_of(build);
                let rel = render::relative(crate::paths::bytes(&root), crate::paths::bytes(build));
                let rel = if rel.is_empty() { ".".into() } else { rel };
                format!("{message} (in the build of `{rel}`, which includes this component)")
            }
            _ => message,
        }
    }

    /// Whether including `written` would nest kustomizations past [`MAX_NESTING`]; if so, says
    /// so at the entry.
    fn too_deep(&mut self, written: &str, item: &Node) -> bool {
        if self.stack.len() < MAX_NESTING {
            return false;
        }
        self.cut = true;
        self.problems.push(problem(
            item.span,
            format!("`{written}` nests kustomizations more than {MAX_NESTING} levels deep: gitops-lint does not render past that depth, so nothing below it is checked"),
            "flatten the chain of kustomizations; no repository needs this many levels",
        ));
        true
    }

    pub(super) fn missing(&mut self, path: &Path, written: &str, item: &Node) {
        // A file added there later changes the build.
        self.inputs.push(path.to_path_buf());
        // A link that resolved was followed before this; one still here leads nowhere.
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
            self.problems.push(problem(
                item.span,
                format!("`{written}` is a symbolic link that leads nowhere: its target does not exist, or the links loop"),
                "point the link at an existing file or directory, or reference the real one",
            ));
            return;
        }
        if self.files.exists(path) {
            let has_kustomization = crate::discover::KUSTOMIZATION_FILES
                .iter()
                .any(|n| path.join(n).is_file());
            // What is there but not among the linted files is not rendered: whatever it holds
            // is unknown to the patches of this build.
            self.opaque |= !path.is_dir() || has_kustomization;
            if path.is_dir() && has_kustomization {
                self.notes.push(Note {
                    span: item.span,
                    message: format!("`{written}` not rendered: it is outside the linted paths (lint the repository, or use --context)"),
                });
            } else if path.is_dir() {
                self.problems.push(problem(
                    item.span,
                    format!("`{written}` is a directory without a kustomization.yaml"),
                    "add a kustomization.yaml listing its resources, or list the files themselves",
                ));
            } else {
                self.notes.push(Note {
                    span: item.span,
                    message: format!(
                        "`{written}` not rendered: the file is not among the linted files"
                    ),
                });
            }
            return;
        }
        // A kustomization beside a Chart.yaml is the config management plugin pattern of Argo
        // CD's own examples (`helm template . > all.yaml && kustomize build`): the file it
        // lists is written by the plugin before kustomize runs.
        let chart = self
            .stack
            .last()
            .is_some_and(|d| self.files.exists(&d.join("Chart.yaml")));
        if chart {
            self.opaque = true;
            self.notes.push(Note {
                span: item.span,
                message: format!("`{written}` not rendered: it is not in the repository, and beside a Chart.yaml a config management plugin likely writes it (helm template) before kustomize runs"),
            });
            return;
        }
        self.problems.push(problem(
            item.span,
            format!("`{written}` does not exist"),
            "fix the path; kustomize fails the whole build, so the application never syncs",
        ));
    }

    pub(super) fn component(&mut self, dir: &Path, item: &Node, res: &mut Vec<Res>) {
        let Some((written, path)) = self.resolve(dir, item) else {
            return;
        };
        let Some(path) = self.through_links(path, &written, item) else {
            return;
        };
        let Some(kfile) = self.files.kustomization(&path) else {
            self.missing(&path, &written, item);
            return;
        };
        if self.stack.contains(&path) {
            self.problems.push(problem(
                item.span,
                format!("`{written}` closes a cycle: it includes this kustomization again"),
                "remove the reference that makes the kustomizations include each other",
            ));
            return;
        }
        if self.too_deep(&written, item) {
            return;
        }
        self.read_file(kfile);
        let Some(k) = self
            .files
            .whole(kfile)
            .objects
            .first()
            .map(|o| o.root.clone())
        else {
            return;
        };
        self.stack.push(path.clone());
        self.apply(&path, &k, res);
        self.stack.pop();
    }
}
