//! Waiting for a tick on the caller's own timer.
//!
//! [`Generator::next_id`] parks its thread while a tick's sequence is spent or the clock is
//! behind. A caller that must not park a thread (an async server, where a parked worker
//! stalls every connection it serves and a thread for each waiting request soon runs out)
//! asks [`Generator::try_next_id`] instead, and on [`Poll::Pending`] waits on its own timer
//! for as long as [`Generator::begin_wait`] says, then asks again. Such a wait is counted in
//! the generator's [`Stats`](super::Stats) as `next_id` counts its own.

use std::sync::atomic::Ordering::SeqCst;
use std::time::Duration;

use super::Generator;
use crate::{Clock, Poll};

/// A wait for a tick that the caller does on its own timer, begun by
/// [`Generator::begin_wait`]. Dropping it ends the wait: one for a clock that went back is
/// then counted, with its length on the steady clock, in `rollback_waits` and
/// `rollback_wait_ms`.
#[must_use = "the wait ends, and is counted, when this is dropped"]
pub struct TickWait<'g, C: Clock> {
    generator: &'g Generator<C>,
    duration: Duration,
    behind: bool,
    started_ms: u64,
}

impl<C: Clock> std::fmt::Debug for TickWait<'_, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TickWait")
            .field("duration", &self.duration)
            .field("behind", &self.behind)
            .finish_non_exhaustive()
    }
}

impl<C: Clock> Generator<C> {
    /// What [`Generator::try_next_id`] answers when `tick` must be waited for.
    pub(super) fn pending(&self, tick: u64, behind: bool) -> Poll {
        Poll::Pending {
            tick,
            until_ms: self.layout.unix_ms_at(tick),
            behind,
        }
    }

    /// Begins a wait for `tick`, which [`Poll::Pending`] named along with `behind`, for a
    /// caller that waits on its own timer rather than parking its thread: counts it in
    /// `tick_waits` at once, as [`Generator::next_id`] counts a wait when it parks.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use snowmint::{Generator, Layout, ManualClock, Poll};
    ///
    /// let clock = ManualClock::new(Layout::SONYFLAKE.epoch_ms() + 1_000);
    /// let g = Generator::builder(Layout::SONYFLAKE).clock(&clock).build()?;
    /// for _ in 0..256 {
    ///     g.try_next_id()?;
    /// }
    /// let Poll::Pending { tick, behind, .. } = g.try_next_id()? else {
    ///     unreachable!("a 10 ms tick holds 256 ids")
    /// };
    /// let wait = g.begin_wait(tick, behind);
    /// assert_eq!(wait.duration(), Duration::from_millis(10));
    /// clock.advance(10); // an async caller sleeps on its runtime's timer here
    /// drop(wait);
    /// assert!(matches!(g.try_next_id()?, Poll::Ready(_)));
    /// assert_eq!(g.stats().tick_waits, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn begin_wait(&self, tick: u64, behind: bool) -> TickWait<'_, C> {
        self.counters.tick_waits.fetch_add(1, SeqCst);
        let planned_ms = self
            .layout
            .unix_ms_at(tick)
            .saturating_sub(self.clock.now_ms());
        TickWait {
            generator: self,
            // At least a millisecond: a clock read just before its tick starts would
            // otherwise send its caller back at once, again and again.
            duration: Duration::from_millis(planned_ms.max(1)),
            behind,
            started_ms: self.clock.steady_ms(),
        }
    }
}

impl<C: Clock> TickWait<'_, C> {
    /// How long to wait on a steady timer: until the clock shows the tick, by its reading
    /// when the wait began. Then ask [`Generator::try_next_id`] again. A clock that went
    /// back meanwhile is judged again as it then reads, so a wait never outlasts the gap it
    /// was planned for (as with [`Generator::next_id`], which bounds its own waits so).
    #[must_use]
    pub fn duration(&self) -> Duration {
        self.duration
    }
}

impl<C: Clock> Drop for TickWait<'_, C> {
    fn drop(&mut self) {
        if !self.behind {
            return;
        }
        let g = self.generator;
        let waited_ms = g.clock.steady_ms().saturating_sub(self.started_ms);
        g.counters.rollback_waits.fetch_add(1, SeqCst);
        g.counters.rollback_wait_ms.fetch_add(waited_ms, SeqCst);
    }
}
