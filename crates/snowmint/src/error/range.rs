//! A value outside what a layout holds.

use crate::time::UnixMs;

/// A value a layout cannot hold: a field too large for its bits, an id with bits the
/// layout never sets, or an instant outside its timestamp's span. What
/// [`Layout::compose`](crate::Layout::compose), [`Layout::decode`](crate::Layout::decode)
/// and [`Layout::tick_at`](crate::Layout::tick_at) return. Every variant is about the
/// value given.
///
/// # Examples
///
/// ```
/// use snowmint::{Layout, RangeError};
///
/// let err = Layout::TWITTER.compose(0, snowmint::Fields { datacenter: 0, worker: 40, sequence: 0 }).unwrap_err();
/// assert_eq!(err.to_string(), "worker id 40 is out of range 0..=31");
/// assert!(matches!(err, RangeError::Field { what: "worker id", .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RangeError {
    /// A field's value does not fit its bits.
    #[error("{what} {value} is out of range 0..={max}")]
    Field {
        /// What the value is: "worker id", "datacenter id", "sequence", "timestamp".
        what: &'static str,
        /// The value that was refused.
        value: u64,
        /// The largest value the field holds.
        max: u64,
    },
    /// An id is larger than the layout's largest id (it sets bits the layout never uses).
    #[error("id {id} is out of range for this layout: its largest id is {max}")]
    Id {
        /// The id that was refused.
        id: u64,
        /// The largest id of the layout.
        max: u64,
    },
    /// An instant lies outside the span the layout's timestamp field covers.
    #[error(
        "time {} is outside the layout's range {}..={}",
        UnixMs(*.unix_ms),
        UnixMs(*.first_ms),
        UnixMs(*.last_ms)
    )]
    Time {
        /// The instant that was refused.
        unix_ms: u64,
        /// The first instant the layout covers (its epoch).
        first_ms: u64,
        /// The last instant the layout covers.
        last_ms: u64,
    },
}
