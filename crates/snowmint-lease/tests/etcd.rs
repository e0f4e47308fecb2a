//! The etcd registry against a real etcd: the conformance suite, then what only a real
//! server can show: it going away and coming back, a holder dying, and the keeper's fence.

mod conformance;

use std::sync::Arc;
use std::time::{Duration, Instant};

use snowmint::error::Chain;
use snowmint::{Clock, SystemClock};
use snowmint_lease::{Claim, EtcdRegistry, Keeper, Lease, LeaseError, LeaseStatus, Registry};
use snowmint_testkit::Server;
use snowmint_testkit::{Etcd, Frozen, eventually_async};
use tokio::task::block_in_place;

use conformance::SETTINGS;

/// The longest any call may take against an etcd that is gone or frozen: the client's
/// 2 s request timeout, and some slack.
use conformance::PROMPT;

fn registry(etcd: &Etcd) -> Arc<dyn Registry> {
    Arc::new(EtcdRegistry::from_url(&etcd.url()).expect("the testkit's URL is valid"))
}

fn now_ms() -> u64 {
    snowmint::WallClock.now_ms()
}

conformance::suite!({
    let etcd = Etcd::start();
    let url = etcd.url();
    (etcd, url)
});

/// Every call fails fast with `Unavailable`, whether etcd is gone or frozen, and works
/// again once it is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_etcd_is_unavailable_promptly_then_renewals_resume() {
    let mut etcd = Etcd::start();
    let registry = registry(&etcd);
    let claim = conformance::claim("down", "pod", 8);
    let lease = registry.acquire(&claim).await.unwrap();
    registry
        .renew(&claim, &lease, now_ms() + 2_000)
        .await
        .unwrap();

    block_in_place(|| etcd.stop());
    assert_all_unavailable(&*registry, &claim, &lease, "stopped").await;
    block_in_place(|| etcd.restart());
    // etcd gives every lease a full TTL again when it restarts: this one is still held.
    registry
        .renew(&claim, &lease, now_ms() + 2_000)
        .await
        .unwrap();

    // Frozen: connections are accepted but never answered; the request timeout ends them.
    let frozen = Frozen::stop(etcd.pid().expect("etcd runs")).unwrap();
    assert_all_unavailable(&*registry, &claim, &lease, "frozen").await;
    frozen.thaw();
    match registry.renew(&claim, &lease, now_ms() + 2_000).await {
        Ok(()) | Err(LeaseError::Lost { .. }) => {}
        Err(err) => panic!("renewal after etcd thawed: {err}"),
    }
}

/// Acquire, renew and release each fail with `Unavailable` within [`PROMPT`].
async fn assert_all_unavailable(registry: &dyn Registry, claim: &Claim, lease: &Lease, etcd: &str) {
    for call in ["acquire", "renew", "release"] {
        let start = Instant::now();
        let result = match call {
            "acquire" => registry.acquire(claim).await.map(drop),
            "renew" => registry.renew(claim, lease, now_ms()).await,
            _ => registry.release(claim, lease, now_ms()).await,
        };
        let took = start.elapsed();
        let err = result.expect_err(call);
        eprintln!("{call} with etcd {etcd}: {took:?}: {err}");
        let unavailable = matches!(
            err,
            LeaseError::Unavailable {
                backend: "etcd",
                ..
            }
        );
        assert!(unavailable, "{call} with etcd {etcd}: {err:?}");
        assert!(
            Chain(&err)
                .to_string()
                .starts_with("etcd registry is unavailable: ")
        );
        assert!(took < PROMPT, "{call} with etcd {etcd} took {took:?}");
    }
}

