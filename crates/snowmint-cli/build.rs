//! Puts the commit the binary was built from into `snowmint --version`: the variable
//! `SNOWMINT_COMMIT` if the build sets it (an image built without `.git`), else the commit
//! `cargo package` recorded in `.cargo_vcs_info.json` (a crate from a registry), else what
//! git says of this repository, else `unknown`.

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
        .or_else(packaged_commit)
        .or_else(git_commit)
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=SNOWMINT_COMMIT={commit}");
}

/// The commit in `.cargo_vcs_info.json`, which `cargo package` writes beside the manifest,
/// with `-dirty` when it packaged uncommitted changes.
fn packaged_commit() -> Option<String> {
    let text = std::fs::read_to_string(".cargo_vcs_info.json").ok()?;
    let info: serde_json::Value = serde_json::from_str(&text).ok()?;
    let sha = info["git"]["sha1"]
        .as_str()
        .filter(|sha| sha.len() >= 12 && sha.chars().all(|c| c.is_ascii_hexdigit()))?;
    let dirty = info["git"]["dirty"].as_bool() == Some(true);
    Some(format!(
        "{}{}",
        &sha[..12],
        if dirty { "-dirty" } else { "" }
    ))
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
    // Only this repository's commit: not that of a repository the sources sit in by chance.
    let top = git(&["rev-parse", "--show-toplevel"])?;
    let ours = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    if std::fs::canonicalize(top).ok()? != std::fs::canonicalize(ours).ok()? {
        return None;
    }
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
