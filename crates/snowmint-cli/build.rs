//! Puts the commit the binary was built from into `snowmint --version`: the variable
//! `SNOWMINT_COMMIT` if the build sets it (an image built without `.git`), else what git
//! says of the source tree, else `unknown`.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=SNOWMINT_COMMIT");
    let commit = std::env::var("SNOWMINT_COMMIT")
        .ok()
        .map(|commit| commit.trim().to_string())
        .filter(|commit| !commit.is_empty())
        // A full hash, as an image's revision label holds it, is shown as git shows it.
        .map(|commit| match commit.get(..12) {
            Some(short) if commit.chars().all(|c| c.is_ascii_hexdigit()) => short.to_string(),
            _ => commit,
        })
        .or_else(git_commit)
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=SNOWMINT_COMMIT={commit}");
}

/// `git rev-parse --short=12 HEAD`, with `-dirty` when the tree has changes, and the files
/// whose change means a new commit watched for a rebuild.
fn git_commit() -> Option<String> {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|out| out.status.success())
            .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"])?;
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/index");
        if let Some(head) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={dir}/{head}");
        }
    }
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
        .is_some_and(|changes| !changes.is_empty());
    Some(if dirty {
        format!("{commit}-dirty")
    } else {
        commit
    })
}
