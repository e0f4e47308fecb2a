//! Base32 parsing never panics, and what it accepts re-encodes to the same value.
#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;
use snowmint::Encoding;

fuzz_target!(|text: &str| {
    if let Ok(value) = Encoding::Base32.decode(text) {
        let mut buf = [0; Encoding::BUF_LEN];
        let encoded = Encoding::Base32.encode(value, &mut buf);
        assert_eq!(Encoding::Base32.decode(encoded), Ok(value));
    }
});
