//! The budget of ids in flight under the attacks of issue 21, on a real server on
//! loopback: HTTP/2 connections whose streams ask for large batches and never read them,
//! or read them a trickle at a time, from one address or several, while a well-behaved
//! client on another loopback address asks for small and large batches and reads them.
//!
//! The server runs at a quarter of the default budget (1,048,576 ids, 65,536 a
//! connection), and each attacking stream asks for 16,384 ids: sixteen connections of four
//! such streams hold the whole budget if nothing stops them, as sixteen of four 65,536-id
//! streams hold the default one. Bounds are generous: a loaded two-core machine runs them.

use crate::attacker;
use crate::running;

use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::time::Duration;

use attacker::{
    attack, get_from, get_from_with, grpc_message, ip, metric, metric_until, unread, zero_window,
};
use axum::http;
use running::{Running, start_with_batch};
use snowmint_proto::v1::{NextBatchRequest, StreamRequest};
use tokio::time::Instant;

const BUDGET: &str = "max_ids_in_flight = 1048576\nmax_ids_in_flight_per_connection = 65536";
const BUDGET_IDS: u64 = 1_048_576;
/// What each attacking stream asks for.
const ATTACK_BATCH: u64 = 16_384;
/// The well-behaved client's address; the attackers use 127.0.0.3 and up.
const GOOD: [u8; 4] = [127, 0, 0, 2];
/// How long a small request may take here, against the 1 s asked of the server (which
/// `snowmint-chaos abuse` measures): room for a debug build on a two-core machine that
/// others load too, and still short of the 5 s after which a request that found no room
/// gets its 503.
const SMALL_WITHIN: Duration = Duration::from_secs(3);

/// One attack at a time: each runs thousands of streams on a small machine.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Small requests from the well-behaved client, one every 250 ms for `window`, each on
/// its own so that a slow one does not hold up the next: the first, and each that began at
/// least `from` into the window, must be answered 200 within [`SMALL_WITHIN`].
async fn small_requests_are_served(server: &Running, window: Duration, from: Duration) {
    let started = Instant::now();
    let mut requests = Vec::new();
    let mut pace = tokio::time::interval(Duration::from_millis(250));
    while started.elapsed() < window {
        pace.tick().await;
        let at = started.elapsed();
        let http = server.http;
        let request =
            tokio::spawn(async move { get_from(ip(GOOD), http, "/v1/ids?count=100").await });
        requests.push((at, request));
    }
    let checked = requests.len();
    for (i, (at, request)) in requests.into_iter().enumerate() {
        let (status, body, took) = request.await.unwrap();
        if i == 0 || at >= from {
            assert_eq!(status, 200, "{at:?} into the attack: {body}");
            assert!(
                took < SMALL_WITHIN,
                "{at:?} into the attack, 100 ids took {took:?}"
            );
        }
    }
    assert!(checked > 4, "only {checked} requests in {window:?}");
}

/// Waits until the attack holds what it can: half the budget or more, all of it on a
/// server with no fair shares.
async fn attack_holds(server: &Running) {
    let held = metric_until(
        server,
        "snowmint_ids_in_flight",
        Duration::from_secs(20),
        |n| n >= BUDGET_IDS / 2,
    )
    .await;
    assert!(held >= BUDGET_IDS / 2, "the attack holds only {held} ids");
}

