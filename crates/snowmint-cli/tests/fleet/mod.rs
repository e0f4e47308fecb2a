//! Real `snowmint serve` processes sharing a real registry, for the lease tests that need
//! whole processes: a registry that goes away under a running server, and a fleet that
//! loses a member and its registry while clients pull ids.

#![allow(dead_code)] // each backend's test file uses what it needs

pub mod paused;

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use snowmint_testkit::{Server, eventually};

use crate::support::{
    LeaseTimes, Serve, ids, layout_lease, now_ms, serve_builder, spawn_logged, twitter_ms,
    twitter_worker, wall_clock_offset,
};

/// Starts `snowmint serve` with the lease `url` and `identity`, and waits until it has
/// logged its address.
pub fn serve(state: &Path, url: &str, identity: &str) -> Serve {
    spawn_logged(serve_leased(state, url, identity))
}

fn serve_leased(state: &Path, url: &str, identity: &str) -> std::process::Command {
    serve_builder(state)
        .grpc_addr("off")
        .lease(url, identity, LeaseTimes::SHORT)
        .args(["--max-batch", "100000"])
        .command()
}

/// The registry's other 31 worker ids, held by long leases from this test process, so that
/// a server can only take the one left; given back on drop.
pub struct Blockers {
    runtime: tokio::runtime::Runtime,
    registry: std::sync::Arc<dyn snowmint_lease::Registry>,
    held: Vec<(snowmint_lease::Claim, snowmint_lease::Lease)>,
}

impl Blockers {
    pub fn hold_all_but_one(url: &str) -> Blockers {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let registry = snowmint_lease::registry_from_url(url).unwrap();
        let namespace = snowmint_lease::Fleet::default().namespace();
        let held = (0..31)
            .map(|i| {
                // They issue nothing: they reach no further than the servers' floors.
                let claim = snowmint_lease::Claim::new(
                    &namespace,
                    0,
                    32,
                    &format!("blocker-{i}"),
                    Duration::from_secs(120),
                )
                .with_reach(Duration::ZERO);
                let lease = runtime
                    .block_on(registry.acquire(&claim))
                    .expect("a blocker lease");
                (claim, lease)
            })
            .collect();
        Blockers {
            runtime,
            registry,
            held,
        }
    }
}

impl Drop for Blockers {
    fn drop(&mut self) {
        for (claim, lease) in &self.held {
            let _ = self
                .runtime
                .block_on(self.registry.release(claim, lease, now_ms()));
        }
    }
}

/// The attack that found a hole in the `file` registry: a holder pulling ids is killed with
/// SIGKILL; a successor on a new machine (an empty state directory, its wall clock 3 s
/// behind) takes the same worker id. It must issue only ids greater than every id the dead
/// holder issued, whatever the registry.
pub fn successor_with_an_empty_state_dir_and_its_clock_behind(url: &str) {
    let _blockers = Blockers::hold_all_but_one(url);
    let state = tempfile::tempdir().unwrap();
    let issued = killed_under_load(&state.path().join("dead"), url, "dead");

    let mut successor = serve_leased(&state.path().join("successor"), url, "successor");
    wall_clock_offset(&mut successor, "-3s");
    let successor = spawn_logged(successor);
    successor.wait_ready(Duration::from_secs(30));
    let mut after = Vec::new();
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(2) {
        if let Some(ids) = pull(&successor, 10_000) {
            after.extend(ids);
        }
    }
    assert!(!after.is_empty(), "the successor issued nothing");
    assert_after_the_dead(&issued, &after, "the successor");
}

