//! libFuzzer's entry to `snowmint_fuzzing::layout`, whose documentation says what it asserts;
//! `cargo test` replays the committed inputs through the same function.
#![no_main]
#![forbid(unsafe_code)]

libfuzzer_sys::fuzz_target!(|data: &[u8]| snowmint_fuzzing::layout::check(data));
