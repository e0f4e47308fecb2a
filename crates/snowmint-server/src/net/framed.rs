//! One Thrift connection: the framed transport (each message after its length, four bytes
//! big-endian) on the server's runtime, under the same watchdog as HTTP. A frame is read as
//! a request head is, under `header_read_timeout_ms` from its first byte (from the
//! connection's start, for the first); its reply is a response, which the reader must keep
//! taking. Calls on one connection are answered in order, one at a time, as the transport
//! requires.

use std::io;
use std::sync::Arc;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

use super::conn::Conn;
use super::io::{Socket, linger};
use crate::AppState;
use crate::thrift::{self, MAX_FRAME_BYTES};

/// Bytes of a frame's length.
const LENGTH_BYTES: usize = 4;
/// Room each read asks for beyond what the frame being read still needs: a whole small
/// call, or the next one's start, in one read.
const READ_AHEAD: usize = 512;

/// Serves calls on `stream` until the client closes it, sends something that is not a
/// call, or `closing` turns true between calls.
///
/// # Errors
///
/// The socket failed, or the client closed it in the middle of a frame.
pub async fn serve<S: Socket>(
    mut stream: S,
    conn: Arc<Conn>,
    state: AppState,
    mut closing: watch::Receiver<bool>,
) -> io::Result<()> {
    let mut buf = BytesMut::new();
    loop {
        // Between calls the server may close gracefully; within one it finishes it.
        if buf.is_empty() {
            tokio::select! {
                biased;
                _ = closing.wait_for(|closing| *closing) => return Ok(()),
                read = stream.read_buf(reserve(&mut buf, LENGTH_BYTES)) => {
                    if read? == 0 {
                        return Ok(());
                    }
                }
            }
            conn.head_bytes();
        }
        fill(&mut stream, &mut buf, LENGTH_BYTES).await?;
        let length = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
        if length > MAX_FRAME_BYTES {
            // Its message cannot be read: answer, and close, for what follows is no frame.
            let _busy = conn.request();
            write_frame(&mut stream, &thrift::frame_too_large(&state, length)).await?;
            linger(stream, None, None).await;
            return Ok(());
        }
        let total = LENGTH_BYTES + length as usize;
        fill(&mut stream, &mut buf, total).await?;
        let frame = buf.split_to(total);
        let pending = conn.request();
        let reply = thrift::call(&state, &frame[LENGTH_BYTES..]).await;
        let sending = pending.into_sending();
        if !reply.message.is_empty() {
            write_frame(&mut stream, &reply.message).await?;
        }
        drop(sending);
        if reply.close {
            // The watchdog leaves the answer its moment to arrive; the linger is bounded.
            let _busy = conn.request();
            linger(stream, None, None).await;
            return Ok(());
        }
        if buf.has_remaining() {
            // The next call has begun: its head's clock starts now.
            conn.head_bytes();
        }
    }
}

/// `buf`, with room for what a frame of `want` bytes still needs and a little more.
fn reserve(buf: &mut BytesMut, want: usize) -> &mut BytesMut {
    let need = want.saturating_sub(buf.len()).max(1);
    buf.reserve(need + READ_AHEAD);
    buf
}

/// Reads until `buf` holds at least `want` bytes.
async fn fill<S: Socket>(stream: &mut S, buf: &mut BytesMut, want: usize) -> io::Result<()> {
    while buf.len() < want {
        if stream.read_buf(reserve(buf, want)).await? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "the client closed the connection after {} of a frame's {want} bytes",
                    buf.len()
                ),
            ));
        }
    }
    Ok(())
}

/// Sends `message` in one frame.
async fn write_frame<S: Socket>(stream: &mut S, message: &[u8]) -> io::Result<()> {
    let mut frame = Vec::with_capacity(LENGTH_BYTES + message.len());
    // Replies are a few dozen bytes: far below the 2 GiB a length can say.
    frame.extend_from_slice(&(message.len() as u32).to_be_bytes());
    frame.extend_from_slice(message);
    stream.write_all(&frame).await?;
    stream.flush().await
}
