//! One ZooKeeper session per lease: opened by the acquisition, used by every renewal and
//! the release, and closed when the lease ends, or when its holder stops calling.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use tokio::time::Instant;
use zookeeper_client as zk;

use crate::registry::Lease;

/// The sessions of the leases a registry holds, by session id (the lease's token).
pub(super) type Sessions = Arc<Mutex<HashMap<i64, Arc<Session>>>>;

/// The session of one lease, and what the holder knows of the worker's mark.
pub(super) struct Session {
    pub(super) client: zk::Client,
    /// The session timeout the ensemble granted: the lease's TTL.
    pub(super) granted: Duration,
    /// How long the holder may go without calling before the session is closed: the TTL
    /// it asked for, or the one granted if longer.
    grace: Duration,
    /// The mark node's value and version as this holder last wrote or read them; held
    /// for the whole of a renewal or release, so the holder's own calls take turns.
    pub(super) mark: tokio::sync::Mutex<Mark>,
    activity: Mutex<Activity>,
}

/// The mark node as the holder knows it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Mark {
    /// `None` while the node is empty (no id was ever issued with the worker).
    pub(super) value: Option<u64>,
    /// The node's version: a conditional set on it fails if anyone else wrote it since.
    pub(super) version: i32,
}

impl Mark {
    /// An empty mark node, just made.
    pub(super) const NONE: Mark = Mark {
        value: None,
        version: 0,
    };
}

/// Whether the holder still calls.
struct Activity {
    /// When the last call began or ended.
    last: Instant,
    /// Calls under way.
    calls: u32,
}

impl Session {
    pub(super) fn new(client: zk::Client, asked: Duration, mark: Mark) -> Session {
        let granted = client.session_timeout();
        Session {
            client,
            granted,
            grace: asked.max(granted),
            mark: tokio::sync::Mutex::new(mark),
            activity: Mutex::new(Activity {
                last: Instant::now(),
                calls: 0,
            }),
        }
    }

    /// The session's id, which is the lease's token.
    pub(super) fn id(&self) -> i64 {
        self.client.session_id().0
    }

    /// Counts a call under way until the guard drops.
    pub(super) fn call(self: &Arc<Self>) -> Call {
        let mut activity = self.activity();
        activity.calls += 1;
        activity.last = Instant::now();
        Call(Arc::clone(self))
    }

    fn activity(&self) -> std::sync::MutexGuard<'_, Activity> {
        self.activity.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// When the session is to be closed if nothing calls before, and whether it is idle
    /// now; a call under way puts it a grace ahead, to be looked at again.
    fn idle_deadline(&self) -> (Instant, bool) {
        let activity = self.activity();
        if activity.calls == 0 {
            (activity.last + self.grace, true)
        } else {
            (Instant::now() + self.grace, false)
        }
    }
}

/// A call under way on a session.
pub(super) struct Call(Arc<Session>);

impl std::ops::Deref for Call {
    type Target = Session;

    fn deref(&self) -> &Session {
        &self.0
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        let mut activity = self.0.activity();
        activity.calls -= 1;
        activity.last = Instant::now();
    }
}

/// Keeps `session` for its lease, and closes it once its holder has made no call for its
/// grace: a holder that stopped renewing (a keeper dropped, as a crashed process's is)
/// must lose its worker, whereas the client alone would keep the session alive forever.
/// The grace is at least the granted TTL, which is past any fence the holder was given.
pub(super) fn keep(sessions: &Sessions, session: Session) -> Arc<Session> {
    let session = Arc::new(session);
    let id = session.id();
    sessions
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(id, Arc::clone(&session));
    tokio::spawn(watch(Arc::downgrade(sessions), Arc::downgrade(&session)));
    session
}

/// The session of `lease`, if this registry still holds it.
pub(super) fn find(sessions: &Sessions, lease: &Lease) -> Option<Arc<Session>> {
    sessions
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&lease.token)
        .cloned()
}

/// Forgets the session of `id`: it closes once its last call ends, which ends its
/// ephemeral nodes at once (its client then tells the ensemble), or, if the ensemble
/// cannot be reached, one session timeout after the last heartbeat it saw.
pub(super) fn close(sessions: &Sessions, id: i64) {
    let closed = sessions
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(&id);
    if closed.is_some() {
        tracing::debug!(
            session = format_args!("{id:#x}"),
            "closing a zookeeper session"
        );
    }
}

/// Waits until the session has been idle for its grace, then closes it; ends when the
/// session or the registry is gone.
async fn watch(sessions: Weak<Mutex<HashMap<i64, Arc<Session>>>>, session: Weak<Session>) {
    loop {
        let (id, (deadline, idle)) = match session.upgrade() {
            Some(session) => (session.id(), session.idle_deadline()),
            None => return,
        };
        if idle && deadline <= Instant::now() {
            if let Some(sessions) = sessions.upgrade() {
                tracing::warn!(
                    session = format_args!("{id:#x}"),
                    "closing the zookeeper session of a lease nobody renews"
                );
                close(&sessions, id);
            }
            return;
        }
        tokio::time::sleep_until(deadline).await;
    }
}
