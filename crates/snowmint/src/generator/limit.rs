//! What bounds the fast path: the store's reservation (ids up to a high-water mark written
//! ahead of them) and the lease's fence (ids only while the lease is certainly valid). The
//! fast path reads their minimum, `limit`, with one load; both move under one lock.

use std::sync::atomic::Ordering::SeqCst;

use super::Generator;
use crate::{Clock, IssueError, StoreError};

impl<C: Clock> Generator<C> {
    #[cold]
    pub(super) fn reserve(&self, tick: u64) -> Result<(), IssueError> {
        let _guard = self.reserve_lock.lock().unwrap_or_else(|e| e.into_inner());
        if self.closed.load(SeqCst) {
            return Err(IssueError::Closed);
        }
        let Some(store) = &self.store else {
            return Ok(());
        };
        if tick <= self.reserved.load(SeqCst) {
            return Ok(());
        }
        let until = tick.saturating_add(self.ahead_ticks).min(self.max_tick);
        let until_ms = self.tick_end_ms(until);
        let granted_ms = store
            .reserve(until_ms)
            .map_err(|source| IssueError::Reserve { until_ms, source })?;
        // The last tick that ends within the grant.
        let granted = ((granted_ms.saturating_add(1)).saturating_sub(self.epoch_ms) / self.tick_ms)
            .checked_sub(1);
        let until = match granted {
            Some(granted) if granted >= tick => until.min(granted),
            _ => {
                return Err(IssueError::ShortGrant {
                    granted_ms,
                    needed_ms: self.layout.unix_ms_at(tick),
                });
            }
        };
        self.counters.reservations.fetch_add(1, SeqCst);
        self.reserved.store(until, SeqCst);
        self.update_limit();
        Ok(())
    }

    /// Stops issuing ids and, if a store is attached, lowers its mark from the reservation
    /// to the newest id actually issued, so the next run need not wait out the reservation.
    /// Called by `Drop`; call it yourself to see the store's error.
    ///
    /// # Errors
    ///
    /// The store's own error, when it could not lower its mark (keeping the higher mark is
    /// safe): the only thing that can fail here.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::{Generator, IssueError, Layout};
    ///
    /// let g = Generator::builder(Layout::TWITTER).build()?;
    /// g.next_id()?;
    /// g.shutdown()?;
    /// assert!(matches!(g.next_id(), Err(IssueError::Closed)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shutdown(&self) -> Result<(), StoreError> {
        let _guard = self.reserve_lock.lock().unwrap_or_else(|e| e.into_inner());
        if self.closed.swap(true, SeqCst) {
            return Ok(());
        }
        // From here every caller takes the slow path and finds the generator closed.
        let reserved = self.reserved.swap(0, SeqCst);
        self.update_limit();
        let Some(store) = &self.store else {
            return Ok(());
        };
        if reserved == 0 {
            return Ok(());
        }
        // Every id issued came from a slot below the counter, and none past the reservation.
        let last_tick =
            (self.hot.state.load(SeqCst).saturating_sub(1) >> self.hot.seq_bits).min(reserved);
        store.release(self.tick_end_ms(reserved), self.tick_end_ms(last_tick))
    }

    /// Lets the generator issue ids only while its clock reads before `unix_ms`: the
    /// instant a worker-id lease could expire, less a safety margin. Renewals move it
    /// forward; when they stop, issuing stops at that instant, not when the failure is
    /// noticed. `u64::MAX` lifts the fence. Whole ticks only: a tick that would end after
    /// `unix_ms` is not issued.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use snowmint::{Generator, IssueError, Layout, ManualClock};
    ///
    /// let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    /// let g = Generator::builder(Layout::TWITTER).clock(Arc::clone(&clock)).build()?;
    /// g.set_valid_until_ms(1_800_000_000_100);
    /// assert!(g.next_id().is_ok());
    /// clock.advance(100);
    /// assert!(matches!(g.next_id(), Err(IssueError::Fenced { until_ms: 1_800_000_000_100 })));
    /// g.set_valid_until_ms(1_800_000_005_000); // renewed
    /// assert!(g.next_id().is_ok());
    /// # Ok::<(), snowmint::BuildError>(())
    /// ```
    pub fn set_valid_until_ms(&self, unix_ms: u64) {
        let (fence, fence_ms) = if unix_ms == u64::MAX {
            (u64::MAX, u64::MAX)
        } else {
            // The last tick that ends at or before `unix_ms`, by the steady clock, and the
            // first millisecond after it.
            let fence = (unix_ms.saturating_sub(self.epoch_ms) / self.tick_ms).saturating_sub(1);
            (fence, self.layout.unix_ms_at(fence.saturating_add(1)))
        };
        // Under the reservation lock, so `limit` is always the minimum of the two.
        let _guard = self.reserve_lock.lock().unwrap_or_else(|e| e.into_inner());
        self.fence.store(fence, SeqCst);
        self.hot.fence_ms.store(fence_ms, SeqCst);
        self.update_limit();
    }

    /// Recomputes the fast paths' limits; called with the reservation lock held. A fence
    /// measured apart from the time field keeps every id off the first fast path and
    /// bounds the second.
    pub(super) fn update_limit(&self) {
        let reserved = self.reserved.load(SeqCst);
        let (limit, apart_limit) = if self.fence_apart {
            (0, reserved)
        } else {
            (reserved.min(self.fence.load(SeqCst)), 0)
        };
        self.hot.limit.store(limit, SeqCst);
        self.hot.apart_limit.store(apart_limit, SeqCst);
    }
}
