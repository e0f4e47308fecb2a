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
mod tests {
    use super::*;

    const AGE: Duration = Duration::from_millis(1000);

    fn buffer(monotonic: bool, t0: Instant) -> Buffer {
        let sizing = Sizing {
            max_age: AGE,
            min_batch: 4,
            max_batch: 64,
            monotonic,
        };
        Buffer::new(sizing, t0)
    }

    fn batch(ids: impl IntoIterator<Item = u64>, sent: Instant, endpoint: usize) -> Segment {
        Segment::new(ids.into_iter().collect(), sent, AGE, 0.9, endpoint)
    }

    /// Takes one id as a caller would, stepping through the slow path, or says why not.
    fn take(b: &Buffer, now: Instant) -> Result<u64, Step> {
        let mut waited = None;
        loop {
            if let Some(id) = b.try_take(now) {
                return Ok(id);
            }
            match b.step(now, waited) {
                Step::Retry => {}
                Step::Wait(round) if waited.is_none() => waited = Some(round),
                other => return Err(other),
            }
        }
    }

    #[test]
    fn a_batch_delivered_behind_an_empty_buffer_is_installed_by_the_next_take() {
        let t0 = Instant::now();
        let b = buffer(false, t0);
        assert!(matches!(take(&b, t0), Err(Step::Wait(0))));
        assert_eq!(b.wanted_batch(t0), Some(4), "the smallest batch first");
        b.deliver(Ok(batch(100..104, t0, 0)), t0);
        // Put in place at once, so the next is wanted without waiting for a take.
        assert_eq!(b.wanted_batch(t0), Some(4), "the slot behind is free");
        let got: Vec<u64> = (0..4).map(|_| take(&b, t0).unwrap()).collect();
        assert_eq!(got, vec![100, 101, 102, 103]);
        let stats = b.stats(&["a".into()]);
        assert_eq!((stats.refills, stats.buffered), (1, 0));
        assert_eq!(stats.endpoint.as_deref(), Some("a"));
    }

    #[test]
    fn a_waiting_take_gets_the_failure_of_the_round_it_waited_for() {
        let t0 = Instant::now();
        let b = buffer(false, t0);
        let Err(Step::Wait(round)) = take(&b, t0) else {
            panic!("nothing buffered")
        };
        b.deliver(Err(Error::NoEndpoints), t0);
        match b.step(t0, Some(round)) {
            Step::Failed(Error::NoEndpoints) => {}
            _ => panic!("the round's failure"),
        }
        // A take arriving afterwards asks for a round of its own instead.
        assert!(matches!(b.step(t0, None), Step::Wait(1)));
    }

    #[test]
    fn stale_ids_are_thrown_away_and_counted_never_handed_out() {
        let t0 = Instant::now();
        let b = buffer(false, t0);
        b.deliver(Ok(batch(0..10, t0, 0)), t0);
        assert_eq!(take(&b, t0).ok(), Some(0));
        b.deliver(Ok(batch(10..20, t0 + AGE / 2, 0)), t0 + AGE / 2);
        // At the max age of the first batch: its 9 ids left go, the second batch serves.
        assert_eq!(take(&b, t0 + AGE).ok(), Some(10));
        assert_eq!(b.stats(&[]).discarded_stale, 9);
        // At the max age of the second: nothing fresh is left, and a round is asked for.
        assert!(matches!(take(&b, t0 + AGE * 2), Err(Step::Wait(_))));
        assert_eq!(b.stats(&[]).discarded_stale, 18);
    }

    #[test]
    fn a_batch_gone_stale_while_waiting_behind_is_thrown_away_whole() {
        let t0 = Instant::now();
        let b = buffer(false, t0);
        b.deliver(Ok(batch(0..10, t0, 0)), t0);
        assert!(matches!(take(&b, t0 + AGE), Err(Step::Wait(_))));
        assert_eq!(b.stats(&[]).discarded_stale, 10);
    }

    #[test]
    fn monotonic_skips_a_later_batch_at_or_below_the_last_id_taken() {
        let t0 = Instant::now();
        let b = buffer(true, t0);
        b.deliver(Ok(batch([100, 101, 102, 103], t0, 0)), t0);
        for want in 100..104 {
            assert_eq!(take(&b, t0).ok(), Some(want));
        }
        // A failover to a server whose clock is behind: its first ids are lower.
        b.deliver(Ok(batch([98, 99, 103, 104, 105], t0, 1)), t0);
        assert_eq!(take(&b, t0).ok(), Some(104));
        assert_eq!(b.stats(&[]).discarded_out_of_order, 3);

        let plain = buffer(false, t0);
        plain.deliver(Ok(batch([100], t0, 0)), t0);
        assert_eq!(take(&plain, t0).ok(), Some(100));
        plain.deliver(Ok(batch([98], t0, 1)), t0);
        assert_eq!(
            take(&plain, t0).ok(),
            Some(98),
            "without the option, lower ids pass"
        );
    }

