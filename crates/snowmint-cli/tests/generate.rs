//! `snowmint gen`, run as real processes: uniqueness across runs, across processes started
//! at the same moment, and across a crash.

use crate::support;

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::thread;

use snowmint::Layout;
use snowmint_lease::FileStore;
use support::{Snowmint, id_lines, now_ms, strictly_increasing, twitter_ms};

#[test]
fn five_json_ids_increase_and_carry_the_time_of_now() {
    let sm = Snowmint::new();
    let before = now_ms();
    let out = sm.ok(&["gen", "-n", "5", "--json"]);
    let after = now_ms();
    let rows: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(rows.len(), 5, "{out}");
    let mut last = 0;
    for row in &rows {
        let keys: Vec<_> = row
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys.len(), 6, "{row}");
        for key in ["id", "unix_ms", "time", "datacenter", "worker", "sequence"] {
            assert!(keys.contains(&key), "{key} missing from {row}");
        }
        let id: u64 = row["id"].as_str().expect("id is a string").parse().unwrap();
        assert!(id > last, "{out}");
        last = id;
        let ms = row["unix_ms"].as_u64().unwrap();
        assert_eq!(ms, twitter_ms(id));
        assert!(
            ms + 5_000 >= before && ms <= after + 5_000,
            "{ms} not within 5 s of {before}..{after}"
        );
        assert_eq!(row["time"], snowmint::UnixMs(ms).to_string());
        assert_eq!(
            (row["datacenter"].as_u64(), row["worker"].as_u64()),
            (Some(0), Some(0))
        );
    }
}

#[test]
fn encodings_and_worker_ids() {
    let sm = Snowmint::new();
    let hex = sm.ok(&[
        "gen",
        "-n",
        "3",
        "--format",
        "hex",
        "--datacenter",
        "2",
        "--worker",
        "9",
    ]);
    let mut parsed = Vec::new();
    for line in hex.lines() {
        // 0x and 16 digits: bare, all-digit hex would read back as a decimal.
        let digits = line.strip_prefix("0x").expect(line);
        assert_eq!(digits.len(), 16, "{hex}");
        let id = u64::from_str_radix(digits, 16).unwrap();
        let parts = Layout::TWITTER.decode(snowmint::Id::from_u64(id)).unwrap();
        assert_eq!((parts.datacenter, parts.worker), (2, 9));
        parsed.push(id);
    }
    assert!(strictly_increasing(&parsed));
    let base32 = sm.ok(&["gen", "-n", "2", "--format", "base32"]);
    assert!(base32.lines().all(|l| l.len() == 13), "{base32}");
    let base62 = sm.ok(&[
        "gen",
        "-n",
        "2",
        "--format",
        "base62",
        "--layout",
        "sonyflake",
    ]);
    assert!(base62.lines().all(|l| l.len() == 11), "{base62}");
    let binary = sm.ok(&["gen", "-n", "2", "--format", "binary"]);
    for line in binary.lines() {
        let digits = line
            .strip_prefix("0b")
            .unwrap_or_else(|| panic!("{binary}"));
        assert_eq!(digits.len(), 64, "{binary}");
        let id = u64::from_str_radix(digits, 2).unwrap();
        let parsed = sm.ok(&["parse", line, "--json"]);
        assert!(
            parsed.starts_with(&format!("{{\"id\":\"{id}\"")),
            "{parsed}"
        );
    }
}

#[test]
fn the_mark_lives_where_documented() {
    let sm = Snowmint::new();
    let dir = sm.state_dir().join("explicit");
    let out = sm.ok(&["gen", "--state-dir", dir.to_str().unwrap(), "--worker", "3"]);
    let id: u64 = out.trim().parse().unwrap();
    let mark = dir.join("fleet.default-dc0-w3.mark");
    let held = FileStore::open(&mark).unwrap().mark().unwrap();
    // A clean run lowers the mark to its last id, so the next run starts at once.
    assert_eq!(held, Some(twitter_ms(id)));
}

