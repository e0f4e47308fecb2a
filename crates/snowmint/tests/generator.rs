//! The generator's promises, each tried against a clock that misbehaves on purpose.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use snowmint::error::Chain;
use snowmint::{
    BuildError, Clock, Generator, Id, IssueError, Layout, ManualClock, MemoryStore, OverflowPolicy,
    Poll, RollbackPolicy, SequenceStart, Store, StoreError,
};

/// 2026-11-22T00:00:00Z: a "now" well inside every generating layout.
const T: u64 = 1_795_305_600_000;
const TEN_S: u64 = 10_000;
const HOUR: u64 = 3_600_000;

fn manual(layout: Layout, clock: &Arc<ManualClock>) -> snowmint::Builder<Arc<ManualClock>> {
    Generator::builder(layout).clock(Arc::clone(clock))
}

fn tick_of(id: Id) -> u64 {
    Layout::TWITTER.decode(id).unwrap().timestamp
}

/// Runs `threads` threads of `per_thread` ids each through one generator and checks the
/// promises every configuration keeps: each thread's ids strictly increase, no id repeats,
/// and every id decodes to the generator's datacenter and worker.
fn check_shared<C: Clock>(generator: &Generator<C>, threads: usize, per_thread: usize) {
    let layout = *generator.layout();
    let results: Vec<Vec<Id>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut ids = Vec::with_capacity(per_thread);
                    for _ in 0..per_thread {
                        ids.push(generator.next_id().expect("next_id"));
                    }
                    ids
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all = Vec::with_capacity(threads * per_thread);
    for ids in &results {
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "a thread saw ids go back"
        );
        all.extend_from_slice(ids);
    }
    for id in all.iter().step_by(997) {
        let parts = layout.decode(*id).unwrap();
        assert_eq!(
            (parts.datacenter, parts.worker),
            (generator.datacenter(), generator.worker())
        );
    }
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), threads * per_thread, "duplicate ids");
}

#[test]
fn four_threads_of_a_million_ids_on_the_system_clock() {
    let generator = Generator::builder(Layout::TWITTER)
        .datacenter(3)
        .worker(17)
        .build()
        .unwrap();
    check_shared(&generator, 4, 1_000_000);
}

#[test]
fn every_configuration_keeps_the_shared_promises() {
    let starts = [
        SequenceStart::Zero,
        SequenceStart::Random { below: 200 },
        SequenceStart::Continue,
    ];
    let overflows = [
        OverflowPolicy::Wait,
        OverflowPolicy::Borrow {
            lead: Duration::from_millis(50),
        },
    ];
    // Baidu's 28 bits of seconds from 2016 ran out in 2024: give it a recent epoch.
    let baidu = Layout::BAIDU.with_epoch_ms(T - HOUR).unwrap();
    for layout in [Layout::TWITTER, Layout::SONYFLAKE, baidu] {
        for start in starts {
            for overflow in overflows {
                let clock = Arc::new(ManualClock::new(T));
                let generator = manual(layout, &clock)
                    .worker(1)
                    .sequence_start(start)
                    .overflow(overflow)
                    .build()
                    .unwrap();
                check_shared(&generator, 4, 50_000);
            }
        }
    }
}

#[test]
fn a_spent_tick_parks_until_the_next_one() {
    let clock = Arc::new(ManualClock::new(T));
    let g = manual(Layout::TWITTER, &clock).build().unwrap();
    let first: Vec<Id> = (0..4096).map(|_| g.next_id().unwrap()).collect();
    assert!(first.iter().all(|id| tick_of(*id) == tick_of(first[0])));
    assert!(clock.sleeps().is_empty());
    let next = g.next_id().unwrap();
    assert_eq!(clock.sleeps(), [T + 1], "waited for exactly the next tick");
    assert_eq!(tick_of(next), tick_of(first[0]) + 1);
    assert_eq!(Layout::TWITTER.decode(next).unwrap().sequence, 0);
    assert_eq!(g.stats().tick_waits, 1);
}

