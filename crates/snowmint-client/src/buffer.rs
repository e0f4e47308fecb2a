//! The double buffer: the batch takers draw from, the batch fetched behind it, and the slow
//! path between them.
//!
//! A take is one `fetch_add` on the current batch's cursor ([`Segment::take`]). Only when
//! that batch is used up or too old does a taker lock the buffer's state, to put the next
//! batch in its place or to wait for one; the refill task fills the place behind it.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use tokio::sync::Notify;

use crate::Error;
use crate::segment::{Retired, Segment, Taken};
use crate::stats::{Counters, Stats};

/// What the buffer needs of the client's settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sizing {
    pub(crate) max_age: Duration,
    pub(crate) min_batch: usize,
    pub(crate) max_batch: usize,
    pub(crate) monotonic: bool,
}

impl Sizing {
    /// The shortest a batch should last: an eighth of the max age. A batch lasts between
    /// this and twice this; the one behind it is fetched a tenth into it and lasts as long,
    /// so its last id is handed out about half a max age after its call, at most: the size
    /// follows the rate one batch late, and a rate that halves meanwhile still fits.
    fn lifetime(&self) -> Duration {
        self.max_age / 8
    }
}

pub(crate) struct Buffer {
    current: ArcSwap<Segment>,
    state: Mutex<State>,
    /// Takes to the refill task: a batch is wanted.
    pub(crate) wanted: Notify,
    /// The refill task to waiting takes: a round of calls ended.
    ended: Notify,
    pub(crate) counters: Counters,
    sizing: Sizing,
}

struct State {
    /// The batch fetched behind the current one.
    next: Option<Arc<Segment>>,
    /// Rounds of calls ended.
    rounds: u64,
    /// Why the last round ended without ids, if it did.
    failure: Option<Error>,
    /// Ids to ask for next.
    batch: usize,
    /// When the current batch was installed.
    installed: Instant,
    /// The highest id a take has reached in a batch that is retired.
    floor: Option<u64>,
    /// The endpoint of the current batch, once there was one.
    endpoint: Option<usize>,
    /// The batch the current one replaced, for the refill task to free: freeing a large
    /// batch returns its memory to the system, tens of microseconds a taker need not wait.
    spent: Option<Arc<Segment>>,
}

/// What the slow path found.
#[derive(Debug)]
pub(crate) enum Step {
    /// The current batch may have ids: take again.
    Retry,
    /// Nothing buffered; a round of calls is under way. Wait for [`Buffer::ended`], then
    /// step again with this round count.
    Wait(u64),
    /// Nothing buffered, and the round ended since the wait began brought no ids.
    Failed(Error),
}

