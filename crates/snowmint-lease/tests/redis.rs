//! The Redis registry against a real `redis-server`: the conformance suite, then what only
//! a server that can stop, crash and come back shows; then a primary with a replica, asked
//! to wait for it (`?wait=1`), and found through three real sentinels, which fail over.
//!
//! Leases here are real: their TTLs run on the server's clock, so these tests wait real
//! seconds (the conformance TTL, 2 s) instead of driving a fake clock.

use crate::conformance;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use conformance::{TTL, claim};
use snowmint::Clock;
use snowmint_lease::{Claim, LeaseError, RedisRegistry, Registry};
use snowmint_testkit::{Redis, Sentinels, Server, eventually_async};

fn registry(redis: &Redis) -> Arc<dyn Registry> {
    Arc::new(RedisRegistry::from_url(&redis.url()).expect("a valid URL"))
}

fn registry_at(port: u16) -> RedisRegistry {
    RedisRegistry::from_url(&format!("redis://127.0.0.1:{port}")).expect("a valid URL")
}

fn now_ms() -> u64 {
    snowmint::WallClock.now_ms()
}

/// Runs `call`, which must fail as unavailable within `conformance::PROMPT`.
async fn unavailable_promptly<T: std::fmt::Debug>(
    what: &str,
    call: impl Future<Output = Result<T, LeaseError>>,
) -> Duration {
    let prefix = "redis registry is unavailable: redis://127.0.0.1:";
    conformance::unavailable_promptly("redis", what, prefix, call).await
}

/// Found by attacking the product: a Redis restored from an old snapshot forgot a live
/// holder, and a newcomer issued its ids again.
#[tokio::test(flavor = "multi_thread")]
async fn a_restore_floors_a_new_lease() {
    let mut redis = Redis::start();
    conformance::a_restore_floors_a_new_lease(&mut redis, "restore").await;
}

