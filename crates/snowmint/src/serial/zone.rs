//! The time zone a serial's time is written in: UTC or a fixed offset, never a named zone.

use core::fmt;
use core::str::FromStr;

use jiff::tz::Offset;

use super::SerialError;

/// Seconds per minute, for offsets counted in minutes.
const MINUTE_S: i32 = 60;

/// The zone a serial's `{time}` is written in: UTC (the default) or a fixed offset.
///
/// A named zone such as `Asia/Shanghai` or `America/New_York` is refused: its offset can
/// change (daylight saving, or a government moving it), and when clocks go back an hour of
/// local time happens twice, so the serials of the second pass could repeat those of the
/// first and would sort before them. A fixed offset never repeats a local time.
///
/// # Examples
///
/// ```
/// use snowmint::serial::Zone;
///
/// let shanghai: Zone = "+08:00".parse()?;
/// assert_eq!(shanghai.offset_minutes(), 480);
/// assert_eq!(Zone::parse("Z")?, Zone::UTC);
/// let err = Zone::parse("America/New_York").unwrap_err().to_string();
/// assert!(err.ends_with("use a fixed offset such as +08:00"));
/// # Ok::<(), snowmint::serial::SerialError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Zone {
    offset: Offset,
}

impl Zone {
    /// Coordinated Universal Time, the default.
    pub const UTC: Zone = Zone {
        offset: Offset::UTC,
    };

    /// What [`Zone::parse`] reads, as a regular expression: `Z`, `UTC` in any case, or a
    /// fixed offset `+HH:MM` / `-HH:MM` up to ±23:59. An API's description of a zone
    /// parameter is this, so it allows exactly the zones the parser takes.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::serial::Zone;
    ///
    /// assert!(Zone::PATTERN.contains("2[0-3]"));
    /// ```
    pub const PATTERN: &str = "^(?:Z|[uU][tT][cC]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])$";

    /// Parses `UTC`, `Z` or a fixed offset `+HH:MM` / `-HH:MM` (up to ±23:59).
    ///
    /// # Errors
    ///
    /// A named zone (`Area/City`), which is refused on purpose; an offset beyond ±23:59; or
    /// any other text.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::serial::Zone;
    ///
    /// assert_eq!(Zone::parse("-05:30")?.offset_minutes(), -330);
    /// assert_eq!(
    ///     Zone::parse("+8").unwrap_err().to_string(),
    ///     "time zone \"+8\" is not UTC, Z or a fixed offset such as +08:00 or -05:30"
    /// );
    /// # Ok::<(), snowmint::serial::SerialError>(())
    /// ```
    pub fn parse(text: &str) -> Result<Zone, SerialError> {
        if text == "Z" || text.eq_ignore_ascii_case("utc") {
            return Ok(Zone::UTC);
        }
        if looks_named(text) {
            return Err(SerialError::NamedZone {
                name: text.to_string(),
            });
        }
        let bad = || SerialError::BadZone {
            text: text.to_string(),
        };
        let &[sign, h1, h2, b':', m1, m2] = text.as_bytes() else {
            return Err(bad());
        };
        let sign = match sign {
            b'+' => 1,
            b'-' => -1,
            _ => return Err(bad()),
        };
        let two = |a: u8, b: u8| {
            (a.is_ascii_digit() && b.is_ascii_digit())
                .then(|| i16::from(a - b'0') * 10 + i16::from(b - b'0'))
        };
        let (Some(hours), Some(minutes)) = (two(h1, h2), two(m1, m2)) else {
            return Err(bad());
        };
        if hours > 23 || minutes > 59 {
            return Err(SerialError::ZoneOutOfRange {
                text: text.to_string(),
            });
        }
        Zone::from_offset_minutes(sign * (hours * 60 + minutes))
    }

