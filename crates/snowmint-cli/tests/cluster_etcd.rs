//! `snowmint serve --lease etcd://M0,M1,M2` against a real three-member etcd cluster
//! ([`EtcdCluster`]): its leader killed and a new one elected, a member killed and
//! restarted, and the leader cut from its peers while it keeps its clients, which is where
//! a server that renews through that leader could outlive its lease. Every id every server
//! answers, before, during and after each fault, is checked: none twice, each server's
//! increasing.

use crate::fleet;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use snowmint_testkit::{Cluster, EtcdCluster, eventually};

use crate::support::{
    LeaseTimes, Serve, http_get, ids, layout_lease, now_ms, serve_leased, twitter_ms,
};

/// A TTL that outlasts a failover (about a second) and a renewal stuck on a member that
/// lost its quorum (the 2 s request timeout, then the next member), renewed every second.
const TIMES: LeaseTimes = LeaseTimes::FAILOVER;
const TTL_MS: u64 = TIMES.ttl_ms;
const MARGIN_MS: u64 = TIMES.margin_ms;
/// How far past its last renewal a holder may have issued: the fleet's reach.
const REACH_MS: u64 = TTL_MS + MARGIN_MS;
/// Ids per pull.
const BATCH: u32 = 5_000;

/// `snowmint serve` on `url` as `identity`, in datacenter `datacenter`.
fn serve(state: &std::path::Path, url: &str, identity: &str, datacenter: u64) -> Serve {
    let dc = datacenter.to_string();
    serve_leased(state, url, identity, TIMES, &["--datacenter", &dc])
}

/// The cluster's URL with its members in `order`: a server asks the first one first.
fn url_in_order(cluster: &EtcdCluster, order: &[usize]) -> String {
    let hosts: Vec<String> = order
        .iter()
        .map(|&i| cluster.address(i).to_string())
        .collect();
    format!("etcd://{}", hosts.join(","))
}

/// The members other than `i`, in order.
fn others(cluster: &EtcdCluster, i: usize) -> Vec<usize> {
    (0..cluster.members()).filter(|&m| m != i).collect()
}

/// What `/v1/layout` says of the server's lease, and its worker id.
fn lease(server: &Serve) -> (serde_json::Value, u64) {
    let (lease, worker) = layout_lease(server);
    (lease, worker.expect("a worker id"))
}

/// A thread that pulls ids from one server as fast as it answers, and notes what
/// `/readyz` says whenever it refuses, until stopped (or two minutes pass).
struct Puller {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Pulled>,
}

/// What a [`Puller`] got: the ids, in order, and each new reason `/readyz` gave for
/// refusing.
#[derive(Default)]
struct Pulled {
    ids: Vec<u64>,
    refusals: Vec<String>,
}

impl Puller {
    fn start(server: &Serve) -> Puller {
        let (stop, address) = (Arc::new(AtomicBool::new(false)), server.http);
        let stopping = Arc::clone(&stop);
        let thread = thread::spawn(move || pull_until(address, &stopping));
        Puller { stop, thread }
    }

    fn finish(self) -> Pulled {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("the puller panicked")
    }
}

fn pull_until(address: SocketAddr, stop: &AtomicBool) -> Pulled {
    let mut pulled = Pulled::default();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
        let (status, body) = http_get(address, &format!("/v1/ids?count={BATCH}"));
        if status == 200 {
            pulled.ids.extend(ids(&body));
            continue;
        }
        let (_, why) = http_get(address, "/readyz");
        if pulled.refusals.last() != Some(&why) {
            pulled.refusals.push(why);
        }
        thread::sleep(Duration::from_millis(20));
    }
    pulled
}

/// Waits until `server` is ready and has a worker id, then answers it.
#[track_caller]
fn ready(server: &Serve, within: Duration) -> u64 {
    server.wait_ready(within);
    lease(server).1
}

