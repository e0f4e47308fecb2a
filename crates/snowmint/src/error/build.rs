//! A generator that cannot be built.

use super::RangeError;
use crate::StoreError;
use crate::time::UnixMs;

/// Why [`Builder::build`](crate::Builder::build) refused: a setting the layout cannot
/// hold, or a high-water mark that cannot be read or followed.
///
/// # Examples
///
/// ```
/// use snowmint::{BuildError, Generator, Layout};
///
/// let err = Generator::builder(Layout::BAIDU).build().unwrap_err();
/// assert_eq!(err.to_string(), "layout baidu's time field ran out on 2024-11-20T21:24:16.000Z, so no id can be issued; use another layout or a later epoch");
/// assert!(matches!(err, BuildError::RanOut { layout: "baidu", .. }));
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The layout's time field ran out before the clock's present: no id can be issued.
    #[error(
        "layout {layout}'s time field ran out on {}, so no id can be issued; use another layout or a later epoch",
        UnixMs(*.end_ms)
    )]
    RanOut {
        /// The layout's name.
        layout: &'static str,
        /// The first instant the time field cannot hold, in ms since the Unix epoch.
        end_ms: u64,
    },
    /// A datacenter id, worker id or random sequence start bound the layout cannot hold.
    #[error(transparent)]
    Range(#[from] RangeError),
    /// The store's high-water mark could not be read: the generator refuses to start
    /// rather than guess.
    #[error("cannot read the high-water mark")]
    Load {
        /// What the store said.
        source: StoreError,
    },
    /// The high-water mark lies past the layout's last instant: no id can follow it.
    #[error(
        "high-water mark {} is past the layout's last instant {}: no id can follow it",
        UnixMs(*.mark_ms),
        UnixMs(*.last_ms)
    )]
    MarkPastEnd {
        /// The mark, in ms since the Unix epoch.
        mark_ms: u64,
        /// The last instant the layout covers.
        last_ms: u64,
    },
}
