//! The budget of ids in flight, and filling a batch within it.
//!
//! A request for `n` ids first takes room for them on its connection (in arrival order),
//! then in the whole server by fair shares between clients ([`fair`](super::fair)): no
//! client holds more than its share while others wait, and small requests do not queue
//! behind large ones. It keeps that room until its response has been handed to the
//! transport, or until the response's drain deadline ([`Room`]), so ids nobody reads do
//! not hold the budget. Batches that may span ticks are filled off the async threads, a
//! bounded number at a time, so waiting requests hold no thread.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use snowmint::Id;
use tokio::sync::Semaphore;
use tokio::time::Instant;

use super::fair::Fair;
use super::origin::{Caller, Origin, TrustedProxies};
use super::room::{Deadlines, Drain, Permits, Room};
use crate::{ApiError, AppState, Limits};

/// Batches up to one default tick are filled on the request's own thread; larger ones may
/// wait for several ticks, so they move to the blocking pool. The same batches are small
/// to the fair shares ([`SMALL`](super::fair::SMALL)).
pub(super) const INLINE_BATCH: u64 = 4096;
/// Blocking fills at once: the generator issues one tick at a time, so two threads keep it
/// busy while one of them waits for the next tick; more would only add threads.
const BLOCKING_FILLS: usize = 2;
/// Longest wait for room in the budget before answering 503: long enough to ride out a
/// burst (a full budget drains in about a second at the default layout's rate).
pub const QUEUE_WAIT: Duration = Duration::from_secs(5);

/// The server's room for ids in flight.
#[derive(Debug)]
pub struct Budget {
    fair: Arc<Fair>,
    max: u32,
    per_connection: u32,
    drain_grace: Duration,
    drain_rate: u64,
    trusted: Arc<TrustedProxies>,
    fills: Semaphore,
    deadlines: Arc<Deadlines>,
    in_flight: Gauge,
    abandoned: Counter,
}

impl Budget {
    /// A budget for `limits`, believing `trusted` proxies, reporting the ids it holds to
    /// `in_flight` and those it takes back at a drain deadline to `abandoned`.
    #[must_use]
    pub fn new(
        limits: &Limits,
        trusted: TrustedProxies,
        in_flight: Gauge,
        abandoned: Counter,
    ) -> Budget {
        Budget {
            fair: Fair::new(u64::from(limits.max_ids_in_flight)),
            max: limits.max_ids_in_flight,
            per_connection: limits.max_ids_in_flight_per_connection,
            drain_grace: limits.drain_grace,
            drain_rate: limits.min_drain_bytes_per_sec,
            trusted: Arc::new(trusted),
            fills: Semaphore::new(BLOCKING_FILLS),
            deadlines: Arc::default(),
            in_flight,
            abandoned,
        }
    }

    /// A new connection's caller, from `peer`.
    #[must_use]
    pub fn caller(&self, peer: IpAddr) -> Caller {
        Caller {
            connection: Arc::new(Semaphore::new(self.per_connection as usize)),
            peer,
            trusted: Arc::clone(&self.trusted),
            origin: Origin::of(peer),
        }
    }

    /// When a response of `bytes` given out now must have drained.
    fn deadline(&self, bytes: u64) -> Instant {
        let drain = Duration::from_secs_f64(bytes as f64 / self.drain_rate.max(1) as f64);
        Instant::now() + self.drain_grace + drain
    }

