//! The blocking client, for code without an async runtime.

use snowmint::Id;
use tokio::runtime::Runtime;

use crate::builder::Settings;
use crate::{Error, Stats};

/// A client that blocks the calling thread, and only when the buffer is empty: a take from
/// the buffer is the same one atomic step as the async client's. It runs its own tokio
/// runtime with one thread for the calls to the servers; from
/// [`Builder::build_blocking`](crate::Builder::build_blocking).
///
/// Do not use it inside an async runtime: a call that waits would stall that runtime's
/// thread (building one there is refused with [`Error::InsideRuntime`]).
///
/// ```no_run
/// let client = snowmint_client::Client::builder()
///     .endpoints(["http://127.0.0.1:50051"])
///     .build_blocking()?;
/// let id = client.next_id()?;
/// println!("{id}");
/// # Ok::<(), snowmint_client::Error>(())
/// ```
#[derive(Debug)]
pub struct Client {
    // Dropped before the runtime: its guard stops the refill task first.
    inner: crate::Client,
    runtime: Runtime,
}

impl Client {
    pub(crate) fn start(settings: Settings) -> Result<Client, Error> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("snowmint-client")
            .enable_all()
            .build()
            .map_err(|e| Error::Runtime(e.into()))?;
        let inner = crate::Client::start(settings, runtime.handle())?;
        Ok(Client { inner, runtime })
    }

    /// One id; as [`crate::Client::next_id`].
    ///
    /// # Errors
    ///
    /// As [`crate::Client::next_id`].
    #[inline]
    pub fn next_id(&self) -> Result<Id, Error> {
        match self.inner.try_next_id() {
            Some(id) => Ok(id),
            None => self.runtime.block_on(self.inner.next_id()),
        }
    }

    /// `n` ids; as [`crate::Client::next_ids`].
    ///
    /// # Errors
    ///
    /// As [`crate::Client::next_ids`].
    pub fn next_ids(&self, n: usize) -> Result<Vec<Id>, Error> {
        self.runtime.block_on(self.inner.next_ids(n))
    }

    /// The buffer and the counters, now.
    #[must_use]
    pub fn stats(&self) -> Stats {
        self.inner.stats()
    }
}
