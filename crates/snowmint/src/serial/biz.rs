//! Business codes: the fixed prefix (or part) of a serial that says what it numbers.

use core::cmp::Ordering;
use core::fmt;
use core::str::FromStr;

use super::SerialError;

/// A business code such as `PAY` or `ORD`: 1 to 16 characters from `[A-Z0-9]`. A `Copy`
/// value that needs no allocation.
///
/// Upper case only, so a code reads the same on the phone and sorts the same everywhere.
///
/// # Examples
///
/// ```
/// use snowmint::serial::BizCode;
///
/// let pay = BizCode::new("PAY")?;
/// assert_eq!(pay.as_str(), "PAY");
/// assert_eq!(
///     BizCode::new("Pay").unwrap_err().to_string(),
///     "business code \"Pay\" has 'a' at position 1: use only A-Z and 0-9"
/// );
/// # Ok::<(), snowmint::serial::SerialError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct BizCode {
    /// The code's bytes, then zeros.
    bytes: [u8; BizCode::MAX_LEN],
    len: u8,
}

impl BizCode {
    /// The longest business code, in characters.
    pub const MAX_LEN: usize = 16;

    /// Validates a business code.
    ///
    /// # Errors
    ///
    /// The code is empty, longer than [`BizCode::MAX_LEN`], or has a character outside
    /// `[A-Z0-9]` (the first such is named with its position).
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::serial::BizCode;
    ///
    /// assert_eq!(BizCode::new("ORD2")?.len(), 4);
    /// assert_eq!(
    ///     BizCode::new("").unwrap_err().to_string(),
    ///     "business code is empty: use 1 to 16 characters from A-Z and 0-9"
    /// );
    /// # Ok::<(), snowmint::serial::SerialError>(())
    /// ```
    pub fn new(code: &str) -> Result<BizCode, SerialError> {
        if let Some((position, ch)) = code.chars().enumerate().find(|(_, ch)| !is_biz_char(*ch)) {
            return Err(SerialError::BizChar {
                code: code.to_string(),
                ch,
                position,
            });
        }
        // Every character is ASCII now, so bytes are characters.
        match code.len() {
            0 => Err(SerialError::EmptyBiz),
            len if len > Self::MAX_LEN => Err(SerialError::BizTooLong {
                code: code.to_string(),
                len,
            }),
            len => Ok(Self::from_valid(code.as_bytes(), len)),
        }
    }

    /// A code from bytes already checked to be 1 to 16 of `[A-Z0-9]`.
    pub(crate) fn from_valid(code: &[u8], len: usize) -> BizCode {
        let mut bytes = [0; Self::MAX_LEN];
        bytes[..len].copy_from_slice(&code[..len]);
        BizCode {
            bytes,
            len: len as u8,
        }
    }

    /// The code as text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        // Only ASCII letters and digits are ever stored.
        core::str::from_utf8(self.as_bytes()).unwrap_or_default()
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// The code's length in characters, 1 to 16.
    #[must_use]
    #[allow(clippy::len_without_is_empty)] // a business code is never empty
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }
}

/// A character a business code may hold.
pub(crate) const fn is_biz_char(ch: char) -> bool {
    ch.is_ascii_uppercase() || ch.is_ascii_digit()
}

impl Ord for BizCode {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialOrd for BizCode {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for BizCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("BizCode").field(&self.as_str()).finish()
    }
}

impl fmt::Display for BizCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for BizCode {
    type Err = SerialError;

    fn from_str(code: &str) -> Result<BizCode, SerialError> {
        BizCode::new(code)
    }
}

impl AsRef<str> for BizCode {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for BizCode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for BizCode {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<BizCode, D::Error> {
        let code = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        BizCode::new(&code).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn business_code_errors() {
        let err = |code: &str| BizCode::new(code).unwrap_err().to_string();
        assert_eq!(
            err(""),
            "business code is empty: use 1 to 16 characters from A-Z and 0-9"
        );
        assert_eq!(
            err("ABCDEFGHIJKLMNOPQ"),
            "business code \"ABCDEFGHIJKLMNOPQ\" has 17 characters, more than the 16 allowed"
        );
        assert_eq!(
            err("PAy"),
            "business code \"PAy\" has 'y' at position 2: use only A-Z and 0-9"
        );
        assert_eq!(
            err("PA Y"),
            "business code \"PA Y\" has ' ' at position 2: use only A-Z and 0-9"
        );
        assert_eq!(
            err("PÄY"),
            "business code \"PÄY\" has 'Ä' at position 1: use only A-Z and 0-9"
        );
        let longest = BizCode::new("ABCDEFGHIJKLMNOP").unwrap();
        assert_eq!((longest.len(), longest.as_str()), (16, "ABCDEFGHIJKLMNOP"));
        assert_eq!("ORD1".parse::<BizCode>().unwrap().to_string(), "ORD1");
        assert_eq!(
            format!("{:?}", BizCode::new("PAY").unwrap()),
            "BizCode(\"PAY\")"
        );
        assert!(BizCode::new("PA").unwrap() < BizCode::new("PAY").unwrap());
        assert!(BizCode::new("PAY").unwrap() < BizCode::new("PAY0").unwrap());
    }
}
