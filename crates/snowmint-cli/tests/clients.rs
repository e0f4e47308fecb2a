//! The clients in other languages (`clients/<language>/`), each run by its own `test.sh`
//! against a real `snowmint serve` on a free loopback port, and a second one over mutual
//! TLS, with the shared test vectors; and their preset tables, which `scripts/gen-clients` writes from
//! those vectors.
//!
//! A toolchain that is missing fails its test here: `scripts/setup` installs them all.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use snowmint_client::{Client, Tls, Transport};
use snowmint_testkit::{Pair, Pki, eventually};
use support::{Serve, serve_command, spawn_logged};

/// The flags every server of these tests runs with: the ids the clients' tests expect.
const SERVER_FLAGS: [&str; 6] = ["--grpc-addr", "off", "--datacenter", "1", "--worker", "7"];

/// `snowmint serve` over TLS with a certificate of its own CA, asking clients for a
/// certificate of the same CA (mutual TLS), for every suite at once.
struct TlsServer {
    /// `https://127.0.0.1:PORT`: an address its certificate names (as `localhost` and
    /// `::1`), with no name to resolve.
    url: String,
    pki: Pki,
    /// The client certificate the suites present.
    client: Pair,
    /// Killed when the last suite drops the server.
    _serve: Mutex<Serve>,
    _state: tempfile::TempDir,
}

impl TlsServer {
    /// The one running, or a new one: the suites that run at the same time share it, and it
    /// stops when the last of them is done with it.
    fn shared() -> Arc<TlsServer> {
        static SHARED: Mutex<Weak<TlsServer>> = Mutex::new(Weak::new());
        let mut shared = SHARED
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(running) = shared.upgrade() {
            return running;
        }
        let started = Arc::new(TlsServer::start());
        *shared = Arc::downgrade(&started);
        started
    }

    fn start() -> TlsServer {
        let pki = Pki::new();
        let (pair, presented) = (pki.server(), pki.client("clients"));
        let state = tempfile::tempdir().unwrap();
        let mut cmd = serve_command(state.path(), &SERVER_FLAGS);
        cmd.arg("--tls-cert")
            .arg(&pair.cert)
            .arg("--tls-key")
            .arg(&pair.key)
            .arg("--tls-client-ca")
            .arg(pki.ca());
        let serve = spawn_logged(cmd);
        let url = format!("https://{}", serve.http);
        // Ready once an id comes over TLS: `/readyz` is behind TLS too.
        let client = Client::builder()
            .endpoints([url.as_str()])
            .transport(Transport::Http)
            .tls(
                Tls::new()
                    .ca_pem_file(pki.ca())
                    .unwrap()
                    .identity_pem_files(&presented.cert, &presented.key)
                    .unwrap(),
            )
            .build_blocking()
            .unwrap();
        eventually(Duration::from_secs(15), "an id over TLS", || {
            client.next_id()
        });
        TlsServer {
            url,
            pki,
            client: presented,
            _serve: Mutex::new(serve),
            _state: state,
        }
    }
}

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `clients/<language>/test.sh` against a server of datacenter 1, worker 7, and the
/// shared one over mutual TLS.
fn run_suite(language: &str) {
    let state = tempfile::tempdir().unwrap();
    let mut serve = spawn_logged(serve_command(state.path(), &SERVER_FLAGS));
    let tls = TlsServer::shared();
    serve.wait_ready(Duration::from_secs(15));
    let script = root().join("clients").join(language).join("test.sh");
    assert!(script.exists(), "{} is missing", script.display());
    let started = Instant::now();
    let out = Command::new("bash")
        .arg(&script)
        .env("SNOWMINT_URL", format!("http://{}", serve.http))
        .env("SNOWMINT_TLS_URL", &tls.url)
        .env("SNOWMINT_CA", tls.pki.ca())
        .env("SNOWMINT_CLIENT_CERT", &tls.client.cert)
        .env("SNOWMINT_CLIENT_KEY", &tls.client.key)
        .env(
            "SNOWMINT_VECTORS",
            root().join("testdata/vectors.json").canonicalize().unwrap(),
        )
        // Every call goes to loopback: a proxy set for the machine must not take it.
        .env_remove("http_proxy")
        .env_remove("HTTP_PROXY")
        .env_remove("https_proxy")
        .env_remove("HTTPS_PROXY")
        .env_remove("all_proxy")
        .env_remove("ALL_PROXY")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{language} client tests failed ({:?}):\n{stdout}\n{stderr}",
        out.status
    );
    eprintln!(
        "{language} client tests passed in {:.1} s:\n{}",
        started.elapsed().as_secs_f64(),
        stdout.lines().rev().take(3).collect::<Vec<_>>().join("\n")
    );
    assert!(serve.terminate().success());
}

#[test]
fn javascript() {
    run_suite("js");
}

#[test]
fn python() {
    run_suite("python");
}

#[test]
fn java() {
    run_suite("java");
}

#[test]
fn go() {
    run_suite("go");
}

#[test]
fn ruby() {
    run_suite("ruby");
}

#[test]
fn php() {
    run_suite("php");
}

/// Each client's preset table is what `scripts/gen-clients` writes from
/// `testdata/vectors.json`: a preset changed in the core reaches every client, or this fails.
#[test]
fn the_clients_presets_are_generated_from_the_vectors() {
    let script = root().join("scripts/gen-clients");
    let out = Command::new("python3")
        .arg(&script)
        .arg("--check")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    assert!(out.status.success(), "{}", support::printed(&out));
}
