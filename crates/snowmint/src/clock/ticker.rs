//! The ticker behind [`SystemClock`](super::SystemClock): one thread per process that
//! publishes the milliseconds elapsed since it started, so that a reading of the clock is
//! one atomic load; it parks when nobody reads, and a reader then reads the time itself.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Once, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Ticks between the ticker's questions "has anyone read the clock?": it parks when a
/// question goes unanswered for this many ticks, 50 to 100 ms after the last reading. Waking
/// it costs the next reading a few microseconds, once; a shorter wait would park between
/// the reads of light, steady traffic, a longer one spends more wake-ups after each read.
pub(super) const IDLE_TICKS: u32 = 50;

/// The ticker asked whether anyone reads; the first reader after it clears it.
pub(super) const ASKED: u64 = 1 << 62;
/// The ticker sleeps (or has no thread): readers read the time themselves.
pub(super) const PARKED: u64 = 1 << 63;
/// The flags sit above every count of milliseconds (2^62 ms is 146 million years), so with
/// none set the word *is* the count: a reading is one load, one comparison and no shift.
pub(super) const FLAGS: u64 = ASKED | PARKED;

#[derive(Debug)]
pub(super) struct Ticker {
    pub(super) start: Instant,
    pub(super) wall_at_start_ms: u64,
    /// `flags | elapsed`: whole milliseconds elapsed since `start`, never
    /// decreasing, and [`ASKED`] and [`PARKED`]. One word, so a reading is one load and a
    /// branch on the flags.
    pub(super) state: AtomicU64,
    /// The ticker's thread, to wake it; unset until it runs, and for good if it cannot start.
    pub(super) thread: OnceLock<Thread>,
    pub(super) idle_ticks: u32,
    /// Times the ticker parked.
    pub(super) parks: AtomicU64,
    /// Whether the first reading starts the thread (the process-wide ticker): a clock that
    /// is made but never read, such as the default a generator's builder holds until
    /// `.clock(...)` replaces it, starts none.
    pub(super) autostart: bool,
    pub(super) started: Once,
}

impl Ticker {
    /// A ticker that counts from now, parked until a thread runs it.
    pub(super) fn new(idle_ticks: u32) -> Ticker {
        Ticker {
            start: Instant::now(),
            wall_at_start_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, crate::whole_ms),
            state: AtomicU64::new(PARKED),
            thread: OnceLock::new(),
            idle_ticks,
            parks: AtomicU64::new(0),
            autostart: false,
            started: Once::new(),
        }
    }

    /// The process-wide ticker; its thread starts at the first reading.
    pub(super) fn global() -> &'static Ticker {
        static TICKER: OnceLock<Ticker> = OnceLock::new();
        TICKER.get_or_init(|| Ticker {
            autostart: true,
            ..Ticker::new(IDLE_TICKS)
        })
    }

    pub(super) fn spawn(&'static self) {
        let _ = std::thread::Builder::new()
            .name("snowmint-clock".into())
            .spawn(|| self.run());
    }

    fn run(&self) {
        let _ = self.thread.set(std::thread::current());
        self.state.fetch_and(!PARKED, Ordering::AcqRel);
        let mut ticks = 0;
        loop {
            let next = (self.state.load(Ordering::Relaxed) & !FLAGS) + 1;
            let due = self.start + Duration::from_millis(next);
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            self.publish();
            if self.idle(&mut ticks) {
                self.park();
            }
        }
    }

    /// After each tick: every `idle_ticks` ticks, asks whether anyone reads, and decides to
    /// park (setting [`PARKED`]) when nobody answered the question asked the time before.
    pub(super) fn idle(&self, ticks: &mut u32) -> bool {
        *ticks += 1;
        if *ticks < self.idle_ticks {
            return false;
        }
        *ticks = 0;
        let state = self.state.load(Ordering::Acquire);
        if state & ASKED == 0 {
            self.state.fetch_or(ASKED, Ordering::AcqRel);
            return false;
        }
        // Fails if a reader answers meanwhile: then the ticker keeps ticking.
        let parked = state & !ASKED | PARKED;
        self.state
            .compare_exchange(state, parked, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    fn park(&self) {
        self.parks.fetch_add(1, Ordering::Relaxed);
        // `unpark` before `park` leaves a token, so a wake-up is never lost.
        while self.state.load(Ordering::Acquire) & PARKED != 0 {
            std::thread::park();
        }
    }

    /// The ticker's publication: the elapsed time, flags kept.
    fn publish(&self) {
        let elapsed = crate::whole_ms(self.start.elapsed());
        let _ = self
            .state
            .fetch_update(Ordering::Release, Ordering::Relaxed, |state| {
                (state & !FLAGS < elapsed).then_some(elapsed | state & FLAGS)
            });
    }

    /// A reading that found `state` flagged. The ticker awake and asking: the answer is one
    /// atomic operation that clears the question, and the count it published is the time (a
    /// reading on this path costs about what any reading after a tick does). The ticker
    /// parked: read the time directly and wake it.
    #[cold]
    #[inline(never)]
    pub(super) fn answer(&'static self, state: u64) -> u64 {
        if state & PARKED == 0 {
            // Had the ticker parked since the load, PARKED stays set, and the next reading
            // wakes it: this one is as fresh as the ticker's last tick either way.
            self.state.fetch_and(!ASKED, Ordering::AcqRel);
            return state & !FLAGS;
        }
        self.refresh()
    }

    /// Milliseconds elapsed, read directly: published, with both flags cleared, and the
    /// ticker woken if it was parked. For readers that find the ticker parked, and for
    /// waiters.
    #[cold]
    #[inline(never)]
    pub(super) fn refresh(&'static self) -> u64 {
        if self.autostart && self.thread.get().is_none() {
            // If the thread cannot start, the ticker stays parked: every reading reads the
            // time itself, which is slower but just as right.
            self.started.call_once(|| self.spawn());
        }
        let elapsed = crate::whole_ms(self.start.elapsed());
        // Without a thread to wake, the ticker stays parked and readers keep reading.
        let keep = if self.thread.get().is_some() {
            0
        } else {
            PARKED
        };
        let mut state = self.state.load(Ordering::Acquire);
        loop {
            let published = (state & !FLAGS).max(elapsed);
            let next = published | keep;
            match self
                .state
                .compare_exchange_weak(state, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    if state & PARKED != 0
                        && keep == 0
                        && let Some(thread) = self.thread.get()
                    {
                        thread.unpark();
                    }
                    return published;
                }
                Err(now) => state = now,
            }
        }
    }
}