/// The attack that found the release rule missing (`file:` and etcd): a holder pulling ids
/// is killed; a successor with the same identity, its clock 4 s behind, takes the worker
/// id and waits for its clock to pass the mark; it is stopped with SIGTERM while it waits,
/// as a rollout or a node drain stops a pod that is not ready. A third process on the
/// second one's state directory, its clock still behind, must still start after every id
/// the dead holder issued: the stopped one, which issued nothing, gave the worker id back
/// with the mark it was acquired with, not its own clock's reading.
pub fn successor_stopped_while_it_waits_keeps_the_dead_holders_mark(url: &str) {
    let _blockers = Blockers::hold_all_but_one(url);
    let state = tempfile::tempdir().unwrap();
    let issued = killed_under_load(&state.path().join("dead"), url, "node");

    let behind = |dir: &str| {
        let mut cmd = serve_leased(&state.path().join(dir), url, "node");
        wall_clock_offset(&mut cmd, "-4s");
        spawn_logged(cmd)
    };
    let mut waiting = behind("successor");
    eventually(Duration::from_secs(30), "a wait for its clock", || {
        let (status, body) = waiting.get("/readyz");
        assert_ne!(
            status, 200,
            "ready with its clock 4 s behind the dead's ids"
        );
        if body.contains("behind the high-water mark") {
            Ok(())
        } else {
            Err(body)
        }
    });
    assert!(waiting.terminate().success(), "{}", waiting.logged());

    let next = behind("successor");
    let mut after = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while after.len() < 20_000 {
        assert!(Instant::now() < deadline, "the third issued nothing");
        if let Some(ids) = pull(&next, 10_000) {
            after.extend(ids);
        } else {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    assert_after_the_dead(&issued, &after, "the third");
}

/// A holder stopped (SIGTERM) while its registry is away, the registry back 1.5 s later
/// (as `docker-compose restart` stops a project's containers all at once): its release
/// tries again until the registry answers, within the shutdown grace, and it exits 0
/// having given its worker id back. A successor of the same identity then gets that
/// worker id at once, not another one (but on ZooKeeper, below), and issues above the
/// holder's ids.
pub fn stopped_while_the_registry_is_away_gives_its_worker_id_back_when_it_returns(
    registry: &mut dyn Server,
) {
    let url = registry.url();
    let state = tempfile::tempdir().unwrap();
    let mut holder = serve(&state.path().join("holder"), &url, "web-1");
    holder.wait_ready(Duration::from_secs(20));
    let issued = pull(&holder, 10_000).expect("ids before the stop");
    let (_, worker) = layout_lease(&holder);
    let worker = worker.expect("a worker id held");

    registry.stop();
    signal(&holder, libc::SIGTERM);
    std::thread::sleep(Duration::from_millis(1_500));
    registry.restart();
    // The grace is 10 s: the drain, then the release's attempts.
    let status = holder.wait_exit(Duration::from_secs(20));
    let log = holder.logged();
    assert!(status.success(), "{status}: {log}");
    assert!(
        log.contains("cannot give the worker id back yet; trying again"),
        "no attempt met the registry away: {log}"
    );
    assert!(log.contains("gave the worker id back"), "{log}");

    let successor = serve(&state.path().join("successor"), &url, "web-1");
    successor.wait_ready(Duration::from_secs(20));
    // A ZooKeeper lease is its session's ephemeral node: a client that took its session
    // for ended while the ensemble was away releases nothing (the release is done: held
    // no longer), and the node goes only when the restarted ensemble ends the session,
    // a TTL on. A successor started before then may take another worker id (seen once:
    // 20 for 15, under the suite's load).
    if !url.starts_with("zookeeper") {
        assert_eq!(
            layout_lease(&successor).1,
            Some(worker),
            "the same identity's worker id, given back"
        );
    }
    let after = pull(&successor, 10_000).expect("ids from the successor");
    assert_after_the_dead(&issued, &after, "the successor");
}

/// Sends `signal` to `server`'s process.
pub(crate) fn signal(server: &Serve, signal: libc::c_int) {
    let pid = i32::try_from(server.pid()).unwrap();
    // SAFETY: signals the child this test started and still owns.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
}

/// Checks that `who` repeated none of the dead holder's ids (`issued`, in order) and began
/// above all of them.
fn assert_after_the_dead(issued: &[u64], after: &[u64], who: &str) {
    let dead_max = *issued.iter().max().unwrap();
    let repeated = after
        .iter()
        .filter(|id| issued.binary_search(id).is_ok())
        .count();
    assert_eq!(
        repeated,
        0,
        "{repeated} of {who}'s {} ids were issued by the dead holder",
        after.len()
    );
    assert!(
        after[0] > dead_max,
        "{who} issued {} at or below {dead_max}",
        after[0]
    );
}

/// A server that pulls ids for 2 s and is then killed with SIGKILL: the ids it issued,
/// in order.
fn killed_under_load(state: &Path, url: &str, identity: &str) -> Vec<u64> {
    let mut dead = serve(state, url, identity);
    dead.wait_ready(Duration::from_secs(20));
    let mut issued = Vec::new();
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(2) {
        issued.extend(pull(&dead, 10_000).expect("ids before the crash"));
    }
    dead.kill();
    issued
}

/// Pulls `count` ids in one batch, or `None` if the server would not issue.
pub fn pull(server: &Serve, count: u32) -> Option<Vec<u64>> {
    let (status, body) = server.get(&format!("/v1/ids?count={count}"));
    (status == 200).then(|| ids(&body))
}

/// Checks that no id repeats across all of `by_process`, and that each list increases.
pub fn assert_unique_and_increasing(by_process: &HashMap<String, Vec<u64>>) -> usize {
    let mut all = Vec::new();
    for (name, ids) in by_process {
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "{name}'s ids went back"
        );
        all.extend_from_slice(ids);
    }
    let total = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), total, "duplicate ids across the fleet");
    total
}

