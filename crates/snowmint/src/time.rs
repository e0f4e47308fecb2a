//! Instants as milliseconds since the Unix epoch: how they print, and how an epoch is read.

use core::fmt;
use core::time::Duration;

/// Milliseconds since 1970-01-01T00:00:00Z, printed as RFC 3339 UTC with milliseconds.
///
/// # Examples
///
/// ```
/// use snowmint::UnixMs;
///
/// assert_eq!(UnixMs(1_462_015_105_796).to_string(), "2016-04-30T11:18:25.796Z");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UnixMs(pub u64);

/// A mean Gregorian year, 365.2425 days, in ms: close enough to say how many years a layout
/// has left.
///
/// # Examples
///
/// ```
/// assert_eq!(snowmint::MS_PER_YEAR, 31_556_952_000);
/// ```
pub const MS_PER_YEAR: u64 = 31_556_952_000;

/// Whole milliseconds in `d`, saturating at `u64::MAX` (585 million years), as settings and
/// clocks count them.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// assert_eq!(snowmint::whole_ms(Duration::from_micros(1_999)), 1);
/// assert_eq!(snowmint::whole_ms(Duration::MAX), u64::MAX);
/// ```
#[must_use]
pub fn whole_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl UnixMs {
    /// The last instant [`Display`](fmt::Display) writes as a date and
    /// [`parse_time`](Self::parse_time) reads as one, 9999-12-31T23:59:59.999Z: the last
    /// RFC 3339 can write, as its years have four digits. Later instants are written as a
    /// count of milliseconds.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::UnixMs;
    ///
    /// assert_eq!(UnixMs::LAST_DATE.to_string(), "9999-12-31T23:59:59.999Z");
    /// let later = UnixMs(UnixMs::LAST_DATE.0 + 1);
    /// assert_eq!(later.to_string(), "253402300800000 ms after the Unix epoch");
    /// ```
    pub const LAST_DATE: UnixMs = UnixMs(253_402_300_799_999);

    /// The instant as a [`jiff::Timestamp`], or `None` past 9999-12-30T22:00:00Z, where
    /// jiff's range ends (it keeps a day in hand so that every time zone's civil time still
    /// fits); [`Display`](fmt::Display) goes on to [`LAST_DATE`](Self::LAST_DATE).
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::UnixMs;
    ///
    /// assert_eq!(UnixMs(0).to_timestamp().unwrap().as_second(), 0);
    /// ```
    #[must_use]
    pub fn to_timestamp(self) -> Option<jiff::Timestamp> {
        i64::try_from(self.0)
            .ok()
            .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
    }

    /// The instant as a civil date and time in UTC, up to [`LAST_DATE`](Self::LAST_DATE):
    /// jiff's civil dates run to the end of the year 9999, a day past its timestamps.
    fn to_utc_civil(self) -> Option<jiff::civil::DateTime> {
        if self > Self::LAST_DATE {
            return None;
        }
        let ms = i64::try_from(self.0).ok()?;
        unix_epoch_civil()
            .checked_add(jiff::SignedDuration::from_millis(ms))
            .ok()
    }
}

/// 1970-01-01T00:00:00 as a civil date and time, the start of [`UnixMs`]'s count in UTC.
fn unix_epoch_civil() -> jiff::civil::DateTime {
    jiff::civil::date(1970, 1, 1).at(0, 0, 0, 0)
}

/// What keeps `text`, which jiff read as an instant, from being an RFC 3339 time:
/// `YYYY-MM-DD`, `T` (or `t`, or a space), `hh:mm:ss` with an optional fraction, then `Z`
/// (or `z`) or an offset `+hh:mm` or `-hh:mm` of less than a day. `None` when it is one.
fn rfc3339_problem(text: &str) -> Option<&'static str> {
    let b = text.as_bytes();
    let digits = |from: usize, to: usize| {
        b.get(from..to)
            .is_some_and(|run| run.iter().all(u8::is_ascii_digit))
    };
    let at = |i: usize, c: u8| b.get(i) == Some(&c);
    if !(digits(0, 4) && at(4, b'-') && digits(5, 7) && at(7, b'-') && digits(8, 10)) {
        return Some("the date is not YYYY-MM-DD");
    }
    if !matches!(b.get(10), Some(b'T' | b't' | b' ')) {
        return Some("the date and the time are not joined by T");
    }
    if !(digits(11, 13) && at(13, b':') && digits(14, 16) && at(16, b':') && digits(17, 19)) {
        return Some("the time is not hh:mm:ss");
    }
    let mut end = 19;
    if at(end, b'.') {
        end += 1;
        while b.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
    }
    let number = |pair: &[u8]| (pair[0] - b'0') * 10 + (pair[1] - b'0');
    match &b[end..] {
        [b'Z' | b'z'] => None,
        [b'+' | b'-', h1, h2, b':', m1, m2]
            if [h1, h2, m1, m2].iter().all(|d| d.is_ascii_digit()) =>
        {
            (number(&[*h1, *h2]) > 23 || number(&[*m1, *m2]) > 59)
                .then_some("the offset is not within a day (-23:59 to +23:59)")
        }
        _ => Some("the offset is not Z or +hh:mm or -hh:mm"),
    }
}

