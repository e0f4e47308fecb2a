//! Where a generator gets its time, and how it waits for it.
//!
//! A [`Clock`] reads milliseconds since the Unix epoch and knows how to wait until a given
//! millisecond. The generator itself never sleeps: it asks its clock.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

mod ticker;

use ticker::{ASKED, Ticker};
#[cfg(test)]
use ticker::{FLAGS, IDLE_TICKS, PARKED};

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

    /// [`Clock::sleep_until_ms`], giving up once `within` has passed on the steady clock:
    /// returns whether `unix_ms` was reached. A clock stepped back during the wait would
    /// otherwise keep its waiter as long as the step. The default waits without a bound,
    /// which is right for a clock that never steps, where the wait is what the caller
    /// planned; a clock whose [`Clock::steps`] is true must bound it.
    fn sleep_until_ms_within(&self, unix_ms: u64, within: Duration) -> bool {
        let _ = within;
        self.sleep_until_ms(unix_ms);
        true
    }

    /// Whether [`Clock::now_ms`] follows steps of the wall clock, and so may go back. A
    /// generator then measures what must hold in real time (a lease's validity) on
    /// [`Clock::steady_ms`] instead. The default: no.
    fn steps(&self) -> bool {
        false
    }

    /// Milliseconds since 1970-01-01T00:00:00Z by a clock that no wall-clock step reaches:
    /// what a lease's validity is measured on. The default is [`Clock::now_ms`], which is
    /// right for every clock whose [`Clock::steps`] is false.
    fn steady_ms(&self) -> u64 {
        self.now_ms()
    }

    /// Whether no reading of [`Clock::now_ms`] is ever below one made before it, on any
    /// thread. A generator then need not record the newest time it saw to tell a clock that
    /// went back from a spent sequence. The default, no, is right for every clock: only say
    /// yes for one that is monotonic by construction, as the [`SystemClock`] is.
    fn never_goes_back(&self) -> bool {
        false
    }
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now_ms(&self) -> u64 {
        (**self).now_ms()
    }

    fn sleep_until_ms(&self, unix_ms: u64) {
        (**self).sleep_until_ms(unix_ms);
    }

    fn sleep_until_ms_within(&self, unix_ms: u64, within: Duration) -> bool {
        (**self).sleep_until_ms_within(unix_ms, within)
    }

    fn steps(&self) -> bool {
        (**self).steps()
    }

    fn never_goes_back(&self) -> bool {
        (**self).never_goes_back()
    }

    fn steady_ms(&self) -> u64 {
        (**self).steady_ms()
    }
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now_ms(&self) -> u64 {
        (**self).now_ms()
    }

    fn sleep_until_ms(&self, unix_ms: u64) {
        (**self).sleep_until_ms(unix_ms);
    }

    fn sleep_until_ms_within(&self, unix_ms: u64, within: Duration) -> bool {
        (**self).sleep_until_ms_within(unix_ms, within)
    }

    fn steps(&self) -> bool {
        (**self).steps()
    }

    fn never_goes_back(&self) -> bool {
        (**self).never_goes_back()
    }

    fn steady_ms(&self) -> u64 {
        (**self).steady_ms()
    }
}

/// The default clock: the wall clock read once at start, plus monotonic time elapsed since.
///
/// A step of the wall clock while the process runs (NTP, an operator) never reaches it, so
/// it never goes back. Reading it is one atomic load: a background thread, shared by every
/// `SystemClock` in the process, advances a millisecond counter at each millisecond
/// boundary, and a thread that waits for a millisecond publishes it as it wakes. When
/// nobody has read the clock for a while (50 to 100 ms) the thread parks, so an idle
/// process does not wake a thousand times a second; the first reading after that reads the
/// time itself and wakes the thread. No reading depends on the thread being awake.
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
    /// The wall clock when the ticker started, with the offset of
    /// `with_offset_ms` (tests only) added once: a reading adds the
    /// milliseconds elapsed since, and nothing else.
    origin_ms: u64,
}

impl SystemClock {
    /// The process-wide clock. Its ticker thread starts at the first reading, so a clock
    /// that is made and never read costs nothing.
    #[must_use]
    pub fn new() -> SystemClock {
        let ticker = Ticker::global();
        SystemClock {
            ticker,
            origin_ms: ticker.wall_at_start_ms,
        }
    }

