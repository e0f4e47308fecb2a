//! What every registry must do, written once and run against each real backend
//! (`tests/redis.rs`, `tests/etcd.rs`, `tests/postgres.rs`, `tests/zookeeper.rs`; the
//! take-over test also in `tests/file.rs`).

#![allow(dead_code)] // each backend's test file uses what it needs

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use snowmint::error::Chain;
use snowmint::{Clock, Generator, Layout, SystemClock};
use snowmint_lease::{
    Claim, FileStore, Held, Keeper, LeaseError, LeaseSettings, LeaseStatus, LeasedStore, Registry,
    registry_from_url,
};
use snowmint_testkit::eventually_async;

/// A TTL short enough for tests to outwait.
pub const TTL: Duration = Duration::from_secs(2);

/// A claim in a namespace of its own, so tests sharing a registry never meet. Its reach
/// is nothing: the registries here start with the test, so a lease would otherwise start
/// after the floor of a registry that cannot vouch for what came before it, which these
/// tests do not look at (see `a_restart_floors_a_lease`).
pub fn claim(namespace: &str, identity: &str, workers: u64) -> Claim {
    Claim::new(namespace, 1, workers, identity, TTL).with_reach(Duration::ZERO)
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
    assert!(
        matches!(
            err,
            LeaseError::Exhausted {
                datacenter: 1,
                workers: 8,
                ..
            }
        ),
        "{err:?}"
    );
    let fleet = ns.strip_prefix("fleet.").unwrap_or(ns);
    assert_eq!(
        err.to_string(),
        format!(
            "all 8 worker ids of datacenter 1 of fleet {fleet:?} are held; retrying (see who holds them: snowmint fleet --lease URL --fleet {fleet} --datacenter 1)"
        )
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
    let taken = eventually_async(
        TTL * 3,
        "the successor taking over",
        async || match registry.acquire(&successor).await {
            Err(err @ LeaseError::Exhausted { .. }) => Err(err),
            Err(err) => panic!("successor could not take over: {err}"),
            Ok(lease) => Ok(lease),
        },
    )
    .await;
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
    // An hour ahead: past the floor of a registry that started with the test.
    let issued = now_ms() + 3_600_000;
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

/// The release rule ([`snowmint_lease::Lease::release_mark`]), asked of the backend
/// directly: a holder that releases with a mark below the one it acquired with (it issued
/// nothing, its clock behind the mark) leaves the acquired mark in place, and a renewal
/// never lowers a mark. A successor of a successor that was stopped while it waited still
/// starts after every id of the first holder.
pub async fn release_never_lowers_the_acquired_mark(registry: Arc<dyn Registry>, ns: &str) {
    let first = claim(ns, "first", 1);
    let lease = registry.acquire(&first).await.unwrap();
    let issued = now_ms() + 5_000; // as if its clock ran ahead, or it reserved far
    registry.renew(&first, &lease, issued).await.unwrap();
    registry.release(&first, &lease, issued).await.unwrap();

    let waiting = claim(ns, "waiting", 1);
    let behind = registry.acquire(&waiting).await.unwrap();
    assert_eq!(
        (behind.worker, behind.high_water_ms),
        (lease.worker, Some(issued))
    );
    // Its clock is behind the mark: it renews with what it reads, then is stopped.
    registry
        .renew(&waiting, &behind, issued - 11_000)
        .await
        .unwrap();
    registry
        .release(&waiting, &behind, issued - 11_000)
        .await
        .unwrap();
    let next = claim(ns, "next", 1);
    let after = registry.acquire(&next).await.unwrap();
    assert_eq!(
        after.high_water_ms,
        Some(issued),
        "a release below the acquired mark lowered it"
    );
    // Nothing issued at all (a mark of 0) changes nothing either.
    registry.release(&next, &after, 0).await.unwrap();
    let last_claim = claim(ns, "last", 1);
    let last = registry.acquire(&last_claim).await.unwrap();
    assert_eq!(last.high_water_ms, Some(issued));
    registry.release(&last_claim, &last, 0).await.unwrap();
}

/// A fleet has one layout: the first claim records it, a claim of the same layout spelled
/// another way shares the pool, and a claim of any other layout is refused, naming both,
/// until it names a fleet of its own.
pub async fn a_fleet_refuses_another_layout(registry: Arc<dyn Registry>, ns: &str) {
    use snowmint::Bits;
    let custom = |worker: u8, sequence: u8| {
        let bits = Bits {
            timestamp: 41,
            datacenter: 5,
            worker,
            sequence,
        };
        Layout::new(bits, 1, Layout::TWITTER.epoch_ms()).unwrap()
    };
    let first = claim(ns, "twitter", 4).with_layout(&Layout::TWITTER);
    let lease = registry.acquire(&first).await.unwrap();
    let spelled = claim(ns, "spelled", 4).with_layout(&custom(5, 12));
    let same = registry.acquire(&spelled).await.unwrap();
    assert_ne!(same.worker, lease.worker, "one pool for one layout");
    for (i, other) in [
        custom(4, 13),
        Layout::TWITTER.with_epoch_ms(1_288_834_974_658).unwrap(),
    ]
    .into_iter()
    .enumerate()
    {
        let refused = claim(ns, "other", 4).with_layout(&other);
        let err = registry.acquire(&refused).await.unwrap_err();
        assert!(matches!(err, LeaseError::OtherLayout { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            format!(
                "fleet {ns:?} issues ids of layout {}, and this generator's layout is {}: a generator of another layout needs a fleet of its own (--fleet NAME)",
                Layout::TWITTER.canonical(),
                other.canonical()
            )
        );
        let own = claim(&format!("{ns}-other{i}"), "other", 4).with_layout(&other);
        let taken = registry.acquire(&own).await.unwrap();
        registry.release(&own, &taken, now_ms()).await.unwrap();
    }
    registry.release(&first, &lease, now_ms()).await.unwrap();
    registry.release(&spelled, &same, now_ms()).await.unwrap();
}

/// An upgrade from a release that kept one pool per spelling of a layout (`twitter-E`,
/// `custom-E`), with the keys that release wrote (the same per-namespace keys, written here
/// through claims in those namespaces): a claim of the fleet passes over a worker still held
/// under an old namespace, starts after the largest mark of every old namespace, and takes
/// the held worker once its old holder is gone. Each release runs in a process of its own,
/// with a registry client of its own.
pub async fn an_upgrade_inherits_old_marks_and_respects_old_holders(url: &str, ns: &str) {
    let registry = registry_from_url(url).unwrap();
    // Marks an hour ahead, past the floor of a registry that started with the test.
    let base = now_ms() + 3_600_000;
    let (old_twitter, old_custom) = (format!("{ns}_twitter-1"), format!("{ns}_custom-1"));
    let (twitter_process, custom_process) = (
        registry_from_url(url).unwrap(),
        registry_from_url(url).unwrap(),
    );
    let old = |namespace: &str, identity: &str| claim(namespace, identity, 2);
    // One worker is held under the Twitter spelling, by a server of the old release. It
    // is not renewed: its TTL outlasts the test however loaded the machine (a ZooKeeper
    // session whose client misses its pings for the 2 s of the others would end).
    let live =
        Claim::new(&old_twitter, 1, 2, "live", Duration::from_secs(60)).with_reach(Duration::ZERO);
    let held = twitter_process.acquire(&live).await.unwrap();
    let free = 1 - held.worker;
    // The other was used by both spellings, each with a mark of its own; the held one by
    // the custom spelling too.
    let b = old(&old_twitter, "b");
    let lease_b = twitter_process.acquire(&b).await.unwrap();
    assert_eq!(lease_b.worker, free);
    twitter_process
        .release(&b, &lease_b, base + 5_000)
        .await
        .unwrap();
    let (c, d) = (old(&old_custom, "c"), old(&old_custom, "d"));
    for (claim, lease) in [
        (&c, custom_process.acquire(&c).await.unwrap()),
        (&d, custom_process.acquire(&d).await.unwrap()),
    ] {
        let mark = base + if lease.worker == free { 9_000 } else { 7_000 };
        custom_process.release(claim, &lease, mark).await.unwrap();
    }

    let upgraded = |identity: &str| {
        let mut claim = claim(ns, identity, 2);
        claim.legacy = vec![old_twitter.clone(), old_custom.clone()];
        claim
    };
    let new = upgraded("new");
    let lease = registry.acquire(&new).await.unwrap();
    assert_eq!(
        (lease.worker, lease.high_water_ms),
        (free, Some(base + 9_000)),
        "the other worker is held under an old namespace; this one's largest old mark is 9000"
    );
    let next = upgraded("next");
    let err = registry.acquire(&next).await.unwrap_err();
    assert!(matches!(err, LeaseError::Exhausted { .. }), "{err:?}");
    twitter_process
        .release(&live, &held, base + 3_000)
        .await
        .unwrap();
    let taken = registry.acquire(&next).await.unwrap();
    assert_eq!(
        (taken.worker, taken.high_water_ms),
        (held.worker, Some(base + 7_000))
    );
    registry.release(&new, &lease, now_ms()).await.unwrap();
    registry.release(&next, &taken, now_ms()).await.unwrap();
}

/// An upgrade from a release that issued under a layout differing slightly from the new
/// server's: Twitter's bits with an epoch 1 ms later (`twitter-1288834974658`, its ids
/// behind the new layout's) and with one 7 ms earlier (`custom-1288834974650`, its ids
/// 7 ms ahead). An earlier release kept each under a namespace of its own, which the new
/// layout's name does not give. Their last servers reserved ahead of the clock and left a
/// worker id held; a server of the new release, its clock 3 s behind, passes over the held
/// worker id, takes the other, and its first id is above every id either could have
/// issued, in both layouts.
pub async fn an_upgrade_starts_after_ids_of_a_layout_at_another_epoch(url: &str, ns: &str) {
    const LATER: u64 = 1_288_834_974_658;
    const EARLIER: u64 = 1_288_834_974_650;
    let (later, earlier) = (format!("twitter-{LATER}"), format!("custom-{EARLIER}"));
    let (later_layout, earlier_layout) = (
        Layout::TWITTER.with_epoch_ms(LATER).unwrap(),
        Layout::TWITTER.with_epoch_ms(EARLIER).unwrap(),
    );
    // The earlier release, in processes of its own: one server still holds a worker id; the
    // other worker id was released by servers of both layouts, whose clocks were ahead.
    let (live_process, old) = (
        registry_from_url(url).unwrap(),
        registry_from_url(url).unwrap(),
    );
    let live = claim(&later, "live", 2);
    let held_old = live_process.acquire(&live).await.unwrap();
    let free = 1 - held_old.worker;
    let mark = now_ms() + 1_500;
    let marks = [(&later, mark), (&earlier, mark - 3)];
    for (namespace, left) in marks {
        // Under the custom layout, the worker id held under the other namespace was free.
        let servers = if *namespace == later { 1 } else { 2 };
        let mut taken = Vec::new();
        for i in 0..servers {
            let server = claim(namespace, &format!("old-{i}"), 2);
            let lease = old.acquire(&server).await.unwrap();
            taken.push((server, lease));
        }
        assert!(taken.iter().any(|(_, lease)| lease.worker == free));
        for (server, lease) in &taken {
            old.release(server, lease, left).await.unwrap();
        }
    }
    // The largest id either layout issued up to its mark.
    let issued = [(&later_layout, mark), (&earlier_layout, mark - 3)]
        .map(|(layout, mark)| layout.ids_at(mark).unwrap().1.as_u64());
    let issued = issued[0].max(issued[1]);

    // The new release's server, with a registry client of its own.
    let registry = registry_from_url(url).unwrap();
    let settings = LeaseSettings {
        ttl: TTL,
        renew_every: Duration::from_millis(500),
        safety_margin: Duration::from_millis(300),
    };
    let new = claim(&format!("fleet.{ns}"), "new", 2).with_layout(&Layout::TWITTER);
    let behind = SystemClock::new().with_offset_ms(-3_000);
    let keeper = Keeper::start(Arc::clone(&registry), new, settings, Arc::new(behind));
    let held = held(&keeper).await;
    assert_eq!(
        held.lease.worker, free,
        "worker {} is held under {later}",
        held_old.worker
    );
    let state = tempfile::tempdir().unwrap();
    let leased = leased_generator(registry, &held, state.path(), behind);
    let first = leased
        .first_id(&mut keeper.status(), "the new server")
        .await;
    assert!(
        first > issued,
        "the new server issued {first}, at or below {issued} issued by the earlier release (lease {:?})",
        held.lease
    );
    keeper.release(behind.now_ms()).await.unwrap();
    live_process
        .release(&live, &held_old, now_ms())
        .await
        .unwrap();
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
    // Marks an hour ahead, past the floor of a registry that started with the test.
    let base = now_ms() + 3_600_000;
    registry.renew(&c1, &l1, base + 9_000).await.unwrap();
    registry.renew(&c1, &l1, base + 5_000).await.unwrap();
    registry.release(&c1, &l1, base + 9_000).await.unwrap();
    // A new process of the same instance (a new holder) asks again.
    let again = claim(ns, "pod-1", 4);
    let back = registry.acquire(&again).await.unwrap();
    assert_eq!(back.worker, l1.worker);
    assert_eq!(back.high_water_ms, Some(base + 9_000));
    registry.release(&again, &back, base + 9_000).await.unwrap();
    for (c, l) in &held {
        registry.release(c, l, 0).await.unwrap();
    }
}

/// A holder issues ids under a lease and dies between two renewals without a word; a
/// successor on a new machine (an empty state directory, its clock 3 s behind) takes the
/// same worker id and issues only ids greater than every id the dead holder issued. All it
/// has to go on is the mark in the registry, so that mark must be ahead of every id issued.
///
/// Each side has registry clients of its own, made from `url`, as separate processes would.
pub async fn successor_on_a_new_machine_starts_after_the_dead(url: &str, ns: &str) {
    // One renewal while the holder issues: the ids it issues after it run past the
    // renewal's instant, which is what a registry that records only renewals would keep.
    let settings = LeaseSettings {
        ttl: TTL,
        renew_every: Duration::from_millis(1_500),
        safety_margin: Duration::from_millis(300),
    };
    // One worker id, so the successor can only take the dead holder's.
    let claim = |identity: &str| Claim::new(ns, 1, 1, identity, TTL).with_reach(Duration::ZERO);
    let dead_dir = tempfile::tempdir().unwrap();
    let (dead_worker, dead_max) = {
        let registry = registry_from_url(url).unwrap();
        let clock = SystemClock::new();
        let keeper = Keeper::start(
            Arc::clone(&registry),
            claim("dead"),
            settings,
            Arc::new(clock),
        );
        let held = held(&keeper).await;
        let leased = leased_generator(registry, &held, dead_dir.path(), clock);
        let started = Instant::now();
        let mut max = 0;
        let mut status = keeper.status();
        while started.elapsed() < Duration::from_millis(1_000) {
            leased.follow(&mut status);
            let batch = tokio::task::block_in_place(|| leased.generator.next_batch(4_096))
                .expect("the holder issues");
            max = max.max(batch.last().as_u64());
        }
        // Dies: no release; its registry clients go with it.
        drop(leased);
        drop(keeper);
        (held.lease.worker, max)
    };

    let registry = registry_from_url(url).unwrap();
    let behind = SystemClock::new().with_offset_ms(-3_000);
    let keeper = Keeper::start(
        Arc::clone(&registry),
        claim("successor"),
        settings,
        Arc::new(behind),
    );
    let held = held(&keeper).await;
    assert_eq!(held.lease.worker, dead_worker);
    let fresh = tempfile::tempdir().unwrap();
    let leased = leased_generator(registry, &held, fresh.path(), behind);
    // Its clock is behind the mark it took over: no id until it has passed.
    let first = leased.first_id(&mut keeper.status(), "the successor").await;
    assert!(
        first > dead_max,
        "the successor issued {first}, at or below {dead_max} issued by the dead holder"
    );
    keeper.release(behind.now_ms()).await.unwrap();
}

async fn held(keeper: &Keeper) -> Held {
    held_when(&mut keeper.status(), "a lease", |_| true).await
}

/// A generator issuing under a lease, and its store.
struct Leased {
    generator: Generator<SystemClock>,
    store: Arc<LeasedStore>,
}

impl Leased {
    /// The first id issued once the clock has passed the mark the lease came with,
    /// following the keeper's `status` meanwhile, within 15 s; `who` names the issuer in a
    /// failure.
    async fn first_id(
        &self,
        status: &mut tokio::sync::watch::Receiver<LeaseStatus>,
        who: &str,
    ) -> u64 {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            self.follow(status);
            if self.generator.clock_lag_ms() == 0 {
                match tokio::task::block_in_place(|| self.generator.next_id()) {
                    Ok(id) => return id.as_u64(),
                    Err(err) => assert!(Instant::now() < deadline, "no id from {who}: {err}"),
                }
            }
            assert!(
                Instant::now() < deadline,
                "{who}'s clock never passed the mark"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Moves the fence and the confirmed mark to the latest renewal, as the server does.
    fn follow(&self, status: &mut tokio::sync::watch::Receiver<LeaseStatus>) {
        if let LeaseStatus::Held(held) = &*status.borrow_and_update() {
            self.store.confirm(held.confirmed_high_water_ms);
            self.generator.set_valid_until_ms(held.valid_until_ms);
        }
    }
}

/// A generator issuing under `held`, built as the server builds one.
fn leased_generator(
    registry: Arc<dyn Registry>,
    held: &Held,
    state: &std::path::Path,
    clock: SystemClock,
) -> Leased {
    let (datacenter, worker) = (held.lease.datacenter, held.lease.worker);
    let local = FileStore::for_generator(
        state,
        &snowmint_lease::Fleet::default(),
        &Layout::TWITTER,
        datacenter,
        worker,
    )
    .unwrap();
    let store = Arc::new(LeasedStore::new(
        registry,
        held.lease.clone(),
        held.confirmed_high_water_ms,
        local,
    ));
    let mut builder = Generator::builder(Layout::TWITTER)
        .datacenter(datacenter)
        .worker(worker)
        .clock(clock)
        .store(Arc::clone(&store) as Arc<dyn snowmint::Store>);
    if let Some(mark) = held.lease.high_water_ms {
        builder = builder.after_ms(mark);
    }
    let generator = builder.build().unwrap();
    generator.set_valid_until_ms(held.valid_until_ms);
    Leased { generator, store }
}

/// The keeper's settings in the keeper tests: the suite's TTL, renewed four times a TTL.
pub const SETTINGS: LeaseSettings = LeaseSettings {
    ttl: TTL,
    renew_every: Duration::from_millis(500),
    safety_margin: Duration::from_millis(200),
};

/// A keeper over a real registry: renewals move the fence; with the registry stopped the
/// fence stays where the last renewal put it, the status says why (saying `prefix`, at
/// its start or after the registry's own words), and the clock passes it; with the registry back renewals resume, and a
/// release frees the worker id at once.
pub async fn keeper_fence_freezes_while_the_registry_is_down(
    server: &mut dyn snowmint_testkit::Server,
    prefix: &str,
) {
    let registry = registry_from_url(&server.url()).unwrap();
    let clock = Arc::new(SystemClock::new());
    let keeper = Keeper::start(
        Arc::clone(&registry),
        claim("fence", "pod", 1),
        SETTINGS,
        clock.clone(),
    );
    let mut status = keeper.status();
    let first = held_when(&mut status, "a first renewal", |_| true).await;
    let renewed = held_when(&mut status, "a second renewal", |h| {
        h.valid_until_ms > first.valid_until_ms
    })
    .await;

    let stopped_at = clock.now_ms();
    tokio::task::block_in_place(|| server.stop());
    // The fence freezes at the first failure, whatever it says: while the registry goes
    // away, a restart in between refuses connections. A keeper told that its lease is
    // gone (a session the registry's client gave up on, on a loaded machine) looks for
    // another at once instead, which stops issuing as well.
    let failed = failure(&mut status).await;
    let mut said = says(&failed, prefix);
    let fence = if let LeaseStatus::Held(frozen) = failed {
        assert!(frozen.valid_until_ms >= renewed.valid_until_ms);
        let limit = SETTINGS.ttl - SETTINGS.safety_margin;
        assert!(
            frozen.valid_until_ms <= stopped_at + limit.as_millis() as u64,
            "the fence is from a renewal before the stop"
        );
        // Retries keep failing, and the fence stays put until the clock has passed it: a
        // generator fenced by it has stopped issuing.
        fence_stays_until_passed(&mut status, &clock, &frozen, true, |now| {
            said |= says(now, prefix);
        })
        .await;
        let failures = keeper
            .counters()
            .renew_failures
            .load(std::sync::atomic::Ordering::Relaxed);
        assert!(failures >= 2, "{failures} failed renewals");
        frozen.valid_until_ms
    } else {
        renewed.valid_until_ms
    };
    // The failure the test is about, in the status, held or looking for a lease again: on
    // a loaded machine a registry that restarts (with an expired certificate, say) may
    // answer only after the lease ended.
    if !said {
        let wait = async {
            while !says(&status.borrow_and_update(), prefix) {
                status.changed().await.expect("the keeper runs");
            }
        };
        if tokio::time::timeout(Duration::from_secs(20), wait)
            .await
            .is_err()
        {
            panic!(
                "no failure saying {prefix:?} within 20 s: {:?}",
                *status.borrow()
            );
        }
    }

    // Back (perhaps after the lease ended, and then the keeper acquires anew): it renews.
    tokio::task::block_in_place(|| server.restart());
    let back = held_when(&mut status, "a renewal after the restart", |h| {
        h.last_error.is_none() && h.valid_until_ms > fence
    })
    .await;
    if back.acquisition == first.acquisition {
        assert_eq!(back.lease, first.lease);
    }
    let issued = clock.now_ms();
    keeper.release(issued).await.unwrap();
    let next = registry.acquire(&claim("fence", "next", 1)).await.unwrap();
    assert_eq!(next.worker, back.lease.worker, "released at once");
    assert!(next.high_water_ms >= Some(issued));
}

/// A keeper over a secured registry whose certificate expires while it holds a lease:
/// `expire` gives the server an expired certificate and restarts it, which drops every
/// connection, so the next renewal meets it at the handshake. Renewals then fail with a
/// message that ends with `check` (which registry, where, which check), the fence stays
/// where the last renewal put it until the clock passes it, as for a registry that is
/// down; with a valid certificate again (`mend`) renewals resume.
pub async fn keeper_fence_freezes_while_the_certificate_has_expired<S>(
    server: &mut S,
    expire: impl FnOnce(&mut S),
    mend: impl FnOnce(&mut S),
    check: &str,
) where
    S: snowmint_testkit::Server,
{
    let registry = registry_from_url(&server.url()).unwrap();
    let clock = Arc::new(SystemClock::new());
    let keeper = Keeper::start(
        Arc::clone(&registry),
        claim("expiry", "pod", 1),
        SETTINGS,
        clock.clone(),
    );
    let mut status = keeper.status();
    let first = held_when(&mut status, "a first renewal", |_| true).await;
    let renewed = held_when(&mut status, "a second renewal", |h| {
        h.valid_until_ms > first.valid_until_ms
    })
    .await;

    let expired_at = clock.now_ms();
    tokio::task::block_in_place(|| expire(server));
    let frozen = held_when(&mut status, "a refused renewal", |h| {
        h.last_error
            .as_ref()
            .is_some_and(|e| Chain(e).to_string().ends_with(check))
    })
    .await;
    let error = Chain(frozen.last_error.as_ref().unwrap()).to_string();
    assert!(!error.contains('\n'), "one line: {error}");
    assert!(frozen.valid_until_ms >= renewed.valid_until_ms);
    let limit = SETTINGS.ttl - SETTINGS.safety_margin;
    assert!(
        frozen.valid_until_ms <= expired_at + limit.as_millis() as u64,
        "the fence is from a renewal before the expiry"
    );
    fence_stays_until_passed(&mut status, &clock, &frozen, false, |now| {
        if let LeaseStatus::Held(held) = now {
            let error = Chain(held.last_error.as_ref().expect("still failing")).to_string();
            assert!(error.ends_with(check), "{error}");
        }
    })
    .await;

    tokio::task::block_in_place(|| mend(server));
    held_when(&mut status, "a renewal with a valid certificate", |h| {
        h.last_error.is_none() && h.valid_until_ms > frozen.valid_until_ms
    })
    .await;
    keeper.release(clock.now_ms()).await.unwrap();
}

/// While renewals keep failing, the fence stays where `frozen` put it until `clock` has
/// passed it, so a generator fenced by it has stopped issuing: each status until then is
/// held at that fence, with an error, and is shown to `each`. A keeper that looks for a
/// lease again (the registry's client gave its session up) ends the wait when
/// `may_acquire`, and fails the test when not.
async fn fence_stays_until_passed(
    status: &mut tokio::sync::watch::Receiver<LeaseStatus>,
    clock: &SystemClock,
    frozen: &Held,
    may_acquire: bool,
    mut each: impl FnMut(&LeaseStatus),
) {
    while clock.now_ms() <= frozen.valid_until_ms {
        status.changed().await.expect("the keeper runs");
        let now = status.borrow_and_update().clone();
        each(&now);
        match now {
            LeaseStatus::Held(held) => {
                assert_eq!(
                    (held.valid_until_ms, held.acquisition),
                    (frozen.valid_until_ms, frozen.acquisition)
                );
                assert!(held.last_error.is_some(), "held without an error");
            }
            LeaseStatus::Acquiring { .. } if may_acquire => break,
            other => panic!("{other:?} while renewals fail"),
        }
    }
}

/// The first status after a renewal failed: held with its error, or acquiring again.
async fn failure(status: &mut tokio::sync::watch::Receiver<LeaseStatus>) -> LeaseStatus {
    let wait = async {
        loop {
            let now = status.borrow_and_update().clone();
            match &now {
                LeaseStatus::Held(held) if held.last_error.is_none() => {}
                _ => return now,
            }
            status.changed().await.expect("the keeper runs");
        }
    };
    match tokio::time::timeout(Duration::from_secs(10), wait).await {
        Ok(failed) => failed,
        Err(_) => panic!("no failing renewal within 10 s: {:?}", *status.borrow()),
    }
}

/// Whether `status` names a last error that says `prefix`, held or acquiring.
fn says(status: &LeaseStatus, prefix: &str) -> bool {
    let last_error = match status {
        LeaseStatus::Held(held) => held.last_error.as_ref(),
        LeaseStatus::Acquiring { last_error, .. } => last_error.as_ref(),
        LeaseStatus::Released => None,
    };
    last_error.is_some_and(|err| Chain(err).to_string().contains(prefix))
}

/// The next `Held` status that `wanted` accepts (the current one included), within 10 s.
pub async fn held_when(
    status: &mut tokio::sync::watch::Receiver<LeaseStatus>,
    what: &str,
    wanted: impl Fn(&Held) -> bool,
) -> Held {
    let wait = async {
        loop {
            if let LeaseStatus::Held(held) = status.borrow_and_update().clone()
                && wanted(&held)
            {
                return held;
            }
            status.changed().await.expect("the keeper runs");
        }
    };
    match tokio::time::timeout(Duration::from_secs(10), wait).await {
        Ok(held) => held,
        Err(_) => panic!("no {what} within 10 s: {:?}", *status.borrow()),
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
    let said = Chain(&err).to_string();
    assert!(said.starts_with(prefix), "{what}: {said}");
    assert!(took < PROMPT, "{what} took {took:?}");
    eprintln!("{what}: unavailable after {took:?}");
    took
}

/// The conformance tests for one expiring backend, in a module `conformance_tests`.
/// `$setup` makes a `(guard, url)` pair: the guard keeps its server running for the test.
#[allow(unused_macros)] // the file registry's tests take only the take-over test
macro_rules! suite {
    ($setup:expr) => {
        mod conformance_tests {
            use super::*;

            conformance::suite!(@each $setup,
                eight_distinct_then_exhausted "eight",
                dead_holder_is_taken_over_after_its_ttl "dead",
                release_frees_at_once_and_keeps_the_mark "release",
                release_never_lowers_the_acquired_mark "floor",
                a_fleet_refuses_another_layout "layouts",
                same_identity_gets_its_worker_back "sticky",
                a_fleet_keeps_its_longest_reach "reach"
            );
        }

        conformance::takeover!($setup);

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn conformance_an_upgrade_inherits_old_marks_and_respects_old_holders() {
            let (_server, url) = $setup;
            conformance::an_upgrade_inherits_old_marks_and_respects_old_holders(&url, "upgrade")
                .await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn conformance_an_upgrade_starts_after_ids_of_a_layout_at_another_epoch() {
            let (_server, url) = $setup;
            conformance::an_upgrade_starts_after_ids_of_a_layout_at_another_epoch(&url, "epochs")
                .await;
        }
    };
    (@each $setup:expr, $($test:ident $namespace:literal),*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $test() {
            let (_server, url) = $setup;
            let registry = snowmint_lease::registry_from_url(&url).unwrap();
            conformance::$test(registry, $namespace).await;
        }
    )*};
}
#[allow(unused_imports)] // the file registry's tests take only the take-over test
pub(crate) use suite;

/// The take-over test, which every backend that shares a worker id between machines runs,
/// expiring or not.
macro_rules! takeover {
    ($setup:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn conformance_successor_on_a_new_machine_starts_after_the_dead() {
            let (_server, url) = $setup;
            conformance::successor_on_a_new_machine_starts_after_the_dead(&url, "takeover").await;
        }
    };
}
pub(crate) use takeover;

/// A server of the fleet that reaches 30 s (a rollout raised its TTL, say) records that
/// reach before it issues; a later one that reaches nothing of its own still counts it in
/// the floor of a registry that vouches only since it started: a holder the registry
/// forgets may be the one that reaches further.
pub async fn a_fleet_keeps_its_longest_reach(registry: Arc<dyn Registry>, ns: &str) {
    let far = claim(ns, "far", 2).with_reach(Duration::from_secs(30));
    let held = registry.acquire(&far).await.unwrap();
    // The registries here started with the test: their floors are ahead of the present.
    let near = registry.acquire(&claim(ns, "near", 2)).await.unwrap();
    assert!(
        near.high_water_ms > Some(now_ms() + 20_000),
        "{near:?} does not count the fleet's reach of 30 s"
    );
    registry.release(&far, &held, now_ms()).await.unwrap();
    registry
        .release(&claim(ns, "near", 2), &near, now_ms())
        .await
        .unwrap();
}

/// The registry is restored from a backup taken before a holder acquired its worker id,
/// while the holder still issues under its lease (inside its fence): a newcomer then finds
/// the worker free, and must start after every id the holder may still issue, that is
/// after the mark its last renewal confirmed. The holder's next renewal fails.
pub async fn a_restore_floors_a_new_lease(server: &mut dyn snowmint_testkit::Server, ns: &str) {
    // The reach a server counts: its TTL and the safety margin.
    let claim = |identity: &str| {
        Claim::new(ns, 1, 1, identity, TTL).with_reach(TTL + Duration::from_millis(300))
    };
    let backup = tempfile::tempdir().unwrap();
    tokio::task::block_in_place(|| server.back_up(backup.path()));

    let registry = registry_from_url(&server.url()).unwrap();
    let holder = claim("holder");
    let lease = registry.acquire(&holder).await.unwrap();
    let confirmed = now_ms() + snowmint::whole_ms(TTL);
    registry.renew(&holder, &lease, confirmed).await.unwrap();

    tokio::task::block_in_place(|| server.restore(backup.path()));
    let newcomer = registry_from_url(&server.url()).unwrap();
    let taken = newcomer.acquire(&claim("newcomer")).await.unwrap();
    assert_eq!(taken.worker, lease.worker, "the restore forgot the holder");
    assert!(
        taken.high_water_ms > Some(confirmed),
        "the newcomer starts at {:?}, not after the holder's confirmed mark {confirmed}",
        taken.high_water_ms
    );
    // The holder's renewal fails: the lease is gone, or (ZooKeeper) its session, which
    // the restored server never knew, is still reconnecting until it is told it expired.
    let err = registry
        .renew(&holder, &lease, confirmed + 1_000)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            LeaseError::Lost { .. } | LeaseError::Unavailable { .. }
        ),
        "{err}"
    );
}

/// Free workers are found among `workers` of them (past the first listing page, where the
/// backend lists in pages), exhaustion is exact, a worker given back is found again with
/// its mark, and a huge worker field costs no more than a small one.
pub async fn many_workers_then_a_huge_field(registry: Arc<dyn Registry>, workers: u64) {
    let claim = |i: u64| {
        Claim::new(
            "many",
            1,
            workers,
            &format!("pod-{i}"),
            Duration::from_secs(60),
        )
    };
    let mut held = Vec::new();
    let start = Instant::now();
    for i in 0..workers {
        let c = claim(i);
        let lease = registry.acquire(&c).await.unwrap();
        held.push((c, lease));
    }
    eprintln!("{workers} acquisitions took {:?}", start.elapsed());
    let distinct: HashSet<u64> = held.iter().map(|(_, l)| l.worker).collect();
    assert_eq!(distinct, (0..workers).collect());
    let err = registry.acquire(&claim(workers)).await.unwrap_err();
    assert!(
        matches!(err, LeaseError::Exhausted { datacenter: 1, workers: w, .. } if w == workers),
        "{err:?}"
    );

    // "w99" comes last in key order: on the second page of a listing by key.
    let (c, l) = held.iter().find(|(_, l)| l.worker == 99).unwrap();
    // An hour ahead: past the floor of a registry that started with the test.
    let mark = now_ms() + 3_600_000;
    registry.release(c, l, mark).await.unwrap();
    let again = registry.acquire(&claim(workers + 1)).await.unwrap();
    assert_eq!((again.worker, again.high_water_ms), (99, Some(mark)));

    let huge = 1 << 22; // Baidu's uid-generator: 22 worker bits
    let mut seen = HashSet::new();
    for i in 0..3 {
        let c = Claim::new("huge", 0, huge, &format!("pod-{i}"), TTL);
        let started = Instant::now();
        let lease = registry.acquire(&c).await.unwrap();
        assert!(started.elapsed() < Duration::from_secs(1));
        assert!(
            lease.worker < huge && seen.insert(lease.worker),
            "{lease:?}"
        );
    }
}