/// Reads an RFC 3339 time in the last day of the year 9999, which jiff's timestamps do not
/// reach, by civil-date arithmetic: the date and time less the offset. `None` for text
/// that is not such a time (the caller keeps jiff's reason).
fn parse_last_day(text: &str) -> Option<u64> {
    let pieces = jiff::fmt::temporal::Pieces::parse(text).ok()?;
    // A time and an offset, as RFC 3339 asks: a bare date or civil time is no instant.
    let time = pieces.time()?;
    let offset = pieces.to_numeric_offset()?;
    let local = pieces.date().to_datetime(time);
    let since = local.duration_since(unix_epoch_civil())
        - jiff::SignedDuration::from_secs(i64::from(offset.seconds()));
    u64::try_from(since.as_millis()).ok()
}

impl UnixMs {
    /// Reads a layout's epoch as people write one: milliseconds since the Unix epoch
    /// (`1288834974657`) or an RFC 3339 time (`2010-11-04T01:42:54.657Z`, any offset). An
    /// epoch after `now` is refused: ids would have no time to count yet, and a typo in the
    /// year is the likelier story.
    ///
    /// # Errors
    ///
    /// [`TimeError`] naming the epoch: text that is neither form, a count past 64 bits, a
    /// time before 1970, or an epoch after `now`.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::UnixMs;
    ///
    /// let now = UnixMs(1_763_780_112_345); // 2025-11-22T02:55:12.345Z
    /// assert_eq!(UnixMs::parse_epoch("1288834974657", now)?, UnixMs(1_288_834_974_657));
    /// assert_eq!(UnixMs::parse_epoch("2020-01-01T01:00:00+01:00", now)?, UnixMs(1_577_836_800_000));
    /// let err = UnixMs::parse_epoch("2999-01-01T00:00:00Z", now).unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     "epoch \"2999-01-01T00:00:00Z\" is in the future (now is 2025-11-22T02:55:12.345Z): ids would have no time to count"
    /// );
    /// # Ok::<(), snowmint::TimeError>(())
    /// ```
    pub fn parse_epoch(text: &str, now: UnixMs) -> Result<UnixMs, TimeError> {
        let epoch = UnixMs::parse_instant(text, "epoch")?;
        if epoch > now {
            return Err(TimeError::InTheFuture {
                what: "epoch",
                text: text.to_string(),
                instant: epoch,
                now,
            });
        }
        Ok(epoch)
    }
}

impl UnixMs {
    /// Reads an instant as people write one: milliseconds since the Unix epoch
    /// (`1704067200000`) or an RFC 3339 time (`2024-01-01T00:00:00Z`, any offset).
    ///
    /// # Errors
    ///
    /// [`TimeError`]: text that is neither form, a count past 64 bits, or a time before 1970.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::UnixMs;
    ///
    /// assert_eq!(UnixMs::parse_time("1704067200000")?, UnixMs(1_704_067_200_000));
    /// assert_eq!(UnixMs::parse_time("2024-01-01T01:00:00+01:00")?, UnixMs(1_704_067_200_000));
    /// let err = UnixMs::parse_time("soon").unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     "time \"soon\" is neither milliseconds since the Unix epoch nor an RFC 3339 time"
    /// );
    /// # Ok::<(), snowmint::TimeError>(())
    /// ```
    pub fn parse_time(text: &str) -> Result<UnixMs, TimeError> {
        UnixMs::parse_instant(text, "time")
    }

