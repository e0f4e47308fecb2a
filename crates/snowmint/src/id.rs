//! The id itself: a `Copy` newtype over `u64`.

use core::fmt;
use core::str::FromStr;

use crate::ParseError;
use crate::encoding::{Base32, Base62, Decimal, Encoding, Hex};

/// A 64-bit id. It orders like the number, so ids from one generator sort by time.
///
/// An `Id` knows nothing of the layout that made it; [`Layout::decode`](crate::Layout::decode)
/// takes it apart. `Display` and `FromStr` use decimal; the adapters [`Id::hex`],
/// [`Id::base32`] and [`Id::base62`] give the other encodings. With the `serde` feature an id
/// is a JSON string (JavaScript numbers lose precision above 2^53); [`serde_int`] makes it a
/// number on request.
///
/// # Examples
///
/// ```
/// use snowmint::Id;
///
/// let id: Id = "175928847299117063".parse()?;
/// assert_eq!(id.as_u64(), 175_928_847_299_117_063);
/// assert_eq!(id.to_string(), "175928847299117063");
/// assert_eq!(id.base32().to_string(), "04W86BB0G4007");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(transparent)]
pub struct Id(u64);

impl Id {
    /// The smallest id.
    pub const MIN: Id = Id(0);
    /// The largest 64-bit value (only layouts that use all 64 bits reach it).
    pub const MAX: Id = Id(u64::MAX);

    /// Wraps a raw value. Any `u64` is an id; whether it fits a layout is the layout's call.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(snowmint::Id::from_u64(7).as_u64(), 7);
    /// ```
    #[must_use]
    #[inline]
    pub const fn from_u64(value: u64) -> Id {
        Id(value)
    }

    /// The raw value.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(snowmint::Id::from_u64(7).as_u64(), 7);
    /// ```
    #[must_use]
    #[inline]
    pub const fn as_u64(self) -> u64 {
        self.0
    }

    /// The decimal form, as an adapter that implements `Display`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(snowmint::Id::from_u64(42).decimal().to_string(), "42");
    /// ```
    #[must_use]
    pub const fn decimal(self) -> Decimal {
        Decimal(self)
    }

    /// The hex form (`0x` and 16 lowercase digits, zero-padded), as an adapter that
    /// implements `Display`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(snowmint::Id::from_u64(255).hex().to_string(), "0x00000000000000ff");
    /// ```
    #[must_use]
    pub const fn hex(self) -> Hex {
        Hex(self)
    }

    /// The Crockford base32 form (13 characters, TSID-compatible).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(snowmint::Id::from_u64(10).base32().to_string(), "000000000000A");
    /// ```
    #[must_use]
    pub const fn base32(self) -> Base32 {
        Base32(self)
    }

    /// The base62 form (11 characters from `0-9A-Za-z`, zero-padded).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(snowmint::Id::from_u64(61).base62().to_string(), "0000000000z");
    /// ```
    #[must_use]
    pub const fn base62(self) -> Base62 {
        Base62(self)
    }

    /// Writes the id in `encoding` into `buf` without allocating, and returns the text.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::{Encoding, Id};
    ///
    /// let mut buf = [0u8; Encoding::BUF_LEN];
    /// assert_eq!(Id::from_u64(255).encode(Encoding::Hex, &mut buf), "0x00000000000000ff");
    /// ```
    pub fn encode(self, encoding: Encoding, buf: &mut [u8; Encoding::BUF_LEN]) -> &str {
        encoding.encode(self.0, buf)
    }

    /// Parses text in a known encoding.
    ///
    /// # Errors
    ///
    /// Empty text, a character outside the encoding (named with its position), too many
    /// characters, or a value that overflows 64 bits.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::{Encoding, Id};
    ///
    /// assert_eq!(Id::parse_as("ff", Encoding::Hex)?, Id::from_u64(255));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn parse_as(text: &str, encoding: Encoding) -> Result<Id, ParseError> {
        encoding.decode(text).map(Id)
    }

    /// Parses text in whichever encoding it looks like, and says which it assumed
    /// (see [`Encoding::detect`] for the rules).
    ///
    /// # Errors
    ///
    /// As [`Id::parse_as`], for the encoding the text looked most like.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::{Encoding, Id};
    ///
    /// assert_eq!(Id::parse_any("0x10")?, (Id::from_u64(16), Encoding::Hex));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn parse_any(text: &str) -> Result<(Id, Encoding), ParseError> {
        Encoding::detect(text).map(|(value, encoding)| (Id(value), encoding))
    }
}

