//! Attacks on the budget of ids in flight: HTTP/2 connections (h2c, on the HTTP port)
//! whose streams ask for large batches and never read them, or read them a trickle at a
//! time, from one loopback address or several. Attackers bind to 127.0.0.2 and up, so the
//! server can tell them from the well-behaved client on 127.0.0.1.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::time::Duration;

use bytes::Bytes;
use tokio::net::TcpSocket;

use super::report::Saw;

/// What a trickling stream takes each time: about one HTTP/2 window.
const TRICKLE_BYTES: usize = 64 * 1024;
/// How often the attacker looks at the stop flag.
const TICK: Duration = Duration::from_millis(100);

/// One attack on the budget.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Connections, spread over `from` in turn.
    pub connections: usize,
    /// Streams on each.
    pub streams: usize,
    /// Ids each stream asks for.
    pub count: u64,
    /// Loopback addresses the connections come from.
    pub from: Vec<IpAddr>,
    /// None: grant no window and never read. Some: take [`TRICKLE_BYTES`] of each stream
    /// this often, and ask again when the stream ends or is reset.
    pub trickle: Option<Duration>,
}

/// The loopback addresses 127.0.0.2, 127.0.0.3, ... `n` of them.
pub fn addresses(n: usize) -> Vec<IpAddr> {
    (0..n.clamp(1, 250))
        .map(|i| IpAddr::from([127, 0, 0, 2 + i as u8]))
        .collect()
}

/// What the attacker saw.
#[derive(Debug, Default)]
struct Tally {
    failed: AtomicUsize,
    asked: AtomicUsize,
    ok: AtomicUsize,
    refused: AtomicUsize,
    reset: AtomicUsize,
    finished: AtomicUsize,
    data_bytes: AtomicUsize,
}

/// Runs `plan` against `addr`: signals `ready` once every connection has asked, and keeps
/// them until `stop`.
pub fn run(addr: SocketAddr, plan: &Plan, ready: &Sender<()>, stop: &Arc<AtomicBool>) -> Saw {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = ready.send(());
            return Saw {
                text: format!("no runtime: {e}"),
            };
        }
    };
    let tally = Arc::new(Tally::default());
    runtime.block_on(async {
        for i in 0..plan.connections {
            let from = plan.from[i % plan.from.len()];
            if open(addr, from, plan, &tally).await.is_err() {
                tally.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
        let _ = ready.send(());
        while !stop.load(Ordering::Relaxed) {
            tokio::time::sleep(TICK).await;
        }
    });
    // Dropping the runtime closes every connection.
    drop(runtime);
    let n = |c: &AtomicUsize| c.load(Ordering::Relaxed);
    let mut text = format!(
        "{} connections x {} streams from {} address{}: {} asked, {} answered 200, {} refused, {} reset by the server, {} read to the end, {} data bytes received",
        plan.connections - n(&tally.failed),
        plan.streams,
        plan.from.len(),
        if plan.from.len() == 1 { "" } else { "es" },
        n(&tally.asked),
        n(&tally.ok),
        n(&tally.refused),
        n(&tally.reset),
        n(&tally.finished),
        n(&tally.data_bytes),
    );
    if n(&tally.failed) > 0 {
        text.push_str(&format!(", {} connections failed", n(&tally.failed)));
    }
    Saw { text }
}

/// One connection from `from`, with its streams.
async fn open(
    addr: SocketAddr,
    from: IpAddr,
    plan: &Plan,
    tally: &Arc<Tally>,
) -> std::io::Result<()> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(from, 0))?;
    let tcp = socket.connect(addr).await?;
    let window = if plan.trickle.is_some() { 65_535 } else { 0 };
    let streams = u32::try_from(plan.streams).unwrap_or(u32::MAX);
    let (client, connection) = h2::client::Builder::new()
        .initial_window_size(window)
        .initial_connection_window_size(65_535u32.saturating_mul(streams))
        .handshake::<_, Bytes>(tcp)
        .await
        .map_err(std::io::Error::other)?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    for _ in 0..plan.streams {
        let (client, tally) = (client.clone(), Arc::clone(tally));
        let path = format!("http://{addr}/v1/ids?count={}", plan.count);
        tokio::spawn(stream(client, path, plan.trickle, tally));
    }
    Ok(())
}

/// One stream: asks, then holds the answer unread, or trickles it and asks again.
async fn stream(
    client: h2::client::SendRequest<Bytes>,
    path: String,
    trickle: Option<Duration>,
    tally: Arc<Tally>,
) {
    loop {
        let Ok(mut client) = client.clone().ready().await else {
            return;
        };
        let Ok(request) = http::Request::get(&path)
            .version(http::Version::HTTP_2)
            .body(())
        else {
            return;
        };
        let Ok((response, _)) = client.send_request(request, true) else {
            return;
        };
        tally.asked.fetch_add(1, Ordering::Relaxed);
        let response = match response.await {
            Ok(response) if response.status() == 200 => {
                tally.ok.fetch_add(1, Ordering::Relaxed);
                response
            }
            Ok(response) => {
                tally.refused.fetch_add(1, Ordering::Relaxed);
                // A refusal is an answer too: hold it as the attack holds everything.
                let _held = response;
                std::future::pending::<()>().await;
                return;
            }
            Err(_) => {
                tally.reset.fetch_add(1, Ordering::Relaxed);
                continue;
            }
        };
        let Some(every) = trickle else {
            let _held = response;
            std::future::pending::<()>().await;
            return;
        };
        let mut body = response.into_body();
        'trickle: loop {
            let mut taken = 0;
            while taken < TRICKLE_BYTES {
                match body.data().await {
                    Some(Ok(chunk)) => {
                        taken += chunk.len();
                        tally.data_bytes.fetch_add(chunk.len(), Ordering::Relaxed);
                        let _ = body.flow_control().release_capacity(chunk.len());
                    }
                    Some(Err(_)) => {
                        tally.reset.fetch_add(1, Ordering::Relaxed);
                        break 'trickle;
                    }
                    None => {
                        tally.finished.fetch_add(1, Ordering::Relaxed);
                        break 'trickle;
                    }
                }
            }
            tokio::time::sleep(every).await;
        }
    }
}
