//! Base62 parsing never panics, and what it accepts re-encodes to the same value.

use snowmint::Encoding;

/// Feeds the bytes, as text, to `Encoding::Base62.decode`.
pub fn check(data: &[u8]) {
    crate::decode_round_trip(Encoding::Base62, data);
}
