//! High-water marks as they are stored, read strictly.
//!
//! A mark is an instant, in milliseconds since the Unix epoch, written in decimal. Every
//! place that keeps one reads it here: the registries (a Redis hash field, an etcd key, a
//! ZooKeeper node) with [`decode`], and a state file, whose line may also name a clock
//! mode, with [`decode_line`]. A corrupt mark in a registry or on disk is input like any
//! other: it is refused with an error that says what was found, never read as zero (ids up
//! to an unknown instant may have been issued).
//!
//! ```
//! use snowmint::ClockMode;
//! use snowmint_lease::mark;
//!
//! assert_eq!(mark::decode(b"1763780112345")?, 1_763_780_112_345);
//! assert_eq!(
//!     mark::decode(b"soon").unwrap_err().to_string(),
//!     r#"found "soon", expected milliseconds since the Unix epoch"#
//! );
//! let line = mark::encode_line(1_288_835_974_657, ClockMode::Counter);
//! assert_eq!(line, "1288835974657 counter\n");
//! assert_eq!(mark::decode_line(line.as_bytes())?, (1_288_835_974_657, ClockMode::Counter));
//! # Ok::<(), snowmint_lease::mark::CorruptMark>(())
//! ```

use std::fmt;

use snowmint::ClockMode;

/// How much of a corrupt mark an error quotes: enough to recognise, one line.
const QUOTED_BYTES: usize = 40;

/// A stored mark that is not one, and what was found instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorruptMark {
    /// What was found: the start of it quoted with escapes (and how much was left out), or
    /// a description such as "an empty file".
    pub found: String,
}

impl fmt::Display for CorruptMark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "found {}, expected milliseconds since the Unix epoch",
            self.found
        )
    }
}

impl std::error::Error for CorruptMark {}

impl CorruptMark {
    fn quoting(bytes: &[u8]) -> CorruptMark {
        CorruptMark {
            found: quote(bytes),
        }
    }
}

/// Reads a mark as a registry stores it: decimal ASCII digits and nothing else (no sign,
/// no space), at most `u64::MAX`.
///
/// # Errors
///
/// [`CorruptMark`] for anything else, an empty value included.
///
/// # Examples
///
/// ```
/// use snowmint_lease::mark;
///
/// assert_eq!(mark::decode(b"42")?, 42);
/// assert_eq!(
///     mark::decode(b"+42").unwrap_err().to_string(),
///     r#"found "+42", expected milliseconds since the Unix epoch"#
/// );
/// # Ok::<(), mark::CorruptMark>(())
/// ```
pub fn decode(bytes: &[u8]) -> Result<u64, CorruptMark> {
    if bytes.is_empty() {
        return Err(CorruptMark {
            found: "nothing".to_string(),
        });
    }
    if !bytes.iter().all(u8::is_ascii_digit) {
        return Err(CorruptMark::quoting(bytes));
    }
    // All ASCII digits, so UTF-8; only the value can fail, by being too large.
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|digits| digits.parse().ok())
        .ok_or_else(|| CorruptMark {
            found: format!("{}, which does not fit in 64 bits", quote(bytes)),
        })
}

/// A mark as a registry stores it, which [`decode`] reads back.
///
/// # Examples
///
/// ```
/// assert_eq!(snowmint_lease::mark::encode(1_763_780_112_345), "1763780112345");
/// ```
#[must_use]
pub fn encode(ms: u64) -> String {
    ms.to_string()
}

