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
