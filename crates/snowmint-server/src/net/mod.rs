//! The accept loop every port shares: HTTP/1.1 and HTTP/2 (h2c) on the HTTP port, HTTP/2
//! for gRPC, framed Thrift calls on the Thrift port, each connection under the server's
//! [`Limits`].
//!
//! A connection takes one of `max_connections` places (one of the admin port's own
//! [`ADMIN_MAX_CONNECTIONS`](crate::limits::ADMIN_MAX_CONNECTIONS) there) or is refused
//! (and counted); its
//! request heads (a Thrift call's frame) are bounded in bytes (`max_header_bytes`; a frame
//! by [`MAX_FRAME_BYTES`](crate::thrift::MAX_FRAME_BYTES)) and in time
//! (`header_read_timeout_ms`); it is closed after `idle_timeout_ms` without progress, at
//! once if a response was waiting for a reader that stopped taking it; HTTP/2 advertises
//! `max_concurrent_streams` and buffers at most `stream_buffer_bytes` per stream.

mod conn;
mod framed;
mod handshake;
mod io;
mod metered;
mod outbox;
#[cfg(test)]
mod pipelined;

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use snowmint::error::Chain;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc, watch};
use tokio::time::Instant;

use self::conn::{Conn, HyperService, PerConnection, WatchdogCall};
pub(crate) use self::io::MAX_HEADERS;
use self::io::{Place, Socket, Tracked};
use crate::limits::ADMIN_MAX_CONNECTIONS;
use crate::metrics::{ConnectionLabels, TimeoutLabels};
use crate::tls::Acceptor;
use crate::{ApiError, AppState, Limits};

/// HTTP/2 flow-control windows for what clients send: no route reads more than a 16 KiB
/// body, and gRPC requests are a few bytes, so the protocol's initial 64 KiB per stream is
/// plenty, and a connection's unread request bytes stay within 256 KiB.
const H2_STREAM_WINDOW: u32 = 65_535;
const H2_CONNECTION_WINDOW: u32 = 256 * 1024;
/// How long a connection closed gracefully with nothing in flight (idle, or the server
/// stopping) may take to say goodbye before it is dropped: an HTTP/2 GOAWAY waits for the
/// client to answer a ping, which takes a round trip.
const CLOSE_WAIT: Duration = Duration::from_secs(1);
/// While the server stops, how often a connection checks whether its last request is done.
const STOP_POLL: Duration = Duration::from_millis(50);
/// Pause after an accept error such as running out of file descriptors, which would
/// otherwise fail again at once.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// What a port speaks, with what answers it.
#[derive(Debug, Clone)]
pub enum Protocol {
    /// The HTTP/JSON API: HTTP/1.1, or HTTP/2 with prior knowledge.
    Http(crate::HttpApi),
    /// The admin port: the probes and the metrics of the HTTP API ([`crate::admin_api`]),
    /// spoken as the HTTP port speaks.
    Admin(crate::HttpApi),
    /// The gRPC API: HTTP/2 only.
    Grpc(crate::grpc::GrpcApi),
    /// Twitter's Snowflake Thrift service: framed transport, binary protocol.
    Thrift,
}

impl Protocol {
    pub(crate) fn label(&self) -> &'static str {
        match self {
            Protocol::Http(_) => "http",
            Protocol::Admin(_) => "admin",
            Protocol::Grpc(_) => "grpc",
            Protocol::Thrift => "thrift",
        }
    }
}

/// What a TLS client and the server agreed on in ALPN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Alpn {
    /// Nothing (plain text, or a client that offered no protocol): the HTTP port reads the
    /// first bytes to tell HTTP/1.1 from HTTP/2, as on a plain port.
    None,
    /// `http/1.1`.
    Http1,
    /// `h2`.
    H2,
}

/// Connections that may wait in the kernel to be accepted. The standard library's 128 is
/// too few for a burst: a client past it has its SYN dropped and retries a second later,
/// so a thousand clients connecting at once would see one-second stalls. The kernel caps it
/// at `net.core.somaxconn` (4096 by default on recent kernels).
pub const LISTEN_BACKLOG: u32 = 4096;

