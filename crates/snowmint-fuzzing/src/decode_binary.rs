//! Binary parsing never panics, and what it accepts re-encodes to the same value.

use snowmint::Encoding;

/// Feeds the bytes, as text, to `Encoding::Binary.decode`.
pub fn check(data: &[u8]) {
    crate::decode_round_trip(Encoding::Binary, data);
}