/// Two servers hold two worker ids through a failover (the leader killed, the two others
/// elect one) and through a follower killed and restarted; each either keeps its lease or
/// stops and acquires again, and says which. A newcomer on an empty state directory that
/// asks the restarted member first is not held back by that member's restart: another
/// member vouches from its earlier start.
#[test]
fn servers_ride_a_failover_and_a_member_restart_and_a_newcomer_pays_nothing_for_it() {
    let formed = Instant::now();
    let mut cluster = EtcdCluster::start();
    let leader = cluster.primary().expect("a leader");
    // The servers ask the leader first: the failover takes their member away.
    let mut order = vec![leader];
    order.extend(others(&cluster, leader));
    let url = url_in_order(&cluster, &order);
    let state = tempfile::tempdir().unwrap();
    let mut servers: Vec<Serve> = ["a", "b"]
        .iter()
        .map(|name| serve(&state.path().join(name), &url, name, 0))
        .collect();
    let workers: Vec<u64> = servers
        .iter()
        .map(|s| ready(s, Duration::from_secs(20)))
        .collect();
    assert_ne!(workers[0], workers[1]);
    let pullers: Vec<Puller> = servers.iter().map(Puller::start).collect();
    thread::sleep(Duration::from_millis(500));

    let failing = Instant::now();
    let (old, new) = cluster.fail_over(Duration::ZERO);
    eprintln!(
        "failover from member {old} to {new} took {:?}",
        failing.elapsed()
    );
    for (server, worker) in servers.iter_mut().zip(&workers) {
        let now = ready(server, Duration::from_secs(20));
        let acquired = server.logged().matches("acquired worker id").count();
        // Kept (one acquisition, same worker id), or lost and acquired again.
        assert!(
            (acquired == 1 && now == *worker) || acquired == 2,
            "acquired {acquired} times, worker {worker} then {now}:\n{}",
            server.logged()
        );
        eprintln!("after the failover: worker {worker} then {now}, {acquired} acquisition(s)");
    }
    cluster.restart(old);
    assert_eq!(cluster.primary(), Some(new));

    // A follower the servers may be on now is killed, and restarted.
    let follower = others(&cluster, new)
        .into_iter()
        .find(|&i| i != old)
        .expect("a third member");
    cluster.kill(follower);
    thread::sleep(Duration::from_millis(1_500));
    for server in &servers {
        server.wait_ready(Duration::from_secs(20));
    }
    // Late enough that the cluster's own start is more than a reach ago: only the
    // restarted member's start could hold a newcomer back.
    thread::sleep(Duration::from_millis(REACH_MS + 1_500).saturating_sub(formed.elapsed()));
    let restarted_ms = now_ms();
    cluster.restart(follower);

    let mut newcomer_order = vec![follower];
    newcomer_order.extend(others(&cluster, follower));
    let newcomer_url = url_in_order(&cluster, &newcomer_order);
    let started = Instant::now();
    let newcomer = serve(&state.path().join("newcomer"), &newcomer_url, "newcomer", 0);
    newcomer.wait_ready(Duration::from_secs(20));
    eprintln!(
        "the newcomer was ready {:?} after it started",
        started.elapsed()
    );
    let newcomer_ids = Puller::start(&newcomer);
    thread::sleep(Duration::from_millis(1_000));

    let mut by = HashMap::new();
    for (name, puller) in ["a", "b"].iter().zip(pullers) {
        let pulled = puller.finish();
        eprintln!(
            "{name}: {} ids, refused with {:?}",
            pulled.ids.len(),
            pulled.refusals
        );
        by.insert((*name).to_string(), pulled.ids);
    }
    let newcomer_ids = newcomer_ids.finish().ids;
    assert!(!newcomer_ids.is_empty(), "the newcomer issued nothing");
    let first_ms = twitter_ms(newcomer_ids[0]);
    assert!(
        first_ms < restarted_ms + REACH_MS,
        "the newcomer waited for the restarted member's floor: first id at {first_ms}, restart at {restarted_ms}"
    );
    by.insert("newcomer".to_string(), newcomer_ids);
    let total = fleet::assert_unique_and_increasing(&by);
    eprintln!("{total} ids, none twice");
}