/// Reads a state file's line: `<ms>` or `<ms> <clock mode>` (a mark without a mode was
/// left by the default, [`ClockMode::Monotonic`]), with white space around it.
///
/// # Errors
///
/// [`CorruptMark`] for anything else: an empty file, only white space, a mark that
/// [`decode`] refuses, or an unknown clock mode.
///
/// # Examples
///
/// ```
/// use snowmint::ClockMode;
/// use snowmint_lease::mark;
///
/// assert_eq!(mark::decode_line(b"1763780112345\n")?, (1_763_780_112_345, ClockMode::Monotonic));
/// assert_eq!(mark::decode_line(b"").unwrap_err().found, "an empty file");
/// # Ok::<(), mark::CorruptMark>(())
/// ```
pub fn decode_line(bytes: &[u8]) -> Result<(u64, ClockMode), CorruptMark> {
    let text = bytes.trim_ascii();
    let (digits, mode) = match text.iter().position(|b| *b == b' ') {
        Some(space) => {
            let word =
                std::str::from_utf8(&text[space + 1..]).map_err(|_| CorruptMark::quoting(bytes))?;
            let mode = word.parse().map_err(|_| CorruptMark::quoting(bytes))?;
            (&text[..space], mode)
        }
        None => (text, ClockMode::Monotonic),
    };
    if digits.is_empty() {
        return Err(CorruptMark {
            found: if bytes.is_empty() {
                "an empty file".to_string()
            } else {
                format!("only white space {}", quote(bytes))
            },
        });
    }
    if !digits.iter().all(u8::is_ascii_digit) {
        return Err(CorruptMark::quoting(bytes));
    }
    decode(digits).map(|ms| (ms, mode))
}

/// A state file's line for `ms` under `mode`, which [`decode_line`] reads back: the
/// default mode is left unsaid, as every mark before modes did.
///
/// # Examples
///
/// ```
/// use snowmint::ClockMode;
///
/// assert_eq!(snowmint_lease::mark::encode_line(7, ClockMode::Monotonic), "7\n");
/// ```
#[must_use]
pub fn encode_line(ms: u64, mode: ClockMode) -> String {
    match mode {
        ClockMode::Monotonic => format!("{ms}\n"),
        mode => format!("{ms} {mode}\n"),
    }
}

/// The start of `bytes`, quoted with escapes, and how much was left out.
fn quote(bytes: &[u8]) -> String {
    let shown = String::from_utf8_lossy(&bytes[..bytes.len().min(QUOTED_BYTES)]);
    match bytes.len().checked_sub(QUOTED_BYTES) {
        Some(rest) if rest > 0 => format!("{shown:?} and {rest} more bytes"),
        _ => format!("{shown:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_marks_are_plain_digits() {
        assert_eq!(decode(b"0"), Ok(0));
        assert_eq!(decode(b"18446744073709551615"), Ok(u64::MAX));
        for (bytes, found) in [
            (&b""[..], "nothing".to_string()),
            (b"+5", r#""+5""#.to_string()),
            (b"-5", r#""-5""#.to_string()),
            (b" 5", r#"" 5""#.to_string()),
            (b"5\n", r#""5\n""#.to_string()),
            (b"1e3", r#""1e3""#.to_string()),
            (
                b"18446744073709551616",
                r#""18446744073709551616", which does not fit in 64 bits"#.to_string(),
            ),
            (
                &[b'x'; 50],
                format!("{:?} and 10 more bytes", "x".repeat(40)),
            ),
        ] {
            assert_eq!(decode(bytes), Err(CorruptMark { found }), "{bytes:?}");
        }
    }

    #[test]
    fn lines_round_trip_in_every_mode() {
        for mode in ClockMode::ALL {
            for ms in [0, 1, 1_763_780_112_345, u64::MAX] {
                let line = encode_line(ms, mode);
                assert_eq!(decode_line(line.as_bytes()), Ok((ms, mode)), "{line:?}");
                assert_eq!(decode(encode(ms).as_bytes()), Ok(ms));
            }
        }
    }

    #[test]
    fn the_error_says_what_was_found_and_what_was_expected() {
        assert_eq!(
            decode_line(b" \n").unwrap_err().to_string(),
            r#"found only white space " \n", expected milliseconds since the Unix epoch"#
        );
    }
}
