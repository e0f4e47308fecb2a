//! How each [`SerialError`] reads: lowercase, naming the field, the value and the rule.
//! The text is part of the interface; the tests pin it.

use core::fmt;

use super::{CheckDigit, SerialError};

/// An instant for a message: RFC 3339 UTC when jiff can show it, else the raw count.
struct Instant(i64);

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match jiff::Timestamp::from_millisecond(self.0) {
            Ok(ts) => write!(f, "{ts:.3}"),
            Err(_) => write!(f, "{} ms after the Unix epoch", self.0),
        }
    }
}

fn instant(unix_ms: u64) -> Instant {
    Instant(i64::try_from(unix_ms).unwrap_or(i64::MAX))
}

impl fmt::Display for SerialError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnclosedField { position } => {
                write!(
                    f,
                    "template has '{{' at position {position} with no closing '}}'"
                )
            }
            Self::UnopenedField { position } => {
                write!(
                    f,
                    "template has '}}' at position {position} with no opening '{{'"
                )
            }
            Self::NestedField { position } => write!(
                f,
                "template has '{{' at position {position} inside a field: fields do not nest"
            ),
            Self::UnknownField { name, position } => write!(
                f,
                "unknown field {name:?} at position {position} in template: expected biz, time, node, seq or check"
            ),
            Self::DuplicateField { field } => write!(
                f,
                "field {field} appears twice in the template: each field may appear once"
            ),
            Self::MissingField { field } => write!(
                f,
                "template has no {{{field}}} field: a serial needs time, node and seq to be unique"
            ),
            Self::BadSeparator { ch, position } => write!(
                f,
                "template has {ch:?} at position {position} outside a field: separators may be only - _ . / or space (a letter or digit would make serials ambiguous)"
            ),
            Self::NoOption { field, option } => {
                write!(f, "field {field} takes no option, got {option:?}")
            }
            Self::BadWidth { field, width } => write!(
                f,
                "field {field} has width {width:?}: expected a number of digits, as in {{{field}:5}}"
            ),
            Self::TooWide { field, width } => write!(
                f,
                "field {field} is {width} digits wide, more than the 19 any field of a 64-bit id needs"
            ),
            Self::TooNarrow {
                field,
                width,
                layout,
                needed,
                max,
            } => write!(
                f,
                "field {field} is {width} digits wide but layout {layout} needs {needed} for {max}"
            ),
            Self::UnknownCheck { name } => {
                write!(f, "unknown check digit {name:?}: expected luhn or mod97")
            }
            Self::TimeNotFirst { field } => write!(
                f,
                "field {field} comes before field time: the time must lead node and seq so serials sort in issue order"
            ),
            Self::CheckNotLast { field } => write!(
                f,
                "field {field} comes after field check: the check must be the last field so it covers every other"
            ),
            Self::TemplateTooLong { len, max } => write!(
                f,
                "template is {len} bytes long, more than the {max} allowed"
            ),
            Self::SerialTooLong { len, max } => write!(
                f,
                "template makes serials of up to {len} characters, more than the {max} allowed"
            ),
            Self::EmptyBiz => {
                f.write_str("business code is empty: use 1 to 16 characters from A-Z and 0-9")
            }
            Self::BizTooLong { code, len } => write!(
                f,
                "business code {code:?} has {len} characters, more than the 16 allowed"
            ),
            Self::BizChar { code, ch, position } => write!(
                f,
                "business code {code:?} has {ch:?} at position {position}: use only A-Z and 0-9"
            ),
            Self::NamedZone { name } => write!(
                f,
                "time zone {name:?} is a named zone whose offset can change (daylight saving or a historic change): a local hour that repeats would repeat serials and break their order; use a fixed offset such as +08:00"
            ),
            Self::BadZone { text } => write!(
                f,
                "time zone {text:?} is not UTC, Z or a fixed offset such as +08:00 or -05:30"
            ),
            Self::ZoneOutOfRange { text } => write!(
                f,
                "time zone offset {text:?} is out of range: hours run 00 to 23 and minutes 00 to 59"
            ),
            Self::Id(err) => fmt::Display::fmt(err, f),
            Self::TimeNotWritable { unix_ms } => write!(
                f,
                "time {} is past the year 9999 and does not fit yyyyMMddHHmmssSSS",
                instant(*unix_ms)
            ),
            Self::Write => f.write_str("could not write the serial: the output reported an error"),
            Self::Length { min, max, len } if min == max => {
                write!(f, "expected {min} characters for this template, got {len}")
            }
            Self::Length { min, max, len } => write!(
                f,
                "expected {min} to {max} characters for this template, got {len}"
            ),
            Self::NotAscii { ch, position } => write!(
                f,
                "serial has {ch:?} at position {position}: a serial holds only ASCII letters, digits and separators"
            ),
            Self::Separator {
                expected,
                ch,
                position,
            } => write!(
                f,
                "serial has {ch:?} at position {position} where the template has {expected:?}"
            ),
            Self::FieldChar {
                field,
                ch,
                position,
                expected,
            } => write!(
                f,
                "field {field} has {ch:?} at position {position}: expected {expected}"
            ),
            Self::CheckMismatch {
                check: CheckDigit::Luhn,
                found,
                expected,
            } => write!(
                f,
                "check digit {found} does not match {expected}: the serial was mistyped"
            ),
            Self::CheckMismatch {
                found, expected, ..
            } => write!(
                f,
                "check digits {found:02} do not match {expected:02}: the serial was mistyped"
            ),
            Self::NotATime {
                digits,
                part,
                value,
                min,
                max,
            } => write!(
                f,
                "time {digits} is not a real time: {part} {value} is out of range {min}..={max}"
            ),
            Self::TimeOutOfLayout {
                unix_ms,
                layout,
                first_ms,
                last_ms,
            } => write!(
                f,
                "time {} is outside layout {layout}'s range {}..={}",
                Instant(*unix_ms),
                instant(*first_ms),
                instant(*last_ms)
            ),
            Self::TimeOffTick {
                unix_ms,
                layout,
                tick_ms,
            } => write!(
                f,
                "time {} is not the start of a {tick_ms} ms tick of layout {layout}, so no id has it",
                instant(*unix_ms)
            ),
            Self::FieldOutOfRange {
                field,
                value,
                max,
                layout,
            } => write!(
                f,
                "field {field} {value} is out of range 0..={max} for layout {layout}"
            ),
        }
    }
}