impl From<u64> for Id {
    fn from(value: u64) -> Id {
        Id(value)
    }
}

impl From<Id> for u64 {
    fn from(id: Id) -> u64 {
        id.0
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.decimal(), f)
    }
}

impl FromStr for Id {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<Id, ParseError> {
        Id::parse_as(text, Encoding::Decimal)
    }
}

#[cfg(feature = "serde")]
mod serde_impl {
    use core::fmt;

    use serde::de::{self, Visitor};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::Id;

    impl Serialize for Id {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let mut buf = [0u8; crate::Encoding::BUF_LEN];
            serializer.serialize_str(self.encode(crate::Encoding::Decimal, &mut buf))
        }
    }

    /// Accepts a decimal string or an integer, whichever the sender chose.
    pub(super) struct IdVisitor;

    impl Visitor<'_> for IdVisitor {
        type Value = Id;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an id as a decimal string or a non-negative integer")
        }

        fn visit_u64<E: de::Error>(self, value: u64) -> Result<Id, E> {
            Ok(Id(value))
        }

        fn visit_i64<E: de::Error>(self, value: i64) -> Result<Id, E> {
            u64::try_from(value)
                .map(Id)
                .map_err(|_| E::custom(format_args!("id {value} is negative")))
        }

        fn visit_str<E: de::Error>(self, text: &str) -> Result<Id, E> {
            text.parse().map_err(E::custom)
        }
    }

    impl<'de> Deserialize<'de> for Id {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Id, D::Error> {
            deserializer.deserialize_any(IdVisitor)
        }
    }
}

/// Serde helpers that write an [`Id`] as a JSON number instead of a string:
/// `#[serde(with = "snowmint::serde_int")]`. Reading accepts either form.
///
/// # Examples
///
/// ```
/// #[derive(serde::Serialize)]
/// struct Row {
///     #[serde(with = "snowmint::serde_int")]
///     id: snowmint::Id,
/// }
///
/// let json = serde_json::to_string(&Row { id: snowmint::Id::from_u64(7) })?;
/// assert_eq!(json, r#"{"id":7}"#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[cfg(feature = "serde")]
pub mod serde_int {
    use serde::{Deserializer, Serializer};

    use super::Id;

    /// Writes the id as an unsigned integer.
    ///
    /// # Errors
    ///
    /// Whatever the serializer reports.
    pub fn serialize<S: Serializer>(id: &Id, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(id.as_u64())
    }

    /// Reads an id from an integer or a decimal string.
    ///
    /// # Errors
    ///
    /// A negative number, or a string that is not a decimal id.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Id, D::Error> {
        deserializer.deserialize_any(super::serde_impl::IdVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "serde")]
    #[test]
    fn serde_uses_a_string_and_accepts_both_forms() {
        let id = Id::from_u64(u64::MAX);
        assert_eq!(
            serde_json::to_string(&id).unwrap(),
            "\"18446744073709551615\""
        );
        assert_eq!(serde_json::from_str::<Id>("\"42\"").unwrap(), Id(42));
        assert_eq!(serde_json::from_str::<Id>("42").unwrap(), Id(42));
        let err = serde_json::from_str::<Id>("-1").unwrap_err().to_string();
        assert!(err.contains("id -1 is negative"), "{err}");
        let err = serde_json::from_str::<Id>("\"4x\"")
            .unwrap_err()
            .to_string();
        assert!(err.contains("invalid character 'x' at position 1"), "{err}");
    }

    #[test]
    fn orders_like_the_number() {
        assert!(Id(1) < Id(2));
        assert_eq!(Id::from(5u64), Id(5));
        assert_eq!(u64::from(Id(5)), 5);
    }
}
