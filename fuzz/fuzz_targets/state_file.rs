//! libFuzzer's entry to `snowmint_fuzzing::state_file`, whose documentation says what it asserts;
//! `cargo test` replays the committed inputs through the same function.
#![no_main]
#![forbid(unsafe_code)]

libfuzzer_sys::fuzz_target!(|data: &[u8]| snowmint_fuzzing::state_file::check(data));
