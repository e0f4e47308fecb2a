//! Hex parsing never panics, and what it accepts re-encodes to the same value.
#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;
use snowmint::Encoding;

fuzz_target!(|text: &str| {
    if let Ok(value) = Encoding::Hex.decode(text) {
        let mut buf = [0; Encoding::BUF_LEN];
        let encoded = Encoding::Hex.encode(value, &mut buf);
        assert_eq!(Encoding::Hex.decode(encoded), Ok(value));
    }
});
