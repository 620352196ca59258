//! Looks on PATH for the programs that some integration tests drive (the linter itself runs
//! none), so that a test whose program is missing shows as ignored, with the reason, in the test
//! summary instead of passing without having checked anything. Each program is only looked for,
//! never run.
//!
//! It sets `has_<program>` for each one found, and `ci` when `CI` is set: `.ci/run` installs
//! pre-commit and strace, so there their tests run, and fail, rather than being ignored. It also
//! sets `has_crds` when the directory of Argo CD's CRDs is there.
//!
//! The search runs again when PATH, CI or GITOPS_LINT_CRDS changes. A program installed into a
//! directory already on PATH is noticed at the next build after `touch build.rs`.

use std::path::Path;

/// cfg name, the program names any of which will do, and places looked at besides PATH.
const PROGRAMS: &[(&str, &[&str], &[&str])] = &[
    ("has_git", &["git"], &[]),
    ("has_jq", &["jq"], &[]),
    // tests/kustomize_diff.rs also finds kubectl at this fixed place.
    ("has_kubectl", &["kubectl"], &["/usr/bin/kubectl"]),
    // tests/helm_diff.rs: scripts/install-helm.sh puts it in ~/.local/bin, which .ci/run adds to PATH.
    ("has_helm", &["helm"], &[]),
    ("has_pre_commit", &["pre-commit"], &[]),
    ("has_strace", &["strace"], &[]),
    ("has_curl", &["curl"], &[]),
    ("has_tar", &["tar"], &[]),
    // macOS has shasum where Linux has sha256sum; scripts/install.sh takes either.
    ("has_sha256", &["sha256sum", "shasum"], &[]),
];

fn executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        path.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file() || path.with_extension("exe").is_file()
    }
}

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=PATH");
    println!("cargo::rerun-if-env-changed=CI");
    println!("cargo::rustc-check-cfg=cfg(ci)");
    if std::env::var_os("CI").is_some() {
        println!("cargo::rustc-cfg=ci");
    }
    let path: Vec<_> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    // tests/generated.rs checks a table against Argo CD's CRDs, kept outside the repository.
    println!("cargo::rerun-if-env-changed=GITOPS_LINT_CRDS");
    println!("cargo::rustc-check-cfg=cfg(has_crds)");
    let crds = std::env::var_os("GITOPS_LINT_CRDS").unwrap_or_else(|| "../shared/crds".into());
    if Path::new(&crds).is_dir() {
        println!("cargo::rustc-cfg=has_crds");
    }
    for (cfg, names, elsewhere) in PROGRAMS {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        let found = names.iter().any(|name| {
            path.iter()
                .filter(|dir| dir.is_absolute())
                .any(|dir| executable(&dir.join(name)))
        }) || elsewhere.iter().any(|p| executable(Path::new(p)));
        if found {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
}
