//! `snowmint-chaos abuse` at a tiny size against the real `snowmint` built beside it: every
//! attack runs, the table comes out, and the server's answers are those its limits promise.

use std::path::Path;
use std::process::Command;

#[test]
fn abuse_runs_every_attack_and_reports_what_each_side_saw() {
    let chaos = Path::new(env!("CARGO_BIN_EXE_snowmint-chaos"));
    let snowmint = chaos.with_file_name("snowmint");
    assert!(
        snowmint.exists(),
        "{} is missing: cargo test --workspace builds it (or cargo build -p snowmint-cli)",
        snowmint.display()
    );
    let out = Command::new(chaos)
        .arg("abuse")
        .arg("--snowmint")
        .arg(&snowmint)
        .args(["--window-s", "2", "--rate", "50"])
        .args(["--slowloris", "20", "--dribble-ms", "200", "--idle", "50"])
        .args([
            "--attackers",
            "2",
            "--header-bytes",
            "20000",
            "--body-bytes",
            "100000",
        ])
        .args(["--h2-connections", "2", "--h2-streams", "10"])
        .args(["--attacks", "limits"])
        // A header timeout inside the window, so that its end is seen.
        .arg("--serve-arg=--header-read-timeout-ms=1000")
        .env_remove("SNOWMINT_CHAOS_SNOWMINT")
        .output()
        .expect("snowmint-chaos runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{stdout}\n{stderr}", out.status);
    let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with("| ")).collect();
    assert_eq!(rows.len(), 8, "a header and seven attacks:\n{stdout}");
    let row = |start: &str| {
        rows.iter()
            .find(|r| r.starts_with(&format!("| {start}")))
            .unwrap_or_else(|| panic!("no row for {start}:\n{stdout}"))
            .to_string()
    };
    // The well-behaved client was never refused, under any attack.
    for r in &rows[1..] {
        let cells: Vec<&str> = r.split(" | ").collect();
        assert_eq!(cells[3], "0", "client errors in {r}");
    }
    assert!(
        row("slowloris").contains("20 closed by the server after"),
        "{stdout}"
    );
    assert!(
        row("50 idle").contains("50 closed by the server after"),
        "{stdout}"
    );
    assert!(row("20000 header bytes").contains("HTTP 431"), "{stdout}");
    assert!(
        row("100000 body bytes with").contains("HTTP 413"),
        "{stdout}"
    );
    assert!(
        row("HTTP/2 zero window")
            .contains("20 streams answered with headers, 0 reset, 0 data bytes"),
        "{stdout}"
    );
}

#[test]
fn abuse_of_the_budget_leaves_room_for_a_client_that_reads() {
    let chaos = Path::new(env!("CARGO_BIN_EXE_snowmint-chaos"));
    let snowmint = chaos.with_file_name("snowmint");
    // A quarter of the default budget, attacked by streams of a quarter of the size; the
    // window runs past the 8 s the server has before the client is judged.
    let out = Command::new(chaos)
        .arg("abuse")
        .arg("--snowmint")
        .arg(&snowmint)
        .args(["--attacks", "budget", "--window-s", "1", "--rate", "20"])
        .args(["--budget-window-s", "10", "--budget-count", "16384"])
        .args([
            "--trickle-s",
            "5",
            "--crowd",
            "100",
            "--crowd-addresses",
            "4",
        ])
        .args([
            "--serve-arg=--max-ids-in-flight=1048576",
            "--serve-arg=--max-ids-in-flight-per-connection=100000",
        ])
        .env_remove("SNOWMINT_CHAOS_SNOWMINT")
        .output()
        .expect("snowmint-chaos runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // It fails when the small client saw an error 8 s into an attack or later.
    assert!(out.status.success(), "{}\n{stdout}\n{stderr}", out.status);
    let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with("| ")).collect();
    assert_eq!(
        rows.len(),
        6,
        "a header, the baseline and four attacks:\n{stdout}"
    );
    for row in &rows[2..] {
        let cells: Vec<&str> = row.split(" | ").collect();
        // The reader of large batches was served every time.
        assert!(
            cells[5].split(", ").nth(1) == Some("0"),
            "large reads failed in {row}"
        );
        // What the unread responses held was given back at their deadlines.
        assert_ne!(
            cells[7].trim_end_matches(" |"),
            "0",
            "nothing abandoned in {row}"
        );
    }
}
