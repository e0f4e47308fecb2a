//! One connection's progress: whether it is reading a request head, serving requests or
//! sending responses, when it last moved, and what to do when it has not moved for too long.
//!
//! Progress is a response begun, a piece of a response body taken by the transport, or a
//! response finished. Reads alone are not progress: a client trickling a head or a request
//! body, pinging forever, or opening requests and cancelling them before their answers,
//! does not keep a connection. A request waiting for a body its client does not send is
//! the client's wait, not the server's: once it has waited out the idle timeout from its
//! arrival, it keeps the connection no longer than the idle timeout from its last progress.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, Ordering::SeqCst};
use std::task::{Context, Poll};
use std::time::Duration;

use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use hyper::{Request, Response};
use tokio::sync::Notify;
use tokio::time::Instant;

use super::metered::Metered;
use crate::Limits;
use crate::service::{Caller, Drain, Room};

/// What a connection's watchdog should do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchdogCall {
    /// Nothing yet.
    Open,
    /// A request head took longer than `header_read_timeout_ms`: close.
    HeadTimeout,
    /// Nothing in flight and no progress for `idle_timeout_ms`: close gracefully.
    Idle,
    /// Requests in flight that all wait for bodies their clients have not sent, one of
    /// them since `idle_timeout_ms` after its arrival, and no progress for
    /// `idle_timeout_ms`: close.
    BodyRead,
    /// Responses in flight that the reader has not taken from for `idle_timeout_ms`: close.
    Stalled,
}

/// The shared state of one connection, updated by its reader, its requests and their bodies.
#[derive(Debug)]
pub struct Conn {
    start: Instant,
    header_read_timeout: Duration,
    idle_timeout: Duration,
    /// Requests handed to the router whose response has not come back yet.
    pending: AtomicU32,
    /// Of those, the ones waiting for a piece of their body the client has not sent
    /// ([`Awaited`]).
    awaiting_body: AtomicU32,
    /// Of those, the ones that have waited past the idle timeout from their arrival.
    overdue_bodies: AtomicU32,
    /// Responses whose body the transport has not finished taking.
    sending: AtomicU32,
    /// When it last made progress, in ms since `start`.
    progress_ms: AtomicU64,
    /// When the head being read began, in ms since `start`, plus one; 0 when none is.
    head_since: AtomicU64,
    /// The deadline the watchdog's timer is set for, in ms since `start`; `u64::MAX` when
    /// none is.
    armed_ms: AtomicU64,
    /// Woken when a head begins or ends and that brings the deadline before the armed one.
    /// Only then: a keep-alive connection moves its deadline with every request, and a
    /// timer that fires early is only looked at again, so the watchdog is not woken, nor
    /// its timer reset, once a request.
    pub changed: Notify,
}

impl Conn {
    /// A connection accepted now, waiting for its first request head.
    pub fn new(limits: &Limits) -> Conn {
        Conn {
            start: Instant::now(),
            header_read_timeout: limits.header_read_timeout,
            idle_timeout: limits.idle_timeout,
            pending: AtomicU32::new(0),
            awaiting_body: AtomicU32::new(0),
            overdue_bodies: AtomicU32::new(0),
            sending: AtomicU32::new(0),
            progress_ms: AtomicU64::new(0),
            head_since: AtomicU64::new(1),
            armed_ms: AtomicU64::new(u64::MAX),
            changed: Notify::new(),
        }
    }

    fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    fn progress(&self) {
        self.progress_ms.fetch_max(self.now_ms(), SeqCst);
    }

    /// Whether no request is being served or answered: bytes read now begin a head.
    pub fn between_requests(&self) -> bool {
        self.pending.load(SeqCst) == 0 && self.sending.load(SeqCst) == 0
    }

    /// Whether a request is in the router, its response not yet begun.
    pub fn serving(&self) -> bool {
        self.pending.load(SeqCst) > 0
    }

    /// HTTP/1 bytes (or a Thrift frame's) were read: between requests they begin a head,
    /// and its clock starts.
    pub fn head_bytes(&self) {
        if self.between_requests() && self.head_since.load(SeqCst) == 0 {
            self.head_since.store(self.now_ms() + 1, SeqCst);
            self.wake_if_sooner();
        }
    }

    /// The connection speaks HTTP/2: from its preface on, only progress counts.
    pub fn no_head(&self) {
        self.head_done();
    }