    /// [`UnixMs::parse_time`], with errors that call the instant `what`.
    fn parse_instant(text: &str, what: &'static str) -> Result<UnixMs, TimeError> {
        if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
            return text.parse().map(UnixMs).map_err(|_| TimeError::TooLarge {
                what,
                text: text.to_string(),
            });
        }
        let ms = match text.parse::<jiff::Timestamp>() {
            // jiff reads ISO 8601's wider forms too (`+0100`, `+25:00`, no seconds): what
            // RFC 3339 does not allow is refused, so every reader of times agrees.
            Ok(_) if let Some(problem) = rfc3339_problem(text) => {
                return Err(TimeError::NotRfc3339 {
                    what,
                    text: text.to_string(),
                    problem,
                });
            }
            Ok(time) => time.as_millisecond(),
            // Past jiff's range: the last day of the year 9999, or later.
            Err(reason) => match parse_last_day(text) {
                Some(_) if let Some(problem) = rfc3339_problem(text) => {
                    return Err(TimeError::NotRfc3339 {
                        what,
                        text: text.to_string(),
                        problem,
                    });
                }
                Some(ms) if UnixMs(ms) > UnixMs::LAST_DATE => {
                    return Err(TimeError::PastLastDate {
                        what,
                        text: text.to_string(),
                    });
                }
                Some(ms) => return Ok(UnixMs(ms)),
                None => {
                    return Err(TimeError::NotATime {
                        what,
                        text: text.to_string(),
                        reason,
                    });
                }
            },
        };
        u64::try_from(ms)
            .map(UnixMs)
            .map_err(|_| TimeError::BeforeUnixEpoch {
                what,
                text: text.to_string(),
            })
    }
}

/// An instant that [`UnixMs::parse_time`] or [`UnixMs::parse_epoch`] refused. Each message
/// names the instant as the caller does (`time`, `epoch`) and the text as given.
///
/// # Examples
///
/// ```
/// use snowmint::{TimeError, UnixMs};
///
/// let err = UnixMs::parse_time("1969-12-31T23:59:59Z").unwrap_err();
/// assert!(matches!(err, TimeError::BeforeUnixEpoch { .. }));
/// assert_eq!(
///     err.to_string(),
///     "time \"1969-12-31T23:59:59Z\" is before the Unix epoch (1970-01-01T00:00:00Z)"
/// );
/// let err = UnixMs::parse_epoch("soon", UnixMs(0)).unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "epoch \"soon\" is neither milliseconds since the Unix epoch nor an RFC 3339 time"
/// );
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum TimeError {
    /// Neither digits nor an RFC 3339 time; the time parser's reason is the
    /// [`source`](std::error::Error::source).
    NotATime {
        /// What the instant is: `time`, `epoch`.
        what: &'static str,
        /// The text given.
        text: String,
        /// Why it is no RFC 3339 time.
        reason: jiff::Error,
    },
    /// Digits that do not fit in 64 bits.
    TooLarge {
        /// What the instant is.
        what: &'static str,
        /// The text given.
        text: String,
    },
    /// An RFC 3339 time before 1970-01-01T00:00:00Z.
    BeforeUnixEpoch {
        /// What the instant is.
        what: &'static str,
        /// The text given.
        text: String,
    },
    /// An RFC 3339 time after [`UnixMs::LAST_DATE`], 9999-12-31T23:59:59.999Z: only its
    /// offset can take it there.
    PastLastDate {
        /// What the instant is.
        what: &'static str,
        /// The text given.
        text: String,
    },
    /// A time that ISO 8601 allows and RFC 3339 does not, such as an offset of `+0100` or
    /// `+25:00`, or no seconds.
    NotRfc3339 {
        /// What the instant is.
        what: &'static str,
        /// The text given.
        text: String,
        /// What RFC 3339 does not allow in it.
        problem: &'static str,
    },
    /// An instant after the present where only the past makes sense (an epoch).
    InTheFuture {
        /// What the instant is.
        what: &'static str,
        /// The text given.
        text: String,
        /// The instant it names.
        instant: UnixMs,
        /// The present it was compared with.
        now: UnixMs,
    },
}

