//! Pipelined HTTP/1.1 through the real connection path (the accept loop's `connection`,
//! hyper, `Tracked`, the API) over a scripted socket that counts the writes it is given.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{Notify, watch};

use super::io::Place;
use super::outbox::OUTBOX_BYTES;
use super::{Alpn, Conn, Net, Protocol};
use crate::{AppState, Config, IdSource, Settings};

const GET_ID: &[u8] = b"GET /v1/id HTTP/1.1\r\nHost: t\r\n\r\n";

/// What the client sends and what the server wrote, one entry a write.
#[derive(Default)]
struct Script {
    input: VecDeque<u8>,
    /// Input read by the server so far.
    taken: usize,
    /// Whether the client has finished sending once `input` is read.
    eof: bool,
    /// Whether the client reads nothing, so that the socket takes no more.
    full: bool,
    writes: Vec<Vec<u8>>,
    shut: bool,
    reader: Option<Waker>,
}

#[derive(Clone, Default)]
struct Wire {
    script: Arc<Mutex<Script>>,
    wrote: Arc<Notify>,
}

impl Wire {
    fn send(&self, bytes: &[u8]) {
        let mut script = self.script.lock().unwrap();
        script.input.extend(bytes);
        if let Some(reader) = script.reader.take() {
            reader.wake();
        }
    }

    fn script(&self) -> std::sync::MutexGuard<'_, Script> {
        self.script.lock().unwrap()
    }

    /// Waits until `done` holds of the script.
    async fn until(&self, done: impl Fn(&Script) -> bool) {
        tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                let wrote = self.wrote.notified();
                if done(&self.script()) {
                    return;
                }
                wrote.await;
            }
        })
        .await
        .expect("the server answers within 10 s");
    }
}

impl AsyncRead for Wire {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let mut script = self.script();
        if script.input.is_empty() {
            if script.eof {
                return Poll::Ready(Ok(()));
            }
            script.reader = Some(cx.waker().clone());
            return Poll::Pending;
        }
        let n = buf.remaining().min(script.input.len());
        let bytes: Vec<u8> = script.input.drain(..n).collect();
        buf.put_slice(&bytes);
        script.taken += n;
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Wire {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[io::IoSlice::new(buf)])
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let mut script = self.script();
        if script.full {
            // Never woken: the client never reads.
            return Poll::Pending;
        }
        let write: Vec<u8> = bufs.iter().flat_map(|b| b.iter().copied()).collect();
        let n = write.len();
        script.writes.push(write);
        self.wrote.notify_waiters();
        Poll::Ready(Ok(n))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.script().shut = true;
        self.wrote.notify_waiters();
        Poll::Ready(Ok(()))
    }
}

/// Serves one connection over `wire` with the settings in `toml`, until it closes.
async fn serve(wire: Wire, toml: &str) -> tokio::task::JoinHandle<()> {
    let dir = tempfile::tempdir().unwrap();
    let toml = format!("state_dir = {:?}\nworker = 1\n{toml}", dir.path());
    let config =
        Config::try_from(Settings::from_toml(&toml, "test.toml".as_ref()).unwrap()).unwrap();
    let source = IdSource::start(&config).await.unwrap();
    let state = AppState::for_config(source, &config);
    let net = Net::new(state.clone());
    let conn = Arc::new(Conn::new(&net.limits));
    let permit = Arc::clone(&net.places).try_acquire_owned().unwrap();
    let place = Place::new(permit, prometheus_client::metrics::gauge::Gauge::default());
    let (stop_tx, stop) = watch::channel(false);
    let protocol = Protocol::Http(crate::http_api(state));
    tokio::spawn(async move {
        let peer = "127.0.0.1:1".parse().unwrap();
        net.connection(wire, peer, place, conn, protocol, Alpn::None, stop)
            .await;
        // Kept until here: a dropped sender would read as the server stopping.
        drop((dir, stop_tx));
    })
}

/// The responses in `bytes`: (status, body).
fn responses(mut bytes: &[u8]) -> Vec<(u16, String)> {
    let mut out = Vec::new();
    while let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
        let head = String::from_utf8_lossy(&bytes[..end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length: ")?.parse().ok())
            .expect("content-length");
        let body = &bytes[end + 4..end + 4 + length];
        out.push((
            head[9..12].parse().unwrap(),
            String::from_utf8_lossy(body).into_owned(),
        ));
        bytes = &bytes[end + 4 + length..];
    }
    assert!(bytes.is_empty(), "{}", String::from_utf8_lossy(bytes));
    out
}

#[tokio::test]
async fn the_answers_to_one_read_of_pipelined_requests_go_out_in_one_write() {
    let wire = Wire::default();
    let _serving = serve(wire.clone(), "").await;
    for batch in 1..=3 {
        wire.send(&GET_ID.repeat(16));
        wire.until(|s| responses(&s.writes.concat()).len() == 16 * batch)
            .await;
        let script = wire.script();
        // One write a batch, each with its 16 answers (not 16 writes of one).
        assert_eq!(script.writes.len(), batch);
        let answers = responses(&script.writes[batch - 1]);
        assert_eq!(answers.len(), 16);
        assert!(answers.iter().all(|(status, _)| *status == 200));
    }
    // One request on its own is answered at once, with nothing waiting for more.
    wire.send(GET_ID);
    wire.until(|s| s.writes.len() == 4).await;
    assert_eq!(responses(&wire.script().writes[3]).len(), 1);
}

#[tokio::test]
async fn a_malformed_request_in_a_pipelined_batch_is_answered_after_those_before_it() {
    let wire = Wire::default();
    let mut batch = GET_ID.repeat(2);
    batch.extend_from_slice(b"GET /v1/id HTTP/1.1\r\nHost: t\r\nNo colon here\r\n\r\n");
    batch.extend_from_slice(GET_ID);
    wire.send(&batch);
    wire.script().eof = true;
    let serving = serve(wire.clone(), "").await;
    wire.until(|s| s.shut).await;
    let sent = wire.script().writes.concat();
    let answers = responses(&sent);
    assert_eq!(answers.len(), 3, "{}", String::from_utf8_lossy(&sent));
    assert_eq!(answers[0].0, 200);
    assert_eq!(answers[1].0, 200);
    assert_eq!(
        answers[2],
        (
            400,
            r#"{"error":"malformed request: the request line or a header is not valid HTTP/1.1"}"#
                .to_string()
        )
    );
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("the connection closes")
        .unwrap();
}

#[tokio::test]
async fn a_client_that_pipelines_and_never_reads_is_read_no_further_and_closed() {
    let wire = Wire::default();
    // A megabyte of requests, most of them never to be read.
    wire.send(&GET_ID.repeat(1024 * 1024 / GET_ID.len()));
    wire.script().full = true;
    let serving = serve(wire.clone(), "idle_timeout_ms = 200").await;
    // The idle watchdog closes it: its answers wait in the outbox, none in flight.
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("the watchdog closes the connection")
        .unwrap();
    let script = wire.script();
    assert!(script.writes.is_empty());
    // What was read: hyper's read buffer, and the requests whose answers fill the outbox.
    assert!(
        script.taken <= 16 * 1024 + OUTBOX_BYTES,
        "{} bytes read from a client that reads nothing",
        script.taken
    );
}
