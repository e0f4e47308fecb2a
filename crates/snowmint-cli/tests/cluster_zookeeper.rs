//! `snowmint serve --lease zookeeper://...` against a real three-member ZooKeeper
//! ensemble: the leader killed and another elected, a newcomer after it, members killed
//! and restarted, and the leader cut off from its peers while its clients stay connected.
//! Clients pull ids from every server before, during and after each fault, and no id is
//! issued twice.

use crate::fleet;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use snowmint_testkit::{Cluster, ZooKeeperEnsemble, eventually};

use crate::support::{
    LeaseTimes, Serve, http_get, ids, layout_lease, now_ms, serve_leased, twitter_ms,
};

/// The longest session timeout the ensemble grants (20 ticks of 200 ms), renewed every
/// half second: it outlasts a failover, which takes about half a second.
const TTL_MS: u64 = 4_000;
const MARGIN_MS: u64 = 500;
const TIMES: LeaseTimes = LeaseTimes {
    ttl_ms: TTL_MS,
    renew_ms: 500,
    margin_ms: MARGIN_MS,
};
/// How far past its last renewal a holder may have issued: what a newcomer starts after.
const REACH_MS: u64 = TTL_MS + MARGIN_MS;
/// Ids per pull.
const BATCH: u32 = 5_000;

fn serve(state: &std::path::Path, url: &str, identity: &str) -> Serve {
    serve_leased(state, url, identity, TIMES, &[])
}

/// What `/v1/layout` says of the server's lease, and its worker id.
fn lease(server: &Serve) -> (serde_json::Value, u64) {
    let (lease, worker) = layout_lease(server);
    (lease, worker.expect("a worker id"))
}

/// How many times the server has acquired a worker id.
fn acquisitions(server: &mut Serve) -> usize {
    server.logged().matches("acquired worker id").count()
}

/// Every id each server answered, by its name, and whether its `/readyz` ever said it
/// was not ready while pulled.
#[derive(Default)]
struct Issued {
    ids: HashMap<String, Vec<u64>>,
    unready: HashMap<String, bool>,
}

impl Issued {
    /// One pull from each server; answers how many refused.
    fn round(&mut self, servers: &[(&str, SocketAddr)]) -> usize {
        let mut refused = 0;
        for (name, address) in servers {
            let (status, body) = http_get(*address, &format!("/v1/ids?count={BATCH}"));
            if status == 200 {
                self.ids
                    .entry(name.to_string())
                    .or_default()
                    .extend(ids(&body));
            } else {
                refused += 1;
                let (ready, _) = http_get(*address, "/readyz");
                *self.unready.entry(name.to_string()).or_default() |= ready != 200;
            }
        }
        refused
    }

    /// Pulls from every server, round after round, while `work` runs; answers what it does.
    fn during<T>(&mut self, servers: &[(&str, SocketAddr)], work: impl FnOnce() -> T) -> T {
        let done = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let pulling = scope.spawn(|| {
                let deadline = Instant::now() + Duration::from_secs(60);
                while !done.load(Ordering::Relaxed) && Instant::now() < deadline {
                    if self.round(servers) > 0 {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
            });
            let answer = work();
            done.store(true, Ordering::Relaxed);
            pulling.join().expect("the pulls panicked");
            answer
        })
    }

    /// The ids `name` answered.
    fn of(&self, name: &str) -> &[u64] {
        self.ids.get(name).map_or(&[], Vec::as_slice)
    }

    /// Checks that no id repeats and each server's increase; answers how many there are.
    fn check(&self) -> usize {
        fleet::assert_unique_and_increasing(&self.ids)
    }
}

/// Polls `/readyz` until it says ready (`true`) for at most `limit`, and says whether it
/// was behind the high-water mark meanwhile.
fn wait_ready(server: &Serve, limit: Duration) -> bool {
    let mut behind = false;
    eventually(limit, "ready", || match server.get("/readyz") {
        (200, _) => Ok(()),
        (_, body) => {
            behind |= body.contains("behind the high-water mark");
            Err(body)
        }
    });
    behind
}