/// Binds a listener on `addr` with [`LISTEN_BACKLOG`].
///
/// # Errors
///
/// The address cannot be bound (in use, not local, not permitted).
pub fn bind(addr: std::net::SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    // As std and tokio do: a restarted server can bind while old connections linger.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// What every connection of a set of ports shares: their places, their limits, the
/// server's metrics.
#[derive(Debug)]
pub struct Net {
    state: AppState,
    limits: Limits,
    places: Arc<Semaphore>,
    /// How many `places` there are, and what sets that number, for the refusal's words.
    cap: (u32, &'static str),
    http: auto::Builder<TokioExecutor>,
    /// The HTTP port's stacks for a TLS client that chose `http/1.1` or `h2` in ALPN: the
    /// connection speaks what was agreed, and nothing else.
    http1: auto::Builder<TokioExecutor>,
    http2: auto::Builder<TokioExecutor>,
    grpc: auto::Builder<TokioExecutor>,
}

impl Net {
    /// The accept loop's shared part for the ports of a server over `state` that share
    /// `max_connections`: HTTP, gRPC and Thrift.
    pub fn new(state: AppState) -> Arc<Net> {
        let cap = (state.limits.max_connections, "max_connections");
        Net::capped(state, cap)
    }

    /// The accept loop's shared part for the admin port: the same limits and watchdog,
    /// with places of its own, which the other ports' clients cannot take.
    pub fn admin(state: AppState) -> Arc<Net> {
        Net::capped(state, (ADMIN_MAX_CONNECTIONS, "the admin port"))
    }

    /// `cap.0` places, named `cap.1` in refusals.
    fn capped(state: AppState, cap: (u32, &'static str)) -> Arc<Net> {
        let limits = state.limits;
        Arc::new(Net {
            places: Arc::new(Semaphore::new(cap.0 as usize)),
            cap,
            // Over HTTP/2 the API itself answers headers over max_header_bytes with a JSON
            // 431 (see http::front); the protocol layer's limit, beyond which it answers
            // with an empty 431, is twice that, and bounds what one head can take.
            http: builder(&limits, limits.max_header_bytes.saturating_mul(2)),
            http1: builder(&limits, limits.max_header_bytes.saturating_mul(2)).http1_only(),
            http2: builder(&limits, limits.max_header_bytes.saturating_mul(2)).http2_only(),
            grpc: grpc_builder(&limits),
            limits,
            state,
        })
    }

    /// Serves `protocol` on `listener`, over TLS if `tls` is given, until `stop` turns true,
    /// then stops accepting, lets each connection finish what it is doing, and returns when
    /// all have closed. Accept errors are logged and retried.
    pub async fn serve(
        self: Arc<Net>,
        listener: TcpListener,
        protocol: Protocol,
        tls: Option<Acceptor>,
        mut stop: watch::Receiver<bool>,
    ) {
        let label = protocol.label();
        self.state.metrics.port_opened(label, tls.is_some());
        // Every connection task holds a sender; when all are gone, so are the connections.
        let (open_tx, mut open_rx) = mpsc::channel::<()>(1);
        loop {
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                _ = stop.wait_for(|stop| *stop) => break,
            };
            let (stream, peer) = match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Per-connection failures (reset before accept) need no pause.
                    if !matches!(
                        e.kind(),
                        std::io::ErrorKind::ConnectionAborted | std::io::ErrorKind::ConnectionReset
                    ) {
                        tracing::warn!(error = %e, port = label, "accept failed");
                        tokio::time::sleep(ACCEPT_BACKOFF).await;
                    }
                    continue;
                }
            };
            let labels = ConnectionLabels { protocol: label };
            let Ok(permit) = Arc::clone(&self.places).try_acquire_owned() else {
                self.state
                    .metrics
                    .connections_refused
                    .get_or_create(&labels)
                    .inc();
                if tls.is_none() {
                    self.refuse(&stream, &protocol);
                }
                continue;
            };
            let open = self
                .state
                .metrics
                .connections_open
                .get_or_create(&labels)
                .clone();
            let place = Place::new(permit, open);
            let _ = stream.set_nodelay(true);
            let (protocol, stop, open) = (protocol.clone(), stop.clone(), open_tx.clone());
            match &tls {
                None => {
                    let net = Arc::clone(&self);
                    tokio::spawn(async move {
                        let conn = Arc::new(Conn::new(&net.limits));
                        net.connection(stream, peer, place, conn, protocol, Alpn::None, stop)
                            .await;
                        drop(open);
                    });
                }
                Some(tls) => {
                    tokio::spawn(Arc::clone(&self).secured(
                        stream,
                        peer,
                        place,
                        tls.clone(),
                        protocol,
                        stop,
                        open,
                    ));
                }
            }
        }
        drop(listener);
        drop(open_tx);
        let _ = open_rx.recv().await;
    }

    /// Answers a connection beyond the cap and closes it: HTTP clients get a
    /// JSON 503 if it fits in the socket's buffer at once; gRPC and Thrift clients, and
    /// every client of a TLS port (which would read plain text as a broken record), see it
    /// close.
    fn refuse(&self, stream: &TcpStream, protocol: &Protocol) {
        if let Protocol::Http(_) | Protocol::Admin(_) = protocol {
            let (max, named) = self.cap;
            let answer = ApiError::Unavailable(format!(
                "too many connections: all {max} that {named} allows are open; try again later"
            ))
            .http1_answer();
            let _ = stream.try_write(&answer);
        }
    }

    /// Serves one connection, watching its progress, in the protocol TLS chose in ALPN if
    /// it chose one.
    #[allow(clippy::too_many_arguments)]
    async fn connection<S: Socket>(
        self: Arc<Net>,
        stream: S,
        peer: std::net::SocketAddr,
        place: Place,
        conn: Arc<Conn>,
        protocol: Protocol,
        alpn: Alpn,
        stop: watch::Receiver<bool>,
    ) {
        let label = protocol.label();
        let (service, builder) = match protocol {
            Protocol::Http(api) | Protocol::Admin(api) => {
                let builder = match alpn {
                    Alpn::None => &self.http,
                    Alpn::Http1 => &self.http1,
                    Alpn::H2 => &self.http2,
                };
                (HyperService::Http(api), builder)
            }
            Protocol::Grpc(api) => (HyperService::Grpc(api), &self.grpc),
            Protocol::Thrift => {
                let (closing, closed) = watch::channel(false);
                let serving = framed::serve(stream, Arc::clone(&conn), self.state.clone(), closed);
                let graceful = move |_: Pin<&mut _>| {
                    let _ = closing.send(true);
                };
                self.watch(serving, graceful, &conn, label, stop).await;
                // The socket is closed: its place is free.
                drop(place);
                return;
            }
        };
        let io = Tracked::new(
            stream,
            Arc::clone(&conn),
            self.limits.max_header_bytes,
            place,
        );
        let service = PerConnection {
            service,
            conn: Arc::clone(&conn),
            caller: self.state.budget.caller(peer.ip()),
            piece: self.limits.stream_buffer_bytes as usize,
        };
        let serving = builder.serve_connection(TokioIo::new(io), service);
        self.watch(serving, |s| s.graceful_shutdown(), &conn, label, stop)
            .await;
    }

    /// Drives `serving` until it ends, or until the watchdog closes it: a head too slow, a
    /// connection idle or stalled too long, the server stopping. `graceful` asks it to
    /// finish what it is doing and close; dropping it closes at once.
    async fn watch<F, E>(
        &self,
        serving: F,
        mut graceful: impl FnMut(Pin<&mut F>),
        conn: &Conn,
        label: &'static str,
        mut stop: watch::Receiver<bool>,
    ) where
        F: Future<Output = Result<(), E>>,
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        tokio::pin!(serving);
        let (mut stopping, mut closing) = (false, None);
        // One timer, set again only when the deadline moves: it may fire before the
        // deadline (which requests keep moving later), and then the verdict says to wait on.
        let timer = tokio::time::sleep_until(Instant::now());
        tokio::pin!(timer);
        let mut armed = None;
        loop {
            let mut deadline = closing.unwrap_or_else(|| conn.deadline());
            if stopping && closing.is_none() {
                deadline = deadline.min(Instant::now() + STOP_POLL);
            }
            if armed != Some(deadline) {
                timer.as_mut().reset(deadline);
                conn.armed(deadline);
                armed = Some(deadline);
            }
            tokio::select! {
                result = serving.as_mut() => {
                    if let Err(e) = result {
                        let e: Box<dyn std::error::Error + Send + Sync> = e.into();
                        tracing::debug!(error = %Chain(&*e), port = label, "connection ended");
                    }
                    return;
                }
                _ = stop.wait_for(|stop| *stop), if !stopping => {
                    stopping = true;
                    graceful(serving.as_mut());
                }
                () = conn.changed.notified() => {}
                () = timer.as_mut() => {
                    if closing.is_some() {
                        return;
                    }
                    // Shutting down, with nothing in flight: an HTTP/2 client that does not
                    // answer the goodbye (GOAWAY and its ping) must not hold the process.
                    if stopping && conn.between_requests() {
                        closing = Some(Instant::now() + CLOSE_WAIT);
                        continue;
                    }
                    let timeout = match conn.verdict() {
                        WatchdogCall::Open => continue,
                        WatchdogCall::HeadTimeout => "header_read",
                        WatchdogCall::Stalled => "stalled",
                        WatchdogCall::Idle => "idle",
                        WatchdogCall::BodyRead => "body_read",
                    };
                    self.state
                        .metrics
                        .connections_timed_out
                        .get_or_create(&TimeoutLabels { protocol: label, timeout })
                        .inc();
                    if timeout != "idle" {
                        return;
                    }
                    graceful(serving.as_mut());
                    closing = Some(Instant::now() + CLOSE_WAIT);
                }
            }
        }
    }
}