/// A holder that dies (its keeper dropped: no release, no more renewals) keeps its worker
/// until a TTL after its last keep-alive; its successor starts past its mark.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_holder_is_not_taken_over_before_its_ttl() {
    let etcd = Etcd::start();
    let registry = registry(&etcd);
    let ttl = SETTINGS.ttl.as_millis() as u64;
    let margin = SETTINGS.safety_margin.as_millis() as u64;
    let clock = Arc::new(SystemClock::new());
    let keeper = Keeper::start(
        Arc::clone(&registry),
        conformance::claim("killed", "doomed", 1),
        SETTINGS,
        clock.clone(),
    );
    let mut status = keeper.status();
    let first = conformance::held_when(&mut status, "a first renewal", |_| true).await;
    conformance::held_when(&mut status, "a second renewal", |h| {
        h.valid_until_ms > first.valid_until_ms
    })
    .await;
    drop(keeper);
    let LeaseStatus::Held(last) = status.borrow().clone() else {
        panic!("the keeper held its lease when it died");
    };
    // The last keep-alive we know of was sent then; one in flight would only move it later.
    let last_sent = last.valid_until_ms + margin - ttl;

    let successor = conformance::claim("killed", "successor", 1);
    let taken = eventually_async(
        Duration::from_secs(10),
        "the successor taking over",
        async || match registry.acquire(&successor).await {
            Err(err @ LeaseError::Exhausted { .. }) => Err(err),
            Err(err) => panic!("the successor could not take over: {err}"),
            Ok(lease) => Ok(lease),
        },
    )
    .await;
    let taken_by = clock.now_ms();
    assert_eq!(taken.worker, last.lease.worker);
    assert!(
        taken_by >= last_sent + ttl,
        "taken over {} ms after the last keep-alive, before the {ttl} ms TTL",
        taken_by - last_sent
    );
    assert!(
        taken.high_water_ms >= Some(last.confirmed_high_water_ms),
        "{taken:?} starts before the dead holder's mark {}",
        last.confirmed_high_water_ms
    );
    assert_ne!(taken.token, last.lease.token);
}

/// etcd gives every lease a full TTL again when it restarts, so the same lease goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keeper_fence_freezes_while_etcd_is_down_and_moves_once_it_is_back() {
    let mut etcd = Etcd::start();
    conformance::keeper_fence_freezes_while_the_registry_is_down(
        &mut etcd,
        "etcd registry is unavailable: ",
    )
    .await;
}

/// The conformance suite's many workers, more worker keys than one listing page holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_workers_are_found_across_listing_pages() {
    let etcd = Etcd::start();
    conformance::many_workers_then_a_huge_field(registry(&etcd), 300).await;
}

/// A mark in the registry is input too: one that is not a plain count of milliseconds is
/// refused, naming its key and what it holds, never read as zero or as no mark.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_mark_is_refused_naming_its_key_and_what_it_holds() {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD as BASE64;

    let etcd = Etcd::start();
    let registry = registry(&etcd);
    let http = reqwest::Client::new();
    for (i, stored) in ["soon", "+1763780112345", ""].into_iter().enumerate() {
        let ns = format!("corrupt{i}");
        let key = format!("/snowmint/{ns}/dc1/w0/hwm");
        let put = serde_json::json!({ "key": BASE64.encode(&key), "value": BASE64.encode(stored) });
        let answer = http
            .post(format!("{}/v3/kv/put", etcd.endpoint()))
            .json(&put)
            .send()
            .await
            .unwrap();
        assert!(answer.status().is_success(), "{answer:?}");
        let found = if stored.is_empty() {
            "nothing".to_string()
        } else {
            format!("{stored:?}")
        };
        let claim = Claim::new(&ns, 1, 1, "pod-0", conformance::TTL);
        let err = registry.acquire(&claim).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "etcd registry is unavailable: {key} is corrupt: found {found}, expected milliseconds since the Unix epoch"
            )
        );
    }
}

/// Found by attacking the product: an etcd restored from an old copy of its data forgot a
/// live holder, and a newcomer issued its ids again.
#[tokio::test(flavor = "multi_thread")]
async fn a_restore_floors_a_new_lease() {
    let mut etcd = snowmint_testkit::Etcd::start();
    conformance::a_restore_floors_a_new_lease(&mut etcd, "restore").await;
}
