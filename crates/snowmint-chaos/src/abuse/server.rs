//! The `snowmint serve` under attack: a child process on loopback ports, its log drained so
//! it never blocks on a full pipe, killed when dropped.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::Child;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use snowmint_testkit::{Addresses, ServeCommand};

/// How long the server may take to log its addresses.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// A running `snowmint serve`.
pub struct Serve {
    child: Child,
    /// The HTTP port, on loopback.
    pub http: SocketAddr,
    /// The gRPC port, on loopback.
    pub grpc: SocketAddr,
    _state: tempfile::TempDir,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serve {
    /// Starts `snowmint` (the binary at `program`) serving on loopback ports, with `extra`
    /// arguments, a fresh state directory and no `SNOWMINT_*` variable from outside.
    pub fn start(program: &Path, extra: &[String]) -> anyhow::Result<Serve> {
        let state = tempfile::tempdir().context("a state directory")?;
        let mut cmd = ServeCommand::new(program, state.path())
            .grpc_addr("127.0.0.1:0")
            .args(extra)
            .command();
        let mut child = cmd
            .spawn()
            .with_context(|| format!("starting {}", program.display()))?;
        let stderr = child.stderr.take().context("the server's stderr")?;
        let (tx, rx) = mpsc::channel();
        // Drains the log for the server's whole life: a full pipe would stall it.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let deadline = Instant::now() + START_TIMEOUT;
        let mut logged = Vec::new();
        let line = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) if line.contains(" http=") => break line,
                Ok(line) => logged.push(line),
                Err(_) => {
                    let _ = child.kill();
                    bail!(
                        "snowmint serve logged no address within {START_TIMEOUT:?}:\n{}",
                        logged.join("\n")
                    );
                }
            }
        };
        let addresses =
            Addresses::of_line(&line).with_context(|| format!("no http address in {line:?}"))?;
        let grpc = addresses
            .grpc
            .with_context(|| format!("no grpc address in {line:?}"))?;
        let http = addresses.http;
        // Every attack goes to loopback, and only there.
        for (key, addr) in [("http", http), ("grpc", grpc)] {
            anyhow::ensure!(
                addr.ip().is_loopback(),
                "{key} address {addr} is not loopback"
            );
        }
        Ok(Serve {
            child,
            http,
            grpc,
            _state: state,
        })
    }

    /// The server's process, to sample from another thread.
    pub fn process(&self) -> Process {
        Process(self.child.id())
    }

    /// The value of the metric line that starts with `prefix` (name and labels).
    pub fn metric(&self, prefix: &str) -> Option<f64> {
        metric_at(self.http, prefix)
    }

    /// [`Serve::metric`], for another thread.
    pub fn metrics_reader(&self) -> impl Fn(&str) -> Option<f64> + Send + 'static {
        let http = self.http;
        move |prefix| metric_at(http, prefix)
    }

    /// Waits up to `limit` until the server holds no more than `open` HTTP connections
    /// (the one asking included), so that one attack's leftovers do not weigh on the next.
    pub fn settle(&self, open: f64, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            let http = self.metric("snowmint_connections_open{protocol=\"http\"}");
            // A port's gauge appears with its first connection.
            let grpc = self.metric("snowmint_connections_open{protocol=\"grpc\"}");
            if http.is_some_and(|n| n <= open) && grpc.unwrap_or(0.0) <= 0.0 {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }
}

/// The value of the metric line of the server at `http` that starts with `prefix`.
fn metric_at(http: SocketAddr, prefix: &str) -> Option<f64> {
    let body = get(http, "/metrics").ok()?.1;
    body.lines()
        .find_map(|line| line.strip_prefix(prefix)?.trim().parse().ok())
}

/// `GET path` on a new connection: the status and the body.
pub fn get(addr: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let status = response
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no status line in {response:?}")))?;
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Ok((status, body))
}

/// The server's process, by pid: what `/proc` says of it.
#[derive(Debug, Clone, Copy)]
pub struct Process(u32);

/// What one look at the process found.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sample {
    /// Resident memory, kB.
    pub rss_kb: u64,
    /// Threads.
    pub threads: u64,
    /// Open descriptors.
    pub fds: u64,
}

impl Process {
    /// A number from the process's status, such as `Threads` or `VmRSS` (in kB).
    fn status(self, field: &str) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.0)).ok()?;
        status
            .lines()
            .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
    }

    /// Its memory, threads and descriptors now; zeros once it is gone.
    pub fn sample(self) -> Sample {
        let fds = std::fs::read_dir(format!("/proc/{}/fd", self.0)).map_or(0, Iterator::count);
        Sample {
            rss_kb: self.status("VmRSS").unwrap_or(0),
            threads: self.status("Threads").unwrap_or(0),
            fds: fds as u64,
        }
    }
}
