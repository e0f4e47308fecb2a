//! One batch of ids from one call, handed out by a cursor: one `fetch_add` an id.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// A cursor value no take can reach: set when a segment is retired, so every later take
/// finds it exhausted. Half the range, so the takes still racing past it cannot wrap.
const RETIRED: usize = usize::MAX / 2;

/// A value on a cache line of its own: the takers' `fetch_add` on the cursor then does not
/// evict the fields every take reads.
#[repr(align(64))]
struct Padded<T>(T);

/// A batch of strictly increasing ids, all issued after `sent`.
pub(crate) struct Segment {
    cursor: Padded<AtomicUsize>,
    ids: Box<[u64]>,
    /// The take at this index asks for the next batch.
    refill_at: usize,
    /// After this, half the max age, a take asks for a batch behind this one if there is
    /// none (once): a batch installed late in its life then has the next on its way well
    /// before it goes stale.
    refresh_at: Instant,
    /// The call's send time plus the max age: the server issued every id here after it was
    /// sent, so from this instant on every id left may be older than the max age, and is
    /// thrown away.
    expires: Instant,
    refresh_asked: AtomicBool,
    /// Where the cursor started: ids below it were thrown away before any take.
    start: AtomicUsize,
    /// The endpoint that issued them, as an index into the client's endpoints.
    endpoint: usize,
}

/// What one take found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Taken {
    /// Ids `from..to` of the segment, fresh; `refill` asks for the next batch.
    Ids {
        from: usize,
        to: usize,
        refill: bool,
    },
    /// Ids `from..to` were taken but are too old; the segment's rest is as old.
    Stale { from: usize, to: usize },
    /// Nothing left.
    Exhausted,
}

/// How a segment ended, when it was retired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Retired {
    /// Ids no take reached, thrown away because they grew too old.
    pub(crate) stale: u64,
    /// The highest id a take reached, if any.
    pub(crate) last: Option<u64>,
    /// Whether any take reached an id (the segment was used, not skipped whole).
    pub(crate) used: bool,
}

impl Segment {
    /// Ids received for a call sent at `sent`. `refill_below` is the share of the batch left
    /// when a take asks for the next one; after half of `max_age` a take asks for a fresher
    /// one.
    pub(crate) fn new(
        ids: Vec<u64>,
        sent: Instant,
        max_age: Duration,
        refill_below: f64,
        endpoint: usize,
    ) -> Segment {
        let len = ids.len();
        // Ids to leave when the next batch is asked for; rounded, so that 0.9 of 100 is 90
        // and not one less for the float's last bit.
        #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
        #[allow(clippy::cast_sign_loss)]
        let keep = ((refill_below * len as f64).round() as usize).min(len);
        let refill_at = len - keep;
        Segment {
            cursor: Padded(AtomicUsize::new(0)),
            ids: ids.into_boxed_slice(),
            refill_at,
            refresh_at: sent + max_age / 2,
            expires: sent + max_age,
            refresh_asked: AtomicBool::new(false),
            start: AtomicUsize::new(0),
            endpoint,
        }
    }

    /// A segment with nothing in it, as the buffer starts.
    pub(crate) fn empty(now: Instant) -> Segment {
        Segment::new(Vec::new(), now, Duration::ZERO, 0.0, 0)
    }

    /// Takes up to `n` ids (at least 1) as of `now`: the one atomic step of the fast path.
    #[inline]
    pub(crate) fn take(&self, n: usize, now: Instant) -> Taken {
        let len = self.ids.len();
        // At most a segment's worth a step, so the cursor cannot wrap.
        let from = self.cursor.0.fetch_add(n.min(len.max(1)), Relaxed);
        if from >= len {
            return Taken::Exhausted;
        }
        let to = (from + n).min(len);
        if now >= self.expires {
            return Taken::Stale { from, to };
        }
        let mut refill = (from..to).contains(&self.refill_at);
        if now >= self.refresh_at
            && !self.refresh_asked.load(Relaxed)
            && !self.refresh_asked.swap(true, Relaxed)
        {
            refill = true;
        }
        Taken::Ids { from, to, refill }
    }

    /// The id at `index`, as a take returned it.
    #[inline]
    pub(crate) fn id(&self, index: usize) -> u64 {
        self.ids[index]
    }

    /// The ids `from..to`, as a take returned them.
    pub(crate) fn ids(&self, from: usize, to: usize) -> &[u64] {
        &self.ids[from..to]
    }

