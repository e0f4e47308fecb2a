//! `snowmint serve --tls-cert --tls-key` as a real process: HTTP/1.1, HTTP/2 and gRPC over
//! TLS on the ports that speak them in plain text, and `curl --cacert` as a user would.

mod support;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use snowmint_testkit::{Pair, Pki};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use support::{Serve, serve_command, spawn_logged};

/// `snowmint serve` with gRPC on, serving TLS with `pair`, and `extra` flags.
fn start(state: &Path, pair: &Pair, extra: &[&str]) -> Serve {
    let mut args = vec!["--grpc-addr", "127.0.0.1:0", "--tls-cert"];
    args.push(pair.cert.to_str().unwrap());
    args.push("--tls-key");
    args.push(pair.key.to_str().unwrap());
    args.extend(extra);
    spawn_logged(serve_command(state, &args))
}

/// A client that trusts `ca`, presents `client` if given, and offers `alpn`.
fn client(ca: &Path, client: Option<&Pair>, alpn: &[&[u8]]) -> Arc<ClientConfig> {
    snowmint_lease::TlsFiles {
        ca: Some(ca.to_path_buf()),
        cert: client.map(|p| p.cert.clone()),
        key: client.map(|p| p.key.clone()),
    }
    .client_config(alpn)
    .unwrap()
}

/// A TLS connection to `addr` as `localhost`.
async fn connect(
    addr: SocketAddr,
    config: Arc<ClientConfig>,
) -> std::io::Result<TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(addr).await?;
    let name = ServerName::try_from("localhost").unwrap();
    TlsConnector::from(config).connect(name, tcp).await
}

/// `GET path` over HTTP/1.1 on `stream`, closing after: the status and the body.
async fn get_http1<S>(stream: &mut S, path: &str) -> std::io::Result<(u16, String)>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .await?;
    let mut response = Vec::new();
    match stream.read_to_end(&mut response).await {
        Ok(_) => {}
        // A peer that closes without close_notify: what came before it is the response.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !response.is_empty() => {}
        Err(e) => return Err(e),
    }
    let response = String::from_utf8_lossy(&response);
    let status = response
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Ok((status, body))
}

/// `GET path` over HTTP/2 on a TLS connection to `addr` that chose `h2` in ALPN.
async fn get_h2(addr: SocketAddr, config: Arc<ClientConfig>, path: &str) -> (u16, String) {
    let tls = connect(addr, config).await.unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (mut client, connection) = h2::client::handshake(tls).await.unwrap();
    tokio::spawn(connection);
    let request = http::Request::get(format!("https://localhost{path}"))
        .body(())
        .unwrap();
    let (response, _) = client.send_request(request, true).unwrap();
    let response = response.await.unwrap();
    let status = response.status().as_u16();
    let mut body = response.into_body();
    let mut bytes = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        let _ = body.flow_control().release_capacity(chunk.len());
        bytes.extend_from_slice(&chunk);
    }
    (status, String::from_utf8(bytes).unwrap())
}

/// A gRPC client over TLS to `addr`.
async fn grpc_client(
    addr: SocketAddr,
    config: Arc<ClientConfig>,
) -> snowmint_proto::v1::id_service_client::IdServiceClient<tonic::transport::Channel> {
    let channel = tonic::transport::Endpoint::from_static("http://localhost")
        .connect_with_connector(tower::service_fn(move |_| {
            let config = Arc::clone(&config);
            async move {
                connect(addr, config)
                    .await
                    .map(hyper_util::rt::TokioIo::new)
            }
        }))
        .await
        .unwrap();
    snowmint_proto::v1::id_service_client::IdServiceClient::new(channel)
}

fn id_of(body: &str) -> u64 {
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_else(|_| panic!("{body}"));
    v["id"].as_str().unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http1_h2_and_grpc_answer_over_tls() {
    let pki = Pki::new();
    let state = tempfile::tempdir().unwrap();
    let mut serve = start(state.path(), &pki.server(), &[]);
    let logged = serve.logged();
    assert!(logged.contains("serving TLS"), "{logged}");

    let http1 = client(pki.ca(), None, &[b"http/1.1"]);
    let mut tls = connect(serve.http, Arc::clone(&http1)).await.unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    let (status, body) = get_http1(&mut tls, "/v1/id").await.unwrap();
    assert_eq!(status, 200, "{body}");
    let first = id_of(&body);

    let h2 = client(pki.ca(), None, &[b"h2", b"http/1.1"]);
    let (status, body) = get_h2(serve.http, h2, "/v1/id").await;
    assert_eq!(status, 200, "{body}");
    assert!(id_of(&body) > first);

    let mut grpc = grpc_client(serve.grpc.unwrap(), client(pki.ca(), None, &[b"h2"])).await;
    let id = grpc
        .next(snowmint_proto::v1::NextRequest::default())
        .await
        .unwrap()
        .into_inner()
        .id;
    assert!(id > first);
}

#[test]
fn curl_with_the_ca_gets_an_id() {
    let pki = Pki::new();
    let state = tempfile::tempdir().unwrap();
    let serve = start(state.path(), &pki.server(), &[]);
    let url = format!("https://127.0.0.1:{}/v1/id", serve.http.port());
    let out = std::process::Command::new("curl")
        .args(["--silent", "--show-error", "--max-time", "10", "--cacert"])
        .arg(pki.ca())
        .arg(&url)
        .output()
        .expect("curl runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(id_of(&stdout) > 0, "{stdout}");
    // Without the CA, curl refuses the certificate.
    let out = std::process::Command::new("curl")
        .args(["--silent", "--max-time", "10"])
        .arg(&url)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(60),
        "curl's code for a certificate it cannot verify"
    );
}
