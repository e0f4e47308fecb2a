//! Binary parsing never panics, and what it accepts re-encodes to the same value.
#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;
use snowmint::Encoding;

fuzz_target!(|text: &str| {
    if let Ok(value) = Encoding::Binary.decode(text) {
        let mut buf = [0; Encoding::BUF_LEN];
        let encoded = Encoding::Binary.encode(value, &mut buf);
        assert_eq!(Encoding::Binary.decode(encoded), Ok(value));
    }
});
