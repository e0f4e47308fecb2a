//! Ids per second through the gRPC `Stream` of a `snowmint serve` on loopback:
//! `grpc_stream ADDR SECONDS`. Prints `ids=N ids_per_s=R`.

use std::time::{Duration, Instant};

use snowmint_proto::v1::StreamRequest;
use snowmint_proto::v1::id_service_client::IdServiceClient;

/// Ids per message: a few ticks' worth, so messages are large but not slow to fill.
const BATCH: u64 = 16_384;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(addr), Some(secs)) = (args.get(1), args.get(2).and_then(|s| s.parse::<u64>().ok()))
    else {
        eprintln!("usage: grpc_stream ADDR SECONDS");
        std::process::exit(2);
    };
    let sock: std::net::SocketAddr = addr.parse().expect("ADDR like 127.0.0.1:50051");
    assert!(
        sock.ip().is_loopback(),
        "load goes to loopback addresses only"
    );
    let mut client = IdServiceClient::connect(format!("http://{addr}"))
        .await
        .expect("connect")
        .max_decoding_message_size(64 << 20);
    let mut stream = client
        .stream(StreamRequest {
            batch_size: BATCH,
            total: 0,
        })
        .await
        .expect("stream")
        .into_inner();
    let limit = Duration::from_secs(secs.min(120));
    let start = Instant::now();
    let mut ids = 0u64;
    let mut last = 0u64;
    while start.elapsed() < limit {
        let Some(message) = stream.message().await.expect("message") else {
            break;
        };
        assert!(
            message.ids.first().is_none_or(|first| *first > last),
            "ids went back"
        );
        last = message.ids.last().copied().unwrap_or(last);
        ids += message.ids.len() as u64;
    }
    let elapsed = start.elapsed().as_secs_f64();
    println!("ids={ids} ids_per_s={:.0}", ids as f64 / elapsed);
}