    /// A fixed offset east of UTC, in minutes (negative west of it).
    ///
    /// # Errors
    ///
    /// The offset is beyond ±23:59.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::serial::Zone;
    ///
    /// assert_eq!(Zone::from_offset_minutes(-300)?.to_string(), "-05:00");
    /// # Ok::<(), snowmint::serial::SerialError>(())
    /// ```
    pub fn from_offset_minutes(minutes: i16) -> Result<Zone, SerialError> {
        // One minute short of a day: the widest offset that is still a clock reading.
        const LIMIT: i16 = 24 * 60 - 1;
        let out_of_range = || SerialError::ZoneOutOfRange {
            text: format_offset(minutes),
        };
        if !(-LIMIT..=LIMIT).contains(&minutes) {
            return Err(out_of_range());
        }
        let offset =
            Offset::from_seconds(i32::from(minutes) * MINUTE_S).map_err(|_| out_of_range())?;
        Ok(Zone { offset })
    }

    /// The offset east of UTC, in minutes.
    #[must_use]
    pub fn offset_minutes(&self) -> i16 {
        // Built from whole minutes within ±23:59, so this fits.
        (self.offset.seconds() / MINUTE_S) as i16
    }

    /// The offset as a [`jiff::tz::Offset`].
    #[must_use]
    pub fn offset(&self) -> Offset {
        self.offset
    }
}

impl Default for Zone {
    fn default() -> Zone {
        Zone::UTC
    }
}

/// The shape of an IANA zone name: `Area/City`, perhaps with more parts (`America/Argentina/Salta`).
fn looks_named(text: &str) -> bool {
    text.contains('/')
        && text.starts_with(|c: char| c.is_ascii_alphabetic())
        && text.split('/').all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+'))
        })
}

fn format_offset(minutes: i16) -> String {
    OffsetText(minutes).to_string()
}

/// An offset in minutes as `+HH:MM`.
struct OffsetText(i16);

impl fmt::Display for OffsetText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { '-' } else { '+' };
        let abs = self.0.unsigned_abs();
        write!(f, "{sign}{:02}:{:02}", abs / 60, abs % 60)
    }
}

impl fmt::Display for Zone {
    /// `UTC`, or the offset as `+HH:MM`; either parses back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == Zone::UTC {
            f.write_str("UTC")
        } else {
            OffsetText(self.offset_minutes()).fmt(f)
        }
    }
}

impl FromStr for Zone {
    type Err = SerialError;

    fn from_str(text: &str) -> Result<Zone, SerialError> {
        Zone::parse(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zone_errors() {
        let err = |text: &str| Zone::parse(text).unwrap_err().to_string();
        let named = |name: &str| {
            format!(
                "time zone {name:?} is a named zone whose offset can change (daylight saving or a historic change): a local hour that repeats would repeat serials and break their order; use a fixed offset such as +08:00"
            )
        };
        for name in [
            "Asia/Shanghai",
            "America/New_York",
            "America/Argentina/Salta",
            "Etc/GMT+8",
        ] {
            assert_eq!(err(name), named(name));
        }
        for text in [
            "+8",
            "08:00",
            "CET",
            "",
            "+08:00:00",
            "+0800",
            "+0a:00",
            "/",
            "Asia/",
        ] {
            assert_eq!(
                err(text),
                format!(
                    "time zone {text:?} is not UTC, Z or a fixed offset such as +08:00 or -05:30"
                )
            );
        }
        for text in ["+24:00", "-12:60"] {
            assert_eq!(
                err(text),
                format!(
                    "time zone offset {text:?} is out of range: hours run 00 to 23 and minutes 00 to 59"
                )
            );
        }
        assert_eq!(
            Zone::from_offset_minutes(-1440).unwrap_err().to_string(),
            "time zone offset \"-24:00\" is out of range: hours run 00 to 23 and minutes 00 to 59"
        );
    }

    #[test]
    fn zones_print_and_parse_back() {
        for (text, minutes, shown) in [
            ("Z", 0, "UTC"),
            ("utc", 0, "UTC"),
            ("-00:00", 0, "UTC"),
            ("+08:00", 480, "+08:00"),
            ("-05:30", -330, "-05:30"),
            ("+23:59", 1439, "+23:59"),
        ] {
            let zone = Zone::parse(text).unwrap();
            assert_eq!(
                (zone.offset_minutes(), zone.to_string().as_str()),
                (minutes, shown)
            );
            assert_eq!(Zone::parse(shown).unwrap(), zone);
        }
        assert_eq!(Zone::default(), Zone::UTC);
    }
}
