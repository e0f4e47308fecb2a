//! Text read as an id of a layout: in the encoding named or the one its form suggests, and
//! a negative decimal as a signed 64-bit column holds an id of a layout that uses all 64
//! bits.

use crate::{Encoding, Id, Layout, ParseError};

/// How text was read as an id ([`Layout::read_id`]).
///
/// # Examples
///
/// ```
/// use snowmint::{Encoding, Layout};
///
/// let read = Layout::INSTAGRAM.read_id("-8499700661677131895", None)?;
/// assert_eq!(read.id.as_u64(), 9_947_043_412_032_419_721);
/// assert!(read.signed && read.guessed);
/// assert_eq!(read.encoding, Encoding::Decimal);
/// # Ok::<(), snowmint::ParseError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct IdReading {
    /// The id.
    pub id: Id,
    /// The encoding the text was read in.
    pub encoding: Encoding,
    /// Whether the encoding was guessed from the text's form ([`Encoding::detect`]) rather
    /// than named.
    pub guessed: bool,
    /// Whether the text was a negative decimal, read as the two's complement: the id as a
    /// signed 64-bit column (SQL `bigint`, a Java `long`) holds it.
    pub signed: bool,
}

impl Layout {
    /// Reads `text` as an id of this layout, in `encoding`, or, when `None`, in the one
    /// [`Encoding::detect`] guesses from its form.
    ///
    /// A negative decimal is what a signed 64-bit column shows of an id past 2^63 - 1: for
    /// a layout that uses all 64 bits ([`uses_bit_63`](Layout::uses_bit_63)) it is read as
    /// the two's complement, `-1` as 2^64 - 1. A layout of 63 bits has no such id, so it
    /// refuses one. Whether the id fits the layout otherwise is for
    /// [`decode`](Layout::decode) to say.
    ///
    /// # Errors
    ///
    /// As [`Encoding::decode`]; [`ParseError::Negative`] for a negative decimal and a
    /// layout of 63 bits; [`ParseError::BelowSigned`] for one below -2^63; and, when the
    /// encoding was guessed and refused the text but others read it,
    /// [`ParseError::Unguessed`] naming them (unless the text's prefix, `0x` or `0b`, named
    /// the encoding).
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::{Encoding, Layout};
    ///
    /// let hex = Layout::TWITTER.read_id("3962102955333052", Some(Encoding::Hex))?;
    /// assert_eq!(hex.id.as_u64(), 4_134_885_177_588_658_258);
    /// let err = Layout::TWITTER.read_id("-1", None).unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     "id \"-1\" is negative, but layout twitter uses 63 bits: none of its ids is negative, even in a signed 64-bit column"
    /// );
    /// # Ok::<(), snowmint::ParseError>(())
    /// ```
    pub fn read_id(&self, text: &str, encoding: Option<Encoding>) -> Result<IdReading, ParseError> {
        let guessed = encoding.is_none();
        let encoding = encoding.unwrap_or_else(|| Encoding::guess(text));
        let reading = |value, signed| IdReading {
            id: Id::from_u64(value),
            encoding,
            guessed,
            signed,
        };
        if encoding == Encoding::Decimal
            && let Some(magnitude) = text.strip_prefix('-').filter(|m| !m.is_empty())
        {
            return self
                .read_negative(text, magnitude)
                .map(|value| reading(value, value != 0));
        }
        // A prefix (0x, 0b) says the encoding as plainly as a name would.
        let prefixed = encoding.prefixes().iter().any(|p| text.starts_with(p));
        encoding
            .decode(text)
            .map(|value| reading(value, false))
            .map_err(|cause| {
                let readers: Vec<_> = Encoding::readers(text, encoding).collect();
                if guessed && !prefixed && !readers.is_empty() {
                    ParseError::Unguessed {
                        text: text.to_string(),
                        cause: Box::new(cause),
                        readers,
                    }
                } else {
                    cause
                }
            })
    }

    /// The two's complement of `-magnitude`, for a layout that uses bit 63.
    fn read_negative(&self, text: &str, magnitude: &str) -> Result<u64, ParseError> {
        let value = Encoding::Decimal
            .decode(magnitude)
            .map_err(|err| match err {
                // Positions count the sign.
                ParseError::InvalidChar {
                    encoding,
                    ch,
                    position,
                } => ParseError::InvalidChar {
                    encoding,
                    ch,
                    position: position + 1,
                },
                ParseError::Overflow { .. } => ParseError::BelowSigned {
                    text: text.to_string(),
                },
                other => other,
            })?;
        if value > 1 << 63 {
            return Err(ParseError::BelowSigned {
                text: text.to_string(),
            });
        }
        if value != 0 && !self.uses_bit_63() {
            return Err(ParseError::Negative {
                text: text.to_string(),
                layout: self.name(),
            });
        }
        Ok(value.wrapping_neg())
    }
}

#[cfg(test)]
mod tests;
