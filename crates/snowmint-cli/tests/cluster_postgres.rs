//! `snowmint serve --lease postgres://primary,standby/...?target_session_attrs=read-write`
//! against a real PostgreSQL primary and its streaming standby: a failover that loses the
//! writes of a lag, a primary cut off from its standby past the lease TTL, and members that
//! crash and come back. Through each, every id the servers answer is collected and checked
//! unique, and increasing per server, and every server ends up ready.

use crate::fleet;
use crate::support;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use snowmint_testkit::{Cluster, PostgresReplicated, eventually};

use crate::support::{
    LeaseTimes, Serve, ids, layout_lease, now_ms, serve_builder, serve_leased, spawn_logged,
};

/// A TTL that outlasts a failover with its lag (about three seconds), renewed every
/// second: the holders the failover did not forget keep their worker ids.
const TIMES: LeaseTimes = LeaseTimes::FAILOVER;
const TTL_MS: u64 = TIMES.ttl_ms;
const MARGIN_MS: u64 = TIMES.margin_ms;
/// How long the cut-off primary goes on acknowledging writes before it dies.
const LAG: Duration = Duration::from_millis(2_500);
/// How long a client waits for an answer before it counts the server as gone.
const WAIT: Duration = Duration::from_secs(10);

fn serve_long(state: &std::path::Path, url: &str, identity: &str) -> Serve {
    serve_leased(state, url, identity, TIMES, &[])
}

/// A server with the suite's short lease (3 s TTL, 300 ms margin).
fn serve_short(state: &std::path::Path, url: &str, identity: &str) -> Serve {
    spawn_logged(
        serve_builder(state)
            .grpc_addr("off")
            .lease(url, identity, LeaseTimes::SHORT)
            .command(),
    )
}

/// The worker id a server holds now, if any.
fn worker(server: &Serve) -> Option<u64> {
    let (_, layout) = server.get("/v1/layout");
    let layout: serde_json::Value = serde_json::from_str(&layout).ok()?;
    layout["worker"].as_u64()
}

/// The lease as `/v1/layout` shows it.
fn lease(server: &Serve) -> serde_json::Value {
    layout_lease(server).0
}

/// Waits until `server` has heard from the promoted primary: a renewal confirmed past
/// `renewals` (it kept its worker id: true), or its lease lost (false).
fn kept_after_failover(server: &mut Serve, renewals: &serde_json::Value) -> bool {
    eventually(
        Duration::from_secs(15),
        "word from the promoted primary",
        || {
            if server.logged().contains("lease lost; acquiring again") {
                return Ok(false);
            }
            let now = lease(server);
            if now["state"] == "held"
                && now["error"].is_null()
                && now["renewals"].as_u64() > renewals.as_u64()
            {
                return Ok(true);
            }
            Err(format!("{now}\n{}", server.logged()))
        },
    )
}

/// Pulls ids from one server in the background, a batch every few ms, keeping every id it
/// answers in order, and asks `/readyz` between batches, keeping every refusal; until
/// stopped.
struct Puller {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Pulled>,
}

/// What a [`Puller`] saw.
struct Pulled {
    ids: Vec<u64>,
    /// When `/readyz` answered otherwise than 200, and what it said.
    refusals: Vec<(Instant, String)>,
}

impl Pulled {
    /// Whether `/readyz` refused after `since`, saying something with `reason` in it.
    fn refused_after(&self, since: Instant, reason: &str) -> bool {
        let mut refusals = self.refusals.iter();
        refusals.any(|(at, body)| *at > since && body.contains(reason))
    }
}

impl Puller {
    fn start(server: &Serve) -> Puller {
        let (stop, address): (Arc<AtomicBool>, SocketAddr) = (Arc::default(), server.http);
        let stopping = Arc::clone(&stop);
        let thread = thread::spawn(move || {
            let mut pulled = Pulled {
                ids: Vec::new(),
                refusals: Vec::new(),
            };
            while !stopping.load(Ordering::Relaxed) {
                if let Some((200, body)) = support::try_get(address, "/v1/ids?count=1000", WAIT) {
                    pulled.ids.extend(ids(&body));
                }
                match support::try_get(address, "/readyz", WAIT) {
                    Some((200, _)) | None => {}
                    Some((_, body)) => pulled.refusals.push((Instant::now(), body)),
                }
                thread::sleep(Duration::from_millis(10));
            }
            pulled
        });
        Puller { stop, thread }
    }

    fn stop(self) -> Pulled {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("the puller does not panic")
    }
}

