//! The high-water mark: how a generator stays unique across restarts.
//!
//! Before a generator issues an id past its last reservation it asks its [`Store`] to record
//! a mark ahead of it (by default one second). On start it reads the mark and issues nothing
//! at or below it. A store that lives on disk or in a registry sits outside this crate.

use core::fmt;
use std::sync::{Arc, Mutex};

/// Why a store could not load or record a mark: the store's own error, shown as it is.
///
/// A pure wrapper: its message and its [`source`](std::error::Error::source) are the
/// wrapped error's, so a store's file path or registry name reaches the caller whole.
/// Cheap to clone (the error is shared).
///
/// # Examples
///
/// ```
/// use std::io;
/// use snowmint::StoreError;
///
/// let err = StoreError::new(io::Error::new(io::ErrorKind::StorageFull, "disk full"));
/// assert_eq!(err.to_string(), "disk full");
/// assert!(err.get_ref().downcast_ref::<io::Error>().is_some());
/// assert_eq!(StoreError::new("disk full").to_string(), "disk full");
/// ```
#[derive(Clone)]
pub struct StoreError(Arc<dyn std::error::Error + Send + Sync>);

impl StoreError {
    /// Wraps a store's error, or a message (which becomes an error with no cause).
    #[must_use]
    pub fn new(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> StoreError {
        StoreError(Arc::from(error.into()))
    }

    /// The wrapped error, to downcast to the store's own type.
    #[must_use]
    pub fn get_ref(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.0
    }
}

impl fmt::Debug for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// Where a generator records its high-water mark: the last instant (ms since the Unix
/// epoch) up to which it may have issued ids.
///
/// # Examples
///
/// ```
/// use snowmint::{MemoryStore, Store};
///
/// let store = MemoryStore::new();
/// assert_eq!(store.reserve(1_000)?, 1_000);
/// assert_eq!(store.load()?, Some(1_000));
/// # Ok::<(), snowmint::StoreError>(())
/// ```
pub trait Store: Send + Sync {
    /// The recorded mark, if any.
    ///
    /// # Errors
    ///
    /// The mark could not be read; the generator refuses to start rather than guess.
    fn load(&self) -> Result<Option<u64>, StoreError>;

    /// Durably records that ids up to `until_ms` may be issued, and returns how far it
    /// granted: `until_ms`, or less if the store can vouch for less (a registry that has
    /// confirmed a shorter mark). The generator issues nothing past the grant. Must not
    /// return before the mark would survive a crash. Never lowers the mark.
    ///
    /// # Errors
    ///
    /// The mark could not be recorded; the generator then issues nothing past the old one.
    fn reserve(&self, until_ms: u64) -> Result<u64, StoreError>;

    /// Called once on a clean shutdown: the generator reserved up to `reserved_ms` but issued
    /// ids only up to `issued_ms`. A store may lower its mark to `issued_ms` if it still
    /// holds `reserved_ms`, so the next run need not wait out the reservation.
    ///
    /// # Errors
    ///
    /// The mark could not be rewritten; keeping the higher mark is always safe.
    fn release(&self, reserved_ms: u64, issued_ms: u64) -> Result<(), StoreError> {
        let _ = (reserved_ms, issued_ms);
        Ok(())
    }
}

/// A store in memory: survives a generator, not a process. For tests and for generators
/// that restart within one process.
#[derive(Debug, Default)]
pub struct MemoryStore {
    mark: Mutex<Option<u64>>,
}

impl MemoryStore {
    /// An empty store.
    #[must_use]
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    fn mark(&self) -> std::sync::MutexGuard<'_, Option<u64>> {
        // A poisoned lock still holds a valid mark: the value is written in one step.
        self.mark.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Store for MemoryStore {
    fn load(&self) -> Result<Option<u64>, StoreError> {
        Ok(*self.mark())
    }

    fn reserve(&self, until_ms: u64) -> Result<u64, StoreError> {
        let mut mark = self.mark();
        *mark = Some(mark.map_or(until_ms, |m| m.max(until_ms)));
        Ok(until_ms)
    }

    fn release(&self, reserved_ms: u64, issued_ms: u64) -> Result<(), StoreError> {
        let mut mark = self.mark();
        if *mark == Some(reserved_ms) {
            *mark = Some(issued_ms);
        }
        Ok(())
    }
}

impl<S: Store + ?Sized> Store for std::sync::Arc<S> {
    fn load(&self) -> Result<Option<u64>, StoreError> {
        (**self).load()
    }

    fn reserve(&self, until_ms: u64) -> Result<u64, StoreError> {
        (**self).reserve(until_ms)
    }

    fn release(&self, reserved_ms: u64, issued_ms: u64) -> Result<(), StoreError> {
        (**self).release(reserved_ms, issued_ms)
    }
}
