//! Worker-id ownership and restart safety for snowmint generators.
//!
//! [`FileStore`] keeps a generator's high-water mark in a small file, one per layout,
//! datacenter and worker, and holds a lock on it for as long as the generator lives, so
//! two processes on one host never issue ids for the same worker id at once. See the
//! [`file`](mod@file) module for the files and the protocol.
//!
//! ```
//! use std::sync::Arc;
//! use snowmint::{Generator, Layout};
//! use snowmint_lease::FileStore;
//!
//! let dir = tempfile::tempdir()?;
//! let store = FileStore::for_generator(dir.path(), &Layout::TWITTER, 0, 1)?;
//! let generator = Generator::builder(Layout::TWITTER).worker(1).store(Arc::new(store)).build()?;
//! let id = generator.next_id()?;
//! generator.shutdown()?; // lowers the mark to the last id issued
//!
//! let path = FileStore::path_in(dir.path(), &Layout::TWITTER, 0, 1);
//! let mark = FileStore::open(&path)?.mark()?.expect("a mark was written");
//! assert_eq!(mark, Layout::TWITTER.decode(id)?.unix_ms);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

mod dir;
mod error;
pub mod file;

pub use dir::{STATE_DIR_ENV, default_state_dir, ensure_state_dir};
pub use error::Error;
pub use file::{DEFAULT_LOCK_WAIT, FileStore};
