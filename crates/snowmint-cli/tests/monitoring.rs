//! `deploy/prometheus/alerts.yml` and `deploy/grafana/snowmint.json`: promtool checks the
//! rules and runs their tests, and every metric they name is served by a live
//! `snowmint serve`, so that renaming a metric fails here rather than silence an alert.

use crate::support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use snowmint_testkit::{Pki, Redis};
use support::{LeaseTimes, serve_builder, spawn_logged};

fn deploy(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy")
        .join(file)
}

/// `promtool ARGS` in `deploy/prometheus`, whose absence fails the test: `scripts/setup`
/// installs it (Debian's prometheus package).
fn promtool(args: &[&str]) -> String {
    let out = Command::new("promtool")
        .args(args)
        .current_dir(deploy("prometheus"))
        .output()
        .expect("promtool runs (Debian's prometheus package; scripts/setup installs it)");
    let said = support::printed(&out);
    assert!(out.status.success(), "promtool {args:?}:\n{said}");
    said
}

#[test]
fn promtool_checks_the_rules_and_passes_their_tests() {
    let checked = promtool(&["check", "rules", "alerts.yml"]);
    assert!(checked.contains("SUCCESS: 11 rules found"), "{checked}");
    let tested = promtool(&["test", "rules", "alerts.test.yml"]);
    assert!(tested.contains("SUCCESS"), "{tested}");
}

/// Every `snowmint_...` name in `text`.
fn names_in(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("snowmint_") {
        let name: String = rest[at..]
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || *c == '_')
            .collect();
        rest = &rest[at + name.len()..];
        names.insert(name);
    }
    names
}

#[test]
fn every_metric_the_rules_and_the_dashboard_name_is_served() {
    let rules = std::fs::read_to_string(deploy("prometheus/alerts.yml")).unwrap();
    let dashboard = std::fs::read_to_string(deploy("grafana/snowmint.json")).unwrap();
    let wanted: BTreeSet<String> = names_in(&rules)
        .into_iter()
        .chain(names_in(&dashboard))
        .collect();
    assert!(wanted.len() >= 15, "{wanted:?}");

    // A server with everything the rules look at: a lease that expires (Redis), TLS, and
    // the admin port, where the deploy files point the scrapes.
    let pki = Pki::new();
    let pair = pki.server();
    let redis = Redis::start();
    let state = tempfile::tempdir().unwrap();
    let (cert, key) = (pair.cert.to_str().unwrap(), pair.key.to_str().unwrap());
    let serve = spawn_logged(
        serve_builder(state.path())
            .lease(&redis.url(), "monitoring", LeaseTimes::SHORT)
            .args(["--tls-cert", cert, "--tls-key", key])
            .args(["--admin-addr", "127.0.0.1:0"])
            .command(),
    );
    let admin = serve.admin.expect("the server logs its admin address");
    // The body of `path` at `port` over TLS, or what curl said.
    let get_at = |port: u16, path: &str| {
        let out = Command::new("curl")
            .args(["--silent", "--show-error", "--fail", "--max-time", "10"])
            .arg("--cacert")
            .arg(pki.ca())
            .arg(format!("https://localhost:{port}{path}"))
            .output()
            .expect("curl runs");
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(format!("{path}: {}", String::from_utf8_lossy(&out.stderr)))
        }
    };
    let curl = |port: u16, path: &str| get_at(port, path).unwrap_or_else(|err| panic!("{err}"));
    snowmint_testkit::eventually(std::time::Duration::from_secs(20), "ready", || {
        get_at(admin.port(), "/readyz").map(drop)
    });
    curl(serve.http.port(), "/v1/id");
    let metrics = curl(admin.port(), "/metrics");
    // The admin port speaks TLS as the HTTP port does, with the same certificate.
    assert!(
        metrics.contains("snowmint_tls_certificate_expiry_timestamp_seconds{port=\"admin\"}"),
        "{metrics}"
    );
    let served: BTreeSet<String> = metrics
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.split(['{', ' ']).next())
        .map(str::to_string)
        .collect();
    let missing: Vec<&String> = wanted.difference(&served).collect();
    assert!(
        missing.is_empty(),
        "named by the rules or the dashboard but not served: {missing:?}\n{metrics}"
    );
}