    /// The same clock shifted by `offset_ms` (negative: behind real time). For tests that
    /// must start a process with its clock set back; nothing else should need it, and only
    /// the `test-util` feature offers it.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "test-util")] {
    /// use snowmint::{Clock, SystemClock};
    ///
    /// let behind = SystemClock::new().with_offset_ms(-10_000);
    /// assert!(behind.now_ms() + 9_000 < SystemClock::new().now_ms());
    /// # }
    /// ```
    #[cfg(any(test, feature = "test-util"))]
    #[must_use]
    pub fn with_offset_ms(self, offset_ms: i64) -> SystemClock {
        SystemClock {
            origin_ms: self
                .ticker
                .wall_at_start_ms
                .saturating_add_signed(offset_ms),
            ..self
        }
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
        let state = t.state.load(Ordering::Acquire);
        // A flag set means the ticker asks whether anyone reads, or sleeps.
        let elapsed = if state < ASKED {
            state
        } else {
            t.answer(state)
        };
        self.origin_ms.saturating_add(elapsed)
    }

    fn never_goes_back(&self) -> bool {
        true
    }

    fn sleep_until_ms(&self, unix_ms: u64) {
        let t = self.ticker;
        let target = unix_ms.saturating_sub(self.origin_ms);
        let due = t.start + Duration::from_millis(target);
        loop {
            let now = Instant::now();
            if now >= due {
                break;
            }
            std::thread::sleep(due - now);
        }
        // Publish at once, so other readers need not wait for the ticker's next round.
        t.refresh();
    }
}

/// The operating system's wall clock, read on every call. It follows NTP steps, so it can go
/// back: pair it with a [`RollbackPolicy`](crate::RollbackPolicy) you have chosen. What must
/// hold in real time (a lease's validity) is measured on the [`SystemClock`] instead, which
/// no step reaches.
///
/// # Examples
///
/// ```
/// use snowmint::{Clock, WallClock};
///
/// assert!(WallClock.now_ms() > 1_600_000_000_000);
/// assert!(WallClock.steps());
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct WallClock;

impl Clock for WallClock {
    fn now_ms(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, crate::whole_ms)
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

    fn sleep_until_ms_within(&self, unix_ms: u64, within: Duration) -> bool {
        let deadline = self.steady_ms().saturating_add(crate::whole_ms(within));
        loop {
            let now = self.now_ms();
            if now >= unix_ms {
                return true;
            }
            let steady = self.steady_ms();
            if steady >= deadline {
                return false;
            }
            let pause = (unix_ms - now).min(deadline - steady);
            std::thread::sleep(Duration::from_millis(pause));
        }
    }

    fn steps(&self) -> bool {
        true
    }

    fn steady_ms(&self) -> u64 {
        SystemClock::new().now_ms()
    }
}

/// The clock a [`ClockMode`](crate::ClockMode) reads: the [`WallClock`] for `wall`, the
/// [`SystemClock`] for `monotonic`, and for `counter`, whose ids take no time from it, the
/// [`SystemClock`] for what must hold in real time.
///
/// # Examples
///
/// ```
/// use snowmint::{Clock, ClockMode, ModeClock};
///
/// assert!(ModeClock::new(ClockMode::Wall).steps());
/// assert!(!ModeClock::new(ClockMode::Monotonic).steps());
/// assert!(ModeClock::new(ClockMode::Counter).now_ms() > 1_600_000_000_000);
/// ```
#[derive(Debug, Clone, Copy)]
pub enum ModeClock {
    /// Wall clock at start plus monotonic time since.
    System(SystemClock),
    /// The wall clock, read every time.
    Wall(WallClock),
}

impl ModeClock {
    /// The clock of `mode`.
    #[must_use]
    pub fn new(mode: crate::ClockMode) -> ModeClock {
        match mode {
            crate::ClockMode::Wall => ModeClock::Wall(WallClock),
            crate::ClockMode::Monotonic | crate::ClockMode::Counter => {
                ModeClock::System(SystemClock::new())
            }
        }
    }
}

impl Clock for ModeClock {
    #[inline]
    fn now_ms(&self) -> u64 {
        match self {
            ModeClock::System(c) => c.now_ms(),
            ModeClock::Wall(c) => c.now_ms(),
        }
    }

    fn sleep_until_ms(&self, unix_ms: u64) {
        match self {
            ModeClock::System(c) => c.sleep_until_ms(unix_ms),
            ModeClock::Wall(c) => c.sleep_until_ms(unix_ms),
        }
    }

