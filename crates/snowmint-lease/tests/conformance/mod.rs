//! What every expiring registry must do, written once and run against each real backend
//! (`tests/redis.rs`, `tests/etcd.rs`, `tests/postgres.rs`).

#![allow(dead_code)] // each backend's test file uses what it needs

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use snowmint_lease::{Claim, LeaseError, Registry};

/// A TTL short enough for tests to outwait.
pub const TTL: Duration = Duration::from_secs(2);

/// A claim in a namespace of its own, so tests sharing a registry never meet.
pub fn claim(namespace: &str, identity: &str, workers: u64) -> Claim {
    Claim::new(namespace, 1, workers, identity, TTL)
}

fn now_ms() -> u64 {
    snowmint::Clock::now_ms(&snowmint::WallClock)
}

/// 8 concurrent acquirers get 8 distinct workers of a 3-bit worker field; the 9th is told
/// they are exhausted, and how many there are.
pub async fn eight_distinct_then_exhausted(registry: Arc<dyn Registry>, ns: &str) {
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let registry = Arc::clone(&registry);
            let claim = claim(ns, &format!("host-{i}"), 8);
            tokio::spawn(async move { registry.acquire(&claim).await.map(|l| (claim, l)) })
        })
        .collect();
    let mut held = Vec::new();
    for task in tasks {
        held.push(task.await.unwrap().expect("acquire"));
    }
    let workers: HashSet<u64> = held.iter().map(|(_, l)| l.worker).collect();
    assert_eq!(workers.len(), 8, "distinct workers: {workers:?}");
    assert!(workers.iter().all(|w| *w < 8));
    assert!(held.iter().all(|(_, l)| l.datacenter == 1));
    let err = registry.acquire(&claim(ns, "host-9", 8)).await.unwrap_err();
    assert_eq!(
        err,
        LeaseError::Exhausted {
            datacenter: 1,
            workers: 8
        }
    );
    assert_eq!(
        err.to_string(),
        "all 8 worker ids of datacenter 1 are held; retrying"
    );
    for (claim, lease) in &held {
        registry.release(claim, lease, now_ms()).await.unwrap();
    }
}

