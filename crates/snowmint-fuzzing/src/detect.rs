//! Guessing an encoding never panics, and what it accepts decodes and re-encodes to the
//! same value in the encoding it names.

use snowmint::Encoding;

/// Feeds the bytes, as text, to `Encoding::detect`.
pub fn check(data: &[u8]) {
    let Some(text) = crate::input::<&str>(data) else {
        return;
    };
    if let Ok((value, encoding)) = Encoding::detect(text) {
        assert_eq!(encoding.decode(text), Ok(value));
        let mut buf = [0; Encoding::BUF_LEN];
        let encoded = encoding.encode(value, &mut buf);
        assert_eq!(encoding.decode(encoded), Ok(value));
    }
}