    fn sleep_until_ms_within(&self, unix_ms: u64, within: Duration) -> bool {
        match self {
            ModeClock::System(c) => c.sleep_until_ms_within(unix_ms, within),
            ModeClock::Wall(c) => c.sleep_until_ms_within(unix_ms, within),
        }
    }

    fn never_goes_back(&self) -> bool {
        matches!(self, ModeClock::System(_))
    }

    fn steps(&self) -> bool {
        matches!(self, ModeClock::Wall(_))
    }

    fn steady_ms(&self) -> u64 {
        match self {
            ModeClock::System(c) => c.now_ms(),
            ModeClock::Wall(c) => c.steady_ms(),
        }
    }
}

/// What a [`ManualClock`] plays, fixed by its type so that a generator over it compiles
/// to the code it has over the clock it stands for: a test or a benchmark then measures
/// the paths production takes, and nothing more.
pub mod manual {
    /// A kind of [`ManualClock`](super::ManualClock): what its [`Clock::steps`] and
    /// [`Clock::never_goes_back`] answer, known at compile time.
    ///
    /// [`Clock::steps`]: super::Clock::steps
    /// [`Clock::never_goes_back`]: super::Clock::never_goes_back
    pub trait Kind: Default + std::fmt::Debug + Send + Sync + 'static {
        /// Whether the clock plays a wall clock, which steps.
        const STEPS: bool;
        /// Whether the clock says it never goes back.
        const NEVER_GOES_BACK: bool;
    }

    /// A clock that never steps and does not say it never goes back: the default.
    #[derive(Debug, Default, Clone, Copy)]
    pub struct Plain;

    /// A wall clock, which NTP or an operator can step.
    #[derive(Debug, Default, Clone, Copy)]
    pub struct Stepping;

    /// A clock that says it never goes back, as the [`SystemClock`](super::SystemClock) does.
    #[derive(Debug, Default, Clone, Copy)]
    pub struct NeverGoingBack;

    impl Kind for Plain {
        const STEPS: bool = false;
        const NEVER_GOES_BACK: bool = false;
    }

    impl Kind for Stepping {
        const STEPS: bool = true;
        const NEVER_GOES_BACK: bool = false;
    }

    impl Kind for NeverGoingBack {
        const STEPS: bool = false;
        const NEVER_GOES_BACK: bool = true;
    }
}

/// A clock that moves only when told: for tests. Waiting on it moves it forward to the
/// instant waited for and counts the wait, so no test sleeps.
///
/// By default it plays a clock that never steps, whose reading is also its real time. Two
/// options make it play another, each a type of its own ([`manual::Kind`]), so that what
/// it plays costs no reading at run time:
///
/// - [`stepping`](ManualClock::stepping): a wall clock, which NTP or an operator can step.
///   Its steps ([`step_back`](ManualClock::step_back), [`step_forward`](ManualClock::step_forward),
///   [`set`](ManualClock::set)) move its reading and not its real time
///   ([`Clock::steady_ms`]), which only [`advance`](ManualClock::advance) and waits move;
///   and a wait can meet a step ([`step_back_in_next_wait`](ManualClock::step_back_in_next_wait)).
/// - [`never_going_back`](ManualClock::never_going_back): a clock that says it never goes
///   back, as the [`SystemClock`] does, so that a generator takes the paths it takes on
///   that clock. Move it forward only.
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
///
/// let wall = ManualClock::new(10_000).stepping();
/// wall.step_back(4_000);
/// wall.advance(1_000);
/// assert_eq!((wall.now_ms(), wall.steady_ms()), (7_000, 11_000));
/// ```
#[derive(Debug, Default)]
pub struct ManualClock<K: manual::Kind = manual::Plain> {
    now_ms: AtomicU64,
    /// Real time: moved by `advance` and waits, not by steps. Kept and read only when the
    /// kind steps; otherwise the reading is the real time.
    steady_ms: AtomicU64,
    /// A step back that the next bounded wait meets once it has waited its whole bound.
    step_back_in_wait: AtomicU64,
    sleeps: Mutex<Vec<u64>>,
    kind: PhantomData<K>,
}

