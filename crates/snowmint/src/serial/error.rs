//! What can go wrong with serials: a template, a business code or a zone that is refused
//! when configured, an id that cannot be written, or text that is not a serial.
//!
//! Each message sits beside its variant; every one is lowercase and names the field, the
//! value and the rule it broke. The text is part of the interface: the tests pin it.

use core::fmt;

use super::CheckDigit;
use crate::RangeError;

/// Everything that can go wrong with a serial.
///
/// # Examples
///
/// ```
/// use snowmint::serial::{SerialError, Template};
/// use snowmint::Layout;
///
/// let err = Template::parse("{biz}{time}{node:3}{seq}", &Layout::TWITTER).unwrap_err();
/// assert_eq!(err.to_string(), "field node is 3 digits wide but layout twitter needs 4 for 1023");
/// assert!(matches!(err, SerialError::TooNarrow { .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SerialError {
    /// A `{` in the template has no `}` after it.
    #[error("template has '{{' at position {position} with no closing '}}'")]
    UnclosedField {
        /// Where the `{` is, in characters from 0.
        position: usize,
    },
    /// A `}` in the template has no `{` before it.
    #[error("template has '}}' at position {position} with no opening '{{'")]
    UnopenedField {
        /// Where the `}` is, in characters from 0.
        position: usize,
    },
    /// A `{` inside a field: fields do not nest.
    #[error("template has '{{' at position {position} inside a field: fields do not nest")]
    NestedField {
        /// Where the inner `{` is, in characters from 0.
        position: usize,
    },
    /// A field name the template grammar does not know.
    #[error(
        "unknown field {name:?} at position {position} in template: expected biz, time, node, seq or check"
    )]
    UnknownField {
        /// The name between the braces.
        name: String,
        /// Where the field's `{` is, in characters from 0.
        position: usize,
    },
    /// A field appears twice in the template.
    #[error("field {field} appears twice in the template: each field may appear once")]
    DuplicateField {
        /// The field's name.
        field: &'static str,
    },
    /// The template lacks `{time}`, `{node}` or `{seq}`.
    #[error("template has no {{{field}}} field: a serial needs time, node and seq to be unique")]
    MissingField {
        /// The missing field's name.
        field: &'static str,
    },
    /// A character outside the fields that is not a separator.
    #[error(
        "template has {ch:?} at position {position} outside a field: separators may be only - _ . / or space (a letter or digit would make serials ambiguous)"
    )]
    BadSeparator {
        /// The character.
        ch: char,
        /// Where it is, in characters from 0.
        position: usize,
    },
    /// An option on a field that takes none (`{time:5}`).
    #[error("field {field} takes no option, got {option:?}")]
    NoOption {
        /// The field's name.
        field: &'static str,
        /// The option given.
        option: String,
    },
    /// A width that is not a number (`{node:x}`).
    #[error("field {field} has width {width:?}: expected a number of digits, as in {{{field}:5}}")]
    BadWidth {
        /// The field's name.
        field: &'static str,
        /// The width given.
        width: String,
    },
    /// A width wider than any field of a 64-bit id needs.
    #[error(
        "field {field} is {width} digits wide, more than the 19 any field of a 64-bit id needs"
    )]
    TooWide {
        /// The field's name.
        field: &'static str,
        /// The width given.
        width: usize,
    },
    /// A width too narrow for the largest value the layout puts in the field.
    #[error("field {field} is {width} digits wide but layout {layout} needs {needed} for {max}")]
    TooNarrow {
        /// The field's name.
        field: &'static str,
        /// The width given.
        width: usize,
        /// The layout's name.
        layout: &'static str,
        /// The width the layout needs.
        needed: usize,
        /// The largest value of the field in the layout.
        max: u64,
    },
    /// A check digit algorithm that is not `luhn` or `mod97`.
    #[error("unknown check digit {name:?}: expected luhn or mod97")]
    UnknownCheck {
        /// The name given.
        name: String,
    },
    /// `{node}` or `{seq}` comes before `{time}`, so serials would not sort by time.
    #[error(
        "field {field} comes before field time: the time must lead node and seq so serials sort in issue order"
    )]
    TimeNotFirst {
        /// The field that comes first.
        field: &'static str,
    },
    /// A field comes after `{check}`, so the check would not cover it.
    #[error(
        "field {field} comes after field check: the check must be the last field so it covers every other"
    )]
    CheckNotLast {
        /// The field after the check.
        field: &'static str,
    },
    /// A template text longer than [`Template::MAX_TEXT_LEN`](super::Template::MAX_TEXT_LEN)
    /// bytes, refused before it is read.
    #[error("template is {len} bytes long, more than the {max} allowed")]
    TemplateTooLong {
        /// The template's length in bytes.
        len: usize,
        /// The most allowed.
        max: usize,
    },
    /// A template whose serials could be longer than
    /// [`Template::MAX_SERIAL_LEN`](super::Template::MAX_SERIAL_LEN) characters.
    #[error("template makes serials of up to {len} characters, more than the {max} allowed")]
    SerialTooLong {
        /// The longest serial the template makes (with a 16-character business code if it
        /// has `{biz}`).
        len: usize,
        /// The most allowed.
        max: usize,
    },
    /// A business code with no characters.
    #[error("business code is empty: use 1 to 16 characters from A-Z and 0-9")]
    EmptyBiz,
    /// A business code longer than [`BizCode::MAX_LEN`](super::BizCode::MAX_LEN).
    #[error("business code {code:?} has {len} characters, more than the 16 allowed")]
    BizTooLong {
        /// The code given.
        code: String,
        /// Its length in characters.
        len: usize,
    },
    /// A business code with a character outside `[A-Z0-9]`.
    #[error("business code {code:?} has {ch:?} at position {position}: use only A-Z and 0-9")]
    BizChar {
        /// The code given.
        code: String,
        /// The character.
        ch: char,
        /// Where it is in the code, in characters from 0.
        position: usize,
    },
    /// A named time zone, whose offset can change and repeat a local hour.
    #[error(
        "time zone {name:?} is a named zone whose offset can change (daylight saving or a historic change): a local hour that repeats would repeat serials and break their order; use a fixed offset such as +08:00"
    )]
    NamedZone {
        /// The name given.
        name: String,
    },
    /// A time zone that is neither UTC nor a fixed offset.
    #[error("time zone {text:?} is not UTC, Z or a fixed offset such as +08:00 or -05:30")]
    BadZone {
        /// The text given.
        text: String,
    },
    /// A fixed offset beyond ±23:59.
    #[error("time zone offset {text:?} is out of range: hours run 00 to 23 and minutes 00 to 59")]
    ZoneOutOfRange {
        /// The text given.
        text: String,
    },
    /// The id does not fit the template's layout (it sets bits the layout never uses).
    #[error(transparent)]
    Id(#[from] RangeError),
    /// The id's time is past the year 9999, which `yyyy` cannot hold.
    #[error(
        "time {} is past the year 9999 and does not fit yyyyMMddHHmmssSSS",
        crate::UnixMs(*.unix_ms)
    )]
    TimeNotWritable {
        /// The id's time, in ms since the Unix epoch.
        unix_ms: u64,
    },
    /// The output given to [`Template::write_to`](super::Template::write_to) failed.
    #[error("could not write the serial: the output reported an error")]
    Write,
    /// The text has the wrong length for the template.
    #[error("expected {} characters for this template, got {len}", Span(*.min, *.max))]
    Length {
        /// The fewest characters a serial of this template has.
        min: usize,
        /// The most characters a serial of this template has.
        max: usize,
        /// Characters given.
        len: usize,
    },
    /// A character outside ASCII, which no serial holds.
    #[error(
        "serial has {ch:?} at position {position}: a serial holds only ASCII letters, digits and separators"
    )]
    NotAscii {
        /// The character.
        ch: char,
        /// Where it is, in characters from 0.
        position: usize,
    },
    /// The text differs from a separator of the template.
    #[error("serial has {ch:?} at position {position} where the template has {expected:?}")]
    Separator {
        /// The separator the template has there.
        expected: char,
        /// The character found.
        ch: char,
        /// Where it is, in characters from 0.
        position: usize,
    },
    /// A character that does not belong in its field.
    #[error("field {field} has {ch:?} at position {position}: expected {expected}")]
    FieldChar {
        /// The field's name.
        field: &'static str,
        /// The character.
        ch: char,
        /// Where it is in the serial, in characters from 0.
        position: usize,
        /// What the field holds.
        expected: &'static str,
    },
    /// The check digits do not match the rest of the serial.
    #[error(
        "{}: the serial was mistyped",
        Mismatch { check: *.check, found: *.found, expected: *.expected }
    )]
    CheckMismatch {
        /// The algorithm.
        check: CheckDigit,
        /// The check digits in the serial.
        found: u8,
        /// The check digits the rest of the serial calls for.
        expected: u8,
    },
    /// The time field is not a real date and time.
    #[error("time {digits} is not a real time: {part} {value} is out of range {min}..={max}")]
    NotATime {
        /// The time field's 17 digits.
        digits: String,
        /// The part that is wrong: "month", "day", "hour", "minute" or "second".
        part: &'static str,
        /// Its value.
        value: i16,
        /// Its smallest value.
        min: i16,
        /// Its largest value (for a day, in that month).
        max: i16,
    },
    /// The time lies outside the span the layout's timestamp covers.
    #[error(
        "time {} is outside layout {layout}'s range {}..={}",
        Signed(*.unix_ms),
        crate::UnixMs(*.first_ms),
        crate::UnixMs(*.last_ms)
    )]
    TimeOutOfLayout {
        /// The time, in ms since the Unix epoch (negative before 1970).
        unix_ms: i64,
        /// The layout's name.
        layout: &'static str,
        /// The first instant the layout covers.
        first_ms: u64,
        /// The last instant the layout covers.
        last_ms: u64,
    },
    /// The time is not the start of one of the layout's ticks, so no id has it.
    #[error(
        "time {} is not the start of a {tick_ms} ms tick of layout {layout}, so no id has it",
        crate::UnixMs(*.unix_ms)
    )]
    TimeOffTick {
        /// The time, in ms since the Unix epoch.
        unix_ms: u64,
        /// The layout's name.
        layout: &'static str,
        /// The layout's tick length in ms.
        tick_ms: u64,
    },
    /// A node or sequence larger than the layout holds.
    #[error("field {field} {value} is out of range 0..={max} for layout {layout}")]
    FieldOutOfRange {
        /// The field's name.
        field: &'static str,
        /// The value found.
        value: u64,
        /// The largest value the layout holds.
        max: u64,
        /// The layout's name.
        layout: &'static str,
    },
}

/// A time that may lie before 1970, for a message: [`UnixMs`](crate::UnixMs) writes the
/// others, and jiff the few years of local time a serial can name before the Unix epoch.
struct Signed(i64);

impl fmt::Display for Signed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (
            u64::try_from(self.0),
            jiff::Timestamp::from_millisecond(self.0),
        ) {
            (Ok(ms), _) => write!(f, "{}", crate::UnixMs(ms)),
            (Err(_), Ok(ts)) => write!(f, "{ts:.3}"),
            (Err(_), Err(_)) => write!(f, "{} ms after the Unix epoch", self.0),
        }
    }
}

/// How many characters a template's serials have: one count, or a span.
struct Span(usize, usize);

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Span(min, max) if min == max => write!(f, "{min}"),
            Span(min, max) => write!(f, "{min} to {max}"),
        }
    }
}

/// Check digits that do not match, as many as the algorithm writes.
struct Mismatch {
    check: CheckDigit,
    found: u8,
    expected: u8,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Mismatch {
            found, expected, ..
        } = self;
        match self.check {
            CheckDigit::Luhn => write!(f, "check digit {found} does not match {expected}"),
            CheckDigit::Mod97 => write!(f, "check digits {found:02} do not match {expected:02}"),
        }
    }
}