/// Waits, up to 10 s, until no ids are held in flight (what nobody read was given back at
/// its drain deadline), failing with `message` if some still are.
async fn all_room_given_back(server: &Running, message: &str) {
    let left = metric_until(
        server,
        "snowmint_ids_in_flight",
        Duration::from_secs(10),
        |n| n == 0,
    )
    .await;
    assert_eq!(left, 0, "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_connections_that_never_read_leave_room_and_lose_their_hold() {
    let _one = ONE_AT_A_TIME.lock().await;
    // Connections stalled for 11 s are closed: after the window the client is measured in.
    let server = start_with_batch(65_536, &format!("{BUDGET}\nidle_timeout_ms = 11000")).await;
    let attack = attack(
        server.http,
        ATTACK_BATCH,
        &[ip([127, 0, 0, 3])],
        16,
        4,
        None,
    )
    .await;
    attack_holds(&server).await;
    small_requests_are_served(&server, Duration::from_secs(10), Duration::from_secs(8)).await;
    // What the streams hold is given back at their drain deadline, connections open.
    all_room_given_back(&server, "ids still held by responses nobody reads").await;
    assert!(metric(&server, "snowmint_ids_abandoned_total").await >= BUDGET_IDS / 2);
    // The abandoned responses are still out, so the stalled timeout closes their
    // connections as before.
    let stalled = "snowmint_connections_timed_out_total{protocol=\"http\",timeout=\"stalled\"}";
    let closed = metric_until(&server, stalled, Duration::from_secs(15), |n| n == 16).await;
    assert_eq!(closed, 16);
    drop(attack);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_read_a_trickle_at_a_time_lose_their_hold() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = start_with_batch(65_536, BUDGET).await;
    // 64 KiB a stream every 5 s: progress often enough never to look stalled, but so
    // slow (13 KiB/s) that each 377 KB response would hold its ids for half a minute.
    let attack = attack(
        server.http,
        ATTACK_BATCH,
        &[ip([127, 0, 0, 3])],
        16,
        4,
        Some(Duration::from_secs(5)),
    )
    .await;
    attack_holds(&server).await;
    small_requests_are_served(&server, Duration::from_secs(10), Duration::from_secs(8)).await;
    // Its responses were dropped at their deadline, and their streams are reset when the
    // trickle next opens its window (every 5 s; a loaded machine may take longer).
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while attack.resets.load(Ordering::SeqCst) == 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        attack.resets.load(Ordering::SeqCst) > 0,
        "no trickling stream was reset within 30 s"
    );
    assert!(metric(&server, "snowmint_ids_abandoned_total").await > 0);
    drop(attack);
    server.stop().await;
}

