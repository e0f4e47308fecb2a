//! Where a generator gets its time, and how it waits for it.
//!
//! A [`Clock`] reads milliseconds since the Unix epoch and knows how to wait until a given
//! millisecond. The generator itself never sleeps: it asks its clock.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A source of time for a [`Generator`](crate::Generator).
///
/// # Examples
///
/// ```
/// use snowmint::{Clock, ManualClock};
///
/// let clock = ManualClock::new(1_000);
/// clock.sleep_until_ms(1_500); // a manual clock moves itself forward instead of sleeping
/// assert_eq!(clock.now_ms(), 1_500);
/// ```
pub trait Clock: Send + Sync {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    fn now_ms(&self) -> u64;

    /// Blocks the calling thread until [`Clock::now_ms`] reaches `unix_ms`, without spinning.
    fn sleep_until_ms(&self, unix_ms: u64);
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now_ms(&self) -> u64 {
        (**self).now_ms()
    }

    fn sleep_until_ms(&self, unix_ms: u64) {
        (**self).sleep_until_ms(unix_ms);
    }
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now_ms(&self) -> u64 {
        (**self).now_ms()
    }

    fn sleep_until_ms(&self, unix_ms: u64) {
        (**self).sleep_until_ms(unix_ms);
    }
}

/// The default clock: the wall clock read once at start, plus monotonic time elapsed since.
///
/// A step of the wall clock while the process runs (NTP, an operator) never reaches it, so
/// it never goes back. Reading it is one atomic load: a background thread, shared by every
/// `SystemClock` in the process, advances a millisecond counter at each millisecond
/// boundary, and a thread that waits for a millisecond publishes it as it wakes.
///
/// # Examples
///
/// ```
/// use snowmint::{Clock, SystemClock};
///
/// let clock = SystemClock::new();
/// let a = clock.now_ms();
/// clock.sleep_until_ms(a + 2);
/// assert!(clock.now_ms() >= a + 2);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct SystemClock {
    ticker: &'static Ticker,
    /// Added to every reading: zero except in tests that start a process "in the past".
    offset_ms: i64,
}

#[derive(Debug)]
struct Ticker {
    start: Instant,
    wall_at_start_ms: u64,
    /// Whole milliseconds elapsed since `start`, never decreasing.
    elapsed_ms: AtomicU64,
}

impl Ticker {
    fn global() -> &'static Ticker {
        static TICKER: OnceLock<Ticker> = OnceLock::new();
        TICKER.get_or_init(|| {
            let start = Instant::now();
            let wall = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, millis);
            let ticker = Ticker {
                start,
                wall_at_start_ms: wall,
                elapsed_ms: AtomicU64::new(0),
            };
            // If the thread cannot start, readers still get time: `sleep_until_ms` publishes
            // it, and `now_ms` falls back to reading `Instant` (see `SystemClock::now_ms`).
            let _ = std::thread::Builder::new()
                .name("snowmint-clock".into())
                .spawn(|| Ticker::global().run());
            ticker
        })
    }

    fn run(&self) {
        loop {
            let next = self.elapsed_ms.load(Ordering::Relaxed) + 1;
            let due = self.start + Duration::from_millis(next);
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            self.publish();
        }
    }

    fn publish(&self) -> u64 {
        let elapsed = millis(self.start.elapsed());
        self.elapsed_ms.fetch_max(elapsed, Ordering::Release);
        elapsed
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl SystemClock {
    /// The process-wide clock (starting its ticker thread on first use).
    #[must_use]
    pub fn new() -> SystemClock {
        SystemClock {
            ticker: Ticker::global(),
            offset_ms: 0,
        }
    }

    /// The same clock shifted by `offset_ms` (negative: behind real time). For tests that
    /// must start a process with its clock set back; nothing else should need it.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::{Clock, SystemClock};
    ///
    /// let behind = SystemClock::new().with_offset_ms(-10_000);
    /// assert!(behind.now_ms() + 9_000 < SystemClock::new().now_ms());
    /// ```
    #[must_use]
    pub fn with_offset_ms(self, offset_ms: i64) -> SystemClock {
        SystemClock { offset_ms, ..self }
    }

    fn shift(&self, ms: u64) -> u64 {
        ms.saturating_add_signed(self.offset_ms)
    }
}

impl Default for SystemClock {
    fn default() -> SystemClock {
        SystemClock::new()
    }
}

impl Clock for SystemClock {
    #[inline]
    fn now_ms(&self) -> u64 {
        let t = self.ticker;
        self.shift(t.wall_at_start_ms + t.elapsed_ms.load(Ordering::Acquire))
    }

    fn sleep_until_ms(&self, unix_ms: u64) {
        let t = self.ticker;
        let target = unix_ms
            .saturating_sub_signed(self.offset_ms)
            .saturating_sub(t.wall_at_start_ms);
        let due = t.start + Duration::from_millis(target);
        loop {
            let now = Instant::now();
            if now >= due {
                break;
            }
            std::thread::sleep(due - now);
        }
        // Publish at once, so other readers need not wait for the ticker's next round.
        t.publish();
    }
}

/// The operating system's wall clock, read on every call. It follows NTP steps, so it can go
/// back: pair it with a [`RollbackPolicy`](crate::RollbackPolicy) you have chosen.
///
/// # Examples
///
/// ```
/// use snowmint::{Clock, WallClock};
///
/// assert!(WallClock.now_ms() > 1_600_000_000_000);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct WallClock;

impl Clock for WallClock {
    fn now_ms(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, millis)
    }

    fn sleep_until_ms(&self, unix_ms: u64) {
        loop {
            let now = self.now_ms();
            if now >= unix_ms {
                break;
            }
            std::thread::sleep(Duration::from_millis(unix_ms - now));
        }
    }
}

