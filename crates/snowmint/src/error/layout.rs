//! A layout that cannot be built.

use core::fmt;

use crate::TimeError;

/// Why a layout cannot be built: what [`Layout::new`](crate::Layout::new), its `with_*`
/// methods and [`Layout::by_name`](crate::Layout::by_name) return. Every variant is about
/// the settings given.
///
/// # Examples
///
/// ```
/// use snowmint::{Layout, LayoutError};
///
/// let err = Layout::by_name("snowflake").unwrap_err();
/// assert!(err.to_string().starts_with(r#"unknown layout "snowflake": expected one of twitter, "#));
/// assert!(matches!(err, LayoutError::UnknownPreset { .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LayoutError {
    /// The layout's fields need more bits than an id has.
    #[error("layout needs {bits} bits but {}", Room(*.limit))]
    TooWide {
        /// Bits the fields need in total (sign bit excluded).
        bits: u32,
        /// Bits available: 63, or 64 for layouts made to use bit 63 ([`Layout::new_u64`](crate::Layout::new_u64)).
        limit: u32,
    },
    /// A layout with no timestamp bits cannot sort by time.
    #[error("layout needs at least 1 timestamp bit, got 0")]
    NoTimestampBits,
    /// The tick length is zero.
    #[error("tick length must be at least 1 ms, got 0")]
    ZeroTick,
    /// A field order names a field twice.
    #[error("layout order names a field twice: give datacenter, worker and sequence once each")]
    DuplicateField,
    /// The layout's last tick lies past what a 64-bit millisecond count can hold.
    #[error("epoch {epoch_ms} ms puts the layout's last tick past the largest millisecond count")]
    EpochOverflow {
        /// The epoch, in milliseconds since the Unix epoch.
        epoch_ms: u64,
    },
    /// A `custom:` layout is not four widths separated by `/`.
    #[error(
        "custom layout {text:?} must be custom:T/D/W/S, four bit widths (timestamp/datacenter/worker/sequence) such as custom:41/5/5/12"
    )]
    CustomSyntax {
        /// The layout as written.
        text: String,
    },
    /// A width of a `custom:` layout is not a number of bits.
    #[error("custom layout {field} width {text:?} is not a number of bits 0..=64")]
    CustomWidth {
        /// The field: timestamp, datacenter, worker or sequence.
        field: &'static str,
        /// The width as written.
        text: String,
    },
    /// The widths of a `custom:` layout do not add up to 63 or 64.
    #[error(
        "custom layout widths add up to {bits} bits: they must add up to 63 (bit 63 stays 0) or 64"
    )]
    CustomTotal {
        /// The sum of the four widths.
        bits: u32,
    },
    /// A `custom:` layout with no sequence bits.
    #[error("custom layout needs at least 1 sequence bit, got 0")]
    NoSequenceBits,
    /// No preset has this name.
    #[error(
        "unknown layout {name:?}: expected one of {} or custom:T/D/W/S",
        crate::Layout::PRESETS.map(|l| l.name()).join(", ")
    )]
    UnknownPreset {
        /// The name that was asked for.
        name: String,
    },
}

/// The room an id has, as [`LayoutError::TooWide`] says it.
struct Room(u32);

impl fmt::Display for Room {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            63 => f.write_str("a generated id has 63 (bit 63 stays 0 so ids are positive)"),
            limit => write!(f, "an id has {limit}"),
        }
    }
}

/// Why [`Layout::chosen`](crate::Layout::chosen) refused a layout, by the part at fault, so a
/// caller can name the flag or key that gave it; the refusal itself is the source.
///
/// # Examples
///
/// ```
/// use snowmint::error::LayoutChoiceError;
/// use snowmint::{Layout, UnixMs};
///
/// let err = Layout::chosen("twitter", Some(0), None, UnixMs(0)).unwrap_err();
/// assert!(matches!(err, LayoutChoiceError::TickMs { tick_ms: 0, .. }));
/// assert_eq!(err.to_string(), "cannot use a tick of 0 ms");
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum LayoutChoiceError {
    /// The name is no preset and no valid `custom:T/D/W/S`.
    #[error(transparent)]
    Name(LayoutError),
    /// The tick length does not suit the layout.
    #[error("cannot use a tick of {tick_ms} ms")]
    TickMs {
        /// The tick length given.
        tick_ms: u64,
        /// Why it does not suit.
        source: LayoutError,
    },
    /// The epoch is no instant, or lies in the future.
    #[error(transparent)]
    EpochTime(TimeError),
    /// The epoch does not suit the layout.
    #[error("cannot use epoch {text}")]
    Epoch {
        /// The epoch as given.
        text: String,
        /// Why it does not suit.
        source: LayoutError,
    },
}