impl ManualClock {
    /// A clock that reads `unix_ms` until moved.
    #[must_use]
    pub fn new(unix_ms: u64) -> ManualClock {
        ManualClock {
            now_ms: AtomicU64::new(unix_ms),
            steady_ms: AtomicU64::new(unix_ms),
            ..ManualClock::default()
        }
    }

    /// The same clock, playing a wall clock: it says it steps ([`Clock::steps`]), and keeps
    /// its real time apart from its reading.
    #[must_use]
    pub fn stepping(self) -> ManualClock<manual::Stepping> {
        self.playing()
    }

    /// The same clock, saying that it never goes back ([`Clock::never_goes_back`]).
    #[must_use]
    pub fn never_going_back(self) -> ManualClock<manual::NeverGoingBack> {
        self.playing()
    }

    fn playing<K: manual::Kind>(self) -> ManualClock<K> {
        ManualClock {
            now_ms: self.now_ms,
            steady_ms: self.steady_ms,
            step_back_in_wait: self.step_back_in_wait,
            sleeps: self.sleeps,
            kind: PhantomData,
        }
    }
}

impl<K: manual::Kind> ManualClock<K> {
    /// Sets the reading: for a [`stepping`](ManualClock::stepping) clock, a step.
    pub fn set(&self, unix_ms: u64) {
        self.now_ms.store(unix_ms, Ordering::SeqCst);
    }

    /// Real time passes: the reading and the real time move forward.
    pub fn advance(&self, ms: u64) {
        self.now_ms.fetch_add(ms, Ordering::SeqCst);
        // Only a stepping clock reads its real time apart.
        if K::STEPS {
            self.steady_ms.fetch_add(ms, Ordering::SeqCst);
        }
    }

    /// Moves the reading back, as an NTP step or a restored VM snapshot would.
    pub fn step_back(&self, ms: u64) {
        self.now_ms.fetch_sub(ms, Ordering::SeqCst);
    }

    /// Moves the reading forward without real time passing, as a step of a wall clock would.
    pub fn step_forward(&self, ms: u64) {
        self.now_ms.fetch_add(ms, Ordering::SeqCst);
    }

