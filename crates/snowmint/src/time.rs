//! Instants as milliseconds since the Unix epoch, and how they print.

use core::fmt;

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

impl UnixMs {
    /// The last instant [`Display`](fmt::Display) writes as a date,
    /// 9999-12-30T22:00:00.000Z: the last millisecond count jiff takes (its range keeps a
    /// day in hand so that every time zone's civil time still fits). Later instants are
    /// written as a count of milliseconds.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::UnixMs;
    ///
    /// assert_eq!(UnixMs::LAST_DATE.to_string(), "9999-12-30T22:00:00.000Z");
    /// let later = UnixMs(UnixMs::LAST_DATE.0 + 1);
    /// assert_eq!(later.to_string(), "253402207200001 ms after the Unix epoch");
    /// ```
    pub const LAST_DATE: UnixMs = UnixMs(253_402_207_200_000);

    /// The instant as a [`jiff::Timestamp`], or `None` past the year 9999 (jiff's range).
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
}

impl fmt::Display for UnixMs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_timestamp() {
            Some(ts) => write!(f, "{ts:.3}"),
            // Past jiff's range (year 9999) only the raw count is honest.
            None => write!(f, "{} ms after the Unix epoch", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The constant is where jiff stops taking milliseconds, so this fails if jiff's range
    /// ever moves.
    #[test]
    fn the_last_date_is_the_end_of_jiffs_range() {
        assert!(UnixMs::LAST_DATE.to_timestamp().is_some());
        assert_eq!(UnixMs(UnixMs::LAST_DATE.0 + 1).to_timestamp(), None);
    }
}
