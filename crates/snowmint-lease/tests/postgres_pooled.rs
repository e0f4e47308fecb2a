//! The PostgreSQL registry through a real PgBouncer in transaction mode, as a fleet larger
//! than PostgreSQL's connection limit runs it: the conformance suite, a fleet many times
//! the pool's size, and the server behind the pool going away.
//!
//! The pools here are tiny (2 and 4 server connections), so that concurrent calls keep
//! moving between server connections: a statement prepared by name on one, or a setting
//! made for the session, would be missing on the next.

use crate::conformance;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use conformance::claim;
use snowmint::{Clock, WallClock};
use snowmint_lease::{LeaseError, ListFilter, PostgresRegistry, Registry, State};
use snowmint_testkit::{PgBouncer, Server};

/// Server connections in the shared pool: fewer than the suite's concurrent acquirers.
const SHARED_POOL: u32 = 2;

/// The pool shared by the tests that never stop it, as `postgres.rs` shares its server.
fn shared() -> Arc<PgBouncer> {
    static SHARED: Mutex<Weak<PgBouncer>> = Mutex::new(Weak::new());
    let mut slot = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(pool) = slot.upgrade() {
        return pool;
    }
    let pool = Arc::new(PgBouncer::start(SHARED_POOL));
    *slot = Arc::downgrade(&pool);
    pool
}

fn registry(url: &str) -> Arc<dyn Registry> {
    Arc::new(PostgresRegistry::from_url(url).expect("a valid URL"))
}

fn now_ms() -> u64 {
    WallClock.now_ms()
}

conformance::suite!({
    let pool = shared();
    let url = pool.url();
    (pool, url)
});

/// The sessions PostgreSQL serves, other than the one asking: those the pool opened.
async fn server_sessions(pool: &PgBouncer) -> i64 {
    let (client, connection) =
        tokio_postgres::connect(&pool.postgres().url(), tokio_postgres::NoTls)
            .await
            .expect("connect to PostgreSQL itself");
    tokio::spawn(connection);
    client
        .query_one(
            "SELECT count(*) FROM pg_stat_activity
             WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()",
            &[],
        )
        .await
        .expect("count the sessions")
        .get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_sixteen_times_the_pool_holds_renews_and_gives_back() {
    const POOL: u32 = 4;
    const FLEET: usize = 64;
    let pool = tokio::task::spawn_blocking(|| PgBouncer::start(POOL))
        .await
        .unwrap();
    let url = pool.url();
    // A registry each, as each server of a fleet has: its own connection to the pool.
    let fleet: Vec<_> = (0..FLEET)
        .map(|i| (registry(&url), claim("fleet", &format!("host-{i}"), 128)))
        .collect();
    let taken = futures_util::future::join_all(
        fleet
            .iter()
            .map(|(registry, claim)| async move { registry.acquire(claim).await }),
    )
    .await;
    let leases: Vec<_> = taken
        .into_iter()
        .map(|lease| lease.expect("acquire through the pool"))
        .collect();
    let workers: HashSet<u64> = leases.iter().map(|l| l.worker).collect();
    assert_eq!(workers.len(), FLEET, "distinct worker ids");
    let sessions = server_sessions(&pool).await;
    assert!(
        (1..=i64::from(POOL)).contains(&sessions),
        "{FLEET} holders through a pool of {POOL} left {sessions} sessions on PostgreSQL"
    );

    // The fleet as `snowmint fleet` lists it, read through the pool as well.
    let listing = registry(&url)
        .list(&ListFilter::default())
        .await
        .expect("list through the pool");
    let held = listing
        .records
        .iter()
        .filter(|record| record.namespace == "fleet" && record.state == State::Held)
        .count();
    assert_eq!(held, FLEET, "{listing:?}");

    let marks = now_ms() + 5_000;
    let renewed = futures_util::future::join_all(
        fleet
            .iter()
            .zip(&leases)
            .map(|((registry, claim), lease)| registry.renew(claim, lease, marks)),
    )
    .await;
    for result in renewed {
        result.expect("renew through the pool");
    }
    let released = futures_util::future::join_all(
        fleet
            .iter()
            .zip(&leases)
            .map(|((registry, claim), lease)| registry.release(claim, lease, marks)),
    )
    .await;
    for result in released {
        result.expect("release through the pool");
    }
    // Given back with their marks: a newcomer takes one and starts after it.
    let newcomer = registry(&url)
        .acquire(&claim("fleet", "host-0", 128))
        .await
        .unwrap();
    assert!(
        newcomer.high_water_ms >= Some(marks),
        "{newcomer:?} starts after {marks}"
    );
    assert!(server_sessions(&pool).await <= i64::from(POOL));
}

/// Found by attacking the pool: PostgreSQL stopped behind a PgBouncer that stays up is
/// unavailable at once with the reason, and used again once it is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_away_behind_the_pool_is_unavailable_then_used_again() {
    let mut pool = tokio::task::spawn_blocking(|| PgBouncer::start(2))
        .await
        .unwrap();
    let registry = registry(&pool.url());
    let held = claim("away", "web-1", 8);
    let lease = registry.acquire(&held).await.unwrap();
    tokio::task::block_in_place(|| pool.postgres_mut().stop());
    let err = registry.renew(&held, &lease, now_ms()).await.unwrap_err();
    assert!(
        matches!(err, LeaseError::Unavailable { .. }),
        "a renewal with PostgreSQL away: {err:?}"
    );
    let err = registry
        .acquire(&claim("away", "web-2", 8))
        .await
        .unwrap_err();
    assert!(
        matches!(err, LeaseError::Unavailable { .. }),
        "an acquisition with PostgreSQL away: {err:?}"
    );
    tokio::task::block_in_place(|| pool.postgres_mut().restart());
    // Back: the pool logs in again (the testkit's PgBouncer retries a failed login after
    // a second), and the registry is used again on a new connection.
    let other = snowmint_testkit::eventually_async(
        Duration::from_secs(10),
        "an acquisition through the pool once PostgreSQL is back",
        async || registry.acquire(&claim("away", "web-2", 8)).await,
    )
    .await;
    // The first lease ran out while PostgreSQL was away (its TTL is 2 s): its worker id
    // was free to take, and its holder is told so.
    let err = registry.renew(&held, &lease, now_ms()).await.unwrap_err();
    assert!(matches!(err, LeaseError::Lost { .. }), "{err:?}");
    assert!(other.worker < 8);
}