/// Polls `/readyz` until it answers 200, for at most `limit`; answers whether it ever
/// answered otherwise, and the last reason it gave.
fn until_ready(server: &Serve, limit: Duration) -> Option<String> {
    let mut refused = None;
    eventually(limit, "ready", || match server.get("/readyz") {
        (200, _) => Ok(()),
        (_, body) => {
            refused = Some(body.clone());
            Err(body)
        }
    });
    refused
}

#[test]
fn a_failover_that_loses_writes_issues_no_id_twice_and_a_newcomer_waits_for_the_floor() {
    let mut cluster = PostgresReplicated::start();
    let url = cluster.url();
    let state = tempfile::tempdir().unwrap();
    let mut holders = [
        serve_long(&state.path().join("alpha"), &url, "alpha"),
        serve_long(&state.path().join("beta"), &url, "beta"),
    ];
    for holder in &holders {
        // A new cluster vouches for its records only since it started: a TTL and more.
        holder.wait_ready(Duration::from_secs(20));
    }
    let held: Vec<Option<u64>> = holders.iter().map(worker).collect();
    let pullers: Vec<Puller> = holders.iter().map(Puller::start).collect();
    thread::sleep(Duration::from_millis(500));

    // The failover runs beside the test: while the cut-off primary acknowledges writes
    // alone, a third server acquires a worker id on it and issues, and the promoted
    // standby never hears of it.
    let cut_ms = now_ms();
    let failing = Instant::now();
    let (forgotten, forgotten_ids, promoted) = thread::scope(|scope| {
        let failover = scope.spawn(|| cluster.fail_over(LAG));
        thread::sleep(Duration::from_millis(300));
        let forgotten = serve_long(&state.path().join("forgotten"), &url, "forgotten");
        forgotten.wait_ready(LAG);
        let puller = Puller::start(&forgotten);
        let (old, new) = failover.join().expect("the failover");
        eprintln!("failed over from {old} to {new} in {:?}", failing.elapsed());
        (forgotten, puller, new)
    });
    // What each had renewed by then; any renewal confirmed later is the new primary's.
    let renewals: Vec<serde_json::Value> = holders
        .iter()
        .chain([&forgotten])
        .map(|server| lease(server)["renewals"].clone())
        .collect();
    assert_eq!(cluster.primary(), Some(promoted));

    // A newcomer with an empty state directory, at once.
    let newcomer = serve_long(&state.path().join("newcomer"), &url, "newcomer");
    let newcomer_ids = Puller::start(&newcomer);

    // Its worker id gone from the promoted standby, the forgotten server stops at its
    // next renewal, acquires again, and waits for the floor: not ready, and says why.
    let mut forgotten = forgotten;
    assert!(
        !kept_after_failover(&mut forgotten, &renewals[2]),
        "the forgotten server kept a lease the new primary never saw"
    );
    until_ready(&forgotten, Duration::from_secs(30));
    eprintln!(
        "the forgotten server was ready again {:?} after the failover began",
        failing.elapsed()
    );

    // The others either kept their worker ids or lost them and acquired again.
    let mut kept = Vec::new();
    for ((holder, held), renewals) in holders.iter_mut().zip(&held).zip(&renewals) {
        let still = kept_after_failover(holder, renewals);
        until_ready(holder, Duration::from_secs(30));
        let logged = holder.logged();
        let acquired = logged.matches("acquired worker id").count();
        if still {
            assert_eq!(worker(holder), *held, "{logged}");
            assert_eq!(acquired, 1, "{logged}");
        } else {
            assert_eq!(acquired, 2, "{logged}");
        }
        kept.push(still);
    }
    eprintln!("alpha and beta kept their worker ids: {kept:?}");

    // The newcomer starts after anything a forgotten holder could have issued: cut off
    // from the promoted standby by `cut_ms` + the lag, it reached at most a TTL and the
    // margin past its last word with the old primary.
    until_ready(&newcomer, Duration::from_secs(30));
    eprintln!(
        "the newcomer was ready {:?} after the failover began",
        failing.elapsed()
    );
    thread::sleep(Duration::from_millis(500));

    let mut by = HashMap::new();
    let names = ["alpha", "beta", "forgotten", "newcomer"];
    let pullers = pullers.into_iter().chain([forgotten_ids, newcomer_ids]);
    for (name, puller) in names.into_iter().zip(pullers) {
        by.insert(name.to_string(), puller.stop());
    }
    // Readiness says which kept their lease: those that lost it, and the newcomer, were
    // unready after the failover, waiting for the floor.
    let behind = "behind the high-water mark";
    for (name, still) in ["alpha", "beta"].into_iter().zip(&kept) {
        let refused = by[name].refused_after(failing, "");
        assert_eq!(refused, !still, "{name}'s readiness after the failover");
    }
    assert!(by["forgotten"].refused_after(failing, behind));
    assert!(by["newcomer"].refused_after(failing, behind));
    let first_ms = support::twitter_ms(by["newcomer"].ids[0]);
    let floor_ms = cut_ms + u64::try_from(LAG.as_millis()).unwrap() + TTL_MS + MARGIN_MS;
    assert!(
        first_ms > floor_ms,
        "the newcomer's first id is at {first_ms}, within a forgotten holder's reach ({floor_ms})"
    );

    let by: HashMap<String, Vec<u64>> = by.into_iter().map(|(k, v)| (k, v.ids)).collect();
    for (name, issued) in &by {
        assert!(!issued.is_empty(), "{name} issued nothing");
    }
    let total = fleet::assert_unique_and_increasing(&by);
    eprintln!("{total} ids, all unique");
}