/// A holder that stops renewing (killed) keeps its worker id until its TTL ends; then a
/// successor gets it, with a high-water mark at or past everything the holder reserved,
/// and the old holder's renewals are refused.
pub async fn dead_holder_is_taken_over_after_its_ttl(registry: Arc<dyn Registry>, ns: &str) {
    let dead = claim(ns, "dead", 1);
    let lease = registry.acquire(&dead).await.unwrap();
    let reserved = now_ms() + 1_500;
    let renewed_at = Instant::now();
    registry.renew(&dead, &lease, reserved).await.unwrap();
    let successor = claim(ns, "successor", 1);
    // Until the TTL has surely passed, the id is not handed out.
    while renewed_at.elapsed() < TTL - Duration::from_millis(300) {
        let err = registry.acquire(&successor).await.unwrap_err();
        assert!(matches!(err, LeaseError::Exhausted { .. }), "{err}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let deadline = Instant::now() + TTL * 3;
    let taken = loop {
        match registry.acquire(&successor).await {
            Ok(lease) => break lease,
            Err(LeaseError::Exhausted { .. }) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(err) => panic!("successor could not take over: {err}"),
        }
    };
    assert!(renewed_at.elapsed() >= TTL - Duration::from_millis(300));
    assert_eq!(taken.worker, lease.worker);
    assert!(
        taken.high_water_ms.unwrap_or(0) >= reserved,
        "{taken:?} < {reserved}"
    );
    let err = registry.renew(&dead, &lease, now_ms()).await.unwrap_err();
    assert!(matches!(err, LeaseError::Lost { .. }), "{err}");
    registry
        .release(&successor, &taken, now_ms())
        .await
        .unwrap();
}

/// Release frees the worker id at once, with the mark set to the last id issued.
pub async fn release_frees_at_once_and_keeps_the_mark(registry: Arc<dyn Registry>, ns: &str) {
    let first = claim(ns, "first", 1);
    let lease = registry.acquire(&first).await.unwrap();
    let issued = now_ms();
    registry
        .renew(&first, &lease, issued + 10_000)
        .await
        .unwrap();
    registry.release(&first, &lease, issued).await.unwrap();
    let second = claim(ns, "second", 1);
    let next = registry.acquire(&second).await.unwrap();
    assert_eq!(next.worker, lease.worker);
    assert_eq!(next.high_water_ms, Some(issued));
    // Releasing a lease that is gone is not an error, and changes nothing.
    registry.release(&first, &lease, 0).await.unwrap();
    registry.release(&second, &next, issued + 1).await.unwrap();
    let third = registry.acquire(&claim(ns, "third", 1)).await.unwrap();
    assert_eq!(third.high_water_ms, Some(issued + 1));
}

/// An instance gets its old worker id back when it is free (sticky by identity), and
/// renewals never lower the mark.
pub async fn same_identity_gets_its_worker_back(registry: Arc<dyn Registry>, ns: &str) {
    let mut held = Vec::new();
    for i in 0..3 {
        let c = claim(ns, &format!("pod-{i}"), 4);
        let l = registry.acquire(&c).await.unwrap();
        held.push((c, l));
    }
    let (c1, l1) = held.remove(1);
    registry.renew(&c1, &l1, 9_000).await.unwrap();
    registry.renew(&c1, &l1, 5_000).await.unwrap();
    registry.release(&c1, &l1, 9_000).await.unwrap();
    // A new process of the same instance (a new holder) asks again.
    let again = claim(ns, "pod-1", 4);
    let back = registry.acquire(&again).await.unwrap();
    assert_eq!(back.worker, l1.worker);
    assert_eq!(back.high_water_ms, Some(9_000));
    registry.release(&again, &back, 9_000).await.unwrap();
    for (c, l) in &held {
        registry.release(c, l, 0).await.unwrap();
    }
}

/// How soon a call to a registry that is gone or frozen must give up.
pub const PROMPT: Duration = Duration::from_secs(3);

/// Runs `call`, which must fail as `Unavailable` from `backend` within [`PROMPT`] with a
/// message that starts with `prefix`; returns how long it took.
pub async fn unavailable_promptly<T: std::fmt::Debug>(
    backend: &str,
    what: &str,
    prefix: &str,
    call: impl Future<Output = Result<T, LeaseError>>,
) -> Duration {
    let started = Instant::now();
    let err = tokio::time::timeout(PROMPT * 2, call)
        .await
        .unwrap_or_else(|_| panic!("{what} hung"))
        .expect_err(what);
    let took = started.elapsed();
    assert!(
        matches!(&err, LeaseError::Unavailable { backend: b, .. } if *b == backend),
        "{what}: {err}"
    );
    assert!(err.to_string().starts_with(prefix), "{what}: {err}");
    assert!(took < PROMPT, "{what} took {took:?}");
    eprintln!("{what}: unavailable after {took:?}");
    took
}

/// The four conformance tests for one backend. `$setup` makes a `(guard, registry)` pair:
/// the guard keeps its server running for the test.
macro_rules! suite {
    ($setup:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn conformance_eight_distinct_then_exhausted() {
            let (_server, registry) = $setup;
            conformance::eight_distinct_then_exhausted(registry, "eight").await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn conformance_dead_holder_is_taken_over_after_its_ttl() {
            let (_server, registry) = $setup;
            conformance::dead_holder_is_taken_over_after_its_ttl(registry, "dead").await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn conformance_release_frees_at_once_and_keeps_the_mark() {
            let (_server, registry) = $setup;
            conformance::release_frees_at_once_and_keeps_the_mark(registry, "release").await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn conformance_same_identity_gets_its_worker_back() {
            let (_server, registry) = $setup;
            conformance::same_identity_gets_its_worker_back(registry, "sticky").await;
        }
    };
}
pub(crate) use suite;
