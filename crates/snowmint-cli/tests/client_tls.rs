//! `snowmint-client` over TLS against real `snowmint serve --tls-cert ... --tls-key ...`
//! processes on loopback, with certificates of the test kit's `Pki`: ids over gRPC and HTTP
//! with the bearer token; a client without the CA, or dialing a name the certificate does
//! not hold, refused in words; with `--tls-client-ca`, a client without its certificate
//! refused.

use crate::support;

use std::path::Path;
use std::time::Duration;

use snowmint_client::{Client, Error, Tls, Transport};
use snowmint_testkit::{Pair, Pki, eventually};
use support::{Serve, serve_command, spawn_logged};

const TOKEN: &str = "tls-test-token";

/// `snowmint serve` with gRPC too, over TLS with `pair`, a bearer token, and `extra` flags.
fn start(state: &Path, pair: &Pair, extra: &[&str]) -> Serve {
    let mut cmd = serve_command(
        state,
        &[
            "--grpc-addr",
            "127.0.0.1:0",
            "--auth-token",
            TOKEN,
            "--worker",
            "5",
        ],
    );
    cmd.arg("--tls-cert")
        .arg(&pair.cert)
        .arg("--tls-key")
        .arg(&pair.key)
        .args(extra);
    spawn_logged(cmd)
}

/// `https://localhost:PORT` of gRPC, then of HTTP.
fn urls(serve: &Serve) -> [(Transport, String); 2] {
    let grpc = serve.grpc.expect("a gRPC address").port();
    [
        (Transport::Grpc, format!("https://localhost:{grpc}")),
        (
            Transport::Http,
            format!("https://localhost:{}", serve.http.port()),
        ),
    ]
}

fn client(transport: Transport, url: &str, tls: Option<Tls>) -> snowmint_client::blocking::Client {
    let builder = Client::builder()
        .endpoints([url])
        .transport(transport)
        .auth_token(TOKEN);
    match tls {
        Some(tls) => builder.tls(tls),
        None => builder,
    }
    .build_blocking()
    .unwrap()
}

/// The error of a call that cannot succeed, as one line.
fn refused(client: &snowmint_client::blocking::Client) -> String {
    match client.next_id() {
        Ok(id) => panic!("an id came: {id:?}"),
        Err(e @ Error::Unavailable(_)) => e.to_string(),
        Err(other) => panic!("not an outage: {other}"),
    }
}

/// Waits until an id comes with `tls` over HTTP: the server is up and ready.
fn wait_ready(serve: &Serve, tls: Tls) {
    let client = client(Transport::Http, &urls(serve)[1].1, Some(tls));
    eventually(Duration::from_secs(15), "an id over TLS", || {
        client.next_id()
    });
}

#[test]
fn ids_come_over_grpc_and_http_with_tls_and_the_token() {
    let (pki, state) = (Pki::new(), tempfile::tempdir().unwrap());
    let serve = start(state.path(), &pki.server(), &[]);
    let ca = || Tls::new().ca_pem_file(pki.ca()).unwrap();
    wait_ready(&serve, ca());
    for (transport, url) in urls(&serve) {
        let client = client(transport, &url, Some(ca()));
        let first = client.next_id().unwrap();
        let batch = client.next_ids(1000).unwrap();
        assert_eq!(batch.len(), 1000, "{transport:?}");
        assert!(first < batch[0], "{transport:?}");
        assert!(batch.windows(2).all(|w| w[0] < w[1]), "{transport:?}");
        let worker = snowmint::Layout::TWITTER.decode(first).unwrap().worker;
        assert_eq!(worker, 5, "{transport:?}");
        // The token goes over TLS as over plain TCP: without it, the server refuses.
        let tokenless = Client::builder()
            .endpoints([url.as_str()])
            .transport(transport)
            .tls(ca())
            .build_blocking()
            .unwrap();
        let error = refused(&tokenless);
        assert!(error.contains("bearer token"), "{transport:?}: {error}");
    }
}

