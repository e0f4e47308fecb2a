//! What one client may take from `snowmint serve`, tried on a real process over loopback:
//! slow and idle connections are closed, connections beyond the cap are refused and
//! counted, oversized heads get a JSON error without holding memory, HTTP/2 advertises its
//! stream limit on both ports, and readers that never read hold neither threads nor the
//! ids that other clients need.

use crate::support;

use snowmint_testkit::{eventually, eventually_async};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use bytes::Bytes;
use prost::Message;
use snowmint_proto::v1::StreamRequest;
use support::{Serve, error_of, http_get, ids, read_kept, serve_command, spawn_logged};

fn start(extra: &[&str]) -> (tempfile::TempDir, Serve) {
    let state = tempfile::tempdir().unwrap();
    let mut args = vec!["--grpc-addr", "127.0.0.1:0"];
    args.extend(extra);
    let serve = spawn_logged(serve_command(state.path(), &args));
    (state, serve)
}

/// Whether the server has closed `stream`: end of file or a reset, without blocking.
fn closed(stream: &mut TcpStream) -> bool {
    stream.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 4096];
    let closed = loop {
        match stream.read(&mut buf) {
            Ok(0) => break true,
            Ok(_) => continue,
            Err(e) if e.kind() == ErrorKind::WouldBlock => break false,
            Err(_) => break true,
        }
    };
    stream.set_nonblocking(false).unwrap();
    closed
}

