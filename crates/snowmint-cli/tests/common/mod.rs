//! Runs the real `snowmint` binary with a state directory of its own.
#![allow(dead_code)] // each test file uses its own part of this

use std::path::Path;
use std::process::{Command, Output};
use std::time::{SystemTime, UNIX_EPOCH};

use snowmint::{Id, Layout};

/// A `snowmint` with a fresh state directory and no `SNOWMINT_*` variables from outside.
pub struct Snowmint {
    state: tempfile::TempDir,
}

impl Snowmint {
    pub fn new() -> Snowmint {
        Snowmint {
            state: tempfile::tempdir().expect("temp dir"),
        }
    }

    pub fn state_dir(&self) -> &Path {
        self.state.path()
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_snowmint"));
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("SNOWMINT_") {
                command.env_remove(key);
            }
        }
        command
            .env("SNOWMINT_STATE_DIR", self.state.path())
            .args(args);
        command
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("snowmint runs")
    }

    /// Runs and expects success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "snowmint {args:?} failed with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8 output")
    }
}

pub fn now_ms() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970");
    u64::try_from(since.as_millis()).expect("fits")
}

/// The time of a decimal Twitter-layout id, in ms since the Unix epoch.
pub fn twitter_ms(id: u64) -> u64 {
    Layout::TWITTER
        .decode(Id::from_u64(id))
        .expect("a twitter id")
        .unix_ms
}

/// Lines of decimal ids.
pub fn ids(stdout: &str) -> Vec<u64> {
    stdout
        .lines()
        .map(|line| {
            line.parse()
                .unwrap_or_else(|_| panic!("not a decimal id: {line:?}"))
        })
        .collect()
}

pub fn strictly_increasing(ids: &[u64]) -> bool {
    ids.windows(2).all(|w| w[0] < w[1])
}
