//! Text encodings of an id: decimal, hex, Crockford base32, base62 and binary.
//!
//! | encoding  | alphabet                           | width                | `u64::MAX`             |
//! |-----------|------------------------------------|----------------------|------------------------|
//! | `decimal` | `0-9`                              | 1 to 20, no padding  | `18446744073709551615` |
//! | `hex`     | `0-9a-f`, after `0x`               | 16, zero-padded      | `0xffffffffffffffff`   |
//! | `base32`  | Crockford: `0-9A-Z` less `I L O U` | 13, zero-padded      | `FZZZZZZZZZZZZ`        |
//! | `base62`  | `0-9A-Za-z`, in ASCII order        | 11, zero-padded      | `LygHa16AHYF`          |
//! | `binary`  | `01`, after `0b`                   | 64, zero-padded      | `0b111...111` (64 `1`s) |
//!
//! The padded encodings have a fixed width and alphabets in ASCII order, so their strings
//! sort like the numbers they stand for. Base32 is the one TSID uses, so its strings and
//! TSID's agree.
//!
//! Hex and binary are written after the prefix their convention gives, `0x` and `0b`: a
//! padded text of digits only would otherwise read as a decimal when the encoding is not
//! named. Base32 and base62 have no such convention, so their all-digit texts are the same
//! text as a decimal; where the encoding is not known, [`Encoding::detect`] reads them so.
//!
//! Parsing is stricter about content than about case: hex and base32 ignore case (base32
//! also reads `I`/`L` as `1` and `O` as `0`, as Crockford's decoding asks), hex takes an
//! optional `0x` prefix, binary an optional `0b` prefix, padding is optional (TSID libraries
//! other than tsid-creator write base62 unpadded), and base62 is case-sensitive because its
//! alphabet needs both cases. When text has several faults, the error names the first
//! character outside the alphabet; failing that, the length; failing that, the overflow.
//!
//! Two paths: [`Encoding::encode`] writes into a caller's buffer without allocating, for
//! hot code; the adapters [`Decimal`], [`Hex`], [`Base32`], [`Base62`] and [`Binary`] implement
//! [`Display`](fmt::Display) and [`FromStr`].
//!
//! # Examples
//!
//! ```
//! # fn main() -> Result<(), snowmint::ParseError> {
//! use snowmint::Id;
//! use snowmint::encoding::{Base32, Encoding};
//!
//! let id = Id::from_u64(38_390_726_480_144_748);
//! assert_eq!(Base32(id).to_string(), "0123456789ABC");
//! assert_eq!("0123456789abc".parse::<Base32>()?, Base32(id));
//!
//! let mut buf = [0; Encoding::BUF_LEN];
//! assert_eq!(Encoding::Hex.encode(id.as_u64(), &mut buf), "0x008864298e84a96c");
//! # Ok(()) }
//! ```

use core::fmt;
use core::str::FromStr;

use crate::{Id, ParseError};

/// The longest text of any encoding: `0b` and the 64 digits of binary.
const MAX_LEN: usize = Encoding::BUF_LEN;

const DECIMAL_DIGITS: &[u8; 10] = b"0123456789";
const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";
const BASE32_DIGITS: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const BASE62_DIGITS: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const BINARY_DIGITS: &[u8; 2] = b"01";

/// Marks an ASCII byte that is no digit in a decoding table.
const NOT_A_DIGIT: u8 = u8::MAX;

/// Digit values by ASCII byte; every alphabet is ASCII, so 128 entries cover them all.
type DecodeTable = [u8; 128];

/// Crockford base32 reads the letters people mistake for digits as those digits: `I` and
/// `L` as 1, `O` as 0 (in either case, as base32 ignores case).
const CROCKFORD_ALIASES: &[(u8, u8)] = &[(b'I', 1), (b'L', 1), (b'O', 0)];

