//! The well-behaved client: one request at a steady pace, each on a new connection as a
//! new client would arrive, timed from connecting to the last byte of the answer. It
//! connects from the kernel's choice of address, 127.0.0.1; attackers that must be told
//! apart from it bind to 127.0.0.2 and up.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The request it makes: a small batch, the API's everyday work.
pub const SMALL: &str = "/v1/ids?count=100";
/// A large batch a client that reads may ask for.
pub const LARGE: &str = "/v1/ids?count=65536";
/// How long one request may take before it counts as an error: the most a large batch
/// that is read may take.
const TIMEOUT: Duration = Duration::from_secs(5);

/// What the client saw over one window.
#[derive(Debug, Default)]
pub struct Fared {
    /// Latencies of the requests answered 200, in the order made.
    pub latencies: Vec<Duration>,
    /// Requests that failed: not 200, refused, reset or timed out, by what happened.
    pub errors: Vec<String>,
    /// When each request began, into the window, answered or not.
    pub began: Vec<(Duration, Result<Duration, String>)>,
}

impl Fared {
    /// Requests made.
    pub fn requests(&self) -> usize {
        self.latencies.len() + self.errors.len()
    }

    /// The latency below which `q` (0..=1) of the answered requests fall.
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        let mut sorted = self.latencies.clone();
        sorted.sort_unstable();
        let last = sorted.len().checked_sub(1)?;
        let rank = ((last as f64) * q).round() as usize;
        sorted.get(rank).copied()
    }

    /// The errors, each kind once with its count.
    pub fn error_kinds(&self) -> String {
        super::report::count_kinds(self.errors.iter().map(String::as_str))
    }

    /// What the requests that began at least `after` into the window saw: how many, the
    /// errors, and the slowest answer.
    pub fn since(&self, after: Duration) -> (usize, Vec<&str>, Option<Duration>) {
        let late = self.began.iter().filter(|(at, _)| *at >= after);
        let (mut made, mut errors, mut slowest) = (0, Vec::new(), None::<Duration>);
        for (_, outcome) in late {
            made += 1;
            match outcome {
                Ok(took) => slowest = Some(slowest.map_or(*took, |s| s.max(*took))),
                Err(e) => errors.push(e.as_str()),
            }
        }
        (made, errors, slowest)
    }
}

/// Makes `rate` requests a second for `path` to `addr` until `stop` is set or `window` has
/// passed, and at most `max_requests`.
pub fn measure(
    addr: SocketAddr,
    path: &str,
    rate: u32,
    window: Duration,
    max_requests: usize,
    stop: &Arc<AtomicBool>,
) -> Fared {
    let pace = Duration::from_secs(1) / rate.max(1);
    let begun = Instant::now();
    let mut fared = Fared::default();
    let mut next = begun;
    while begun.elapsed() < window
        && fared.requests() < max_requests
        && !stop.load(Ordering::Relaxed)
    {
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        }
        next += pace;
        let started = Instant::now();
        let outcome = match request(addr, path) {
            Ok(200) => Ok(started.elapsed()),
            Ok(status) => Err(format!("HTTP {status}")),
            Err(e) => Err(describe(&e)),
        };
        match &outcome {
            Ok(took) => fared.latencies.push(*took),
            Err(e) => fared.errors.push(e.clone()),
        }
        fared.began.push((started - begun, outcome));
    }
    fared
}

/// One request on a new connection: its status once the whole answer is read.
fn request(addr: SocketAddr, path: &str) -> std::io::Result<u16> {
    let mut stream = TcpStream::connect_timeout(&addr, TIMEOUT)?;
    stream.set_read_timeout(Some(TIMEOUT))?;
    stream.set_write_timeout(Some(TIMEOUT))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = Vec::with_capacity(4096);
    stream.read_to_end(&mut response)?;
    std::str::from_utf8(response.get(9..12).unwrap_or_default())
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other("no status line"))
}

/// An I/O error as a short kind: "refused", "reset", "timed out" ...
fn describe(e: &std::io::Error) -> String {
    use std::io::ErrorKind::*;
    match e.kind() {
        ConnectionRefused => "refused".into(),
        ConnectionReset | ConnectionAborted | BrokenPipe => "reset".into(),
        TimedOut | WouldBlock => "timed out".into(),
        _ => e.to_string().to_lowercase(),
    }
}
