//! What an HTTP/1.1 connection has answered and the socket has not taken yet.
//!
//! hyper flushes after every response, so a client that pipelines 16 requests in one write
//! would get 16 writes back, one system call each. [`Tracked`](super::io::Tracked) keeps
//! the answers to requests that are already read in an outbox instead, and writes them
//! together once hyper has no more read requests to answer. hyper's own `pipeline_flush`
//! does the same from its side, but it skips every flush while unread input remains, so
//! what it wrote last before closing (the answer to a head it cannot read, which stays
//! unread in its buffer) is never sent, and answers pile up in its buffer without bound
//! while a client keeps a partial request behind them.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;

/// The most an outbox holds: what does not fit is sent first. Some hundred answers of a
/// single id, and far less than a socket's send buffer, so holding them costs no wait.
pub const OUTBOX_BYTES: usize = 16 * 1024;
/// An emptied outbox keeps its allocation up to this size for the next answers, so a
/// connection between requests holds no more than this.
const KEPT_BYTES: usize = 4 * 1024;

/// Bytes held for the socket, of which the first `sent` have gone out.
#[derive(Debug, Default)]
pub struct Outbox {
    bytes: Vec<u8>,
    sent: usize,
}

impl Outbox {
    /// Whether nothing is waiting to be sent.
    pub fn is_empty(&self) -> bool {
        self.sent == self.bytes.len()
    }

    /// Whether `more` bytes fit beside what is held.
    pub fn fits(&self, more: usize) -> bool {
        self.bytes.len() + more <= OUTBOX_BYTES
    }

    /// Holds `bytes` after what is held already; the caller checked that they fit.
    pub fn push(&mut self, bytes: &[u8]) {
        self.bytes.extend_from_slice(bytes);
    }

    /// Writes what is held to `stream`, until all of it is taken.
    pub fn poll_send<S: AsyncWrite + Unpin>(
        &mut self,
        stream: Pin<&mut S>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        let stream = stream.get_mut();
        while !self.is_empty() {
            match Pin::new(&mut *stream).poll_write(cx, &self.bytes[self.sent..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => self.sent += n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        self.sent = 0;
        if self.bytes.capacity() > KEPT_BYTES {
            self.bytes = Vec::new();
        } else {
            self.bytes.clear();
        }
        Poll::Ready(Ok(()))
    }

    /// What is still to be sent, if anything.
    pub fn into_rest(mut self) -> Option<Vec<u8>> {
        if self.is_empty() {
            return None;
        }
        self.bytes.drain(..self.sent);
        Some(self.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A socket that takes at most `take` bytes a write, for `writes` writes, and then no
    /// more (`Pending`).
    struct Narrow {
        take: usize,
        writes: usize,
        got: Vec<u8>,
    }

    impl AsyncWrite for Narrow {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            if self.writes == 0 {
                return Poll::Pending;
            }
            self.writes -= 1;
            let n = self.take.min(buf.len());
            self.got.extend_from_slice(&buf[..n]);
            Poll::Ready(Ok(n))
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    fn narrow(take: usize, writes: usize) -> Narrow {
        Narrow {
            take,
            writes,
            got: Vec::new(),
        }
    }

    #[test]
    fn what_the_socket_does_not_take_stays_held_in_order() {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut outbox = Outbox::default();
        assert!(outbox.fits(OUTBOX_BYTES) && !outbox.fits(OUTBOX_BYTES + 1));
        outbox.push(b"first ");
        outbox.push(b"second");
        assert!(!outbox.fits(OUTBOX_BYTES - 11));
        // A full socket: all of it stays.
        let mut socket = narrow(4, 0);
        assert!(
            outbox
                .poll_send(Pin::new(&mut socket), &mut cx)
                .is_pending()
        );
        // Two writes of four bytes, then full: the rest stays, and goes out next.
        socket.writes = 2;
        assert!(
            outbox
                .poll_send(Pin::new(&mut socket), &mut cx)
                .is_pending()
        );
        assert_eq!(socket.got, b"first se");
        socket.writes = 1;
        assert!(outbox.poll_send(Pin::new(&mut socket), &mut cx).is_ready());
        assert_eq!(socket.got, b"first second");
        assert!(outbox.is_empty() && outbox.fits(OUTBOX_BYTES));
        assert_eq!(outbox.into_rest(), None);
    }

    #[test]
    fn the_rest_is_what_was_not_sent() {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut outbox = Outbox::default();
        outbox.push(b"answer");
        let mut socket = narrow(2, 1);
        assert!(
            outbox
                .poll_send(Pin::new(&mut socket), &mut cx)
                .is_pending()
        );
        assert_eq!(outbox.into_rest().as_deref(), Some(&b"swer"[..]));
    }

    #[test]
    fn a_socket_that_takes_nothing_is_an_error() {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut outbox = Outbox::default();
        outbox.push(b"answer");
        let mut socket = narrow(0, 1);
        let sent = outbox.poll_send(Pin::new(&mut socket), &mut cx);
        assert!(matches!(sent, Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::WriteZero));
    }
}
