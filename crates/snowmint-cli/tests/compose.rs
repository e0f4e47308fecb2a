//! `snowmint compose` and `snowmint at`, run as real processes.

use crate::support;

use support::Snowmint;

/// Discord's documentation: 175928847299117063 is 2016-04-30 11:18:25.796 UTC, worker 1,
/// process 0, increment 7.
#[test]
fn compose_makes_discords_documented_id() {
    let sm = Snowmint::new();
    for time in [
        "1462015105796",
        "2016-04-30T11:18:25.796Z",
        "2016-04-30T13:18:25.796+02:00",
    ] {
        let out = sm.ok(&[
            "compose",
            "--layout",
            "discord",
            "--time",
            time,
            "--worker",
            "1",
            "--sequence",
            "7",
        ]);
        assert_eq!(out, "175928847299117063\n", "{time}");
    }
    let hex = sm.ok(&[
        "compose",
        "--layout",
        "discord",
        "--time",
        "1462015105796",
        "--worker",
        "1",
        "--sequence",
        "7",
        "--format",
        "hex",
    ]);
    assert_eq!(hex, "0x0271065ac1020007\n");
}

#[test]
fn compose_then_parse_gives_the_parts_back() {
    let sm = Snowmint::new();
    let id = sm.ok(&[
        "compose",
        "--time",
        "2024-01-01T00:00:00Z",
        "--datacenter",
        "3",
        "--worker",
        "31",
        "--sequence",
        "4095",
    ]);
    let parsed = sm.ok(&["parse", id.trim(), "--json"]);
    assert!(
        parsed.ends_with(
            r#""unix_ms":1704067200000,"time":"2024-01-01T00:00:00.000Z","datacenter":3,"worker":31,"sequence":4095}
"#
        ),
        "{parsed}"
    );
}

#[test]
fn compose_defaults_to_now() {
    let sm = Snowmint::new();
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let id: u64 = sm.ok(&["compose"]).trim().parse().unwrap();
    let unix_ms = (id >> 22) + 1_288_834_974_657;
    assert!(unix_ms >= before, "{unix_ms} < {before}");
    assert_eq!(id & ((1 << 22) - 1), 0);
}

#[test]
fn at_prints_the_first_and_last_id_of_the_instant() {
    let out = Snowmint::new().ok(&["at", "2024-01-01T00:00:00Z"]);
    assert_eq!(
        out,
        "first  1741610183685046272\nlast   1741610183689240575\n"
    );
    let sonyflake = Snowmint::new().ok(&["at", "1704067200000", "--layout", "sonyflake"]);
    let ids: Vec<u64> = sonyflake
        .lines()
        .map(|l| l.split_whitespace().nth(1).unwrap().parse().unwrap())
        .collect();
    // Sonyflake's 10 ms tick: the sequence (8 bits) sits above the 16-bit machine id.
    assert_eq!(ids[1] - ids[0], (1 << 24) - 1, "{sonyflake}");
}

fn rejects(args: &[&str], expected: &str) {
    let out = Snowmint::new().run(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "snowmint {args:?}: {stderr}");
    assert!(out.stdout.is_empty(), "{args:?}");
    assert_eq!(stderr.trim_end(), format!("error: {expected}"), "{args:?}");
}

#[test]
fn out_of_range_parts_are_named_with_their_range() {
    rejects(
        &["compose", "--worker", "32"],
        "cannot compose an id: worker id 32 is out of range 0..=31",
    );
    rejects(
        &["compose", "--datacenter", "40"],
        "cannot compose an id: datacenter id 40 is out of range 0..=31",
    );
    rejects(
        &["compose", "--sequence", "4096"],
        "cannot compose an id: sequence 4096 is out of range 0..=4095",
    );
    rejects(
        &["compose", "--time", "0"],
        "cannot compose an id: time 1970-01-01T00:00:00.000Z is outside the layout's range \
         2010-11-04T01:42:54.657Z..=2080-07-10T17:30:30.208Z",
    );
    rejects(
        &["at", "2000-01-01T00:00:00Z"],
        "cannot give the ids of 2000-01-01T00:00:00Z: time 2000-01-01T00:00:00.000Z is \
         outside the layout's range 2010-11-04T01:42:54.657Z..=2080-07-10T17:30:30.208Z",
    );
    rejects(
        &["at", "soon"],
        "time \"soon\" is neither milliseconds since the Unix epoch nor an RFC 3339 time: \
         failed to parse four digit integer as year: invalid digit, expected 0-9 but got s",
    );
}
