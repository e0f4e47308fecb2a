//! Unary gRPC `Next` calls to a `snowmint serve` on loopback, back to back on CONNS
//! connections (one call in flight on each), bounded in time: `grpc_unary ADDR CONNS SECONDS`.
//!
//! Prints one line of `key=value` pairs: requests, errors, req/s and latency p50/p99/p999 in
//! microseconds. One thread drives every connection, as `wrk -t1` does for HTTP, so the
//! server gets the machine's other core.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use snowmint_proto::v1::NextRequest;
use snowmint_proto::v1::id_service_client::IdServiceClient;

/// Stops a run that cannot reach its end, whatever the arguments say.
const MAX_SECONDS: u64 = 120;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let parsed = (
        args.get(1).and_then(|s| s.parse::<SocketAddr>().ok()),
        args.get(2).and_then(|s| s.parse::<usize>().ok()),
        args.get(3).and_then(|s| s.parse::<u64>().ok()),
    );
    let (Some(addr), Some(conns), Some(secs)) = parsed else {
        eprintln!("usage: grpc_unary ADDR CONNS SECONDS");
        std::process::exit(2);
    };
    assert!(
        addr.ip().is_loopback(),
        "load goes to loopback addresses only"
    );
    let duration = Duration::from_secs(secs.min(MAX_SECONDS));
    let mut clients = Vec::with_capacity(conns);
    for _ in 0..conns {
        // One channel each: a channel is one HTTP/2 connection.
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
            .expect("endpoint")
            .connect()
            .await
            .expect("connect");
        clients.push(IdServiceClient::new(channel));
    }
    let start = Instant::now();
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|mut client| {
            tokio::spawn(async move {
                let mut latencies_us = Vec::with_capacity(1 << 16);
                let mut errors = 0u64;
                let mut last = 0u64;
                while start.elapsed() < duration {
                    let sent = Instant::now();
                    match client.next(NextRequest {}).await {
                        Ok(response) => {
                            let id = response.into_inner().id;
                            assert!(id > last, "ids went back on one connection");
                            last = id;
                            latencies_us.push(sent.elapsed().as_micros() as u64);
                        }
                        Err(_) => errors += 1,
                    }
                }
                (latencies_us, errors)
            })
        })
        .collect();
    let mut latencies = Vec::new();
    let mut errors = 0;
    for task in tasks {
        let (l, e) = task.await.expect("load task");
        latencies.extend(l);
        errors += e;
    }
    let elapsed = start.elapsed().as_secs_f64();
    latencies.sort_unstable();
    let pct = |p: f64| {
        latencies
            .get(((latencies.len() as f64 * p) as usize).min(latencies.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0)
    };
    println!(
        "requests={} errors={} req_per_s={:.0} p50_us={} p99_us={} p999_us={}",
        latencies.len(),
        errors,
        latencies.len() as f64 / elapsed,
        pct(0.50),
        pct(0.99),
        pct(0.999)
    );
}
