//! Worker-id ownership and restart safety for snowmint generators.
//!
//! - [`FileStore`] keeps a generator's high-water mark in a small file, one per layout,
//!   datacenter and worker, and holds a lock on it for as long as the generator lives, so
//!   two processes on one host never issue ids for the same worker id at once. See the
//!   [`state_file`] module for the files and the protocol.
//! - A [`Registry`] leases worker ids to a fleet: fixed ([`FixedRegistry`]: static or
//!   from the host name), a directory of locked files ([`FileRegistry`]), or the
//!   coordination systems operators already run. A [`Keeper`] acquires and renews a lease
//!   in the background and publishes until when it is certainly valid. A generator that
//!   issues under a lease records its high-water mark through a [`LeasedStore`].
//!
//! ```
//! use std::sync::Arc;
//! use snowmint::{Generator, Layout};
//! use snowmint_lease::{FileStore, Fleet};
//!
//! let dir = tempfile::tempdir()?;
//! let store = FileStore::for_generator(dir.path(), &Fleet::default(), &Layout::TWITTER, 0, 1)?;
//! let generator = Generator::builder(Layout::TWITTER).worker(1).store(Arc::new(store)).build()?;
//! let id = generator.next_id()?;
//! generator.shutdown()?; // lowers the mark to the last id issued
//!
//! let path = FileStore::path_in(dir.path(), &Fleet::default(), 0, 1);
//! let mark = FileStore::open(&path)?.mark()?.expect("a mark was written");
//! assert_eq!(mark, Layout::TWITTER.decode(id)?.unix_ms);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

mod backend;
mod error;
mod fleet;
mod identity;
mod keeper;
mod leased;
mod legacy;
mod listing;
pub mod mark;
mod refusal;
mod registry;
mod secured;
mod state_dir;
pub mod state_file;

pub use backend::{
    EtcdRegistry, FileRegistry, FixedRegistry, PostgresRegistry, RedisRegistry, ZooKeeperRegistry,
    registry_from_url,
};
pub use error::StateError;
pub use state_dir::{STATE_DIR_ENV, default_state_dir, ensure_state_dir};
pub use state_file::{DEFAULT_LOCK_WAIT, FileStore};
/// The old name of [`StateError`].
#[deprecated(note = "renamed StateError")]
pub type Error = StateError;
pub use fleet::{Fleet, legacy_namespaces};
pub use identity::{IdentitySource, primary_ip};
pub use keeper::{Held, Keeper, LeaseCounters, LeaseSettings, LeaseStatus};
pub use leased::LeasedStore;
pub use legacy::{MAX_LEAD_MS, lead_ms, may_overlap};
pub use listing::{
    Lasts, ListFilter, Listing, Pool, Record, Shared, State, identity_of, preset_named,
};
pub use registry::{Claim, Lease, LeaseError, Registry};
pub use secured::{
    MAX_FILE_BYTES, PARAMETERS as SECURED_PARAMETERS, Secured, TlsFiles, User, certificates,
    install_crypto_provider, pem_certificates, private_key, read_small_file, read_small_text,
    redact,
};

/// This machine's host name, or `localhost` if it cannot be read.
#[must_use]
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname writes at most that much.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "localhost".into();
    }
    let len = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..len]).into_owned()
}
