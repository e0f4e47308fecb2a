//! The lock-free generator.
//!
//! State is one atomic counter of slots, `tick << sequence_bits | sequence`: taking an id is
//! one `fetch_add`. A slot whose tick is the clock's tick is issued at once (the fast path).
//! A slot in a past tick moves the counter to the clock's tick; a slot in a future tick is a
//! ticket: its taker waits, parked, until that tick starts (overflow) or applies the rollback
//! policy (the clock went back). A carry out of the sequence bits moves to the next tick,
//! which is exactly the next id in order, so no slot is ever issued twice.
//!
//! This file is the path to an id; [`builder`] validates a configuration into a generator,
//! and [`limit`] keeps what bounds the fast path: the store's reservation and the lease's
//! fence.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::policy::{ClockMode, IdRange, Poll, RollbackPolicy, SequenceStart};
use crate::{Clock, Id, IssueError, Layout, Store, SystemClock};

mod builder;
mod limit;
mod wait;

pub use builder::Builder;
#[cfg(test)]
pub(crate) use builder::max_tick;
pub use wait::TickWait;

/// Everything the fast path touches after reading the clock, on two cache lines of its own
/// (aligned to two lines, for adjacent-line prefetch). The first holds the counter, which
/// every id writes, and the newest tick seen. The second holds what every id reads after
/// its `fetch_add`, the issue limit and the constants that compose an id, which no id
/// writes: each core keeps a copy, so a second core taking the counter's line between a
/// `fetch_add` and those reads does not make them miss. (With both on one line, two
/// threads sharing a generator minted 63-99 M ids/s where they now mint 106-116 M.) What
/// is read *before* the `fetch_add` (the clock's epoch and tick) stays off the counter's
/// line, or a second core would fetch that line twice per id.
#[derive(Debug)]
#[repr(C, align(128))]
struct Hot {
    /// The next free slot: `tick << seq_bits | sequence`.
    state: AtomicU64,
    /// The newest tick any caller has seen the clock show.
    seen: AtomicU64,
    /// The rest of the counter's line: what follows starts the next line.
    _counter_line: [u64; 6],
    /// `min(reserved, fence)`: the fast path issues at a tick at or below it with one load.
    /// 0 when the fence is measured apart from the time field (`apart`).
    limit: AtomicU64,
    /// With the fence apart: the reservation, up to which the fast path issues ticks while
    /// the steady clock reads before `fence_ms`. 0 otherwise, and once shut down.
    apart_limit: AtomicU64,
    /// With the fence apart: the first steady millisecond the lease does not cover.
    fence_ms: AtomicU64,
    seq_mask: u64,
    node: u64,
    seq_bits: u8,
    timestamp_shift: u8,
    sequence_shift: u8,
    /// Where the fence is measured, and so which fast path issues.
    apart: Apart,
}

/// How a generator's fast path knows that the lease covers an id ([`Hot::apart`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Apart {
    /// The fence is a tick of the time field (`monotonic`): `limit` holds it.
    No,
    /// The time field's clock may step (`wall`): a slot in the clock's tick is checked
    /// against the steady clock.
    Stepping,
    /// The tick is the counter's carry (`counter`): any slot is, whatever the clock reads.
    Counting,
}

/// Counts of the generator's slow events, and of what its rollback policy did, for metrics.
///
/// # Examples
///
/// ```
/// let generator = snowmint::Generator::builder(snowmint::Layout::TWITTER).build()?;
/// assert_eq!(generator.stats().clock_rollbacks, 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Times a caller found the clock behind the newest tick issued.
    pub clock_rollbacks: u64,
    /// Times a caller parked until a later tick (sequence spent, or clock behind).
    pub tick_waits: u64,
    /// High-water marks written to the store.
    pub reservations: u64,
    /// Requests the rollback policy refused because the clock was behind (`refuse`, or a
    /// wait longer than the policy's bound).
    pub rollback_refusals: u64,
    /// Waits for a clock that was behind (`wait`, and `spare` once its numbers are spent).
    pub rollback_waits: u64,
    /// Milliseconds spent in those waits, all together.
    pub rollback_wait_ms: u64,
    /// Ticks the `logical` policy issued ahead of a clock that was behind.
    pub logical_ticks: u64,
    /// Ids the `spare` policy issued from the newest tick's unused sequence numbers while
    /// the clock was behind.
    pub spare_ids: u64,
}

