//! Clock modes (`monotonic`, `wall`, `counter`) and what each rollback policy is seen to do.

use std::sync::Arc;
use std::time::Duration;

use snowmint::{
    Clock, ClockMode, Generator, Id, IssueError, Layout, ManualClock, MemoryStore, RollbackPolicy,
    Stats, Store, manual,
};

/// 2026-11-22T00:00:00Z.
const T: u64 = 1_795_305_600_000;
const TEN_S: u64 = 10_000;

fn tick_of(id: Id) -> u64 {
    Layout::TWITTER.decode(id).unwrap().timestamp
}

/// A wall clock that steps when told, beside a steady clock that only moves forward: what
/// [`snowmint::WallClock`] is to the [`snowmint::SystemClock`].
fn stepping_clock(unix_ms: u64) -> Arc<ManualClock<manual::Stepping>> {
    Arc::new(ManualClock::new(unix_ms).stepping())
}

/// Issues 1,000 ids, steps the clock back 10 s and asks for `during` more; returns the
/// answers and the generator's counts.
fn stepped(policy: RollbackPolicy, during: usize) -> (Vec<Result<Id, IssueError>>, Stats) {
    let clock = stepping_clock(T);
    let g = Generator::builder(Layout::TWITTER)
        .clock(Arc::clone(&clock))
        .mode(ClockMode::Wall)
        .rollback(policy)
        .build()
        .unwrap();
    let mut last = Id::from_u64(0);
    for _ in 0..1_000 {
        let id = g.next_id().unwrap();
        assert!(id > last);
        last = id;
    }
    clock.step_back(TEN_S);
    let answers: Vec<_> = (0..during).map(|_| g.next_id()).collect();
    for id in answers.iter().filter_map(|a| a.as_ref().ok()) {
        assert!(*id > last, "{policy:?}: an id went back");
        last = *id;
    }
    (answers, g.stats())
}

#[test]
fn each_policy_counts_what_it_did() {
    let (answers, stats) = stepped(RollbackPolicy::Refuse, 3);
    assert!(answers.iter().all(Result::is_err));
    assert_eq!(
        (stats.rollback_refusals, stats.clock_rollbacks),
        (3, 3),
        "{stats:?}"
    );

    let (answers, stats) = stepped(RollbackPolicy::WaitUpTo(Duration::from_secs(20)), 2);
    assert!(answers.iter().all(Result::is_ok));
    // One wait of the whole gap (to the newest tick), then the clock has caught up.
    assert_eq!(
        (
            stats.rollback_waits,
            stats.rollback_wait_ms,
            stats.rollback_refusals
        ),
        (1, TEN_S, 0),
        "{stats:?}"
    );

    let (answers, stats) = stepped(RollbackPolicy::LogicalClock, 10_000);
    let ids: Vec<Id> = answers.into_iter().map(Result::unwrap).collect();
    // The rest of the newest tick, then two more ticks ahead of the clock.
    assert_eq!(tick_of(ids[9_999]) - tick_of(ids[0]), 2);
    assert_eq!(stats.logical_ticks, 3, "{stats:?}");
    assert_eq!(stats.rollback_waits + stats.rollback_refusals, 0);

    let (answers, stats) = stepped(
        RollbackPolicy::SpareSequence {
            then_wait_up_to: Duration::ZERO,
        },
        3_100,
    );
    // 4,096 numbers in a tick, 1,000 used before the step: 3,096 spare, then refusals.
    assert_eq!(answers.iter().filter(|a| a.is_ok()).count(), 3_096);
    assert_eq!(
        (stats.spare_ids, stats.rollback_refusals),
        (3_096, 4),
        "{stats:?}"
    );
}

#[test]
fn spare_numbers_are_counted_by_the_batch() {
    let clock = ManualClock::new(T);
    let g = Generator::builder(Layout::TWITTER)
        .clock(&clock)
        .rollback(RollbackPolicy::SpareSequence {
            then_wait_up_to: Duration::ZERO,
        })
        .build()
        .unwrap();
    g.next_batch(96).unwrap();
    clock.step_back(TEN_S);
    assert_eq!(g.next_batch(5_000).unwrap().len(), 4_000);
    assert_eq!(g.stats().spare_ids, 4_000);
    assert!(matches!(
        g.next_batch(1),
        Err(IssueError::ClockBehind { .. })
    ));
}

