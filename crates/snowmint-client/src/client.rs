//! The async client: takes from the buffer, waits for the refill task when it is empty.

use std::sync::Arc;
use std::time::Instant;

use snowmint::Id;
use tokio::runtime::Handle;
use tokio::task::AbortHandle;

use crate::buffer::{Buffer, Sizing, Step};
use crate::builder::Settings;
use crate::endpoint::Endpoints;
use crate::{Builder, Error, Stats};

/// A client of one or more `snowmint serve` processes, handing out ids from a prefetch
/// buffer. Cheap to clone: clones share the buffer, and the background task that fills it
/// stops when the last clone is dropped.
///
/// ```no_run
/// use snowmint_client::Client;
///
/// # async fn run() -> Result<(), snowmint_client::Error> {
/// let client = Client::builder()
///     .endpoints(["http://10.0.0.1:50051", "http://10.0.0.2:50051"])
///     .build()?;
/// let id = client.next_id().await?;
/// let more = client.next_ids(100).await?;
/// assert!(more[0] > id);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    buffer: Arc<Buffer>,
    endpoints: Vec<String>,
    _refill: StopOnDrop,
}

/// Owns the refill task: dropping it stops the task.
struct StopOnDrop(AbortHandle);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("endpoints", &self.inner.endpoints)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A builder with every setting at its default; give it endpoints.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// Starts the refill task on `handle`'s runtime.
    pub(crate) fn start(settings: Settings, handle: &Handle) -> Result<Client, Error> {
        let _inside = handle.enter(); // channels spawn their workers as they are made
        let mut endpoints = Endpoints::new(&settings)?;
        let sizing = Sizing {
            max_age: settings.max_age,
            min_batch: settings.min_batch,
            max_batch: settings.max_batch,
            monotonic: settings.monotonic,
        };
        let buffer = Arc::new(Buffer::new(sizing, Instant::now()));
        let refill = {
            let buffer = Arc::clone(&buffer);
            handle.spawn(async move {
                loop {
                    buffer.wanted.notified().await;
                    while let Some(count) = buffer.wanted_batch(Instant::now()) {
                        let outcome = endpoints.round(count, &buffer.counters).await;
                        let failed = outcome.is_err();
                        buffer.deliver(outcome, Instant::now());
                        if failed {
                            break; // the next take that finds nothing asks again
                        }
                    }
                }
            })
        };
        Ok(Client {
            inner: Arc::new(Inner {
                buffer,
                endpoints: settings.endpoints,
                _refill: StopOnDrop(refill.abort_handle()),
            }),
        })
    }

    /// One id, from the buffer when it holds a fresh one (one atomic step), else after the
    /// next batch arrives.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`], naming each endpoint and its last error, when the buffer is
    /// empty and a round of calls to every endpoint brought no ids.
    #[inline]
    pub async fn next_id(&self) -> Result<Id, Error> {
        match self.try_next_id() {
            Some(id) => Ok(id),
            None => self.wait_for_id().await,
        }
    }

    /// An id if the buffer holds a fresh one, without waiting.
    #[inline]
    pub(crate) fn try_next_id(&self) -> Option<Id> {
        self.inner.buffer.try_take(Instant::now()).map(Id::from_u64)
    }

    async fn wait_for_id(&self) -> Result<Id, Error> {
        let buffer = &self.inner.buffer;
        let mut waited = None;
        loop {
            let ended = buffer.ended();
            tokio::pin!(ended);
            ended.as_mut().enable();
            let now = Instant::now();
            if let Some(id) = buffer.try_take(now) {
                return Ok(Id::from_u64(id));
            }
            match buffer.step(now, waited) {
                Step::Retry => {}
                Step::Wait(round) => {
                    waited = Some(round);
                    ended.await;
                }
                Step::Failed(e) => return Err(e),
            }
        }
    }

    /// `n` ids, increasing unless a failover came between them (see the crate's docs),
    /// taken a batch's worth at a time in one atomic step.
    ///
    /// # Errors
    ///
    /// As [`Client::next_id`]; ids taken for the call before the error are thrown away.
    pub async fn next_ids(&self, n: usize) -> Result<Vec<Id>, Error> {
        let buffer = &self.inner.buffer;
        let mut raw = Vec::with_capacity(n);
        let mut waited = None;
        while raw.len() < n {
            if buffer.try_take_many(n - raw.len(), Instant::now(), &mut raw) > 0 {
                continue;
            }
            let ended = buffer.ended();
            tokio::pin!(ended);
            ended.as_mut().enable();
            let now = Instant::now();
            if buffer.try_take_many(n - raw.len(), now, &mut raw) > 0 {
                continue;
            }
            match buffer.step(now, waited) {
                Step::Retry => {}
                Step::Wait(round) => {
                    waited = Some(round);
                    ended.await;
                }
                Step::Failed(e) => return Err(e),
            }
        }
        Ok(raw.into_iter().map(Id::from_u64).collect())
    }

    /// The buffer and the counters, now.
    #[must_use]
    pub fn stats(&self) -> Stats {
        self.inner.buffer.stats(&self.inner.endpoints)
    }
}
