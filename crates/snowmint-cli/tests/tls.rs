//! `snowmint serve --tls-cert --tls-key` as a real process: HTTP/1.1, HTTP/2 and gRPC over
//! TLS on the ports that speak them in plain text, and `curl --cacert` as a user would.

use crate::support;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use snowmint_testkit::{Pair, Pki, Validity};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use support::{Serve, serve_command, spawn_logged};

/// `snowmint serve` serving TLS with `pair`, gRPC on unless `extra` says otherwise, and
/// `extra` flags.
fn start(state: &Path, pair: &Pair, extra: &[&str]) -> Serve {
    let mut args = vec!["--tls-cert"];
    if !extra.contains(&"--grpc-addr") {
        args.splice(0..0, ["--grpc-addr", "127.0.0.1:0"]);
    }
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
    get_http1_with(stream, path, "").await
}

/// [`get_http1`] with `headers` (each line ending in CRLF).
async fn get_http1_with<S>(
    stream: &mut S,
    path: &str,
    headers: &str,
) -> std::io::Result<(u16, String)>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n{headers}Connection: close\r\n\r\n")
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

    // A connection speaks only the protocol agreed in ALPN: HTTP/2 on one that chose
    // http/1.1 is not answered as HTTP/2.
    let tls = connect(serve.http, Arc::clone(&http1)).await.unwrap();
    let spoken = async {
        let (mut client, connection) = h2::client::handshake(tls).await?;
        tokio::spawn(connection);
        let request = http::Request::get("https://localhost/v1/id")
            .body(())
            .unwrap();
        let (response, _) = client.send_request(request, true)?;
        response.await
    };
    let answer = tokio::time::timeout(std::time::Duration::from_secs(10), spoken)
        .await
        .expect("refused within the header-read timeout");
    assert!(answer.is_err(), "{answer:?}");
    // The gRPC port speaks HTTP/2 only: a client that offers only http/1.1 is refused at
    // the handshake.
    let refused = connect(serve.grpc.unwrap(), http1).await;
    assert!(refused.is_err(), "the handshake succeeded");
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

/// `GET path` over HTTP/1.1 on a new TLS connection with `config`.
async fn get(addr: SocketAddr, config: &Arc<ClientConfig>, path: &str) -> (u16, String) {
    let mut tls = connect(addr, Arc::clone(config)).await.unwrap();
    get_http1(&mut tls, path).await.unwrap()
}

/// The value of the metric line that starts with `name` (labels included), if any.
async fn metric(addr: SocketAddr, config: &Arc<ClientConfig>, name: &str) -> Option<f64> {
    let (_, body) = get(addr, config, "/metrics").await;
    body.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.parse().ok())
}

