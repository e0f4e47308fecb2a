//! Configuring a generator: a [`Builder`] checks every setting and reads the store's mark
//! once, then hands over a [`Generator`] ready to issue.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{Apart, Counters, Generator, Hot};
use crate::policy::{ClockMode, OverflowPolicy, RollbackPolicy, SequenceStart};
use crate::{BuildError, Clock, Layout, RangeError, Store, SystemClock};

/// Configures a [`Generator`]; see [`Generator::builder`].
#[derive(Debug)]
#[must_use]
pub struct Builder<C: Clock = SystemClock> {
    layout: Layout,
    datacenter: u64,
    worker: u64,
    clock: C,
    rollback: RollbackPolicy,
    overflow: OverflowPolicy,
    sequence_start: SequenceStart,
    store: Option<Arc<dyn Store>>,
    reserve_ahead: Duration,
    after_ms: Option<u64>,
    mode: ClockMode,
}

impl Generator<SystemClock> {
    /// Starts configuring a generator for `layout`, with datacenter 0, worker 0, the
    /// [`SystemClock`], the default policies, and no high-water-mark store.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::{Generator, Layout};
    ///
    /// let g = Generator::builder(Layout::TWITTER).datacenter(1).worker(7).build()?;
    /// assert_eq!((g.datacenter(), g.worker()), (1, 7));
    /// # Ok::<(), snowmint::BuildError>(())
    /// ```
    pub fn builder(layout: Layout) -> Builder<SystemClock> {
        Builder {
            layout,
            datacenter: 0,
            worker: 0,
            clock: SystemClock::new(),
            rollback: RollbackPolicy::default(),
            overflow: OverflowPolicy::default(),
            sequence_start: SequenceStart::default(),
            store: None,
            reserve_ahead: Duration::from_secs(1),
            after_ms: None,
            mode: ClockMode::Monotonic,
        }
    }
}

impl<C: Clock> Builder<C> {
    /// The datacenter id (default 0).
    pub fn datacenter(mut self, datacenter: u64) -> Self {
        self.datacenter = datacenter;
        self
    }

    /// The worker id (default 0).
    pub fn worker(mut self, worker: u64) -> Self {
        self.worker = worker;
        self
    }

    /// Another clock: a [`ManualClock`](crate::ManualClock) in tests, a
    /// [`WallClock`](crate::WallClock) to follow NTP steps.
    pub fn clock<D: Clock>(self, clock: D) -> Builder<D> {
        Builder {
            layout: self.layout,
            datacenter: self.datacenter,
            worker: self.worker,
            clock,
            rollback: self.rollback,
            overflow: self.overflow,
            sequence_start: self.sequence_start,
            store: self.store,
            reserve_ahead: self.reserve_ahead,
            after_ms: self.after_ms,
            mode: self.mode,
        }
    }