    /// No head is being read any more; the idle deadline, which may come sooner, applies.
    fn head_done(&self) {
        if self.head_since.swap(0, SeqCst) != 0 {
            self.wake_if_sooner();
        }
    }

    /// Wakes the watchdog if the deadline now comes before the one its timer is set for.
    fn wake_if_sooner(&self) {
        if self.deadline_ms() < self.armed_ms.load(SeqCst) {
            self.changed.notify_one();
        }
    }

    /// The watchdog set its timer for `deadline`.
    pub fn armed(&self, deadline: Instant) {
        let ms = deadline.saturating_duration_since(self.start).as_millis();
        self.armed_ms
            .store(u64::try_from(ms).unwrap_or(u64::MAX), SeqCst);
    }

    /// A request reached the router (a Thrift call, its processor).
    /// Its arrival is not progress: a request cancelled before its answer leaves none.
    pub fn request(self: &Arc<Conn>) -> Pending {
        self.pending.fetch_add(1, SeqCst);
        self.head_done();
        Pending {
            conn: Arc::clone(self),
            body: Arc::new(AtomicU8::new(READING)),
            arrived: Instant::now(),
        }
    }

    /// Whether a request in the router is the server's own work, not a wait for its body.
    fn working(&self) -> bool {
        self.pending.load(SeqCst) > self.awaiting_body.load(SeqCst)
    }

    /// When the watchdog should look again.
    pub fn deadline(&self) -> Instant {
        self.start + Duration::from_millis(self.deadline_ms())
    }

    /// [`Conn::deadline`], in ms since `start`.
    fn deadline_ms(&self) -> u64 {
        let now = self.now_ms();
        let head = self.head_since.load(SeqCst);
        let at = if head != 0 {
            head - 1 + duration_ms(self.header_read_timeout)
        } else if self.working()
            || (self.pending.load(SeqCst) > 0 && self.overdue_bodies.load(SeqCst) == 0)
        {
            // The server's work, or bodies not yet overdue: their own timers wake it.
            now + duration_ms(self.idle_timeout)
        } else {
            self.progress_ms.load(SeqCst) + duration_ms(self.idle_timeout)
        };
        at.max(now + 1)
    }

    /// What to do now.
    pub fn verdict(&self) -> WatchdogCall {
        let now = self.now_ms();
        let head = self.head_since.load(SeqCst);
        if head != 0 {
            // A head on its way is governed by its own timeout alone.
            return if now >= head - 1 + duration_ms(self.header_read_timeout) {
                WatchdogCall::HeadTimeout
            } else {
                WatchdogCall::Open
            };
        }
        // The server's own waits (the budget, the clock) are bounded elsewhere.
        if self.working() || now < self.progress_ms.load(SeqCst) + duration_ms(self.idle_timeout) {
            WatchdogCall::Open
        } else if self.pending.load(SeqCst) > 0 {
            if self.overdue_bodies.load(SeqCst) > 0 {
                WatchdogCall::BodyRead
            } else {
                WatchdogCall::Open
            }
        } else if self.sending.load(SeqCst) > 0 {
            WatchdogCall::Stalled
        } else {
            WatchdogCall::Idle
        }
    }
}

/// A timeout in ms, kept far enough below `u64::MAX` that adding an instant cannot overflow.
fn duration_ms(d: Duration) -> u64 {
    snowmint::whole_ms(d).min(u64::MAX / 2)
}

/// A request in the router; dropped when its response comes back or it is cancelled.
pub struct Pending {
    conn: Arc<Conn>,
    /// Where its body is: [`READING`], [`WAITING`], [`OVERDUE`] or [`ANSWERED`].
    body: Arc<AtomicU8>,
    arrived: Instant,
}

/// The router may read the request's body, or has it all.
const READING: u8 = 0;
/// The router waits for a piece of the body the client has not sent: the request is
/// counted in `awaiting_body`.
const WAITING: u8 = 1;
/// The request is no longer in the router: its body is no longer the connection's concern.
const ANSWERED: u8 = 2;
/// Waiting, past the idle timeout from the request's arrival: counted in `overdue_bodies`
/// too.
const OVERDUE: u8 = 3;
/// The body could not be read: the client reset its stream or went away. The answer to
/// such a request is no progress: a client that opens requests and resets them does not
/// earn the connection's keep with the refusals nobody reads. Final, as `ANSWERED`.
const BROKEN: u8 = 4;