#[test]
fn a_primary_cut_off_from_its_standby_past_the_ttl_keeps_its_clients() {
    let mut cluster = PostgresReplicated::start();
    let url = cluster.url();
    let state = tempfile::tempdir().unwrap();
    let servers = [
        serve_short(&state.path().join("alpha"), &url, "alpha"),
        serve_short(&state.path().join("beta"), &url, "beta"),
    ];
    for server in &servers {
        server.wait_ready(Duration::from_secs(20));
    }
    let pullers: Vec<Puller> = servers.iter().map(Puller::start).collect();
    let primary = cluster.primary().expect("a primary");

    // Cut off for longer than a lease lasts: the clients never notice.
    cluster.partition(primary, true);
    let cut = Instant::now();
    while cut.elapsed() < Duration::from_millis(4_000) {
        for server in &servers {
            let (status, body) = server.get("/readyz");
            assert_eq!(status, 200, "unready while the primary is cut off: {body}");
        }
        thread::sleep(Duration::from_millis(200));
    }
    cluster.partition(primary, false);
    assert_eq!(cluster.primary(), Some(primary));
    for server in &servers {
        assert_eq!(until_ready(server, Duration::from_secs(10)), None);
    }
    thread::sleep(Duration::from_millis(500));

    let mut by = HashMap::new();
    for (name, puller) in ["alpha", "beta"].into_iter().zip(pullers) {
        by.insert(name.to_string(), puller.stop().ids);
    }
    let total = fleet::assert_unique_and_increasing(&by);
    eprintln!("{total} ids, all unique");
}

#[test]
fn members_killed_and_restarted_issue_no_id_twice() {
    let mut cluster = PostgresReplicated::start();
    let url = cluster.url();
    let state = tempfile::tempdir().unwrap();
    let mut server = serve_short(&state.path().join("alpha"), &url, "alpha");
    server.wait_ready(Duration::from_secs(20));
    let puller = Puller::start(&server);
    let primary = cluster.primary().expect("a primary");
    let standby = 1 - primary;

    // The standby crashes: nothing a client sees.
    cluster.kill(standby);
    thread::sleep(Duration::from_millis(1_000));
    assert_eq!(server.get("/readyz").0, 200);
    cluster.restart(standby);

    // The primary crashes for longer than the lease lasts: the server stops issuing
    // before its lease could have expired, says so, and comes back once the primary
    // does, after what the restarted primary vouches for.
    cluster.kill(primary);
    let killed = Instant::now();
    let refused = until_unready(&server, Duration::from_secs(10));
    eprintln!(
        "unready {:?} after the primary died: {refused}",
        killed.elapsed()
    );
    thread::sleep(Duration::from_millis(3_000).saturating_sub(killed.elapsed()));
    cluster.restart(primary);
    assert_eq!(cluster.primary(), Some(primary));
    until_ready(&server, Duration::from_secs(20));
    eprintln!("ready again {:?} after the primary died", killed.elapsed());
    eventually(
        Duration::from_secs(5),
        "a warning that it cannot renew",
        || {
            let logged = server.logged();
            logged
                .contains("cannot renew the lease")
                .then_some(())
                .ok_or(logged)
        },
    );

    let mut by = HashMap::new();
    by.insert("alpha".to_string(), puller.stop().ids);
    let total = fleet::assert_unique_and_increasing(&by);
    eprintln!("{total} ids, all unique");
}

/// Polls `/readyz` until it answers something else than 200, for at most `limit`;
/// answers what it said.
fn until_unready(server: &Serve, limit: Duration) -> String {
    eventually(limit, "unready after its registry died", || {
        match server.get("/readyz") {
            (200, _) => Err("still ready"),
            (_, body) => Ok(body),
        }
    })
}