    /// The next bounded wait ([`Clock::sleep_until_ms_within`]) of a
    /// [`stepping`](ManualClock::stepping) clock waits its whole bound, and then meets a
    /// step back of `ms`, as if the clock were set back just before it reached the instant.
    pub fn step_back_in_next_wait(&self, ms: u64) {
        self.step_back_in_wait.store(ms, Ordering::SeqCst);
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

impl<K: manual::Kind> Clock for ManualClock<K> {
    fn now_ms(&self) -> u64 {
        self.now_ms.load(Ordering::SeqCst)
    }

    fn sleep_until_ms(&self, unix_ms: u64) {
        self.sleeps
            .lock()
            .expect("sleep log poisoned")
            .push(unix_ms);
        let before = self.now_ms.fetch_max(unix_ms, Ordering::SeqCst);
        if K::STEPS {
            self.steady_ms
                .fetch_add(unix_ms.saturating_sub(before), Ordering::SeqCst);
        }
    }

    fn sleep_until_ms_within(&self, unix_ms: u64, within: Duration) -> bool {
        let step = self.step_back_in_wait.swap(0, Ordering::SeqCst);
        if !K::STEPS || step == 0 {
            self.sleep_until_ms(unix_ms);
            return true;
        }
        self.advance(crate::whole_ms(within));
        self.step_back(step);
        self.now_ms() >= unix_ms
    }

    fn steps(&self) -> bool {
        K::STEPS
    }

    fn steady_ms(&self) -> u64 {
        if K::STEPS {
            self.steady_ms.load(Ordering::SeqCst)
        } else {
            self.now_ms()
        }
    }

    fn never_goes_back(&self) -> bool {
        K::NEVER_GOES_BACK
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

    /// A ticker of its own (leaked, as the process-wide one lives forever), parked and
    /// threadless until a test runs it, and a clock over it.
    fn private(idle_ticks: u32) -> (&'static Ticker, SystemClock) {
        let ticker: &'static Ticker = Box::leak(Box::new(Ticker::new(idle_ticks)));
        (
            ticker,
            SystemClock {
                ticker,
                origin_ms: ticker.wall_at_start_ms,
            },
        )
    }

    fn flags(t: &Ticker) -> u64 {
        t.state.load(Ordering::SeqCst) & FLAGS
    }

    /// Polls for what a ticker thread does in its own time, for at most 10 s.
    fn wait_until(what: &str, done: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < deadline, "never {what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn an_answer_to_the_question_is_the_published_count_and_clears_only_the_question() {
        let (t, clock) = private(3);
        let _ = t.thread.set(std::thread::current());
        // Published 7 ms, asked: the answer reads no time of its own.
        t.state.store(7 | ASKED, Ordering::SeqCst);
        assert_eq!(clock.now_ms(), t.wall_at_start_ms + 7);
        assert_eq!(
            t.state.load(Ordering::SeqCst),
            7,
            "question cleared, count kept"
        );
        // Parked as well: the reading reads the time itself and wakes the ticker.
        t.state.store(7 | ASKED | PARKED, Ordering::SeqCst);
        let before = t.wall_at_start_ms + crate::whole_ms(t.start.elapsed());
        assert!(clock.now_ms() >= before);
        assert_eq!(flags(t), 0);
    }

    #[test]
    fn the_ticker_parks_when_its_question_goes_unanswered() {
        let (t, clock) = private(3);
        // This thread plays the ticker's, one tick at a time.
        let _ = t.thread.set(std::thread::current());
        t.state.fetch_and(!PARKED, Ordering::SeqCst);
        let mut ticks = 0;
        let mut tick = || t.idle(&mut ticks);
        assert!(!tick() && !tick() && !tick());
        assert_eq!(flags(t), ASKED, "asks after 3 ticks");
        clock.now_ms();
        assert_eq!(flags(t), 0, "a reading answers");
        assert!(!tick() && !tick() && !tick());
        assert_eq!(flags(t), ASKED, "asks again");
        assert!(!tick() && !tick());
        assert!(tick(), "parks when nobody answered");
        assert_eq!(flags(t), PARKED);
        clock.now_ms();
        assert_eq!(flags(t), 0, "a reading wakes it");
    }

    #[test]
    fn a_reading_of_a_parked_ticker_reads_the_time_itself() {
        // Started 5 s ago and parked since, with nothing published.
        let t: &'static Ticker = Box::leak(Box::new(Ticker {
            start: Instant::now() - Duration::from_secs(5),
            wall_at_start_ms: 1_000_000,
            ..Ticker::new(IDLE_TICKS)
        }));
        let clock = SystemClock {
            ticker: t,
            origin_ms: t.wall_at_start_ms,
        };
        // Threadless, it stays parked, and every reading is still the time.
        let a = clock.now_ms();
        assert!(a >= 1_005_000, "{a}");
        assert_eq!(flags(t), PARKED);
        assert!(t.state.load(Ordering::SeqCst) & !FLAGS >= 5_000);
        let b = clock.now_ms();
        assert!(b >= a);
        // With a thread to wake, the reading clears the flag and publishes for the next.
        let _ = t.thread.set(std::thread::current());
        let c = clock.now_ms();
        assert!(c >= b);
        assert_eq!(flags(t), 0);
        assert!(clock.now_ms() >= c);
    }

    #[test]
    fn an_idle_ticker_thread_parks_and_the_next_reading_wakes_it() {
        let (t, clock) = private(2);
        t.spawn();
        wait_until("parked", || t.parks.load(Ordering::SeqCst) == 1);
        assert_eq!(flags(t), PARKED);
        let before = clock.now_ms();
        // Woken, it ticks, asks, hears nothing, and parks again.
        wait_until("parked again", || t.parks.load(Ordering::SeqCst) == 2);
        assert!(clock.now_ms() >= before);
    }

    #[test]
    fn the_thread_starts_at_the_first_reading_not_when_the_clock_is_made() {
        let ticker: &'static Ticker = Box::leak(Box::new(Ticker {
            autostart: true,
            ..Ticker::new(IDLE_TICKS)
        }));
        let clock = SystemClock {
            ticker,
            origin_ms: ticker.wall_at_start_ms,
        };
        let copy = clock;
        assert!(ticker.thread.get().is_none(), "made and copied, never read");
        assert!(copy.now_ms() > 1_600_000_000_000);
        wait_until("started", || ticker.thread.get().is_some());
        wait_until("ticking", || flags(ticker) & PARKED == 0);
    }

    #[test]
    fn sleeping_publishes_the_new_millisecond() {
        let clock = SystemClock::new();
        let target = clock.now_ms() + 3;
        clock.sleep_until_ms(target);
        assert!(clock.now_ms() >= target);
    }
}