#[test]
fn two_servers_ride_out_a_failover_and_member_restarts_and_a_newcomer_starts_past_the_floor() {
    let mut ensemble = ZooKeeperEnsemble::start();
    let url = ensemble.url();
    let state = tempfile::tempdir().unwrap();
    let mut a = serve(&state.path().join("a"), &url, "a");
    let mut b = serve(&state.path().join("b"), &url, "b");
    a.wait_ready(Duration::from_secs(20));
    b.wait_ready(Duration::from_secs(20));
    let held = [lease(&a).1, lease(&b).1];
    assert_ne!(held[0], held[1]);
    let both = [("a", a.http), ("b", b.http)];
    let mut issued = Issued::default();
    for _ in 0..5 {
        assert_eq!(issued.round(&both), 0, "ids before the failover");
    }

    // The leader dies; the other two elect one of themselves.
    let killed_ms = now_ms();
    let failing = Instant::now();
    let (old, new) = issued.during(&both, || ensemble.fail_over(Duration::ZERO));
    eprintln!(
        "member {new} took over from member {old} in {:?}",
        failing.elapsed()
    );
    issued.during(&both, || {
        a.wait_ready(Duration::from_secs(20));
        b.wait_ready(Duration::from_secs(20));
    });
    for (name, server, was) in [("a", &mut a, held[0]), ("b", &mut b, held[1])] {
        let (state, worker) = lease(server);
        assert_eq!(state["state"], "held", "{name}: {state}");
        let again = acquisitions(server) > 1;
        if again {
            // It stopped issuing and said so, then took a worker id anew.
            assert!(
                issued.unready[name],
                "{name} acquired again, ready all along"
            );
        } else {
            assert_eq!(worker, was, "{name} changed worker ids without acquiring");
        }
        eprintln!(
            "{name} {} worker id {worker} across the failover",
            if again { "acquired again, now" } else { "kept" }
        );
    }

    // A newcomer on an empty state directory: its session is on a member that
    // re-synced after the election, which vouches for its nodes only since then.
    let newcomer = serve(&state.path().join("newcomer"), &url, "newcomer");
    let started = Instant::now();
    let behind = issued.during(&both, || wait_ready(&newcomer, Duration::from_secs(30)));
    eprintln!(
        "the newcomer was ready {:?} after it started (behind the floor: {behind})",
        started.elapsed()
    );
    let all = [("a", a.http), ("b", b.http), ("newcomer", newcomer.http)];
    assert_eq!(issued.round(&all), 0, "ids once every server is ready");
    let first_ms = twitter_ms(issued.of("newcomer")[0]);
    assert!(
        first_ms > killed_ms + REACH_MS,
        "the newcomer's first id is at {first_ms}, within a holder's reach of {REACH_MS} ms past the kill at {killed_ms}"
    );

    // A follower crashes and comes back, then the old leader comes back: both follow.
    let follower = (0..ensemble.members())
        .find(|i| *i != new && *i != old)
        .unwrap();
    let restarting = Instant::now();
    issued.during(&all, || {
        ensemble.kill(follower);
        ensemble.restart(follower);
        ensemble.restart(old);
    });
    eprintln!(
        "members {follower} and {old} restarted in {:?}",
        restarting.elapsed()
    );
    assert_eq!(ensemble.primary(), Some(new));
    issued.during(&all, || {
        for server in [&a, &b, &newcomer] {
            server.wait_ready(Duration::from_secs(20));
        }
    });
    // Three rounds in a row served by all: a renewal that a loaded machine delayed past
    // its fence refuses for a moment, as it must, and the next one serves again.
    let mut served = 0;
    let deadline = Instant::now() + Duration::from_secs(20);
    while served < 3 {
        assert!(Instant::now() < deadline, "ids after the restarts");
        served = if issued.round(&all) == 0 {
            served + 1
        } else {
            0
        };
    }
    let total = issued.check();
    eprintln!("{total} ids, each issued once");
}

