//! `snowmint serve` as a real process: start, serve, stop on SIGTERM with requests in
//! flight, and restart with the clock set back without repeating an id.

use crate::support;

use snowmint_testkit::eventually;
use std::process::Command;
use std::time::{Duration, Instant};

use support::{
    Serve, ids, read_response, send_get, serve_command, spawn_logged, wall_clock_offset,
};

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
    // A million ids take about 250 ms at the default layout's cap of 4,096 per ms. The
    // response is read only once SIGTERM is sent, so the request is in flight until then.
    let request = send_get(serve.http, "/v1/ids?count=1000000");
    eventually(Duration::from_secs(10), "ids in flight", || {
        let (_, metrics) = serve.get("/metrics");
        let in_flight = metrics
            .lines()
            .find_map(|line| line.strip_prefix("snowmint_ids_in_flight "))
            .and_then(|value| value.parse::<u64>().ok());
        if in_flight.is_some_and(|n| n > 0) {
            Ok(())
        } else {
            Err(metrics)
        }
    });
    let in_flight = std::thread::spawn(move || read_response(request));
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
    eventually(Duration::from_secs(10), "ready", || {
        match later.get("/readyz") {
            (200, _) => Ok(()),
            (status, body) => Err(format!("{status} {body}")),
        }
    });
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
    let file = state.path().join("fleet.default-dc2-w7.mark");
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

/// Runs a `serve` that must refuse to start, and returns its one line of error. Bounded: a
/// server that starts anyway is killed and the test fails.
fn refused_at_start(mut cmd: Command) -> String {
    let mut child = cmd.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2), "it started and served");
    String::from_utf8_lossy(&out.stderr).trim_end().to_string()
}

#[test]
fn a_layout_that_ran_out_is_refused_at_start() {
    let state = tempfile::tempdir().unwrap();
    assert_eq!(
        refused_at_start(serve_command(state.path(), &["--layout", "baidu"])),
        "error: config key `layout`: \"baidu\" has a time field that ran out on 2024-11-20T21:24:16.000Z, so no id can be issued; use another layout or a later epoch"
    );
}

#[test]
fn numeric_settings_are_bounded_from_flags_and_the_environment() {
    let state = tempfile::tempdir().unwrap();
    let lead = "error: config key `overflow_lead_ms`: \"18446744073709551615\" must be at most 1000 ms: ids borrowed ahead of the clock must stay within reserve_ahead_ms";
    let cmd = serve_command(
        state.path(),
        &["--overflow-lead-ms", "18446744073709551615"],
    );
    assert_eq!(refused_at_start(cmd), lead);
    let mut cmd = serve_command(state.path(), &[]);
    cmd.env("SNOWMINT_OVERFLOW_LEAD_MS", "18446744073709551615");
    assert_eq!(refused_at_start(cmd), lead);
    let mut cmd = serve_command(state.path(), &[]);
    cmd.env("SNOWMINT_MAX_RESPONSE_BYTES", "1");
    assert_eq!(
        refused_at_start(cmd),
        "error: config key `max_response_bytes`: \"1\" is out of range 1024..=1073741824"
    );
}

/// `/readyz`, `snowmint_ready` and `/v1/id` of a server whose clock is `offset_ms` away.
fn readiness_with_clock_offset(offset_ms: i64) -> (String, String, String) {
    let state = tempfile::tempdir().unwrap();
    let serve = start(state.path(), &format!("{:+}s", offset_ms / 1000), &[]);
    let (code, ready) = serve.get("/readyz");
    assert_eq!(code, 503, "{ready}");
    let (code, metrics) = serve.get("/metrics");
    assert_eq!(code, 200);
    let gauge = metrics
        .lines()
        .find(|l| l.starts_with("snowmint_ready "))
        .unwrap_or_default()
        .to_string();
    let (code, id) = serve.get("/v1/id");
    assert_eq!(code, 503, "{id}");
    (ready, gauge, id)
}

/// A machine whose clock reads before the layout's epoch cannot issue: the server starts (its
/// clock may be fixed while it runs) but is not ready, and says why. One whose clock reads
/// past the end of the time field is refused at start, as an exhausted layout is.
#[test]
fn a_clock_outside_the_layouts_range_is_not_ready() {
    let now = snowmint::Clock::now_ms(&snowmint::WallClock) as i64;
    let layout = snowmint::Layout::TWITTER;
    let range = "is outside the layout's range 2010-11-04T01:42:54.657Z..=2080-07-10T17:30:30.208Z";
    let before_epoch = layout.epoch_ms() as i64 - 60_000 - now;
    let (ready, gauge, id) = readiness_with_clock_offset(before_epoch);
    let ready: serde_json::Value = serde_json::from_str(&ready).unwrap();
    let reason = ready["error"].as_str().unwrap();
    assert!(
        reason.starts_with("no id of layout twitter can be issued now: time ")
            && reason.ends_with(range),
        "{reason}"
    );
    assert_eq!(gauge, "snowmint_ready 0.0");
    assert!(id.contains(range), "{id}");

    let state = tempfile::tempdir().unwrap();
    let past_end = layout.capacity().runs_out_ms as i64 + 60_000 - now;
    let mut cmd = serve_command(state.path(), &[]);
    wall_clock_offset(&mut cmd, &format!("{:+}s", past_end / 1000));
    assert_eq!(
        refused_at_start(cmd),
        "error: config key `layout`: \"twitter\" has a time field that ran out on 2080-07-10T17:30:30.209Z, so no id can be issued; use another layout or a later epoch"
    );
}