    /// Where the time field comes from (default: [`ClockMode::Monotonic`]). The clock to
    /// read is given by [`Builder::clock`] ([`ModeClock`](crate::ModeClock) reads the mode's
    /// own); in [`ClockMode::Counter`] the time field is a counter instead, which starts
    /// above the store's mark (at tick 1 on a fresh one) and moves on one tick each time the
    /// sequence fills, and the clock bounds only the lease's fence. The store's
    /// reservations are then blocks of `reserve_ahead / tick_ms` ticks.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::{ClockMode, Generator, Layout};
    ///
    /// let g = Generator::builder(Layout::TWITTER).mode(ClockMode::Counter).build()?;
    /// let ids: Vec<_> = (0..5_000).map(|_| g.next_id()).collect::<Result<_, _>>()?;
    /// assert!(ids.windows(2).all(|w| w[0] < w[1]));
    /// // 4,096 ids per tick: the counter moved on one tick, whatever the time.
    /// let tick = |id| Layout::TWITTER.decode(id).map(|parts| parts.timestamp);
    /// assert_eq!((tick(ids[0])?, tick(ids[4_999])?), (1, 2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn mode(mut self, mode: ClockMode) -> Self {
        self.mode = mode;
        self
    }

    /// What to do when the clock is behind (default: wait up to 5 s).
    pub fn rollback(mut self, policy: RollbackPolicy) -> Self {
        self.rollback = policy;
        self
    }

    /// What to do when a tick's sequence is spent (default: wait for the next tick).
    pub fn overflow(mut self, policy: OverflowPolicy) -> Self {
        self.overflow = policy;
        self
    }

    /// Where each tick's sequence starts (default: zero).
    pub fn sequence_start(mut self, start: SequenceStart) -> Self {
        self.sequence_start = start;
        self
    }

    /// A high-water-mark store: read once at build, written ahead of the ids issued.
    pub fn store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// How far ahead of the id being issued a reservation reaches (default 1 s). Longer
    /// means fewer writes; after a crash, a restart waits out at most this much.
    pub fn reserve_ahead(mut self, ahead: Duration) -> Self {
        self.reserve_ahead = ahead;
        self
    }

    /// Never issue an id whose time is at or before `unix_ms`: a mark handed over by a
    /// worker-id lease, on top of the store's own.
    pub fn after_ms(mut self, unix_ms: u64) -> Self {
        self.after_ms = Some(self.after_ms.map_or(unix_ms, |m| m.max(unix_ms)));
        self
    }

    /// Checks the configuration without building anything: the layout can generate, the
    /// datacenter and worker ids and the random start bound are in range. [`build`] runs
    /// the same checks first, then reads the store's mark.
    ///
    /// [`build`]: Builder::build
    ///
    /// # Errors
    ///
    /// As [`build`], except for the store's.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::{Generator, Layout};
    ///
    /// Generator::builder(Layout::TWITTER).worker(31).check()?;
    /// let err = Generator::builder(Layout::TWITTER).worker(40).check().unwrap_err();
    /// assert_eq!(err.to_string(), "worker id 40 is out of range 0..=31");
    /// # Ok::<(), snowmint::BuildError>(())
    /// ```
    pub fn check(&self) -> Result<(), BuildError> {
        let layout = self.layout;
        let end_ms = layout.unix_ms_at(max_tick(&layout).saturating_add(1));
        // A counter takes no time from the clock: only its own count can run out.
        if self.mode.tells_time() && self.clock.now_ms() >= end_ms {
            return Err(BuildError::RanOut {
                layout: layout.name(),
                end_ms,
            });
        }
        layout.check_node(self.datacenter, self.worker)?;
        let sequences = layout.max_sequence() + 1;
        if let SequenceStart::Random { below } = self.sequence_start
            && below > sequences
        {
            return Err(RangeError::Field {
                what: "random sequence start bound",
                value: below,
                max: sequences,
            }
            .into());
        }
        Ok(())
    }

    /// Validates the configuration, reads the store's mark, and returns the generator.
    ///
    /// # Errors
    ///
    /// A layout whose time field has run out, a datacenter or worker id out of range, a random start bound
    /// above the sequence count, a store that cannot be read, or a mark past the layout's
    /// range.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::{Generator, Layout};
    ///
    /// let err = Generator::builder(Layout::TWITTER).worker(40).build().unwrap_err();
    /// assert_eq!(err.to_string(), "worker id 40 is out of range 0..=31");
    /// assert!(Generator::builder(Layout::DISCORD).build()?.next_id()? > snowmint::Id::from_u64(0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build(self) -> Result<Generator<C>, BuildError> {
        self.check()?;
        let layout = self.layout;
        let stored = match &self.store {
            Some(store) => store.load().map_err(|source| BuildError::Load { source })?,
            None => None,
        };
        let mark = stored.max(self.after_ms);
        // The first tick that may be issued: after the mark's tick.
        let (floor, seen) = match mark {
            Some(ms) if ms >= layout.epoch_ms() => {
                let tick = layout.tick_at(ms).map_err(|err| match err {
                    RangeError::Time { last_ms, .. } => BuildError::MarkPastEnd {
                        mark_ms: ms,
                        last_ms,
                    },
                    other => other.into(),
                })?;
                if tick > max_tick(&layout) {
                    return Err(BuildError::MarkPastEnd {
                        mark_ms: ms,
                        last_ms: layout.unix_ms_at(max_tick(&layout) + 1) - 1,
                    });
                }
                (tick + 1, tick)
            }
            _ => (0, 0),
        };
        let counts = self.mode == ClockMode::Counter;
        // A counter's first tick is 1 at least: tick 0 is where "nothing reserved" stands.
        let floor = if counts { floor.max(1) } else { floor };
        let [
            timestamp_shift,
            datacenter_shift,
            worker_shift,
            sequence_shift,
        ] = layout.shifts();
        let seq_bits = u32::from(layout.bits().sequence);
        let fence_apart = counts || self.clock.steps();
        let tick_ms = layout.tick_ms();
        let reserved = if self.store.is_some() { 0 } else { u64::MAX };
        let lead_ticks = match self.overflow {
            OverflowPolicy::Wait => 0,
            OverflowPolicy::Borrow { lead } => crate::whole_ms(lead) / tick_ms,
        };
        Ok(Generator {
            hot: Hot {
                state: AtomicU64::new(floor << seq_bits),
                seen: AtomicU64::new(seen),
                _counter_line: [0; 6],
                limit: AtomicU64::new(if fence_apart { 0 } else { reserved }),
                apart_limit: AtomicU64::new(if fence_apart { reserved } else { 0 }),
                fence_ms: AtomicU64::new(u64::MAX),
                seq_mask: layout.max_sequence(),
                node: self.datacenter << datacenter_shift | self.worker << worker_shift,
                seq_bits: layout.bits().sequence,
                timestamp_shift,
                sequence_shift,
                apart: if counts {
                    Apart::Counting
                } else if fence_apart {
                    Apart::Stepping
                } else {
                    Apart::No
                },
            },
            monotonic: self.clock.never_goes_back(),
            reserved: AtomicU64::new(reserved),
            fence: AtomicU64::new(u64::MAX),
            epoch_ms: layout.epoch_ms(),
            tick_ms,
            max_tick: max_tick(&layout),
            lead_ticks,
            ahead_ticks: crate::whole_ms(self.reserve_ahead) / tick_ms,
            layout,
            datacenter: self.datacenter,
            worker: self.worker,
            rollback: self.rollback,
            sequence_start: self.sequence_start,
            mode: self.mode,
            counts,
            fence_apart,
            salt: RandomState::new().hash_one(floor),
            clock: self.clock,
            store: self.store,
            reserve_lock: Mutex::new(()),
            closed: AtomicBool::new(false),
            counters: Counters::default(),
        })
    }
}

/// The last tick a generator issues. The counter holds `tick << sequence_bits | sequence`
/// in 64 bits and keeps one bit above the last tick, so that slots taken past the end (each
/// refused) cannot wrap it around to tick 0. A layout whose timestamp and sequence fill all
/// 64 bits (Mastodon's, or a custom one with no datacenter or worker bits) generates for
/// the first half of its timestamp range.
pub(crate) fn max_tick(layout: &Layout) -> u64 {
    layout
        .max_timestamp()
        .min(u64::MAX >> layout.bits().sequence >> 1)
}