/// While the registry is stopped, a running server stops issuing before its lease could
/// have expired and `/readyz` says why; after the registry is back it issues again, and no
/// id repeats.
pub fn registry_away_and_back(registry: &mut dyn Server) {
    let state = tempfile::tempdir().unwrap();
    let server = serve(state.path(), &registry.url(), "away");
    server.wait_ready(Duration::from_secs(15));
    let mut ids = pull(&server, 1000).expect("ids while the registry is up");
    let stopped_at = now_ms();
    registry.stop();
    // Pull until refused: the last id must be before the last renewal + TTL - margin,
    // and the last renewal was before the stop. No request sent once the lease could have
    // expired is answered with ids: the time a request is sent, not the time the test
    // sees its answer, which a loaded machine delays.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut last_answered = stopped_at;
    loop {
        let asked = now_ms();
        match pull(&server, 100) {
            Some(more) => {
                ids.extend(more);
                last_answered = asked;
            }
            None => break,
        }
        assert!(
            Instant::now() < deadline,
            "still issuing 10 s after the registry stopped"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let last = twitter_ms(*ids.last().unwrap());
    assert!(
        last < stopped_at + 3000 - 300,
        "id at {last} after the lease could have expired"
    );
    assert!(
        last_answered < stopped_at + 3000,
        "a request sent at {last_answered} was answered with ids; stopped at {stopped_at}"
    );
    let (status, body) = server.get("/readyz");
    assert_eq!(status, 503, "{body}");
    assert!(
        body.contains("not confirmed") || body.contains("acquiring"),
        "{body}"
    );
    let (status, body) = server.get("/v1/id");
    assert_eq!(status, 503, "{body}");

    registry.restart();
    server.wait_ready(Duration::from_secs(20));
    ids.extend(pull(&server, 1000).expect("ids after the registry is back"));
    let mut by = HashMap::new();
    by.insert("away".to_string(), ids);
    assert_unique_and_increasing(&by);
}

/// Four servers share the registry; clients pull ids from all of them while one is killed
/// with SIGKILL and restarted, and then while the registry restarts. No id repeats, each
/// process's ids increase, and over a million are checked.
pub fn fleet_survives_a_crash_and_a_registry_restart(registry: &mut dyn Server) {
    let state = tempfile::tempdir().unwrap();
    let url = registry.url();
    let mut servers: Vec<Serve> = (0..4)
        .map(|i| {
            serve(
                &state.path().join(format!("s{i}")),
                &url,
                &format!("node-{i}"),
            )
        })
        .collect();
    for s in &servers {
        s.wait_ready(Duration::from_secs(20));
    }
    let mut by: HashMap<String, Vec<u64>> = HashMap::new();
    let mut pulled = 0usize;
    let mut incarnation = 0;
    let pull_round = |servers: &[Serve], by: &mut HashMap<String, Vec<u64>>, incarnation: usize| {
        let mut got = 0;
        for (i, s) in servers.iter().enumerate() {
            let name = if i == 0 {
                format!("node-0#{incarnation}")
            } else {
                format!("node-{i}")
            };
            if let Some(ids) = pull(s, 20_000) {
                got += ids.len();
                by.entry(name).or_default().extend(ids);
            }
        }
        got
    };
    for _ in 0..4 {
        pulled += pull_round(&servers, &mut by, incarnation);
    }
    // A member crashes and comes back (same identity: it may get its worker back).
    let before_crash = by.values().flatten().copied().max().unwrap();
    servers[0].kill();
    for _ in 0..3 {
        pulled += pull_round(&servers[1..], &mut by, incarnation);
    }
    servers[0] = serve(&state.path().join("s0"), &url, "node-0");
    incarnation += 1;
    servers[0].wait_ready(Duration::from_secs(20));
    let first_after = pull(&servers[0], 1).expect("the restarted member issues");
    assert!(first_after[0] > before_crash, "restarted member went back");
    by.entry(format!("node-0#{incarnation}"))
        .or_default()
        .extend(first_after);
    for _ in 0..4 {
        pulled += pull_round(&servers, &mut by, incarnation);
    }
    // The registry restarts under the fleet.
    registry.stop();
    for _ in 0..3 {
        pulled += pull_round(&servers, &mut by, incarnation);
    }
    registry.restart();
    for s in &servers {
        s.wait_ready(Duration::from_secs(20));
    }
    while pulled < 1_000_000 {
        pulled += pull_round(&servers, &mut by, incarnation);
    }
    let total = assert_unique_and_increasing(&by);
    assert!(total >= 1_000_000, "{total}");
}

/// A holder killed with SIGKILL: its worker id is not handed out before its TTL ends, and
/// the successor that gets it issues only ids greater than every id the dead one issued.
/// The other 31 worker ids are held by long leases, so the successor can only take this one.
pub fn killed_holders_worker_waits_out_its_ttl(registry: &mut dyn Server) {
    let url = registry.url();
    let _blockers = Blockers::hold_all_but_one(&url);
    let state = tempfile::tempdir().unwrap();
    let mut dead = serve(&state.path().join("dead"), &url, "dead");
    dead.wait_ready(Duration::from_secs(20));
    let mut issued = Vec::new();
    for _ in 0..5 {
        issued.extend(pull(&dead, 10_000).expect("ids before the crash"));
    }
    let dead_max = *issued.iter().max().unwrap();
    dead.kill();
    let killed_at = Instant::now();

    let successor = serve(&state.path().join("successor"), &url, "successor");
    // Not ready while the dead holder's lease could still be valid (TTL 3 s).
    while killed_at.elapsed() < Duration::from_millis(2_400) {
        let (status, body) = successor.get("/readyz");
        assert_eq!(
            status,
            503,
            "ready {:?} after the kill: {body}",
            killed_at.elapsed()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    successor.wait_ready(Duration::from_secs(20));
    let (_, layout) = successor.get("/v1/layout");
    assert!(layout.contains("\"state\":\"held\""), "{layout}");
    let first = pull(&successor, 1000).expect("ids from the successor");
    assert!(
        first[0] > dead_max,
        "successor issued {} <= {dead_max}",
        first[0]
    );
}

/// The attack that found registries forgetting live holders: the registry is restored
/// from a backup taken before a server acquired its worker id (every other worker id held
/// in the backup), while that server still issues inside its fence. A newcomer on an empty
/// state directory then finds the worker id free, and is ready while the old holder still
/// answers; every id it issues must lie above every id the old holder issued, before and
/// after the restore; and above anything the old holder may still issue, however soon it
/// stops: the `reach_ms` past the restore that its last reservation could cover (a TTL
/// for a registry whose leases expire). `restore` puts the backup back.
pub fn a_restore_while_a_holder_issues(
    url: &str,
    reach_ms: u64,
    back_up: &mut dyn FnMut(),
    restore: &mut dyn FnMut(),
) {
    a_restore_while_these_issue(url, reach_ms, &Restore::default(), back_up, restore);
}

/// How the holder and the newcomer of [`a_restore_while_these_issue`] run.
#[derive(Default)]
pub struct Restore<'a> {
    /// More flags for the old holder (`--rollback logical`, an overflow lead).
    pub holder_flags: &'a [&'a str],
    /// The newcomer's wall clock against the real one (`"-2s"`), if not right.
    pub newcomer_clock: Option<&'a str>,
    /// Whether the backup is taken once the holder issues, rather than before it started.
    pub back_up_while_it_issues: bool,
    /// How long the holder goes on issuing between that backup and the restore: longer
    /// than its reach, a backup staged that long before is no fresh file.
    pub restored_after: Duration,
}

/// [`a_restore_while_a_holder_issues`], with the holder's flags and the newcomer's clock
/// of `how`.
pub fn a_restore_while_these_issue(
    url: &str,
    reach_ms: u64,
    how: &Restore,
    back_up: &mut dyn FnMut(),
    restore: &mut dyn FnMut(),
) {
    let _blockers = Blockers::hold_all_but_one(url);
    if !how.back_up_while_it_issues {
        back_up();
    }
    let state = tempfile::tempdir().unwrap();
    let mut holder = serve_leased(&state.path().join("holder"), url, "holder");
    holder.args(how.holder_flags);
    let holder = spawn_logged(holder);
    holder.wait_ready(Duration::from_secs(30));
    let mut issued = Vec::new();
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(500) {
        issued.extend(pull(&holder, 10_000).expect("the holder issues"));
    }
    if how.back_up_while_it_issues {
        back_up();
        let backed_up = Instant::now();
        issued.extend(pull(&holder, 10_000).expect("the holder issues"));
        while backed_up.elapsed() < how.restored_after {
            issued.extend(pull(&holder, 10_000).expect("the holder issues"));
        }
    }

    // The worker id the restore freed is the newcomer's to take. The old holder acquires
    // again once a renewal (or, for `file:`, a check of its lock file) finds its lease
    // gone, which on a loaded machine can come before the newcomer's process has started;
    // a `file:` newcomer that finds no worker id free gives up after 15 s without
    // listening. So the holder is paused (SIGSTOP, as a VM pause would) until the newcomer
    // holds a worker id, and resumed then, inside its fence if the newcomer was quick. A
    // registry's holder is paused once the restore is done; a `file:` holder before it,
    // since its check every 250 ms can see the restore before the restore step returns.
    // Its locks are on the files the restore replaced, which the newcomer does not need.
    let before = url.starts_with("file:");
    let restored_ms = now_ms();
    if before {
        signal(&holder, libc::SIGSTOP);
    }
    restore();
    if !before {
        signal(&holder, libc::SIGSTOP);
    }
    let mut newcomer = serve_leased(&state.path().join("newcomer"), url, "newcomer");
    if let Some(offset) = how.newcomer_clock {
        wall_clock_offset(&mut newcomer, offset);
    }
    let mut newcomer = spawn_logged(newcomer);
    eventually(Duration::from_secs(30), "the newcomer's lease", || {
        let logged = newcomer.logged();
        logged
            .contains("acquired worker id")
            .then_some(())
            .ok_or(logged)
    });
    signal(&holder, libc::SIGCONT);
    // The old holder issues on until its next renewal finds the lease gone.
    let mut after = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline && after.len() < 50_000 {
        if let Some(ids) = pull(&holder, 10_000) {
            issued.extend(ids);
        }
        if let Some(ids) = pull(&newcomer, 10_000) {
            after.extend(ids);
        }
    }
    assert!(!after.is_empty(), "the newcomer issued nothing within 30 s");
    // Ids on other worker ids cannot meet the newcomer's: those the old holder issued once
    // it acquired again, and none at all when the newcomer took a blocker's worker id that
    // the restore also forgot (a blocker's session that lapsed while its registry was
    // down). What must lie below the newcomer is what was issued on its worker id.
    let worker = twitter_worker(after[0]);
    issued.retain(|id| twitter_worker(*id) == worker);
    issued.sort_unstable();
    if !issued.is_empty() {
        assert_after_the_dead(&issued, &after, "the newcomer");
    }
    let first_ms = twitter_ms(after[0]);
    assert!(
        first_ms > restored_ms + reach_ms,
        "the newcomer's first id is at {first_ms}, within the old holder's reach of {reach_ms} ms past the restore at {restored_ms}"
    );
}
