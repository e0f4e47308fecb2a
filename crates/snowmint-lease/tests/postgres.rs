//! The PostgreSQL registry against a real `postgres`: the conformance suite, then what only
//! a server that can stop, crash, freeze and come back shows.
//!
//! Leases here are real: their TTLs run on the database's clock, so these tests wait real
//! seconds (the conformance TTL, 2 s) instead of driving a fake clock. Tests that never
//! stop the server share one (see [`shared`]); the others start their own.

use crate::conformance;

use std::collections::HashSet;
use std::fmt::Debug;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use conformance::{TTL, claim, held_when};
use snowmint::error::Chain;
use snowmint::{Clock, SystemClock, WallClock};
use snowmint_lease::{Keeper, LeaseError, LeaseStatus, PostgresRegistry, Registry};
use snowmint_testkit::Server;
use snowmint_testkit::{Frozen, Postgres, eventually_async};
use tokio::task::block_in_place;

use conformance::SETTINGS;

/// The server shared by the tests that never stop it: started by the first that asks,
/// stopped (and its cluster removed) when the last that holds it ends. Starting one costs
/// about 1.5 s of `initdb`; tests that run at once share it, and each works in a namespace
/// of its own.
fn shared() -> Arc<Postgres> {
    static SHARED: Mutex<Weak<Postgres>> = Mutex::new(Weak::new());
    let mut slot = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(postgres) = slot.upgrade() {
        return postgres;
    }
    let postgres = Arc::new(Postgres::start());
    *slot = Arc::downgrade(&postgres);
    postgres
}

fn registry(url: &str) -> Arc<dyn Registry> {
    Arc::new(PostgresRegistry::from_url(url).expect("a valid URL"))
}

/// A plain session, for looking at and tampering with the table behind the registry's back.
async fn sql(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(connection);
    client
}

fn now_ms() -> u64 {
    WallClock.now_ms()
}

/// Runs `call`, which must fail as unavailable within `conformance::PROMPT` with a message that
/// starts with `prefix`.
async fn unavailable_promptly<T: Debug>(
    what: &str,
    prefix: &str,
    call: impl Future<Output = Result<T, LeaseError>>,
) {
    conformance::unavailable_promptly("postgres", what, prefix, call).await;
}

conformance::suite!({
    let postgres = shared();
    let url = postgres.url();
    (postgres, url)
});

/// The server's processes: the postmaster and its children (one per session).
fn server_processes(postmaster: u32) -> Vec<u32> {
    let mut pids = vec![postmaster];
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "pid (comm) state ppid ...": the name may hold spaces, so read after its ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
        if ppid == Some(postmaster) {
            pids.push(pid);
        }
    }
    pids
}

