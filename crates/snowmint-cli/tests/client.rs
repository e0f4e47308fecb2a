//! `snowmint-client` against real `snowmint serve` processes on loopback: many takers, a
//! server SIGKILLed while the client draws, every endpoint down, ids growing stale, a
//! server not ready, and the order across a failover.

use crate::support;

use std::net::TcpListener;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use snowmint::{Id, Layout};
use snowmint_client::{Client, Error, Transport};
use support::{
    Serve, now_ms, serve_command, spawn_logged, strictly_increasing, twitter_ms, wall_clock_offset,
};

/// `snowmint serve` with gRPC on a free port too, ready.
fn start(state: &Path, extra: &[&str]) -> Serve {
    let mut cmd = serve_command(state, extra);
    cmd.args(["--grpc-addr", "127.0.0.1:0"]);
    let serve = spawn_logged(cmd);
    serve.wait_ready(Duration::from_secs(15));
    serve
}

fn grpc_url(serve: &Serve) -> String {
    format!("http://{}", serve.grpc.expect("a gRPC address"))
}

fn http_url(serve: &Serve) -> String {
    format!("http://{}", serve.http)
}

fn worker(id: u64) -> u64 {
    Layout::TWITTER
        .decode(Id::from_u64(id))
        .expect("a twitter id")
        .worker
}

/// Requests to `route` that answered `status`, from the server's /metrics.
fn requests(serve: &Serve, protocol: &str, route: &str, status: u16) -> u64 {
    let (_, metrics) = serve.get("/metrics");
    let labels = format!(
        "snowmint_requests_total{{protocol=\"{protocol}\",route=\"{route}\",status=\"{status}\"}} "
    );
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(&labels)?.parse().ok())
        .unwrap_or(0)
}

/// `tasks` tasks drawing `each` ids from one client: each task's ids increase, and no id
/// is drawn twice.
async fn draw_concurrently(client: &Client, tasks: usize, each: usize) -> Vec<u64> {
    let handles: Vec<_> = (0..tasks)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move {
                let mut got = Vec::with_capacity(each);
                for _ in 0..each {
                    got.push(client.next_id().await.expect("an id").as_u64());
                }
                got
            })
        })
        .collect();
    let mut all = Vec::with_capacity(tasks * each);
    for handle in handles {
        let got = handle.await.unwrap();
        assert!(strictly_increasing(&got), "a task's ids went back");
        all.extend(got);
    }
    let drawn = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), drawn, "an id was handed out twice");
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_tasks_draw_a_million_ids_all_distinct_each_increasing() {
    let state = tempfile::tempdir().unwrap();
    let serve = start(state.path(), &["--worker", "3"]);
    let client = Client::builder()
        .endpoints([grpc_url(&serve)])
        .build()
        .unwrap();
    let all = draw_concurrently(&client, 8, 125_000).await;
    assert_eq!(all.len(), 1_000_000);
    assert!(all.iter().all(|&id| worker(id) == 3));
    let stats = client.stats();
    assert_eq!(stats.failovers, 0, "{stats:?}");
    assert_eq!(stats.endpoint, Some(grpc_url(&serve)));
    // A million ids in batches of at most 100,000, the first ones small.
    assert!(stats.refills >= 10, "{stats:?}");
    // One call a batch; one more may be in flight.
    let calls = requests(&serve, "grpc", "NextBatch", 0);
    assert!(
        (stats.refills..=stats.refills + 1).contains(&calls),
        "{calls} calls, {stats:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_tasks_draw_distinct_increasing_ids() {
    let state = tempfile::tempdir().unwrap();
    let serve = start(state.path(), &[]);
    let client = Client::builder()
        .endpoints([http_url(&serve)])
        .transport(Transport::Http)
        .build()
        .unwrap();
    let all = draw_concurrently(&client, 4, 50_000).await;
    assert_eq!(all.len(), 200_000);
    let batch = client.next_ids(5_000).await.unwrap();
    assert_eq!(batch.len(), 5_000);
    assert!(batch.windows(2).all(|w| w[0] < w[1]));
    assert!(batch[0].as_u64() > *all.last().unwrap());
    let (calls, refills) = (
        requests(&serve, "http", "/v1/ids", 200),
        client.stats().refills,
    );
    assert!(
        (refills..=refills + 1).contains(&calls),
        "{calls} calls, {refills} refills"
    );
}

#[test]
fn a_server_killed_while_the_client_draws_fails_no_call_and_repeats_no_id() {
    let (state_a, state_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut a = start(state_a.path(), &["--worker", "1"]);
    let b = start(state_b.path(), &["--worker", "2"]);
    let client = Client::builder()
        .endpoints([grpc_url(&a), grpc_url(&b)])
        .build_blocking()
        .unwrap();
    const TAKERS: usize = 4;
    const EACH: usize = 300_000;
    /// Reported every this many ids, so the takers do not share a counter on every take.
    const REPORT: usize = 1024;
    let drawn = AtomicUsize::new(0);
    let mut all = Vec::with_capacity(TAKERS * EACH);
    std::thread::scope(|s| {
        let takers: Vec<_> = (0..TAKERS)
            .map(|_| {
                s.spawn(|| {
                    let mut got = Vec::with_capacity(EACH);
                    while got.len() < EACH {
                        match client.next_id() {
                            Ok(id) => got.push(id.as_u64()),
                            Err(e) => panic!("a call failed: {e}"),
                        }
                        if got.len() % REPORT == 0 {
                            drawn.fetch_add(REPORT, Relaxed);
                        }
                    }
                    got
                })
            })
            .collect();
        // A fifth of the way in, the server the client draws from is killed.
        let deadline = Instant::now() + Duration::from_secs(60);
        while drawn.load(Relaxed) < TAKERS * EACH / 5 {
            assert!(Instant::now() < deadline, "the takers stalled");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(client.stats().endpoint, Some(grpc_url(&a)));
        a.kill();
        let killed_at = drawn.load(Relaxed);
        assert!(
            killed_at < TAKERS * EACH,
            "killed after the takers were done"
        );
        for taker in takers {
            all.extend(taker.join().expect("no call failed"));
        }
    });
    let drawn = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), drawn, "an id was handed out twice");
    let from_b = all.iter().filter(|&&id| worker(id) == 2).count();
    assert!(from_b > 0, "nothing drawn from the server left standing");
    assert_eq!(
        all.iter().filter(|&&id| worker(id) == 1).count() + from_b,
        drawn
    );
    let stats = client.stats();
    assert_eq!(stats.failovers, 1, "{stats:?}");
    assert_eq!(stats.endpoint, Some(grpc_url(&b)));
}

/// A port nobody listens on: bound, then let go.
fn refusing() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}")
}