#[test]
fn refusal_tells_what_the_next_id_would_meet_without_taking_it() {
    let clock = ManualClock::new(T);
    let g = Generator::builder(Layout::TWITTER)
        .clock(&clock)
        .rollback(RollbackPolicy::WaitUpTo(Duration::from_secs(5)))
        .build()
        .unwrap();
    let first = g.next_id().unwrap();
    clock.step_back(3_000);
    assert!(g.refusal().is_none(), "3 s is within the wait");
    clock.step_back(57_000);
    let err = g.refusal().unwrap();
    assert_eq!(
        err.to_string(),
        "clock is 60000 ms behind the newest id issued, more than the 5000 ms this generator waits"
    );
    assert_eq!(g.stats(), Stats::default(), "asking counts nothing");
    clock.set(T + 1);
    assert!(g.refusal().is_none());
    assert_eq!(
        g.next_id().unwrap(),
        Id::from_u64(first.as_u64() + (1 << 22))
    );
}

#[test]
fn a_stepping_clock_fences_on_real_time() {
    let clock = stepping_clock(T);
    let g = Generator::builder(Layout::TWITTER)
        .clock(Arc::clone(&clock))
        .mode(ClockMode::Wall)
        .rollback(RollbackPolicy::LogicalClock)
        .build()
        .unwrap();
    g.set_valid_until_ms(T + 1_000);
    g.next_id().unwrap();
    // The wall clock goes back a minute; real time passes the lease's end. The wall
    // clock still reads inside the lease: only the steady clock knows it is over.
    clock.step_back(60_000);
    clock.advance(1_000);
    let fenced =
        |e: &IssueError| matches!(e, IssueError::Fenced { until_ms } if *until_ms == T + 1_000);
    assert!(g.next_id().is_err_and(|e| fenced(&e)));
    assert!(g.next_batch(10).is_err_and(|e| fenced(&e)));
    assert!(g.try_next_id().is_err_and(|e| fenced(&e)));
    g.set_valid_until_ms(T + 10_000);
    assert!(g.next_id().is_ok());
}

#[test]
fn a_stepping_clock_back_in_step_with_the_ids_still_fences_on_real_time() {
    let clock = stepping_clock(T);
    let g = Generator::builder(Layout::TWITTER)
        .clock(Arc::clone(&clock))
        .mode(ClockMode::Wall)
        .build()
        .unwrap();
    g.set_valid_until_ms(T + 1_000);
    g.next_id().unwrap();
    // A second back, then a second and a half on: the wall clock reads half a second into
    // the lease, real time half a second past it. Every id, the first of the tick and
    // those after it in the tick the counter has reached, is fenced.
    clock.step_back(1_000);
    clock.advance(1_500);
    for _ in 0..3 {
        assert!(
            matches!(g.next_id(), Err(IssueError::Fenced { until_ms }) if until_ms == T + 1_000)
        );
    }
    g.set_valid_until_ms(T + 10_000);
    let id = g.next_id().unwrap();
    assert_eq!(Layout::TWITTER.decode(id).unwrap().unix_ms, T + 500);
    g.shutdown().unwrap();
    assert!(matches!(g.next_id(), Err(IssueError::Closed)));
}