/// The HTTP stack's settings for `limits`, with `header_list` as HTTP/2's header list limit.
fn builder(limits: &Limits, header_list: u32) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        // hyper's timeout would start as soon as a response is sent, closing keep-alive
        // connections after it; the watchdog starts it at the head's first byte instead.
        // Not hyper's pipeline_flush: it leaves a write unflushed while unread input
        // remains, so the JSON 400/431 for a head that cannot be read never leaves; the
        // answers to one read's pipelined requests go out together from `Tracked` instead.
        .header_read_timeout(None)
        .max_buf_size(limits.max_header_bytes as usize)
        .max_headers(MAX_HEADERS);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(limits.max_concurrent_streams)
        .max_header_list_size(header_list)
        .max_send_buf_size(limits.stream_buffer_bytes as usize)
        .initial_stream_window_size(H2_STREAM_WINDOW)
        .initial_connection_window_size(H2_CONNECTION_WINDOW);
    builder
}

/// The gRPC port's settings: HTTP/2 only, with the HTTP limits, and no `date` header: gRPC
/// does not use it, and it costs every answer a header to add, check and encode.
fn grpc_builder(limits: &Limits) -> auto::Builder<TokioExecutor> {
    let mut builder = builder(limits, limits.max_header_bytes).http2_only();
    builder.http2().auto_date_header(false);
    builder
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The backlog the kernel reports for a listening socket (`ss` shows it as Send-Q).
    fn backlog(port: u16) -> u32 {
        let out = std::process::Command::new("ss")
            .args(["-ltnH", &format!("sport = :{port}")])
            .output()
            .expect("ss runs (iproute2; scripts/setup installs it)");
        let text = String::from_utf8_lossy(&out.stdout);
        text.split_whitespace()
            .nth(2)
            .and_then(|q| q.parse().ok())
            .unwrap_or_else(|| panic!("no listener on {port} in {text:?}"))
    }

    #[tokio::test]
    async fn listeners_queue_a_burst_of_connections() {
        let listener = bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let port = listener.local_addr().unwrap().port();
        let somaxconn: u32 = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(backlog(port), LISTEN_BACKLOG.min(somaxconn));
        assert!(backlog(port) > 128);
    }
}
