//! `snowmint serve --lease` against real Redis, etcd, PostgreSQL and ZooKeeper servers: the
//! registry going away under a running server, a SIGKILLed holder's worker id waiting out its
//! TTL, a successor on a new machine with its clock behind, a registry restored from an old
//! backup under a live holder, a fleet surviving a crashed member and a registry restart,
//! and a holder stopped while its registry is away. The same tests run against each. The
//! `file` registry takes the take-over test in `lease_file.rs`.

use crate::fleet;
use crate::support;

use snowmint_testkit::{Etcd, PgBouncer, Postgres, Redis, ZooKeeper};

macro_rules! registry_tests {
    ($module:ident, $server:ident) => {
        mod $module {
            use super::*;

            #[test]
            fn a_server_stops_issuing_while_the_registry_is_away_and_resumes_after() {
                fleet::registry_away_and_back(&mut $server::start());
            }

            #[test]
            fn a_holder_stopped_while_the_registry_is_away_gives_its_worker_id_back_when_it_returns()
            {
                fleet::stopped_while_the_registry_is_away_gives_its_worker_id_back_when_it_returns(
                    &mut $server::start(),
                );
            }

            #[test]
            fn a_killed_holders_worker_goes_to_a_successor_only_after_its_ttl() {
                fleet::killed_holders_worker_waits_out_its_ttl(&mut $server::start());
            }

            #[test]
            fn a_successor_with_an_empty_state_dir_and_its_clock_behind_starts_after_the_dead() {
                fleet::successor_with_an_empty_state_dir_and_its_clock_behind(
                    &$server::start().url(),
                );
            }

            #[test]
            fn a_successor_stopped_while_it_waits_keeps_the_dead_holders_mark() {
                fleet::successor_stopped_while_it_waits_keeps_the_dead_holders_mark(
                    &$server::start().url(),
                );
            }

            /// The reproduction of a registry restored from an old backup while a
            /// holder issues under a 3 s TTL.
            #[test]
            fn a_newcomer_after_a_restore_starts_above_the_holder_it_forgot() {
                use snowmint_testkit::Server;
                let registry = std::cell::RefCell::new($server::start());
                let backup = tempfile::tempdir().unwrap();
                let url = registry.borrow().url();
                fleet::a_restore_while_a_holder_issues(
                    &url,
                    3_000,
                    &mut || registry.borrow_mut().back_up(backup.path()),
                    &mut || registry.borrow_mut().restore(backup.path()),
                );
            }

            /// A holder paused past its fence while a newcomer takes its worker id,
            /// resumed with requests queued: the TTL less the margin is its fence.
            #[test]
            fn a_holder_paused_past_its_fence_issues_nothing_once_its_worker_id_moved() {
                let times = snowmint_testkit::LeaseTimes::SHORT;
                fleet::paused::a_paused_holder_resumed_under_load(
                    &$server::start().url(),
                    times.ttl_ms - times.margin_ms,
                    &mut || {},
                );
            }

            #[test]
            fn a_fleet_survives_a_killed_member_and_a_registry_restart() {
                fleet::fleet_survives_a_crash_and_a_registry_restart(&mut $server::start());
            }
        }
    };
}

registry_tests!(redis, Redis);

/// The restore under the old holder's ids running ahead of its clock (a logical clock
/// after a step back, an overflow lead) and a newcomer whose clock is 2 s behind: the
/// newcomer still starts past everything the holder may issue.
#[test]
fn a_newcomer_behind_after_a_restore_starts_above_a_holder_running_ahead() {
    use snowmint_testkit::Server;
    let registry = std::cell::RefCell::new(Redis::start());
    let backup = tempfile::tempdir().unwrap();
    let url = registry.borrow().url();
    let how = fleet::Restore {
        holder_flags: &["--rollback", "logical", "--overflow-lead-ms", "500"],
        newcomer_clock: Some("-2s"),
        ..fleet::Restore::default()
    };
    fleet::a_restore_while_these_issue(
        &url,
        3_000,
        &how,
        &mut || registry.borrow_mut().back_up(backup.path()),
        &mut || registry.borrow_mut().restore(backup.path()),
    );
}
registry_tests!(etcd, Etcd);
registry_tests!(postgres, Postgres);
registry_tests!(pgbouncer, Pooled);

/// PostgreSQL behind PgBouncer in transaction mode with 4 server connections: the attacks
/// above act on PostgreSQL while the pool stays up ([`PgBouncer`]'s `Server` methods).
struct Pooled;

impl Pooled {
    fn start() -> PgBouncer {
        PgBouncer::start(4)
    }
}
registry_tests!(zookeeper, ZooKeeper);

/// `snowmint serve --lease zookeeper://...` with the default 10 s TTL, which the test server
/// clamps to its longest session, 4 s: the server gets a worker id, warns of the clamp once,
/// shows the lease and the TTL it was granted in `/v1/layout` and `/metrics`, and on SIGTERM
/// gives the worker id back at once, its mark at the last id issued.
#[test]
fn a_zookeeper_lease_lasts_the_session_granted_and_sigterm_gives_it_back() {
    use std::time::Duration;

    let zookeeper = ZooKeeper::start();
    let url = zookeeper.url();
    let state = tempfile::tempdir().unwrap();
    let args = ["--grpc-addr", "off", "--lease", &url, "--identity", "solo"];
    let mut serve = support::spawn_logged(support::serve_command(state.path(), &args));
    serve.wait_ready(Duration::from_secs(20));

    let (_, layout) = serve.get("/v1/layout");
    let layout: serde_json::Value = serde_json::from_str(&layout).unwrap();
    let lease = &layout["lease"];
    assert_eq!(
        (&lease["backend"], &lease["state"], &lease["ttl_ms"]),
        (&"zookeeper".into(), &"held".into(), &4_000.into()),
        "{layout}"
    );
    let worker = layout["worker"].as_u64().expect("a worker id");
    let (_, metrics) = serve.get("/metrics");
    for line in [
        "snowmint_lease_info{backend=\"zookeeper\",state=\"held\"} 1",
        "snowmint_lease_ttl_seconds 4.0",
    ] {
        assert!(metrics.lines().any(|l| l == line), "no {line}:\n{metrics}");
    }
    let issued = fleet::pull(&serve, 1_000).expect("ids under the lease");
    let last_ms = support::twitter_ms(*issued.last().unwrap());

    let status = serve.terminate();
    let logged = serve.logged();
    assert!(status.success(), "exit status {status}\n{logged}");
    let warnings: Vec<&str> = logged
        .lines()
        .filter(|l| l.contains("granted another lease TTL"))
        .collect();
    assert_eq!(warnings.len(), 1, "{logged}");
    for field in [
        "asked_ms=10000",
        "granted_ms=4000",
        "renew_ms=1333",
        "margin_ms=400",
    ] {
        assert!(warnings[0].contains(field), "{}", warnings[0]);
    }

    // Released: the same identity gets the same worker at once, its mark at the last id.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let registry = snowmint_lease::registry_from_url(&url).unwrap();
    let namespace = snowmint_lease::Fleet::default().namespace();
    let claim = snowmint_lease::Claim::new(&namespace, 0, 32, "solo", Duration::from_secs(4));
    let lease = runtime.block_on(registry.acquire(&claim)).unwrap();
    assert_eq!(lease.worker, worker, "the worker id was not given back");
    let mark = lease.high_water_ms.expect("a mark");
    assert!(
        (last_ms..last_ms + 1_000).contains(&mark),
        "mark {mark}, last id at {last_ms}"
    );
    runtime
        .block_on(registry.release(&claim, &lease, mark))
        .unwrap();
}