/// Waits (up to ten seconds) until none of `pids` runs: each has exited or is a zombie.
async fn wait_gone(pids: &[u32]) {
    let running = |pid: &u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next());
            state != Some("Z")
        })
    };
    eventually_async(
        Duration::from_secs(10),
        "the server's processes gone",
        async || {
            let left: Vec<_> = pids.iter().filter(|pid| running(pid)).collect();
            if left.is_empty() {
                Ok(())
            } else {
                Err(format!("{left:?} still running"))
            }
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_listening_is_unavailable_at_once_with_the_reason() {
    let port = snowmint_testkit::free_port();
    let registry = registry(&format!("postgres://postgres@127.0.0.1:{port}/fleet"));
    let err = registry
        .acquire(&claim("none", "host", 8))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("postgres registry is unavailable: 127.0.0.1:{port}/fleet: cannot connect")
    );
    assert_eq!(
        Chain(&err).to_string(),
        format!(
            "postgres registry is unavailable: 127.0.0.1:{port}/fleet: cannot connect: \
             error connecting to server: Connection refused (os error 111)"
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_database_is_unavailable_promptly_and_used_again_after_restart() {
    let mut postgres = Postgres::start();
    let registry = registry(&postgres.url());
    let down = format!(
        "postgres registry is unavailable: 127.0.0.1:{}/postgres: ",
        postgres.port()
    );
    let claim = claim("stopped", "web-1", 8);
    let lease = registry.acquire(&claim).await.unwrap();
    let reserved = now_ms() + 1_000;
    registry.renew(&claim, &lease, reserved).await.unwrap();
    let renewed_at = Instant::now();

    block_in_place(|| postgres.stop());
    let renew = registry.renew(&claim, &lease, now_ms());
    unavailable_promptly("renew", &down, renew).await;
    let other = conformance::claim("stopped", "web-2", 8);
    unavailable_promptly("acquire", &down, registry.acquire(&other)).await;
    unavailable_promptly("release", &down, registry.release(&claim, &lease, 0)).await;

    // Back within the TTL: the same lease renews, on a new connection.
    block_in_place(|| postgres.restart());
    assert!(
        renewed_at.elapsed() < TTL,
        "too slow to test a renewal in time"
    );
    registry.renew(&claim, &lease, reserved).await.unwrap();

    // Back after the TTL: the lease is lost, and acquiring again gives the same worker id
    // (this identity's) with the mark it had.
    block_in_place(|| postgres.stop());
    tokio::time::sleep(TTL + Duration::from_millis(200)).await;
    block_in_place(|| postgres.restart());
    let err = registry.renew(&claim, &lease, now_ms()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "lease on datacenter 1 worker {} is lost: it expired before this renewal",
            lease.worker
        )
    );
    let again = registry.acquire(&claim).await.unwrap();
    // At least the mark, and past it if the restart's floor is larger: the server
    // vouches for its rows only since it started.
    assert_eq!(again.worker, lease.worker);
    assert!(again.high_water_ms >= Some(reserved), "{again:?}");

    // Crashed (SIGKILL) rather than stopped: the same, once the sessions' processes have
    // noticed and exited (until then they still serve, and a renewal may well succeed).
    let crashed = server_processes(postgres.pid().expect("running"));
    block_in_place(|| postgres.kill());
    wait_gone(&crashed).await;
    unavailable_promptly("renew", &down, registry.renew(&claim, &again, now_ms())).await;
    block_in_place(|| postgres.restart());
    registry
        .renew(&claim, &again, now_ms() + 1_000)
        .await
        .unwrap();
    registry.release(&claim, &again, now_ms()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_database_is_unavailable_within_the_timeout_then_used_again() {
    let postgres = Postgres::start();
    let registry = registry(&postgres.url());
    let silent = format!(
        "postgres registry is unavailable: 127.0.0.1:{}/postgres: no answer within 2000 ms",
        postgres.port()
    );
    let claim = claim("frozen", "web-1", 8);
    let lease = registry.acquire(&claim).await.unwrap();
    let reserved = now_ms() + 1_000;
    registry.renew(&claim, &lease, reserved).await.unwrap();

    // Stopped, not gone: connections are accepted (by the kernel) and never answered.
    let frozen = server_processes(postgres.pid().expect("running"));
    assert!(
        frozen.len() > 2,
        "the postmaster and its sessions: {frozen:?}"
    );
    let stopped: Vec<Frozen> = frozen
        .iter()
        .map(|&pid| Frozen::stop(pid).unwrap())
        .collect();
    let on_the_open_session = registry.renew(&claim, &lease, now_ms());
    unavailable_promptly("renew", &silent, on_the_open_session).await;
    let other = conformance::claim("frozen", "web-2", 8);
    unavailable_promptly("acquire", &silent, registry.acquire(&other)).await;
    drop(stopped);

    // Two timeouts outlast the TTL: the lease is gone, a new one comes at once.
    let err = registry.renew(&claim, &lease, now_ms()).await.unwrap_err();
    assert!(matches!(err, LeaseError::Lost { .. }), "{err}");
    let again = registry.acquire(&claim).await.unwrap();
    assert_eq!(
        (again.worker, again.high_water_ms),
        (lease.worker, Some(reserved))
    );
    registry.release(&claim, &again, now_ms()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_holder_is_not_taken_over_before_its_ttl() {
    let postgres = shared();
    let clock = Arc::new(SystemClock::new());
    let doomed = Keeper::start(
        registry(&postgres.url()),
        claim("killed", "doomed", 1),
        SETTINGS,
        clock,
    );
    let mut status = doomed.status();
    let first = held_when(&mut status, "a renewal", |h| h.last_error.is_none()).await;
    held_when(&mut status, "a second renewal", |h| {
        h.valid_until_ms > first.valid_until_ms
    })
    .await;
    // Dropping the keeper ends it as a crash would: no release, and its connection closes.
    drop(doomed);
    let LeaseStatus::Held(last) = status.borrow().clone() else {
        panic!("the keeper held its lease")
    };
    // The last confirmed renewal was sent at this instant, so the row cannot expire sooner.
    let sent = last.valid_until_ms - u64::try_from(TTL.as_millis()).unwrap()
        + u64::try_from(SETTINGS.safety_margin.as_millis()).unwrap();
    let expires_no_sooner = sent + u64::try_from(TTL.as_millis()).unwrap();

    let successor = registry(&postgres.url());
    let next = claim("killed", "successor", 1);
    let (taken, at) = eventually_async(TTL * 3, "a takeover", async || {
        match successor.acquire(&next).await {
            Err(err @ LeaseError::Exhausted { .. }) => Err(err),
            Err(err) => panic!("no takeover: {err}"),
            Ok(lease) => Ok((lease, now_ms())),
        }
    })
    .await;
    // 5 ms: the keeper's clock advances in whole milliseconds from a ticker thread.
    assert!(
        at + 5 >= expires_no_sooner,
        "taken over {} ms early",
        expires_no_sooner - at
    );
    assert_eq!(taken.worker, last.lease.worker);
    assert!(
        taken.high_water_ms >= Some(last.confirmed_high_water_ms),
        "{taken:?} is below the dead holder's {}",
        last.confirmed_high_water_ms
    );
    successor.release(&next, &taken, now_ms()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keeper_freezes_its_fence_while_the_database_is_down() {
    let mut postgres = Postgres::start();
    let prefix = format!(
        "postgres registry is unavailable: 127.0.0.1:{}/postgres: ",
        postgres.port()
    );
    conformance::keeper_fence_freezes_while_the_registry_is_down(&mut postgres, &prefix).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_registries_racing_give_eight_distinct_workers_and_eight_exhausted() {
    let postgres = shared();
    let registries = [registry(&postgres.url()), registry(&postgres.url())];
    // First on an empty table (every worker row is created under contention), then again
    // on free rows (taken under contention).
    for round in ["new rows", "free rows"] {
        let tasks: Vec<_> = (0..16)
            .map(|i| {
                let registry = Arc::clone(&registries[i % 2]);
                let claim = claim("race", &format!("host-{i}"), 8);
                tokio::spawn(async move { (registry.acquire(&claim).await, claim, i % 2) })
            })
            .collect();
        let mut held = Vec::new();
        let mut exhausted = 0;
        for task in tasks {
            match task.await.unwrap() {
                (Ok(lease), claim, r) => held.push((lease, claim, r)),
                (
                    Err(LeaseError::Exhausted {
                        datacenter: 1,
                        workers: 8,
                        ..
                    }),
                    _,
                    _,
                ) => exhausted += 1,
                (Err(err), _, _) => panic!("{round}: {err}"),
            }
        }
        let workers: HashSet<u64> = held.iter().map(|(l, _, _)| l.worker).collect();
        assert_eq!(workers, (0..8).collect(), "{round}");
        assert_eq!(exhausted, 8, "{round}");
        for (lease, claim, r) in &held {
            registries[*r]
                .release(claim, lease, now_ms())
                .await
                .unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_table_is_created_once_by_registries_that_start_together() {
    let postgres = shared();
    let admin = sql(&postgres.url()).await;
    admin.batch_execute("CREATE SCHEMA fresh").await.unwrap();
    // Every session of these registries sees only the new, empty schema.
    let url = format!("{}?options=-c%20search_path%3Dfresh", postgres.url());
    let tasks: Vec<_> = (0..6)
        .map(|i| {
            let registry = registry(&url);
            tokio::spawn(async move {
                registry
                    .acquire(&claim("fresh", &format!("host-{i}"), 8))
                    .await
            })
        })
        .collect();
    let mut workers = HashSet::new();
    for task in tasks {
        workers.insert(task.await.unwrap().expect("acquire").worker);
    }
    assert_eq!(workers.len(), 6);
    let columns: Vec<(String, String)> = admin
        .query(
            "SELECT column_name::text, data_type::text FROM information_schema.columns
             WHERE table_schema = 'fresh' AND table_name = 'snowmint_workers' ORDER BY ordinal_position",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    let expected = [
        ("namespace", "text"),
        ("datacenter", "bigint"),
        ("worker", "bigint"),
        ("holder", "text"),
        ("identity", "text"),
        ("expires_at", "timestamp with time zone"),
        ("high_water", "bigint"),
        ("taken_at", "timestamp with time zone"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(c, t)| ((*c).to_string(), (*t).to_string()))
        .collect();
    assert_eq!(columns, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lowest_missing_worker_is_created_however_many_ids_the_layout_has() {
    let postgres = shared();
    let url = postgres.url();
    let registry = registry(&url);
    let admin = sql(&url).await;
    let mut held = Vec::new();
    for i in 0..3 {
        held.push(
            registry
                .acquire(&claim("gaps", &format!("host-{i}"), 5))
                .await
                .unwrap()
                .worker,
        );
    }
    assert_eq!(held, [0, 1, 2]);
    // A row deleted by hand leaves a gap below the highest row: it is filled first.
    admin
        .execute(
            "DELETE FROM snowmint_workers WHERE namespace = 'gaps' AND worker = 1",
            &[],
        )
        .await
        .unwrap();
    for expected in [1, 3, 4] {
        let lease = registry.acquire(&claim("gaps", "late", 5)).await.unwrap();
        // No mark: only the instant the server started, from which it vouches.
        assert_eq!(lease.worker, expected);
        assert!(lease.high_water_ms < Some(now_ms()), "{lease:?}");
    }
    let err = registry
        .acquire(&claim("gaps", "late", 5))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "all 5 worker ids of datacenter 1 of fleet \"gaps\" are held; retrying (see who holds them: snowmint fleet --lease URL --fleet gaps --datacenter 1)"
    );

    // Baidu's 22-bit worker field, 20,000 of its ids held: the search runs in the database
    // over the rows there are, never over the 4 million ids.
    const HELD: i64 = 20_000;
    admin
        .execute(
            "INSERT INTO snowmint_workers
             SELECT 'baidu', 1, w, 'other', 'other', now() + interval '1 hour', 0
             FROM generate_series(0, $1::bigint - 1) AS w",
            &[&HELD],
        )
        .await
        .unwrap();
    let started = Instant::now();
    let lease = registry
        .acquire(&claim("baidu", "host", 1 << 22))
        .await
        .unwrap();
    let took = started.elapsed();
    assert_eq!(lease.worker, HELD as u64);
    eprintln!("acquire past {HELD} held rows of 2^22 worker ids took {took:?}");
    assert!(took < Duration::from_secs(1), "{took:?}");
}

/// Found by attacking the product: a PostgreSQL restored from an old copy of its data
/// directory forgot a live holder, and a newcomer issued its ids again.
#[tokio::test(flavor = "multi_thread")]
async fn a_restore_floors_a_new_lease() {
    let mut postgres = snowmint_testkit::Postgres::start();
    conformance::a_restore_floors_a_new_lease(&mut postgres, "restore").await;
}

/// The lease transactions can ask for PostgreSQL's own durability: `synchronous_commit`
/// set through the URL's `options`, as libpq takes it, so that an acquisition or renewal
/// returns only once a synchronous standby has it (on a server without one, as here, it
/// commits locally).
#[tokio::test(flavor = "multi_thread")]
async fn synchronous_commit_is_set_through_the_url() {
    let postgres = shared();
    let url = format!(
        "{}?options=-c%20synchronous_commit%3Dremote_apply",
        postgres.url()
    );
    let lease = registry(&url)
        .acquire(&claim("durable", "pod", 2))
        .await
        .unwrap();
    assert!(lease.worker < 2);
    let row = sql(&url)
        .await
        .query_one("SHOW synchronous_commit", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "remote_apply");
}

/// The table as the earlier release made it: no `taken_at`.
const EARLIER_TABLE: &str = "CREATE TABLE snowmint_workers (
    namespace text NOT NULL,
    datacenter bigint NOT NULL,
    worker bigint NOT NULL,
    holder text,
    identity text,
    expires_at timestamptz,
    high_water bigint,
    PRIMARY KEY (namespace, datacenter, worker)
)";

/// An upgrade: a server of this release finds the earlier release's table, adds
/// `taken_at`, and stamps the rows it takes; the earlier release's statements, which name
/// their columns, still run on the table; and a role that may only `SELECT` lists it all,
/// the earlier release's row with what it lacks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_earlier_table_gains_taken_at_and_a_reader_lists_it() {
    let postgres = Postgres::start();
    let url = postgres.url();
    let admin = sql(&url).await;
    admin.batch_execute(EARLIER_TABLE).await.unwrap();
    // A server of the earlier release holds worker 0 of its namespace, as it inserted it.
    let earlier_insert = "INSERT INTO snowmint_workers
            (namespace, datacenter, worker, holder, identity, expires_at)
        VALUES ($1, 0, $2, $3, $4, clock_timestamp() + interval '60 seconds')
        ON CONFLICT DO NOTHING RETURNING worker";
    let old = "twitter-1288834974657";
    admin
        .query(
            earlier_insert,
            &[&old, &0i64, &"old-1/7/0000abcd", &"old-1"],
        )
        .await
        .unwrap();

    let server = registry(&url);
    let before = now_ms();
    let lease = server
        .acquire(&claim("fleet.default", "web-1", 8))
        .await
        .unwrap();
    let columns = admin
        .query(
            "SELECT column_name FROM information_schema.columns
             WHERE table_name = 'snowmint_workers' AND column_name = 'taken_at'",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(columns.len(), 1, "taken_at was added");
    // The earlier release's statements still run: another of its rows.
    admin
        .query(
            earlier_insert,
            &[&old, &1i64, &"old-2/8/0000beef", &"old-2"],
        )
        .await
        .unwrap();

    admin
        .batch_execute("CREATE ROLE reader LOGIN; GRANT SELECT ON snowmint_workers TO reader")
        .await
        .unwrap();
    let reader = url.replacen("postgres://postgres@", "postgres://reader@", 1);
    let listing = registry(&reader)
        .list(&snowmint_lease::ListFilter::default())
        .await
        .unwrap();
    let ours = listing
        .records
        .iter()
        .find(|r| r.namespace == "fleet.default")
        .unwrap();
    assert_eq!((ours.worker, ours.datacenter), (lease.worker, 1));
    assert_eq!(ours.identity.as_deref(), Some("web-1"));
    let taken = ours.taken_at_ms.expect("a taken-at");
    assert!(
        taken + 1_000 >= before && taken <= now_ms() + 1_000,
        "{taken} {before}"
    );
    let earlier: Vec<_> = listing
        .records
        .iter()
        .filter(|r| r.namespace == old)
        .collect();
    assert_eq!(earlier.len(), 2, "{listing:?}");
    assert!(
        earlier
            .iter()
            .all(|r| r.earlier_release && r.fleet.is_none())
    );
    assert_eq!(earlier[0].lacks, ["fleet", "layout", "taken_at"]);
    assert_eq!(earlier[1].identity.as_deref(), Some("old-2"));
    let pool = listing.pools.iter().find(|p| p.namespace == old).unwrap();
    assert_eq!(
        (pool.workers, pool.held, pool.free),
        (Some(32), 2, Some(30))
    );
    // The reader may not take one.
    let err = registry(&reader)
        .acquire(&claim("fleet.default", "web-2", 8))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("lacks the rights"), "{err}");
}
