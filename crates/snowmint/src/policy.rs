//! The choices a generator makes when the clock misbehaves or a tick runs out, and the
//! values it hands back.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::Id;

/// Where the time field of a generator's ids comes from.
///
/// | mode        | time field                                  | a wall-clock step back     |
/// |-------------|---------------------------------------------|----------------------------|
/// | `monotonic` | wall clock at start + monotonic time since  | never seen                 |
/// | `wall`      | the wall clock, read at every tick          | meets the [`RollbackPolicy`] |
/// | `counter`   | a counter, one tick on per full sequence    | never seen                 |
///
/// A `counter` generator's ids stay unique and increasing, but their time field no longer
/// tells when they were made: it starts above the high-water mark (at the layout's epoch on
/// a fresh worker id) and moves on one tick each time a tick's sequence numbers are spent.
/// Real time still bounds what a lease allows.
///
/// # Examples
///
/// ```
/// use snowmint::ClockMode;
///
/// assert_eq!(ClockMode::default(), ClockMode::Monotonic);
/// assert_eq!("counter".parse::<ClockMode>()?, ClockMode::Counter);
/// assert!(!ClockMode::Counter.tells_time());
/// let err = "ntp".parse::<ClockMode>().unwrap_err();
/// assert_eq!(err.to_string(), "clock mode \"ntp\" is not one of monotonic, wall, counter");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// With the `serde` feature a mode is read by its name, as a configuration file writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum ClockMode {
    /// The wall clock read once at start, plus monotonic time since
    /// ([`SystemClock`](crate::SystemClock)): a step of the wall clock never reaches it.
    #[default]
    Monotonic,
    /// The wall clock, read at every tick ([`WallClock`](crate::WallClock)): a step
    /// forward is followed at once, a step back meets the rollback policy.
    Wall,
    /// A counter that moves on one tick each time the sequence fills: ids no longer tell
    /// time.
    Counter,
}

impl ClockMode {
    /// Every mode, in the order of its documentation.
    pub const ALL: [ClockMode; 3] = [ClockMode::Monotonic, ClockMode::Wall, ClockMode::Counter];

    /// The mode in one line, for lists of choices such as `--help`'s.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::ClockMode;
    ///
    /// assert!(ClockMode::Counter.about().ends_with("ids no longer tell time"));
    /// ```
    #[must_use]
    pub const fn about(self) -> &'static str {
        match self {
            ClockMode::Monotonic => {
                "The wall clock at start plus monotonic time since: no wall-clock step reaches ids"
            }
            ClockMode::Wall => {
                "The wall clock at every tick: steps forward are followed, steps back meet the rollback policy"
            }
            ClockMode::Counter => {
                "A counter that moves on a tick each time the sequence fills: ids no longer tell time"
            }
        }
    }

    /// The mode's name, as flags and files spell it.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            ClockMode::Monotonic => "monotonic",
            ClockMode::Wall => "wall",
            ClockMode::Counter => "counter",
        }
    }

    /// Whether the time field of the ids is the time they were made.
    #[must_use]
    pub const fn tells_time(self) -> bool {
        !matches!(self, ClockMode::Counter)
    }

    /// Whether a generator in this mode may start after a high-water mark left in `other`:
    /// marks of the two clock modes are instants and follow each other safely; a counter's
    /// marks are counts, which mean nothing to a clock, and the other way round.
    #[must_use]
    pub const fn follows(self, other: ClockMode) -> bool {
        self.tells_time() == other.tells_time()
    }
}

impl fmt::Display for ClockMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not a [`ClockMode`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownClockMode(pub String);

impl fmt::Display for UnknownClockMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<_> = ClockMode::ALL.iter().map(|m| m.name()).collect();
        write!(
            f,
            "clock mode {:?} is not one of {}",
            self.0,
            names.join(", ")
        )
    }
}

impl std::error::Error for UnknownClockMode {}

impl FromStr for ClockMode {
    type Err = UnknownClockMode;

    fn from_str(text: &str) -> Result<ClockMode, UnknownClockMode> {
        ClockMode::ALL
            .into_iter()
            .find(|m| m.name() == text)
            .ok_or_else(|| UnknownClockMode(text.to_string()))
    }
}

