//! `snowmint serial` and `snowmint serial parse` as a user runs them.

use std::collections::HashSet;
use std::process::{Command, Output};

fn snowmint(state: &std::path::Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_snowmint"));
    cmd.args(args).env("SNOWMINT_STATE_DIR", state);
    for (key, _) in std::env::vars() {
        if key.starts_with("SNOWMINT_") {
            cmd.env_remove(key);
        }
    }
    cmd.env("SNOWMINT_STATE_DIR", state).output().unwrap()
}

fn lines(out: &Output) -> Vec<String> {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn serials_increase_and_parse_back_to_their_ids() {
    let state = tempfile::tempdir().unwrap();
    let serials = lines(&snowmint(
        state.path(),
        &["serial", "--biz", "PAY", "-n", "3"],
    ));
    assert_eq!(serials.len(), 3);
    assert!(serials.windows(2).all(|w| w[0] < w[1]), "{serials:?}");
    assert!(
        serials
            .iter()
            .all(|s| s.starts_with("PAY") && s.len() == 28)
    );
    let mut args = vec!["serial", "parse", "--json"];
    args.extend(serials.iter().map(String::as_str));
    let parsed = lines(&snowmint(state.path(), &args));
    let mut ids = Vec::new();
    for line in parsed {
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["biz"], "PAY");
        let id: u64 = v["id"].as_str().unwrap().parse().unwrap();
        let parts = snowmint::Layout::TWITTER
            .decode(snowmint::Id::from_u64(id))
            .unwrap();
        assert_eq!(v["unix_ms"], parts.unix_ms);
        assert_eq!(v["sequence"], parts.sequence);
        ids.push(id);
    }
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn two_processes_at_once_never_repeat_a_serial() {
    let state = tempfile::tempdir().unwrap();
    let run = || {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_snowmint"));
        cmd.args([
            "serial",
            "--biz",
            "ORD",
            "-n",
            "50000",
            "--template",
            "{biz}-{time}-{node}-{seq}-{check:mod97}",
        ])
        .env("SNOWMINT_STATE_DIR", state.path())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap()
    };
    let (a, b) = (run(), run());
    // Both outputs are read at once: whichever process takes the state file's lock first
    // must not block on a full pipe while the other waits for the lock.
    let (a, b) = std::thread::scope(|s| {
        let b = s.spawn(move || b.wait_with_output().unwrap());
        (a.wait_with_output().unwrap(), b.join().unwrap())
    });
    let mut all = HashSet::new();
    for out in [&a, &b] {
        let serials = lines(out);
        assert_eq!(serials.len(), 50_000);
        assert!(serials.windows(2).all(|w| w[0] < w[1]));
        all.extend(serials);
    }
    assert_eq!(
        all.len(),
        100_000,
        "a serial repeated across the two processes"
    );
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let state = tempfile::tempdir().unwrap();
    for (args, message) in [
        (
            vec!["serial", "--biz", "pay"],
            "business code \"pay\" has 'p' at position 0",
        ),
        (vec!["serial"], "--biz is required"),
        (
            vec!["serial", "--biz", "PAY", "--tz", "Asia/Shanghai"],
            "use a fixed offset such as +08:00",
        ),
        (
            vec!["serial", "--biz", "PAY", "--template", "{biz}{time}{seq}"],
            "node",
        ),
        (
            vec!["serial", "parse", "PAY123"],
            "expected 26 to 41 characters for this template, got 6",
        ),
        (
            vec![
                "serial",
                "--biz",
                "PAY",
                "--template",
                "{biz}{time}{node:19}{seq:19}",
            ],
            "template makes serials of up to 71 characters, more than the 64 allowed",
        ),
    ] {
        let out = snowmint(state.path(), &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.starts_with("error: ") && err.contains(message),
            "{args:?}: {err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
}
