//! The socket as the HTTP stack sees it: reads tell the connection's watchdog when a
//! request head begins, hyper's own answers to heads it cannot parse (400, 414, 431,
//! sent with an empty body) go out as JSON errors instead, and the answers to pipelined
//! HTTP/1.1 requests go out together (see [`outbox`](super::outbox)).
//!
//! hyper flushes after every response; over HTTP/1.1 a flush is held while the last read
//! brought bytes that hyper is still answering, and the answers go out at the first of:
//! a flush with nothing written since the last one (hyper is waiting for something else),
//! a read that finds no more input with no request in the router, the end of input, a
//! close, or a full outbox. A held flush also wakes the connection's task, so that it is
//! polled again and flushes even if hyper goes to sleep without reading: nothing is held
//! across a wait.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use prometheus_client::metrics::gauge::Gauge;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::sync::OwnedSemaphorePermit;

use super::conn::Conn;
use super::outbox::Outbox;
use crate::{ApiError, MAX_URI_BYTES, RequestPart};

/// What every HTTP/2 connection sends first.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Headers hyper reads in one HTTP/1 head (its default, set explicitly so errors can say it).
pub const MAX_HEADERS: usize = 100;
/// After answering a head with an error, the rest of what the client is sending is read
/// and dropped for a moment before closing, so the answer reaches the client instead of a
/// reset; bounded in bytes and time so it cannot be used to hold the connection.
const LINGER_BYTES: usize = 1024 * 1024;
const LINGER_TIME: Duration = Duration::from_secs(2);

/// What a connection is carried over: a TCP socket, or TLS over one.
pub trait Socket: AsyncRead + AsyncWrite + Unpin + Send + 'static {}

impl<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> Socket for S {}

/// One of the `max_connections` places, and the open-connections gauge it counts in; given
/// back when the socket is closed.
#[derive(Debug)]
pub struct Place {
    _permit: OwnedSemaphorePermit,
    open: Gauge,
}