conformance::suite!({
    let redis = Redis::start();
    let url = redis.url();
    (redis, url)
});

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_registry_is_unavailable_promptly_and_renewals_resume_after_restart() {
    let mut redis = Redis::start();
    let registry = registry(&redis);
    let holder = claim("outage", "pod-0", 4);
    let mut lease = registry.acquire(&holder).await.unwrap();
    let reserved = now_ms() + 1_000;
    registry.renew(&holder, &lease, reserved).await.unwrap();
    let renewed_at = Instant::now();

    tokio::task::block_in_place(|| redis.stop());
    let other = claim("outage", "pod-1", 4);
    let took = [
        unavailable_promptly("acquire", registry.acquire(&other)).await,
        unavailable_promptly("renew", registry.renew(&holder, &lease, now_ms())).await,
        unavailable_promptly("release", registry.release(&holder, &lease, now_ms())).await,
        // A registry that never connected finds out as fast.
        unavailable_promptly("first acquire", registry_at(redis.port()).acquire(&other)).await,
    ];
    eprintln!("acquire, renew, release, first acquire while stopped took {took:?}");

    // Back within the TTL: the append-only file kept the lease, and it renews.
    tokio::task::block_in_place(|| redis.restart());
    let sent_after = renewed_at.elapsed();
    match registry.renew(&holder, &lease, now_ms() + 1_000).await {
        Ok(()) => eprintln!("renewed {sent_after:?} after the last renewal, across a restart"),
        // A slow machine: the TTL passed during the outage.
        Err(LeaseError::Lost { .. }) if sent_after >= TTL - Duration::from_millis(200) => {
            lease = registry.acquire(&holder).await.unwrap();
        }
        Err(err) => panic!("renewal {sent_after:?} after the last one: {err}"),
    }
    let reserved = now_ms() + 1_000;
    registry.renew(&holder, &lease, reserved).await.unwrap();

    // Down past the TTL (killed, this time): the lease is gone, the mark is not.
    tokio::task::block_in_place(|| redis.kill());
    tokio::time::sleep(TTL + Duration::from_millis(300)).await;
    tokio::task::block_in_place(|| redis.restart());
    let err = registry.renew(&holder, &lease, now_ms()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "lease on datacenter 1 worker {} is lost: its TTL ended",
            lease.worker
        )
    );
    let again = registry.acquire(&holder).await.unwrap();
    assert_eq!(
        again.worker, lease.worker,
        "the same identity gets its worker back"
    );
    // At least the mark, and past it if the restart's floor is larger: the server
    // vouches for its records only since it started.
    assert!(again.high_water_ms >= Some(reserved), "{again:?}");
    registry.release(&holder, &again, reserved).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_that_never_answers_is_unavailable_promptly() {
    // Connections complete in the kernel's backlog; nobody ever reads or answers them.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("redis://127.0.0.1:{}", silent.local_addr().unwrap().port());
    let registry = RedisRegistry::from_url(&url).unwrap();
    let holder = claim("silent", "pod-0", 4);
    let took = unavailable_promptly("acquire", registry.acquire(&holder)).await;
    eprintln!("a silent registry answered unavailable after {took:?}");
    let lease = snowmint_lease::Lease {
        datacenter: 1,
        worker: 0,
        high_water_ms: None,
        token: 0,
    };
    unavailable_promptly("renew", registry.renew(&holder, &lease, 1)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_holder_keeps_its_worker_until_its_ttl_even_from_its_own_identity() {
    let redis = Redis::start();
    let dead = claim("dropped", "pod-0", 2);
    let lease = {
        // A process of its own (its own connection) that dies without releasing.
        let registry = registry(&redis);
        let lease = registry.acquire(&dead).await.unwrap();
        registry
            .renew(&dead, &lease, now_ms() + 1_500)
            .await
            .unwrap();
        lease
    };
    let reserved = now_ms() + 1_500;
    let registry = registry(&redis);
    // A mark raised by a renewal is kept; the dead holder is still the holder.
    registry.renew(&dead, &lease, reserved).await.unwrap();
    let renewed_at = Instant::now();

    // The same instance, restarted (a new holder): sticky, but not past a live lease.
    let restarted = claim("dropped", "pod-0", 2);
    let other = registry.acquire(&restarted).await.unwrap();
    assert_ne!(other.worker, lease.worker);
    let successor = claim("dropped", "pod-9", 2);
    while renewed_at.elapsed() < TTL - Duration::from_millis(300) {
        let err = registry.acquire(&successor).await.unwrap_err();
        assert!(
            matches!(
                err,
                LeaseError::Exhausted {
                    datacenter: 1,
                    workers: 2,
                    ..
                }
            ),
            "{err:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let taken = eventually_async(TTL * 3, "a takeover", async || {
        match registry.acquire(&successor).await {
            Err(err @ LeaseError::Exhausted { .. }) => Err(err),
            Err(err) => panic!("no takeover: {err}"),
            Ok(taken) => Ok(taken),
        }
    })
    .await;
    let after = renewed_at.elapsed();
    assert!(
        after >= TTL - Duration::from_millis(300),
        "taken over after {after:?}"
    );
    eprintln!("taken over {after:?} after the last renewal (TTL {TTL:?})");
    assert_eq!(
        (taken.worker, taken.high_water_ms),
        (lease.worker, Some(reserved))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keeper_freezes_its_fence_while_redis_is_down_and_renews_once_it_is_back() {
    let mut redis = Redis::start();
    conformance::keeper_fence_freezes_while_the_registry_is_down(
        &mut redis,
        "redis registry is unavailable: ",
    )
    .await;
}

/// A mark in the registry is input too: one that is not a plain count of milliseconds is
/// refused, naming its key and what it holds, never read as zero or as no mark.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_mark_is_refused_naming_its_key_and_what_it_holds() {
    let redis = Redis::start();
    let client = redis::Client::open(redis.url()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let registry = registry(&redis);
    for (i, stored) in ["soon", "+1763780112345", ""].into_iter().enumerate() {
        let ns = format!("corrupt{i}");
        let key = format!("snowmint:{ns}:dc1:hwm");
        let () = redis::cmd("HSET")
            .arg(&key)
            .arg(0)
            .arg(stored)
            .query_async(&mut connection)
            .await
            .unwrap();
        let found = if stored.is_empty() {
            "nothing".to_string()
        } else {
            format!("{stored:?}")
        };
        let err = registry.acquire(&claim(&ns, "pod-0", 1)).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "redis registry is unavailable: redis://127.0.0.1:{}/0: field 0 of {key} is corrupt: found {found}, expected milliseconds since the Unix epoch",
                redis.port()
            )
        );
    }
}

/// Sends one command to `redis` on a connection of its own.
async fn command(redis: &Redis, args: &[&str]) -> redis::Value {
    let client = redis::Client::open(redis.url()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    cmd.query_async(&mut connection).await.unwrap()
}

/// Found by attacking the product: a running Redis that loses its keys (`FLUSHALL`, or an
/// eviction) keeps its run id, so the record of since when it vouches went with them; a
/// newcomer must still start after every id the forgotten holder may issue.
#[tokio::test(flavor = "multi_thread")]
async fn keys_lost_without_a_restart_floor_a_new_lease() {
    let redis = Redis::start();
    // Up for longer than the reach: a floor from its start would be behind.
    tokio::time::sleep(TTL + Duration::from_millis(1_500)).await;
    let registry = registry(&redis);
    let reach = TTL + Duration::from_millis(300);
    let claim = |identity: &str| {
        snowmint_lease::Claim::new("flushed", 1, 1, identity, TTL).with_reach(reach)
    };
    let holder = claim("holder");
    let lease = registry.acquire(&holder).await.unwrap();
    let confirmed = now_ms() + snowmint::whole_ms(TTL);
    registry.renew(&holder, &lease, confirmed).await.unwrap();

    command(&redis, &["FLUSHALL"]).await;
    let taken = registry.acquire(&claim("newcomer")).await.unwrap();
    assert_eq!(taken.worker, lease.worker, "the flush forgot the holder");
    assert!(
        taken.high_water_ms > Some(confirmed),
        "the newcomer starts at {:?}, not after the holder's confirmed mark {confirmed}",
        taken.high_water_ms
    );
}

/// A Redis that may evict keys to stay under `maxmemory` may evict a lease or a mark:
/// acquiring is refused, naming the setting, until it evicts nothing.
#[tokio::test(flavor = "multi_thread")]
async fn a_redis_that_may_evict_keys_is_refused() {
    let redis = Redis::start();
    command(&redis, &["CONFIG", "SET", "maxmemory", "100mb"]).await;
    command(
        &redis,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"],
    )
    .await;
    let registry = registry(&redis);
    let err = registry
        .acquire(&claim("evict", "pod", 4))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "redis registry is unavailable: redis://127.0.0.1:{}/0: maxmemory-policy allkeys-lru may evict the keys of leases and marks; set maxmemory-policy noeviction (or maxmemory 0)",
            redis.port()
        )
    );
    command(&redis, &["CONFIG", "SET", "maxmemory-policy", "noeviction"]).await;
    registry.acquire(&claim("evict", "pod", 4)).await.unwrap();
}

/// The conformance suite again, through three sentinels, with every acquisition and
/// renewal acknowledged by the primary's replica.
mod through_sentinels_waiting_for_a_replica {
    use super::*;

    conformance::suite!({
        let primary = Redis::start();
        let replica = Redis::start_replica(&primary);
        let sentinels = Sentinels::start(&primary);
        let url = format!("{}?wait=1", sentinels.url());
        // Dropped in this order: the sentinels first, so none fails over meanwhile.
        ((sentinels, replica, primary), url)
    });
}

/// `?wait=1`: an acquisition or a renewal counts only once the replica has it. With the
/// replica stopped both are unavailable, saying how many replicas acknowledged, and the
/// worker stays with the holder that took it; with the replica back both are confirmed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_wait_a_lease_counts_only_once_a_replica_has_it() {
    let primary = Redis::start();
    let mut replica = Redis::start_replica(&primary);
    let url = format!("{}?wait=1", primary.url());
    let registry = RedisRegistry::from_url(&url).unwrap();
    // A TTL that outlasts the replica's restart.
    let claim = |identity: &str| Claim::new("wait", 1, 4, identity, Duration::from_secs(10));
    let holder = claim("pod-0");
    let lease = registry.acquire(&holder).await.unwrap();
    assert_eq!(lease.worker, 0);
    let reserved = now_ms() + 1_000;
    registry.renew(&holder, &lease, reserved).await.unwrap();
    // Acknowledged means there: read from the replica at once.
    let on_replica = |key: String| {
        let client = redis::Client::open(replica.url()).unwrap();
        let mut connection = client.get_connection().unwrap();
        redis::cmd("GET")
            .arg(key)
            .query::<Option<String>>(&mut connection)
            .unwrap()
    };
    let held = tokio::task::block_in_place(|| on_replica("snowmint:wait:dc1:w0".into()));
    assert_eq!(held.as_deref(), Some(holder.holder.as_str()));

    tokio::task::block_in_place(|| replica.stop());
    let shown = format!("redis://127.0.0.1:{}/0", primary.port());
    let started = Instant::now();
    let err = registry.renew(&holder, &lease, now_ms()).await.unwrap_err();
    let took = started.elapsed();
    assert!(matches!(err, LeaseError::Unavailable { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "redis registry is unavailable: {shown}: 0 of 1 replicas acknowledged the renewal within 500 ms (wait=1)"
        )
    );
    assert!(took < conformance::PROMPT, "the renewal took {took:?}");
    let newcomer = claim("pod-1");
    let err = registry.acquire(&newcomer).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "redis registry is unavailable: {shown}: 0 of 1 replicas acknowledged the acquisition of worker 1 within 500 ms (wait=1)"
        )
    );
    eprintln!("a renewal with its replica stopped failed after {took:?}");
    // The primary itself took both: without waiting, the renewal counts.
    registry_at(primary.port())
        .renew(&holder, &lease, now_ms())
        .await
        .unwrap();

    tokio::task::block_in_place(|| replica.restart());
    registry.renew(&holder, &lease, now_ms()).await.unwrap();
    // The newcomer's next try gets the worker its unconfirmed one took.
    let taken = registry.acquire(&newcomer).await.unwrap();
    assert_eq!(taken.worker, 1);
}

