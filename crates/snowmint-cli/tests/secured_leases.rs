//! `snowmint serve --lease` against registries in their production form: etcd over https
//! with client certificates and etcd's users and roles, ZooKeeper over TLS with a digest
//! user and its ACL. The server gets a worker id and issues; a wrong setup leaves it not
//! ready, saying in one line which registry, which host and which check failed, without
//! the password.

use crate::support;

use std::time::Duration;

use snowmint_testkit::{Etcd, Pki, ZooKeeper, eventually};

/// Serves with `url`, waits until ready, and checks it issues ids and shows the lease's
/// backend held, the URL nowhere with a password.
fn serves_with(url: &str, backend: &str, password_file: &std::path::Path) {
    let state = tempfile::tempdir().unwrap();
    let args = [
        "--grpc-addr",
        "off",
        "--lease",
        url,
        "--identity",
        "secured",
    ];
    let mut serve = support::spawn_logged(support::serve_command(state.path(), &args));
    serve.wait_ready(Duration::from_secs(30));

    let (status, body) = serve.get("/v1/id");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"id\""), "{body}");
    let (_, layout) = serve.get("/v1/layout");
    let layout: serde_json::Value = serde_json::from_str(&layout).unwrap();
    assert_eq!(
        (&layout["lease"]["backend"], &layout["lease"]["state"]),
        (&backend.into(), &"held".into()),
        "{layout}"
    );
    let password = std::fs::read_to_string(password_file).unwrap();
    let (_, metrics) = serve.get("/metrics");
    let status = serve.terminate();
    let logged = serve.logged();
    assert!(status.success(), "exit status {status}\n{logged}");
    for shown in [&layout.to_string(), &metrics, &logged] {
        assert!(
            !shown.contains(password.trim()),
            "the password is shown:\n{shown}"
        );
    }
}

/// etcd with `--client-cert-auth` and its authentication enabled: the user `snowmint`,
/// whose role may use `/snowmint/` only, gets a worker id over https.
#[test]
fn a_secured_etcd_gives_a_worker_id() {
    let pki = Pki::new();
    let etcd = Etcd::start_secured(&pki);
    serves_with(&etcd.url(), "etcd", &etcd.password_file());
}

/// ZooKeeper's TLS port with client certificates, and a digest user: a worker id.
#[test]
fn a_secured_zookeeper_gives_a_worker_id() {
    let pki = Pki::new();
    let zookeeper = ZooKeeper::start_secured(&pki);
    serves_with(&zookeeper.url(), "zookeeper", &zookeeper.password_file());
}

/// A wrong password, given in the URL: the server starts, is not ready, says why in
/// `/readyz` and in a log line naming the registry, the member and the check, and shows
/// the password nowhere (`--help` with the URL in the environment included).
#[test]
fn a_wrong_password_leaves_the_server_not_ready_saying_why() {
    let pki = Pki::new();
    let etcd = Etcd::start_secured(&pki);
    let client = etcd.client();
    let url = format!(
        "etcds://snowmint:wr0ng-s3cret@127.0.0.1:{}?tls_ca={}&tls_cert={}&tls_key={}",
        etcd.port(),
        etcd.ca().display(),
        client.cert.display(),
        client.key.display()
    );
    let check = format!(
        "etcd registry is unavailable: 127.0.0.1:{}: authentication failed: wrong user name or password (user snowmint)",
        etcd.port()
    );
    let state = tempfile::tempdir().unwrap();
    let args = [
        "--grpc-addr",
        "off",
        "--lease",
        &url,
        "--identity",
        "refused",
    ];
    let mut serve = support::spawn_logged(support::serve_command(state.path(), &args));
    let said = eventually(
        Duration::from_secs(20),
        "/readyz saying why",
        || match serve.get("/readyz") {
            (503, body) if body.contains(&check) => Ok(body),
            (status, body) => Err(format!("{status} {body}")),
        },
    );
    assert!(said.contains("not ready"), "{said}");
    let (status, _) = serve.get("/v1/id");
    assert_eq!(status, 503, "no id without a confirmed lease");
    serve.terminate();
    let logged = serve.logged();
    let line = logged
        .lines()
        .find(|line| line.contains(&check))
        .unwrap_or_else(|| panic!("no log line says {check:?}:\n{logged}"));
    assert!(line.contains("cannot acquire a worker id"), "{line}");
    assert!(!logged.contains("wr0ng-s3cret"), "{logged}");

    let help = std::process::Command::new(env!("CARGO_BIN_EXE_snowmint"))
        .args(["serve", "--help"])
        .env("SNOWMINT_LEASE", &url)
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("etcd[s]://"), "{help}");
    assert!(!help.contains("wr0ng-s3cret"), "{help}");
}
