//! What a release ships beside the binary: `--version` with its commit, shell completions
//! and man pages, each made from the same declarations as `--help`.

mod support;

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