/// A primary, its replica, and three sentinels watching them.
fn watched_primary() -> (Redis, Redis, Sentinels) {
    let primary = Redis::start();
    let replica = Redis::start_replica(&primary);
    let sentinels = Sentinels::start(&primary);
    (primary, replica, sentinels)
}

/// `redis+sentinel://`: the primary is killed and the sentinels promote its replica. A
/// holder's next renewal reaches the promoted replica, which kept its lease; a newcomer
/// there starts past everything a holder the replica may have missed could issue: the
/// promotion gave it a new replication id, and it vouches for its records only since.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_sentinels_a_holder_keeps_its_lease_across_a_failover_and_a_newcomer_waits() {
    let (mut primary, replica, sentinels) = watched_primary();
    let registry = snowmint_lease::registry_from_url(&sentinels.url()).unwrap();
    // A TTL that outlasts the failover; the reach a server counts: TTL and margin.
    let ttl = Duration::from_secs(10);
    let reach = ttl + Duration::from_secs(1);
    let claim = |identity: &str| Claim::new("failover", 1, 2, identity, ttl).with_reach(reach);
    let holder = claim("holder");
    let lease = registry.acquire(&holder).await.unwrap();
    registry
        .renew(&holder, &lease, now_ms() + 10_000)
        .await
        .unwrap();
    let replid = |redis: &Redis| {
        let info = redis.info("replication");
        let id = info.lines().find_map(|l| l.strip_prefix("master_replid:"));
        id.unwrap().trim().to_string()
    };
    let before = replid(&replica);
    tokio::task::block_in_place(|| primary.wait_for(&replica));

    let killed_ms = now_ms();
    let killed = Instant::now();
    let promoted = tokio::task::block_in_place(|| {
        primary.kill();
        sentinels.wait_for_failover(primary.port())
    });
    eprintln!(
        "the sentinels promoted the replica {:?} after the kill",
        killed.elapsed()
    );
    assert_eq!(promoted, replica.port());
    assert_ne!(replid(&replica), before, "a promotion starts a new history");

    let started = Instant::now();
    registry
        .renew(&holder, &lease, now_ms() + 10_000)
        .await
        .unwrap();
    eprintln!(
        "the holder's first renewal after the failover took {:?}",
        started.elapsed()
    );

    let newcomer = snowmint_lease::registry_from_url(&sentinels.url()).unwrap();
    let taken = newcomer.acquire(&claim("newcomer")).await.unwrap();
    assert_ne!(taken.worker, lease.worker, "the holder's lease survived");
    let floor = killed_ms + snowmint::whole_ms(reach);
    assert!(
        taken.high_water_ms >= Some(floor),
        "the newcomer starts at {:?}, before the promotion's floor {floor}",
        taken.high_water_ms
    );
}

