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
//!
//! # Words
//!
//! One word per concept, across the crates, the service, its docs and its messages:
//!
//! | word | means |
//! |---|---|
//! | **id** | a 64-bit value made of a timestamp and the fields below, an [`Id`] |
//! | **layout** | how an id's bits are split: widths, field order, tick length, epoch ([`Layout`]) |
//! | **preset** | a layout with a name (`twitter`, `discord`, ...): data, not a code path |
//! | **tick** | the timestamp's unit (1 ms by default); an id's timestamp counts ticks since the epoch |
//! | **epoch** | the instant tick 0 starts, in ms since the Unix epoch |
//! | **datacenter**, **worker** | the two fields that tell generators apart; a preset may show them under its own names (Discord's *process*, Instagram's *shard*, Sonyflake's *machine*, TSID's *node*), but the keys are always these |
//! | **sequence** | the field that counts ids within one tick |
//! | **node** | in a business serial only: the datacenter and worker together, as one number |
//! | **slot** | in the generator only: one value of its counter, the tick shifted above the sequence; taking a slot is taking an id |
//! | **high-water mark** (**mark**) | an instant up to which ids may have been issued with a (datacenter, worker); nothing at or below it is issued again |
//! | **reservation** | a mark written ahead of the ids (1 s by default) before they are issued |
//! | **lease** | a worker id held from a registry until a time; its **fence** is the instant up to which ids may be issued under it |
//! | **registry** | who hands out leases: static, host name, a directory of lock files, Redis, etcd, PostgreSQL, ZooKeeper |
//! | **reading** | how text was read as an id: the encoding, named or guessed, and whether a negative decimal was taken as the two's complement ([`IdReading`]) |
//! | **serial** | a business serial number made from an id by a template, and parsed back to it |
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod canonical;
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
mod reading;
pub mod serial;
mod store;
mod time;

pub use canonical::Canonical;
pub use clock::{Clock, ManualClock, ModeClock, SystemClock, WallClock, manual};
pub use decoded::Decoded;
pub use diagram::Diagram;
pub use encoding::Encoding;
pub use error::{BuildError, IssueError, LayoutError, ParseError, RangeError};
pub use generator::{Builder, Generator, Stats, TickWait};
pub use id::Id;
#[cfg(feature = "serde")]
pub use id::serde_int;
#[cfg(feature = "serde")]
pub use layout::LayoutForm;
pub use layout::{Bits, Capacity, Field, Fields, Layout, Names, Parts};
pub use policy::{
    ClockMode, IdRange, OverflowPolicy, Poll, RollbackPolicy, SequenceStart, UnknownClockMode,
};
pub use reading::IdReading;
pub use serial::{BizCode, ParsedSerial, SerialError};
pub use store::{MemoryStore, Store, StoreError};
pub use time::{MS_PER_YEAR, TimeError, UnixMs, whole_ms};

/// The README's Rust examples, run as doctests so they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