#[test]
fn slow_and_idle_connections_are_closed_within_their_timeouts() {
    let (_state, serve) = start(&[
        "--header-read-timeout-ms",
        "1000",
        "--idle-timeout-ms",
        "2500",
    ]);
    let begun = Instant::now();
    // Slowloris: a request head one byte every 100 ms, never finished.
    let mut slow: Vec<TcpStream> = (0..100)
        .map(|_| TcpStream::connect(serve.http).unwrap())
        .collect();
    // Connected, and silent.
    let mut silent: Vec<TcpStream> = (0..100)
        .map(|_| TcpStream::connect(serve.http).unwrap())
        .collect();
    // One request, then an idle keep-alive connection.
    let mut kept = TcpStream::connect(serve.http).unwrap();
    write!(kept, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    assert_eq!(read_kept(&mut kept).expect("a response").0, 200);
    let answered = Instant::now();
    let head = b"GET /v1/id HTTP/1.1\r\nHost: t\r\nX-Slow: "
        .iter()
        .chain(std::iter::repeat(&b'a'));
    let mut head = head.copied();
    let (mut slow_closed, mut silent_closed, mut kept_closed) = (Vec::new(), Vec::new(), None);
    while begun.elapsed() < Duration::from_secs(6) && kept_closed.is_none() {
        let byte = [head.next().unwrap()];
        slow.retain_mut(|s| {
            let _ = s.write(&byte);
            let gone = closed(s);
            if gone {
                slow_closed.push(begun.elapsed());
            }
            !gone
        });
        silent.retain_mut(|s| {
            let gone = closed(s);
            if gone {
                silent_closed.push(begun.elapsed());
            }
            !gone
        });
        if closed(&mut kept) {
            kept_closed = Some(answered.elapsed());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        slow.is_empty() && silent.is_empty(),
        "{} slow and {} silent connections still open after {:?}",
        slow.len(),
        silent.len(),
        begun.elapsed()
    );
    // Closed at the 1 s header timeout, not before it and not much later.
    let earliest = slow_closed.iter().chain(&silent_closed).min().unwrap();
    let latest = slow_closed.iter().chain(&silent_closed).max().unwrap();
    assert!(*earliest >= Duration::from_millis(900), "{earliest:?}");
    assert!(*latest < Duration::from_millis(2500), "{latest:?}");
    // The keep-alive connection outlives the header timeout and is closed when idle 2.5 s.
    let kept_closed = kept_closed.expect("the idle connection is closed");
    assert!(
        kept_closed >= Duration::from_millis(2400) && kept_closed < Duration::from_millis(4000),
        "{kept_closed:?}"
    );
    assert_eq!(serve.get("/v1/id").0, 200);
}

#[test]
fn connections_beyond_the_cap_are_refused_and_counted() {
    let (_state, serve) = start(&["--max-connections", "16"]);
    let mut held: Vec<TcpStream> = (0..16)
        .map(|_| TcpStream::connect(serve.http).unwrap())
        .collect();
    // Accepted in order: the 17th finds the 16 before it open.
    let mut refused = 0;
    let mut extra = TcpStream::connect(serve.http).unwrap();
    extra
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let (status, body) = read_kept(&mut extra).expect("a response");
    assert_eq!(status, 503);
    assert_eq!(
        error_of(&body),
        "too many connections: all 16 that max_connections allows are open; try again later"
    );
    refused += 1;
    // The cap covers both ports: the gRPC port closes at once.
    let mut grpc = TcpStream::connect(serve.grpc.unwrap()).unwrap();
    grpc.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert_eq!(grpc.read(&mut [0u8; 64]).unwrap_or(0), 0);
    // One leaves; once the server has seen it go, a new one is served.
    drop(held.remove(0));
    let metrics = eventually(Duration::from_secs(5), "a new connection served", || {
        let mut s = TcpStream::connect(serve.http).unwrap();
        write!(s, "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
        let (status, body) = read_kept(&mut s).expect("a response");
        if status == 200 {
            return Ok(body);
        }
        refused += 1;
        Err(body)
    });
    assert!(
        metrics.contains(&format!(
            "snowmint_connections_refused_total{{protocol=\"http\"}} {refused}\n"
        )),
        "{metrics}"
    );
    assert!(
        metrics.contains("snowmint_connections_refused_total{protocol=\"grpc\"} 1\n"),
        "{metrics}"
    );
    // 15 held and the one asking.
    assert!(
        metrics.contains("snowmint_connections_open{protocol=\"http\"} 16\n"),
        "{metrics}"
    );
}

#[test]
fn malformed_and_oversized_heads_get_json_errors() {
    let (_state, serve) = start(&[]);
    let ask = |request: &[u8]| {
        let mut s = TcpStream::connect(serve.http).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(request).unwrap();
        let (status, body) = read_kept(&mut s).expect("a response");
        (status, error_of(&body))
    };
    let big = format!(
        "GET /v1/id HTTP/1.1\r\nHost: t\r\nX-Big: {}\r\n\r\n",
        "a".repeat(20_000)
    );
    assert_eq!(
        ask(big.as_bytes()),
        (
            431,
            "request head is larger than the 16384 bytes this server accepts (max_header_bytes), or has more than 100 headers".into()
        )
    );
    assert_eq!(
        ask(b"GET /v1/id HTTP/1.1\r\nHost: t\r\nNo colon here\r\n\r\n"),
        (
            400,
            "malformed request: the request line or a header is not valid HTTP/1.1".into()
        )
    );
    let long = format!(
        "GET /v1/decode/{} HTTP/1.1\r\nHost: t\r\n\r\n",
        "9".repeat(10_000)
    );
    assert_eq!(
        ask(long.as_bytes()),
        (
            414,
            "request target is 10011 bytes, more than the 8192 this server accepts".into()
        )
    );
    assert_eq!(serve.get("/v1/id").0, 200);
}

#[test]
fn unfinished_large_heads_from_2000_connections_leave_memory_where_it_was() {
    let (_state, serve) = start(&[]);
    assert_eq!(serve.get("/v1/ids?count=5000").0, 200);
    let before = serve.proc_status("VmRSS");
    let addr = serve.http;
    let deadline = Instant::now() + Duration::from_secs(20);
    let attackers: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn(move || {
                let filler = vec![b'a'; 300 * 1024];
                let streams: Vec<TcpStream> = (0..250)
                    .map(|_| {
                        let mut s = TcpStream::connect(addr).unwrap();
                        s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
                        let _ = s.write_all(b"GET /v1/id HTTP/1.1\r\nHost: t\r\nX-Big: ");
                        let _ = s.write_all(&filler);
                        s
                    })
                    .collect();
                streams
                    .into_iter()
                    .map(|mut s| {
                        let left = deadline.saturating_duration_since(Instant::now());
                        s.set_read_timeout(Some(left.max(Duration::from_millis(1))))
                            .unwrap();
                        let mut answer = Vec::new();
                        let _ = s.read_to_end(&mut answer);
                        answer
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut peak = before;
    while !attackers.iter().all(std::thread::JoinHandle::is_finished) {
        peak = peak.max(serve.proc_status("VmRSS"));
        std::thread::sleep(Duration::from_millis(100));
    }
    let answers: Vec<Vec<u8>> = attackers
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    let after = serve.proc_status("VmRSS");
    assert!(
        peak < before + 100 * 1024 && after < before + 100 * 1024,
        "VmRSS {before} kB before, {peak} kB at most during 2000 unfinished 300 KB heads, {after} kB after"
    );
    let answered = answers
        .iter()
        .filter(|a| a.starts_with(b"HTTP/1.1 431 "))
        .count();
    assert_eq!(answered, 2000, "{:?}", String::from_utf8_lossy(&answers[0]));
    assert_eq!(serve.get("/v1/id").0, 200);
}

/// The server's `SETTINGS_MAX_CONCURRENT_STREAMS`, read from its first SETTINGS frame.
fn advertised_max_concurrent_streams(addr: SocketAddr) -> Option<u32> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").unwrap();
    s.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).unwrap(); // an empty SETTINGS
    loop {
        let mut header = [0u8; 9];
        s.read_exact(&mut header).unwrap();
        let len =
            usize::from(header[0]) << 16 | usize::from(header[1]) << 8 | usize::from(header[2]);
        let mut payload = vec![0u8; len];
        s.read_exact(&mut payload).unwrap();
        // SETTINGS (type 4) that is not an ACK (flag 1).
        if header[3] == 4 && header[4] & 1 == 0 {
            return payload.chunks(6).find_map(|p| {
                (u16::from_be_bytes([p[0], p[1]]) == 3)
                    .then(|| u32::from_be_bytes([p[2], p[3], p[4], p[5]]))
            });
        }
    }
}

#[test]
fn http2_advertises_max_concurrent_streams_on_both_ports() {
    let (_state, serve) = start(&["--max-concurrent-streams", "64"]);
    assert_eq!(advertised_max_concurrent_streams(serve.http), Some(64));
    assert_eq!(
        advertised_max_concurrent_streams(serve.grpc.unwrap()),
        Some(64)
    );
}

/// A gRPC message: uncompressed, length-prefixed.
fn grpc_message(message: &impl Message) -> Bytes {
    let body = message.encode_to_vec();
    let mut framed = vec![0u8];
    framed.extend_from_slice(&u32::try_from(body.len()).unwrap().to_be_bytes());
    framed.extend_from_slice(&body);
    Bytes::from(framed)
}

/// Opens `streams` endless `Stream` calls on each of `connections` HTTP/2 connections that
/// grant the server no window, so it can send headers but not one byte of data; returns
/// what keeps them open.
async fn zero_window_streams(
    addr: SocketAddr,
    connections: usize,
    streams: usize,
) -> (
    Vec<h2::client::SendRequest<Bytes>>,
    Vec<http::Response<h2::RecvStream>>,
) {
    let (mut clients, mut held) = (Vec::new(), Vec::new());
    for _ in 0..connections {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (client, connection) = h2::client::Builder::new()
            .initial_window_size(0)
            .handshake::<_, Bytes>(tcp)
            .await
            .unwrap();
        tokio::spawn(connection);
        let mut responses = Vec::new();
        for _ in 0..streams {
            let mut client = client.clone().ready().await.unwrap();
            let request =
                http::Request::post(format!("http://{addr}/snowmint.v1.IdService/Stream"))
                    .version(http::Version::HTTP_2)
                    .header("content-type", "application/grpc")
                    .header("te", "trailers")
                    .body(())
                    .unwrap();
            let (response, mut body) = client.send_request(request, false).unwrap();
            let call = StreamRequest {
                batch_size: 0,
                total: 0,
            };
            body.send_data(grpc_message(&call), true).unwrap();
            responses.push(response);
        }
        for response in responses {
            let response = tokio::time::timeout(Duration::from_secs(10), response)
                .await
                .expect("the call is answered")
                .unwrap();
            assert_eq!(response.status(), 200);
            held.push(response);
        }
        clients.push(client);
    }
    (clients, held)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zero_window_streams_hold_no_threads_and_others_are_still_served() {
    let (_state, serve) = start(&[]);
    let http = serve.http;
    let get = move |path: &'static str| tokio::task::spawn_blocking(move || http_get(http, path));
    assert_eq!(get("/v1/ids?count=5000").await.unwrap().0, 200);
    let before = serve.proc_status("Threads");
    let held = zero_window_streams(serve.grpc.unwrap(), 6, 100).await;
    let during = serve.proc_status("Threads");
    assert!(
        during <= before + 4,
        "{before} threads before, {during} with 600 zero-window streams open"
    );
    let (status, body) = tokio::time::timeout(Duration::from_secs(10), get("/v1/ids?count=5000"))
        .await
        .expect("answered during the attack")
        .unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(ids(&body).len(), 5000);
    drop(held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_batches_that_nobody_reads_hold_only_their_connections_share() {
    let (_state, serve) = start(&[]);
    let http = serve.http;
    let get = move |path: &'static str| tokio::task::spawn_blocking(move || http_get(http, path));
    assert_eq!(get("/v1/ids?count=100000").await.unwrap().0, 200);
    let before = serve.proc_status("VmRSS");
    // 4 connections of 100 streams (the advertised limit) asking for 100,000 ids each,
    // over h2c, granting no window: 40 million ids if nothing stopped them.
    let (mut clients, mut held) = (Vec::new(), Vec::new());
    for _ in 0..4 {
        let tcp = tokio::net::TcpStream::connect(http).await.unwrap();
        let (client, connection) = h2::client::Builder::new()
            .initial_window_size(0)
            .handshake::<_, Bytes>(tcp)
            .await
            .unwrap();
        tokio::spawn(connection);
        for _ in 0..100 {
            let mut client = client.clone().ready().await.unwrap();
            let request = http::Request::get(format!("http://{http}/v1/ids?count=100000"))
                .version(http::Version::HTTP_2)
                .body(())
                .unwrap();
            held.push(client.send_request(request, true).unwrap().0);
        }
        clients.push(client);
    }
    // Each connection's share (262,144 ids) holds two of its batches; the rest wait.
    eventually_async(
        Duration::from_secs(10),
        "800,000 ids in flight",
        async || {
            let (_, metrics) = get("/metrics").await.unwrap();
            if metrics.contains("\nsnowmint_ids_in_flight 800000\n") {
                Ok(())
            } else {
                Err(metrics)
            }
        },
    )
    .await;
    let during = serve.proc_status("VmRSS");
    assert!(
        during < before + 100 * 1024,
        "VmRSS {before} kB before, {during} kB with 400 unread batches asked for"
    );
    let (status, body) = get("/v1/ids?count=5000").await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(ids(&body).len(), 5000);
    drop((clients, held));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_nobody_takes_is_abandoned_after_the_idle_timeout() {
    let (_state, serve) = start(&["--idle-timeout-ms", "1000"]);
    let http = serve.http;
    let tcp = tokio::net::TcpStream::connect(http).await.unwrap();
    let (client, connection) = h2::client::Builder::new()
        .initial_window_size(0)
        .handshake::<_, Bytes>(tcp)
        .await
        .unwrap();
    let connection = tokio::spawn(connection);
    let mut answers = Vec::new();
    for _ in 0..2 {
        let mut client = client.clone().ready().await.unwrap();
        let request = http::Request::get(format!("http://{http}/v1/ids?count=100000"))
            .version(http::Version::HTTP_2)
            .body(())
            .unwrap();
        answers.push(client.send_request(request, true).unwrap().0);
    }
    for answer in &mut answers {
        assert_eq!(answer.await.unwrap().status(), 200);
    }
    let answered = Instant::now();
    // Nothing of the bodies is taken: the server gives up on the connection.
    let _ = tokio::time::timeout(Duration::from_secs(5), connection)
        .await
        .expect("the server closes the connection");
    let closed = answered.elapsed();
    assert!(
        closed >= Duration::from_millis(900) && closed < Duration::from_secs(3),
        "{closed:?}"
    );
    // The abandoned responses give their ids' room back as their streams end.
    let metrics = eventually_async(Duration::from_secs(5), "no ids in flight", async || {
        let (_, metrics) = tokio::task::spawn_blocking(move || http_get(http, "/metrics"))
            .await
            .unwrap();
        if metrics.contains("\nsnowmint_ids_in_flight 0\n") {
            Ok(metrics)
        } else {
            Err(metrics)
        }
    })
    .await;
    assert!(
        metrics.contains(
            "snowmint_connections_timed_out_total{protocol=\"http\",timeout=\"stalled\"} 1\n"
        ),
        "{metrics}"
    );
}

/// A gRPC call whose message never comes, comes in part, is never ended, or trickles in,
/// is the client's wait, not the server's: its connection is closed after the idle
/// timeout, counted as `body_read`, while a message that comes within it is answered.
/// Calls opened and cancelled beside it do not keep the connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_calls_whose_message_does_not_come_are_closed_after_the_idle_timeout() {
    let (_state, serve) = start(&["--idle-timeout-ms", "1000"]);
    let grpc = serve.grpc.unwrap();
    let next = grpc_message(&snowmint_proto::v1::NextRequest {});
    // (what the client sends, with pauses between, and whether it ends the stream)
    let held: [(&str, Vec<Vec<u8>>, bool); 4] = [
        ("headers only", vec![], false),
        ("half a prefix", vec![vec![0, 0]], false),
        ("a whole message, never ended", vec![next.to_vec()], false),
        (
            "a message trickled a byte at a time",
            [0u8, 0, 0, 0, 2, 0x08, 0x05]
                .iter()
                .map(|b| vec![*b])
                .collect(),
            true,
        ),
    ];
    // Sends `pieces`, `pause` apart, the first `pause` after the headers, ending the
    // stream with the last if `end`.
    let call = async |pieces: Vec<Vec<u8>>, end: bool, pause: Duration| {
        let tcp = tokio::net::TcpStream::connect(grpc).await.unwrap();
        let (client, connection) = h2::client::handshake(tcp).await.unwrap();
        let connection = tokio::spawn(connection);
        let mut client = client.ready().await.unwrap();
        let request = http::Request::post(format!("http://{grpc}/snowmint.v1.IdService/Next"))
            .version(http::Version::HTTP_2)
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(())
            .unwrap();
        let started = Instant::now();
        let (response, mut body) = client.send_request(request, false).unwrap();
        let count = pieces.len();
        let sender = tokio::spawn(async move {
            for (i, piece) in pieces.into_iter().enumerate() {
                tokio::time::sleep(pause).await;
                if body
                    .send_data(Bytes::from(piece), end && i + 1 == count)
                    .is_err()
                {
                    return;
                }
            }
            // Held open: dropping an unfinished stream would reset it.
            tokio::time::sleep(Duration::from_secs(30)).await;
            drop(body);
        });
        (started, response, connection, sender, client)
    };
    let mut calls = Vec::new();
    for (case, pieces, end) in held {
        calls.push((case, call(pieces, end, Duration::from_millis(300)).await));
    }
    // Beside a call with headers only, calls opened and cancelled before their answers,
    // which are no progress.
    let (started, response, connection, sender, client) =
        call(vec![], false, Duration::from_millis(300)).await;
    let cancelling = {
        let mut client = client.clone();
        tokio::spawn(async move {
            for _ in 0..20 {
                tokio::time::sleep(Duration::from_millis(250)).await;
                let Ok(ready) = client.ready().await else {
                    return;
                };
                client = ready;
                let request =
                    http::Request::post(format!("http://{grpc}/snowmint.v1.IdService/Next"))
                        .version(http::Version::HTTP_2)
                        .header("content-type", "application/grpc")
                        .body(())
                        .unwrap();
                // Dropped at once: the stream is reset.
                if client.send_request(request, false).is_err() {
                    return;
                }
            }
        })
    };
    calls.push((
        "headers only, beside calls cancelled every 250 ms",
        (started, response, connection, sender, client),
    ));
    // A message that comes within the idle timeout is answered.
    let (_, answered, _connection, _sender, _client) =
        call(vec![next.to_vec()], true, Duration::from_millis(600)).await;
    let answered = tokio::time::timeout(Duration::from_secs(5), answered)
        .await
        .expect("a call whose message comes in time is answered")
        .unwrap();
    assert_eq!(answered.status(), 200);
    assert_eq!(
        answered.headers().get("grpc-status"),
        None,
        "not a trailers-only refusal"
    );
    for (case, (started, _response, connection, sender, client)) in calls {
        let _ = tokio::time::timeout(Duration::from_secs(5), connection)
            .await
            .unwrap_or_else(|_| panic!("{case}: the server closes the connection"));
        let closed = started.elapsed();
        assert!(
            closed >= Duration::from_millis(900) && closed < Duration::from_secs(4),
            "{case}: closed after {closed:?}"
        );
        sender.abort();
        drop(client);
    }
    cancelling.abort();
    let (_, metrics) = tokio::task::spawn_blocking(move || http_get(serve.http, "/metrics"))
        .await
        .unwrap();
    assert!(
        metrics.contains(
            "snowmint_connections_timed_out_total{protocol=\"grpc\",timeout=\"body_read\"} 5\n"
        ),
        "{metrics}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_http2_header_list_gets_a_json_431() {
    let (_state, serve) = start(&[]);
    let http = serve.http;
    let tcp = tokio::net::TcpStream::connect(http).await.unwrap();
    let (client, connection) = h2::client::Builder::new()
        .handshake::<_, Bytes>(tcp)
        .await
        .unwrap();
    tokio::spawn(connection);
    let mut client = client.ready().await.unwrap();
    let request = http::Request::get(format!("http://{http}/v1/id"))
        .version(http::Version::HTTP_2)
        .header("x-big", "a".repeat(20_000))
        .body(())
        .unwrap();
    let (response, _) = client.send_request(request, true).unwrap();
    let response = response.await.unwrap();
    assert_eq!(response.status(), 431);
    let mut body = response.into_body();
    let mut bytes = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        body.flow_control().release_capacity(chunk.len()).unwrap();
        bytes.extend_from_slice(&chunk);
    }
    // RFC 9113 counts name, value and 32 bytes for each field, the pseudo-fields too.
    let size = ("x-big".len() + 20_000 + 32)
        + (":method".len() + "GET".len() + 32)
        + (":path".len() + "/v1/id".len() + 32)
        + (":scheme".len() + "http".len() + 32)
        + (":authority".len() + http.to_string().len() + 32);
    assert_eq!(
        error_of(&String::from_utf8(bytes).unwrap()),
        format!(
            "request headers take {size} bytes, more than the 16384 this server accepts (max_header_bytes)"
        )
    );
}

#[test]
fn idle_connections_do_not_hold_up_a_graceful_stop() {
    let (_state, mut serve) = start(&["--shutdown-grace-ms", "10000"]);
    let grpc = serve.grpc.unwrap();
    // A keep-alive connection between requests, an HTTP/2 client that will not answer the
    // goodbye's ping, and a connection that never said anything.
    let mut kept = TcpStream::connect(serve.http).unwrap();
    write!(kept, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    assert_eq!(read_kept(&mut kept).expect("a response").0, 200);
    let mut h2 = TcpStream::connect(grpc).unwrap();
    h2.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
        .unwrap();
    let _silent = TcpStream::connect(grpc).unwrap();
    assert_eq!(serve.get("/readyz").0, 200);
    let asked = Instant::now();
    let status = serve.terminate();
    let took = asked.elapsed();
    assert!(status.success(), "exit status {status}\n{}", serve.logged());
    let logged = serve.logged();
    assert!(
        !logged.contains("after the grace period"),
        "{took:?}\n{logged}"
    );
    assert!(took < Duration::from_secs(5), "{took:?}");
}

/// Requests pipelined in one write are each answered, in order, whatever their route and
/// outcome; answers to one read go out together, and none is held back waiting for more.
#[test]
fn pipelined_requests_are_answered_in_order() {
    let (_state, serve) = start(&[]);
    let mut s = TcpStream::connect(serve.http).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut batch = String::new();
    let mut expected = Vec::new();
    for i in 0..24 {
        let (target, accept, status) = match i % 6 {
            1 => ("/v1/id", "text/plain", 200),
            3 => ("/healthz", "*/*", 200),
            4 => ("/v1/id?format=octal", "*/*", 400),
            5 => ("/v1/ids?count=3", "text/plain", 200),
            _ => ("/v1/id", "application/json", 200),
        };
        batch.push_str(&format!(
            "GET {target} HTTP/1.1\r\nHost: t\r\nAccept: {accept}\r\n\r\n"
        ));
        expected.push((target, accept, status));
    }
    s.write_all(batch.as_bytes()).unwrap();
    let mut last = 0u64;
    for (target, accept, status) in expected {
        let (got, body) = read_kept(&mut s).expect("a response");
        assert_eq!(got, status, "{target}: {body}");
        if status != 200 || target == "/healthz" {
            continue;
        }
        let first = if accept == "text/plain" {
            body.lines().next().unwrap().parse::<u64>().unwrap()
        } else {
            let json: serde_json::Value = serde_json::from_str(&body).unwrap();
            json["id"].as_str().unwrap().parse().unwrap()
        };
        assert!(first > last, "{target}: {first} after {last}");
        last = body
            .lines()
            .last()
            .and_then(|l| l.parse().ok())
            .unwrap_or(first);
    }
    assert_eq!(serve.get("/v1/id").0, 200);
}

/// A batch with a request that cannot be read in the middle: the requests before it are
/// answered, then the JSON 400, then the connection closes.
#[test]
fn a_malformed_request_in_a_pipelined_batch_is_answered_after_those_before_it() {
    let (_state, serve) = start(&[]);
    let mut s = TcpStream::connect(serve.http).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let good = "GET /v1/id HTTP/1.1\r\nHost: t\r\n\r\n";
    let bad = "GET /v1/id HTTP/1.1\r\nHost: t\r\nNo colon here\r\n\r\n";
    write!(s, "{good}{good}{good}{bad}{good}").unwrap();
    for _ in 0..3 {
        let (status, body) = read_kept(&mut s).expect("a response");
        assert_eq!(status, 200, "{body}");
    }
    let (status, body) = read_kept(&mut s).expect("a response");
    assert_eq!(
        (status, error_of(&body)),
        (
            400,
            "malformed request: the request line or a header is not valid HTTP/1.1".into()
        )
    );
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    assert!(rest.is_empty(), "{}", String::from_utf8_lossy(&rest));
}

/// The segments with data the server's side of a connection from `client` has sent, as the
/// kernel counts them (`ss -ti`).
fn data_segments_sent(server: SocketAddr, client: SocketAddr) -> u64 {
    let out = std::process::Command::new("ss")
        .args(["-tinH", &format!("src = {server} and dst = {client}")])
        .output()
        .expect("ss runs (iproute2; scripts/setup installs it)");
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .find_map(|field| field.strip_prefix("data_segs_out:")?.parse().ok())
        .unwrap_or_else(|| panic!("no data_segs_out for {client} in {text:?}"))
}

/// The answers to the requests of one write go out together: a write a batch, not a write a
/// request.
#[test]
fn pipelined_answers_to_one_write_go_out_together() {
    let (_state, serve) = start(&[]);
    let mut s = TcpStream::connect(serve.http).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let batch = "GET /v1/id HTTP/1.1\r\nHost: t\r\n\r\n".repeat(16);
    let batches = 5;
    for _ in 0..batches {
        s.write_all(batch.as_bytes()).unwrap();
        for _ in 0..16 {
            assert_eq!(read_kept(&mut s).expect("a response").0, 200);
        }
    }
    let segments = data_segments_sent(serve.http, s.local_addr().unwrap());
    // One a batch; hyper on its own writes each answer as it is ready (16 a batch).
    assert!(
        segments <= batches,
        "{segments} segments of data for {batches} batches of 16 requests"
    );
}

/// Clients that pipeline requests as fast as the server reads them and never read an answer:
/// the server stops reading them, holds only a bounded buffer for each, and closes them when
/// they have been idle for `idle_timeout_ms`.
///
/// Ignored: a known defect, not yet fixed. The memory bound holds, but such connections can
/// stay open long past the idle timeout (all 50 still open after 20 s in a clean run): hyper
/// calls the service for a head it has read and polls the answer only once it can write,
/// and the watchdog counts that request as the server's own work. Run it with `--ignored`.
/// Sets `stream`'s receive buffer to `bytes` (the kernel doubles it), and so stops the
/// kernel from growing it: answers that nobody reads back up into the server.
fn receive_buffer(stream: &TcpStream, bytes: libc::c_int) {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid socket, and an option value of the size given.
    let set = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&raw const bytes).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(set, 0, "{}", std::io::Error::last_os_error());
}

/// Clients that pipeline requests for the page (76 KB an answer) and read nothing: the
/// answers back up through the kernel's buffers into the server, which then reads no
/// further, holds little, and closes them once they have not moved for the idle timeout.
/// (Answers of `/v1/id` are too small for that: the kernel's buffers take every answer to
/// 512 KiB of them, and the server, which is not stuck, serves them all.)
#[test]
fn clients_that_pipeline_and_never_read_hold_little_and_are_closed_when_idle() {
    let (_state, serve) = start(&["--idle-timeout-ms", "1000"]);
    let before = serve.proc_status("VmRSS");
    let request = "GET / HTTP/1.1\r\nHost: t\r\n\r\n";
    let batch = request.repeat(1000);
    let mut clients: Vec<TcpStream> = (0..50)
        .map(|_| {
            let s = TcpStream::connect(serve.http).unwrap();
            receive_buffer(&s, 16 * 1024);
            s.set_nonblocking(true).unwrap();
            s
        })
        .collect();
    let begun = Instant::now();
    // Each sends up to 512 KiB of requests, until its socket takes no more: the server has
    // stopped reading it.
    let budget = 512 * 1024;
    let mut sent = vec![0usize; clients.len()];
    let mut moved = Instant::now();
    while moved.elapsed() < Duration::from_secs(1) && begun.elapsed() < Duration::from_secs(15) {
        for (s, sent) in clients.iter_mut().zip(&mut sent) {
            let left = budget - *sent;
            if left == 0 {
                continue;
            }
            if let Ok(n) = s.write(&batch.as_bytes()[..left.min(batch.len())]) {
                *sent += n;
                moved = Instant::now();
            }
        }
    }
    let sent: usize = sent.iter().sum::<usize>() / request.len();
    let peak = serve.proc_status("VmRSS");
    assert!(
        peak < before + 20 * 1024,
        "VmRSS {before} kB before, {peak} kB with 50 clients that sent {sent} requests for the \
         page and read nothing"
    );
    // Idle 1 s: the answers stopped, the connections are closed (only the one asking is left).
    let metrics = eventually(Duration::from_secs(20), "the unread clients closed", || {
        let (_, metrics) = serve.get("/metrics");
        if metrics.contains("snowmint_connections_open{protocol=\"http\"} 1\n") {
            return Ok(metrics);
        }
        Err(metrics
            .lines()
            .find(|l| l.starts_with("snowmint_connections_open{protocol=\"http\"}"))
            .unwrap_or_default()
            .to_string())
    });
    let answered: usize = metrics
        .lines()
        .find_map(|l| {
            l.strip_prefix("snowmint_requests_total{protocol=\"http\",route=\"/\",status=\"200\"} ")
        })
        .map(|n| n.parse().unwrap())
        .unwrap_or_else(|| panic!("no count of the page's answers in {metrics}"));
    assert!(
        answered < sent / 10,
        "{answered} of {sent} requests answered: the server was not held up"
    );
    drop(clients);
    assert_eq!(serve.get("/v1/id").0, 200);
}
