//! Fair shares of the server's budget of ids in flight, between clients ([`Origin`]).
//!
//! Room goes to waiting requests by three rules:
//!
//! 1. **Fair shares.** While others hold or wait, a client takes no more than the budget
//!    divided by one more than the clients holding or waiting: a client that arrives finds
//!    room without waiting for anyone to give some back. A client holding nothing may
//!    always take one request, so that the largest batch fits.
//! 2. **Small first.** A small request (at most [`SMALL`] ids) takes room as soon as there
//!    is room for it, ahead of large requests queued before it. Large requests leave a
//!    [`SMALL_RESERVE`] of the budget to small ones: however many clients each hold one
//!    large request (as many addresses, each within rule 1), a small request finds room.
//! 3. **Large in turn.** Large requests take room client by client: first the client that
//!    holds least, then the one that left fewest responses unread past their drain
//!    deadline, then the one served longest ago, then in arrival order. A client that
//!    queued many requests early, or never reads, does not keep one that reads waiting
//!    behind it. Once the first in turn has waited [`HEAD_START`], small requests take only the
//!    room it does not need, so its wait is bounded by what the holders give back (each
//!    within its drain deadline).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;

use super::origin::Origin;

/// The most ids a small request asks for: one tick of the default layout, a batch that is
/// filled on the request's own thread, quickly, and takes little room.
pub const SMALL: u64 = super::budget::INLINE_BATCH;
/// The part of the budget only small requests take: a sixteenth.
pub const SMALL_RESERVE: u64 = 16;
/// How long the oldest large request waits before small ones stop taking the room it
/// needs: long enough that small requests arriving together pass it, short against the
/// queue's 5 s.
pub const HEAD_START: Duration = Duration::from_secs(1);

/// The budget's room and its waiting requests, by client.
#[derive(Debug)]
pub struct Fair {
    capacity: u64,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    used: u64,
    /// Requests in the queues.
    waiting: usize,
    /// Arrival order of waiting requests.
    seq: u64,
    /// Clients holding room or waiting for some; no entry for a client with neither.
    origins: HashMap<Origin, Queues>,
}

#[derive(Debug, Default)]
struct Queues {
    held: u64,
    /// When the client's last large request was granted; `None` if none was while it held
    /// or waited.
    served: Option<Instant>,
    /// Responses of the client's that were not read by their drain deadline.
    abandoned: u64,
    small: VecDeque<Waiter>,
    large: VecDeque<Waiter>,
}

impl Queues {
    /// Whether `n` more ids keep the client within `share`.
    fn within(&self, n: u64, share: u64) -> bool {
        self.held == 0 || self.held + n <= share
    }

    fn idle(&self) -> bool {
        self.held == 0 && self.small.is_empty() && self.large.is_empty()
    }
}

#[derive(Debug)]
struct Waiter {
    seq: u64,
    n: u64,
    since: Instant,
    granted: oneshot::Sender<()>,
}

/// Room taken by one request, given back when dropped.
#[derive(Debug)]
pub struct Grant {
    fair: Arc<Fair>,
    origin: Origin,
    n: u64,
}

impl Grant {
    /// Marks the client as one whose response went unread past its drain deadline.
    pub fn abandoned(&self) {
        let mut state = self.fair.lock();
        if let Some(queues) = state.origins.get_mut(&self.origin) {
            queues.abandoned += 1;
        }
    }
}

impl Drop for Grant {
    fn drop(&mut self) {
        let mut state = self.fair.lock();
        self.fair.give_back(&mut state, self.origin, self.n);
    }
}

/// A request waiting for room: leaves the queue (or gives back what it was granted) if it
/// is dropped before it learns its answer.
struct Waiting<'a> {
    fair: &'a Arc<Fair>,
    origin: Origin,
    seq: u64,
    n: u64,
    granted: Option<oneshot::Receiver<()>>,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let Some(mut granted) = self.granted.take() else {
            return;
        };
        let mut state = self.fair.lock();
        if !self.fair.leave(&mut state, self.origin, self.seq) && granted.try_recv().is_ok() {
            self.fair.give_back(&mut state, self.origin, self.n);
        }
    }
}

