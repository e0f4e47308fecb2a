//! Failures while doing the work (the state directory, the mark file, a port): exit status
//! 1 and a last line on stderr that says what failed and why, each cause once.

use crate::support;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use support::{Snowmint, serve_command};

/// Runs `cmd`, expects exit status 1, and returns the last line of stderr (a server logs
/// before it fails).
fn fails(mut cmd: Command) -> String {
    let out = cmd.output().expect("snowmint runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr.lines().last().unwrap_or_default().to_string()
}

/// A directory inside a plain file, which nobody (root included) can create.
fn uncreatable(tmp: &Path) -> PathBuf {
    let file = tmp.join("plain-file");
    std::fs::write(&file, "").unwrap();
    file.join("state")
}

/// A state directory whose mark for the default layout, datacenter 0 and worker 0 holds
/// "soon"; returns the mark file's path.
fn corrupt_mark(dir: &Path) -> PathBuf {
    let mark = dir.join("fleet.default-dc0-w0.mark");
    std::fs::write(&mark, "soon\n").unwrap();
    mark
}

#[test]
fn a_state_directory_that_cannot_be_created_is_named_with_the_reason_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = uncreatable(tmp.path());
    let expected = format!(
        "cannot create state directory {}: Not a directory (os error 20)",
        dir.display()
    );
    let sm = Snowmint::new();
    let mut generate = sm.command(&["gen", "--state-dir"]);
    generate.arg(&dir);
    assert_eq!(fails(generate), format!("error: {expected}"));
    assert_eq!(
        fails(serve_command(&dir, &["--grpc-addr", "off"])),
        format!("error: serve: {expected}")
    );
}

#[test]
fn a_corrupt_mark_names_the_file_and_what_it_holds_once() {
    let sm = Snowmint::new();
    let mark = corrupt_mark(sm.state_dir());
    let corrupt = format!(
        r#"mark file {} is corrupt: found "soon\n", expected milliseconds since the Unix epoch"#,
        mark.display()
    );
    assert_eq!(fails(sm.command(&["gen"])), format!("error: {corrupt}"));
    assert_eq!(
        fails(serve_command(sm.state_dir(), &["--grpc-addr", "off"])),
        format!("error: serve: cannot read the high-water mark: {corrupt}")
    );
}

#[test]
fn a_port_already_taken_is_named_with_the_reason_once() {
    let sm = Snowmint::new();
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let serve = sm.command(&["serve", "--grpc-addr", "off", "--http-addr", &addr]);
    assert_eq!(
        fails(serve),
        format!("error: serve: cannot listen on {addr}: Address already in use (os error 98)")
    );
    let serve = sm.command(&[
        "serve",
        "--grpc-addr",
        "off",
        "--http-addr",
        "127.0.0.1:0",
        "--thrift-addr",
        &addr,
    ]);
    assert_eq!(
        fails(serve),
        format!("error: serve: cannot listen on {addr}: Address already in use (os error 98)")
    );
}

/// Stopped while it still waits for a registry that never answers: exit 0, a last line
/// that says no worker id was held, and no mark written, since nothing was issued.
#[test]
fn a_server_stopped_before_it_holds_a_worker_id_says_so_and_writes_no_mark() {
    let state = tempfile::tempdir().unwrap();
    let url = format!("redis://127.0.0.1:{}/0", snowmint_testkit::free_port());
    let mut serve = support::spawn_logged(serve_command(state.path(), &["--lease", &url]));
    snowmint_testkit::eventually(
        std::time::Duration::from_secs(20),
        "acquiring",
        || match serve.get("/readyz") {
            (503, body) if body.contains("acquiring a worker id") => Ok(()),
            other => Err(format!("{other:?}")),
        },
    );
    assert!(serve.terminate().success(), "{}", serve.logged());
    let log = serve.logged();
    assert!(
        log.contains(
            "stopped before a worker id was acquired; no id was issued, so no mark to persist"
        ),
        "{log}"
    );
    for claim in ["high-water mark persisted", "gave the worker id back"] {
        assert!(!log.contains(claim), "{claim}: {log}");
    }
    let marks: Vec<_> = std::fs::read_dir(state.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .filter(|name| name.to_string_lossy().ends_with(".mark"))
        .collect();
    assert!(marks.is_empty(), "{marks:?}");
}
