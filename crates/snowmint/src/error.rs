//! The one error type of the core crate.
//!
//! Every message is lowercase, names the value that was refused and the limit it broke, and
//! is part of the interface: the tests pin the exact text.

use core::fmt;

use crate::encoding::Encoding;
use crate::time::UnixMs;

/// Everything that can go wrong in the core: an invalid layout, an out-of-range value, an
/// id that does not parse, or a generator that may not issue.
///
/// # Examples
///
/// ```
/// use snowmint::{Error, Layout};
///
/// let err = Layout::TWITTER.compose(0, 0, 40, 0).unwrap_err();
/// assert_eq!(err.to_string(), "worker id 40 is out of range 0..=31");
/// assert!(matches!(err, Error::OutOfRange { .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The layout's fields need more bits than an id has.
    LayoutTooWide {
        /// Bits the fields need in total (sign bit excluded).
        bits: u32,
        /// Bits available: 63 for layouts that generate, 64 for decode-only layouts.
        limit: u32,
    },
    /// A layout with no timestamp bits cannot sort by time.
    NoTimestampBits,
    /// The tick length is zero.
    ZeroTick,
    /// A field order names a field twice.
    DuplicateField,
    /// No preset has this name.
    UnknownPreset {
        /// The name that was asked for.
        name: String,
    },
    /// The layout's last tick lies past what a 64-bit millisecond count can hold.
    EpochOverflow {
        /// The epoch, in milliseconds since the Unix epoch.
        epoch_ms: u64,
    },
    /// A field's value does not fit its bits.
    OutOfRange {
        /// What the value is: "worker id", "datacenter id", "sequence", "timestamp".
        what: &'static str,
        /// The value that was refused.
        value: u64,
        /// The largest value the field holds.
        max: u64,
    },
    /// An instant lies outside the span the layout's timestamp field covers.
    TimeOutOfRange {
        /// The instant that was refused.
        unix_ms: u64,
        /// The first instant the layout covers (its epoch).
        first_ms: u64,
        /// The last instant the layout covers.
        last_ms: u64,
    },
    /// An id is larger than the layout's largest id (it sets bits the layout never uses).
    IdOutOfRange {
        /// The id that was refused.
        id: u64,
        /// The largest id of the layout.
        max: u64,
    },
    /// A decode-only layout (one that uses bit 63) was given to a generator.
    DecodeOnly {
        /// The layout's name.
        layout: &'static str,
    },
    /// Text to parse as an id was empty.
    Empty,
    /// A character is not part of the encoding.
    InvalidChar {
        /// The encoding the text was parsed as.
        encoding: Encoding,
        /// The character that was refused.
        ch: char,
        /// Its position, counted in characters from 0.
        position: usize,
    },
    /// The text is longer than any id in the encoding.
    TooLong {
        /// The encoding the text was parsed as.
        encoding: Encoding,
        /// Characters given.
        len: usize,
        /// Characters an id takes at most.
        max: usize,
    },
    /// The text denotes a number that does not fit in 64 bits.
    Overflow {
        /// The encoding the text was parsed as.
        encoding: Encoding,
    },
    /// The clock is behind the newest tick the generator has issued, and the rollback
    /// policy refuses to issue.
    ClockBehind {
        /// How far behind, in milliseconds.
        behind_ms: u64,
    },
    /// The clock is behind by more than the rollback policy waits for.
    BehindTooFar {
        /// How far behind, in milliseconds.
        behind_ms: u64,
        /// The longest wait the policy allows, in milliseconds.
        max_wait_ms: u64,
    },
    /// The high-water-mark store could not record a reservation, so nothing past the last
    /// one may be issued.
    Store {
        /// What the store said.
        message: String,
    },
    /// The generator's worker-id lease is not confirmed for now: it issues nothing until
    /// the lease is renewed.
    Fenced {
        /// The instant up to which the lease was confirmed, in ms since the Unix epoch.
        until_ms: u64,
    },
    /// The generator was shut down and issues no more ids.
    Closed,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::LayoutTooWide { bits, limit: 63 } => write!(
                f,
                "layout needs {bits} bits but a generated id has 63 (bit 63 stays 0 so ids are positive)"
            ),
            Self::LayoutTooWide { bits, limit } => {
                write!(f, "layout needs {bits} bits but an id has {limit}")
            }
            Self::NoTimestampBits => f.write_str("layout needs at least 1 timestamp bit, got 0"),
            Self::ZeroTick => f.write_str("tick length must be at least 1 ms, got 0"),
            Self::DuplicateField => f.write_str(
                "layout order names a field twice: give datacenter, worker and sequence once each",
            ),
            Self::UnknownPreset { name } => write!(
                f,
                "unknown layout {name:?}: expected one of {}",
                crate::Layout::PRESETS.map(|l| l.name()).join(", ")
            ),
            Self::EpochOverflow { epoch_ms } => write!(
                f,
                "epoch {epoch_ms} ms puts the layout's last tick past the largest millisecond count"
            ),
            Self::OutOfRange { what, value, max } => {
                write!(f, "{what} {value} is out of range 0..={max}")
            }
            Self::TimeOutOfRange {
                unix_ms,
                first_ms,
                last_ms,
            } => write!(
                f,
                "time {} is outside the layout's range {}..={}",
                UnixMs(*unix_ms),
                UnixMs(*first_ms),
                UnixMs(*last_ms)
            ),
            Self::IdOutOfRange { id, max } => {
                write!(
                    f,
                    "id {id} is out of range for this layout: its largest id is {max}"
                )
            }
            Self::DecodeOnly { layout } => write!(
                f,
                "layout {layout} uses bit 63 and can decode ids but not generate them"
            ),
            Self::Empty => f.write_str("empty input: expected an id"),
            Self::InvalidChar {
                encoding,
                ch,
                position,
            } => write!(
                f,
                "invalid character {ch:?} at position {position} in {encoding} id"
            ),
            Self::TooLong { encoding, len, max } => write!(
                f,
                "{encoding} id has {len} characters, more than the {max} a 64-bit id takes"
            ),
            Self::Overflow { encoding } => write!(f, "{encoding} id does not fit in 64 bits"),
            Self::ClockBehind { behind_ms } => write!(
                f,
                "clock is {behind_ms} ms behind the newest id issued; refusing to issue until it catches up"
            ),
            Self::BehindTooFar {
                behind_ms,
                max_wait_ms,
            } => write!(
                f,
                "clock is {behind_ms} ms behind the newest id issued, more than the {max_wait_ms} ms this generator waits"
            ),
            Self::Store { message } => {
                write!(f, "high-water mark could not be recorded: {message}")
            }
            Self::Fenced { until_ms } => write!(
                f,
                "worker id lease was confirmed only until {}: no ids until it is renewed",
                UnixMs(*until_ms)
            ),
            Self::Closed => f.write_str("generator is shut down and issues no more ids"),
        }
    }
}

impl std::error::Error for Error {}