/// A clock that moves only when told: for tests. Waiting on it moves it forward to the
/// instant waited for and counts the wait, so no test sleeps.
///
/// # Examples
///
/// ```
/// use snowmint::{Clock, ManualClock};
///
/// let clock = ManualClock::new(10_000);
/// clock.step_back(10_000);
/// assert_eq!(clock.now_ms(), 0);
/// clock.advance(3_600_000);
/// assert_eq!(clock.now_ms(), 3_600_000);
/// ```
#[derive(Debug, Default)]
pub struct ManualClock {
    now_ms: AtomicU64,
    sleeps: Mutex<Vec<u64>>,
}

impl ManualClock {
    /// A clock that reads `unix_ms` until moved.
    #[must_use]
    pub fn new(unix_ms: u64) -> ManualClock {
        ManualClock {
            now_ms: AtomicU64::new(unix_ms),
            sleeps: Mutex::new(Vec::new()),
        }
    }

    /// Sets the time.
    pub fn set(&self, unix_ms: u64) {
        self.now_ms.store(unix_ms, Ordering::SeqCst);
    }

    /// Moves the time forward.
    pub fn advance(&self, ms: u64) {
        self.now_ms.fetch_add(ms, Ordering::SeqCst);
    }

    /// Moves the time back, as an NTP step or a restored VM snapshot would.
    pub fn step_back(&self, ms: u64) {
        self.now_ms.fetch_sub(ms, Ordering::SeqCst);
    }

    /// The instants waited for so far, in order.
    ///
    /// # Panics
    ///
    /// If a thread panicked while recording a wait.
    #[must_use]
    pub fn sleeps(&self) -> Vec<u64> {
        self.sleeps.lock().expect("sleep log poisoned").clone()
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.now_ms.load(Ordering::SeqCst)
    }

    fn sleep_until_ms(&self, unix_ms: u64) {
        self.sleeps
            .lock()
            .expect("sleep log poisoned")
            .push(unix_ms);
        self.now_ms.fetch_max(unix_ms, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_clock_is_close_to_the_wall_clock_and_never_goes_back() {
        let clock = SystemClock::new();
        let wall = WallClock.now_ms();
        let now = clock.now_ms();
        assert!(now.abs_diff(wall) < 1_000, "system {now} wall {wall}");
        let mut last = now;
        for _ in 0..10_000 {
            let t = clock.now_ms();
            assert!(t >= last);
            last = t;
        }
    }

    #[test]
    fn sleeping_publishes_the_new_millisecond() {
        let clock = SystemClock::new();
        let target = clock.now_ms() + 3;
        clock.sleep_until_ms(target);
        assert!(clock.now_ms() >= target);
    }
}
