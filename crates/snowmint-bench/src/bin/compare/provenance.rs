//! Where and how the run happened: machine, command, revisions.

use std::fmt::Write as _;
use std::process::Command;

/// CPU model, CPU count, kernel and clock source.
pub fn machine() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cpus = run("nproc", &[]).unwrap_or_else(|| {
        std::thread::available_parallelism().map_or("?".into(), |n| n.to_string())
    });
    let kernel = run("uname", &["-r"]).unwrap_or_else(|| "?".into());
    let clocksource =
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .map_or_else(|_| "?".into(), |s| s.trim().to_owned());
    format!("{model}, nproc {cpus}, kernel {kernel}, clocksource {clocksource}")
}

fn run(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The command that reproduces this run.
pub fn command() -> String {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut c = String::new();
    for (key, value) in std::env::vars().filter(|(k, _)| k.starts_with("SNOWMINT_BENCH_")) {
        let _ = write!(c, "{key}={value} ");
    }
    c.push_str("cargo run --release -p snowmint-bench --bin compare");
    if !args.is_empty() {
        c.push_str(" -- ");
        c.push_str(&args.join(" "));
    }
    c
}

/// The workspace's commit, and whether the core crate differs from it.
pub fn snowmint_revision() -> String {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let Some(commit) = run("git", &["-C", root, "rev-parse", "--short", "HEAD"]) else {
        return "commit unknown".into();
    };
    let changed = run(
        "git",
        &["-C", root, "status", "--porcelain", "--", "crates/snowmint"],
    )
    .map_or("unknown", |s| if s.is_empty() { "none" } else { "yes" });
    format!("commit {commit}, uncommitted changes in crates/snowmint: {changed}")
}

/// The peers' versions, from the workspace's lock file when it is there.
pub fn peer_versions() -> String {
    let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.lock"))
        .unwrap_or_default();
    ["ferroid", "snowdon", "rs-snowflake"]
        .iter()
        .map(|name| {
            let needle = format!("name = \"{name}\"\nversion = \"");
            let version = lock.find(&needle).map_or("?", |at| {
                let rest = &lock[at + needle.len()..];
                &rest[..rest.find('"').unwrap_or(0)]
            });
            format!("{name} {version}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}
