//! A response body as the transport takes it: in pieces, each one progress for the
//! connection's watchdog, and, for a response of ids, dropped if its drain deadline passes.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};

use axum::body::Body;
use bytes::Bytes;
use http_body::{Body as _, Frame, SizeHint};

use super::conn::Sending;
use crate::service::{Drain, Room};

/// A response body handed to the transport in pieces of at most `piece` bytes, so HTTP/2
/// buffers no more than that beyond what the reader's window allows. It keeps the room its
/// ids hold in the budget until the last piece is taken; if the response's drain deadline
/// passes first, what is left of it is dropped at once (the transport may not ask for
/// another piece for as long as the reader keeps its window shut), and the transport is
/// told so when it next asks: HTTP/2 resets the stream, HTTP/1.1 closes the connection.
pub struct Metered {
    body: Source,
    piece: usize,
    sending: Sending,
    room: Option<Room>,
}

/// What is left to send.
struct Left {
    inner: Body,
    rest: Bytes,
}

enum Source {
    /// A response that holds no ids: nothing else reaches it.
    Own(Left),
    /// A response of ids: dropped from the slot if it is abandoned.
    Shared(Arc<Mutex<Option<Left>>>),
}

impl Metered {
    pub fn new(
        inner: Body,
        piece: usize,
        sending: Sending,
        room: Option<Room>,
        drain: Option<&Drain>,
    ) -> Metered {
        let left = Left {
            inner,
            rest: Bytes::new(),
        };
        let body = match drain {
            None => Source::Own(left),
            Some(drain) => {
                let slot = Arc::new(Mutex::new(Some(left)));
                let weak = Arc::downgrade(&slot);
                drain.on_abandon(move || {
                    if let Some(slot) = weak.upgrade() {
                        let left = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
                        drop(left);
                    }
                });
                Source::Shared(slot)
            }
        };
        Metered {
            body,
            piece,
            sending,
            room,
        }
    }
}

impl Left {
    fn poll_frame(
        &mut self,
        cx: &mut Context<'_>,
        piece: usize,
        sending: &Sending,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        if !self.rest.is_empty() {
            let data = self.rest.split_to(piece.min(self.rest.len()));
            sending.progress();
            return Poll::Ready(Some(Ok(Frame::data(data))));
        }
        match ready!(Pin::new(&mut self.inner).poll_frame(cx)) {
            Some(Ok(frame)) => {
                sending.progress();
                Poll::Ready(Some(Ok(match frame.into_data() {
                    Ok(mut data) => {
                        if data.len() > piece {
                            self.rest = data.split_off(piece);
                        }
                        Frame::data(data)
                    }
                    Err(trailers) => trailers,
                })))
            }
            other => Poll::Ready(other),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_empty() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let inner = self.inner.size_hint();
        let rest = self.rest.len() as u64;
        let mut hint = SizeHint::new();
        hint.set_lower(inner.lower() + rest);
        if let Some(upper) = inner.upper() {
            hint.set_upper(upper + rest);
        }
        hint
    }
}

/// The error an abandoned response ends with.
fn abandoned() -> axum::Error {
    axum::Error::new(std::io::Error::other(
        "response abandoned: its ids were not taken within their drain deadline",
    ))
}

impl http_body::Body for Metered {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        let polled = match &mut this.body {
            Source::Own(left) => left.poll_frame(cx, this.piece, &this.sending),
            Source::Shared(slot) => match slot.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
                Some(left) => left.poll_frame(cx, this.piece, &this.sending),
                None => Poll::Ready(Some(Err(abandoned()))),
            },
        };
        if let Poll::Ready(None) = polled {
            this.room = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        match &self.body {
            Source::Own(left) => left.is_end_stream(),
            Source::Shared(slot) => slot
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
                .is_some_and(Left::is_end_stream),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.body {
            Source::Own(left) => left.size_hint(),
            Source::Shared(slot) => slot
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
                .map_or_else(SizeHint::default, Left::size_hint),
        }
    }
}
