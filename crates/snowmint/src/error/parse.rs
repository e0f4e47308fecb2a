//! Text that is not an id in an encoding.

use crate::encoding::Encoding;

/// Why text does not parse as an id: what [`Encoding::decode`], [`Encoding::detect`],
/// [`Id::parse_as`](crate::Id::parse_as) and the encodings' `FromStr` return. Every
/// variant is about the text given.
///
/// # Examples
///
/// ```
/// use snowmint::{Encoding, ParseError};
///
/// let err = Encoding::Base32.decode("01U").unwrap_err();
/// assert_eq!(err.to_string(), "invalid character 'U' at position 2 in base32 id");
/// assert!(matches!(err, ParseError::InvalidChar { position: 2, .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// Text to parse as an id was empty.
    #[error("empty input: expected an id")]
    Empty,
    /// A character is not part of the encoding.
    #[error("invalid character {ch:?} at position {position} in {encoding} id")]
    InvalidChar {
        /// The encoding the text was parsed as.
        encoding: Encoding,
        /// The character that was refused.
        ch: char,
        /// Its position, counted in characters from 0.
        position: usize,
    },
    /// The text is longer than any id in the encoding.
    #[error("{encoding} id has {len} characters, more than the {max} a 64-bit id takes")]
    TooLong {
        /// The encoding the text was parsed as.
        encoding: Encoding,
        /// Characters given.
        len: usize,
        /// Characters an id takes at most.
        max: usize,
    },
    /// The text denotes a number that does not fit in 64 bits.
    #[error("{encoding} id does not fit in 64 bits")]
    Overflow {
        /// The encoding the text was parsed as.
        encoding: Encoding,
    },
    /// A negative decimal, as a signed 64-bit column holds an id, for a layout of 63 bits:
    /// its ids never reach bit 63, so none is negative there.
    #[error(
        "id {text:?} is negative, but layout {layout} uses 63 bits: none of its ids is negative, even in a signed 64-bit column"
    )]
    Negative {
        /// The text given.
        text: String,
        /// The layout's name.
        layout: &'static str,
    },
    /// A negative decimal below the smallest signed 64-bit number.
    #[error("id {text:?} is below -9223372036854775808, the smallest signed 64-bit number")]
    BelowSigned {
        /// The text given.
        text: String,
    },
    /// Text that is not in the encoding its form suggested, but is in others: the encoding
    /// must be named. Unpadded base62 is the usual case: it is valid base32 as well.
    #[error(
        "{cause}, the encoding guessed from its form, but it reads as {}: name its encoding{}",
        Readers(readers),
        base62_note(readers)
    )]
    Unguessed {
        /// The text given.
        text: String,
        /// Why the guessed encoding refused it.
        cause: Box<ParseError>,
        /// The encodings that read it.
        readers: Vec<Encoding>,
    },
}

/// `base32 or base62`.
struct Readers<'a>(&'a [Encoding]);

impl core::fmt::Display for Readers<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for (i, encoding) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(if i + 1 == self.0.len() { " or " } else { ", " })?;
            }
            write!(f, "{encoding}")?;
        }
        Ok(())
    }
}

/// Why base62 cannot be guessed, where it is one of the readers.
fn base62_note(readers: &[Encoding]) -> &'static str {
    if readers.contains(&Encoding::Base62) {
        " (base62 written without padding, as TSID libraries other than tsid-creator write it, cannot be told from base32 or decimal)"
    } else {
        ""
    }
}