static DECIMAL_TABLE: DecodeTable = decode_table(Encoding::Decimal);
static HEX_TABLE: DecodeTable = decode_table(Encoding::Hex);
static BASE32_TABLE: DecodeTable = decode_table(Encoding::Base32);
static BASE62_TABLE: DecodeTable = decode_table(Encoding::Base62);
static BINARY_TABLE: DecodeTable = decode_table(Encoding::Binary);

/// Maps each byte of the encoding's alphabet to its index, and, where the encoding ignores
/// case, the byte's other case to the same index; then its aliases, in both cases.
const fn decode_table(encoding: Encoding) -> DecodeTable {
    let alphabet = encoding.digit_bytes();
    let fold_case = encoding.ignores_case();
    let mut table = [NOT_A_DIGIT; 128];
    let mut i = 0;
    while i < alphabet.len() {
        let byte = alphabet[i];
        table[byte as usize] = i as u8;
        if fold_case {
            table[byte.to_ascii_lowercase() as usize] = i as u8;
            table[byte.to_ascii_uppercase() as usize] = i as u8;
        }
        i += 1;
    }
    let aliases = encoding.alias_bytes();
    let mut i = 0;
    while i < aliases.len() {
        let (letter, digit) = aliases[i];
        table[letter.to_ascii_uppercase() as usize] = digit;
        table[letter.to_ascii_lowercase() as usize] = digit;
        i += 1;
    }
    table
}

/// `"00"`, `"01"`, ..., `"99"`: formatting two digits per division halves the divisions.
static DIGIT_PAIRS: [u8; 200] = digit_pairs();

const fn digit_pairs() -> [u8; 200] {
    let mut pairs = [0; 200];
    let mut n = 0;
    while n < 100 {
        pairs[2 * n] = b'0' + (n / 10) as u8;
        pairs[2 * n + 1] = b'0' + (n % 10) as u8;
        n += 1;
    }
    pairs
}

/// Text encodings of an id.
///
/// # Examples
///
/// ```
/// # fn main() -> Result<(), snowmint::ParseError> {
/// use snowmint::Encoding;
///
/// let mut buf = [0; Encoding::BUF_LEN];
/// for encoding in Encoding::ALL {
///     let text = encoding.encode(1_234_567_890, &mut buf);
///     assert_eq!(encoding.decode(text)?, 1_234_567_890);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Encoding {
    /// Base 10, no padding: `1234567890`.
    Decimal,
    /// Base 16, lowercase, zero-padded to 16 digits after a `0x` prefix that is always
    /// written, since bare hex digits can read as decimal: `0x00000000499602d2`. Parsing
    /// ignores case and takes the prefix as optional.
    Hex,
    /// Crockford base32, uppercase, zero-padded to 13 digits as TSID writes it:
    /// `00000014SC0PJ`. Parsing ignores case and reads `I`/`L` as `1` and `O` as `0`.
    Base32,
    /// Base 62 (`0-9A-Za-z`), zero-padded to 11 digits: `000001LY7VK`. Case-sensitive.
    Base62,
    /// Base 2, zero-padded to 64 digits after a `0b` prefix that is always written, since
    /// bare binary digits would read as decimal: `0b000...01001001100101100000001011010010`.
    /// Parsing takes the prefix as optional.
    Binary,
}

impl Encoding {
    /// Every encoding, in the order the error messages list them.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::Encoding;
    ///
    /// assert_eq!(Encoding::ALL.len(), 5);
    /// assert_eq!(Encoding::ALL[0], Encoding::Decimal);
    /// ```
    pub const ALL: [Encoding; 5] = [
        Self::Decimal,
        Self::Hex,
        Self::Base32,
        Self::Base62,
        Self::Binary,
    ];

    /// The size of the buffer [`encode`](Self::encode) writes into: enough for the longest
    /// text of any encoding, `0b` and 64 binary digits.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::Encoding;
    ///
    /// let mut buf = [0; Encoding::BUF_LEN];
    /// assert_eq!(Encoding::Binary.encode(u64::MAX, &mut buf).len(), Encoding::BUF_LEN);
    /// ```
    pub const BUF_LEN: usize = 66;