#[derive(Debug, Default)]
struct Counters {
    clock_rollbacks: AtomicU64,
    tick_waits: AtomicU64,
    reservations: AtomicU64,
    rollback_refusals: AtomicU64,
    rollback_waits: AtomicU64,
    rollback_wait_ms: AtomicU64,
    logical_ticks: AtomicU64,
    /// The newest tick the logical policy issued ahead of the clock: each tick counts once.
    newest_logical_tick: AtomicU64,
    spare_ids: AtomicU64,
}

/// What [`Generator::take`] did.
enum Take {
    /// Took `len` slots from `slot` on.
    Taken { slot: u64, len: u64 },
    /// Nothing to take before tick `until`; `behind`: the clock is behind it, within the
    /// policy's bound (else the sequence of the tick before is spent).
    Wait { until: u64, behind: bool },
}

/// What to do with a slot whose tick is ahead of the clock.
enum SlotAction {
    Issue,
    /// Issue ahead of a clock that is behind: the slot is on the logical clock's tick.
    Logical,
    /// Issue: the slot is a spare sequence number of the newest tick.
    Spare,
    /// Wait for this tick: the sequence of the one before is spent.
    WaitUntil(u64),
    /// Wait for this tick: the clock is behind it, within the policy's bound.
    WaitBehind(u64),
    Fail(IssueError),
}

/// Mints ids for one (datacenter, worker) of one layout. Share it by reference across
/// threads: every method takes `&self` and none takes a lock on the way to an id.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use snowmint::{Generator, Layout};
///
/// let generator = Arc::new(Generator::builder(Layout::TWITTER).datacenter(1).worker(2).build()?);
/// let handles: Vec<_> = (0..2)
///     .map(|_| {
///         let g = Arc::clone(&generator);
///         std::thread::spawn(move || (0..1000).map(|_| g.next_id()).collect::<Result<Vec<_>, _>>())
///     })
///     .collect();
/// let mut all = Vec::new();
/// for h in handles {
///     all.extend(h.join().unwrap()?);
/// }
/// all.sort();
/// all.dedup();
/// assert_eq!(all.len(), 2000);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Generator<C: Clock = SystemClock> {
    /// What every id touches after reading the clock: the counter's line and the next.
    hot: Hot,
    /// The clock never goes back ([`Clock::never_goes_back`]): the newest tick seen need not
    /// be recorded to tell a clock that went back from a spent sequence.
    monotonic: bool,
    /// Ids with a tick at or below this may be issued (the store's reservation).
    reserved: AtomicU64,
    /// Ids may be issued while the clock's tick is at or below this (a lease's validity).
    fence: AtomicU64,
    epoch_ms: u64,
    tick_ms: u64,
    max_tick: u64,
    lead_ticks: u64,
    ahead_ticks: u64,
    layout: Layout,
    datacenter: u64,
    worker: u64,
    rollback: RollbackPolicy,
    sequence_start: SequenceStart,
    mode: ClockMode,
    /// `counter` mode: the tick is the counter's carry, never the clock's.
    counts: bool,
    /// The lease's fence is measured on the clock's steady reading, off the fast path: the
    /// time field's clock may step (`wall`) or is no clock at all (`counter`).
    fence_apart: bool,
    salt: u64,
    clock: C,
    store: Option<Arc<dyn Store>>,
    reserve_lock: Mutex<()>,
    closed: AtomicBool,
    counters: Counters,
}

impl std::fmt::Debug for dyn Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Store")
    }
}