/// How a body's state counts in `awaiting_body` and `overdue_bodies`.
fn counted(state: u8) -> (u32, u32) {
    match state {
        WAITING => (1, 0),
        OVERDUE => (1, 1),
        _ => (0, 0),
    }
}

impl Pending {
    /// Its response is being sent: until the returned guard is dropped.
    pub fn into_sending(self) -> Sending {
        // Counted as sending before it stops pending, so it is never between requests.
        self.conn.sending.fetch_add(1, SeqCst);
        let progress = self.body.load(SeqCst) != BROKEN;
        if progress {
            self.conn.progress();
        }
        Sending {
            conn: Arc::clone(&self.conn),
            progress,
        }
    }

    /// The request's `body`, telling the connection when the router waits for it.
    pub fn body(&self, body: Incoming) -> Awaited {
        Awaited {
            inner: body,
            wait: self.body_wait(),
        }
    }

    fn body_wait(&self) -> BodyWait {
        BodyWait {
            conn: Arc::clone(&self.conn),
            state: Arc::clone(&self.body),
            due: self.arrived + self.conn.idle_timeout,
            timer: None,
            overdue: false,
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        // A body still read after its request is answered (a stream's) waits on nothing
        // of the connection's.
        let (awaiting, overdue) = counted(self.body.swap(ANSWERED, SeqCst));
        self.conn.overdue_bodies.fetch_sub(overdue, SeqCst);
        self.conn.awaiting_body.fetch_sub(awaiting, SeqCst);
        self.conn.pending.fetch_sub(1, SeqCst);
    }
}

/// A request's body as the connection's watchdog sees it: while the router waits for a
/// piece the client has not sent, the request counts as waiting for its client. Pieces
/// read are not progress, so a body trickled in keeps the connection no longer than one
/// never sent.
pub struct Awaited {
    inner: Incoming,
    wait: BodyWait,
}

/// Whether the router waits for a request's body, and how long it has.
struct BodyWait {
    conn: Arc<Conn>,
    /// Its request's [`Pending::body`] state; only its request's drop changes it too,
    /// to [`ANSWERED`], which is final.
    state: Arc<AtomicU8>,
    /// The request's arrival plus the idle timeout.
    due: Instant,
    /// Set for `due` while the body is waited for, until it passes.
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
    /// Whether `due` has passed.
    overdue: bool,
}

impl BodyWait {
    /// The body was polled: `pending` if the router now waits for a piece of it, `broken`
    /// if it failed.
    fn polled(&mut self, pending: bool, broken: bool, cx: &mut Context<'_>) {
        if broken {
            self.timer = None;
            self.move_to(BROKEN);
            return;
        }
        if !pending {
            self.timer = None;
            self.move_to(READING);
            return;
        }
        if !self.overdue {
            let timer = self
                .timer
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(self.due)));
            if timer.as_mut().poll(cx).is_ready() {
                self.overdue = true;
                self.timer = None;
            }
        }
        self.move_to(if self.overdue { OVERDUE } else { WAITING });
    }

    /// Moves to `to` unless the request was answered, keeping the counts: raised before the
    /// state says so and lowered after, so they never go below zero, where they would wrap
    /// and make every request on the connection look like a wait for its client.
    fn move_to(&self, to: u8) {
        let from = self.state.load(SeqCst);
        if from == to || from == ANSWERED || from == BROKEN {
            return;
        }
        let ((was_awaiting, was_overdue), (awaiting, overdue)) = (counted(from), counted(to));
        let (conn, up) = (&self.conn, |n: u32, m: u32| n.saturating_sub(m));
        conn.awaiting_body
            .fetch_add(up(awaiting, was_awaiting), SeqCst);
        conn.overdue_bodies
            .fetch_add(up(overdue, was_overdue), SeqCst);
        if self
            .state
            .compare_exchange(from, to, SeqCst, SeqCst)
            .is_ok()
        {
            conn.awaiting_body
                .fetch_sub(up(was_awaiting, awaiting), SeqCst);
            conn.overdue_bodies
                .fetch_sub(up(was_overdue, overdue), SeqCst);
            if to == OVERDUE {
                conn.wake_if_sooner();
            }
        } else {
            // Answered meanwhile: its drop took off what the state counted before.
            conn.awaiting_body
                .fetch_sub(up(awaiting, was_awaiting), SeqCst);
            conn.overdue_bodies
                .fetch_sub(up(overdue, was_overdue), SeqCst);
        }
    }
}

