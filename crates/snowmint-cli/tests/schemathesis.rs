//! schemathesis against a real `snowmint serve` on loopback: requests generated from the
//! server's own `/openapi.json`, those it allows and those it does not, with every check
//! on (no 5xx; status codes, content types, headers and bodies as declared; requests the
//! document allows are accepted, those it does not are refused; the bearer token is
//! required). What may answer 400 to a request the document allows, and why, is in
//! `tests/schemathesis/schemathesis.toml`; `tests/schemathesis/hooks.py` adds a check that
//! such a refusal is never one a single parameter's schema could have prevented.
//!
//! schemathesis runs from the virtual environment `scripts/setup` makes under the target
//! directory, pinned there. The examples are bounded so the run takes well under a minute.

use crate::support;

use std::path::Path;
use std::process::Command;

use support::{serve_command, spawn_logged};

/// Test cases per operation and phase: enough to reach each parameter's edges (the
/// coverage phase tries those whatever this is), few enough for CI.
const EXAMPLES: &str = "100";
/// The seed, so a failure seen in CI is the one a developer sees; another may be given
/// with `SNOWMINT_TEST_SCHEMATHESIS_SEED`.
const SEED: &str = "14";
const TOKEN: &str = "schemathesis-token";

#[test]
fn schemathesis_finds_no_server_error_and_no_broken_promise_of_the_document() {
    let schemathesis = support::setup_tool("schemathesis-venv/bin/schemathesis");
    let state = tempfile::tempdir().unwrap();
    let serve = spawn_logged(serve_command(
        state.path(),
        &["--grpc-addr", "127.0.0.1:0", "--auth-token", TOKEN],
    ));
    let seed = std::env::var("SNOWMINT_TEST_SCHEMATHESIS_SEED").unwrap_or_else(|_| SEED.into());
    let reports = tempfile::tempdir().unwrap();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schemathesis");
    let out = Command::new(&schemathesis)
        .arg("--config-file")
        .arg(dir.join("schemathesis.toml"))
        .arg("--no-color")
        .arg("run")
        .arg(format!("http://{}/openapi.json", serve.http))
        .args(["--checks", "all"])
        .args(["--header", &format!("Authorization: Bearer {TOKEN}")])
        .args(["--max-examples", EXAMPLES, "--seed", &seed])
        .args(["--workers", "2", "--request-timeout", "10"])
        .arg("--report-dir")
        .arg(reports.path())
        // Keep schemathesis's own files (its cache, its replay log) out of the tree.
        .current_dir(reports.path())
        .env("SCHEMATHESIS_HOOKS", dir.join("hooks.py"))
        .output()
        .expect("schemathesis runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "schemathesis failed ({}), seed {seed}:\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    // The figures, for `--nocapture`.
    for line in stdout
        .lines()
        .filter(|l| l.contains("generated") || l.contains("Seed:"))
    {
        eprintln!("schemathesis: {}", line.trim());
    }
    // It tested every operation the document declares but the document itself, and the
    // server kept serving.
    assert!(stdout.contains("Tested: 12"), "{stdout}");
    assert_eq!(serve.get("/healthz").0, 200);
}