impl Buffer {
    pub(crate) fn new(sizing: Sizing, now: Instant) -> Buffer {
        Buffer {
            current: ArcSwap::from_pointee(Segment::empty(now)),
            state: Mutex::new(State {
                next: None,
                rounds: 0,
                failure: None,
                batch: sizing.min_batch,
                installed: now,
                floor: None,
                endpoint: None,
                spent: None,
            }),
            wanted: Notify::new(),
            ended: Notify::new(),
            counters: Counters::default(),
            sizing,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing under the lock panics midway; a poisoned state is still whole.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// One id as of `now`, if the current batch has a fresh one: the fast path.
    #[inline]
    pub(crate) fn try_take(&self, now: Instant) -> Option<u64> {
        let segment = self.current.load();
        match segment.take(1, now) {
            Taken::Ids { from, refill, .. } => {
                if refill {
                    self.wanted.notify_one();
                }
                Some(segment.id(from))
            }
            Taken::Stale { from, to } => {
                Counters::add(&self.counters.stale, to - from);
                None
            }
            Taken::Exhausted => None,
        }
    }

    /// Up to `n` ids as of `now` into `out`, from the current batch; how many.
    pub(crate) fn try_take_many(&self, n: usize, now: Instant, out: &mut Vec<u64>) -> usize {
        let segment = self.current.load();
        match segment.take(n, now) {
            Taken::Ids { from, to, refill } => {
                if refill {
                    self.wanted.notify_one();
                }
                out.extend_from_slice(segment.ids(from, to));
                to - from
            }
            Taken::Stale { from, to } => {
                Counters::add(&self.counters.stale, to - from);
                0
            }
            Taken::Exhausted => 0,
        }
    }

    /// The slow path, after a take found nothing: moves the buffer on, or asks for a batch.
    /// `waited` is the round count of the wait that came before, if one did.
    pub(crate) fn step(&self, now: Instant, waited: Option<u64>) -> Step {
        let mut state = self.lock();
        if self.advance(&mut state, now) {
            return Step::Retry;
        }
        if let (Some(since), Some(failure)) = (waited, &state.failure)
            && state.rounds > since
        {
            return Step::Failed(failure.clone());
        }
        self.wanted.notify_one();
        Step::Wait(state.rounds)
    }

    /// When the current batch is used up or stale, retires it and puts the batch behind in
    /// its place, if that one is fresh. Whether the current batch may have fresh ids now.
    fn advance(&self, state: &mut State, now: Instant) -> bool {
        let current = self.current.load_full();
        if current.remaining() > 0 && now < current.expires() {
            return true;
        }
        if let Some(retired) = current.retire() {
            self.account(state, &current, retired, now);
        }
        let Some(next) = state.next.take() else {
            return false;
        };
        if now >= next.expires() {
            Counters::add(&self.counters.stale, next.remaining());
            return false;
        }
        if self.sizing.monotonic
            && let Some(floor) = state.floor
        {
            Counters::add(&self.counters.out_of_order, next.skip_through(floor));
        }
        let skipped = next.refill_skipped();
        state.installed = now;
        state.endpoint = Some(next.endpoint());
        state.spent = Some(self.current.swap(next));
        if skipped {
            self.wanted.notify_one();
        }
        true
    }

    /// Counts what a retired batch left and sizes the next batch by how long this one
    /// lasted, as Leaf sizes its segments: twice its size when it lasted less than the
    /// lifetime aimed at, half when it lasted more than twice that or went stale.
    fn account(&self, state: &mut State, segment: &Segment, retired: Retired, now: Instant) {
        Counters::add(&self.counters.stale, retired.stale as usize);
        if let Some(last) = retired.last {
            state.floor = Some(state.floor.map_or(last, |floor| floor.max(last)));
        }
        if segment.len() == 0 || !retired.used {
            return;
        }
        let lasted = now.saturating_duration_since(state.installed);
        let aim = self.sizing.lifetime();
        let size = segment.len();
        let next = if retired.stale > 0 || lasted > aim * 2 {
            size / 2
        } else if lasted < aim {
            size.saturating_mul(2)
        } else {
            size
        };
        state.batch = next.clamp(self.sizing.min_batch, self.sizing.max_batch);
    }

    /// Waits until a round of calls ends, having checked nothing is buffered.
    pub(crate) fn ended(&self) -> tokio::sync::futures::Notified<'_> {
        self.ended.notified()
    }

    /// How many ids the refill task should ask for now, if it should ask: when nothing
    /// fresh is fetched behind the current batch.
    pub(crate) fn wanted_batch(&self, now: Instant) -> Option<usize> {
        let mut state = self.lock();
        let spent = state.spent.take();
        let wanted = state.next.as_ref().is_none_or(|next| now >= next.expires());
        let batch = state.batch;
        drop(state);
        drop(spent);
        wanted.then_some(batch)
    }

    /// Ends a round of calls at `now`: its batch goes behind the current one (in place of
    /// a stale one), or its failure is kept for the takes waiting on it. A batch that
    /// arrives when the current one is used up takes its place at once, so the refill task
    /// can ask for the next without waiting for a take to install it.
    pub(crate) fn deliver(&self, outcome: Result<Segment, Error>, now: Instant) {
        let mut state = self.lock();
        state.rounds += 1;
        match outcome {
            Ok(segment) => {
                self.counters.refills.fetch_add(1, Relaxed);
                if let Some(old) = state.next.replace(Arc::new(segment)) {
                    Counters::add(&self.counters.stale, old.remaining());
                }
                state.failure = None;
                self.advance(&mut state, now);
            }
            Err(failure) => {
                self.counters.failed_rounds.fetch_add(1, Relaxed);
                state.failure = Some(failure);
            }
        }
        drop(state);
        self.ended.notify_waiters();
    }

    pub(crate) fn stats(&self, endpoints: &[String]) -> Stats {
        let state = self.lock();
        let current = self.current.load();
        let buffered = current.remaining() + state.next.as_ref().map_or(0, |n| n.remaining());
        let endpoint = state.endpoint.and_then(|i| endpoints.get(i).cloned());
        self.counters.snapshot(buffered as u64, endpoint)
    }
}

#[cfg(test)]
mod tests;
