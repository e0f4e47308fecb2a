//! Guessing an encoding never panics, and what it accepts decodes and re-encodes to the
//! same value in the encoding it names.
#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;
use snowmint::Encoding;

fuzz_target!(|text: &str| {
    if let Ok((value, encoding)) = Encoding::detect(text) {
        assert_eq!(encoding.decode(text), Ok(value));
        let mut buf = [0; Encoding::BUF_LEN];
        let encoded = encoding.encode(value, &mut buf);
        assert_eq!(encoding.decode(encoded), Ok(value));
    }
});