#[test]
fn the_leader_cut_off_past_the_ttl_stops_its_own_clients_server_and_every_server_is_ready_after_the_mend()
 {
    let mut ensemble = ZooKeeperEnsemble::start();
    let url = ensemble.url();
    let leader = ensemble.primary().expect("a leader");
    let state = tempfile::tempdir().unwrap();
    // One server on every member, one on the leader alone, whose session stays there.
    let mut roaming = serve(&state.path().join("roaming"), &url, "roaming");
    let member_url = ensemble.member_url(leader);
    let mut pinned = serve(&state.path().join("pinned"), &member_url, "pinned");
    roaming.wait_ready(Duration::from_secs(20));
    pinned.wait_ready(Duration::from_secs(20));
    let pinned_worker = lease(&pinned).1;
    let servers = [("roaming", roaming.http), ("pinned", pinned.http)];
    let mut issued = Issued::default();
    for _ in 0..5 {
        assert_eq!(issued.round(&servers), 0, "ids before the cut");
    }

    let cut_ms = now_ms();
    let cutting = Instant::now();
    let elected = issued.during(&servers, || {
        ensemble.partition(leader, true);
        ensemble.wait_for_quorum()
    });
    let elected_at = Instant::now();
    eprintln!(
        "the majority elected member {elected} {:?} after the cut",
        cutting.elapsed()
    );
    // The pinned server's session expires on the majority one session timeout after the
    // election; a newcomer of its identity then takes its worker id back.
    let expired = elected_at + Duration::from_millis(TTL_MS + 1_000);
    issued.during(&servers, || {
        while Instant::now() < expired {
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    let pinned_until = issued.of("pinned").len();
    let last_pinned_ms = twitter_ms(*issued.of("pinned").last().unwrap());
    assert!(
        last_pinned_ms < cut_ms + TTL_MS,
        "the pinned server issued at {last_pinned_ms}, past its lease from before the cut at {cut_ms}"
    );
    let mut newcomer = None;
    for attempt in 0..10 {
        let mut taker = serve(
            &state.path().join(format!("newcomer-{attempt}")),
            &url,
            "pinned",
        );
        // Ready once past the floor of a member that re-synced after the election.
        issued.during(&servers, || wait_ready(&taker, Duration::from_secs(30)));
        if lease(&taker).1 == pinned_worker {
            newcomer = Some(taker);
            break;
        }
        // The old session still held it: give this one back and try again.
        assert!(taker.terminate().success());
        std::thread::sleep(Duration::from_millis(500));
    }
    let newcomer = newcomer.expect("no newcomer took the pinned server's worker id");
    eprintln!(
        "a newcomer took worker id {pinned_worker} {:?} after the cut",
        cutting.elapsed()
    );
    let three = [
        ("roaming", roaming.http),
        ("pinned", pinned.http),
        ("newcomer", newcomer.http),
    ];
    for _ in 0..5 {
        issued.round(&three);
    }
    assert_eq!(
        issued.of("pinned").len(),
        pinned_until,
        "the pinned server issued while the newcomer held its worker id"
    );
    let newcomer_first = issued.of("newcomer")[0];
    assert!(
        issued.of("pinned").iter().all(|id| *id < newcomer_first),
        "the newcomer began at or below the pinned server's ids"
    );

    // Mended: the old leader follows; the pinned server finds its session expired and
    // takes another worker id.
    let mending = Instant::now();
    issued.during(&three, || ensemble.partition(leader, false));
    issued.during(&three, || {
        for server in [&roaming, &pinned, &newcomer] {
            wait_ready(server, Duration::from_secs(30));
        }
    });
    eprintln!(
        "every server was ready {:?} after the mend",
        mending.elapsed()
    );
    assert_ne!(lease(&pinned).1, pinned_worker);
    assert_eq!(acquisitions(&mut pinned), 2, "{}", pinned.logged());
    assert_eq!(acquisitions(&mut roaming), 1, "{}", roaming.logged());
    for _ in 0..3 {
        assert_eq!(issued.round(&three), 0, "ids after the mend");
    }
    let total = issued.check();
    eprintln!("{total} ids, each issued once");
}