/// How much longer than planned a wait may take on the steady clock before the clock is
/// taken to have gone back during it: a clock's milliseconds and the steady clock's are read
/// apart, and a sleeping thread wakes late.
const WAIT_SLACK_MS: u64 = 5;

/// splitmix64's finalizer: spreads the bits of a tick into a random-looking start.
const fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl<C: Clock> Generator<C> {
    /// The next id. Parks the thread (never spins) while the current tick's sequence is
    /// spent, or while the rollback policy waits for the clock.
    ///
    /// # Errors
    ///
    /// The clock is behind and the rollback policy refuses (or would wait too long), the
    /// clock is outside the layout's range, the store cannot record a reservation (or
    /// grants one that ends too soon), the lease is not confirmed for now, or the generator
    /// was shut down: see [`IssueError`].
    ///
    /// # Examples
    ///
    /// ```
    /// let g = snowmint::Generator::builder(snowmint::Layout::TWITTER).build()?;
    /// assert!(g.next_id()? < g.next_id()?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline(always)]
    pub fn next_id(&self) -> Result<Id, IssueError> {
        let now = self.now_tick();
        let slot = self.hot.state.fetch_add(1, SeqCst);
        let tick = slot >> self.hot.seq_bits;
        if now <= self.hot.limit.load(SeqCst) && tick == now {
            return Ok(self.compose_in(tick, slot));
        }
        self.next_id_apart(slot, tick, now)
    }

    /// The fast path of a fence measured apart from the time field (`wall`, `counter`),
    /// which `limit` keeps off the one above: reached only once that one failed, so it
    /// costs the default mode nothing. A slot in the clock's tick (any slot, for a counter)
    /// within the reservation, while the steady clock is within the fence: what the slow
    /// path would decide for it, in fewer steps.
    #[inline(always)]
    fn next_id_apart(&self, slot: u64, tick: u64, now: u64) -> Result<Id, IssueError> {
        let apart = self.hot.apart;
        if apart != Apart::No
            && (tick == now || apart == Apart::Counting)
            && tick <= self.hot.apart_limit.load(SeqCst)
            && self.clock.steady_ms() < self.hot.fence_ms.load(SeqCst)
        {
            return Ok(self.compose_in(tick, slot));
        }
        self.next_id_slow(slot, now)
    }

    #[cold]
    #[inline(never)]
    fn next_id_slow(&self, mut slot: u64, mut now: u64) -> Result<Id, IssueError> {
        if self.counts {
            // The counter's carry is the tick: every slot taken is the next id.
            self.check_tick(slot >> self.hot.seq_bits)?;
            return self.issue(slot);
        }
        loop {
            let tick = slot >> self.hot.seq_bits;
            if tick < now {
                // The counter lags the clock: move it to the clock's tick.
                self.check_tick(now)?;
                let fresh = self.fresh_slot(now, slot);
                if self
                    .hot
                    .state
                    .compare_exchange(slot + 1, fresh + 1, SeqCst, SeqCst)
                    .is_ok()
                {
                    self.moved(now);
                    // What the fast path checks, read after the counter moved, as there.
                    if now <= self.hot.limit.load(SeqCst) {
                        return Ok(self.compose(fresh));
                    }
                    return self.issue(fresh);
                }
                slot = self.hot.state.fetch_add(1, SeqCst);
                now = self.now_tick();
                continue;
            }
            self.check_tick(tick)?;
            return match self.judge(tick, now) {
                SlotAction::Issue | SlotAction::Logical => self.issue(slot),
                SlotAction::Spare => {
                    self.counters.spare_ids.fetch_add(1, SeqCst);
                    self.issue(slot)
                }
                SlotAction::WaitUntil(until) if self.wait_for(until) => self.issue(slot),
                SlotAction::WaitBehind(until) if self.wait_behind(until) => self.issue(slot),
                SlotAction::WaitUntil(_) | SlotAction::WaitBehind(_) => {
                    // The clock went back during the wait: what the policy says of the
                    // slot, with the clock as it reads now, decides again.
                    now = self.now_tick();
                    continue;
                }
                SlotAction::Fail(err) => {
                    // Hand the slot back if nobody took one since; burning it is safe too.
                    let _ = self
                        .hot
                        .state
                        .compare_exchange(slot + 1, slot, SeqCst, SeqCst);
                    Err(err)
                }
            };
        }
    }

    /// The next id if one may be issued now; otherwise the tick to wait for. Never waits
    /// for time (a store reservation, when due, is still written).
    ///
    /// # Errors
    ///
    /// As [`Generator::next_id`], except that waits are returned as [`Poll::Pending`].
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::{Generator, Layout, ManualClock, Poll};
    ///
    /// let clock = ManualClock::new(Layout::SONYFLAKE.epoch_ms() + 1_000);
    /// let g = Generator::builder(Layout::SONYFLAKE).clock(&clock).build()?;
    /// for _ in 0..256 {
    ///     assert!(matches!(g.try_next_id()?, Poll::Ready(_)));
    /// }
    /// // 256 ids per 10 ms tick: the 257th must wait for tick 101.
    /// assert!(matches!(g.try_next_id()?, Poll::Pending { tick: 101, .. }));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_next_id(&self) -> Result<Poll, IssueError> {
        match self.take(1)? {
            Take::Taken { slot, .. } => self.issue(slot).map(Poll::Ready),
            Take::Wait { until, behind } => Ok(self.pending(until, behind)),
        }
    }

    /// Reserves up to `n` consecutive ids in one step (at least one, and at most what is left
    /// of the tick), waiting like [`Generator::next_id`] when nothing is left.
    ///
    /// # Errors
    ///
    /// As [`Generator::next_id`]; and [`IssueError::ZeroBatch`] for `n == 0`, which takes
    /// nothing: a batch always holds at least one id, so every call that succeeds makes
    /// progress and its [`IdRange::first`] is an id that was issued.
    ///
    /// # Examples
    ///
    /// ```
    /// let g = snowmint::Generator::builder(snowmint::Layout::TWITTER).build()?;
    /// let mut total = 0;
    /// while total < 10_000 {
    ///     total += g.next_batch(10_000 - total)?.len();
    /// }
    /// assert_eq!(total, 10_000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn next_batch(&self, n: u64) -> Result<IdRange, IssueError> {
        if n == 0 {
            return Err(IssueError::ZeroBatch);
        }
        loop {
            match self.take(n)? {
                Take::Taken { slot, len } => {
                    let first = self.issue(slot)?;
                    return Ok(IdRange {
                        first,
                        len,
                        step: 1 << self.hot.sequence_shift,
                    });
                }
                Take::Wait {
                    until,
                    behind: false,
                } => {
                    self.wait_for(until);
                }
                Take::Wait {
                    until,
                    behind: true,
                } => {
                    self.wait_behind(until);
                }
            }
        }
    }

    /// Takes up to `want` consecutive slots of one tick with one compare-and-swap (at least
    /// one, at most what is left of the tick), or says which tick to wait for: the step
    /// [`Generator::try_next_id`] and [`Generator::next_batch`] share. Counts a tick's start
    /// and the spare ids taken.
    #[inline]
    fn take(&self, want: u64) -> Result<Take, IssueError> {
        loop {
            let now = self.now_tick();
            let current = self.hot.state.load(SeqCst);
            let (slot, fresh) = self.candidate(current, now)?;
            let tick = slot >> self.hot.seq_bits;
            let spare = match self.judge(tick, now) {
                SlotAction::Issue | SlotAction::Logical => false,
                SlotAction::Spare => true,
                SlotAction::WaitUntil(until) => {
                    return Ok(Take::Wait {
                        until,
                        behind: false,
                    });
                }
                SlotAction::WaitBehind(until) => {
                    return Ok(Take::Wait {
                        until,
                        behind: true,
                    });
                }
                SlotAction::Fail(err) => return Err(err),
            };
            let room = self.hot.seq_mask - (slot & self.hot.seq_mask) + 1;
            let len = want.min(room);
            if self
                .hot
                .state
                .compare_exchange(current, slot + len, SeqCst, SeqCst)
                .is_ok()
            {
                if fresh {
                    self.moved(now);
                }
                if spare {
                    self.counters.spare_ids.fetch_add(len, SeqCst);
                }
                return Ok(Take::Taken { slot, len });
            }
        }
    }

    /// The slot a compare-and-swap would take from `current`, and whether it starts a tick.
    fn candidate(&self, current: u64, now: u64) -> Result<(u64, bool), IssueError> {
        if current >> self.hot.seq_bits < now && !self.counts {
            self.check_tick(now)?;
            return Ok((self.fresh_slot(now, current), true));
        }
        self.check_tick(current >> self.hot.seq_bits)?;
        Ok((current, false))
    }

    /// Decides about a slot in `tick` when the clock reads `now`, and counts what the
    /// rollback policy does.
    fn judge(&self, tick: u64, now: u64) -> SlotAction {
        let verdict = self.verdict(tick, now);
        let c = &self.counters;
        match verdict {
            SlotAction::Issue | SlotAction::WaitUntil(_) => return verdict,
            SlotAction::Fail(_) => {
                c.rollback_refusals.fetch_add(1, SeqCst);
            }
            SlotAction::Logical => {
                // Each tick of the logical clock counts once, however many ids it holds.
                if c.newest_logical_tick.fetch_max(tick, SeqCst) < tick {
                    c.logical_ticks.fetch_add(1, SeqCst);
                }
            }
            // Counted as they happen.
            SlotAction::Spare | SlotAction::WaitBehind(_) => {}
        }
        c.clock_rollbacks.fetch_add(1, SeqCst);
        verdict
    }

    /// What the policies say about a slot in `tick` when the clock reads `now`; counts
    /// nothing.
    fn verdict(&self, tick: u64, now: u64) -> SlotAction {
        if self.counts || tick <= now.saturating_add(self.lead_ticks) {
            return SlotAction::Issue;
        }
        let seen = self.hot.seen.load(SeqCst);
        // Read again after `seen`: whoever raised `seen` published the clock first, so a
        // stale first reading is not mistaken for a rollback.
        let now = now.max(self.now_tick());
        if tick <= now.saturating_add(self.lead_ticks) {
            return SlotAction::Issue;
        }
        let until = tick - self.lead_ticks;
        if now >= seen {
            // The clock has not gone back: the tick's sequence is spent.
            return SlotAction::WaitUntil(until);
        }
        let behind_ms = (tick - now).saturating_mul(self.tick_ms);
        let wait = |max: Duration| {
            let max_wait_ms = crate::whole_ms(max);
            if behind_ms <= max_wait_ms {
                SlotAction::WaitBehind(until)
            } else if max_wait_ms == 0 {
                SlotAction::Fail(IssueError::ClockBehind { behind_ms })
            } else {
                SlotAction::Fail(IssueError::BehindTooFar {
                    behind_ms,
                    max_wait_ms,
                })
            }
        };
        match self.rollback {
            RollbackPolicy::Refuse => SlotAction::Fail(IssueError::ClockBehind { behind_ms }),
            RollbackPolicy::WaitUpTo(max) => wait(max),
            RollbackPolicy::LogicalClock => SlotAction::Logical,
            RollbackPolicy::SpareSequence { .. } if tick <= seen => SlotAction::Spare,
            RollbackPolicy::SpareSequence { then_wait_up_to } => wait(then_wait_up_to),
        }
    }

    /// Waits for `tick` to start, for as long as that is from now on the steady clock (and
    /// a little more); returns whether it started, false if the clock went back meanwhile.
    fn wait_for(&self, tick: u64) -> bool {
        self.counters.tick_waits.fetch_add(1, SeqCst);
        let target = self.layout.unix_ms_at(tick);
        let planned = target.saturating_sub(self.clock.now_ms());
        let within = Duration::from_millis(planned.saturating_add(WAIT_SLACK_MS));
        let reached = self.clock.sleep_until_ms_within(target, within);
        if reached {
            self.saw(tick);
        }
        reached
    }

    /// Waits for a clock that is behind, and counts the wait and its length.
    fn wait_behind(&self, tick: u64) -> bool {
        let start = self.clock.steady_ms();
        let reached = self.wait_for(tick);
        let c = &self.counters;
        c.rollback_waits.fetch_add(1, SeqCst);
        c.rollback_wait_ms
            .fetch_add(self.clock.steady_ms().saturating_sub(start), SeqCst);
        reached
    }

    /// The refusal the next id would meet now, if the rollback policy would refuse it: the
    /// clock is behind the newest id issued, and the policy neither waits that long nor
    /// issues ahead. Takes nothing, waits for nothing and counts nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::{Generator, IssueError, Layout, ManualClock, RollbackPolicy};
    ///
    /// let clock = ManualClock::new(1_800_000_000_000);
    /// let g = Generator::builder(Layout::TWITTER)
    ///     .clock(&clock)
    ///     .rollback(RollbackPolicy::Refuse)
    ///     .build()?;
    /// g.next_id()?;
    /// assert!(g.refusal().is_none());
    /// clock.step_back(3_000);
    /// assert!(matches!(g.refusal(), Some(IssueError::ClockBehind { behind_ms: 3_000 })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn refusal(&self) -> Option<IssueError> {
        let now = self.now_tick();
        let next = self.hot.state.load(SeqCst) >> self.hot.seq_bits;
        if next < now {
            return None;
        }
        match self.verdict(next, now) {
            SlotAction::Fail(err) => Some(err),
            _ => None,
        }
    }

    /// Makes sure the fence and the store cover `slot`, then composes its id.
    #[inline]
    fn issue(&self, slot: u64) -> Result<Id, IssueError> {
        let fence = self.fence.load(SeqCst);
        if self.steady_tick() > fence {
            return Err(IssueError::Fenced {
                until_ms: self.layout.unix_ms_at(fence.saturating_add(1)),
            });
        }
        let tick = slot >> self.hot.seq_bits;
        if tick > self.reserved.load(SeqCst) {
            self.reserve(tick)?;
        }
        Ok(self.compose(slot))
    }
    #[inline]
    fn now_tick(&self) -> u64 {
        // Before the epoch this wraps to a huge tick, which `check_tick` refuses.
        let since = self.clock.now_ms().wrapping_sub(self.epoch_ms);
        if self.tick_ms == 1 {
            since
        } else {
            since / self.tick_ms
        }
    }

    /// The tick by the clock's steady reading: what a lease's fence is measured on.
    #[inline]
    fn steady_tick(&self) -> u64 {
        if !self.fence_apart {
            return self.now_tick();
        }
        self.clock.steady_ms().wrapping_sub(self.epoch_ms) / self.tick_ms
    }

    fn check_tick(&self, tick: u64) -> Result<(), IssueError> {
        if tick <= self.max_tick {
            return Ok(());
        }
        let now_ms = self.clock.now_ms();
        Err(IssueError::TimeOutOfRange {
            // Before the epoch the tick wrapped around: the clock's own reading is the news.
            unix_ms: if now_ms < self.epoch_ms {
                now_ms
            } else {
                self.layout.unix_ms_at(tick)
            },
            first_ms: self.epoch_ms,
            last_ms: self.tick_end_ms(self.max_tick),
        })
    }

    fn fresh_slot(&self, tick: u64, previous: u64) -> u64 {
        let start = match self.sequence_start {
            SequenceStart::Zero => 0,
            SequenceStart::Random { below } if below > 1 => mix(tick ^ self.salt) % below,
            SequenceStart::Random { .. } => 0,
            SequenceStart::Continue => previous & self.hot.seq_mask,
        };
        tick << self.hot.seq_bits | start
    }

    /// After the counter was moved to the clock's tick `now`: for a clock that may go back,
    /// records the newest tick seen (a second locked instruction on the first id of a tick,
    /// which a clock that never goes back does without).
    fn moved(&self, now: u64) {
        if !self.monotonic {
            self.saw(now);
        }
    }

    fn saw(&self, tick: u64) {
        if self.hot.seen.load(SeqCst) < tick {
            self.hot.seen.fetch_max(tick, SeqCst);
        }
    }

    #[inline]
    fn compose(&self, slot: u64) -> Id {
        self.compose_in(slot >> self.hot.seq_bits, slot)
    }

    /// [`Generator::compose`] for a slot whose tick the caller has already taken out.
    #[inline(always)]
    fn compose_in(&self, tick: u64, slot: u64) -> Id {
        Id::from_u64(
            tick << self.hot.timestamp_shift
                | self.hot.node
                | (slot & self.hot.seq_mask) << self.hot.sequence_shift,
        )
    }

    fn tick_end_ms(&self, tick: u64) -> u64 {
        self.layout.unix_ms_at(tick + 1) - 1
    }

    /// The layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The datacenter id.
    pub fn datacenter(&self) -> u64 {
        self.datacenter
    }

    /// The worker id.
    pub fn worker(&self) -> u64 {
        self.worker
    }

    /// The clock.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// Where the time field of the ids comes from.
    pub fn mode(&self) -> ClockMode {
        self.mode
    }

    /// The rollback policy.
    pub fn rollback(&self) -> RollbackPolicy {
        self.rollback
    }

    /// How far the clock is behind the next id's tick, in ms: 0 while ids can be issued at
    /// once. After a restart behind the high-water mark, the time left until it passes.
    ///
    /// # Examples
    ///
    /// ```
    /// let g = snowmint::Generator::builder(snowmint::Layout::TWITTER).build()?;
    /// assert_eq!(g.clock_lag_ms(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn clock_lag_ms(&self) -> u64 {
        if self.counts {
            return 0;
        }
        let next = self.hot.state.load(SeqCst) >> self.hot.seq_bits;
        let now = self.now_tick();
        next.saturating_sub(now.saturating_add(self.lead_ticks))
            .saturating_mul(self.tick_ms)
    }

    /// Counts of slow events so far.
    pub fn stats(&self) -> Stats {
        Stats {
            clock_rollbacks: self.counters.clock_rollbacks.load(SeqCst),
            tick_waits: self.counters.tick_waits.load(SeqCst),
            reservations: self.counters.reservations.load(SeqCst),
            rollback_refusals: self.counters.rollback_refusals.load(SeqCst),
            rollback_waits: self.counters.rollback_waits.load(SeqCst),
            rollback_wait_ms: self.counters.rollback_wait_ms.load(SeqCst),
            logical_ticks: self.counters.logical_ticks.load(SeqCst),
            spare_ids: self.counters.spare_ids.load(SeqCst),
        }
    }
}

impl<C: Clock> Drop for Generator<C> {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

#[cfg(test)]
mod layout_tests {
    use super::Hot;
    use std::mem::{align_of, offset_of, size_of};

    #[test]
    fn the_counter_has_a_line_to_itself_and_what_ids_read_after_it_the_next() {
        assert_eq!(align_of::<Hot>(), 128);
        assert_eq!(size_of::<Hot>(), 128);
        assert_eq!(offset_of!(Hot, state), 0);
        assert!(offset_of!(Hot, seen) < 64);
        for offset in [
            offset_of!(Hot, limit),
            offset_of!(Hot, apart_limit),
            offset_of!(Hot, fence_ms),
            offset_of!(Hot, apart),
            offset_of!(Hot, seq_mask),
            offset_of!(Hot, node),
            offset_of!(Hot, seq_bits),
            offset_of!(Hot, timestamp_shift),
            offset_of!(Hot, sequence_shift),
        ] {
            assert!((64..128).contains(&offset), "{offset}");
        }
    }
}
