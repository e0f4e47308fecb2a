//! The choices a generator makes when the clock misbehaves or a tick runs out, and the
//! values it hands back.

use std::time::Duration;

use crate::Id;

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