/// The leader cut from its peers keeps its clients: a holder on it alone (its URL names
/// no other member) renews through it, and a newcomer on the majority's side takes that
/// holder's worker id once the majority has expired the lease. etcd's leader answers
/// keep-alives until it notices it lost its quorum, and the holder must stop issuing
/// before the newcomer starts: its renewal also reads its keys, which a leader without a
/// quorum cannot serve. A server in another datacenter whose URL names the cut leader
/// first moves to another member and keeps issuing. Mended, every server is ready again.
#[test]
fn a_leader_cut_from_its_peers_does_not_keep_a_holder_issuing_beside_a_newcomer() {
    let mut cluster = EtcdCluster::start();
    let leader = cluster.primary().expect("a leader");
    let majority = others(&cluster, leader);
    let majority_url = url_in_order(&cluster, &majority);
    let mut leader_first = vec![leader];
    leader_first.extend(&majority);
    let state = tempfile::tempdir().unwrap();

    let mut bystander = serve(
        &state.path().join("bystander"),
        &url_in_order(&cluster, &leader_first),
        "bystander",
        1,
    );
    let blockers = fleet::Blockers::hold_all_but_one(&majority_url);
    let mut holder = serve(
        &state.path().join("holder"),
        &cluster.member_url(leader),
        "holder",
        0,
    );
    let held = ready(&holder, Duration::from_secs(20));
    let bystander_worker = ready(&bystander, Duration::from_secs(20));
    let holder_ids = Puller::start(&holder);
    let bystander_ids = Puller::start(&bystander);
    thread::sleep(Duration::from_millis(500));

    let cut_ms = now_ms();
    let cut = Instant::now();
    cluster.partition(leader, true);
    let newcomer = serve(&state.path().join("newcomer"), &majority_url, "newcomer", 0);
    newcomer.wait_ready(Duration::from_secs(30));
    eprintln!("the newcomer was ready {:?} after the cut", cut.elapsed());
    assert_eq!(
        lease(&newcomer).1,
        held,
        "the newcomer took another worker id"
    );
    let newcomer_ids = Puller::start(&newcomer);
    // Both pull on, the cut holder included, past its TTL and then some.
    thread::sleep(Duration::from_millis(2_000));
    let (status, body) = holder.get("/readyz");
    assert_eq!(status, 503, "the cut holder is ready: {body}");
    bystander.wait_ready(Duration::from_secs(1));
    assert_eq!(lease(&bystander).1, bystander_worker);

    cluster.partition(leader, false);
    drop(blockers);
    eventually(
        Duration::from_secs(20),
        "the mended member rejoining",
        || {
            let unhealthy: Vec<_> = (0..cluster.members())
                .filter(|&i| !cluster.healthy(i))
                .collect();
            if unhealthy.is_empty() {
                Ok(())
            } else {
                Err(format!("members {unhealthy:?} unhealthy"))
            }
        },
    );
    for server in [&holder, &bystander, &newcomer] {
        server.wait_ready(Duration::from_secs(20));
    }
    thread::sleep(Duration::from_millis(500));

    let holder_pulled = holder_ids.finish();
    let newcomer_pulled = newcomer_ids.finish();
    let bystander_pulled = bystander_ids.finish();
    eprintln!(
        "holder: {} ids, refused with {:?}",
        holder_pulled.ids.len(),
        holder_pulled.refusals
    );
    eprintln!(
        "bystander: {} ids, refused with {:?}\n{}",
        bystander_pulled.ids.len(),
        bystander_pulled.refusals,
        bystander.logged()
    );
    let newcomer_first = *newcomer_pulled.ids.first().expect("the newcomer issued");
    // Every id the holder issued under its first lease is below the newcomer's first.
    let under_first: Vec<u64> = holder_pulled
        .ids
        .iter()
        .copied()
        .take_while(|&id| twitter_ms(id) < cut_ms + REACH_MS)
        .collect();
    let last = *under_first
        .last()
        .expect("the holder issued before the cut");
    assert!(
        last < newcomer_first,
        "the cut holder issued {last} at or after the newcomer's first id {newcomer_first}:\n{}",
        holder.logged()
    );
    assert!(
        twitter_ms(last) < cut_ms + TTL_MS - MARGIN_MS,
        "the cut holder issued at {} ms, past its fence ({} ms after the cut)",
        twitter_ms(last),
        TTL_MS - MARGIN_MS
    );
    let mut by = HashMap::new();
    by.insert("holder".to_string(), holder_pulled.ids);
    by.insert("newcomer".to_string(), newcomer_pulled.ids);
    by.insert("bystander".to_string(), bystander_pulled.ids);
    let total = fleet::assert_unique_and_increasing(&by);
    eprintln!("{total} ids, none twice");
}