/// A switchover (`SENTINEL FAILOVER`): the sentinels promote the replica at once, and
/// demote the old primary, which still takes writes, only seconds later. The registry's
/// next renewal must reach the new primary, not the old one, whose writes the demotion
/// throws away.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_sentinels_a_switchover_is_followed_at_once() {
    let (primary, replica, sentinels) = watched_primary();
    let registry = snowmint_lease::registry_from_url(&sentinels.url()).unwrap();
    // A TTL that outlasts the switchover.
    let holder =
        Claim::new("switchover", 1, 2, "pod-0", Duration::from_secs(10)).with_reach(Duration::ZERO);
    let lease = registry.acquire(&holder).await.unwrap();
    let ask = |port: u16, command: &redis::Cmd| -> redis::Value {
        let client = redis::Client::open(format!("redis://127.0.0.1:{port}")).unwrap();
        command
            .query(&mut client.get_connection().unwrap())
            .unwrap()
    };
    tokio::task::block_in_place(|| {
        primary.wait_for(&replica);
        let asked = ask(
            sentinels.ports()[0],
            redis::cmd("SENTINEL")
                .arg("FAILOVER")
                .arg(snowmint_testkit::PRIMARY_NAME),
        );
        assert_eq!(asked, redis::Value::Okay);
        assert_eq!(sentinels.wait_for_failover(primary.port()), replica.port());
    });
    let reserved = now_ms() + 1_000;
    registry.renew(&holder, &lease, reserved).await.unwrap();
    let mark = tokio::task::block_in_place(|| {
        ask(
            replica.port(),
            redis::cmd("HGET")
                .arg("snowmint:switchover:dc1:hwm")
                .arg(lease.worker),
        )
    });
    assert_eq!(
        mark,
        redis::Value::BulkString(reserved.to_string().into_bytes()),
        "the renewal did not reach the new primary"
    );
}

/// The primary is what a majority of the sentinels name: with one of three stopped the
/// registry goes on; with two stopped it is unavailable, naming how many answered, since
/// a sentinel left alone may name a primary the others have replaced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_sentinels_a_majority_must_name_the_primary() {
    let (_primary, _replica, mut sentinels) = watched_primary();
    let registry = snowmint_lease::registry_from_url(&sentinels.url()).unwrap();
    let holder = claim("majority", "pod-0", 2);
    let lease = registry.acquire(&holder).await.unwrap();
    tokio::task::block_in_place(|| sentinels.stop(0));
    registry.renew(&holder, &lease, now_ms()).await.unwrap();

    tokio::task::block_in_place(|| sentinels.stop(1));
    let err = registry.renew(&holder, &lease, now_ms()).await.unwrap_err();
    assert!(matches!(err, LeaseError::Unavailable { .. }), "{err:?}");
    let said = snowmint::error::Chain(&err).to_string();
    let prefix = format!(
        "redis registry is unavailable: {}/0: no primary \"snowmint\": 1 of 3 sentinels named a primary, fewer than a majority: ",
        sentinels.url()
    );
    assert!(said.starts_with(&prefix), "{said}");
}
