//! HTTP/2 streams held at a zero window: each connection grants the server no room to send
//! (`SETTINGS_INITIAL_WINDOW_SIZE` 0) and opens endless `Stream` calls, so the server may
//! answer with headers but never send one byte of data. Spoken frame by frame over a plain
//! socket: HPACK literals without indexing, which every decoder must take.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use super::report::{Saw, seconds_range};

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
// Frame types (RFC 9113, section 6).
const DATA: u8 = 0;
const HEADERS: u8 = 1;
const RST_STREAM: u8 = 3;
const SETTINGS: u8 = 4;
const PING: u8 = 6;
const GOAWAY: u8 = 7;
// Flags.
const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
/// SETTINGS_INITIAL_WINDOW_SIZE.
const INITIAL_WINDOW_SIZE: u16 = 0x4;
/// How long a read waits before the stop flag is looked at again.
const TICK: Duration = Duration::from_millis(200);

/// What one connection saw.
#[derive(Debug, Default)]
struct Conn {
    /// Streams the server sent headers on.
    answered: std::collections::BTreeSet<u32>,
    reset: usize,
    data_bytes: usize,
    goaway: bool,
    closed_after: Option<Duration>,
}

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = u32::try_from(payload.len())
        .expect("a small frame")
        .to_be_bytes();
    let mut out = vec![len[1], len[2], len[3], kind, flags];
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// A header field as an HPACK literal without indexing, with a new name (RFC 7541, 6.2.2);
/// names and values here are all shorter than 127 bytes.
fn literal(out: &mut Vec<u8>, name: &str, value: &str) {
    out.push(0);
    for text in [name, value] {
        out.push(u8::try_from(text.len()).expect("shorter than 127 bytes"));
        out.extend_from_slice(text.as_bytes());
    }
}

/// Opens `connections` connections of `streams` endless streams each, signals `ready`,
/// and keeps them (answering the server's SETTINGS and PINGs, reading nothing else) until
/// `stop`.
pub fn zero_window(
    addr: SocketAddr,
    connections: usize,
    streams: usize,
    ready: &Sender<()>,
    stop: &Arc<AtomicBool>,
) -> Saw {
    let mut threads = Vec::new();
    let mut failed = 0;
    for _ in 0..connections {
        match open(addr, streams) {
            Ok(stream) => {
                let stop = Arc::clone(stop);
                threads.push(std::thread::spawn(move || keep(stream, &stop)));
            }
            Err(_) => failed += 1,
        }
    }
    let _ = ready.send(());
    let conns: Vec<Conn> = threads
        .into_iter()
        .map(|t| t.join().unwrap_or_default())
        .collect();
    let answered: usize = conns.iter().map(|c| c.answered.len()).sum();
    let reset: usize = conns.iter().map(|c| c.reset).sum();
    let data: usize = conns.iter().map(|c| c.data_bytes).sum();
    let closed: Vec<Duration> = conns.iter().filter_map(|c| c.closed_after).collect();
    let goaway = conns.iter().filter(|c| c.goaway).count();
    let mut text = format!(
        "{} connections x {streams} streams: {answered} streams answered with headers, {reset} reset, {data} data bytes received",
        connections - failed
    );
    if failed > 0 {
        text.push_str(&format!(", {failed} connections failed"));
    }
    if closed.is_empty() {
        text.push_str("; no connection closed");
    } else {
        text.push_str(&format!(
            "; {} connections closed after {} ({goaway} with GOAWAY)",
            closed.len(),
            seconds_range(&closed)
        ));
    }
    Saw { text }
}

/// Connects, grants no window, and opens `streams` endless `Stream` calls.
fn open(addr: SocketAddr, streams: usize) -> std::io::Result<TcpStream> {
    let mut tcp = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    tcp.set_nodelay(true)?;
    let mut out = PREFACE.to_vec();
    let mut settings = INITIAL_WINDOW_SIZE.to_be_bytes().to_vec();
    settings.extend_from_slice(&0u32.to_be_bytes());
    out.extend(frame(SETTINGS, 0, 0, &settings));
    let authority = addr.to_string();
    // An empty StreamRequest: the default batch, no total, so it never ends by itself.
    let message = [0u8, 0, 0, 0, 0];
    for i in 0..streams {
        let id = u32::try_from(2 * i + 1).expect("a stream id");
        let mut block = Vec::new();
        literal(&mut block, ":method", "POST");
        literal(&mut block, ":scheme", "http");
        literal(&mut block, ":path", "/snowmint.v1.IdService/Stream");
        literal(&mut block, ":authority", &authority);
        literal(&mut block, "content-type", "application/grpc");
        literal(&mut block, "te", "trailers");
        out.extend(frame(HEADERS, END_HEADERS, id, &block));
        out.extend(frame(DATA, END_STREAM, id, &message));
    }
    tcp.write_all(&out)?;
    Ok(tcp)
}

/// Reads frames until `stop` or the server closes, answering what the protocol requires.
fn keep(mut tcp: TcpStream, stop: &AtomicBool) -> Conn {
    let opened = Instant::now();
    let mut conn = Conn::default();
    let _ = tcp.set_read_timeout(Some(TICK));
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    while !stop.load(Ordering::Relaxed) {
        match tcp.read(&mut chunk) {
            Ok(0) => {
                conn.closed_after = Some(opened.elapsed());
                break;
            }
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => {
                conn.closed_after = Some(opened.elapsed());
                break;
            }
        }
        while buf.len() >= 9 {
            let len = usize::from(buf[0]) << 16 | usize::from(buf[1]) << 8 | usize::from(buf[2]);
            if buf.len() < 9 + len {
                break;
            }
            let (kind, flags) = (buf[3], buf[4]);
            let stream = u32::from_be_bytes([buf[5], buf[6], buf[7], buf[8]]) & 0x7fff_ffff;
            let payload: Vec<u8> = buf[9..9 + len].to_vec();
            buf.drain(..9 + len);
            let reply = match kind {
                HEADERS => {
                    conn.answered.insert(stream);
                    None
                }
                DATA => {
                    conn.data_bytes += len;
                    None
                }
                RST_STREAM => {
                    conn.reset += 1;
                    None
                }
                GOAWAY => {
                    conn.goaway = true;
                    None
                }
                SETTINGS if flags & ACK == 0 => Some(frame(SETTINGS, ACK, 0, &[])),
                PING if flags & ACK == 0 => Some(frame(PING, ACK, 0, &payload)),
                _ => None,
            };
            if let Some(reply) = reply
                && tcp.write_all(&reply).is_err()
            {
                conn.closed_after = Some(opened.elapsed());
                return conn;
            }
        }
    }
    conn
}
