//! What a run measured, round by round, and the medians taken from it.

use std::collections::BTreeMap;

use crate::burst::BurstRun;
use crate::measure::Percentiles;
use crate::peers::Peer;

/// The cap of Twitter's layout: 4,096 ids per ms.
pub const CAP_PER_SEC: f64 = 4_096_000.0;

/// A per-id run counts as clean when no thread spent more than this share of its run
/// waiting for a CPU. On a shared 2-core machine, two threads that take turns on one core
/// measure no contention at all, and a thread that waits for a core measures someone else.
pub const CLEAN_WAIT: f64 = 0.1;

/// Values of one quantity, one per round, by key.
#[derive(Debug)]
pub struct Tally<K>(BTreeMap<K, Vec<f64>>);

impl<K> Default for Tally<K> {
    fn default() -> Self {
        Tally(BTreeMap::new())
    }
}

impl<K: Ord> Tally<K> {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn push(&mut self, key: K, value: f64) {
        self.0.entry(key).or_default().push(value);
    }

    pub fn count(&self, key: &K) -> usize {
        self.0.get(key).map_or(0, Vec::len)
    }

    fn sorted(&self, key: &K) -> Vec<f64> {
        let mut v = self.0.get(key).cloned().unwrap_or_default();
        v.sort_by(f64::total_cmp);
        v
    }

    /// The median (the mean of the middle two for an even count); NaN if none.
    pub fn median(&self, key: &K) -> f64 {
        let v = self.sorted(key);
        match v.len() {
            0 => f64::NAN,
            n if n % 2 == 1 => v[n / 2],
            n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        }
    }

    /// Every value, in the order pushed (one per round).
    pub fn all(&self, key: &K) -> &[f64] {
        self.0.get(key).map_or(&[], Vec::as_slice)
    }

    /// The smallest and largest value; NaN if none.
    pub fn range(&self, key: &K) -> (f64, f64) {
        let v = self.sorted(key);
        (
            v.first().copied().unwrap_or(f64::NAN),
            v.last().copied().unwrap_or(f64::NAN),
        )
    }
}

/// A clock read alone in the latency table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ClockRow {
    /// `SystemClock::now_ms`.
    Snowmint,
    /// ferroid's `MonotonicClock::current_millis`.
    Ferroid,
}

impl ClockRow {
    pub fn name(self) -> &'static str {
        match self {
            ClockRow::Snowmint => "snowmint's clock alone (`SystemClock::now_ms`)",
            ClockRow::Ferroid => "ferroid's clock alone (`MonotonicClock`)",
        }
    }
}

/// Percentiles of single calls, round by round.
#[derive(Debug)]
pub struct Spread<K> {
    pub p50: Tally<K>,
    pub p99: Tally<K>,
    pub p999: Tally<K>,
    pub max: Tally<K>,
}

impl<K> Default for Spread<K> {
    fn default() -> Self {
        Spread {
            p50: Tally::default(),
            p99: Tally::default(),
            p999: Tally::default(),
            max: Tally::default(),
        }
    }
}

impl<K: Ord + Copy> Spread<K> {
    pub fn push(&mut self, key: K, p: &Percentiles) {
        self.p50.push(key, p.p50_ns);
        self.p99.push(key, p.p99_ns);
        self.p999.push(key, p.p999_ns);
        self.max.push(key, p.max_ns);
    }
}

/// Which burst: one the lead can absorb at once, or twice that.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum BurstKind {
    WithinLead,
    TwiceLead,
}

impl BurstKind {
    pub fn label(self) -> &'static str {
        match self {
            BurstKind::WithinLead => "within the lead",
            BurstKind::TwiceLead => "twice the lead",
        }
    }
}

/// Everything measured, round by round.
#[derive(Debug, Default)]
pub struct Results {
    /// Every per-id run.
    pub per_id: Tally<(Peer, usize)>,
    /// The per-id runs in which no thread waited for a CPU more than [`CLEAN_WAIT`] of the time.
    pub per_id_clean: Tally<(Peer, usize)>,
    /// One `fetch_add` a call, by threads: every run, and the clean ones.
    pub floor: Tally<usize>,
    pub floor_clean: Tally<usize>,
    /// Single-call latency by generator; `None` is the timer alone.
    pub latency: Spread<Option<Peer>>,
    /// The clocks of snowmint and ferroid read alone.
    pub clocks: Spread<ClockRow>,
    /// Two `Instant::now` back to back, for comparison with the timer.
    pub instant_pair: Spread<()>,
    pub cap_rate: Tally<(Peer, usize)>,
    pub cap_cpu: Tally<(Peer, usize)>,
    /// Largest share of a run any thread waited for a CPU, in %.
    pub cap_waited: Tally<(Peer, usize)>,
    pub idle_cpu: Tally<()>,
    /// The slowest call at the cap with 2 threads, ns.
    pub worst: Tally<Peer>,
    pub worst_over_1ms: Tally<Peer>,
    pub bursts: BTreeMap<BurstKind, Vec<BurstRun>>,
}
