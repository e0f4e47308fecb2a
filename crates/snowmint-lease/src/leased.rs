//! The high-water mark of a generator that issues under a lease: recorded in the local state
//! file and in the registry, and never granted past what the registry vouches for.
//!
//! A successor may take the worker id over on another machine, with an empty state
//! directory and its clock behind; all it sees is the mark in the registry. So every id
//! issued under a lease must lie at or below a mark the registry already holds:
//!
//! - a registry that records marks on the issuing thread ([`Registry::reserve_now`], the
//!   `file` registry) records each reservation before the generator may issue up to it;
//! - a registry that records marks only when a lease is renewed (Redis, etcd, PostgreSQL,
//!   ZooKeeper)
//!   confirms `renewal + TTL` each time, and reservations are cut to the last confirmation
//!   ([`LeasedStore::confirm`]).
//!
//! The local state file records the same reservations, so a restart on the same machine
//! starts after them even when the registry is out of reach.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use snowmint::{Store, StoreError};

use crate::{FileStore, Lease, Registry};

/// A [`Store`] for a generator that issues under `lease`.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use snowmint::{Layout, Store};
/// use snowmint_lease::{FileStore, FixedRegistry, Fleet, LeasedStore, Registry};
///
/// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
/// let registry: Arc<dyn Registry> = Arc::new(FixedRegistry::new(3));
/// let claim = snowmint_lease::Claim::new("fleet.default", 0, 32, "host", std::time::Duration::from_secs(10));
/// let lease = registry.acquire(&claim).await?;
/// let dir = tempfile::tempdir()?;
/// let local = FileStore::for_generator(dir.path(), &Fleet::default(), &Layout::TWITTER, 0, lease.worker)?;
/// let store = LeasedStore::new(registry, lease, 5_000, local);
/// assert_eq!(store.reserve(9_000)?, 5_000); // cut to what the registry vouches for
/// store.confirm(12_000);
/// assert_eq!(store.reserve(9_000)?, 9_000);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct LeasedStore {
    registry: Arc<dyn Registry>,
    lease: Lease,
    /// How far the registry has recorded a mark (ms since the Unix epoch).
    confirmed_ms: AtomicU64,
    /// The end of the last tick issued, as the generator reported it on shutdown.
    issued_ms: AtomicU64,
    local: FileStore,
}

impl LeasedStore {
    /// A store for `lease`, with the registry's mark confirmed up to `confirmed_ms` and the
    /// local state file `local`.
    #[must_use]
    pub fn new(
        registry: Arc<dyn Registry>,
        lease: Lease,
        confirmed_ms: u64,
        local: FileStore,
    ) -> LeasedStore {
        LeasedStore {
            registry,
            lease,
            confirmed_ms: AtomicU64::new(confirmed_ms),
            issued_ms: AtomicU64::new(0),
            local,
        }
    }

    /// A renewal has recorded a mark up to `confirmed_ms` in the registry: reservations may
    /// now reach it.
    pub fn confirm(&self, confirmed_ms: u64) {
        self.confirmed_ms.store(confirmed_ms, Ordering::Release);
    }

    /// The end of the last tick the generator issued, once it has shut down; 0 before, or
    /// if it issued nothing.
    #[must_use]
    pub fn issued_ms(&self) -> u64 {
        self.issued_ms.load(Ordering::Acquire)
    }

    /// The local state file.
    #[must_use]
    pub fn state_file(&self) -> &std::path::Path {
        self.local.path()
    }

    /// The lease this store records marks for.
    #[must_use]
    pub fn lease(&self) -> &Lease {
        &self.lease
    }
}

impl Store for LeasedStore {
    fn load(&self) -> Result<Option<u64>, StoreError> {
        self.local.load()
    }

    fn reserve(&self, until_ms: u64) -> Result<u64, StoreError> {
        let granted = until_ms.min(self.confirmed_ms.load(Ordering::Acquire));
        // The registry first: it is what a successor on another machine reads.
        // The registry's error names it ("file registry is unavailable: ...").
        if let Some(recorded) = self.registry.reserve_now(&self.lease, granted) {
            recorded.map_err(StoreError::new)?;
        }
        self.local.reserve(granted)
    }

    fn release(&self, reserved_ms: u64, issued_ms: u64) -> Result<(), StoreError> {
        self.issued_ms.fetch_max(issued_ms, Ordering::AcqRel);
        self.local.release(reserved_ms, issued_ms)
    }
}