    /// Every name [`FromStr`] reads, ignoring case, with its encoding: each encoding's
    /// [`name`](Encoding::name) and a short one.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::Encoding;
    ///
    /// assert!(Encoding::NAMES.contains(&("b32", Encoding::Base32)));
    /// for (name, encoding) in Encoding::NAMES {
    ///     assert_eq!(name.parse(), Ok(encoding));
    /// }
    /// ```
    pub const NAMES: [(&'static str, Encoding); 9] = [
        ("decimal", Self::Decimal),
        ("dec", Self::Decimal),
        ("hex", Self::Hex),
        ("base32", Self::Base32),
        ("b32", Self::Base32),
        ("base62", Self::Base62),
        ("b62", Self::Base62),
        ("binary", Self::Binary),
        ("bin", Self::Binary),
    ];

    /// The lowercase name that [`Display`](fmt::Display) writes and [`FromStr`] reads.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::Encoding;
    ///
    /// assert_eq!(Encoding::Base32.name(), "base32");
    /// ```
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Decimal => "decimal",
            Self::Hex => "hex",
            Self::Base32 => "base32",
            Self::Base62 => "base62",
            Self::Binary => "binary",
        }
    }

    /// The most digits an id takes in this encoding (not counting a prefix: hex's optional
    /// `0x`, binary's `0b`); the padded encodings always write exactly this many.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::Encoding;
    ///
    /// assert_eq!(Encoding::Decimal.max_len(), u64::MAX.to_string().len());
    /// assert_eq!(Encoding::Base62.max_len(), 11);
    /// ```
    #[must_use]
    pub const fn max_len(self) -> usize {
        match self {
            Self::Decimal => 20, // the digits of u64::MAX
            Self::Hex => 16,     // 64 bits / 4 bits a digit
            Self::Base32 => 13,  // ceil(64 / 5): the first digit carries the top 4 bits
            Self::Base62 => 11,  // 62^10 < 2^64 <= 62^11
            Self::Binary => 64,
        }
    }

    /// What people call the encoding, capitalised for a label: "Crockford base32".
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::Encoding;
    ///
    /// assert_eq!(Encoding::Base32.title(), "Crockford base32");
    /// ```
    #[must_use]
    pub const fn title(self) -> &'static str {
        match self {
            Self::Decimal => "Decimal",
            Self::Hex => "Hex",
            Self::Base32 => "Crockford base32",
            Self::Base62 => "Base62",
            Self::Binary => "Binary",
        }
    }

    /// The digits in order of value: the character at index `i` stands for `i`, so the
    /// radix is the alphabet's length. [`encode`](Self::encode) writes only these.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::Encoding;
    ///
    /// assert_eq!(Encoding::Hex.alphabet(), "0123456789abcdef");
    /// assert_eq!(Encoding::Base32.alphabet().len(), 32);
    /// assert!(!Encoding::Base32.alphabet().contains(['I', 'L', 'O', 'U']));
    /// ```
    #[must_use]
    pub const fn alphabet(self) -> &'static str {
        match core::str::from_utf8(self.digit_bytes()) {
            Ok(alphabet) => alphabet,
            Err(_) => unreachable!(),
        }
    }

    /// Whether [`decode`](Self::decode) reads a letter in either case (hex and base32).
    /// Base62 cannot: its alphabet holds both cases.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::Encoding;
    ///
    /// assert!(Encoding::Hex.ignores_case());
    /// assert!(!Encoding::Base62.ignores_case());
    /// ```
    #[must_use]
    pub const fn ignores_case(self) -> bool {
        matches!(self, Self::Hex | Self::Base32)
    }

    /// Whether [`encode`](Self::encode) zero-pads to [`max_len`](Self::max_len), so that
    /// the texts sort like the numbers (every encoding but decimal).
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::Encoding;
    ///
    /// assert!(Encoding::Base62.is_padded());
    /// assert!(!Encoding::Decimal.is_padded());
    /// ```
    #[must_use]
    pub const fn is_padded(self) -> bool {
        !matches!(self, Self::Decimal)
    }

    /// The prefixes [`decode`](Self::decode) skips before the digits: `0x` and `0X` for
    /// hex, `0b` and `0B` for binary, none for the others. Positions in error messages
    /// count them.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::Encoding;
    ///
    /// assert_eq!(Encoding::Hex.prefixes(), ["0x", "0X"]);
    /// assert!(Encoding::Decimal.prefixes().is_empty());
    /// ```
    #[must_use]
    pub const fn prefixes(self) -> &'static [&'static str] {
        match self {
            Self::Hex => &["0x", "0X"],
            Self::Binary => &["0b", "0B"],
            _ => &[],
        }
    }

    /// The prefix [`encode`](Self::encode) writes before the digits where a convention
    /// gives one: `0x` for hex and `0b` for binary, whose bare digits can read as decimal;
    /// empty for the others.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::Encoding;
    ///
    /// assert_eq!(Encoding::Binary.written_prefix(), "0b");
    /// assert_eq!(Encoding::Hex.written_prefix(), "0x");
    /// assert_eq!(Encoding::Base32.written_prefix(), "");
    /// ```
    #[must_use]
    pub const fn written_prefix(self) -> &'static str {
        match self {
            Self::Hex => "0x",
            Self::Binary => "0b",
            _ => "",
        }
    }

    /// The length of the longest text [`encode`](Self::encode) writes: the
    /// [`written_prefix`](Self::written_prefix) and [`max_len`](Self::max_len) digits.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::Encoding;
    ///
    /// assert_eq!(Encoding::Binary.written_len(), 66);
    /// assert_eq!(Encoding::Hex.written_len(), 18);
    /// ```
    #[must_use]
    pub const fn written_len(self) -> usize {
        self.written_prefix().len() + self.max_len()
    }

    /// The value of one character in this encoding, or `None` if [`decode`](Self::decode)
    /// refuses it: the alphabet, the other case where [`ignores_case`](Self::ignores_case),
    /// and Crockford's aliases in base32 (`I` and `L` read as 1, `O` as 0).
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::Encoding;
    ///
    /// assert_eq!(Encoding::Hex.digit('F'), Some(15));
    /// assert_eq!(Encoding::Base32.digit('o'), Some(0));
    /// assert_eq!(Encoding::Base32.digit('U'), None);
    /// assert_eq!(Encoding::Decimal.digit('٣'), None);
    /// ```
    #[must_use]
    pub fn digit(self, ch: char) -> Option<u8> {
        let (table, _) = self.table_and_radix();
        table
            .get(ch as usize)
            .copied()
            .filter(|&digit| digit != NOT_A_DIGIT)
    }

    /// Every character [`decode`](Self::decode) reads as a digit, with its value, in
    /// character order: what [`digit`](Self::digit) accepts, as a table. All are ASCII.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::Encoding;
    ///
    /// let digits: String = Encoding::Hex.digits().map(|(ch, _)| ch).collect();
    /// assert_eq!(digits, "0123456789ABCDEFabcdef");
    /// assert_eq!(Encoding::Base32.digits().count(), 2 * 32 - 10 + 6);
    /// ```
    pub fn digits(self) -> impl Iterator<Item = (char, u8)> {
        (0..128u8)
            .map(char::from)
            .filter_map(move |ch| self.digit(ch).map(|digit| (ch, digit)))
    }

    /// Writes `value` into `buf` and returns the text, without allocating.
    ///
    /// [`BUF_LEN`](Self::BUF_LEN) bytes hold the longest text of any encoding. The text
    /// is the returned slice; where in `buf` it lies is unspecified.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::Encoding;
    ///
    /// let mut buf = [0; Encoding::BUF_LEN];
    /// assert_eq!(Encoding::Decimal.encode(10, &mut buf), "10");
    /// assert_eq!(Encoding::Hex.encode(10, &mut buf), "0x000000000000000a");
    /// assert_eq!(Encoding::Base32.encode(10, &mut buf), "000000000000A");
    /// assert_eq!(Encoding::Base62.encode(10, &mut buf), "0000000000A");
    /// assert_eq!(Encoding::Binary.encode(10, &mut buf), format!("0b{:064b}", 10));
    /// ```
    #[must_use]
    pub fn encode(self, value: u64, buf: &mut [u8; Encoding::BUF_LEN]) -> &str {
        let mut start = match self {
            Self::Decimal => encode_decimal(value, buf),
            Self::Hex => encode_padded(value, HEX_DIGITS, self.max_len(), buf),
            Self::Base32 => encode_padded(value, BASE32_DIGITS, self.max_len(), buf),
            Self::Base62 => encode_padded(value, BASE62_DIGITS, self.max_len(), buf),
            Self::Binary => encode_padded(value, BINARY_DIGITS, self.max_len(), buf),
        };
        let prefix = self.written_prefix().as_bytes();
        start -= prefix.len();
        buf[start..start + prefix.len()].copy_from_slice(prefix);
        match core::str::from_utf8(&buf[start..]) {
            Ok(text) => text,
            Err(_) => unreachable!("every alphabet is ASCII"),
        }
    }

    /// Parses `text` in this encoding.
    ///
    /// # Errors
    ///
    /// [`ParseError::Empty`] for empty text (or a bare `0x` or `0b`); otherwise, in this order of
    /// precedence, [`ParseError::InvalidChar`] naming the first character outside the alphabet
    /// and its position in `text` (counted in characters), [`ParseError::TooLong`] for more
    /// than [`max_len`](Self::max_len) characters, and [`ParseError::Overflow`] for a number
    /// past `u64::MAX`.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), snowmint::ParseError> {
    /// use snowmint::{Encoding, ParseError};
    ///
    /// assert_eq!(Encoding::Hex.decode("0xFF")?, 255);
    /// assert_eq!(Encoding::Base32.decode("1o")?, 32);
    ///
    /// let err = Encoding::Base32.decode("01U").unwrap_err();
    /// assert_eq!(err.to_string(), "invalid character 'U' at position 2 in base32 id");
    /// assert!(matches!(err, ParseError::InvalidChar { position: 2, .. }));
    /// # Ok(()) }
    /// ```
    pub fn decode(self, text: &str) -> Result<u64, ParseError> {
        // Every prefix is ASCII, so its length in bytes is its length in characters.
        let (digits, offset) = self
            .prefixes()
            .iter()
            .find_map(|prefix| text.strip_prefix(prefix).map(|rest| (rest, prefix.len())))
            .unwrap_or((text, 0));
        if digits.is_empty() {
            return Err(ParseError::Empty);
        }
        let (_, radix) = self.table_and_radix();
        let mut value = Some(0u64);
        let mut len = 0;
        for (i, ch) in digits.chars().enumerate() {
            let digit = self.digit(ch).ok_or(ParseError::InvalidChar {
                encoding: self,
                ch,
                position: offset + i,
            })?;
            // Keep reading after an overflow: a bad character later on outranks it.
            value = value
                .and_then(|v| v.checked_mul(radix))
                .and_then(|v| v.checked_add(u64::from(digit)));
            len += 1;
        }
        if len > self.max_len() {
            return Err(ParseError::TooLong {
                encoding: self,
                len,
                max: self.max_len(),
            });
        }
        value.ok_or(ParseError::Overflow { encoding: self })
    }

    /// Guesses the encoding of `text` and decodes it; returns the value and the encoding
    /// assumed.
    ///
    /// The first rule that matches decides:
    ///
    /// 1. text of ASCII digits only is decimal;
    /// 2. text that starts with `0x` or `0X` and goes on with hex digits only is hex, with
    ///    `0b` or `0B` and then `0` and `1` only binary: the prefixes `encode` writes;
    /// 3. text of exactly 13 characters is base32, 11 base62, 16 hex: the padded widths
    ///    (hex as written before it took its prefix);
    /// 4. text that starts with `0x` or `0X` is hex, with `0b` or `0B` binary;
    /// 5. anything else is decimal, so the error names its first non-digit.
    ///
    /// So everything `encode` writes in decimal, hex and binary reads back. Base32 and base62
    /// have no prefix, so some of their text cannot be told apart from the others:
    ///
    /// - text of digits only is a decimal: base32 `8000000000000` (2^63) comes back as the
    ///   number 8000000000000, and `0000000000123` as 123, not 1091;
    /// - text that starts with `0x` or `0b` and goes on with hex or binary digits only is
    ///   hex or binary;
    /// - base62 without its padding, as TSID libraries other than tsid-creator write it
    ///   (`WIlLsHwljH`, 10 characters), is of no padded width, and is valid base32 as well.
    ///
    /// Where the encoding is known, use [`decode`](Self::decode), and
    /// [`readers`](Self::readers) to say which encodings read text the guess refused.
    ///
    /// # Errors
    ///
    /// The error from decoding `text` in the encoding the rules pick; see
    /// [`decode`](Self::decode).
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), snowmint::ParseError> {
    /// use snowmint::Encoding;
    ///
    /// assert_eq!(Encoding::detect("1234567890")?, (1_234_567_890, Encoding::Decimal));
    /// assert_eq!(Encoding::detect("0x499602d2")?, (1_234_567_890, Encoding::Hex));
    /// assert_eq!(Encoding::detect("00000014SC0PJ")?, (1_234_567_890, Encoding::Base32));
    /// assert_eq!(Encoding::detect("000001LY7VK")?, (1_234_567_890, Encoding::Base62));
    /// assert_eq!(Encoding::detect("0b1011")?, (11, Encoding::Binary));
    /// // All digits: decimal, whatever else it could be.
    /// assert_eq!(Encoding::detect("8000000000000")?, (8_000_000_000_000, Encoding::Decimal));
    ///
    /// let err = Encoding::detect("hello").unwrap_err();
    /// assert_eq!(err.to_string(), "invalid character 'h' at position 0 in decimal id");
    /// # Ok(()) }
    /// ```
    pub fn detect(text: &str) -> Result<(u64, Encoding), ParseError> {
        let encoding = Self::guess(text);
        encoding.decode(text).map(|value| (value, encoding))
    }

    /// The encodings other than `but` that read `text`, in the order of [`ALL`](Self::ALL):
    /// what to suggest when the guess of [`detect`](Self::detect) refused it.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::Encoding;
    ///
    /// let readers: Vec<_> = Encoding::readers("WIlLsHwljH", Encoding::Decimal).collect();
    /// assert_eq!(readers, [Encoding::Base32, Encoding::Base62]);
    /// ```
    pub fn readers(text: &str, but: Encoding) -> impl Iterator<Item = Encoding> + '_ {
        Self::ALL
            .into_iter()
            .filter(move |&encoding| encoding != but && encoding.decode(text).is_ok())
    }

    /// The rules [`detect`](Self::detect) documents.
    pub(crate) fn guess(text: &str) -> Encoding {
        if text.bytes().all(|byte| byte.is_ascii_digit()) {
            return Self::Decimal;
        }
        let written = Self::ALL.into_iter().find(|encoding| {
            !encoding.written_prefix().is_empty()
                && encoding.prefixes().iter().any(|prefix| {
                    text.strip_prefix(prefix).is_some_and(|digits| {
                        !digits.is_empty() && digits.chars().all(|ch| encoding.digit(ch).is_some())
                    })
                })
        });
        if let Some(encoding) = written {
            return encoding;
        }
        let len = text.chars().count();
        let padded = [Self::Base32, Self::Base62, Self::Hex]
            .into_iter()
            .find(|encoding| encoding.max_len() == len);
        let prefixed = || {
            Self::ALL
                .into_iter()
                .find(|encoding| encoding.prefixes().iter().any(|p| text.starts_with(p)))
        };
        padded.or_else(prefixed).unwrap_or(Self::Decimal)
    }

    /// The alphabet's bytes (every alphabet is ASCII).
    const fn digit_bytes(self) -> &'static [u8] {
        match self {
            Self::Decimal => DECIMAL_DIGITS,
            Self::Hex => HEX_DIGITS,
            Self::Base32 => BASE32_DIGITS,
            Self::Base62 => BASE62_DIGITS,
            Self::Binary => BINARY_DIGITS,
        }
    }

    /// Letters read as digits beyond the alphabet, in either case.
    const fn alias_bytes(self) -> &'static [(u8, u8)] {
        match self {
            Self::Base32 => CROCKFORD_ALIASES,
            _ => &[],
        }
    }

    fn table_and_radix(self) -> (&'static DecodeTable, u64) {
        match self {
            Self::Decimal => (&DECIMAL_TABLE, 10),
            Self::Hex => (&HEX_TABLE, 16),
            Self::Base32 => (&BASE32_TABLE, 32),
            Self::Base62 => (&BASE62_TABLE, 62),
            Self::Binary => (&BINARY_TABLE, 2),
        }
    }
}

