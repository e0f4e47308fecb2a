//! `--clock`, `--rollback`, `--rollback-wait-ms` and `--sequence-start` on the commands that
//! issue ids, run as real processes against a state directory of their own.

use crate::support;

use snowmint::Layout;
use snowmint_lease::FileStore;
use std::time::Duration;

use support::{
    Snowmint, id_lines, ids, now_ms, serve_command, spawn_logged, strictly_increasing, twitter_ms,
};

fn mark_file(sm: &Snowmint) -> std::path::PathBuf {
    FileStore::path_in(sm.state_dir(), &snowmint_lease::Fleet::default(), 0, 0)
}

fn tick(id: u64) -> u64 {
    Layout::TWITTER
        .decode(snowmint::Id::from_u64(id))
        .unwrap()
        .timestamp
}

/// The run fails with exit code `code` and one line on stderr, which is returned.
fn fails(sm: &Snowmint, args: &[&str], code: i32) -> String {
    let out = sm.run(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{stderr}");
    assert!(out.stdout.is_empty(), "printed ids: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    stderr
}

#[test]
fn a_counter_runs_on_across_runs_and_its_mark_says_so() {
    let sm = Snowmint::new();
    let first = id_lines(&sm.ok(&["gen", "--clock", "counter", "-n", "5000"]));
    let second = id_lines(&sm.ok(&["gen", "--clock", "counter", "-n", "3"]));
    let all: Vec<u64> = first.iter().chain(&second).copied().collect();
    assert!(strictly_increasing(&all));
    // 4,096 ids fill tick 1; the rest of the first run is on tick 2, the next run on 3.
    assert_eq!(
        (tick(first[0]), tick(first[4_096]), tick(second[0])),
        (1, 2, 3)
    );
    let mark = std::fs::read_to_string(mark_file(&sm)).unwrap();
    assert_eq!(
        mark,
        format!("{} counter\n", Layout::TWITTER.unix_ms_at(4) - 1)
    );
    // Serials come from the same counter.
    let serials = sm.ok(&["serial", "--biz", "PAY", "--clock", "counter", "-n", "2"]);
    assert_eq!(serials.lines().count(), 2, "{serials}");
    assert!(serials.starts_with("PAY20101104014254"), "{serials}");
}

#[test]
fn a_clock_never_follows_a_counters_mark_nor_the_reverse() {
    let sm = Snowmint::new();
    sm.ok(&["gen", "--clock", "counter"]);
    let before = std::fs::read_to_string(mark_file(&sm)).unwrap();
    for mode in ["monotonic", "wall"] {
        let err = fails(&sm, &["gen", "--clock", mode], 1);
        assert!(
            err.contains(&format!(
                "fleet.default-dc0-w0.mark was left by a generator with clock counter, which this one's clock {mode} cannot follow: give it another worker id, or run it with clock counter"
            )),
            "{err}"
        );
    }
    assert_eq!(std::fs::read_to_string(mark_file(&sm)).unwrap(), before);

    let sm = Snowmint::new();
    sm.ok(&["gen"]);
    let err = fails(&sm, &["gen", "--clock", "counter"], 1);
    assert!(
        err.contains(
            "left by a generator with clock monotonic, which this one's clock counter cannot follow"
        ),
        "{err}"
    );
    // Both clocks' marks are instants: wall follows monotonic, and says so in its mark.
    let last = id_lines(&sm.ok(&["gen"]))[0];
    let next = id_lines(&sm.ok(&["gen", "--clock", "wall"]))[0];
    assert!(next > last);
    let mark = std::fs::read_to_string(mark_file(&sm)).unwrap();
    assert!(mark.ends_with(" wall\n"), "{mark:?}");
}

/// A crashed run left its mark 3 s ahead: on the wall clock, each rollback policy meets it
/// as it says.
#[test]
fn each_rollback_policy_meets_a_mark_ahead_as_it_says() {
    let crashed = || {
        let sm = Snowmint::new();
        let mark = now_ms() + 3_000;
        FileStore::open(mark_file(&sm))
            .unwrap()
            .raise(mark)
            .unwrap();
        (sm, mark)
    };
    let (sm, _) = crashed();
    let err = fails(&sm, &["gen", "--clock", "wall", "--rollback", "refuse"], 1);
    assert!(
        err.contains(" ms behind the newest id issued; refusing to issue until it catches up"),
        "{err}"
    );

    let (sm, _) = crashed();
    let err = fails(
        &sm,
        &["gen", "--clock", "wall", "--rollback-wait-ms", "100"],
        1,
    );
    assert!(
        err.contains(" ms behind the newest id issued, more than the 100 ms this generator waits"),
        "{err}"
    );

    // Logical runs ahead of the clock at once: right after the mark, no wait.
    let (sm, mark) = crashed();
    let started = now_ms();
    let ids = id_lines(&sm.ok(&["gen", "--clock", "wall", "--rollback", "logical", "-n", "3"]));
    assert!(strictly_increasing(&ids));
    assert_eq!(twitter_ms(ids[0]), mark + 1, "the tick after the mark");
    assert!(now_ms() < started + 2_500, "logical waited for the clock");
}

#[test]
fn a_sequence_start_is_taken_where_it_means_something() {
    let sm = Snowmint::new();
    let ids = id_lines(&sm.ok(&["gen", "--sequence-start", "random", "-n", "2"]));
    assert!(strictly_increasing(&ids));
    let err = fails(
        &sm,
        &["gen", "--clock", "counter", "--sequence-start", "random"],
        2,
    );
    assert_eq!(
        err,
        "error: config key `sequence_start`: \"random\" conflicts with clock counter: a counter's sequence runs on from one tick into the next, from zero\n"
    );
    let out = sm.run(&["gen", "--clock", "ntp"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("invalid value 'ntp' for '--clock <MODE>'")
            && err.contains("[possible values: monotonic, wall, counter]"),
        "{err}"
    );
}

#[test]
fn a_counter_outlives_a_layout_whose_clock_ran_out() {
    let sm = Snowmint::new();
    let err = fails(&sm, &["gen", "--layout", "baidu"], 2);
    assert!(err.contains("ran out"), "{err}");
    let out = sm.ok(&["gen", "--layout", "baidu", "--clock", "counter", "-n", "2"]);
    let ids = id_lines(&out);
    assert!(strictly_increasing(&ids));
    let parsed = sm.ok(&["parse", "--layout", "baidu", &ids[1].to_string()]);
    assert!(parsed.contains("sequence"), "{parsed}");
}

#[test]
fn serve_refuses_a_counter_under_a_lease_that_vouches_by_real_time() {
    let sm = Snowmint::new();
    let out = sm.run(&[
        "serve",
        "--clock",
        "counter",
        "--lease",
        "redis://127.0.0.1:1",
        "--http-addr",
        "127.0.0.1:0",
        "--grpc-addr",
        "off",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("clock counter cannot issue under a redis lease, which vouches for high-water marks by real time (renewal + TTL) while a counter's marks count ticks"),
        "{stderr}"
    );
}

/// A counter server under a `file:` lease: crashed, its successor (on another state
/// directory, as on another host sharing the registry) counts on after every id it issued.
#[test]
fn a_counter_server_restarts_and_hands_over_above_its_marks() {
    let registry = tempfile::tempdir().unwrap();
    let lease = format!("file:{}", registry.path().display());
    let start = |state: &std::path::Path| {
        let server = spawn_logged(serve_command(
            state,
            &[
                "--clock",
                "counter",
                "--lease",
                &lease,
                "--grpc-addr",
                "off",
            ],
        ));
        server.wait_ready(Duration::from_secs(15));
        server
    };
    let first_state = tempfile::tempdir().unwrap();
    let mut first = start(first_state.path());
    let (status, layout) = first.get("/v1/layout");
    assert_eq!(status, 200, "{layout}");
    let layout: serde_json::Value = serde_json::from_str(&layout).unwrap();
    assert_eq!(layout["clock"]["mode"], "counter");
    assert_eq!(layout["clock"]["ids_tell_time"], false);
    let mut seen = Vec::new();
    for _ in 0..3 {
        let (status, body) = first.get("/v1/ids?count=5000");
        assert_eq!(status, 200, "{body}");
        seen.extend(ids(&body));
    }
    assert_eq!(
        tick(seen[0]),
        1,
        "a fresh worker's counter starts at tick 1"
    );
    assert!(first.logged().contains("clock=\"counter\""));
    first.kill();

    let second_state = tempfile::tempdir().unwrap();
    let mut second = start(second_state.path());
    let (status, body) = second.get("/v1/ids?count=10");
    assert_eq!(status, 200, "{body}");
    let after = ids(&body);
    assert!(
        after[0] > *seen.last().unwrap(),
        "the successor issued {} at or below {}",
        after[0],
        seen.last().unwrap()
    );
    seen.extend(after);
    assert!(strictly_increasing(&seen));
    assert!(second.terminate().success());
}
