//! Reading serials back: business code, time, node, sequence, and the id they came from.

use super::biz::is_biz_char;
use super::check::Checksum;
use super::grammar::{Piece, TIME_WIDTH, max_node};
use super::{BizCode, SerialError, Template, Zone};
use crate::{Decoded, Id, UnixMs};

/// Milliseconds per second, minute, hour and day, for the time field.
const SECOND_MS: i64 = 1_000;
const MINUTE_MS: i64 = 60 * SECOND_MS;
const HOUR_MS: i64 = 60 * MINUTE_MS;

/// A serial taken apart by [`Template::parse_serial`].
///
/// With serde, it serializes with the keys `biz` (a string, or null without `{biz}`), `id`
/// (a decimal string), `unix_ms`, `datacenter`, `worker` and `sequence`.
///
/// # Examples
///
/// ```
/// use snowmint::serial::{Template, Zone};
/// use snowmint::{Layout, UnixMs};
///
/// let parsed = Template::new(&Layout::TWITTER).parse_serial("PAY2026112215304512300340007", &Zone::UTC)?;
/// assert_eq!(parsed.time().to_string(), "2026-11-22T15:30:45.123Z");
/// assert_eq!(Layout::TWITTER.decode(parsed.id)?.worker, parsed.worker);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ParsedSerial {
    /// The business code, if the template has `{biz}`.
    pub biz: Option<BizCode>,
    /// The id the serial was made from.
    pub id: Id,
    /// The id's time (the start of its tick), in ms since the Unix epoch.
    pub unix_ms: u64,
    /// The datacenter id.
    pub datacenter: u64,
    /// The worker id.
    pub worker: u64,
    /// The sequence.
    pub sequence: u64,
}

impl ParsedSerial {
    /// The time, which prints as RFC 3339 UTC with milliseconds.
    #[must_use]
    pub const fn time(&self) -> UnixMs {
        UnixMs(self.unix_ms)
    }

    /// The id's part in the shape every interface shares ([`Decoded`]), for output that
    /// puts the business code beside it.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::serial::{Template, Zone};
    /// use snowmint::Layout;
    ///
    /// let parsed = Template::new(&Layout::TWITTER).parse_serial("PAY2026112215304512300340007", &Zone::UTC)?;
    /// assert_eq!(parsed.decoded().time, "2026-11-22T15:30:45.123Z");
    /// # Ok::<(), snowmint::serial::SerialError>(())
    /// ```
    #[must_use]
    pub fn decoded(&self) -> Decoded {
        Decoded {
            id: self.id,
            unix_ms: self.unix_ms,
            time: self.time().to_string(),
            datacenter: self.datacenter,
            worker: self.worker,
            sequence: self.sequence,
        }
    }
}

/// The fields read from a serial, before their values are checked.
#[derive(Default)]
struct Fields<'a> {
    biz: Option<BizCode>,
    time: &'a [u8],
    node: u64,
    sequence: u64,
}

impl Template {
    /// Parses a serial this template wrote with its time in `zone`, and recovers the id.
    ///
    /// # Errors
    ///
    /// In the order they are checked: a length the template cannot have; a character that
    /// is not ASCII, differs from a separator, or does not belong in its field (named with
    /// its position); a check digit that does not match; a time that is not a real date and
    /// time, or outside the layout's range, or not on a tick; a node or sequence larger
    /// than the layout holds.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::serial::{Template, Zone};
    /// use snowmint::Layout;
    ///
    /// let t = Template::parse("{biz}{time}{node}{seq}{check}", &Layout::TWITTER)?;
    /// let err = t.parse_serial("PAY20261122153045123003400071", &Zone::UTC).unwrap_err();
    /// assert_eq!(err.to_string(), "check digit 1 does not match 4: the serial was mistyped");
    /// # Ok::<(), snowmint::serial::SerialError>(())
    /// ```
    pub fn parse_serial(&self, text: &str, zone: &Zone) -> Result<ParsedSerial, SerialError> {
        let len = text.chars().count();
        let lengths = self.len_range();
        if !lengths.contains(&len) {
            return Err(SerialError::Length {
                min: *lengths.start(),
                max: *lengths.end(),
                len,
            });
        }
        if let Some((position, ch)) = text.chars().enumerate().find(|(_, ch)| !ch.is_ascii()) {
            return Err(SerialError::NotAscii { ch, position });
        }
        let fields = self.read(text.as_bytes())?;
        let layout = self.layout();
        let unix_ms = local_ms(fields.time)? - i64::from(zone.offset().seconds()) * SECOND_MS;
        let out_of_layout = SerialError::TimeOutOfLayout {
            unix_ms,
            layout: layout.name(),
            first_ms: layout.epoch_ms(),
            last_ms: layout.capacity().runs_out_ms.saturating_sub(1),
        };
        let unix_ms = u64::try_from(unix_ms).map_err(|_| out_of_layout.clone())?;
        let tick = layout.tick_at(unix_ms).map_err(|_| out_of_layout)?;
        if layout.unix_ms_at(tick) != unix_ms {
            return Err(SerialError::TimeOffTick {
                unix_ms,
                layout: layout.name(),
                tick_ms: layout.tick_ms(),
            });
        }
        let in_range = |field, value, max| {
            if value > max {
                return Err(SerialError::FieldOutOfRange {
                    field,
                    value,
                    max,
                    layout: layout.name(),
                });
            }
            Ok(value)
        };
        let node = in_range("node", fields.node, max_node(layout))?;
        let sequence = in_range("seq", fields.sequence, layout.max_sequence())?;
        let datacenter = node >> layout.bits().worker;
        let worker = node & layout.max_worker();
        Ok(ParsedSerial {
            biz: fields.biz,
            id: layout.compose(
                tick,
                crate::Fields {
                    datacenter,
                    worker,
                    sequence,
                },
            )?,
            unix_ms,
            datacenter,
            worker,
            sequence,
        })
    }