    #[test]
    fn the_batch_size_doubles_while_batches_go_fast_and_halves_when_they_go_stale() {
        let t0 = Instant::now();
        let b = buffer(false, t0);
        let mut now = t0;
        let mut sizes = Vec::new();
        let mut next_id = 0;
        for _ in 0..6 {
            let size = b.wanted_batch(now).unwrap();
            sizes.push(size);
            b.deliver(Ok(batch(next_id..next_id + size as u64, now, 0)), now);
            next_id += size as u64;
            while take(&b, now).is_ok() {}
            now += Duration::from_millis(1);
        }
        assert_eq!(sizes, vec![4, 8, 16, 32, 64, 64], "up to max_batch");
        // A batch left to go stale: half the size next time.
        b.deliver(Ok(batch(next_id..next_id + 64, now, 0)), now);
        assert!(take(&b, now).is_ok());
        assert!(take(&b, now + AGE).is_err());
        assert_eq!(b.wanted_batch(now + AGE), Some(32));
    }

    #[test]
    fn a_fresh_batch_behind_is_kept_and_a_stale_one_fetched_again() {
        let t0 = Instant::now();
        let b = buffer(false, t0);
        b.deliver(Ok(batch(0..10, t0, 0)), t0);
        assert_eq!(take(&b, t0).ok(), Some(0));
        assert_eq!(b.wanted_batch(t0), Some(4), "nothing behind");
        b.deliver(Ok(batch(10..20, t0, 0)), t0);
        assert_eq!(b.wanted_batch(t0 + AGE / 2), None, "a fresh batch behind");
        assert_eq!(b.wanted_batch(t0 + AGE), Some(4), "a stale batch behind");
        b.deliver(Ok(batch(20..30, t0 + AGE, 0)), t0 + AGE);
        assert_eq!(
            b.stats(&[]).discarded_stale,
            19,
            "the stale batch behind, replaced, and the 9 ids left of the current one"
        );
        assert_eq!(take(&b, t0 + AGE).ok(), Some(20));
    }

    /// Draws `rate` ids a second for `secs` seconds of fake time with the default sizes,
    /// the refill task answering at once when asked: (ids handed out, thrown away as
    /// stale, batches fetched).
    fn simulate(rate: u64, secs: u64) -> (u64, u64, u64) {
        use std::future::Future;
        use std::task::{Context, Waker};

        let t0 = Instant::now();
        let sizing = Sizing {
            max_age: AGE,
            min_batch: crate::DEFAULT_MIN_BATCH,
            max_batch: crate::DEFAULT_MAX_BATCH,
            monotonic: false,
        };
        let b = Buffer::new(sizing, t0);
        let mut next_id = 0;
        let refill = |now: Instant, next_id: &mut u64| {
            while let Some(n) = b.wanted_batch(now) {
                b.deliver(Ok(batch(*next_id..*next_id + n as u64, now, 0)), now);
                *next_id += n as u64;
            }
        };
        let asked = || {
            let wanted = b.wanted.notified();
            std::pin::pin!(wanted)
                .poll(&mut Context::from_waker(Waker::noop()))
                .is_ready()
        };
        let mut taken = 0;
        for k in 0..rate * secs {
            let now = t0 + Duration::from_nanos(k * 1_000_000_000 / rate);
            while b.try_take(now).is_none() {
                match b.step(now, None) {
                    Step::Retry => {}
                    Step::Wait(_) => refill(now, &mut next_id),
                    Step::Failed(e) => panic!("{e}"),
                }
            }
            taken += 1;
            if asked() {
                refill(now, &mut next_id);
            }
        }
        let stats = b.stats(&[]);
        (taken, stats.discarded_stale, stats.refills)
    }

    /// The costs the crate's docs give, with the defaults (max age 1 s, smallest batch 64):
    /// below 128 ids/s, 2 calls a second and about 128 - rate ids thrown away a second; at
    /// 128 ids/s and above, none.
    #[test]
    fn staleness_costs_what_the_docs_say() {
        for (rate, secs) in [(10, 20), (100, 20), (128, 20), (1_000, 20), (100_000, 10)] {
            let (taken, stale, refills) = simulate(rate, secs);
            eprintln!(
                "{rate} ids/s for {secs} s: {taken} handed out, {stale} stale, {refills} batches"
            );
            assert_eq!(taken, rate * secs);
            if rate < 128 {
                let expected = (128 - rate) * secs;
                assert!(
                    stale.abs_diff(expected) <= expected / 10,
                    "{rate} ids/s: {stale} stale, about {expected} expected"
                );
                assert!(
                    refills.abs_diff(2 * secs) <= 2,
                    "{rate} ids/s: {refills} batches"
                );
            } else {
                assert_eq!(stale, 0, "{rate} ids/s");
            }
        }
    }
}
