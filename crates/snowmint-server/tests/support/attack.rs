//! HTTP/2 attackers and a well-behaved HTTP/1.1 client, each bound to a loopback address
//! of its own, and the server's metrics: for the tests of the budget of ids in flight.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::http;
use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::running::Running;

pub fn ip(octets: [u8; 4]) -> IpAddr {
    IpAddr::from(octets)
}

/// `GET path` over HTTP/1.1 from `from`, read to the end: the status, the body, and how
/// long it took from connecting.
pub async fn get_from(from: IpAddr, addr: SocketAddr, path: &str) -> (u16, String, Duration) {
    get_from_with(from, addr, path, &[]).await
}

/// [`get_from`], with `headers`.
pub async fn get_from_with(
    from: IpAddr,
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, String, Duration) {
    let started = Instant::now();
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::new(from, 0)).unwrap();
    let mut tcp = socket.connect(addr).await.unwrap();
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tcp.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8(answer).unwrap();
    let status = answer[9..12].parse().unwrap();
    let body = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_string());
    (status, body.unwrap_or_default(), started.elapsed())
}

/// An HTTP/2 connection from `from` to `addr` that grants the server no window: nothing
/// sent on it is read.
pub async fn zero_window(addr: SocketAddr, from: IpAddr) -> h2::client::SendRequest<Bytes> {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::new(from, 0)).unwrap();
    let tcp = socket.connect(addr).await.unwrap();
    let (client, connection) = h2::client::Builder::new()
        .initial_window_size(0)
        .handshake::<_, Bytes>(tcp)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

/// One HTTP/2 request for `path` from `from`, with `headers`, on a connection that grants
/// no window, so its answer is never read: what keeps it open.
pub async fn unread(
    addr: SocketAddr,
    from: IpAddr,
    path: &str,
    headers: &[(&str, &str)],
) -> (h2::client::SendRequest<Bytes>, h2::client::ResponseFuture) {
    let client = zero_window(addr, from).await;
    let mut request =
        http::Request::get(format!("http://{addr}{path}")).version(http::Version::HTTP_2);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let mut ready = client.ready().await.unwrap();
    let (response, _) = ready.send_request(request.body(()).unwrap(), true).unwrap();
    (ready, response)
}

/// The value of a metric of the server, 0 if it has none.
pub async fn metric(server: &Running, name: &str) -> u64 {
    let (_, body, _) = get_from(ip([127, 0, 0, 1]), server.http, "/metrics").await;
    body.lines()
        .find_map(|line| {
            line.strip_prefix(name)?
                .strip_prefix(' ')?
                .parse::<f64>()
                .ok()
        })
        .map_or(0, |v| v as u64)
}

/// Waits up to `limit` for `check` to hold of a metric's value; the value it settled at.
pub async fn metric_until(
    server: &Running,
    name: &str,
    limit: Duration,
    check: impl Fn(u64) -> bool,
) -> u64 {
    let deadline = Instant::now() + limit;
    loop {
        let value = metric(server, name).await;
        if check(value) || Instant::now() >= deadline {
            return value;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// HTTP/2 connections asking for batches they do not read, or read a trickle at a time.
pub struct Attack {
    tasks: Vec<JoinHandle<()>>,
    /// Streams the server reset.
    pub resets: Arc<AtomicUsize>,
}

impl Drop for Attack {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Opens `connections` connections to `addr`, from each of `from` in turn, each with
/// `streams` streams asking for `count` ids. Without `trickle` they grant no
/// window; with it, each stream takes 64 KiB every `trickle` and asks again when reset.
pub async fn attack(
    addr: SocketAddr,
    count: u64,
    from: &[IpAddr],
    connections: usize,
    streams: usize,
    trickle: Option<Duration>,
) -> Attack {
    let resets = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for i in 0..connections {
        let socket = TcpSocket::new_v4().unwrap();
        socket
            .bind(SocketAddr::new(from[i % from.len()], 0))
            .unwrap();
        let tcp = socket.connect(addr).await.unwrap();
        let window = if trickle.is_some() { 65_535 } else { 0 };
        let (client, connection) = h2::client::Builder::new()
            .initial_window_size(window)
            .initial_connection_window_size(window.max(65_535) * streams as u32)
            .handshake::<_, Bytes>(tcp)
            .await
            .unwrap();
        tasks.push(tokio::spawn(async move {
            let _ = connection.await;
        }));
        for _ in 0..streams {
            let (client, resets) = (client.clone(), Arc::clone(&resets));
            tasks.push(tokio::spawn(stream(client, addr, count, trickle, resets)));
        }
    }
    Attack { tasks, resets }
}

/// One attacking stream, asked again each time the server resets it.
async fn stream(
    client: h2::client::SendRequest<Bytes>,
    addr: SocketAddr,
    count: u64,
    trickle: Option<Duration>,
    resets: Arc<AtomicUsize>,
) {
    loop {
        let Ok(mut client) = client.clone().ready().await else {
            return;
        };
        let request = http::Request::get(format!("http://{addr}/v1/ids?count={count}"))
            .version(http::Version::HTTP_2)
            .body(())
            .unwrap();
        let Ok((response, _)) = client.send_request(request, true) else {
            return;
        };
        let Ok(response) = response.await else { return };
        let Some(every) = trickle else {
            // Never read: hold the response until the attack ends.
            let _held = response;
            std::future::pending::<()>().await;
            return;
        };
        let mut body = response.into_body();
        'trickle: loop {
            let mut taken = 0;
            while taken < 64 * 1024 {
                match body.data().await {
                    Some(Ok(chunk)) => {
                        taken += chunk.len();
                        let _ = body.flow_control().release_capacity(chunk.len());
                    }
                    Some(Err(_)) => {
                        resets.fetch_add(1, Ordering::SeqCst);
                        break 'trickle;
                    }
                    None => break 'trickle,
                }
            }
            tokio::time::sleep(every).await;
        }
    }
}

/// A gRPC message: uncompressed, length-prefixed.
pub fn grpc_message(message: &impl prost::Message) -> Bytes {
    let body = message.encode_to_vec();
    let mut framed = vec![0u8];
    framed.extend_from_slice(&u32::try_from(body.len()).unwrap().to_be_bytes());
    framed.extend_from_slice(&body);
    Bytes::from(framed)
}