/// A thousand connections of four unread streams, from `addresses` addresses: small
/// requests are answered, and a large one that is read is served within 5 s.
async fn a_thousand_connections_from(addresses: u8) {
    let server = start_with_batch(65_536, BUDGET).await;
    let from: Vec<IpAddr> = (0..addresses).map(|i| ip([127, 0, 0, 3 + i])).collect();
    let attack = attack(server.http, ATTACK_BATCH, &from, 1000, 4, None).await;
    attack_holds(&server).await;
    // A small request at once, beside the large one.
    let http = server.http;
    let small = tokio::spawn(async move { get_from(ip(GOOD), http, "/v1/ids?count=100").await });
    let (status, body, took) = get_from(ip(GOOD), server.http, "/v1/ids?count=65536").await;
    assert_eq!(status, 200, "{body}");
    assert!(took < Duration::from_secs(5), "65,536 ids took {took:?}");
    assert_eq!(body.matches(',').count(), 65_535);
    let (status, body, took) = small.await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(took < SMALL_WITHIN, "100 ids took {took:?}");
    small_requests_are_served(&server, Duration::from_secs(10), Duration::from_secs(8)).await;
    drop(attack);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_connections_from_one_address_leave_room_for_others() {
    let _one = ONE_AT_A_TIME.lock().await;
    a_thousand_connections_from(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_connections_from_eight_addresses_leave_room_for_others() {
    let _one = ONE_AT_A_TIME.lock().await;
    a_thousand_connections_from(8).await;
}

/// As many addresses as the budget holds attacking streams: each may take one request
/// while it holds nothing, and together they would hold it all but for the small requests'
/// reserve and the turn a client that reads takes before those that do not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_connections_from_sixty_four_addresses_leave_room_for_others() {
    let _one = ONE_AT_A_TIME.lock().await;
    a_thousand_connections_from(64).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_batches_nobody_reads_leave_room_and_lose_their_hold() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = start_with_batch(65_536, BUDGET).await;
    let addr = server.addr;
    let call = NextBatchRequest {
        count: ATTACK_BATCH,
    };
    // Sixteen gRPC connections of four NextBatch calls, granting no window.
    let (mut clients, mut held) = (Vec::new(), Vec::new());
    for _ in 0..16 {
        let client = zero_window(addr, ip([127, 0, 0, 3])).await;
        for _ in 0..4 {
            let mut client = client.clone().ready().await.unwrap();
            let request =
                http::Request::post(format!("http://{addr}/snowmint.v1.IdService/NextBatch"))
                    .version(http::Version::HTTP_2)
                    .header("content-type", "application/grpc")
                    .header("te", "trailers")
                    .body(())
                    .unwrap();
            let (response, mut body) = client.send_request(request, false).unwrap();
            body.send_data(grpc_message(&call), true).unwrap();
            held.push(response);
        }
        clients.push(client);
    }
    attack_holds(&server).await;
    let (status, body, took) = get_from(ip(GOOD), server.http, "/v1/ids?count=100").await;
    assert_eq!(status, 200, "{body}");
    assert!(took < SMALL_WITHIN, "100 ids took {took:?}");
    // 131 KB a response: each gives its room back 2.1 s after it was made.
    all_room_given_back(&server, "ids still held by messages nobody reads").await;
    drop((clients, held));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_trusted_proxy_the_client_is_the_address_it_names() {
    let _one = ONE_AT_A_TIME.lock().await;
    // Room for three batches beside the small requests' sixteenth; a drain grace past the
    // test, so nothing is given back.
    let settings = "max_ids_in_flight = 320000\nmax_ids_in_flight_per_connection = 100000\ndrain_grace_ms = 60000\ntrusted_proxies = \"127.0.0.3\"";
    let server = start_with_batch(100_000, settings).await;
    let (proxy, other) = (ip([127, 0, 0, 3]), ip([127, 0, 0, 4]));
    let path = "/v1/ids?count=100000";
    let names = |client| [("x-forwarded-for", client)];
    // Through the proxy, one client holds a batch it does not read.
    let _first = unread(server.http, proxy, path, &names("198.51.100.1")).await;
    // So does a peer that is no trusted proxy, whatever its header says.
    let _second = unread(server.http, other, path, &names("198.51.100.1")).await;
    let held = metric_until(
        &server,
        "snowmint_ids_in_flight",
        Duration::from_secs(10),
        |n| n == 200_000,
    )
    .await;
    assert_eq!(held, 200_000);
    // Another client behind the proxy has its own share: a third of the budget.
    let (status, body, took) =
        get_from_with(proxy, server.http, path, &names("198.51.100.2")).await;
    assert_eq!(status, 200, "{body}");
    assert!(took < Duration::from_secs(3), "{took:?}");
    // The other peer's header names no one: it is at its share, and waits in vain.
    let (status, body, _) = get_from_with(other, server.http, path, &names("198.51.100.3")).await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("fair share"), "{body}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_stream_whose_batch_is_not_taken_loses_its_hold() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = start_with_batch(65_536, BUDGET).await;
    let addr = server.addr;
    // The usual 64 KiB window, never read: the server makes one batch of 131 KB, sends
    // what the window takes, and holds the rest.
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (client, connection) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(connection);
    let mut client = client.ready().await.unwrap();
    let request = http::Request::post(format!("http://{addr}/snowmint.v1.IdService/Stream"))
        .version(http::Version::HTTP_2)
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .unwrap();
    let (response, mut body) = client.send_request(request, false).unwrap();
    let call = StreamRequest {
        batch_size: ATTACK_BATCH,
        total: 0,
    };
    body.send_data(grpc_message(&call), true).unwrap();
    let held = metric_until(
        &server,
        "snowmint_ids_in_flight",
        Duration::from_secs(10),
        |n| n >= ATTACK_BATCH,
    )
    .await;
    assert_eq!(held, ATTACK_BATCH);
    // Its room is given back at the batch's deadline, and the stream is dropped.
    all_room_given_back(&server, "a stream nobody reads still holds its batch").await;
    assert_eq!(
        metric(&server, "snowmint_ids_abandoned_total").await,
        ATTACK_BATCH
    );
    drop((client, response));
    server.stop().await;
}