impl Place {
    /// Takes a place, counting it as open.
    pub fn new(permit: OwnedSemaphorePermit, open: Gauge) -> Place {
        open.inc();
        Place {
            _permit: permit,
            open,
        }
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.open.dec();
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HttpVersion {
    /// Matched this many bytes of the HTTP/2 preface so far.
    Unknown(usize),
    Http1,
    Http2,
}

/// A connection's socket, watched.
#[derive(Debug)]
pub struct Tracked<S: Socket> {
    stream: Option<S>,
    conn: Arc<Conn>,
    version: HttpVersion,
    max_header_bytes: u32,
    /// HTTP/1.1 answers written by hyper, not yet sent.
    outbox: Outbox,
    /// Whether hyper has written since it last flushed.
    written: bool,
    /// Whether the last read brought bytes: hyper is still working through them, and may
    /// have more requests to answer without waiting.
    read_ahead: bool,
    /// Whether an error answer was written in place of hyper's.
    answered: bool,
    place: Option<Place>,
}

impl<S: Socket> Tracked<S> {
    /// `stream`, reporting to `conn`, holding `place` until it is closed.
    pub fn new(stream: S, conn: Arc<Conn>, max_header_bytes: u32, place: Place) -> Tracked<S> {
        Tracked {
            stream: Some(stream),
            conn,
            version: HttpVersion::Unknown(0),
            max_header_bytes,
            outbox: Outbox::default(),
            written: false,
            read_ahead: false,
            answered: false,
            place: Some(place),
        }
    }

    fn stream(&mut self) -> Pin<&mut S> {
        // Taken only in `drop`.
        Pin::new(self.stream.as_mut().expect("the socket"))
    }

    fn saw(&mut self, bytes: &[u8]) {
        if let HttpVersion::Unknown(matched) = self.version {
            let take = (PREFACE.len() - matched).min(bytes.len());
            self.version = if bytes[..take] != PREFACE[matched..matched + take] {
                HttpVersion::Http1
            } else if matched + take == PREFACE.len() {
                self.conn.no_head();
                HttpVersion::Http2
            } else {
                HttpVersion::Unknown(matched + take)
            };
        }
        if self.version != HttpVersion::Http2 {
            self.conn.head_bytes();
        }
    }

    /// If `head` is hyper's empty answer to a head it could not read, the JSON one instead.
    fn json_answer(&self, head: &[u8]) -> Option<Vec<u8>> {
        if self.version == HttpVersion::Http2 || !self.conn.between_requests() {
            return None;
        }
        let refusal = match head.get(..13)? {
            b"HTTP/1.1 400 " => ApiError::BadRequest(
                "malformed request: the request line or a header is not valid HTTP/1.1".to_string(),
            ),
            b"HTTP/1.1 414 " => ApiError::TooLarge {
                part: RequestPart::Target,
                size: None,
                limit: MAX_URI_BYTES as u64,
            },
            b"HTTP/1.1 431 " => ApiError::TooLarge {
                part: RequestPart::Head,
                size: None,
                limit: self.max_header_bytes as u64,
            },
            _ => return None,
        };
        let empty = head
            .windows(b"\r\ncontent-length: 0\r\n".len())
            .any(|w| w == b"\r\ncontent-length: 0\r\n");
        if !head.ends_with(b"\r\n\r\n") || !empty {
            return None;
        }
        Some(refusal.http1_answer())
    }

    /// Sends what the outbox holds.
    fn poll_send(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let stream = Pin::new(self.stream.as_mut().expect("the socket"));
        self.outbox.poll_send(stream, cx)
    }

    /// Takes `bufs`, one HTTP/1.1 write of hyper's, into the outbox (our JSON answer in
    /// place of hyper's empty error answer), or, if it is larger than the outbox, writes it
    /// to the socket once what is held has gone out. Returns how much of it was taken.
    fn poll_hold(
        &mut self,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let len = bufs.iter().map(|b| b.len()).sum();
        let answer = bufs
            .iter()
            .find(|b| !b.is_empty())
            .and_then(|first| self.json_answer(first));
        let size = answer.as_ref().map_or(len, Vec::len);
        if !self.outbox.fits(size) {
            ready!(self.poll_send(cx))?;
        }
        self.written = true;
        if let Some(answer) = answer {
            self.outbox.push(&answer);
            self.answered = true;
        } else if self.outbox.fits(size) {
            for buf in bufs {
                self.outbox.push(buf);
            }
        } else {
            return self.stream().poll_write_vectored(cx, bufs);
        }
        Poll::Ready(Ok(len))
    }
}

impl<S: Socket> AsyncRead for Tracked<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match this.stream().poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {}
            Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            Poll::Pending => {
                this.read_ahead = false;
                // With a request in the router, hyper polls it and flushes next, in this
                // same turn, which sends its answer with the held ones. (No wake here: if
                // the socket is full, that flush waits for it, and a wake would spin.)
                if !this.outbox.is_empty()
                    && !this.conn.serving()
                    && let Poll::Ready(Err(e)) = this.poll_send(cx)
                {
                    return Poll::Ready(Err(e));
                }
                return Poll::Pending;
            }
        }
        if buf.filled().len() > before {
            this.read_ahead = true;
            this.saw(&buf.filled()[before..]);
        } else {
            // The end of input: hyper is about to close, with what it answered held.
            this.read_ahead = false;
            ready!(this.poll_send(cx))?;
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: Socket> AsyncWrite for Tracked<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.version != HttpVersion::Http2 {
            return this.poll_hold(cx, &[io::IoSlice::new(buf)]);
        }
        // HTTP/2 buffers its frames and flushes them itself.
        this.stream().poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.version != HttpVersion::Http2 {
            return this.poll_hold(cx, bufs);
        }
        this.stream().poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.as_ref().is_some_and(|s| s.is_write_vectored())
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let written = std::mem::take(&mut this.written);
        if !this.outbox.is_empty() {
            // Answers to requests already read: more may follow at once, to go out with
            // them. Woken, the task flushes again with nothing written if none did.
            if written && this.read_ahead && this.conn.between_requests() {
                cx.waker().wake_by_ref();
                return Poll::Ready(Ok(()));
            }
            ready!(this.poll_send(cx))?;
        }
        this.stream().poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_send(cx))?;
        this.stream().poll_shutdown(cx)
    }
}

impl<S: Socket> Drop for Tracked<S> {
    fn drop(&mut self) {
        if !self.answered {
            return;
        }
        if let (Some(stream), Ok(runtime)) =
            (self.stream.take(), tokio::runtime::Handle::try_current())
        {
            let rest = std::mem::take(&mut self.outbox).into_rest();
            runtime.spawn(linger(stream, rest, self.place.take()));
        }
    }
}

/// Finishes an error answer, then reads and drops what the client still sends, for a
/// moment, before closing: closing with unread bytes would send a reset that can destroy
/// the answer before the client reads it.
pub async fn linger<S: Socket>(mut stream: S, rest: Option<Vec<u8>>, _place: Option<Place>) {
    let _ = tokio::time::timeout(LINGER_TIME, async {
        if let Some(rest) = rest {
            stream.write_all(&rest).await?;
        }
        stream.shutdown().await?;
        let mut buf = vec![0u8; 16 * 1024];
        let mut left = LINGER_BYTES;
        while left > 0 {
            match stream.read(&mut buf).await? {
                0 => break,
                n => left = left.saturating_sub(n),
            }
        }
        Ok::<(), io::Error>(())
    })
    .await;
}
