//! A generator that may not issue now.

use crate::StoreError;
use crate::time::UnixMs;

/// Why [`Generator::next_id`](crate::Generator::next_id),
/// [`try_next_id`](crate::Generator::try_next_id) or
/// [`next_batch`](crate::Generator::next_batch) issued nothing.
///
/// Every variant but [`ZeroBatch`](Self::ZeroBatch) is the generator's state, not the
/// caller's input: the clock, the store, the lease or a shutdown. It is not
/// `#[non_exhaustive]`, on purpose: a service sorts these one by one (try again later, or
/// fix the request), and a new one must stop such a caller's build rather than fall into
/// its default arm.
///
/// # Examples
///
/// ```
/// use snowmint::{Generator, IssueError, Layout};
///
/// let g = Generator::builder(Layout::TWITTER).build()?;
/// g.shutdown()?;
/// let err = g.next_id().unwrap_err();
/// assert!(matches!(err, IssueError::Closed));
/// assert_eq!(err.to_string(), "generator is shut down and issues no more ids");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, thiserror::Error)]
pub enum IssueError {
    /// The clock is behind the newest tick the generator has issued, and the rollback
    /// policy refuses to issue.
    #[error(
        "clock is {behind_ms} ms behind the newest id issued; refusing to issue until it catches up"
    )]
    ClockBehind {
        /// How far behind, in milliseconds.
        behind_ms: u64,
    },
    /// The clock is behind by more than the rollback policy waits for.
    #[error(
        "clock is {behind_ms} ms behind the newest id issued, more than the {max_wait_ms} ms this generator waits"
    )]
    BehindTooFar {
        /// How far behind, in milliseconds.
        behind_ms: u64,
        /// The longest wait the policy allows, in milliseconds.
        max_wait_ms: u64,
    },
    /// The clock reads an instant outside the span the layout's timestamp covers.
    #[error(
        "time {} is outside the layout's range {}..={}",
        UnixMs(*.unix_ms),
        UnixMs(*.first_ms),
        UnixMs(*.last_ms)
    )]
    TimeOutOfRange {
        /// What the clock read (or the tick it stands at), in ms since the Unix epoch.
        unix_ms: u64,
        /// The first instant the layout covers (its epoch).
        first_ms: u64,
        /// The last instant the layout covers.
        last_ms: u64,
    },
    /// The store could not record a reservation, so nothing past the last one may be
    /// issued.
    #[error("cannot raise the high-water mark to {}", UnixMs(*.until_ms))]
    Reserve {
        /// The mark the generator asked for, in ms since the Unix epoch.
        until_ms: u64,
        /// What the store said.
        source: StoreError,
    },
    /// The store granted a reservation that ends before the id being issued (a registry
    /// that has confirmed a mark only so far).
    #[error(
        "high-water mark store vouches for ids only up to {}, before the id being issued at {}",
        UnixMs(*.granted_ms),
        UnixMs(*.needed_ms)
    )]
    ShortGrant {
        /// How far the store vouches, in ms since the Unix epoch.
        granted_ms: u64,
        /// When the tick of the id being issued starts, in ms since the Unix epoch.
        needed_ms: u64,
    },
    /// The generator's worker-id lease is not confirmed for now: it issues nothing until
    /// the lease is renewed.
    #[error(
        "worker id lease was confirmed only until {}: no ids until it is renewed",
        UnixMs(*.until_ms)
    )]
    Fenced {
        /// The instant up to which the lease was confirmed, in ms since the Unix epoch.
        until_ms: u64,
    },
    /// The generator was shut down and issues no more ids.
    #[error("generator is shut down and issues no more ids")]
    Closed,
    /// [`next_batch`](crate::Generator::next_batch) was asked for no ids: every batch holds
    /// at least one.
    #[error("batch count 0 is out of range 1..={}", u64::MAX)]
    ZeroBatch,
}