/// A renewal too slow for the TTL is blamed on `lease_renew_ms`, whichever source gave it,
/// and the flag wins over the variable, which wins over the file.
#[test]
fn each_source_of_a_key_is_named_by_its_error_and_the_later_source_wins() {
    let state = tempfile::tempdir().unwrap();
    let file = state.path().join("snowmint.toml");
    std::fs::write(&file, "lease_renew_ms = 9500\nlease_ttl_ms = 10000\n").unwrap();
    let config = file.to_str().unwrap();
    let refused = |renew: &str| {
        format!(
            "error: config key `lease_renew_ms`: \"{renew}\" must be 1 ms or more and shorter than lease_ttl_ms (10000 ms) less lease_margin_ms (1000 ms)"
        )
    };
    let cmd = serve_command(state.path(), &["--config", config]);
    assert_eq!(refused_at_start(cmd), refused("9500"));
    let mut cmd = serve_command(state.path(), &["--config", config]);
    cmd.env("SNOWMINT_LEASE_RENEW_MS", "9600");
    assert_eq!(refused_at_start(cmd), refused("9600"));
    let mut cmd = serve_command(
        state.path(),
        &["--config", config, "--lease-renew-ms", "9700"],
    );
    cmd.env("SNOWMINT_LEASE_RENEW_MS", "9600");
    assert_eq!(refused_at_start(cmd), refused("9700"));
}

/// A choice is spelled alike as a flag, a variable and a file's value, and a misspelling is
/// refused naming the flag, or quoting the file's line.
#[test]
fn choices_are_refused_by_name_from_every_source() {
    let state = tempfile::tempdir().unwrap();
    let choices = "[possible values: refuse, wait, logical, spare]";
    let err = refused_at_start(serve_command(state.path(), &["--rollback", "ignore"]));
    assert!(
        err.starts_with("error: invalid value 'ignore' for '--rollback <POLICY>'"),
        "{err}"
    );
    assert!(err.contains(choices), "{err}");
    let mut cmd = serve_command(state.path(), &[]);
    cmd.env("SNOWMINT_ROLLBACK", "ignore");
    let err = refused_at_start(cmd);
    assert!(
        err.contains("'ignore' for '--rollback <POLICY>'") && err.contains(choices),
        "{err}"
    );
    let file = state.path().join("snowmint.toml");
    std::fs::write(&file, "worker = 2\nrollback = \"ignore\"\n").unwrap();
    let cmd = serve_command(state.path(), &["--config", file.to_str().unwrap()]);
    assert_eq!(
        refused_at_start(cmd),
        format!(
            "error: config file {}: line 2, `rollback = \"ignore\"`: unknown variant `ignore`, expected one of `refuse`, `wait`, `logical`, `spare`",
            file.display()
        )
    );
}

/// A SIGTERM that arrives as soon as the server says it listens still stops it gracefully:
/// the handlers are in place before it binds, not from the first time it waits for them.
#[test]
fn a_sigterm_right_after_it_listens_is_a_graceful_stop() {
    for _ in 0..5 {
        let state = tempfile::tempdir().unwrap();
        let mut serve = start(state.path(), "0s", &[]);
        let status = serve.terminate();
        assert!(status.success(), "exit status {status}\n{}", serve.logged());
    }
}

/// A custom layout whose time field runs out within a year starts, says so in its log and
/// in `/v1/layout`, and issues ids.
#[test]
fn a_layout_running_out_within_a_year_starts_with_a_warning() {
    let state = tempfile::tempdir().unwrap();
    // 2^35 ms is about 398 days: from an epoch 200 days ago, about 198 are left.
    let epoch = (support::now_ms() - 200 * 86_400_000).to_string();
    let mut serve = start(
        state.path(),
        "0s",
        &["--layout", "custom:35/2/8/18", "--epoch", &epoch],
    );
    let (code, body) = serve.get("/v1/layout");
    assert_eq!(code, 200, "{body}");
    assert!(
        body.contains("\"warning\":\"layout custom's time field runs out on "),
        "{body}"
    );
    assert_eq!(serve.get("/v1/id").0, 200);
    let status = serve.terminate();
    assert!(status.success(), "exit status {status}");
    let logged = serve.logged();
    assert!(
        logged.contains(
            "within a year: no id can be issued after that; move to another layout or a later epoch"
        ),
        "{logged}"
    );
}
