//! Runs the real `snowmint` binary with a state directory of its own.

use std::path::Path;
use std::process::{Command, Output};

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