#[test]
fn borrowing_never_runs_ahead_of_the_lead() {
    let clock = Arc::new(ManualClock::new(T));
    let g = manual(Layout::TWITTER, &clock)
        .overflow(OverflowPolicy::Borrow {
            lead: Duration::from_secs(1),
        })
        .build()
        .unwrap();
    let mut last = Id::MIN;
    let mut max_lead = 0;
    let mut issued = 0u64;
    while issued < 4096 * 1500 {
        let batch = g.next_batch(4096).unwrap();
        assert!(batch.first() > last);
        last = batch.last();
        let ms = Layout::TWITTER.decode(last).unwrap().unix_ms;
        max_lead = max_lead.max(ms.saturating_sub(clock.now_ms()));
        issued += batch.len();
    }
    assert_eq!(max_lead, 1000, "borrowed up to the lead and not past it");
    // 1,001 ticks (now and the lead) fill before the first wait.
    assert_eq!(clock.sleeps().first(), Some(&(T + 1)));
}

#[test]
fn sequence_starts() {
    let clock = Arc::new(ManualClock::new(T));
    let g = manual(Layout::TWITTER, &clock)
        .sequence_start(SequenceStart::Random { below: 100 })
        .build()
        .unwrap();
    let mut seqs = Vec::new();
    for _ in 0..200 {
        seqs.push(
            Layout::TWITTER
                .decode(g.next_id().unwrap())
                .unwrap()
                .sequence,
        );
        clock.advance(1);
    }
    assert!(seqs.iter().all(|s| *s < 100));
    assert!(seqs.iter().any(|s| s % 2 == 1), "not all even");
    assert!(seqs.iter().collect::<HashSet<_>>().len() > 20);

    let clock = Arc::new(ManualClock::new(T));
    let g = manual(Layout::TWITTER, &clock)
        .sequence_start(SequenceStart::Continue)
        .build()
        .unwrap();
    let mut seqs = Vec::new();
    for _ in 0..3 {
        seqs.push(
            Layout::TWITTER
                .decode(g.next_id().unwrap())
                .unwrap()
                .sequence,
        );
        clock.advance(1);
    }
    assert_eq!(seqs, [0, 1, 2]);

    let err = Generator::builder(Layout::TWITTER)
        .sequence_start(SequenceStart::Random { below: 5000 })
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "random sequence start bound 5000 is out of range 0..=4096"
    );
}

#[test]
fn a_clock_that_never_goes_back_still_refuses_behind_a_mark_and_waits_on_a_spent_tick() {
    // Restarted 3 s behind the last run's mark: the mark is the newest tick seen.
    // A manual clock that says it never goes back, as the system clock does: the generator
    // then keeps no record of the newest tick it saw on the first id of each tick.
    let clock = Arc::new(ManualClock::new(T).never_going_back());
    let g = Generator::builder(Layout::TWITTER)
        .clock(Arc::clone(&clock))
        .rollback(RollbackPolicy::Refuse)
        .after_ms(T + 3_000)
        .build()
        .unwrap();
    let err = g.next_id().unwrap_err();
    assert!(
        matches!(err, IssueError::ClockBehind { behind_ms: 3_001 }),
        "{err}"
    );
    // Past the mark, many ticks' first ids in a row: each issues at the clock's tick.
    let mut last = Id::from_u64(0);
    for _ in 0..100 {
        clock.advance(3_037);
        let id = g.next_id().unwrap();
        assert!(id > last);
        assert_eq!(Layout::TWITTER.decode(id).unwrap().unix_ms, clock.now_ms());
        last = id;
    }
    // A spent sequence is not a rollback, even with `Refuse`: it waits for the next tick.
    for _ in 0..4095 {
        g.next_id().unwrap();
    }
    let next = g.next_id().unwrap();
    assert_eq!(clock.sleeps(), [clock.now_ms()], "waited for the next tick");
    assert_eq!(tick_of(next), tick_of(last) + 1);
    assert_eq!(
        g.stats().clock_rollbacks,
        1,
        "only the start behind the mark"
    );
}

/// What a rollback scenario saw: the ids before the step back, the answers while the clock
/// was behind, and the clock (with its record of waits).
struct Scenario {
    before: Vec<Id>,
    answers: Vec<Result<Id, IssueError>>,
    clock: Arc<ManualClock>,
}

