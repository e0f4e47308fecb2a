//! A TLS port's connections: the handshake, after the connection has taken its place under
//! `max_connections` and within `header_read_timeout_ms` from its start (the same clock
//! then bounds the first request head); then the connection is served as a plain one is,
//! in the protocol the handshake agreed on in ALPN: the HTTP port offers `h2` and
//! `http/1.1` and speaks only the one chosen (both, told apart by their first bytes, when
//! the client offered none); the gRPC port offers only `h2`, so a client that offers only
//! `http/1.1` is refused at the handshake.
//!
//! A client that speaks plain HTTP to the HTTP port gets a JSON 400 that says the port
//! speaks TLS, and the connection closes; on the other ports, and for anything else that is
//! not a TLS handshake, rustls refuses it and the connection closes at once.

use std::sync::Arc;

use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};

use super::conn::Conn;
use super::io::{Place, linger};
use super::{Alpn, Net, Protocol};
use crate::ApiError;
use crate::metrics::{PortLabels, TimeoutLabels};
use crate::tls::Acceptor;

/// The first byte of every TLS record that opens a connection: a handshake record.
const HANDSHAKE_RECORD: u8 = 0x16;

/// How a handshake ended, short of an error.
// Held for a moment and moved once: boxing the stream would cost an allocation a connection.
#[allow(clippy::large_enum_variant)]
enum Opened {
    /// Done: the connection speaks TLS.
    Tls(tokio_rustls::server::TlsStream<TcpStream>),
    /// The client spoke plain HTTP to the HTTP port.
    PlainHttp(TcpStream),
}

impl Net {
    /// Serves one connection of a TLS port: handshake, then as [`Net::connection`].
    #[allow(clippy::too_many_arguments)] // what `Net::serve` hands every connection task
    pub(super) async fn secured(
        self: Arc<Net>,
        stream: TcpStream,
        peer: std::net::SocketAddr,
        place: Place,
        tls: Acceptor,
        protocol: Protocol,
        mut stop: watch::Receiver<bool>,
        _open: mpsc::Sender<()>,
    ) {
        let conn = Arc::new(Conn::new(&self.limits));
        let label = protocol.label();
        let deadline = conn.deadline();
        let http = matches!(protocol, Protocol::Http(_) | Protocol::Admin(_));
        let handshake = async move {
            if http {
                let mut first = [0u8; 1];
                // A byte or the end: peek returns as soon as there is either.
                if stream.peek(&mut first).await? == 1
                    && first[0] != HANDSHAKE_RECORD
                    && first[0].is_ascii_uppercase()
                {
                    return Ok(Opened::PlainHttp(stream));
                }
            }
            tls.accept(stream).await.map(Opened::Tls)
        };
        let outcome = tokio::select! {
            outcome = tokio::time::timeout_at(deadline, handshake) => outcome,
            // The server stops: a connection not yet served has nothing to finish.
            _ = stop.wait_for(|stop| *stop) => return,
        };
        let labels = PortLabels { port: label };
        let stream = match outcome {
            Ok(Ok(Opened::Tls(stream))) => stream,
            Ok(Ok(Opened::PlainHttp(plain))) => {
                self.state
                    .metrics
                    .tls_handshake_failures
                    .get_or_create(&labels)
                    .inc();
                let answer = ApiError::BadRequest(
                    "this port speaks TLS: use https:// (the request was plain HTTP)".to_string(),
                )
                .http1_answer();
                linger(plain, Some(answer), Some(place)).await;
                return;
            }
            Ok(Err(e)) => {
                self.state
                    .metrics
                    .tls_handshake_failures
                    .get_or_create(&labels)
                    .inc();
                tracing::debug!(error = %e, port = label, %peer, "TLS handshake failed");
                return;
            }
            Err(_) => {
                self.state
                    .metrics
                    .connections_timed_out
                    .get_or_create(&TimeoutLabels {
                        protocol: label,
                        timeout: "header_read",
                    })
                    .inc();
                return;
            }
        };
        let alpn = match stream.get_ref().1.alpn_protocol() {
            Some(b"h2") => Alpn::H2,
            Some(b"http/1.1") => Alpn::Http1,
            _ => Alpn::None,
        };
        self.connection(stream, peer, place, conn, protocol, alpn, stop)
            .await;
    }
}
