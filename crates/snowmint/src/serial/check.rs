//! Check digits: Luhn and ISO 7064 mod 97-10, computed in one pass from left to right so a
//! serial can be checked (or written) without a buffer.

use core::fmt;

/// The check digit algorithm of a `{check}` field.
///
/// Both read the characters of the fields before the check, each digit as itself and each
/// letter as the two digits of its value A=10 ... Z=35 (as ISIN and IBAN do). Both catch
/// every single mistyped digit; mod 97-10 also catches every swap of two neighbours, which
/// Luhn misses for `09`/`90`.
///
/// # Examples
///
/// ```
/// use snowmint::serial::CheckDigit;
///
/// assert_eq!(CheckDigit::Luhn.width(), 1);
/// assert_eq!(CheckDigit::Mod97.to_string(), "mod97");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CheckDigit {
    /// The Luhn algorithm (credit card numbers, ISIN): one digit, `{check}` or
    /// `{check:luhn}`.
    #[default]
    Luhn,
    /// ISO 7064 mod 97-10 (IBAN): two digits, `{check:mod97}`.
    Mod97,
}

impl CheckDigit {
    /// Digits the check takes in a serial.
    #[must_use]
    pub const fn width(self) -> usize {
        match self {
            CheckDigit::Luhn => 1,
            CheckDigit::Mod97 => 2,
        }
    }

    /// The name used in templates: `luhn` or `mod97`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            CheckDigit::Luhn => "luhn",
            CheckDigit::Mod97 => "mod97",
        }
    }

    /// The algorithm a template names after `check:`.
    pub(crate) fn by_name(name: &str) -> Option<CheckDigit> {
        match name {
            "luhn" => Some(CheckDigit::Luhn),
            "mod97" => Some(CheckDigit::Mod97),
            _ => None,
        }
    }
}

impl fmt::Display for CheckDigit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A running check over the characters fed so far.
///
/// Luhn doubles every second digit counting from the right, which is unknown until the
/// end; so it keeps two sums, one doubling the even positions and one the odd, and picks
/// one when asked.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Checksum {
    /// `luhn[p]`: the Luhn sum (mod 10) if digits at positions of parity `p` are doubled.
    luhn: [u8; 2],
    /// Digits fed so far.
    count: usize,
    /// The digits fed so far, as one number, mod 97.
    rem97: u32,
}

impl Checksum {
    /// Feeds one ASCII character of a field: a digit, or a letter `A-Z` as two digits.
    /// Callers only feed validated field text, so nothing else arrives.
    pub(crate) fn push(&mut self, ch: u8) {
        match ch {
            b'0'..=b'9' => self.push_digit(ch - b'0'),
            b'A'..=b'Z' => {
                let value = ch - b'A' + 10;
                self.push_digit(value / 10);
                self.push_digit(value % 10);
            }
            _ => {}
        }
    }

    pub(crate) fn push_all(&mut self, text: &[u8]) {
        for &ch in text {
            self.push(ch);
        }
    }

    fn push_digit(&mut self, digit: u8) {
        // Doubling then adding the two digits: 0 2 4 6 8 1 3 5 7 9.
        let doubled = if digit < 5 { digit * 2 } else { digit * 2 - 9 };
        let parity = self.count % 2;
        self.luhn[parity] = (self.luhn[parity] + doubled) % 10;
        self.luhn[1 - parity] = (self.luhn[1 - parity] + digit) % 10;
        self.count += 1;
        self.rem97 = (self.rem97 * 10 + u32::from(digit)) % 97;
    }

    /// The check digits for what was fed.
    pub(crate) fn value(&self, check: CheckDigit) -> u8 {
        match check {
            CheckDigit::Luhn => {
                let Some(last) = self.count.checked_sub(1) else {
                    return 0;
                };
                // The rightmost digit is doubled once the check is appended after it.
                (10 - self.luhn[last % 2]) % 10
            }
            // ISO 7064 mod 97-10: append two zeros, and choose the check that makes the
            // whole number leave 1 when divided by 97.
            CheckDigit::Mod97 => (98 - (self.rem97 * 100 % 97)) as u8,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, algorithm: CheckDigit) -> u8 {
        let mut sum = Checksum::default();
        sum.push_all(text.as_bytes());
        sum.value(algorithm)
    }

    #[test]
    fn luhn_matches_published_examples() {
        // The worked example of the Luhn algorithm's usual description.
        assert_eq!(check("7992739871", CheckDigit::Luhn), 3);
        // A Visa test card number, 4111 1111 1111 1111: check digit 1.
        assert_eq!(check("411111111111111", CheckDigit::Luhn), 1);
        // ISIN US0378331005 (Apple): letters become two digits, then Luhn gives 5.
        assert_eq!(check("US037833100", CheckDigit::Luhn), 5);
        assert_eq!(check("", CheckDigit::Luhn), 0);
    }

    #[test]
    fn mod97_reproduces_an_iban() {
        // GB82WEST12345698765432: IBAN moves the country and check to the end, computes
        // mod 97-10 over WEST12345698765432GB with letters as two digits, and gets 82.
        assert_eq!(check("WEST12345698765432GB", CheckDigit::Mod97), 82);
        // DE89370400440532013000: 89 over 370400440532013000DE.
        assert_eq!(check("370400440532013000DE", CheckDigit::Mod97), 89);
        // By hand: payload 1 with two zeros is 100, which leaves 3 mod 97; 98 - 3 = 95, and
        // indeed 195 = 2 * 97 + 1 leaves 1.
        assert_eq!(check("1", CheckDigit::Mod97), 95);
    }

    #[test]
    fn a_payload_with_its_check_validates() {
        // Luhn: with the check appended, the sum doubling positions 1, 3 ... 9 (every
        // second digit left of the check) is a multiple of 10.
        let mut sum = Checksum::default();
        sum.push_all(b"79927398713");
        assert_eq!(sum.luhn[1], 0);
        // Mod 97-10: payload and check together leave 1.
        let mut sum = Checksum::default();
        sum.push_all(b"WEST12345698765432GB82");
        assert_eq!(sum.rem97, 1);
    }

    #[test]
    fn names_round_trip() {
        for check in [CheckDigit::Luhn, CheckDigit::Mod97] {
            assert_eq!(CheckDigit::by_name(check.name()), Some(check));
        }
        assert_eq!(CheckDigit::by_name("crc"), None);
    }
}