    /// Ends the segment: every later take finds it exhausted. `None` if it was retired
    /// before.
    pub(crate) fn retire(&self) -> Option<Retired> {
        let at = self.cursor.0.swap(RETIRED, Relaxed);
        if at >= RETIRED {
            return None;
        }
        let len = self.ids.len();
        let reached = at.min(len);
        let start = self.start.load(Relaxed);
        Some(Retired {
            stale: (len - reached) as u64,
            last: reached.checked_sub(1).map(|i| self.ids[i]),
            used: reached > start,
        })
    }

    /// Starts the cursor past every id at or below `floor`, before the segment is
    /// installed; returns how many ids that throws away.
    pub(crate) fn skip_through(&self, floor: u64) -> usize {
        let start = self.ids.partition_point(|&id| id <= floor);
        self.start.store(start, Relaxed);
        self.cursor.0.store(start, Relaxed);
        start
    }

    /// Whether the take that asks for the next batch was skipped over by
    /// [`Segment::skip_through`].
    pub(crate) fn refill_skipped(&self) -> bool {
        self.refill_at < self.start.load(Relaxed)
    }

    /// Ids not yet taken, of a segment still installed or waiting.
    pub(crate) fn remaining(&self) -> usize {
        self.ids.len().saturating_sub(self.cursor.0.load(Relaxed))
    }

    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    pub(crate) fn expires(&self) -> Instant {
        self.expires
    }

    pub(crate) fn endpoint(&self) -> usize {
        self.endpoint
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const AGE: Duration = Duration::from_millis(1000);

    fn segment(ids: Vec<u64>, sent: Instant) -> Segment {
        Segment::new(ids, sent, AGE, 0.9, 0)
    }

    #[test]
    fn takes_hand_out_each_id_once_in_order_then_nothing() {
        let t0 = Instant::now();
        let s = segment((10..20).collect(), t0);
        let mut got = Vec::new();
        loop {
            match s.take(1, t0) {
                Taken::Ids { from, to, .. } => got.extend_from_slice(s.ids(from, to)),
                Taken::Exhausted => break,
                Taken::Stale { .. } => panic!("fresh"),
            }
        }
        assert_eq!(got, (10..20).collect::<Vec<_>>());
        assert_eq!(s.take(3, t0), Taken::Exhausted);
    }

    #[test]
    fn a_take_of_many_stops_at_the_end_of_the_segment() {
        let t0 = Instant::now();
        let s = segment((0..10).collect(), t0);
        assert!(matches!(s.take(4, t0), Taken::Ids { from: 0, to: 4, .. }));
        assert!(matches!(
            s.take(100, t0),
            Taken::Ids {
                from: 4,
                to: 10,
                ..
            }
        ));
        assert_eq!(s.take(1, t0), Taken::Exhausted);
    }

    #[test]
    fn the_take_a_tenth_in_asks_for_the_next_batch_once() {
        let t0 = Instant::now();
        let s = segment((0..100).collect(), t0);
        let asked: Vec<usize> = (0..100)
            .filter(|_| matches!(s.take(1, t0), Taken::Ids { refill: true, .. }))
            .collect();
        assert_eq!(asked, vec![10], "remaining below 90% after the 11th take");
    }

    #[test]
    fn past_half_the_age_one_take_asks_for_a_fresher_batch() {
        let t0 = Instant::now();
        let s = segment((0..100).collect(), t0);
        let half = t0 + AGE / 2;
        let asked = (0..5)
            .filter(|_| matches!(s.take(1, half), Taken::Ids { refill: true, .. }))
            .count();
        assert_eq!(asked, 1);
    }

    #[test]
    fn ids_at_the_max_age_are_stale_never_handed_out() {
        let t0 = Instant::now();
        let s = segment((0..10).collect(), t0);
        assert!(matches!(
            s.take(1, t0 + AGE - Duration::from_nanos(1)),
            Taken::Ids { .. }
        ));
        assert_eq!(s.take(2, t0 + AGE), Taken::Stale { from: 1, to: 3 });
        let retired = s.retire().unwrap();
        assert_eq!(retired.stale, 7, "ids 3..10 were never reached");
        assert_eq!(retired.last, Some(2));
        assert_eq!(s.take(1, t0), Taken::Exhausted);
        assert_eq!(s.retire(), None, "retired once");
    }

    #[test]
    fn skipping_through_a_floor_starts_past_it() {
        let t0 = Instant::now();
        let s = segment(vec![5, 7, 9, 11], t0);
        assert_eq!(s.skip_through(7), 2);
        assert!(matches!(s.take(1, t0), Taken::Ids { from: 2, to: 3, .. }));
        assert_eq!(s.id(2), 9);
        let whole = segment(vec![1, 2], t0);
        assert_eq!(whole.skip_through(2), 2);
        assert_eq!(whole.take(1, t0), Taken::Exhausted);
        assert!(!whole.retire().unwrap().used);
    }
}