impl fmt::Display for TimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimeError::NotATime { what, text, .. } => write!(
                f,
                "{what} {text:?} is neither milliseconds since the Unix epoch nor an RFC 3339 time"
            ),
            TimeError::TooLarge { what, text } => {
                write!(f, "{what} {text:?} ms does not fit in 64 bits")
            }
            TimeError::BeforeUnixEpoch { what, text } => write!(
                f,
                "{what} {text:?} is before the Unix epoch (1970-01-01T00:00:00Z)"
            ),
            TimeError::PastLastDate { what, text } => write!(
                f,
                "{what} {text:?} is after {}, the last time RFC 3339 can write: give it in ms since the Unix epoch",
                UnixMs::LAST_DATE
            ),
            TimeError::NotRfc3339 {
                what,
                text,
                problem,
            } => write!(f, "{what} {text:?} is not an RFC 3339 time: {problem}"),
            TimeError::InTheFuture {
                what,
                text,
                instant,
                now,
            } => {
                write!(f, "{what} {text:?} ")?;
                // A count of ms says little to a reader; the date it stands for says more.
                if text.bytes().all(|b| b.is_ascii_digit()) {
                    write!(f, "({instant}) ")?;
                }
                write!(
                    f,
                    "is in the future (now is {now}): ids would have no time to count"
                )
            }
        }
    }
}

impl std::error::Error for TimeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TimeError::NotATime { reason, .. } => Some(reason),
            _ => None,
        }
    }
}

