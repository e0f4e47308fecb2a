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
/// let err = Generator::builder(Layout::DISCORD).build().unwrap_err();
/// assert_eq!(err.to_string(), "layout discord uses bit 63 and can decode ids but not generate them");
/// assert!(matches!(err, BuildError::DecodeOnly { layout: "discord" }));
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A decode-only layout (one that uses bit 63) was given to a generator.
    #[error("layout {layout} uses bit 63 and can decode ids but not generate them")]
    DecodeOnly {
        /// The layout's name.
        layout: &'static str,
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