#[test]
fn two_processes_started_at_once_print_disjoint_ids() {
    const N: usize = 200_000;
    let sm = Snowmint::new();
    let children: Vec<_> = (0..2)
        .map(|_| {
            sm.command(&["gen", "-n", &N.to_string()])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("snowmint starts")
        })
        .collect();
    // Read both at once: a process blocked on a full pipe would hold its lock forever.
    let outputs: Vec<_> = children
        .into_iter()
        .map(|child| thread::spawn(move || child.wait_with_output().unwrap()))
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().unwrap())
        .collect();
    let mut all = HashSet::new();
    for out in &outputs {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let list = id_lines(std::str::from_utf8(&out.stdout).unwrap());
        assert_eq!(list.len(), N);
        assert!(strictly_increasing(&list));
        all.extend(list);
    }
    assert_eq!(
        all.len(),
        2 * N,
        "the two processes printed {} ids in common",
        2 * N - all.len()
    );
}

/// A shell loop of `snowmint gen`: distinct, increasing, and none waited out a
/// reservation (an id more than 1 s after its run started would show one).
#[test]
fn fifty_runs_in_a_row() {
    let sm = Snowmint::new();
    let mut last = 0;
    for run in 0..50 {
        let started = now_ms();
        let id: u64 = sm.ok(&["gen", "-n", "1"]).trim().parse().unwrap();
        assert!(id > last, "run {run}: {id} after {last}");
        last = id;
        let ms = twitter_ms(id);
        assert!(
            ms <= started + 1_000,
            "run {run}: id time {ms} is {} ms after it started",
            ms - started
        );
    }
}

