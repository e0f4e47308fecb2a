//! The budget of ids in flight, and filling a batch within it.
//!
//! A request for `n` ids first takes room for them on its connection, then in the whole
//! server (each in arrival order), so one connection cannot take the whole budget and a
//! burst waits its turn instead of piling up. It keeps that room until its response has
//! been handed to the transport ([`Held`] travels in the response's extensions and the
//! accept loop drops it with the body), so a reader that does not read holds its own
//! connection's share and nothing more. Batches that may span ticks are filled off the
//! async threads, a bounded number at a time, so waiting requests hold no thread.

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::metrics::gauge::Gauge;
use snowmint::Id;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::{ApiError, AppState, Limits};

/// Batches up to one default tick are filled on the request's own thread; larger ones may
/// wait for several ticks, so they move to the blocking pool.
const INLINE_BATCH: u64 = 4096;
/// Blocking fills at once: the generator issues one tick at a time, so two threads keep it
/// busy while one of them waits for the next tick; more would only add threads.
const BLOCKING_FILLS: usize = 2;
/// Longest wait for room in the budget before answering 503: long enough to ride out a
/// burst (a full budget drains in about a second at the default layout's rate).
pub const QUEUE_WAIT: Duration = Duration::from_secs(5);

/// The server's room for ids in flight.
#[derive(Debug)]
pub struct Budget {
    ids: Arc<Semaphore>,
    max: u32,
    per_connection: u32,
    fills: Semaphore,
    in_flight: Gauge,
}

/// One connection's share of the budget. The accept loop puts one in the extensions of
/// every request it reads; a request without one (a router called in tests) takes room in
/// the server's budget only.
#[derive(Debug, Clone)]
pub struct ConnShare(Arc<Semaphore>);

/// Room held for ids in flight, given back when the last clone is dropped.
#[derive(Debug, Clone)]
pub struct Held(#[allow(dead_code)] Arc<Permits>);

#[derive(Debug)]
struct Permits {
    count: u32,
    _connection: Option<OwnedSemaphorePermit>,
    _server: OwnedSemaphorePermit,
    in_flight: Gauge,
}

impl Drop for Permits {
    fn drop(&mut self) {
        self.in_flight.dec_by(i64::from(self.count));
    }
}

impl Budget {
    /// A budget for `limits`, reporting the ids it holds to `in_flight`.
    #[must_use]
    pub fn new(limits: &Limits, in_flight: Gauge) -> Budget {
        Budget {
            ids: Arc::new(Semaphore::new(limits.max_ids_in_flight as usize)),
            max: limits.max_ids_in_flight,
            per_connection: limits.max_ids_in_flight_per_connection,
            fills: Semaphore::new(BLOCKING_FILLS),
            in_flight,
        }
    }

    /// A new connection's share.
    #[must_use]
    pub fn share(&self) -> ConnShare {
        ConnShare(Arc::new(Semaphore::new(self.per_connection as usize)))
    }

    /// Waits for room for `count` ids, on `share` and then in the server.
    async fn hold(&self, count: u64, share: Option<&ConnShare>) -> Result<Held, ApiError> {
        // Requests are at most `max_batch`, which validation keeps within both limits.
        let n = u32::try_from(count).unwrap_or(u32::MAX);
        let connection = match share {
            Some(ConnShare(share)) => Some(
                tokio::time::timeout(QUEUE_WAIT, Arc::clone(share).acquire_many_owned(n))
                    .await
                    .map_err(|_| {
                        ApiError::Unavailable(format!(
                            "no room for {count} more ids on this connection within {} s: at most {} may be in flight on one connection (max_ids_in_flight_per_connection); read the responses already sent, or use another connection",
                            QUEUE_WAIT.as_secs(),
                            self.per_connection,
                        ))
                    })?
                    .map_err(|_| closed())?,
            ),
            None => None,
        };
        let server = tokio::time::timeout(QUEUE_WAIT, Arc::clone(&self.ids).acquire_many_owned(n))
            .await
            .map_err(|_| {
                ApiError::Unavailable(format!(
                    "no room for {count} more ids within {} s: at most {} may be in flight (max_ids_in_flight); try again later",
                    QUEUE_WAIT.as_secs(),
                    self.max,
                ))
            })?
            .map_err(|_| closed())?;
        self.in_flight.inc_by(i64::from(n));
        Ok(Held(Arc::new(Permits {
            count: n,
            _connection: connection,
            _server: server,
            in_flight: self.in_flight.clone(),
        })))
    }
}

fn closed() -> ApiError {
    ApiError::Unavailable("shutting down".into())
}

/// Exactly `count` ids, with the room they hold until the response carrying them is handed
/// to the transport (put the [`Held`] in the response's extensions). `count` has been
/// checked against `max_batch`, which the limits' validation keeps within the budget.
///
/// # Errors
///
/// No room within [`QUEUE_WAIT`] (503), not ready, or the generator refused.
pub(super) async fn fill(
    state: &AppState,
    count: u64,
    share: Option<&ConnShare>,
) -> Result<(Vec<Id>, Held), ApiError> {
    let held = state.budget.hold(count, share).await?;
    let source = Arc::clone(&state.source);
    // While the clock is behind, a batch may wait seconds for it: never on an async worker.
    let ids = if count <= INLINE_BATCH && !source.behind() {
        let mut ids = Vec::with_capacity(count as usize);
        source.fill(count, &mut ids)?;
        ids
    } else {
        let _turn = state.budget.fills.acquire().await.map_err(|_| closed())?;
        tokio::task::spawn_blocking(move || {
            let mut ids = Vec::with_capacity(count as usize);
            source.fill(count, &mut ids).map(|()| ids)
        })
        .await
        .map_err(|e| ApiError::Unavailable(format!("batch was interrupted: {e}")))??
    };
    state.metrics.ids_issued.inc_by(count);
    Ok((ids, held))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget() -> Budget {
        let limits = Limits {
            max_ids_in_flight: 1500,
            max_ids_in_flight_per_connection: 1000,
            ..Limits::defaults(1000)
        };
        Budget::new(&limits, Gauge::default())
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_waits_for_its_own_share_then_gets_503() {
        let budget = budget();
        let share = budget.share();
        let held = budget.hold(800, Some(&share)).await.unwrap();
        assert_eq!(budget.in_flight.get(), 800);
        let err = budget.hold(300, Some(&share)).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "no room for 300 more ids on this connection within 5 s: at most 1000 may be in flight on one connection (max_ids_in_flight_per_connection); read the responses already sent, or use another connection"
        );
        // Another connection is not held up by it.
        let other = budget.hold(300, Some(&budget.share())).await.unwrap();
        drop((held, other));
        assert_eq!(budget.in_flight.get(), 0);
        assert!(budget.hold(1000, Some(&share)).await.is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn the_server_budget_bounds_all_connections_and_serves_them_in_turn() {
        let budget = budget();
        let first = budget.hold(1000, Some(&budget.share())).await.unwrap();
        let err = budget.hold(600, Some(&budget.share())).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "no room for 600 more ids within 5 s: at most 1500 may be in flight (max_ids_in_flight); try again later"
        );
        // A waiter gets its turn as soon as room is given back.
        let share = budget.share();
        let (waiting, ()) = tokio::join!(budget.hold(600, Some(&share)), async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            drop(first);
        });
        assert!(waiting.is_ok());
    }
}