/// Issues 1,000 ids at T, steps the clock back 10 s, asks for more, then moves the clock
/// forward an hour and asks again, checking that no id ever goes back.
fn rollback_scenario(policy: RollbackPolicy, during: usize) -> Scenario {
    let clock = Arc::new(ManualClock::new(T));
    let g = manual(Layout::TWITTER, &clock)
        .rollback(policy)
        .build()
        .unwrap();
    let before: Vec<Id> = (0..1000).map(|_| g.next_id().unwrap()).collect();
    clock.step_back(TEN_S);
    let answers: Vec<_> = (0..during).map(|_| g.next_id()).collect();
    clock.advance(HOUR);
    let after: Vec<Id> = (0..1000).map(|_| g.next_id().unwrap()).collect();
    let mut all: Vec<Id> = before.clone();
    all.extend(answers.iter().filter_map(|r| r.clone().ok()));
    all.extend(&after);
    assert!(
        all.windows(2).all(|w| w[0] < w[1]),
        "{policy:?}: ids went back"
    );
    assert!(tick_of(after[0]) >= tick_of(before[0]) + (HOUR - TEN_S));
    Scenario {
        before,
        answers,
        clock,
    }
}

#[test]
fn rollback_refuse_names_the_gap() {
    let Scenario { answers, clock, .. } = rollback_scenario(RollbackPolicy::Refuse, 3);
    for answer in answers {
        let err = answer.unwrap_err();
        assert!(
            matches!(err, IssueError::ClockBehind { behind_ms: 10_000 }),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            "clock is 10000 ms behind the newest id issued; refusing to issue until it catches up"
        );
    }
    assert!(clock.sleeps().is_empty());
}

#[test]
fn rollback_wait_up_to_waits_or_reports() {
    let Scenario { answers, .. } =
        rollback_scenario(RollbackPolicy::WaitUpTo(Duration::from_secs(5)), 1);
    assert_eq!(
        answers[0].clone().unwrap_err().to_string(),
        "clock is 10000 ms behind the newest id issued, more than the 5000 ms this generator waits"
    );
    let Scenario {
        before,
        answers,
        clock,
    } = rollback_scenario(RollbackPolicy::WaitUpTo(Duration::from_secs(20)), 1);
    let id = answers[0].clone().unwrap();
    assert!(id > *before.last().unwrap());
    assert_eq!(clock.sleeps(), [T], "parked until the clock was back at T");
}

#[test]
fn rollback_logical_clock_keeps_issuing_on_the_last_tick() {
    let Scenario {
        before,
        answers,
        clock,
    } = rollback_scenario(RollbackPolicy::LogicalClock, 10_000);
    let ids: Vec<Id> = answers.into_iter().map(Result::unwrap).collect();
    let t = tick_of(before[0]);
    // The rest of tick T, then T+1, T+2 ... as each sequence is spent: never back.
    assert_eq!(tick_of(ids[0]), t);
    assert_eq!(tick_of(ids[3095]), t);
    assert_eq!(tick_of(ids[3096]), t + 1);
    assert_eq!(tick_of(*ids.last().unwrap()), t + 2);
    assert!(clock.sleeps().is_empty(), "a logical clock never waits");
}

#[test]
fn rollback_spare_sequence_then_refuse_or_wait() {
    let Scenario {
        before, answers, ..
    } = rollback_scenario(
        RollbackPolicy::SpareSequence {
            then_wait_up_to: Duration::ZERO,
        },
        3100,
    );
    let t = tick_of(before[0]);
    assert!(
        answers[..3096]
            .iter()
            .all(|a| tick_of(a.clone().unwrap()) == t)
    );
    assert!(
        answers[3096..]
            .iter()
            .all(|a| matches!(a, Err(IssueError::ClockBehind { behind_ms: 10_001 })))
    );

    let Scenario { answers, clock, .. } = rollback_scenario(
        RollbackPolicy::SpareSequence {
            then_wait_up_to: Duration::from_secs(11),
        },
        3100,
    );
    assert!(answers.iter().all(Result::is_ok));
    assert_eq!(clock.sleeps(), [T + 1]);
}

