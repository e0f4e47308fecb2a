//! What can go wrong with serials: a template, a business code or a zone that is refused
//! when configured, an id that cannot be written, or text that is not a serial.
//!
//! Every message is lowercase and names the field, the value and the rule it broke; the
//! tests pin the exact text.

use super::CheckDigit;

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
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SerialError {
    /// A `{` in the template has no `}` after it.
    UnclosedField {
        /// Where the `{` is, in characters from 0.
        position: usize,
    },
    /// A `}` in the template has no `{` before it.
    UnopenedField {
        /// Where the `}` is, in characters from 0.
        position: usize,
    },
    /// A `{` inside a field: fields do not nest.
    NestedField {
        /// Where the inner `{` is, in characters from 0.
        position: usize,
    },
    /// A field name the template grammar does not know.
    UnknownField {
        /// The name between the braces.
        name: String,
        /// Where the field's `{` is, in characters from 0.
        position: usize,
    },
    /// A field appears twice in the template.
    DuplicateField {
        /// The field's name.
        field: &'static str,
    },
    /// The template lacks `{time}`, `{node}` or `{seq}`.
    MissingField {
        /// The missing field's name.
        field: &'static str,
    },
    /// A character outside the fields that is not a separator.
    BadSeparator {
        /// The character.
        ch: char,
        /// Where it is, in characters from 0.
        position: usize,
    },
    /// An option on a field that takes none (`{time:5}`).
    NoOption {
        /// The field's name.
        field: &'static str,
        /// The option given.
        option: String,
    },
    /// A width that is not a number (`{node:x}`).
    BadWidth {
        /// The field's name.
        field: &'static str,
        /// The width given.
        width: String,
    },
    /// A width wider than any field of a 64-bit id needs.
    TooWide {
        /// The field's name.
        field: &'static str,
        /// The width given.
        width: usize,
    },
    /// A width too narrow for the largest value the layout puts in the field.
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
    UnknownCheck {
        /// The name given.
        name: String,
    },
    /// `{node}` or `{seq}` comes before `{time}`, so serials would not sort by time.
    TimeNotFirst {
        /// The field that comes first.
        field: &'static str,
    },
    /// A field comes after `{check}`, so the check would not cover it.
    CheckNotLast {
        /// The field after the check.
        field: &'static str,
    },
    /// A template text longer than [`Template::MAX_TEXT_LEN`](super::Template::MAX_TEXT_LEN)
    /// bytes, refused before it is read.
    TemplateTooLong {
        /// The template's length in bytes.
        len: usize,
        /// The most allowed.
        max: usize,
    },
    /// A template whose serials could be longer than
    /// [`Template::MAX_SERIAL_LEN`](super::Template::MAX_SERIAL_LEN) characters.
    SerialTooLong {
        /// The longest serial the template makes (with a 16-character business code if it
        /// has `{biz}`).
        len: usize,
        /// The most allowed.
        max: usize,
    },
    /// A business code with no characters.
    EmptyBiz,
    /// A business code longer than [`BizCode::MAX_LEN`](super::BizCode::MAX_LEN).
    BizTooLong {
        /// The code given.
        code: String,
        /// Its length in characters.
        len: usize,
    },
    /// A business code with a character outside `[A-Z0-9]`.
    BizChar {
        /// The code given.
        code: String,
        /// The character.
        ch: char,
        /// Where it is in the code, in characters from 0.
        position: usize,
    },
    /// A named time zone, whose offset can change and repeat a local hour.
    NamedZone {
        /// The name given.
        name: String,
    },
    /// A time zone that is neither UTC nor a fixed offset.
    BadZone {
        /// The text given.
        text: String,
    },
    /// A fixed offset beyond ±23:59.
    ZoneOutOfRange {
        /// The text given.
        text: String,
    },
    /// The id does not fit the template's layout (it sets bits the layout never uses).
    Id(crate::Error),
    /// The id's time is past the year 9999, which `yyyy` cannot hold.
    TimeNotWritable {
        /// The id's time, in ms since the Unix epoch.
        unix_ms: u64,
    },
    /// The output given to [`Template::write_to`](super::Template::write_to) failed.
    Write,
    /// The text has the wrong length for the template.
    Length {
        /// The fewest characters a serial of this template has.
        min: usize,
        /// The most characters a serial of this template has.
        max: usize,
        /// Characters given.
        len: usize,
    },
    /// A character outside ASCII, which no serial holds.
    NotAscii {
        /// The character.
        ch: char,
        /// Where it is, in characters from 0.
        position: usize,
    },
    /// The text differs from a separator of the template.
    Separator {
        /// The separator the template has there.
        expected: char,
        /// The character found.
        ch: char,
        /// Where it is, in characters from 0.
        position: usize,
    },
    /// A character that does not belong in its field.
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
    CheckMismatch {
        /// The algorithm.
        check: CheckDigit,
        /// The check digits in the serial.
        found: u8,
        /// The check digits the rest of the serial calls for.
        expected: u8,
    },
    /// The time field is not a real date and time.
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
    TimeOffTick {
        /// The time, in ms since the Unix epoch.
        unix_ms: u64,
        /// The layout's name.
        layout: &'static str,
        /// The layout's tick length in ms.
        tick_ms: u64,
    },
    /// A node or sequence larger than the layout holds.
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

impl std::error::Error for SerialError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            // Transparent: the core error is the whole message, so it is not repeated as a cause.
            Self::Id(err) => err.source(),
            _ => None,
        }
    }
}

impl From<crate::Error> for SerialError {
    fn from(err: crate::Error) -> SerialError {
        SerialError::Id(err)
    }
}