#[test]
fn with_every_endpoint_down_a_take_fails_in_bounded_time_naming_each() {
    let state = tempfile::tempdir().unwrap();
    let mut serve = start(state.path(), &[]);
    // Takes connections into its backlog and never answers.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("http://{}", silent.local_addr().unwrap());
    let refusing_url = refusing();
    let timeout = Duration::from_millis(200);
    let client = Client::builder()
        .endpoints([grpc_url(&serve), refusing_url.clone(), silent_url.clone()])
        .timeout(timeout)
        .build_blocking()
        .unwrap();
    client.next_id().expect("the server is up");
    serve.kill();

    // What the buffer holds is still handed out, then every take fails.
    let deadline = Instant::now() + Duration::from_secs(30);
    let first = loop {
        match client.next_id() {
            Ok(_) => assert!(Instant::now() < deadline, "the buffer never ran dry"),
            Err(e) => break e,
        }
    };
    // Each failed take costs one round of calls: a timeout at most per endpoint.
    let bound = timeout * 3 + Duration::from_secs(2);
    let asked = Instant::now();
    let again = client.next_id().unwrap_err();
    assert!(asked.elapsed() < bound, "took {:?}", asked.elapsed());
    for err in [&first, &again] {
        let Error::Unavailable(failures) = err else {
            panic!("not an outage: {err}")
        };
        let endpoints: Vec<&str> = failures.iter().map(|f| f.endpoint.as_str()).collect();
        let mut expected = vec![grpc_url(&serve), refusing_url.clone(), silent_url.clone()];
        expected.sort();
        let mut named: Vec<String> = endpoints.iter().map(ToString::to_string).collect();
        named.sort();
        assert_eq!(named, expected, "{err}");
        let text = err.to_string();
        assert!(text.starts_with("no endpoint gave ids: "), "{text}");
        assert!(
            text.contains(&format!("{silent_url} (timed out after 200 ms)")),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "{refusing_url} (transport error: tcp connect error: Connection refused"
            )),
            "{text}"
        );
    }
    let stats = client.stats();
    assert_eq!(stats.buffered, 0);
    assert!(stats.failed_rounds >= 2, "{stats:?}");
    drop(silent);
}