#[test]
fn try_next_id_never_waits() {
    let clock = Arc::new(ManualClock::new(T));
    let g = manual(Layout::TWITTER, &clock).build().unwrap();
    for _ in 0..4096 {
        assert!(matches!(g.try_next_id().unwrap(), Poll::Ready(_)));
    }
    let tick = Layout::TWITTER.tick_at(T).unwrap() + 1;
    assert_eq!(
        g.try_next_id().unwrap(),
        Poll::Pending {
            tick,
            until_ms: T + 1,
            behind: false,
        }
    );
    assert!(clock.sleeps().is_empty());
    clock.advance(1);
    assert!(matches!(g.try_next_id().unwrap(), Poll::Ready(_)));
}

/// A caller that waits on its own timer (an async server) is told how long, and its wait
/// for a clock that went back is counted as `next_id` counts its own.
#[test]
fn a_wait_on_the_callers_timer_is_told_its_length_and_counted() {
    let clock = Arc::new(ManualClock::new(T));
    let g = manual(Layout::TWITTER, &clock)
        .rollback(RollbackPolicy::WaitUpTo(Duration::from_secs(5)))
        .build()
        .unwrap();
    let newest = g.next_id().unwrap();
    clock.step_back(3_000);
    let Poll::Pending { tick, behind, .. } = g.try_next_id().unwrap() else {
        panic!("a clock 3 s behind is waited for");
    };
    assert!(behind);
    let wait = g.begin_wait(tick, behind);
    assert_eq!(wait.duration(), Duration::from_millis(3_000));
    assert_eq!(g.stats().tick_waits, 1);
    clock.advance(3_000);
    drop(wait);
    let Poll::Ready(id) = g.try_next_id().unwrap() else {
        panic!("the clock is back at the newest id");
    };
    assert!(id > newest);
    let stats = g.stats();
    assert_eq!((stats.rollback_waits, stats.rollback_wait_ms), (1, 3_000));
    assert!(clock.sleeps().is_empty(), "the generator slept");
    // Past the bound, the same refusal as `next_id`'s, at once.
    clock.step_back(6_000);
    assert_eq!(
        g.try_next_id().unwrap_err().to_string(),
        "clock is 6000 ms behind the newest id issued, more than the 5000 ms this generator waits"
    );
}

#[test]
fn clean_restart_continues_after_the_last_id() {
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(ManualClock::new(T));
    let first = manual(Layout::TWITTER, &clock)
        .store(store.clone())
        .build()
        .unwrap();
    let last = (0..10).map(|_| first.next_id().unwrap()).last().unwrap();
    assert_eq!(store.load().unwrap(), Some(T + 1000), "reserved 1 s ahead");
    drop(first);
    assert_eq!(
        store.load().unwrap(),
        Some(T),
        "lowered to the last id's tick"
    );

    let second = manual(Layout::TWITTER, &clock)
        .store(store.clone())
        .build()
        .unwrap();
    let id = second.next_id().unwrap();
    assert!(id > last);
    assert_eq!(
        clock.sleeps(),
        [T + 1],
        "waited one tick, not the reservation"
    );
}

#[test]
fn crash_restart_never_reissues_the_reservation() {
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(ManualClock::new(T));
    let crashed = manual(Layout::TWITTER, &clock)
        .store(store.clone())
        .build()
        .unwrap();
    let last = (0..10).map(|_| crashed.next_id().unwrap()).last().unwrap();
    std::mem::forget(crashed); // no clean shutdown: the mark stays 1 s ahead

    // Restarted at once: waits out the reservation (within the default 5 s).
    let next = manual(Layout::TWITTER, &clock)
        .store(store.clone())
        .build()
        .unwrap();
    let id = next.next_id().unwrap();
    assert!(id > last);
    assert_eq!(Layout::TWITTER.decode(id).unwrap().unix_ms, T + 1001);
    drop(next);

    // Restarted with the clock set back 10 s: the default policy reports the gap.
    let behind = Arc::new(ManualClock::new(T - TEN_S));
    let g = manual(Layout::TWITTER, &behind)
        .store(store.clone())
        .build()
        .unwrap();
    assert_eq!(g.clock_lag_ms(), 11_002);
    assert!(matches!(
        g.next_id(),
        Err(IssueError::BehindTooFar {
            behind_ms: 11_002,
            max_wait_ms: 5_000
        })
    ));
    let g = manual(Layout::TWITTER, &behind)
        .store(store.clone())
        .rollback(RollbackPolicy::LogicalClock)
        .build()
        .unwrap();
    assert!(g.next_id().unwrap() > id);
}

