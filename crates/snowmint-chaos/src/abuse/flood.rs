//! Attacks that send too much: request heads over the server's header limit, and bodies
//! over its body limit, declared with a length or streamed in chunks. Each attacker thread
//! sends one such request after another on new connections; what it saw is how each ended.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::hold::status_line;
use super::report::{Saw, count_kinds, ms};

/// How long one oversized request may take before the attacker gives up on it.
const TIMEOUT: Duration = Duration::from_secs(5);
/// The piece a body is written in.
const PIECE: usize = 64 * 1024;

/// What an attacker sends.
#[derive(Debug, Clone, Copy)]
pub enum Oversized {
    /// A request head with one header of this many bytes.
    Head(usize),
    /// A body of this many bytes, declared with `Content-Length`.
    Body(usize),
    /// A body of this many bytes, sent in one chunk with no length declared.
    Chunked(usize),
}

/// Runs `attackers` threads sending `what` to `addr` until `stop`.
pub fn flood(addr: SocketAddr, what: Oversized, attackers: usize, stop: &Arc<AtomicBool>) -> Saw {
    let threads: Vec<_> = (0..attackers)
        .map(|_| {
            let stop = Arc::clone(stop);
            std::thread::spawn(move || {
                let mut outcomes = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let started = Instant::now();
                    let outcome = send(addr, what);
                    outcomes.push((outcome, started.elapsed()));
                }
                outcomes
            })
        })
        .collect();
    let outcomes: Vec<(String, Duration)> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap_or_default())
        .collect();
    let mut took: Vec<Duration> = outcomes.iter().map(|(_, t)| *t).collect();
    took.sort_unstable();
    let median = took.get(took.len() / 2).copied().unwrap_or_default();
    let kinds = count_kinds(outcomes.iter().map(|(o, _)| o.as_str()));
    Saw {
        text: format!(
            "{} requests: {kinds}; each ended after {} ms (median)",
            outcomes.len(),
            ms(median)
        ),
    }
}

/// One oversized request on a new connection: how it ended.
fn send(addr: SocketAddr, what: Oversized) -> String {
    let mut stream = match TcpStream::connect_timeout(&addr, TIMEOUT) {
        Ok(stream) => stream,
        Err(e) => return format!("connect: {}", kind(e.kind())),
    };
    let _ = stream.set_read_timeout(Some(TIMEOUT));
    let _ = stream.set_write_timeout(Some(TIMEOUT));
    let (head, body) = match what {
        Oversized::Head(bytes) => (
            format!(
                "GET /v1/id HTTP/1.1\r\nHost: abuse\r\nX-Big: {}\r\n\r\n",
                "a".repeat(bytes)
            ),
            0,
        ),
        Oversized::Body(bytes) => (
            format!("GET /v1/id HTTP/1.1\r\nHost: abuse\r\nContent-Length: {bytes}\r\n\r\n"),
            bytes,
        ),
        Oversized::Chunked(bytes) => (
            format!(
                "GET /v1/id HTTP/1.1\r\nHost: abuse\r\nTransfer-Encoding: chunked\r\n\r\n{bytes:x}\r\n"
            ),
            bytes,
        ),
    };
    let mut written = match stream.write_all(head.as_bytes()) {
        Ok(()) => true,
        Err(_) => false,
    };
    let piece = vec![b'a'; PIECE];
    let mut left = body;
    while written && left > 0 {
        let n = left.min(PIECE);
        written = stream.write_all(&piece[..n]).is_ok();
        left -= n;
    }
    if written && matches!(what, Oversized::Chunked(_)) {
        written = stream.write_all(b"\r\n0\r\n\r\n").is_ok();
    }
    let mut answer = Vec::new();
    let read = stream.read_to_end(&mut answer);
    let status = if answer.is_empty() {
        match read {
            Err(e) => format!("no answer ({})", kind(e.kind())),
            Ok(_) => "closed without an answer".into(),
        }
    } else {
        status_line(&answer)
    };
    if written || body == 0 {
        status
    } else {
        format!("{status}, body cut off")
    }
}

fn kind(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::ConnectionRefused => "refused",
        ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted | ErrorKind::BrokenPipe => {
            "reset"
        }
        ErrorKind::TimedOut | ErrorKind::WouldBlock => "timed out",
        _ => "error",
    }
}
