//! The bodies of the fuzz targets in `fuzz/`, one module per target, each a `check` that
//! takes the raw bytes libFuzzer hands over.
//!
//! Two callers share them: the target in `fuzz/fuzz_targets/<name>.rs` (nightly,
//! libFuzzer, `scripts/fuzz-smoke`), and `tests/replay.rs`, which replays every committed
//! input of `fuzz/corpus/<name>/` and `fuzz/regressions/<name>/` on stable within
//! `cargo test --workspace`. Each target asserts that nothing panics, plus what its module
//! says: round trips, and errors of one line that name the input.
//!
//! ```
//! // Replay one input, as the test does for every committed file.
//! snowmint_fuzzing::decode_hex::check(b"0x1f");
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use arbitrary::{Arbitrary, Unstructured};
use snowmint::Encoding;

pub mod decode_base32;
pub mod decode_base62;
pub mod decode_binary;
pub mod decode_decimal;
pub mod decode_hex;
pub mod detect;
pub mod http_request;
pub mod layout;
pub mod lease_url;
pub mod parse_serial;
pub mod read_id;
pub mod registry_mark;
pub mod settings;
pub mod state_file;

/// A fuzz target: its name, which is its `[[bin]]` and file in `fuzz/` and its folders under
/// `fuzz/corpus/` and `fuzz/regressions/`, and the body its `fuzz_target!` calls.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    /// The target's name.
    pub name: &'static str,
    /// Its body: panics on what the target asserts against.
    pub check: fn(&[u8]),
}

/// Every fuzz target. The replay test checks this list against `fuzz/`, so that a target
/// cannot be added there without being replayed here.
pub const TARGETS: [Target; 14] = [
    target("decode_base32", decode_base32::check),
    target("decode_base62", decode_base62::check),
    target("decode_binary", decode_binary::check),
    target("decode_decimal", decode_decimal::check),
    target("decode_hex", decode_hex::check),
    target("detect", detect::check),
    target("http_request", http_request::check),
    target("layout", layout::check),
    target("lease_url", lease_url::check),
    target("parse_serial", parse_serial::check),
    target("read_id", read_id::check),
    target("registry_mark", registry_mark::check),
    target("settings", settings::check),
    target("state_file", state_file::check),
];

const fn target(name: &'static str, check: fn(&[u8])) -> Target {
    Target { name, check }
}

/// A target's typed input from raw bytes, as libfuzzer-sys's `fuzz_target!(|input: T| ...)`
/// builds it, so that a corpus file replays here as it ran under libFuzzer: `None` where
/// that macro skips the input (fewer bytes than `T` needs, or bytes `T` cannot be made of).
fn input<'a, T: Arbitrary<'a>>(data: &'a [u8]) -> Option<T> {
    if data.len() < T::size_hint(0).0 {
        return None;
    }
    T::arbitrary_take_rest(Unstructured::new(data)).ok()
}

/// The `decode_*` targets' body: parsing text in `encoding` never panics, and what it
/// accepts re-encodes to the same value.
fn decode_round_trip(encoding: Encoding, data: &[u8]) {
    let Some(text) = input::<&str>(data) else {
        return;
    };
    if let Ok(value) = encoding.decode(text) {
        let mut buf = [0; Encoding::BUF_LEN];
        let encoded = encoding.encode(value, &mut buf);
        assert_eq!(encoding.decode(encoded), Ok(value));
    }
}
