//! snowmint mints 64-bit, time-sorted, unique ids in the style of Twitter's Snowflake.
//!
//! This crate is the core: [`Id`], [`Layout`] and its presets, text encodings, and the
//! lock-free [`Generator`] with its [`Clock`] and high-water-mark [`Store`]. It does no I/O
//! and pulls in no async runtime; services and coordination sit in crates above it.
//!
//! ```
//! use snowmint::{Generator, Layout};
//!
//! let generator = Generator::builder(Layout::TWITTER).worker(3).build()?;
//! let a = generator.next_id()?;
//! let b = generator.next_id()?;
//! assert!(a < b);
//! assert_eq!(Layout::TWITTER.decode(b)?.worker, 3);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

mod clock;
mod decoded;
mod diagram;
pub mod encoding;
pub mod error;
mod generator;
mod id;
mod layout;
mod policy;
mod preset;
pub mod serial;
mod store;
mod time;

pub use clock::{Clock, ManualClock, SystemClock, WallClock};
pub use decoded::Decoded;
pub use diagram::Diagram;
pub use encoding::Encoding;
pub use error::{BuildError, IssueError, LayoutError, ParseError, RangeError};
pub use generator::{Builder, Generator, Stats};
pub use id::Id;
#[cfg(feature = "serde")]
pub use id::serde_int;
pub use layout::{Bits, Capacity, Field, Layout, Names, Parts};
pub use policy::{IdRange, OverflowPolicy, Poll, RollbackPolicy, SequenceStart};
pub use serial::{BizCode, ParsedSerial, SerialError};
pub use store::{MemoryStore, Store, StoreError};
pub use time::UnixMs;

/// The README's Rust examples, run as doctests so they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