#[test]
fn a_lease_mark_is_honoured_like_the_store_one() {
    let clock = Arc::new(ManualClock::new(T));
    let g = manual(Layout::TWITTER, &clock)
        .after_ms(T + 2_000)
        .rollback(RollbackPolicy::Refuse)
        .build()
        .unwrap();
    assert!(matches!(
        g.next_id(),
        Err(IssueError::ClockBehind { behind_ms: 2_001 })
    ));
}

struct FlakyStore {
    inner: MemoryStore,
    broken: AtomicBool,
}

impl Store for FlakyStore {
    fn load(&self) -> Result<Option<u64>, StoreError> {
        self.inner.load()
    }

    fn reserve(&self, until_ms: u64) -> Result<u64, StoreError> {
        if self.broken.load(Ordering::SeqCst) {
            return Err(StoreError::new("disk full"));
        }
        self.inner.reserve(until_ms)
    }
}

#[test]
fn a_failing_store_stops_issuing_past_the_reservation() {
    let store = Arc::new(FlakyStore {
        inner: MemoryStore::new(),
        broken: AtomicBool::new(true),
    });
    let clock = Arc::new(ManualClock::new(T));
    let g = manual(Layout::TWITTER, &clock)
        .store(store.clone())
        .build()
        .unwrap();
    let err = g.next_id().unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot raise the high-water mark to 2026-11-22T00:00:01.000Z"
    );
    assert_eq!(
        Chain(&err).to_string(),
        "cannot raise the high-water mark to 2026-11-22T00:00:01.000Z: disk full"
    );
    store.broken.store(false, Ordering::SeqCst);
    let id = g.next_id().unwrap();
    assert_eq!(store.load().unwrap(), Some(T + 1000));
    // Within the reservation nothing is written; past it, the broken store stops issuance.
    store.broken.store(true, Ordering::SeqCst);
    clock.advance(1000);
    assert!(g.next_id().unwrap() > id);
    clock.advance(1);
    assert!(matches!(g.next_id(), Err(IssueError::Reserve { .. })));
}

#[test]
fn out_of_range_clock_and_shutdown() {
    let clock = Arc::new(ManualClock::new(1_000));
    let g = manual(Layout::TWITTER, &clock).build().unwrap();
    assert_eq!(
        g.next_id().unwrap_err().to_string(),
        "time 1970-01-01T00:00:01.000Z is outside the layout's range 2010-11-04T01:42:54.657Z..=2080-07-10T17:30:30.208Z"
    );
    clock.set(T);
    g.next_id().unwrap();
    g.shutdown().unwrap();
    assert!(matches!(g.next_id(), Err(IssueError::Closed)));
    assert!(matches!(g.next_batch(5), Err(IssueError::Closed)));
}

#[test]
fn batches_and_single_ids_interleave_without_repeats() {
    let clock = Arc::new(ManualClock::new(T));
    let g = manual(Layout::SONYFLAKE, &clock).worker(9).build().unwrap();
    let mut seen = Vec::new();
    for round in 0..2000 {
        if round % 3 == 0 {
            seen.extend(g.next_batch(100).unwrap().iter());
        } else {
            seen.push(g.next_id().unwrap());
        }
    }
    assert!(seen.windows(2).all(|w| w[0] < w[1]));
    assert!(
        seen.iter()
            .all(|id| Layout::SONYFLAKE.decode(*id).unwrap().worker == 9)
    );
}

