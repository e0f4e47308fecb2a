//! `snowmint serve --clock wall` with its wall clock set back 3 s while a thousand
//! single-id requests arrive at once: each waits for the clock on the server's timer, not
//! on a blocking thread of its own (which held up to tokio's 512 threads), and each is
//! answered within the rollback bound plus a second. libfaketime moves the server's wall
//! clock ([`SteppedClock`]); the threads are counted from the process's /proc status.

use crate::support;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use support::{Serve, SteppedClock, serve_command, spawn_logged};
use tokio::task::JoinSet;

/// Requests in flight at once while the clock is behind.
const REQUESTS: usize = 1_000;
/// Streams per HTTP/2 connection: the server advertises 100.
const STREAMS: usize = 100;
/// How far the clock is set back: well within the wait the policy makes.
const STEP_BACK: &str = "-3s";
const ROLLBACK_WAIT_MS: u64 = 5_000;
/// What the issue allows on top of the rollback bound for each answer.
const ANSWER_SLACK: Duration = Duration::from_secs(1);
/// A request that took this long waited for the clock: others are answered in
/// milliseconds, and this is a third of the step.
const WAITED: Duration = Duration::from_secs(1);
/// How long the test waits for all the answers before it fails rather than hangs.
const GIVE_UP: Duration = Duration::from_secs(15);
/// Threads beyond the async workers: the main thread, the clock's ticker, and what the
/// blocking pool keeps from start-up (claiming the state file) until it idles out.
const OTHER_THREADS: u64 = 6;

fn start(clock: &SteppedClock, state: &std::path::Path) -> Serve {
    let wait = ROLLBACK_WAIT_MS.to_string();
    let mut cmd = serve_command(
        state,
        &[
            "--grpc-addr",
            "off",
            "--clock",
            "wall",
            "--rollback",
            "wait",
            "--rollback-wait-ms",
            &wait,
        ],
    );
    clock.apply(&mut cmd);
    spawn_logged(cmd)
}

/// An HTTP/2 connection without TLS, as a client holding many requests in flight opens it.
async fn connect(addr: SocketAddr) -> h2::client::SendRequest<Bytes> {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (client, connection) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(connection);
    client
}

/// `GET /v1/id` on `client`: the status, the body, and how long the answer took.
async fn get_id(
    client: h2::client::SendRequest<Bytes>,
    addr: SocketAddr,
) -> (u16, String, Duration) {
    let mut client = client.ready().await.unwrap();
    let request = http::Request::get(format!("http://{addr}/v1/id"))
        .version(http::Version::HTTP_2)
        .body(())
        .unwrap();
    let sent = Instant::now();
    let (response, _) = client.send_request(request, true).unwrap();
    let response = response.await.unwrap();
    let status = response.status().as_u16();
    let mut body = response.into_body();
    let mut bytes = BytesMut::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        let _ = body.flow_control().release_capacity(chunk.len());
        bytes.extend_from_slice(&chunk);
    }
    let took = sent.elapsed();
    (status, String::from_utf8(bytes.to_vec()).unwrap(), took)
}

#[test]
fn a_thousand_single_ids_wait_for_a_clock_set_back_without_a_thread_each() {
    let state = tempfile::tempdir().unwrap();
    let clock = SteppedClock::new();
    let serve = start(&clock, state.path());
    serve.wait_ready(Duration::from_secs(10));
    let (status, body) = serve.get("/v1/id");
    assert_eq!(status, 200, "{body}");
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let addr = serve.http;
    let (answers, peak) = runtime.block_on(async {
        let mut clients = Vec::new();
        for _ in 0..REQUESTS / STREAMS {
            clients.push(connect(addr).await);
        }
        clock.step(STEP_BACK);
        let mut requests = JoinSet::new();
        for i in 0..REQUESTS {
            requests.spawn(get_id(clients[i / STREAMS].clone(), addr));
        }
        // The server's threads, counted all the while the requests wait.
        let mut peak = 0;
        let mut answers = Vec::new();
        let deadline = Instant::now() + GIVE_UP;
        while !requests.is_empty() {
            peak = peak.max(serve.proc_status("Threads"));
            tokio::select! {
                Some(answer) = requests.join_next() => answers.push(answer.unwrap()),
                () = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
            assert!(
                Instant::now() < deadline,
                "{} of {REQUESTS} answered, the server at {peak} threads",
                answers.len()
            );
        }
        (answers, peak)
    });

    assert!(
        peak <= workers + OTHER_THREADS,
        "the server ran {peak} threads with {REQUESTS} single-id requests waiting; {workers} async workers"
    );
    let bound = Duration::from_millis(ROLLBACK_WAIT_MS) + ANSWER_SLACK;
    let mut ids = HashSet::new();
    for (status, body, took) in &answers {
        assert_eq!(*status, 200, "{body}");
        assert!(
            *took <= bound,
            "answered after {took:?}, past {bound:?}: {body}"
        );
        let json: serde_json::Value = serde_json::from_str(body).unwrap();
        let id: u64 = json["id"].as_str().unwrap().parse().unwrap();
        assert!(ids.insert(id), "id {id} was answered twice");
    }
    // The clock was behind: the requests did wait for it.
    let waited = answers
        .iter()
        .filter(|(_, _, took)| *took >= WAITED)
        .count();
    assert!(
        waited >= REQUESTS / 2,
        "only {waited} of {REQUESTS} requests waited"
    );
}