impl fmt::Display for UnixMs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_utc_civil() {
            Some(t) => write!(
                f,
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
                t.year(),
                t.month(),
                t.day(),
                t.hour(),
                t.minute(),
                t.second(),
                t.millisecond()
            ),
            // Past the year 9999 RFC 3339 has no words: only the raw count is honest.
            None => write!(f, "{} ms after the Unix epoch", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: UnixMs = UnixMs(1_763_780_112_345); // 2025-11-22T02:55:12.345Z

    #[test]
    fn epochs_in_ms_and_rfc_3339() {
        let epoch = |text| UnixMs::parse_epoch(text, NOW).unwrap().0;
        assert_eq!(epoch("1288834974657"), 1_288_834_974_657);
        assert_eq!(epoch("2020-01-01T00:00:00Z"), 1_577_836_800_000);
        assert_eq!(epoch("2020-01-01T01:00:00.5+01:00"), 1_577_836_800_500);
        assert_eq!(epoch("0"), 0);
        assert_eq!(epoch("1763780112345"), NOW.0);
    }

    /// ISO 8601's wider forms, which jiff reads, are refused with what RFC 3339 does not
    /// allow in them; its own forms (lower-case `t` and `z`, a space, any fraction, a leap
    /// second) are read.
    #[test]
    fn only_rfc_3339_forms_are_times() {
        let day = "the offset is not within a day (-23:59 to +23:59)";
        let offset = "the offset is not Z or +hh:mm or -hh:mm";
        for (text, problem) in [
            ("2024-01-01T00:00:00+25:00", day),
            ("2024-01-01T00:00:00+24:00", day),
            ("2024-01-01T00:00:00-24:00", day),
            ("2024-01-01T00:00:00+0100", offset),
            ("2024-01-01T00:00:00+01", offset),
            ("9999-12-31T12:00:00+0100", offset),
            ("2024-01-01T00:00Z", "the time is not hh:mm:ss"),
            ("20240101T000000Z", "the date is not YYYY-MM-DD"),
            ("+002024-01-01T00:00:00Z", "the date is not YYYY-MM-DD"),
        ] {
            let err = UnixMs::parse_time(text).unwrap_err();
            assert!(
                matches!(err, TimeError::NotRfc3339 { .. }),
                "{text}: {err:?}"
            );
            assert_eq!(
                err.to_string(),
                format!("time {text:?} is not an RFC 3339 time: {problem}")
            );
        }
        let ms = |text| UnixMs::parse_time(text).unwrap().0;
        assert_eq!(ms("2024-01-01t00:00:00z"), 1_704_067_200_000);
        assert_eq!(ms("2024-01-01 00:00:00Z"), 1_704_067_200_000);
        assert_eq!(ms("2024-01-01T00:00:00.123456789Z"), 1_704_067_200_123);
        assert_eq!(ms("2024-01-01T23:59:00+23:59"), 1_704_067_200_000);
        assert_eq!(ms("2016-12-31T23:59:60Z"), ms("2016-12-31T23:59:59Z"));
        assert_eq!(ms("9999-12-31T23:59:59.999Z"), UnixMs::LAST_DATE.0);
    }

    #[test]
    fn bad_epochs_say_why() {
        let msg = |text| UnixMs::parse_epoch(text, NOW).unwrap_err().to_string();
        assert_eq!(
            msg("2999-01-01T00:00:00Z"),
            "epoch \"2999-01-01T00:00:00Z\" is in the future (now is 2025-11-22T02:55:12.345Z): ids would have no time to count"
        );
        assert_eq!(
            msg("1763780112346"),
            "epoch \"1763780112346\" (2025-11-22T02:55:12.346Z) is in the future (now is 2025-11-22T02:55:12.345Z): ids would have no time to count"
        );
        assert_eq!(
            msg("99999999999999999999"),
            "epoch \"99999999999999999999\" ms does not fit in 64 bits"
        );
        assert_eq!(
            msg("yesterday"),
            "epoch \"yesterday\" is neither milliseconds since the Unix epoch nor an RFC 3339 time"
        );
        // A sign is not a digit: "+5" is no count of ms, whatever `u64::from_str` says.
        assert!(msg("+5").contains("is neither"));
        assert!(msg("").contains("is neither"));
        assert_eq!(
            msg("1969-12-31T23:59:59Z"),
            "epoch \"1969-12-31T23:59:59Z\" is before the Unix epoch (1970-01-01T00:00:00Z)"
        );
    }

    /// The time parser's reason is the source, and the message does not repeat it.
    #[test]
    fn the_reason_a_time_does_not_parse_is_the_source() {
        let err = UnixMs::parse_epoch("2020-13-01T00:00:00Z", NOW).unwrap_err();
        let source = std::error::Error::source(&err)
            .expect("a source")
            .to_string();
        assert!(
            !source.is_empty() && !err.to_string().contains(&source),
            "{source}"
        );
    }

    proptest::proptest! {
        /// What `Display` writes, `parse_epoch` reads back, and so does the plain count.
        #[test]
        fn printed_epochs_read_back(ms in 0..=NOW.0) {
            let back = |text: String| UnixMs::parse_epoch(&text, NOW).unwrap();
            proptest::prop_assert_eq!(back(UnixMs(ms).to_string()), UnixMs(ms));
            proptest::prop_assert_eq!(back(ms.to_string()), UnixMs(ms));
        }
    }

    /// The last date is the last RFC 3339 writes, one day past jiff's timestamps: both
    /// ways, up to it and not past it.
    #[test]
    fn dates_run_to_the_end_of_the_year_9999() {
        let last = UnixMs::LAST_DATE;
        assert_eq!(last.to_string(), "9999-12-31T23:59:59.999Z");
        assert_eq!(
            UnixMs::parse_time("9999-12-31T23:59:59.999Z").unwrap(),
            last
        );
        assert_eq!(
            UnixMs(last.0 + 1).to_string(),
            "253402300800000 ms after the Unix epoch"
        );
        // jiff's timestamps stop a day short; the day after is read and written.
        assert!(UnixMs(253_402_207_200_001).to_timestamp().is_none());
        let cases = [
            ("9999-12-30T22:00:00.001Z", 253_402_207_200_001),
            ("9999-12-31T00:00:00Z", 253_402_214_400_000),
            ("9999-12-31T01:00:00+01:00", 253_402_214_400_000),
            ("9999-12-31T12:00:00-11:59", 253_402_300_740_000),
        ];
        for (text, ms) in cases {
            assert_eq!(UnixMs::parse_time(text).unwrap(), UnixMs(ms), "{text}");
        }
        assert_eq!(
            UnixMs(253_402_214_400_000).to_string(),
            "9999-12-31T00:00:00.000Z"
        );
        let msg = |text| UnixMs::parse_time(text).unwrap_err().to_string();
        assert_eq!(
            msg("9999-12-31T23:00:00-01:00"),
            "time \"9999-12-31T23:00:00-01:00\" is after 9999-12-31T23:59:59.999Z, the last time RFC 3339 can write: give it in ms since the Unix epoch"
        );
        // No offset, no instant, even on the last day.
        assert!(msg("9999-12-31T00:00:00").contains("is neither"));
        assert!(msg("9999-12-32T00:00:00Z").contains("is neither"));
    }

    proptest::proptest! {
        /// Every date written, up to the last, reads back, at both ends of the range.
        #[test]
        fn every_date_reads_back(ms in proptest::prop_oneof![
            0..=UnixMs::LAST_DATE.0,
            (UnixMs::LAST_DATE.0 - 2 * 86_400_000)..=UnixMs::LAST_DATE.0,
        ]) {
            proptest::prop_assert_eq!(UnixMs::parse_time(&UnixMs(ms).to_string()).unwrap(), UnixMs(ms));
        }
    }
}