#[test]
fn ids_older_than_max_age_are_thrown_away_never_handed_out() {
    let state = tempfile::tempdir().unwrap();
    let serve = start(state.path(), &[]);
    // A call must end well within the max age, or its ids would be stale on arrival; both
    // leave room for a first connection on a loaded machine.
    let max_age = Duration::from_millis(1_000);
    let client = Client::builder()
        .endpoints([grpc_url(&serve)])
        .max_age(max_age)
        .timeout(max_age / 2)
        .build_blocking()
        .unwrap();
    // An id handed out at `now_ms` was issued after its call was sent, less than the max
    // age before: by the server's clock (the same machine's), within a millisecond's
    // rounding of each reading.
    let fresh = |id: u64| {
        let age = now_ms().saturating_sub(twitter_ms(id));
        assert!(
            u128::from(age) <= max_age.as_millis() + 2,
            "an id {age} ms old was handed out"
        );
    };
    fresh(client.next_id().unwrap().as_u64());
    assert!(client.stats().buffered > 0);
    // What ages here is real time on both clocks, so the test lets it pass; the buffer's
    // own tests drive a fake clock through the same rules.
    std::thread::sleep(max_age + Duration::from_millis(50));
    fresh(client.next_id().unwrap().as_u64());
    let stats = client.stats();
    assert!(stats.discarded_stale >= 63, "{stats:?}");
    // Drawn slowly, over several max ages: every id fresh, the stale ones counted.
    let mut last = 0;
    for _ in 0..40 {
        let id = client.next_id().unwrap().as_u64();
        fresh(id);
        assert!(id > last);
        last = id;
        std::thread::sleep(max_age / 10);
    }
    assert!(client.stats().discarded_stale > stats.discarded_stale);
}

#[test]
fn a_server_not_ready_is_skipped_until_it_is_ready_again() {
    let (state_a, state_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // A crash leaves A's high-water mark reserved ahead; restarted with its clock 2 s
    // behind, A answers 503 until its clock passes the mark.
    let crashed = start(state_a.path(), &["--worker", "1"]);
    assert_eq!(crashed.get("/v1/ids?count=10").0, 200);
    drop(crashed);
    let mut cmd = serve_command(state_a.path(), &["--worker", "1", "--grpc-addr", "off"]);
    wall_clock_offset(&mut cmd, "-2s");
    let a = spawn_logged(cmd);
    let (status, ready) = a.get("/readyz");
    assert_eq!(status, 503, "{ready}");
    // Alone, A's refusal is the error, in its own words.
    let alone = Client::builder()
        .endpoints([http_url(&a)])
        .transport(Transport::Http)
        .build_blocking()
        .unwrap();
    let err = alone.next_id().unwrap_err().to_string();
    let prefix = format!("no endpoint gave ids: {} (not ready: ", http_url(&a));
    assert!(err.starts_with(&prefix), "{err}");
    assert!(err.contains("behind the high-water mark"), "{err}");
    drop(alone);
    let mut b = start(state_b.path(), &["--worker", "2"]);
    let client = Client::builder()
        .endpoints([http_url(&a), http_url(&b)])
        .transport(Transport::Http)
        .build_blocking()
        .unwrap();

    let mut all: Vec<u64> = (0..20_000)
        .map(|_| client.next_id().expect("B serves").as_u64())
        .collect();
    assert!(all.iter().all(|&id| worker(id) == 2), "an id from A");
    let refused = requests(&a, "http", "/v1/ids", 503);
    assert_eq!(
        refused, 2,
        "A was called again while B served (once by the client alone)"
    );
    let stats = client.stats();
    assert_eq!(stats.failovers, 1, "{stats:?}");

    // Once A is ready and B is gone, A serves again, and no call fails.
    a.wait_ready(Duration::from_secs(15));
    b.kill();
    let more: Vec<u64> = (0..20_000)
        .map(|_| client.next_id().expect("A is ready").as_u64())
        .collect();
    assert!(more.iter().any(|&id| worker(id) == 1));
    assert_eq!(client.stats().endpoint, Some(http_url(&a)));
    all.extend(more);
    let drawn = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), drawn, "an id was handed out twice");
}

#[test]
fn monotonic_ids_increase_across_a_failover_to_a_server_behind() {
    let (state_a, state_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut a = start(state_a.path(), &["--worker", "1"]);
    // B's clock is a second behind A's: its ids are lower for a second.
    let mut cmd = serve_command(
        state_b.path(),
        &["--worker", "2", "--grpc-addr", "127.0.0.1:0"],
    );
    wall_clock_offset(&mut cmd, "-1s");
    let b = spawn_logged(cmd);
    b.wait_ready(Duration::from_secs(15));
    let client = Client::builder()
        .endpoints([grpc_url(&a), grpc_url(&b)])
        .monotonic(true)
        .build_blocking()
        .unwrap();
    let mut got: Vec<u64> = (0..10_000)
        .map(|_| client.next_id().unwrap().as_u64())
        .collect();
    a.kill();
    let (_, body) = b.get("/v1/ids?count=1");
    let b_now = support::ids(&body)[0];
    assert!(b_now < *got.last().unwrap(), "B's ids are lower than A's");
    got.extend((0..10_000).map(|_| client.next_id().expect("B serves").as_u64()));
    assert!(
        strictly_increasing(&got),
        "an id went back across the failover"
    );
    assert!(got.iter().any(|&id| worker(id) == 2));
    let stats = client.stats();
    assert!(stats.discarded_out_of_order > 0, "{stats:?}");
}