impl Body for Awaited {
    type Data = bytes::Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<bytes::Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        let broken = matches!(polled, Poll::Ready(Some(Err(_))));
        self.wait.polled(polled.is_pending(), broken, cx);
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for BodyWait {
    fn drop(&mut self) {
        self.move_to(READING);
    }
}

/// A response body the transport is taking.
pub struct Sending {
    conn: Arc<Conn>,
    /// Whether its pieces are progress: not for the answer to a request whose body broke.
    progress: bool,
}

impl Sending {
    /// A piece of its body was taken.
    pub fn progress(&self) {
        if self.progress {
            self.conn.progress();
        }
    }
}

impl Drop for Sending {
    fn drop(&mut self) {
        self.conn.sending.fetch_sub(1, SeqCst);
        self.progress();
    }
}

/// What answers a port's requests.
#[derive(Debug, Clone)]
pub enum HyperService {
    /// The HTTP API, with its fast path.
    Http(crate::HttpApi),
    /// The gRPC API, with its fast path.
    Grpc(crate::grpc::GrpcApi),
}

/// The router as one connection sees it: every request carries its [`Caller`] (the
/// connection's share of the id budget and the client it counts against), and every
/// response body reports its progress.
#[derive(Debug, Clone)]
pub struct PerConnection {
    pub service: HyperService,
    pub conn: Arc<Conn>,
    pub caller: Caller,
    /// The largest piece of a body handed to the transport at once.
    pub piece: usize,
}

impl hyper::service::Service<Request<Incoming>> for PerConnection {
    type Response = Response<Metered>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Metered>, Infallible>> + Send>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let pending = self.conn.request();
        let request = request.map(|body| pending.body(body));
        let service = self.service.clone();
        let caller = self.caller.for_request(request.headers());
        let piece = self.piece;
        Box::pin(async move {
            let mut response = match service {
                HyperService::Http(api) => api.answer(request, Some(caller)).await,
                HyperService::Grpc(api) => api.answer(request, Some(caller)).await,
            };
            let room = response.extensions_mut().remove::<Room>();
            let drain = match &room {
                Some(room) => Some(room.drain().clone()),
                None => response.extensions_mut().remove::<Drain>(),
            };
            let sending = pending.into_sending();
            Ok(response.map(|inner| Metered::new(inner, piece, sending, room, drain.as_ref())))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            header_read_timeout: Duration::from_secs(1),
            idle_timeout: Duration::from_secs(5),
            ..Limits::defaults(100)
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_head_must_come_within_its_timeout_and_an_idle_connection_closes() {
        let conn = Arc::new(Conn::new(&limits()));
        assert_eq!(conn.deadline(), conn.start + Duration::from_secs(1));
        tokio::time::advance(Duration::from_millis(1000)).await;
        assert_eq!(conn.verdict(), WatchdogCall::HeadTimeout);
        // A request arrives: no head is being read; it is idle 5 s after its answer.
        let pending = conn.request();
        assert_eq!(conn.verdict(), WatchdogCall::Open);
        let sending = pending.into_sending();
        drop(sending);
        assert!(conn.between_requests());
        tokio::time::advance(Duration::from_millis(4999)).await;
        assert_eq!(conn.verdict(), WatchdogCall::Open);
        // A byte of the next head starts its clock again.
        conn.head_bytes();
        assert_eq!(conn.deadline(), conn.start + Duration::from_millis(6999));
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(conn.verdict(), WatchdogCall::Open);
        conn.no_head();
        assert_eq!(conn.verdict(), WatchdogCall::Idle);
    }

    /// Whether the watchdog has been woken since it last looked (taking the wake).
    fn woken(conn: &Conn) -> bool {
        let notified = conn.changed.notified();
        tokio::pin!(notified);
        notified.enable()
    }

    #[tokio::test(start_paused = true)]
    async fn the_watchdog_is_woken_only_when_the_deadline_comes_sooner() {
        let conn = Arc::new(Conn::new(&limits()));
        drop(conn.request().into_sending());
        woken(&conn);
        // Between requests, its timer is set for the idle deadline, 5 s on.
        conn.armed(conn.deadline());
        assert!(!woken(&conn));
        // A head begins: its 1 s timeout comes sooner, so the watchdog must look again.
        tokio::time::advance(Duration::from_millis(10)).await;
        conn.head_bytes();
        assert!(woken(&conn));
        conn.armed(conn.deadline());
        // The head is read: the request's deadline is later; the timer may fire early.
        let pending = conn.request();
        assert!(!woken(&conn));
        drop(pending.into_sending());
        // The next head on the same connection comes no sooner than the armed one.
        tokio::time::advance(Duration::from_millis(10)).await;
        conn.head_bytes();
        assert!(!woken(&conn));
    }

    #[tokio::test(start_paused = true)]
    async fn requests_that_all_wait_for_their_bodies_are_the_clients_wait() {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let conn = Arc::new(Conn::new(&limits()));
        let waiting = conn.request();
        let mut body = waiting.body_wait();
        body.polled(true, false, &mut cx);
        // Another request is the server's work: the connection stays open.
        let working = conn.request();
        tokio::time::advance(Duration::from_secs(60)).await;
        body.polled(true, false, &mut cx);
        assert_eq!(conn.verdict(), WatchdogCall::Open);
        // Once it is answered (progress), only the client's wait is left, overdue.
        drop(working.into_sending());
        assert_eq!(conn.verdict(), WatchdogCall::Open);
        assert_eq!(conn.deadline(), Instant::now() + Duration::from_secs(5));
        tokio::time::advance(Duration::from_secs(5)).await;
        assert_eq!(conn.verdict(), WatchdogCall::BodyRead);
        // Its body comes: the server works on it again.
        body.polled(false, false, &mut cx);
        assert_eq!(conn.verdict(), WatchdogCall::Open);
        // Answered while its body is still read (a stream's): nothing waits any more,
        // and a body read after its answer is not counted.
        body.polled(true, false, &mut cx);
        let sending = waiting.into_sending();
        assert_eq!(conn.awaiting_body.load(SeqCst), 0);
        body.polled(true, false, &mut cx);
        assert_eq!(conn.awaiting_body.load(SeqCst), 0);
        let working = conn.request();
        tokio::time::advance(Duration::from_secs(60)).await;
        assert_eq!(
            conn.verdict(),
            WatchdogCall::Open,
            "the other request is the server's"
        );
        drop((body, sending, working));
        assert_eq!(conn.awaiting_body.load(SeqCst), 0);
        assert_eq!(conn.overdue_bodies.load(SeqCst), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_has_the_idle_timeout_from_its_arrival_and_cancelled_requests_are_no_progress() {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let conn = Arc::new(Conn::new(&limits()));
        conn.no_head();
        tokio::time::advance(Duration::from_secs(4)).await;
        // A request arrives 4 s into the connection and waits for its body: it has 5 s.
        let held = conn.request();
        let mut body = held.body_wait();
        body.polled(true, false, &mut cx);
        // Requests opened and cancelled before their answers, each second, are no
        // progress, nor are the answers to those whose bodies broke with their reset.
        for i in 0..4 {
            tokio::time::advance(Duration::from_secs(1)).await;
            let cancelled = conn.request();
            if i % 2 == 1 {
                let mut broken = cancelled.body_wait();
                broken.polled(false, true, &mut cx);
                drop((broken, cancelled.into_sending()));
            }
            body.polled(true, false, &mut cx);
            assert_eq!(conn.verdict(), WatchdogCall::Open);
            assert_eq!(conn.progress_ms.load(SeqCst), 0);
        }
        tokio::time::advance(Duration::from_secs(1)).await;
        body.polled(true, false, &mut cx);
        assert_eq!(conn.overdue_bodies.load(SeqCst), 1);
        assert_eq!(conn.verdict(), WatchdogCall::BodyRead);
        drop((body, held));
        assert_eq!(conn.overdue_bodies.load(SeqCst), 0);
        assert_eq!(conn.verdict(), WatchdogCall::Idle);
    }

    #[tokio::test(start_paused = true)]
    async fn a_response_nobody_takes_is_stalled_but_a_request_being_served_is_not() {
        let conn = Arc::new(Conn::new(&limits()));
        let pending = conn.request();
        tokio::time::advance(Duration::from_secs(60)).await;
        assert_eq!(conn.verdict(), WatchdogCall::Open);
        let sending = pending.into_sending();
        tokio::time::advance(Duration::from_secs(5)).await;
        assert_eq!(conn.verdict(), WatchdogCall::Stalled);
        // Bytes read while a response is out do not start a head.
        conn.head_bytes();
        assert_eq!(conn.head_since.load(SeqCst), 0);
        drop(sending);
        assert_eq!(conn.verdict(), WatchdogCall::Open);
    }
}