    /// Waits for room for `count` ids, on the caller's connection and then in the server.
    async fn hold(&self, count: u64, caller: Option<&Caller>) -> Result<Permits, ApiError> {
        // Requests are at most `max_batch`, which validation keeps within both limits.
        let n = u32::try_from(count).unwrap_or(u32::MAX);
        let connection = match caller {
            Some(caller) => Some(
                tokio::time::timeout(
                    QUEUE_WAIT,
                    Arc::clone(&caller.connection).acquire_many_owned(n),
                )
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
        let origin = caller.map_or(Origin::of(IpAddr::from([0, 0, 0, 0])), Caller::origin);
        let server = self
            .fair
            .take(origin, u64::from(n), QUEUE_WAIT)
            .await
            .ok_or_else(|| {
                ApiError::Unavailable(format!(
                    "no room for {count} more ids within {} s: at most {} may be in flight (max_ids_in_flight), and a origin may hold only its fair share while others wait; try again later",
                    QUEUE_WAIT.as_secs(),
                    self.max,
                ))
            })?;
        self.in_flight.inc_by(i64::from(n));
        Ok(Permits {
            count: n,
            _connection: connection,
            _server: server,
            in_flight: self.in_flight.clone(),
        })
    }
}

fn closed() -> ApiError {
    ApiError::Unavailable("shutting down".into())
}

/// Exactly `count` ids for a response of up to `bytes`, with the room they hold until the
/// response carrying them is handed to the transport (put the [`Room`] in the response's
/// extensions) or its drain deadline passes, when `drain` (a new one if `None`) abandons
/// it. `count` has been checked against `max_batch`, which the limits' validation keeps
/// within the budget.
///
/// # Errors
///
/// No room within [`QUEUE_WAIT`] (503), not ready, or the generator refused.
pub(super) async fn fill(
    state: &AppState,
    count: u64,
    bytes: u64,
    caller: Option<&Caller>,
    drain: Option<&Drain>,
) -> Result<(Vec<Id>, Room), ApiError> {
    let permits = state.budget.hold(count, caller).await?;
    let ready = state.source.ready_to_issue()?;
    // While the clock is behind, a batch may wait seconds for it: never on an async worker.
    let ids = if count <= INLINE_BATCH && !ready.behind() {
        let mut ids = Vec::with_capacity(count as usize);
        ready.fill(count, &mut ids)?;
        ids
    } else {
        let _turn = state.budget.fills.acquire().await.map_err(|_| closed())?;
        tokio::task::spawn_blocking(move || {
            let mut ids = Vec::with_capacity(count as usize);
            ready.fill(count, &mut ids).map(|()| ids)
        })
        .await
        .map_err(|e| ApiError::Unavailable(format!("batch was interrupted: {e}")))??
    };
    state.metrics.ids_issued.inc_by(count);
    // The drain deadline starts once the ids are there to be sent.
    let budget = &state.budget;
    let room = Room::new(
        permits,
        budget.deadline(bytes),
        &budget.deadlines,
        drain.cloned().unwrap_or_default(),
        budget.abandoned.clone(),
    );
    Ok((ids, room))
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
        Budget::new(
            &limits,
            TrustedProxies::default(),
            Gauge::default(),
            Counter::default(),
        )
    }

    fn peer(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_waits_for_its_own_share_then_gets_503() {
        let budget = budget();
        let caller = budget.caller(peer(1));
        let held = budget.hold(600, Some(&caller)).await.unwrap();
        assert_eq!(budget.in_flight.get(), 600);
        let err = budget.hold(500, Some(&caller)).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "no room for 500 more ids on this connection within 5 s: at most 1000 may be in flight on one connection (max_ids_in_flight_per_connection); read the responses already sent, or use another connection"
        );
        // Another client is not held up by it.
        let other = budget
            .hold(300, Some(&budget.caller(peer(2))))
            .await
            .unwrap();
        drop((held, other));
        assert_eq!(budget.in_flight.get(), 0);
        assert!(budget.hold(1000, Some(&caller)).await.is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_holds_a_fair_share_while_others_wait() {
        let budget = budget();
        // Alone, a client may hold half the budget, and any one request when it holds none.
        let first = budget
            .hold(700, Some(&budget.caller(peer(1))))
            .await
            .unwrap();
        let err = budget
            .hold(100, Some(&budget.caller(peer(1))))
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "no room for 100 more ids within 5 s: at most 1500 may be in flight (max_ids_in_flight), and a origin may hold only its fair share while others wait; try again later"
        );
        // So another client finds room at once, whatever the first one asks meanwhile.
        let second = budget
            .hold(700, Some(&budget.caller(peer(2))))
            .await
            .unwrap();
        // A third waits; room given back goes to it, not to the clients over their share.
        let third = budget.caller(peer(3));
        let greedy = budget.caller(peer(1));
        let (third, greedy, ()) = tokio::join!(
            budget.hold(400, Some(&third)),
            budget.hold(400, Some(&greedy)),
            async {
                tokio::time::sleep(Duration::from_secs(1)).await;
                drop(second);
            }
        );
        assert!(third.is_ok());
        assert!(greedy.is_err());
        drop(first);
    }

    #[tokio::test(start_paused = true)]
    async fn small_requests_pass_large_ones_until_the_oldest_has_waited_its_head_start() {
        let budget = budget();
        let held = budget
            .hold(1000, Some(&budget.caller(peer(1))))
            .await
            .unwrap();
        let large = budget.caller(peer(2));
        let small = budget.caller(peer(3));
        let (large, passed, late, ()) = tokio::join!(
            budget.hold(600, Some(&large)),
            // Room for 500: a small request does not queue behind the large one.
            budget.hold(400, Some(&small)),
            async {
                // Once the large one has waited its head start, a small one takes only
                // the room it does not need.
                tokio::time::sleep(super::super::fair::HEAD_START).await;
                budget.hold(100, Some(&budget.caller(peer(4)))).await
            },
            async {
                tokio::time::sleep(super::super::fair::HEAD_START * 2).await;
                drop(held);
            }
        );
        let (large, passed, late) = (large.unwrap(), passed.unwrap(), late.unwrap());
        assert_eq!(budget.in_flight.get(), 1100);
        drop((large, passed, late));
    }

    #[tokio::test(start_paused = true)]
    async fn a_response_not_taken_by_its_drain_deadline_gives_its_room_back() {
        let budget = budget();
        let drain = Drain::default();
        let (hook, mut dropped) = tokio::sync::oneshot::channel();
        drain.on_abandon(move || {
            let _ = hook.send(());
        });
        // 1 MiB at the default 1 MiB/s, after the 2 s grace: 3 s.
        let permits = budget
            .hold(1000, Some(&budget.caller(peer(1))))
            .await
            .unwrap();
        let room = Room::new(
            permits,
            budget.deadline(1 << 20),
            &budget.deadlines,
            drain.clone(),
            budget.abandoned.clone(),
        );
        tokio::time::sleep(Duration::from_millis(2990)).await;
        assert_eq!(budget.in_flight.get(), 1000);
        assert!(dropped.try_recv().is_err());
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(budget.in_flight.get(), 0);
        assert_eq!(budget.abandoned.get(), 1000);
        assert!(dropped.try_recv().is_ok());
        assert!(room.drain().abandoned());
        // The room is free for others though the response is still held.
        assert!(
            budget
                .hold(1000, Some(&budget.caller(peer(2))))
                .await
                .is_ok()
        );
        drop(room);
        // A response taken in time is not abandoned.
        let permits = budget.hold(10, None).await.unwrap();
        let room = Room::new(
            permits,
            budget.deadline(10),
            &budget.deadlines,
            Drain::default(),
            budget.abandoned.clone(),
        );
        drop(room);
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert_eq!(budget.abandoned.get(), 1000);
    }
}
