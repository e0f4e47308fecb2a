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
}