    /// Reads each piece's characters, checking separators, field characters and the check.
    fn read<'a>(&self, bytes: &'a [u8]) -> Result<Fields<'a>, SerialError> {
        let biz_len = bytes.len() - self.fixed_len;
        let mut fields = Fields::default();
        let mut sum = Checksum::default();
        let mut at = 0;
        for piece in &self.pieces {
            let width = match *piece {
                Piece::Literal { start, end } => {
                    for (i, &expected) in self.literal(start, end).iter().enumerate() {
                        if bytes[at + i] != expected {
                            return Err(SerialError::Separator {
                                expected: char::from(expected),
                                ch: char::from(bytes[at + i]),
                                position: at + i,
                            });
                        }
                    }
                    at += end - start;
                    continue;
                }
                Piece::Biz => biz_len,
                Piece::Time => TIME_WIDTH,
                Piece::Node { width } | Piece::Seq { width } => width,
                Piece::Check(check) => check.width(),
            };
            let text = &bytes[at..at + width];
            let (name, expected, valid): (_, _, fn(char) -> bool) = match piece {
                Piece::Biz => ("biz", "A-Z or 0-9", is_biz_char),
                Piece::Time => ("time", "a digit", |c| c.is_ascii_digit()),
                Piece::Node { .. } => ("node", "a digit", |c| c.is_ascii_digit()),
                Piece::Seq { .. } => ("seq", "a digit", |c| c.is_ascii_digit()),
                _ => ("check", "a digit", |c| c.is_ascii_digit()),
            };
            if let Some(i) = text.iter().position(|&b| !valid(char::from(b))) {
                return Err(SerialError::FieldChar {
                    field: name,
                    ch: char::from(text[i]),
                    position: at + i,
                    expected,
                });
            }
            match *piece {
                Piece::Biz => fields.biz = Some(BizCode::from_valid(text, biz_len)),
                Piece::Time => fields.time = text,
                Piece::Node { .. } => fields.node = number(text),
                Piece::Seq { .. } => fields.sequence = number(text),
                Piece::Check(check) => {
                    let expected = sum.value(check);
                    let found = number(text) as u8;
                    if found != expected {
                        return Err(SerialError::CheckMismatch {
                            check,
                            found,
                            expected,
                        });
                    }
                }
                Piece::Literal { .. } => {}
            }
            sum.push_all(text);
            at += width;
        }
        Ok(fields)
    }
}

/// The value of at most 19 ASCII digits (which always fits a u64).
fn number(digits: &[u8]) -> u64 {
    digits.iter().fold(0, |n, d| n * 10 + u64::from(d - b'0'))
}

/// The local time of a `yyyyMMddHHmmssSSS` field, in ms since 1970-01-01T00:00 local.
fn local_ms(digits: &[u8]) -> Result<i64, SerialError> {
    let part = |from: usize, to: usize| number(&digits[from..to]) as i16;
    let (year, month, day) = (part(0, 4), part(4, 6), part(6, 8));
    let (hour, minute, second, ms) = (part(8, 10), part(10, 12), part(12, 14), part(14, 17));
    let bad = |part, value, min, max| SerialError::NotATime {
        digits: String::from_utf8_lossy(digits).into_owned(),
        part,
        value,
        min,
        max,
    };
    if !(1..=12).contains(&month) {
        return Err(bad("month", month, 1, 12));
    }
    // Years 0000-9999 and months 1-12 are all dates jiff knows.
    let first =
        jiff::civil::Date::new(year, month as i8, 1).map_err(|_| bad("month", month, 1, 12))?;
    let days = i16::from(first.days_in_month());
    if !(1..=days).contains(&day) {
        return Err(bad("day", day, 1, days));
    }
    for (name, value, max) in [
        ("hour", hour, 23),
        ("minute", minute, 59),
        ("second", second, 59),
    ] {
        if value > max {
            return Err(bad(name, value, 0, max));
        }
    }
    let epoch = jiff::civil::Date::constant(1970, 1, 1);
    let days_ms =
        first.duration_since(epoch).as_millis() as i64 + i64::from(day - 1) * 24 * HOUR_MS;
    Ok(days_ms
        + i64::from(hour) * HOUR_MS
        + i64::from(minute) * MINUTE_MS
        + i64::from(second) * SECOND_MS
        + i64::from(ms))
}