/// Writes `value` in decimal at the end of `buf`; returns where the text starts.
fn encode_decimal(mut value: u64, buf: &mut [u8; MAX_LEN]) -> usize {
    let mut start = MAX_LEN;
    while value >= 100 {
        let pair = (value % 100) as usize * 2;
        value /= 100;
        start -= 2;
        buf[start..start + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    }
    if value >= 10 {
        let pair = value as usize * 2;
        start -= 2;
        buf[start..start + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    } else {
        start -= 1;
        buf[start] = DECIMAL_DIGITS[value as usize];
    }
    start
}

/// Writes the low `width` digits of `value` in base `RADIX`, zero-padded, at the end of
/// `buf`; returns where the text starts. `RADIX` is a constant so the divisions compile to
/// shifts or multiplications.
fn encode_padded<const RADIX: usize>(
    mut value: u64,
    alphabet: &[u8; RADIX],
    width: usize,
    buf: &mut [u8; MAX_LEN],
) -> usize {
    let start = MAX_LEN - width;
    for slot in buf[start..].iter_mut().rev() {
        *slot = alphabet[(value % RADIX as u64) as usize];
        value /= RADIX as u64;
    }
    start
}

impl fmt::Display for Encoding {
    /// Writes [`name`](Self::name).
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::Encoding;
    ///
    /// assert_eq!(Encoding::Hex.to_string(), "hex");
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl FromStr for Encoding {
    type Err = String;

    /// Reads one of the [`NAMES`](Encoding::NAMES), ignoring case: `decimal` or `dec`, `hex`,
    /// `base32` or `b32`, `base62` or `b62`, `binary` or `bin`.
    ///
    /// # Errors
    ///
    /// A message naming the text and the encodings there are.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), String> {
    /// use snowmint::Encoding;
    ///
    /// assert_eq!("B32".parse::<Encoding>()?, Encoding::Base32);
    /// assert_eq!(
    ///     "x".parse::<Encoding>().unwrap_err(),
    ///     r#"unknown encoding "x": expected one of decimal, hex, base32, base62, binary"#
    /// );
    /// # Ok(()) }
    /// ```
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Encoding::NAMES
            .into_iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(s))
            .map(|(_, encoding)| encoding)
            .ok_or_else(|| {
                let names = Encoding::ALL.map(Encoding::name).join(", ");
                format!("unknown encoding {s:?}: expected one of {names}")
            })
    }
}

/// Defines an adapter type that displays an [`Id`] in one encoding and parses it back.
macro_rules! adapter {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $name(pub Id);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let mut buf = [0; MAX_LEN];
                f.pad(Encoding::$name.encode(self.0.as_u64(), &mut buf))
            }
        }

        impl FromStr for $name {
            type Err = ParseError;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Encoding::$name.decode(s).map(|value| Self(Id::from_u64(value)))
            }
        }
    };
}

