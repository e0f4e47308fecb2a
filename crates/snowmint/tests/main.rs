//! The library's tests through its public API, one binary for all: the generator under
//! threads and clocks, each clock mode, the serial numbers, and the test vectors other
//! implementations check against. `cargo test -p snowmint --test api MODULE::` runs
//! one module's tests.

mod clock_modes;
mod generator;
mod serial;
mod vectors;