#[test]
fn a_closed_pipe_ends_the_run_quietly() {
    let sm = Snowmint::new();
    let mut child = sm
        .command(&["gen", "-n", "1000000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader is dropped here, as `| head -1` would.
    let out = child.wait_with_output().unwrap();
    assert!(first.trim().parse::<u64>().is_ok(), "{first:?}");
    assert!(out.status.success(), "{}", out.status);
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    // The mark was released to the last id issued, not left at the reservation.
    let next: u64 = sm.ok(&["gen"]).trim().parse().unwrap();
    assert!(next > first.trim().parse().unwrap());
}

fn crash_leaving_a_mark(sm: &Snowmint, ahead_ms: u64) -> u64 {
    let path = FileStore::path_in(sm.state_dir(), &snowmint_lease::Fleet::default(), 0, 0);
    let mark = now_ms() + ahead_ms;
    FileStore::open(&path).unwrap().raise(mark).unwrap();
    mark
}

/// A crashed run left its reservation 3 s ahead: the next run waits it out (the default
/// rollback wait is 5 s) and issues only after it.
#[test]
fn after_a_crash_ids_come_after_the_mark() {
    let sm = Snowmint::new();
    let mark = crash_leaving_a_mark(&sm, 3_000);
    let out = sm.ok(&["gen", "-n", "3"]);
    let list = id_lines(&out);
    assert_eq!(list.len(), 3);
    assert!(strictly_increasing(&list));
    for id in list {
        assert!(
            twitter_ms(id) > mark,
            "id at {} is not after the mark {mark}",
            twitter_ms(id)
        );
    }
}

/// A mark further ahead than the rollback wait: an error naming the mark file, nothing
/// printed, the mark left as it was.
#[test]
fn after_a_crash_too_far_ahead_it_refuses() {
    let sm = Snowmint::new();
    let mark = crash_leaving_a_mark(&sm, 10_000);
    let out = sm.run(&["gen", "-n", "3"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(out.stdout.is_empty());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error: cannot issue ids after the high-water mark in "),
        "{stderr}"
    );
    assert!(
        stderr.contains("fleet.default-dc0-w0.mark: clock is "),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            " ms behind the newest id issued, more than the 5000 ms this generator waits"
        ),
        "{stderr}"
    );
    let path = FileStore::path_in(sm.state_dir(), &snowmint_lease::Fleet::default(), 0, 0);
    assert_eq!(FileStore::open(&path).unwrap().mark().unwrap(), Some(mark));
}

/// A mark file that holds no time is an error naming the file and what it holds: it is
/// never read as zero, which would let ids be issued twice.
#[test]
fn a_corrupt_mark_is_reported_not_ignored() {
    let sm = Snowmint::new();
    let path = FileStore::path_in(sm.state_dir(), &snowmint_lease::Fleet::default(), 0, 0);
    std::fs::write(&path, "garbage\n").unwrap();
    let out = sm.run(&["gen"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(out.stdout.is_empty());
    assert_eq!(
        stderr,
        format!(
            "error: mark file {} is corrupt: found \"garbage\\n\", expected milliseconds since the Unix epoch\n",
            path.display()
        )
    );
}

/// Ids of a custom layout with 10 ms ticks come back apart with the same options.
#[test]
fn a_custom_layout_with_10_ms_ticks_generates_and_parses_back() {
    let sm = Snowmint::new();
    let layout = ["--layout", "custom:39/0/10/14", "--tick-ms", "10"];
    let before = now_ms();
    let out = sm.ok(&[&["gen", "-n", "3", "--worker", "1000"][..], &layout[..]].concat());
    let after = now_ms();
    let ids = id_lines(&out);
    assert_eq!(ids.len(), 3, "{out}");
    assert!(strictly_increasing(&ids), "{out}");
    let texts: Vec<String> = ids.iter().map(u64::to_string).collect();
    let mut args = vec!["parse", "--json"];
    args.extend(texts.iter().map(String::as_str));
    args.extend(layout);
    let parsed = sm.ok(&args);
    for line in parsed.lines() {
        let row: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        assert_eq!(
            (row["datacenter"].as_u64(), row["worker"].as_u64()),
            (Some(0), Some(1000)),
            "{line}"
        );
        let ms = row["unix_ms"].as_u64().unwrap();
        assert!(
            ms % 10 == 1_288_834_974_657 % 10,
            "a 10 ms tick starts {ms}"
        );
        assert!(
            before - 10 <= ms && ms <= after,
            "{before} <= {ms} <= {after}"
        );
    }
    assert_eq!(parsed.lines().count(), 3, "{parsed}");
}

/// TSID uses all 64 bits: its ids generate, print in base32 and parse back.
#[test]
fn tsid_generates_base32_ids_that_parse_back() {
    let sm = Snowmint::new();
    let before = now_ms();
    let out = sm.ok(&[
        "gen", "--layout", "tsid", "-n", "3", "--format", "base32", "--worker", "7",
    ]);
    let after = now_ms();
    let texts: Vec<&str> = out.lines().collect();
    assert_eq!(texts.len(), 3, "{out}");
    assert!(texts.iter().all(|t| t.len() == 13), "{out}");
    assert!(texts.windows(2).all(|w| w[0] < w[1]), "{out}");
    let mut args = vec!["parse", "--json", "--layout", "tsid"];
    args.extend(&texts);
    let parsed = sm.ok(&args);
    let rows: Vec<serde_json::Value> = parsed
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 3, "{parsed}");
    for row in rows {
        assert_eq!(row["worker"].as_u64(), Some(7), "{row}");
        let ms = row["unix_ms"].as_u64().unwrap();
        assert!(before <= ms && ms <= after, "{before} <= {ms} <= {after}");
    }
}

/// Every preset that has not run out generates, the ones using bit 63 included.
#[test]
fn every_live_preset_generates() {
    for layout in Layout::PRESETS.into_iter().filter(|l| l.name() != "baidu") {
        let out = Snowmint::new().ok(&["gen", "--layout", layout.name(), "-n", "3"]);
        let ids = id_lines(&out);
        assert_eq!(ids.len(), 3, "{}: {out}", layout.name());
        assert!(strictly_increasing(&ids), "{}: {out}", layout.name());
    }
}
