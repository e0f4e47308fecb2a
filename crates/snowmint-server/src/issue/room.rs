//! Room held in the budget for ids in flight, and the deadline by which their response
//! must drain.
//!
//! A response's ids hold room only while the reader takes them at a rate that fits the
//! response's size: its [`Room`] is given back when the transport has taken the last
//! byte, or at its drain deadline (`drain_grace_ms` plus its bytes at
//! `min_drain_bytes_per_sec`), whichever comes first. At the deadline the response is
//! abandoned through its [`Drain`]: the transport drops what is left of it, so an unread
//! response holds neither room nor memory, whether its connection stays open or not.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::OwnedSemaphorePermit;
use tokio::task::AbortHandle;
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
    timer: Mutex<Option<AbortHandle>>,
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
        if self.release() {
            self.abandoned.inc_by(u64::from(self.count));
            self.drain.abandon();
        }
    }
}

impl Drop for Taken {
    fn drop(&mut self) {
        self.release();
        if let Some(timer) = self.timer.lock().unwrap_or_else(|e| e.into_inner()).take() {
            timer.abort();
        }
    }
}

impl Room {
    /// The room `permits` hold, until dropped or until `deadline`, when `drain` abandons
    /// the response and `abandoned` counts its ids.
    pub(super) fn new(
        permits: Permits,
        deadline: Instant,
        drain: Drain,
        abandoned: Counter,
    ) -> Room {
        let taken = Arc::new(Taken {
            count: permits.count,
            permits: Mutex::new(Some(permits)),
            abandoned,
            drain,
            timer: Mutex::new(None),
        });
        let weak: Weak<Taken> = Arc::downgrade(&taken);
        let timer = tokio::spawn(async move {
            tokio::time::sleep_until(deadline).await;
            if let Some(taken) = weak.upgrade() {
                taken.expire();
            }
        });
        *taken.timer.lock().unwrap_or_else(|e| e.into_inner()) = Some(timer.abort_handle());
        Room(taken)
    }

    /// The response it belongs to.
    #[must_use]
    pub fn drain(&self) -> &Drain {
        &self.0.drain
    }
}