adapter! {
    /// An [`Id`] in decimal: [`Display`](fmt::Display) writes it, [`FromStr`] parses it
    /// (see [`Encoding::decode`] for the errors).
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), snowmint::ParseError> {
    /// use snowmint::Id;
    /// use snowmint::encoding::Decimal;
    ///
    /// let id = Id::from_u64(1_234_567_890);
    /// assert_eq!(Decimal(id).to_string(), "1234567890");
    /// assert_eq!("1234567890".parse::<Decimal>()?.0, id);
    /// # Ok(()) }
    /// ```
    Decimal
}

adapter! {
    /// An [`Id`] in hex, lowercase and zero-padded to 16 digits after `0x`:
    /// [`Display`](fmt::Display) writes it, [`FromStr`] parses it with or without `0x` (see
    /// [`Encoding::decode`] for the errors).
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), snowmint::ParseError> {
    /// use snowmint::Id;
    /// use snowmint::encoding::Hex;
    ///
    /// let id = Id::from_u64(1_234_567_890);
    /// assert_eq!(Hex(id).to_string(), "0x00000000499602d2");
    /// assert_eq!("0x499602D2".parse::<Hex>()?.0, id);
    /// # Ok(()) }
    /// ```
    Hex
}

adapter! {
    /// An [`Id`] in Crockford base32, uppercase and zero-padded to 13 digits as TSID writes
    /// it: [`Display`](fmt::Display) writes it, [`FromStr`] parses it (see
    /// [`Encoding::decode`] for the errors).
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), snowmint::ParseError> {
    /// use snowmint::Id;
    /// use snowmint::encoding::Base32;
    ///
    /// let id = Id::from_u64(38_352_658_567_418_867);
    /// assert_eq!(Base32(id).to_string(), "01221H8Q1MMZK");
    /// assert_eq!("01221h8q1mmzk".parse::<Base32>()?.0, id);
    /// # Ok(()) }
    /// ```
    Base32
}