#[test]
fn a_counter_moves_on_when_the_sequence_fills_whatever_the_clock_does() {
    let clock = ManualClock::new(T);
    let store = Arc::new(MemoryStore::new());
    let g = Generator::builder(Layout::TWITTER)
        .clock(&clock)
        .mode(ClockMode::Counter)
        .store(Arc::clone(&store) as Arc<dyn Store>)
        .reserve_ahead(Duration::from_millis(100))
        .build()
        .unwrap();
    assert_eq!(g.mode(), ClockMode::Counter);
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(g.next_id().unwrap());
    }
    clock.step_back(3_600_000);
    ids.extend(g.next_batch(10_000).unwrap().iter());
    while ids.len() < 20_000 {
        ids.push(g.next_id().unwrap());
    }
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    // Tick 1 holds the first 4,096 ids, tick 2 the next, whatever the clock reads.
    assert_eq!(tick_of(ids[0]), 1);
    assert_eq!(tick_of(ids[4_095]), 1);
    assert_eq!(tick_of(ids[4_096]), 2);
    assert_eq!(tick_of(ids[19_999]), 5);
    assert!(
        clock.sleeps().is_empty(),
        "a counter never waits for the clock"
    );
    assert_eq!(g.clock_lag_ms(), 0);
    assert!(g.refusal().is_none());
    // Reserved in blocks of 100 ticks: one write covers the first 101 ticks.
    assert_eq!(g.stats().reservations, 1);
    assert_eq!(
        store.load().unwrap(),
        Some(Layout::TWITTER.unix_ms_at(102) - 1)
    );

    // A successor starts above the mark, at tick 102.
    g.shutdown().unwrap();
    let mark = store.load().unwrap().unwrap();
    assert_eq!(
        mark,
        Layout::TWITTER.unix_ms_at(6) - 1,
        "lowered to the last tick issued"
    );
    let next = Generator::builder(Layout::TWITTER)
        .clock(&clock)
        .mode(ClockMode::Counter)
        .store(Arc::clone(&store) as Arc<dyn Store>)
        .build()
        .unwrap();
    assert_eq!(tick_of(next.next_id().unwrap()), 6);
}

#[test]
fn a_counter_still_fences_on_real_time_and_outlives_its_layouts_clock() {
    let clock = ManualClock::new(T);
    let g = Generator::builder(Layout::TWITTER)
        .clock(&clock)
        .mode(ClockMode::Counter)
        .build()
        .unwrap();
    g.set_valid_until_ms(T + 10);
    assert!(g.next_id().is_ok());
    clock.advance(10);
    assert!(matches!(g.next_id(), Err(IssueError::Fenced { .. })));
    assert!(matches!(g.next_batch(3), Err(IssueError::Fenced { .. })));
    g.set_valid_until_ms(T + 20);
    assert!(g.next_id().is_ok());
    g.shutdown().unwrap();
    assert!(matches!(g.next_id(), Err(IssueError::Closed)));

    // Baidu's 28-bit seconds ran out in 2024; a counter of them has not.
    let err = Generator::builder(Layout::BAIDU)
        .clock(&clock)
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("ran out"), "{err}");
    let g = Generator::builder(Layout::BAIDU)
        .clock(&clock)
        .mode(ClockMode::Counter)
        .build()
        .unwrap();
    let a = g.next_id().unwrap();
    assert!(a < g.next_id().unwrap());
}

/// A wait for a clock 3 s behind meets a second step of 60 s: it gives up when its 3 s are
/// over on the steady clock, and the policy, asked again, refuses; it does not sleep 60 s
/// more for a clock that may never come back.
#[test]
fn a_wait_that_meets_another_step_back_is_bounded_on_real_time() {
    let clock = stepping_clock(T);
    let g = Generator::builder(Layout::TWITTER)
        .clock(Arc::clone(&clock))
        .mode(ClockMode::Wall)
        .rollback(RollbackPolicy::WaitUpTo(Duration::from_secs(5)))
        .build()
        .unwrap();
    let first = g.next_id().unwrap();
    clock.step_back(3_000);
    clock.step_back_in_next_wait(60_000);
    let started = clock.steady_ms();
    let err = g.next_id().unwrap_err();
    assert!(
        matches!(err, IssueError::BehindTooFar { max_wait_ms: 5_000, behind_ms } if behind_ms > 55_000),
        "{err}"
    );
    let waited = clock.steady_ms() - started;
    assert!((3_000..3_100).contains(&waited), "waited {waited} ms");
    let stats = g.stats();
    assert_eq!(
        (stats.rollback_waits, stats.rollback_refusals),
        (1, 1),
        "{stats:?}"
    );
    // Set right, it issues after the first id; the slot it gave back is not lost.
    clock.advance(60_000);
    let next = g.next_id().unwrap();
    assert!(next > first);
}