impl Fair {
    /// Room for `capacity` ids.
    pub fn new(capacity: u64) -> Arc<Fair> {
        Arc::new(Fair {
            capacity,
            state: Mutex::new(State::default()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is consistent after every statement that can panic; keep serving.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Waits up to `wait` for room for `n` ids for `client`; `None` if none came in time.
    pub async fn take(self: &Arc<Fair>, origin: Origin, n: u64, wait: Duration) -> Option<Grant> {
        let (granted, answer) = {
            let mut state = self.lock();
            // Nobody waits: the rules come down to room and share, without a queue.
            if state.waiting == 0 && self.fits_now(&state, origin, n) {
                let queues = state.origins.entry(origin).or_default();
                if n > SMALL {
                    queues.served = Some(Instant::now());
                }
                queues.held += n;
                state.used += n;
                return Some(self.grant(origin, n));
            }
            drop(state);
            oneshot::channel()
        };
        let seq = {
            let mut state = self.lock();
            state.seq += 1;
            state.waiting += 1;
            let seq = state.seq;
            let queues = state.origins.entry(origin).or_default();
            let waiter = Waiter {
                seq,
                n,
                since: Instant::now(),
                granted,
            };
            if n <= SMALL {
                queues.small.push_back(waiter);
            } else {
                queues.large.push_back(waiter);
            }
            self.dispatch(&mut state);
            seq
        };
        let mut waiting = Waiting {
            fair: self,
            origin,
            seq,
            n,
            granted: Some(answer),
        };
        let answer = waiting.granted.as_mut().expect("set above");
        let got = matches!(tokio::time::timeout(wait, answer).await, Ok(Ok(())));
        if got {
            waiting.granted = None;
            return Some(self.grant(origin, n));
        }
        // Timed out; granted meanwhile or not, Waiting's drop settles it.
        drop(waiting);
        None
    }

    fn grant(self: &Arc<Fair>, origin: Origin, n: u64) -> Grant {
        Grant {
            fair: Arc::clone(self),
            origin,
            n,
        }
    }

    /// Removes a waiter that was not granted; false if it is not in the queue.
    fn leave(&self, state: &mut State, origin: Origin, seq: u64) -> bool {
        let Some(queues) = state.origins.get_mut(&origin) else {
            return false;
        };
        let mut left = false;
        for queue in [&mut queues.small, &mut queues.large] {
            if let Some(at) = queue.iter().position(|w| w.seq == seq) {
                queue.remove(at);
                left = true;
            }
        }
        if left {
            state.waiting -= 1;
        }
        if queues.idle() {
            state.origins.remove(&origin);
        }
        // One fewer client may mean larger shares for the others.
        self.dispatch(state);
        left
    }

    fn give_back(&self, state: &mut State, origin: Origin, n: u64) {
        state.used -= n;
        if let Some(queues) = state.origins.get_mut(&origin) {
            queues.held -= n;
            if queues.idle() {
                state.origins.remove(&origin);
            }
        }
        self.dispatch(state);
    }

    /// Whether `n` ids for `client` fit the room and its share, with nobody waiting.
    fn fits_now(&self, state: &State, origin: Origin, n: u64) -> bool {
        let holding = state.origins.get(&origin);
        let others = state.origins.len() - usize::from(holding.is_some());
        // Counting the client itself, and the one more that keeps room for a newcomer.
        let share = self.capacity / (others as u64 + 2);
        let held = holding.map_or(0, |q| q.held);
        n <= self.room(state, n) && (held == 0 || held + n <= share)
    }

    /// The room a request of `n` ids may take: all of it for a small request; for a large
    /// one, all but the small requests' reserve, unless nothing is held (so the largest
    /// batch always fits an idle budget).
    fn room(&self, state: &State, n: u64) -> u64 {
        let free = self.capacity - state.used;
        if n <= SMALL || state.used == 0 {
            free
        } else {
            free.saturating_sub(self.capacity / SMALL_RESERVE)
        }
    }

    /// Grants what the rules allow now.
    fn dispatch(&self, state: &mut State) {
        let now = Instant::now();
        loop {
            let share = self.capacity / (state.origins.len() as u64 + 1);
            let room = self.capacity - state.used;
            // The first large request in turn, of a client within its share: the client
            // holding least, then served longest ago (never, first), then the oldest.
            let head = state
                .origins
                .iter()
                .filter_map(|(origin, q)| {
                    let w = q.large.front()?;
                    q.within(w.n, share).then_some((
                        (q.held, q.abandoned, q.served, w.seq),
                        *origin,
                        w.n,
                        w.since,
                    ))
                })
                .min_by_key(|head| head.0);
            let held_back = match head {
                Some((_, _, n, since)) if now.duration_since(since) >= HEAD_START => n,
                _ => 0,
            };
            let small = state
                .origins
                .iter()
                .filter_map(|(origin, q)| {
                    let w = q.small.front()?;
                    (q.within(w.n, share) && w.n + held_back <= room).then_some((w.seq, *origin))
                })
                .min_by_key(|small| small.0);
            let chosen = match (small, head) {
                (Some((_, origin)), _) => (origin, true),
                (None, Some((_, origin, n, _))) if n <= self.room(state, n) => (origin, false),
                _ => return,
            };
            self.hand_over(state, chosen.0, chosen.1);
        }
    }

    /// Gives the first waiter of `client`'s small or large queue its room.
    fn hand_over(&self, state: &mut State, origin: Origin, small: bool) {
        let queues = state.origins.get_mut(&origin).expect("chosen from the map");
        let queue = if small {
            &mut queues.small
        } else {
            &mut queues.large
        };
        let waiter = queue.pop_front().expect("chosen for its first waiter");
        state.waiting -= 1;
        // A waiter whose request is gone is not counted.
        if waiter.granted.send(()).is_ok() {
            if !small {
                queues.served = Some(Instant::now());
            }
            queues.held += waiter.n;
            state.used += waiter.n;
        } else if queues.idle() {
            state.origins.remove(&origin);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(last: u8) -> Origin {
        Origin::of(std::net::IpAddr::from([127, 0, 0, last]))
    }

    fn used(fair: &Fair) -> u64 {
        fair.lock().used
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_that_stops_waiting_leaves_no_room_taken() {
        let fair = Fair::new(1000);
        let held = fair
            .take(origin(1), 500, Duration::from_secs(5))
            .await
            .unwrap();
        // A waiter whose request is dropped (its client went away) leaves the queue.
        let waiting = tokio::spawn({
            let fair = Arc::clone(&fair);
            async move { fair.take(origin(1), 400, Duration::from_secs(5)).await }
        });
        tokio::task::yield_now().await;
        waiting.abort();
        assert!(waiting.await.is_err());
        // One that times out leaves it too, and nothing it asked for stays counted.
        assert!(
            fair.take(origin(1), 400, Duration::from_secs(5))
                .await
                .is_none()
        );
        drop(held);
        assert_eq!(used(&fair), 0);
        assert!(fair.lock().origins.is_empty());
        // The whole budget is there again: one request of a client holding nothing fits.
        let all = fair.take(origin(2), 1000, Duration::ZERO).await;
        assert!(all.is_some());
        assert_eq!(used(&fair), 1000);
    }

    #[tokio::test(start_paused = true)]
    async fn shares_shrink_as_clients_arrive_and_grow_as_they_leave() {
        let fair = Fair::new(1200);
        let wait = Duration::from_secs(5);
        // Alone, half: 600.
        let a1 = fair.take(origin(1), 300, wait).await.unwrap();
        let a2 = fair.take(origin(1), 300, wait).await.unwrap();
        assert!(fair.take(origin(1), 1, Duration::ZERO).await.is_none());
        // With a second client, a third each: the first may take no more.
        let b = fair.take(origin(2), 400, wait).await.unwrap();
        drop(a2);
        assert!(fair.take(origin(1), 200, Duration::ZERO).await.is_none());
        // The second leaves: the first's share is half again.
        drop(b);
        assert!(fair.take(origin(1), 300, Duration::ZERO).await.is_some());
        drop(a1);
    }

    /// As many clients as there is room for each hold one large request (each within the
    /// rule that lets a client holding nothing take one): a small request still finds room
    /// at once, and a newcomer's large request goes before the next of a client served
    /// already, though that one queued first.
    #[tokio::test(start_paused = true)]
    async fn a_crowd_of_large_holders_leaves_room_for_small_requests_and_newcomers() {
        const LARGE: u64 = 65_536;
        let fair = Fair::new(16 * LARGE);
        let wait = Duration::from_secs(5);
        let mut held = Vec::new();
        for client in 1..=15 {
            held.push(fair.take(origin(client), LARGE, wait).await.unwrap());
        }
        // The sixteenth sixteenth is the small requests' own.
        assert!(fair.take(origin(16), LARGE, Duration::ZERO).await.is_none());
        let small = fair.take(origin(100), 100, Duration::ZERO).await;
        assert!(small.is_some(), "a small request found no room");
        drop(small);
        // Client 1 asks again, then a newcomer does; client 1's first gives its room back.
        let again = tokio::spawn({
            let fair = Arc::clone(&fair);
            async move { fair.take(origin(1), LARGE, wait).await }
        });
        tokio::task::yield_now().await;
        let newcomer = tokio::spawn({
            let fair = Arc::clone(&fair);
            async move { fair.take(origin(101), LARGE, wait).await }
        });
        tokio::task::yield_now().await;
        held.remove(0);
        tokio::task::yield_now().await;
        let newcomer = newcomer.await.unwrap();
        assert!(
            newcomer.is_some(),
            "the newcomer waited behind a client served already"
        );
        assert!(
            !again.is_finished(),
            "client 1 was served before the newcomer"
        );
        drop(newcomer);
        assert!(again.await.unwrap().is_some());
    }
}
