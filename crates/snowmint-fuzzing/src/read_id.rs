//! Reading id text with a layout and an optional encoding, as `snowmint parse` and
//! `/v1/decode` do, never panics; what it reads is read again from the text the encoding
//! writes, and a negative decimal only for a layout of 64 bits.

use arbitrary::Arbitrary;
use snowmint::{Encoding, Layout};

#[derive(Debug, Arbitrary)]
struct Input<'a> {
    preset: u8,
    encoding: Option<u8>,
    text: &'a str,
}

/// Feeds the bytes, as a preset, an encoding or none and text, to `Layout::read_id`.
pub fn check(data: &[u8]) {
    let Some(input) = crate::input::<Input>(data) else {
        return;
    };
    let layout = Layout::PRESETS[usize::from(input.preset) % Layout::PRESETS.len()];
    let encoding = input
        .encoding
        .map(|e| Encoding::ALL[usize::from(e) % Encoding::ALL.len()]);
    let Ok(read) = layout.read_id(input.text, encoding) else {
        return;
    };
    assert!(!read.signed || layout.uses_bit_63());
    let mut buf = [0; Encoding::BUF_LEN];
    let written = read.encoding.encode(read.id.as_u64(), &mut buf);
    let again = layout.read_id(written, Some(read.encoding)).unwrap();
    assert_eq!(again.id, read.id);
}
