//! What the client counts, for a metrics exporter to read.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The counters behind [`Stats`]. None is touched on the fast path: each moves once a batch
/// or once a failure, never once an id.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) refills: AtomicU64,
    pub(crate) failovers: AtomicU64,
    pub(crate) failed_rounds: AtomicU64,
    pub(crate) stale: AtomicU64,
    pub(crate) out_of_order: AtomicU64,
}

impl Counters {
    pub(crate) fn add(counter: &AtomicU64, n: usize) {
        if n > 0 {
            counter.fetch_add(n as u64, Relaxed);
        }
    }
}

/// A snapshot of a client's buffer and counters, from [`Client::stats`](crate::Client::stats).
/// Counters only grow, from the client's start; export them as Prometheus counters and
/// `buffered` as a gauge.
///
/// ```no_run
/// # async fn run() -> Result<(), snowmint_client::Error> {
/// let client = snowmint_client::Client::builder()
///     .endpoints(["http://127.0.0.1:50051"])
///     .build()?;
/// client.next_id().await?;
/// let stats = client.stats();
/// println!(
///     "buffered {} refills {} failovers {} stale {}",
///     stats.buffered, stats.refills, stats.failovers, stats.discarded_stale
/// );
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Ids in the buffer now, in the current batch and the one fetched behind it, stale
    /// ones included until a take finds them so.
    pub buffered: u64,
    /// Batches received.
    pub refills: u64,
    /// Times a batch came from another endpoint than the batch before it.
    pub failovers: u64,
    /// Rounds of calls in which no endpoint gave ids.
    pub failed_rounds: u64,
    /// Ids thrown away because they were older than `max_age`.
    pub discarded_stale: u64,
    /// Ids thrown away by the `monotonic` option: at or below an id taken before them.
    pub discarded_out_of_order: u64,
    /// The endpoint the current batch came from, once one has.
    pub endpoint: Option<String>,
}

impl Counters {
    pub(crate) fn snapshot(&self, buffered: u64, endpoint: Option<String>) -> Stats {
        Stats {
            buffered,
            refills: self.refills.load(Relaxed),
            failovers: self.failovers.load(Relaxed),
            failed_rounds: self.failed_rounds.load(Relaxed),
            discarded_stale: self.stale.load(Relaxed),
            discarded_out_of_order: self.out_of_order.load(Relaxed),
            endpoint,
        }
    }
}