#[test]
fn a_client_without_the_ca_is_told_the_certificate_is_not_trusted() {
    let (pki, state) = (Pki::new(), tempfile::tempdir().unwrap());
    let serve = start(state.path(), &pki.server(), &[]);
    wait_ready(&serve, Tls::new().ca_pem_file(pki.ca()).unwrap());
    for (transport, url) in urls(&serve) {
        let untrusted = "TLS handshake failed: the server's certificate is not trusted: no CA \
                         the client trusts signed it (name the servers' CA with Tls::ca_pem_file)";
        // The system's CAs, then a CA that signed someone else's certificate.
        let system = client(transport, &url, None);
        let foreign = client(
            transport,
            &url,
            Some(Tls::new().ca_pem_file(pki.foreign_ca()).unwrap()),
        );
        for client in [system, foreign] {
            assert_eq!(
                refused(&client),
                format!("no endpoint gave ids: {url} ({untrusted})"),
                "{transport:?}"
            );
        }
    }
}

#[test]
fn a_certificate_for_another_name_is_refused_unless_that_name_is_given() {
    let (pki, state) = (Pki::new(), tempfile::tempdir().unwrap());
    let serve = start(state.path(), &pki.server_for(&["ids.internal"]), &[]);
    let ca = || Tls::new().ca_pem_file(pki.ca()).unwrap();
    wait_ready(&serve, ca().domain_name("ids.internal"));
    for (transport, url) in urls(&serve) {
        let error = refused(&client(transport, &url, Some(ca())));
        assert!(
            error.contains(
                "TLS handshake failed: the server's certificate is not valid for the name \
                 dialed: certificate not valid for name \"localhost\"; certificate is only \
                 valid for DnsName(\"ids.internal\")"
            ),
            "{transport:?}: {error}"
        );
        let named = client(transport, &url, Some(ca().domain_name("ids.internal")));
        named.next_id().unwrap();
    }
}

#[test]
fn a_certificate_and_a_key_that_do_not_belong_together_are_named() {
    let pki = Pki::new();
    let (one, other) = (pki.client("one"), pki.client("other"));
    let error = Client::builder()
        .endpoints(["https://localhost:1"])
        .tls(
            Tls::new()
                .identity_pem_files(&one.cert, &other.key)
                .unwrap(),
        )
        .build_blocking()
        .unwrap_err();
    assert!(matches!(error, Error::Tls(_)), "{error:?}");
    let text = error.to_string();
    assert!(
        text.starts_with(&format!(
            "tls: client certificate file {} and client key file {}: ",
            one.cert.display(),
            other.key.display()
        )),
        "{text}"
    );
}

#[test]
fn with_mutual_tls_only_a_client_with_a_certificate_of_the_ca_gets_ids() {
    let (pki, state) = (Pki::new(), tempfile::tempdir().unwrap());
    let ca = pki.ca().to_str().unwrap().to_string();
    let serve = start(state.path(), &pki.server(), &["--tls-client-ca", &ca]);
    let (ours, foreign) = (pki.client("app"), pki.foreign_client("intruder"));
    let with = |pair: &Pair| {
        Tls::new()
            .ca_pem_file(pki.ca())
            .unwrap()
            .identity_pem_files(&pair.cert, &pair.key)
            .unwrap()
    };
    wait_ready(&serve, with(&ours));
    for (transport, url) in urls(&serve) {
        let ids = client(transport, &url, Some(with(&ours)))
            .next_ids(100)
            .unwrap();
        assert_eq!(ids.len(), 100, "{transport:?}");
        let anonymous = client(
            transport,
            &url,
            Some(Tls::new().ca_pem_file(pki.ca()).unwrap()),
        );
        assert_eq!(
            refused(&anonymous),
            format!(
                "no endpoint gave ids: {url} (TLS handshake failed: the server requires a client \
                 certificate (give one with Tls::identity_pem_files))"
            ),
            "{transport:?}"
        );
        assert_eq!(
            refused(&client(transport, &url, Some(with(&foreign)))),
            format!(
                "no endpoint gave ids: {url} (TLS handshake failed: the server refused the client \
                 certificate: UnknownCA)"
            ),
            "{transport:?}"
        );
    }
}