adapter! {
    /// An [`Id`] in base62 (`0-9A-Za-z`), zero-padded to 11 digits:
    /// [`Display`](fmt::Display) writes it, [`FromStr`] parses it (see
    /// [`Encoding::decode`] for the errors).
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), snowmint::ParseError> {
    /// use snowmint::Id;
    /// use snowmint::encoding::Base62;
    ///
    /// let id = Id::from_u64(u64::MAX);
    /// assert_eq!(Base62(id).to_string(), "LygHa16AHYF");
    /// assert_eq!("LygHa16AHYF".parse::<Base62>()?.0, id);
    /// # Ok(()) }
    /// ```
    Base62
}

adapter! {
    /// An [`Id`] in binary, `0b` and 64 digits: [`Display`](fmt::Display) writes it,
    /// [`FromStr`] parses it with or without `0b` (see [`Encoding::decode`] for the errors).
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), snowmint::ParseError> {
    /// use snowmint::Id;
    /// use snowmint::encoding::Binary;
    ///
    /// let id = Id::from_u64(5);
    /// assert_eq!(Binary(id).to_string(), format!("0b{}101", "0".repeat(61)));
    /// assert_eq!("0b101".parse::<Binary>()?.0, id);
    /// # Ok(()) }
    /// ```
    Binary
}

#[cfg(test)]
mod tests;