/// What a generator does when its clock reads earlier than the newest tick it has issued
/// (a wall clock stepped back, or a restart behind the high-water mark). None of them ever
/// issues an id at or below one already issued.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use snowmint::RollbackPolicy;
///
/// assert_eq!(RollbackPolicy::default(), RollbackPolicy::WaitUpTo(Duration::from_secs(5)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RollbackPolicy {
    /// Return [`IssueError::ClockBehind`](crate::IssueError::ClockBehind), naming the gap.
    Refuse,
    /// Wait (parked) for the clock to catch up if the gap is at most this long, otherwise
    /// return [`IssueError::BehindTooFar`](crate::IssueError::BehindTooFar).
    WaitUpTo(Duration),
    /// A logical clock that never goes back: keep issuing on the newest tick, and move to
    /// the next tick when its sequence is spent, ahead of the wall clock if need be.
    LogicalClock,
    /// Issue the sequence numbers left over in the newest tick the clock has shown; when
    /// they are spent, wait for the clock up to this long (zero: refuse at once).
    SpareSequence {
        /// The longest wait once the spare sequence numbers are spent.
        then_wait_up_to: Duration,
    },
}

impl Default for RollbackPolicy {
    /// Wait up to 5 s: long enough to ride out a small NTP step, short enough that a clock
    /// set back by hand is reported rather than waited out.
    fn default() -> RollbackPolicy {
        RollbackPolicy::WaitUpTo(Duration::from_secs(5))
    }
}

/// What a generator does when a tick's sequence numbers are spent.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use snowmint::OverflowPolicy;
///
/// let burst = OverflowPolicy::Borrow { lead: Duration::from_secs(1) };
/// assert_ne!(burst, OverflowPolicy::default());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OverflowPolicy {
    /// Park the thread until the next tick (the default).
    #[default]
    Wait,
    /// Borrow future ticks, so ids run ahead of real time by at most `lead`; past that,
    /// wait. Absorbs bursts above the per-tick limit.
    Borrow {
        /// The most an id's time may run ahead of the clock.
        lead: Duration,
    },
}

/// Where the sequence starts in each new tick.
///
/// # Examples
///
/// ```
/// use snowmint::SequenceStart;
///
/// assert_eq!(SequenceStart::default(), SequenceStart::Zero);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SequenceStart {
    /// At zero, as Twitter's Snowflake does.
    #[default]
    Zero,
    /// At a random value below `below`, so ids at low traffic are not all even (or all
    /// multiples of the shard count) when used as shard keys.
    Random {
        /// The exclusive upper bound of the start; at most the tick's sequence count.
        below: u64,
    },
    /// Where the previous tick stopped, so the sequence keeps counting across ticks.
    Continue,
}

/// The answer of [`Generator::try_next_id`](crate::Generator::try_next_id), which never waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Poll {
    /// The id.
    Ready(Id),
    /// Nothing may be issued before this tick starts.
    Pending {
        /// The tick waited for, in the layout's ticks since its epoch.
        tick: u64,
        /// When that tick starts, in ms since the Unix epoch.
        until_ms: u64,
        /// Whether the wait is for a clock that went back (the rollback policy waits), not
        /// for a spent sequence: [`Generator::begin_wait`](crate::Generator::begin_wait)
        /// counts the two apart.
        behind: bool,
    },
}

/// Consecutive ids reserved in one step by [`Generator::next_batch`](crate::Generator::next_batch):
/// one tick's worth at most, so they share a timestamp and differ only in their sequence.
///
/// # Examples
///
/// ```
/// use snowmint::{Generator, Layout};
///
/// let generator = Generator::builder(Layout::TWITTER).build()?;
/// let batch = generator.next_batch(3)?;
/// let ids: Vec<_> = batch.iter().collect();
/// assert!(ids.len() <= 3 && ids.windows(2).all(|w| w[0] < w[1]));
/// assert_eq!(ids.first(), Some(&batch.first()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdRange {
    pub(crate) first: Id,
    pub(crate) len: u64,
    /// Distance between consecutive ids: 1 unless the sequence sits above other fields.
    pub(crate) step: u64,
}

impl IdRange {
    /// The first id.
    #[must_use]
    pub const fn first(&self) -> Id {
        self.first
    }

    /// The last id.
    #[must_use]
    pub const fn last(&self) -> Id {
        Id::from_u64(self.first.as_u64() + (self.len - 1) * self.step)
    }

    /// How many ids the range holds (at least one).
    #[must_use]
    #[allow(clippy::len_without_is_empty)] // a batch is never empty
    pub const fn len(&self) -> u64 {
        self.len
    }

    /// The ids, in increasing order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Id> + use<> {
        let (first, step) = (self.first.as_u64(), self.step);
        (0..usize::try_from(self.len).unwrap_or(usize::MAX))
            .map(move |i| Id::from_u64(first + i as u64 * step))
    }
}
