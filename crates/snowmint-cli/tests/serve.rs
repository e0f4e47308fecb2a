//! `snowmint serve` as a real process: start, serve, stop on SIGTERM with requests in
//! flight, and restart with the clock set back without repeating an id.

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use support::{Serve, http_get, ids, serve_command, spawn_logged, wall_clock_offset};

/// `snowmint serve` with its wall clock `offset` away from this machine's (`"0s"`, `"-10s"`),
/// moved by libfaketime as an NTP step would move it.
fn command(state: &std::path::Path, offset: &str, extra: &[&str]) -> Command {
    let mut cmd = serve_command(state, extra);
    cmd.args(["--grpc-addr", "127.0.0.1:0"]);
    if offset != "0s" {
        wall_clock_offset(&mut cmd, offset);
    }
    cmd
}

/// Starts the server and reads the address it logs as it binds.
fn start(state: &std::path::Path, offset: &str, extra: &[&str]) -> Serve {
    spawn_logged(command(state, offset, extra))
}

#[test]
fn sigterm_finishes_requests_in_flight_and_exits_zero() {
    let state = tempfile::tempdir().unwrap();
    let mut serve = start(state.path(), "0s", &["--max-batch", "1000000"]);
    let addr = serve.http;
    // A million ids take about 250 ms at the default layout's cap of 4,096 per ms.
    let in_flight = std::thread::spawn(move || http_get(addr, "/v1/ids?count=1000000"));
    std::thread::sleep(Duration::from_millis(60));
    let status = serve.terminate();
    assert!(status.success(), "exit status {status}\n{}", serve.logged());
    let (code, body) = in_flight.join().unwrap();
    assert_eq!(code, 200);
    let got = ids(&body);
    assert_eq!(got.len(), 1_000_000);
    assert!(got.windows(2).all(|w| w[0] < w[1]));
    assert!(serve.logged().contains("high-water mark persisted"));
}

#[test]
fn restart_with_the_clock_set_back_never_repeats_an_id() {
    let state = tempfile::tempdir().unwrap();
    let first = start(state.path(), "0s", &[]);
    let (code, body) = first.get("/v1/ids?count=5000");
    assert_eq!(code, 200);
    let before = ids(&body);
    let highest = *before.last().unwrap();
    // A crash: no clean shutdown, so the mark stays reserved ahead.
    drop(first);

    // Set back 10 s and told to fail: exits with the gap named, issuing nothing.
    let out = command(state.path(), "-10s", &["--restart-behind", "fail"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("ms behind the high-water mark"), "{stderr}");

    // Set back 10 s and told to wait: serves probes, but is not ready and issues nothing.
    let behind = start(state.path(), "-10s", &[]);
    let (code, body) = behind.get("/readyz");
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("behind the high-water mark"), "{body}");
    let (code, body) = behind.get("/v1/id");
    assert_eq!(code, 503, "{body}");
    assert_eq!(behind.get("/healthz").0, 200);
    drop(behind);

    // Set back 1.5 s: ready once the clock passes the mark, and every id is higher.
    let later = start(state.path(), "-1.5s", &[]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while later.get("/readyz").0 != 200 {
        assert!(Instant::now() < deadline, "never became ready");
        std::thread::sleep(Duration::from_millis(50));
    }
    let after = ids(&later.get("/v1/ids?count=5000").1);
    assert!(after[0] > highest, "{} <= {highest}", after[0]);
}

#[test]
fn flags_override_the_environment_which_overrides_the_file() {
    let state = tempfile::tempdir().unwrap();
    let file = state.path().join("snowmint.toml");
    std::fs::write(&file, "worker = 3\ndatacenter = 1\n").unwrap();
    let config = file.to_str().unwrap();
    let worker_of = |serve: &Serve| {
        let (_, body) = serve.get("/v1/layout");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        (
            v["datacenter"].as_u64().unwrap(),
            v["worker"].as_u64().unwrap(),
        )
    };
    assert_eq!(
        worker_of(&start(state.path(), "0s", &["--config", config])),
        (1, 3)
    );
    let mut cmd = command(state.path(), "0s", &["--config", config]);
    cmd.env("SNOWMINT_WORKER", "4");
    let from_env = spawn_logged(cmd);
    assert_eq!(worker_of(&from_env), (1, 4));
    drop(from_env);
    let mut cmd = command(state.path(), "0s", &["--config", config, "--worker", "5"]);
    cmd.env("SNOWMINT_WORKER", "4");
    assert_eq!(worker_of(&spawn_logged(cmd)), (1, 5));
}

#[test]
fn a_broken_config_is_refused_with_the_key_named() {
    let state = tempfile::tempdir().unwrap();
    let file = state.path().join("bad.toml");
    std::fs::write(&file, "worker = 99\n").unwrap();
    let out = command(state.path(), "0s", &["--config", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "error: config key `worker`: \"99\" is out of range 0..=31 for layout twitter"
    );
    let out = command(
        state.path(),
        "0s",
        &["--config", "/nonexistent/snowmint.toml"],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .starts_with("error: cannot read config file /nonexistent/snowmint.toml:")
    );
    let out = Command::new(env!("CARGO_BIN_EXE_snowmint"))
        .args(["serve", "--http-addr", "nowhere", "--state-dir"])
        .arg(state.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("config key `http_addr`: \"nowhere\""));
}

/// Two processes given the same worker id by hand collide, and nothing can notice; the log
/// is where an operator spots them, so the worker id and state file are in it at start.
#[test]
fn the_worker_id_and_its_state_file_are_logged_at_start() {
    let state = tempfile::tempdir().unwrap();
    let mut serve = start(state.path(), "0s", &["--datacenter", "2", "--worker", "7"]);
    let logged = serve.logged();
    let file = state.path().join(format!(
        "twitter-{}-dc2-w7.mark",
        snowmint::Layout::TWITTER.epoch_ms()
    ));
    let line = logged
        .lines()
        .find(|l| l.contains("issuing ids"))
        .unwrap_or_else(|| panic!("no start-up line names the worker id:\n{logged}"));
    assert!(line.contains("datacenter=2 worker=7"), "{line}");
    assert!(
        line.contains(&format!("state_file={}", file.display())),
        "{line}"
    );
}