#[test]
fn a_fence_stops_every_way_of_issuing_at_its_instant() {
    let clock = Arc::new(ManualClock::new(T));
    let g = manual(Layout::SONYFLAKE, &clock).build().unwrap();
    g.set_valid_until_ms(T + 50);
    assert!(matches!(g.try_next_id().unwrap(), Poll::Ready(_)));
    assert!(g.next_batch(10).is_ok());
    // 10 ms ticks: the tick [T+40, T+50) is the last one that ends by the deadline.
    clock.set(T + 49);
    assert!(g.next_id().is_ok());
    clock.set(T + 50);
    let fenced = |err| matches!(err, IssueError::Fenced { until_ms } if until_ms == T + 50);
    assert!(g.next_id().is_err_and(fenced));
    assert!(g.try_next_id().is_err_and(fenced));
    assert!(g.next_batch(10).is_err_and(fenced));
    assert_eq!(
        g.next_id().unwrap_err().to_string(),
        "worker id lease was confirmed only until 2026-11-22T00:00:00.050Z: no ids until it is renewed"
    );
    g.set_valid_until_ms(u64::MAX);
    assert!(g.next_id().is_ok());
}

/// Grants reservations only up to a limit it is told, as a registry that has confirmed a
/// mark only so far does.
struct CappedStore {
    cap: std::sync::atomic::AtomicU64,
}

impl Store for CappedStore {
    fn load(&self) -> Result<Option<u64>, StoreError> {
        Ok(None)
    }

    fn reserve(&self, until_ms: u64) -> Result<u64, StoreError> {
        Ok(until_ms.min(self.cap.load(Ordering::SeqCst)))
    }
}

#[test]
fn a_partial_grant_is_issued_up_to_and_no_further() {
    let store = Arc::new(CappedStore {
        cap: std::sync::atomic::AtomicU64::new(T + 199),
    });
    let clock = Arc::new(ManualClock::new(T));
    let g = manual(Layout::TWITTER, &clock)
        .store(store.clone())
        .build()
        .unwrap();
    assert!(g.next_id().is_ok());
    clock.set(T + 199);
    assert!(g.next_id().is_ok(), "the last granted tick");
    clock.set(T + 200);
    assert_eq!(
        g.next_id().unwrap_err().to_string(),
        "high-water mark store vouches for ids only up to 2026-11-22T00:00:00.199Z, before the id being issued at 2026-11-22T00:00:00.200Z"
    );
    store.cap.store(T + 5_000, Ordering::SeqCst);
    assert!(g.next_id().is_ok());
    assert_eq!(g.stats().reservations, 2);
}

#[test]
fn a_batch_of_none_is_refused_and_takes_no_id() {
    let clock = Arc::new(ManualClock::new(T));
    let g = manual(Layout::TWITTER, &clock).build().unwrap();
    let before = g.next_id().unwrap();
    let err = g.next_batch(0).unwrap_err();
    assert!(matches!(err, IssueError::ZeroBatch), "{err:?}");
    assert_eq!(
        err.to_string(),
        "batch count 0 is out of range 1..=18446744073709551615"
    );
    assert_eq!(g.next_id().unwrap().as_u64(), before.as_u64() + 1);
}

/// A store whose mark cannot be read.
struct Unreadable;

impl Store for Unreadable {
    fn load(&self) -> Result<Option<u64>, StoreError> {
        Err(StoreError::new(std::io::Error::other("disk unreadable")))
    }

    fn reserve(&self, until_ms: u64) -> Result<u64, StoreError> {
        Ok(until_ms)
    }
}

#[test]
fn a_mark_that_cannot_be_read_is_not_called_unrecorded() {
    let clock = Arc::new(ManualClock::new(T));
    let err = manual(Layout::TWITTER, &clock)
        .store(Arc::new(Unreadable))
        .build()
        .unwrap_err();
    assert!(matches!(err, BuildError::Load { .. }), "{err:?}");
    assert_eq!(err.to_string(), "cannot read the high-water mark");
    let source = std::error::Error::source(&err).expect("the store's error");
    assert_eq!(source.to_string(), "disk unreadable");
    assert_eq!(
        Chain(&err).to_string(),
        "cannot read the high-water mark: disk unreadable"
    );
}

#[test]
fn a_mark_past_the_layouts_end_is_named_with_the_end() {
    let store = Arc::new(MemoryStore::new());
    store.reserve(4_000_000_000_000).unwrap();
    let clock = Arc::new(ManualClock::new(T));
    let err = manual(Layout::TWITTER, &clock)
        .store(store)
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "high-water mark 2096-10-02T07:06:40.000Z is past the layout's last instant 2080-07-10T17:30:30.208Z: no id can follow it"
    );
}
