//! What a release ships beside the binary: `--version` with its commit, shell completions
//! and man pages, each made from the same declarations as `--help`; and the crates, which
//! `cargo package` packs with their metadata and licenses and without the tests.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::Snowmint;

#[test]
fn the_version_names_the_commit() {
    let version = Snowmint::new().ok(&["--version"]);
    let rest = version
        .trim()
        .strip_prefix(&format!("snowmint {} (commit ", env!("CARGO_PKG_VERSION")))
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{version}"));
    let commit = rest.strip_suffix("-dirty").unwrap_or(rest);
    assert!(
        commit == "unknown"
            || (commit.len() == 12 && commit.chars().all(|c| c.is_ascii_hexdigit())),
        "{version}"
    );
}

#[test]
fn completions_come_for_every_shell_and_bash_loads_them() {
    let sm = Snowmint::new();
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let script = sm.ok(&["completions", shell]);
        for word in ["serve", "parse", "--lease"] {
            assert!(script.contains(word), "{shell}: no {word}");
        }
    }
    let refused = sm.run(&["completions", "tcsh"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("invalid value 'tcsh'"));

    // bash takes the script and completes the subcommands from it.
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("snowmint.bash");
    std::fs::write(&script, sm.ok(&["completions", "bash"])).unwrap();
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source {}; COMP_WORDS=(snowmint se); COMP_CWORD=1; _snowmint snowmint se snowmint; echo \"${{COMPREPLY[@]}}\"",
            script.display()
        ))
        .output()
        .expect("bash runs");
    let offered = String::from_utf8_lossy(&out.stdout);
    assert!(
        offered.split_whitespace().any(|w| w == "serve"),
        "{offered}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn man_pages_cover_every_subcommand_and_option() {
    let sm = Snowmint::new();
    let top = sm.ok(&["manpage"]);
    assert!(top.contains(".TH snowmint 1"), "{top}");
    let dir = tempfile::tempdir().unwrap();
    sm.ok(&["manpage", "--out-dir", dir.path().to_str().unwrap()]);
    let mut pages: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    pages.sort();
    assert_eq!(
        pages,
        [
            "snowmint-at.1",
            "snowmint-completions.1",
            "snowmint-compose.1",
            "snowmint-fleet.1",
            "snowmint-gen.1",
            "snowmint-layout.1",
            "snowmint-manpage.1",
            "snowmint-parse.1",
            "snowmint-serial.1",
            "snowmint-serve.1",
            "snowmint.1",
        ]
    );
    let serve = std::fs::read_to_string(dir.path().join("snowmint-serve.1")).unwrap();
    for option in [
        "\\-\\-lease",
        "\\-\\-tls\\-cert",
        "\\-\\-auth\\-token\\-file",
    ] {
        assert!(serve.contains(option), "no {option} in snowmint-serve.1");
    }
    let refused = sm.run(&["manpage", "--out-dir", "/nonexistent/dir"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&refused.stderr)
            .contains("cannot write /nonexistent/dir/snowmint.1"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}

/// The workspace's crates, as `cargo metadata` describes them: those meant for publishing
/// (without `publish = false`), then the others.
fn workspace_crates(root: &Path) -> (Vec<serde_json::Value>, Vec<serde_json::Value>) {
    let out = cargo(
        root,
        &[
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ],
    );
    let metadata: serde_json::Value = serde_json::from_str(&out).unwrap();
    metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .cloned()
        .partition(|package| package["publish"] != serde_json::json!([]))
}

/// Runs cargo in the workspace and returns what it wrote to stdout; a failure shows all.
fn cargo(root: &Path, args: &[&str]) -> String {
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(args)
        .current_dir(root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo {args:?}:\n{}",
        support::printed(&out)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_published_crates_package_with_their_metadata_licenses_and_no_tests() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let (crates, unpublished) = workspace_crates(&root);
    let names: Vec<&str> = crates.iter().map(|c| c["name"].as_str().unwrap()).collect();
    for name in [
        "snowmint",
        "snowmint-lease",
        "snowmint-server",
        "snowmint-cli",
    ] {
        assert!(
            names.contains(&name),
            "{name} is not meant for publishing: {names:?}"
        );
    }
    for package in &crates {
        let name = package["name"].as_str().unwrap();
        for field in ["description", "license", "readme"] {
            assert!(
                package[field].as_str().is_some_and(|v| !v.is_empty()),
                "{name}: no {field}"
            );
        }
        for field in ["keywords", "categories"] {
            assert!(
                package[field].as_array().is_some_and(|v| !v.is_empty()),
                "{name}: no {field}"
            );
        }
    }

    // What `cargo package` refuses (a path dependency without a version, a file read from
    // outside the crate that is not in it) fails here; --no-verify leaves out the build of
    // each package, which the release itself does.
    let target = tempfile::tempdir().unwrap();
    let mut args = vec![
        "package",
        "--workspace",
        "--no-verify",
        "--allow-dirty",
        "--offline",
    ];
    args.extend(["--target-dir", target.path().to_str().unwrap()]);
    for package in &unpublished {
        args.extend(["--exclude", package["name"].as_str().unwrap()]);
    }
    cargo(&root, &args);

    let version = env!("CARGO_PKG_VERSION");
    for name in &names {
        let archive = target
            .path()
            .join(format!("package/{name}-{version}.crate"));
        let out = Command::new("tar")
            .arg("tzf")
            .arg(&archive)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", support::printed(&out));
        let files: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|line| line.split_once('/').unwrap().1.to_string())
            .collect();
        for file in [
            "Cargo.toml",
            "README.md",
            "LICENSE-MIT",
            "LICENSE-APACHE",
            "src/main.rs",
        ] {
            if file != "src/main.rs" || *name == "snowmint-cli" {
                assert!(
                    files.iter().any(|f| f == file),
                    "{name}: no {file} in {files:?}"
                );
            }
        }
        let fixtures: Vec<&String> = files
            .iter()
            .filter(|f| {
                f.starts_with("tests/")
                    || f.starts_with("proptest-regressions/")
                    || f.contains("testdata")
            })
            .collect();
        assert!(fixtures.is_empty(), "{name} packs test files: {fixtures:?}");
    }

    // The web page quotes each client's snippet: the server's package carries a copy of each
    // as it is in clients/, not a link out of the package.
    let server = target
        .path()
        .join(format!("package/snowmint-server-{version}.crate"));
    for (dir, file) in [
        ("js", "snippet.js"),
        ("python", "snippet.py"),
        ("java", "snippet.java"),
        ("go", "snippet.go"),
        ("ruby", "snippet.rb"),
        ("php", "snippet.php"),
    ] {
        let member = format!("snowmint-server-{version}/assets/snippets/{file}");
        let out = Command::new("tar")
            .arg("xzOf")
            .arg(&server)
            .arg(&member)
            .output()
            .unwrap();
        assert!(out.status.success(), "{member}: {}", support::printed(&out));
        let original = std::fs::read(root.join("clients").join(dir).join(file)).unwrap();
        assert!(
            out.stdout == original,
            "{member} differs from clients/{dir}/{file}"
        );
    }
}