/// What a client that completed its side of the handshake gets for a request on a
/// connection the server refused: an error, or the end, never a response.
async fn refused(addr: SocketAddr, config: Arc<ClientConfig>) -> String {
    let mut tls = match connect(addr, config).await {
        Ok(tls) => tls,
        Err(e) => return e.to_string(),
    };
    // TLS 1.3: the client's side ends before the server has checked its certificate, so
    // the refusal arrives as an alert on the first read.
    match get_http1(&mut tls, "/v1/id").await {
        Ok((0, _)) => "closed".to_string(),
        Ok((status, body)) => panic!("a refused client got {status} {body}"),
        Err(e) => e.to_string(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_refuses_clients_without_a_certificate_of_the_ca() {
    let pki = Pki::new();
    let state = tempfile::tempdir().unwrap();
    let ca = pki.ca().to_str().unwrap().to_string();
    let serve = start(
        state.path(),
        &pki.server(),
        &["--tls-client-ca", &ca, "--auth-token", "s3cret"],
    );
    let alpn: &[&[u8]] = &[b"http/1.1"];
    let none = refused(serve.http, client(pki.ca(), None, alpn)).await;
    assert!(none.contains("CertificateRequired"), "{none}");
    let foreign = pki.foreign_client("mallory");
    let foreign = refused(serve.http, client(pki.ca(), Some(&foreign), alpn)).await;
    assert!(foreign.contains("UnknownCA"), "{foreign}");
    let expired = pki.expired_client("late");
    let expired = refused(serve.http, client(pki.ca(), Some(&expired), alpn)).await;
    assert!(expired.contains("CertificateExpired"), "{expired}");

    // A certificate of the CA passes the handshake; the token is still asked for.
    let good = client(pki.ca(), Some(&pki.client("app")), alpn);
    let (status, body) = get(serve.http, &good, "/v1/id").await;
    assert_eq!(status, 401, "{body}");
    let token = "Authorization: Bearer s3cret\r\n";
    let mut tls = connect(serve.http, Arc::clone(&good)).await.unwrap();
    let (status, body) = get_http1_with(&mut tls, "/v1/id", token).await.unwrap();
    assert_eq!(status, 200, "{body}");

    // gRPC asks for the same certificate.
    let grpc = serve.grpc.unwrap();
    let good_h2 = client(pki.ca(), Some(&pki.client("app")), &[b"h2"]);
    let mut grpc_client = grpc_client(grpc, good_h2).await;
    let mut request = tonic::Request::new(snowmint_proto::v1::NextRequest::default());
    request
        .metadata_mut()
        .insert("authorization", "Bearer s3cret".parse().unwrap());
    assert!(grpc_client.next(request).await.unwrap().into_inner().id > 0);
    let none = refused(grpc, client(pki.ca(), None, &[b"h2"])).await;
    assert!(none.contains("CertificateRequired"), "{none}");

    let mut tls = connect(serve.http, Arc::clone(&good)).await.unwrap();
    let (_, metrics) = get_http1_with(&mut tls, "/metrics", token).await.unwrap();
    let line = "snowmint_tls_handshake_failures_total{port=\"http\"} 3\n";
    assert!(metrics.contains(line), "{metrics}");
}

#[test]
fn plain_text_on_a_tls_port_is_refused_at_once() {
    use std::io::{Read, Write};
    let pki = Pki::new();
    let state = tempfile::tempdir().unwrap();
    let serve = start(state.path(), &pki.server(), &[]);
    // Plain HTTP on the HTTP port: a JSON 400 that says why, then the end.
    let mut plain = std::net::TcpStream::connect(serve.http).unwrap();
    plain
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    plain
        .write_all(b"GET /v1/id HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut response = String::new();
    plain
        .read_to_string(&mut response)
        .expect("the answer and the end, within the read timeout");
    assert!(response.starts_with("HTTP/1.1 400 "), "{response}");
    assert!(
        response.ends_with(
            "{\"error\":\"this port speaks TLS: use https:// (the request was plain HTTP)\"}"
        ),
        "{response}"
    );
    // Plain HTTP/2 on the gRPC port: closed.
    let mut h2c = std::net::TcpStream::connect(serve.grpc.unwrap()).unwrap();
    h2c.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    h2c.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").unwrap();
    let mut rest = Vec::new();
    match h2c.read_to_end(&mut rest) {
        // rustls's alert, if it went out before the close.
        Ok(_) => assert!(rest.len() < 16, "{rest:?}"),
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}"),
    }
}

/// Whether the server closes `stream` within the read timeout (a silent connection that is
/// still open times out instead).
fn closes(stream: &mut std::net::TcpStream) -> bool {
    use std::io::Read;
    let mut buf = [0u8; 256];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            // An alert before the end.
            Ok(_) => continue,
            Err(e) => {
                return !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_handshakes_hold_a_place_until_the_header_read_timeout() {
    use std::io::Write;
    let pki = Pki::new();
    let state = tempfile::tempdir().unwrap();
    let serve = start(
        state.path(),
        &pki.server(),
        &["--max-connections", "2", "--header-read-timeout-ms", "1000"],
    );
    let timeout = Some(std::time::Duration::from_secs(5));
    // One connection says nothing, the other sends half a ClientHello's record header.
    let mut silent = std::net::TcpStream::connect(serve.http).unwrap();
    let mut half = std::net::TcpStream::connect(serve.http).unwrap();
    half.write_all(&[0x16, 0x03, 0x01, 0x02]).unwrap();
    // Both hold the places: a third is refused (closed, with nothing a TLS client would
    // misread).
    let mut third = std::net::TcpStream::connect(serve.http).unwrap();
    third.set_read_timeout(timeout).unwrap();
    assert!(closes(&mut third), "a connection beyond the cap is closed");
    for stream in [&mut silent, &mut half] {
        stream.set_read_timeout(timeout).unwrap();
        assert!(closes(stream), "closed by the header read timeout");
    }
    // The places are free again.
    let config = client(pki.ca(), None, &[b"http/1.1"]);
    let (status, body) = get(serve.http, &config, "/v1/id").await;
    assert_eq!(status, 200, "{body}");
    let (_, metrics) = get(serve.http, &config, "/metrics").await;
    for line in [
        "snowmint_connections_timed_out_total{protocol=\"http\",timeout=\"header_read\"} 2",
        "snowmint_connections_refused_total{protocol=\"http\"} 1",
    ] {
        assert!(metrics.contains(line), "{line}\n{metrics}");
    }
}

/// A framed Thrift `get_id` call with a user agent.
fn thrift_get_id(agent: &str) -> Vec<u8> {
    let mut m = Vec::new();
    m.extend_from_slice(&0x8001_0001_u32.to_be_bytes());
    m.extend_from_slice(&6u32.to_be_bytes());
    m.extend_from_slice(b"get_id");
    m.extend_from_slice(&1i32.to_be_bytes());
    m.extend_from_slice(&[11, 0, 1]);
    m.extend_from_slice(&(agent.len() as u32).to_be_bytes());
    m.extend_from_slice(agent.as_bytes());
    m.push(0);
    let mut frame = (m.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(&m);
    frame
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thrift_tls_answers_framed_calls_and_refuses_plain_ones() {
    use std::io::Write;
    let pki = Pki::new();
    let state = tempfile::tempdir().unwrap();
    let ca = pki.ca().to_str().unwrap().to_string();
    let mut serve = start(
        state.path(),
        &pki.server(),
        &[
            "--thrift-addr",
            "127.0.0.1:0",
            "--thrift-tls",
            "--tls-client-ca",
            &ca,
            "--auth-token",
            "s3cret",
        ],
    );
    // Client certificates guard the Thrift port: no warning that it takes no token.
    let logged = serve.logged();
    assert!(
        logged.contains("serving TLS ports=\"http,grpc,thrift\""),
        "{logged}"
    );
    assert!(!logged.contains("takes no bearer token"), "{logged}");
    let thrift = serve.thrift.unwrap();
    let config = client(pki.ca(), Some(&pki.client("thrift-app")), &[]);
    let mut tls = connect(thrift, config).await.unwrap();
    tls.write_all(&thrift_get_id("tls")).await.unwrap();
    let length = tls.read_u32().await.unwrap();
    let mut reply = vec![0u8; length as usize];
    tls.read_exact(&mut reply).await.unwrap();
    // A reply (type 2) to get_id whose field 0 is an i64: the id, the last 8 bytes before
    // the struct's end.
    assert_eq!(reply[3], 2, "{reply:?}");
    assert_eq!(&reply[8..14], b"get_id");
    let id = i64::from_be_bytes(reply[reply.len() - 9..reply.len() - 1].try_into().unwrap());
    assert!(id > 0);
    // Without a client certificate, and in plain text: closed, no reply.
    let none = client(pki.ca(), None, &[]);
    let mut tls = connect(thrift, none).await.unwrap();
    let _ = tls.write_all(&thrift_get_id("no cert")).await;
    assert!(tls.read_u32().await.is_err());
    let mut plain = std::net::TcpStream::connect(thrift).unwrap();
    plain
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    plain.write_all(&thrift_get_id("plain")).unwrap();
    assert!(closes(&mut plain));
}

/// The leaf certificate the server presents to a new connection.
async fn presented(addr: SocketAddr, config: &Arc<ClientConfig>) -> Vec<u8> {
    let tls = connect(addr, Arc::clone(config)).await.unwrap();
    tls.get_ref().1.peer_certificates().unwrap()[0].to_vec()
}

/// The first certificate of a PEM file, in DER.
fn der_of(path: &Path) -> Vec<u8> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    CertificateDer::pem_file_iter(path)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .to_vec()
}

/// A certificate's notAfter, in Unix seconds.
fn not_after(path: &Path) -> i64 {
    let der = der_of(path);
    let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
    cert.validity().not_after.timestamp()
}

/// Replaces `to`'s contents with `from`'s, in place (the file's inode stays).
fn rewrite(from: &Path, to: &Path) {
    std::fs::write(to, std::fs::read(from).unwrap()).unwrap();
}

fn hangup(serve: &Serve) {
    let pid = i32::try_from(serve.pid()).unwrap();
    // SAFETY: signals the child this test started and still owns.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGHUP) }, 0);
}

/// Waits, a bounded while, until new handshakes on `addr` see the certificate of `cert`.
async fn until_presented(addr: SocketAddr, config: &Arc<ClientConfig>, cert: &Path) {
    let want = der_of(cert);
    snowmint_testkit::eventually_async(
        std::time::Duration::from_secs(10),
        "new handshakes see the new certificate",
        || {
            let want = want.clone();
            async move {
                if presented(addr, config).await == want {
                    Ok(())
                } else {
                    Err("the old one")
                }
            }
        },
    )
    .await;
}

/// What a load of one kind did: requests answered 200, and what went wrong otherwise.
#[derive(Default)]
struct Tally {
    ok: u64,
    failed: Vec<String>,
}

/// Requests `GET /v1/id` on one keep-alive connection until `stop`, a new connection after
/// each response if `fresh`.
async fn load(
    addr: SocketAddr,
    config: Arc<ClientConfig>,
    fresh: bool,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> Tally {
    use tokio::io::AsyncBufReadExt;
    let mut tally = Tally::default();
    let mut conn = None;
    // Bounded: the test stops it, and at worst a minute of requests.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !stop.load(std::sync::atomic::Ordering::Relaxed) && std::time::Instant::now() < until {
        if conn.is_none() {
            match connect(addr, Arc::clone(&config)).await {
                Ok(tls) => conn = Some(tokio::io::BufReader::new(tls)),
                Err(e) => {
                    tally.failed.push(format!("connect: {e}"));
                    continue;
                }
            }
        }
        let stream = conn.as_mut().unwrap();
        let answer = async {
            stream
                .get_mut()
                .write_all(b"GET /v1/id HTTP/1.1\r\nHost: localhost\r\n\r\n")
                .await?;
            let mut status = String::new();
            stream.read_line(&mut status).await?;
            let mut length = 0;
            loop {
                let mut line = String::new();
                stream.read_line(&mut line).await?;
                if line == "\r\n" || line.is_empty() {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0u8; length];
            stream.read_exact(&mut body).await?;
            Ok::<_, std::io::Error>((status, body))
        };
        match answer.await {
            Ok((status, body)) if status.starts_with("HTTP/1.1 200 ") && body.len() > 8 => {
                tally.ok += 1;
            }
            Ok((status, body)) => tally
                .failed
                .push(format!("{status} {}", String::from_utf8_lossy(&body))),
            Err(e) => tally.failed.push(format!("request: {e}")),
        }
        if fresh {
            conn = None;
        }
    }
    tally
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_rotations_under_load_fail_no_request() {
    let pki = Pki::new();
    let state = tempfile::tempdir().unwrap();
    // The files the server reads: links into a directory of each version, swapped whole as
    // Kubernetes swaps a secret's files; or rewritten in place, then SIGHUP.
    let live = tempfile::tempdir().unwrap();
    let first = pki.server_valid(Validity::Days(30));
    let link = |name: &str| live.path().join(name);
    let swap = |pair: &Pair, n: usize| {
        let version = live.path().join(format!("v{n}"));
        std::fs::create_dir(&version).unwrap();
        std::fs::copy(&pair.cert, version.join("cert.pem")).unwrap();
        std::fs::copy(&pair.key, version.join("key.pem")).unwrap();
        let next = live.path().join("next");
        std::os::unix::fs::symlink(&version, &next).unwrap();
        std::fs::rename(&next, live.path().join("current")).unwrap();
    };
    swap(&first, 0);
    for name in ["cert.pem", "key.pem"] {
        std::os::unix::fs::symlink(Path::new("current").join(name), link(name)).unwrap();
    }
    let served = Pair {
        cert: link("cert.pem"),
        key: link("key.pem"),
    };
    let mut serve = start(state.path(), &served, &["--grpc-addr", "off"]);
    let addr = serve.http;
    let config = client(pki.ca(), None, &[b"http/1.1"]);
    assert_eq!(presented(addr, &config).await, der_of(&first.cert));

    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let started = std::time::Instant::now();
    // Many keep-alive connections, and a few that connect anew for every request.
    let mut loads = Vec::new();
    for i in 0..20 {
        let fresh = i % 5 == 0;
        loads.push(tokio::spawn(load(
            addr,
            Arc::clone(&config),
            fresh,
            Arc::clone(&stop),
        )));
    }
    let mut rotations = 0;
    for n in 1..=20 {
        let pair = pki.server_valid(Validity::Days(30 + n));
        if n % 2 == 1 {
            swap(&pair, n as usize);
        } else {
            // In place: the certificate, then its key, then the signal.
            let current = live.path().join("current");
            rewrite(&pair.cert, &current.join("cert.pem"));
            rewrite(&pair.key, &current.join("key.pem"));
            hangup(&serve);
        }
        until_presented(addr, &config, &pair.cert).await;
        rotations += 1;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let elapsed = started.elapsed();
    let mut total = Tally::default();
    for load in loads {
        let tally = load.await.unwrap();
        total.ok += tally.ok;
        total.failed.extend(tally.failed);
    }
    eprintln!(
        "{rotations} rotations in {:.1} s: {} requests answered, {:.0}/s",
        elapsed.as_secs_f64(),
        total.ok,
        total.ok as f64 / elapsed.as_secs_f64()
    );
    assert_eq!(rotations, 20);
    assert!(
        total.failed.is_empty(),
        "{} failed: {:?}",
        total.failed.len(),
        &total.failed[..total.failed.len().min(5)]
    );
    assert!(total.ok > 1000, "{}", total.ok);
    let reloads = metric(addr, &config, "snowmint_tls_reloads_total{port=\"http\"}").await;
    assert!(reloads.is_some_and(|n| n >= 20.0), "{reloads:?}");
    let logged = serve.logged();
    assert!(
        logged.contains("TLS certificate reloaded trigger=\"SIGHUP\""),
        "{logged}"
    );
    assert!(
        logged.contains("TLS certificate reloaded trigger=\"the files changed\""),
        "{logged}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_new_files_leave_the_old_certificate_serving() {
    let pki = Pki::new();
    let state = tempfile::tempdir().unwrap();
    let live = tempfile::tempdir().unwrap();
    let good = pki.server_valid(Validity::Days(40));
    let served = Pair {
        cert: live.path().join("cert.pem"),
        key: live.path().join("key.pem"),
    };
    rewrite(&good.cert, &served.cert);
    rewrite(&good.key, &served.key);
    let mut serve = start(state.path(), &served, &["--grpc-addr", "off"]);
    let config = client(pki.ca(), None, &[b"http/1.1"]);
    let addr = serve.http;
    let expiry = "snowmint_tls_certificate_expiry_timestamp_seconds{port=\"http\"}";
    let failures = "snowmint_tls_reload_failures_total{port=\"http\"}";
    assert_eq!(
        metric(addr, &config, expiry).await,
        Some(not_after(&good.cert) as f64)
    );

    let other = pki.server_valid(Validity::Days(50));
    type Breaking<'a> = (&'a str, Box<dyn Fn() + 'a>, String);
    let cases: [Breaking; 4] = [
        (
            "garbage",
            Box::new(|| std::fs::write(&served.cert, "not a certificate\n").unwrap()),
            format!(
                "error=tls_cert {}: holds no certificate (no BEGIN CERTIFICATE block)",
                served.cert.display()
            ),
        ),
        (
            "a certificate caught half written",
            Box::new(|| {
                let whole = std::fs::read_to_string(&good.cert).unwrap();
                std::fs::write(&served.cert, &whole[..whole.len() / 2]).unwrap();
            }),
            format!(
                "error=tls_cert {}: is cut short: a PEM block has no -----END CERTIFICATE----- line (was the file read while it was written?)",
                served.cert.display()
            ),
        ),
        (
            "a key that is not the certificate's",
            Box::new(|| {
                rewrite(&good.cert, &served.cert);
                rewrite(&other.key, &served.key);
            }),
            format!(
                "error=tls_key {}: is not the private key of the certificate in tls_cert {}",
                served.key.display(),
                served.cert.display()
            ),
        ),
        (
            "an empty key",
            Box::new(|| std::fs::write(&served.key, "").unwrap()),
            format!(
                "error=tls_key {}: holds no private key (no BEGIN PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY block)",
                served.key.display()
            ),
        ),
    ];
    for (n, (what, break_it, line)) in cases.iter().enumerate() {
        break_it();
        hangup(&serve);
        let counted = (n + 1) as f64;
        snowmint_testkit::eventually_async(
            std::time::Duration::from_secs(10),
            "the failure counted",
            || async {
                match metric(addr, &config, failures).await {
                    Some(c) if c >= counted => Ok(()),
                    other => Err(format!("{other:?}")),
                }
            },
        )
        .await;
        assert_eq!(presented(addr, &config).await, der_of(&good.cert), "{what}");
        assert_eq!(
            metric(addr, &config, expiry).await,
            Some(not_after(&good.cert) as f64),
            "{what}"
        );
        let (status, body) = get(addr, &config, "/v1/id").await;
        assert_eq!(status, 200, "{what}: {body}");
        let logged = serve.logged();
        assert!(logged.contains(line.as_str()), "{what}: {line}\n{logged}");
    }
    let logged = serve.logged();
    assert!(!logged.contains("PRIVATE KEY-----"), "{logged}");
    // Good files again: served.
    rewrite(&other.cert, &served.cert);
    rewrite(&other.key, &served.key);
    until_presented(addr, &config, &other.cert).await;
    assert_eq!(
        metric(addr, &config, expiry).await,
        Some(not_after(&other.cert) as f64)
    );
}

#[test]
fn files_that_cannot_serve_are_refused_at_start_by_flag_and_file() {
    let pki = Pki::new();
    let sm = support::Snowmint::new();
    let good = pki.server();
    let other = pki.server();
    let empty = pki.dir().join("empty.pem");
    std::fs::write(&empty, "").unwrap();
    let missing = pki.dir().join("missing.pem");
    let p = |path: &Path| path.to_str().unwrap().to_string();
    let (cert, key, ca) = (p(&good.cert), p(&good.key), p(pki.ca()));
    let cases: Vec<(Vec<String>, String)> = vec![
        (
            vec![
                "--tls-cert".into(),
                p(&missing),
                "--tls-key".into(),
                key.clone(),
            ],
            format!(
                "config key `tls_cert`: {:?} cannot be read: No such file or directory (os error 2)",
                p(&missing)
            ),
        ),
        (
            vec![
                "--tls-cert".into(),
                p(&empty),
                "--tls-key".into(),
                key.clone(),
            ],
            format!(
                "config key `tls_cert`: {:?} holds no certificate (no BEGIN CERTIFICATE block)",
                p(&empty)
            ),
        ),
        (
            // A certificate where the key should be.
            vec![
                "--tls-cert".into(),
                cert.clone(),
                "--tls-key".into(),
                cert.clone(),
            ],
            format!(
                "config key `tls_key`: {cert:?} holds no private key (no BEGIN PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY block)"
            ),
        ),
        (
            vec![
                "--tls-cert".into(),
                cert.clone(),
                "--tls-key".into(),
                p(&other.key),
            ],
            format!(
                "config key `tls_key`: {:?} is not the private key of the certificate in tls_cert {cert}",
                p(&other.key)
            ),
        ),
        (
            vec![
                "--tls-cert".into(),
                cert.clone(),
                "--tls-key".into(),
                key.clone(),
                "--tls-client-ca".into(),
                p(&empty),
            ],
            format!(
                "config key `tls_client_ca`: {:?} holds no certificate (no BEGIN CERTIFICATE block)",
                p(&empty)
            ),
        ),
        (
            vec!["--tls-client-ca".into(), ca.clone()],
            format!(
                "config key `tls_client_ca`: {ca:?} needs tls_cert and tls_key: client certificates are asked for in a TLS handshake"
            ),
        ),
        (
            vec![
                "--tls-cert".into(),
                cert.clone(),
                "--tls-key".into(),
                key.clone(),
                "--thrift-tls".into(),
            ],
            "config key `thrift_tls`: \"true\" needs thrift_addr: the Thrift port is off".into(),
        ),
    ];
    for (flags, expected) in cases {
        let mut args = vec!["serve", "--http-addr", "127.0.0.1:0", "--grpc-addr", "off"];
        args.extend(flags.iter().map(String::as_str));
        let out = sm.run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        assert_eq!(stderr.trim_end(), format!("error: {expected}"), "{flags:?}");
        assert!(!stderr.contains("PRIVATE KEY-----"), "{stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_ca_rotates_with_the_pair() {
    let pki = Pki::new();
    let state = tempfile::tempdir().unwrap();
    let live = tempfile::tempdir().unwrap();
    let client_ca = live.path().join("client-ca.pem");
    rewrite(pki.ca(), &client_ca);
    let ca = client_ca.to_str().unwrap().to_string();
    let serve = start(
        state.path(),
        &pki.server(),
        &["--grpc-addr", "off", "--tls-client-ca", &ca],
    );
    let ours = client(pki.ca(), Some(&pki.client("ours")), &[b"http/1.1"]);
    let theirs = client(
        pki.ca(),
        Some(&pki.foreign_client("theirs")),
        &[b"http/1.1"],
    );
    assert_eq!(get(serve.http, &ours, "/v1/id").await.0, 200);
    assert!(
        refused(serve.http, Arc::clone(&theirs))
            .await
            .contains("UnknownCA")
    );
    // The other CA now signs the clients: its clients come in, ours are refused.
    rewrite(pki.foreign_ca(), &client_ca);
    hangup(&serve);
    snowmint_testkit::eventually_async(
        std::time::Duration::from_secs(10),
        "the new client CA in force",
        || async {
            match connect(serve.http, Arc::clone(&theirs)).await {
                Ok(mut tls) => match get_http1(&mut tls, "/v1/id").await {
                    Ok((200, _)) => Ok(()),
                    other => Err(format!("{other:?}")),
                },
                Err(e) => Err(e.to_string()),
            }
        },
    )
    .await;
    assert!(refused(serve.http, ours).await.contains("UnknownCA"));
}

#[test]
fn an_expired_certificate_is_served_with_a_warning() {
    let pki = Pki::new();
    let state = tempfile::tempdir().unwrap();
    let mut serve = start(state.path(), &pki.expired_server(), &["--grpc-addr", "off"]);
    let logged = serve.logged();
    assert!(
        logged.contains("the TLS certificate has expired: clients will refuse it"),
        "{logged}"
    );
    assert!(logged.contains("serving TLS ports=\"http\""), "{logged}");
}
