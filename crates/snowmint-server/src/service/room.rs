//! Room held in the budget for ids in flight, and the deadline by which their response
//! must drain.
//!
//! A response's ids hold room only while the reader takes them at a rate that fits the
//! response's size: its [`Room`] is given back when the transport has taken the last
//! byte, or at its drain deadline (`drain_grace_ms` plus its bytes at
//! `min_drain_bytes_per_sec`), whichever comes first. At the deadline the response is
//! abandoned through its [`Drain`]: the transport drops what is left of it, so an unread
//! response holds neither room nor memory, whether its connection stays open or not.

use std::cmp::{Ordering as ByTime, Reverse};
use std::collections::BinaryHeap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::{Notify, OwnedSemaphorePermit};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::fair::Grant;

/// What a response does when its drain deadline passes: set by the transport that carries
/// it, which drops what is left of the response. One per response, shared by the rooms of
/// its ids (a gRPC stream's batches).
#[derive(Clone, Default)]
pub struct Drain(Arc<DrainState>);

#[derive(Default)]
struct DrainState {
    abandoned: AtomicBool,
    hook: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl fmt::Debug for Drain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Drain")
            .field("abandoned", &self.abandoned())
            .finish_non_exhaustive()
    }
}

impl Drain {
    /// Whether the response has been abandoned.
    #[must_use]
    pub fn abandoned(&self) -> bool {
        self.0.abandoned.load(Ordering::SeqCst)
    }

    /// Runs `hook` when the response is abandoned (at once, if it already is).
    pub fn on_abandon(&self, hook: impl FnOnce() + Send + 'static) {
        let mut slot = self.0.hook.lock().unwrap_or_else(|e| e.into_inner());
        if self.abandoned() {
            drop(slot);
            hook();
        } else {
            *slot = Some(Box::new(hook));
        }
    }

    fn abandon(&self) {
        let hook = {
            let mut slot = self.0.hook.lock().unwrap_or_else(|e| e.into_inner());
            self.0.abandoned.store(true, Ordering::SeqCst);
            slot.take()
        };
        if let Some(hook) = hook {
            hook();
        }
    }
}

/// Room held for the ids of one response (or one message of a stream), given back when
/// dropped or when its drain deadline passes.
#[derive(Debug, Clone)]
pub struct Room(Arc<Taken>);

/// The permits behind a [`Room`], counted in `ids_in_flight` until dropped (the permits
/// are held for what their own drops give back).
#[derive(Debug)]
pub(super) struct Permits {
    pub(super) count: u32,
    pub(super) _connection: Option<OwnedSemaphorePermit>,
    pub(super) _server: Grant,
    pub(super) in_flight: Gauge,
}

impl Drop for Permits {
    fn drop(&mut self) {
        self.in_flight.dec_by(i64::from(self.count));
    }
}

struct Taken {
    count: u32,
    permits: Mutex<Option<Permits>>,
    abandoned: Counter,
    drain: Drain,
}

impl fmt::Debug for Taken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Taken")
            .field("count", &self.count)
            .finish_non_exhaustive()
    }
}

impl Taken {
    /// Gives the room back, if it has not been; true if it had not.
    fn release(&self) -> bool {
        let permits = self
            .permits
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        permits.is_some()
    }

    /// The drain deadline passed with the response still out.
    fn expire(&self) {
        let permits = self
            .permits
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(permits) = permits {
            // Its client goes after those that read what they asked for.
            permits._server.abandoned();
            drop(permits);
            self.abandoned.inc_by(u64::from(self.count));
            self.drain.abandon();
        }
    }
}

impl Drop for Taken {
    fn drop(&mut self) {
        self.release();
    }
}

/// The drain deadlines of a budget's rooms, on one timer: a task of its own, not one per
/// response, so a batch costs a push on a heap. A room given back early stays on the heap,
/// as a reference that no longer upgrades, until its deadline.
#[derive(Debug, Default)]
pub(super) struct Deadlines {
    due: Mutex<Due>,
    sooner: Notify,
}

#[derive(Debug, Default)]
struct Due {
    heap: BinaryHeap<Reverse<Deadline>>,
    /// The task that expires rooms, started by the first one in the runtime that serves.
    task: Option<JoinHandle<()>>,
}

/// A room's deadline, ordered by time alone.
#[derive(Debug)]
struct Deadline(Instant, Weak<Taken>);

impl PartialEq for Deadline {
    fn eq(&self, other: &Deadline) -> bool {
        self.0 == other.0
    }
}

impl Eq for Deadline {}

impl PartialOrd for Deadline {
    fn partial_cmp(&self, other: &Deadline) -> Option<ByTime> {
        Some(self.cmp(other))
    }
}

impl Ord for Deadline {
    fn cmp(&self, other: &Deadline) -> ByTime {
        self.0.cmp(&other.0)
    }
}

impl Deadlines {
    fn add(self: &Arc<Deadlines>, at: Instant, room: Weak<Taken>) {
        let mut due = self.due.lock().unwrap_or_else(|e| e.into_inner());
        let sooner = due.heap.peek().is_none_or(|Reverse(first)| at < first.0);
        due.heap.push(Reverse(Deadline(at, room)));
        // A runtime that ended (a test's) took its task with it.
        if due.task.as_ref().is_none_or(JoinHandle::is_finished) {
            due.task = Some(tokio::spawn(Arc::clone(self).expire_when_due()));
        } else if sooner {
            self.sooner.notify_one();
        }
    }

    async fn expire_when_due(self: Arc<Deadlines>) {
        loop {
            let (passed, next) = {
                let mut due = self.due.lock().unwrap_or_else(|e| e.into_inner());
                let now = Instant::now();
                let mut passed = Vec::new();
                while due.heap.peek().is_some_and(|Reverse(first)| first.0 <= now) {
                    if let Some(Reverse(Deadline(_, room))) = due.heap.pop() {
                        passed.push(room);
                    }
                }
                (passed, due.heap.peek().map(|Reverse(first)| first.0))
            };
            // Outside the lock: abandoning runs the transport's hook.
            for room in passed {
                if let Some(taken) = room.upgrade() {
                    taken.expire();
                }
            }
            // A deadline added meanwhile leaves a permit in `sooner`: none is missed.
            match next {
                Some(at) => tokio::select! {
                    () = tokio::time::sleep_until(at) => {}
                    () = self.sooner.notified() => {}
                },
                None => self.sooner.notified().await,
            }
        }
    }
}

impl Room {
    /// The room `permits` hold, until dropped or until `deadline` on `deadlines`, when
    /// `drain` abandons the response and `abandoned` counts its ids.
    pub(super) fn new(
        permits: Permits,
        deadline: Instant,
        deadlines: &Arc<Deadlines>,
        drain: Drain,
        abandoned: Counter,
    ) -> Room {
        let taken = Arc::new(Taken {
            count: permits.count,
            permits: Mutex::new(Some(permits)),
            abandoned,
            drain,
        });
        deadlines.add(deadline, Arc::downgrade(&taken));
        Room(taken)
    }

    /// The response it belongs to.
    #[must_use]
    pub fn drain(&self) -> &Drain {
        &self.0.drain
    }
}
