//! Names the commit in `jitterlab --version`: `0.1.0 (1a2b3c4)`, `0.1.0 (1a2b3c4, modified)`
//! with uncommitted changes to tracked files, and plain `0.1.0` where git or the repository is
//! absent (a crates.io tarball, an exported source tree).

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=JITTERLAB_COMMIT");
    let commit = match std::env::var("JITTERLAB_COMMIT") {
        // Packagers building from a tarball can say which commit it was cut from.
        Ok(c) if !c.trim().is_empty() => Some(c.trim().to_owned()),
        _ => git_commit(&manifest),
    };
    let full = match commit {
        Some(c) => format!("{version} ({c})"),
        None => version,
    };
    println!("cargo:rustc-env=JITTERLAB_VERSION={full}");
}

/// Runs git in `dir`; `None` when git is missing or fails.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The short commit of the repository holding this crate, with `, modified` when tracked
/// files differ from it; `None` outside a repository or when this crate is not tracked in the
/// enclosing one (a tarball unpacked inside some other repository).
fn git_commit(manifest: &Path) -> Option<String> {
    git(manifest, &["ls-files", "--error-unmatch", "Cargo.toml"])?;
    let commit = git(manifest, &["rev-parse", "--short", "HEAD"])?;
    // Rebuild when HEAD moves, a branch is committed to, or the index changes (which `git add`
    // and `git status` do); only paths that exist, or cargo would rerun this every build.
    let dir = |what: &str| git(manifest, &["rev-parse", "--path-format=absolute", what]);
    if let Some(git_dir) = dir("--git-dir").map(PathBuf::from) {
        watch(&git_dir.join("HEAD"));
        watch(&git_dir.join("index"));
        if let Some(head) = git(manifest, &["symbolic-ref", "-q", "HEAD"])
            && let Some(common) = dir("--git-common-dir").map(PathBuf::from)
        {
            watch(&common.join(&head));
            watch(&common.join("packed-refs"));
        }
    }
    let dirty = // Without optional locks, `status` does not refresh the index (which would rerun this).
    git(
        manifest,
        &["--no-optional-locks", "status", "--porcelain", "--untracked-files=no"],
    )
        .is_some_and(|s| !s.is_empty());
    Some(if dirty {
        format!("{commit}, modified")
    } else {
        commit
    })
}

fn watch(path: &Path) {
    if path.exists() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}
