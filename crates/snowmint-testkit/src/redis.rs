//! A real `redis-server` that writes every command to its append-only file before
//! answering, so a restart, even after SIGKILL, keeps every key a test saw written.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Command;

use crate::instance::{Instance, Kind};
use crate::net;
use crate::program;

/// What the guard needs to know to run a `redis-server` on a port of its own.
const KIND: Kind = Kind {
    name: "redis",
    program: "redis-server",
    // Redis answers SIGTERM by flushing its append-only file and exiting.
    stop_signal: libc::SIGTERM,
    ready: answers_ping,
};

/// A `redis-server` of its own on a free loopback port, stopped when dropped.
///
/// It persists with an append-only file synced on every write (`appendonly yes`,
/// `appendfsync always`), in a temporary directory that outlives restarts and is removed
/// on drop.
///
/// ```
/// use std::io::{BufRead, BufReader, Write};
/// use std::net::TcpStream;
/// use snowmint_testkit::{Redis, Server};
///
/// fn send(redis: &Redis, command: &[u8]) -> std::io::Result<String> {
///     let mut stream = TcpStream::connect(("127.0.0.1", redis.port()))?;
///     stream.write_all(command)?;
///     let mut reply = String::new();
///     BufReader::new(stream).read_line(&mut reply)?;
///     Ok(reply)
/// }
///
/// let mut redis = Redis::start();
/// assert!(redis.url().starts_with("redis://127.0.0.1:"));
/// assert_eq!(send(&redis, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n")?, "+OK\r\n");
/// redis.kill();
/// redis.restart(); // same port, same append-only file
/// assert_eq!(send(&redis, b"*2\r\n$6\r\nEXISTS\r\n$1\r\nk\r\n")?, ":1\r\n");
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct Redis {
    server: Instance,
}

impl Redis {
    /// Starts a `redis-server` and waits until it answers `PING`.
    ///
    /// # Panics
    ///
    /// If `redis-server` (Debian's `redis-server` package) is not on `PATH`, or the server
    /// does not answer within 30 seconds; the message quotes the end of its log.
    ///
    /// ```
    /// use std::net::TcpStream;
    ///
    /// let redis = snowmint_testkit::Redis::start();
    /// TcpStream::connect(("127.0.0.1", redis.port()))?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[must_use]
    #[track_caller]
    pub fn start() -> Redis {
        let program = program::find_on_path("redis-server", "redis-server");
        let server = Instance::start(&KIND, |port, dir| {
            let data = dir.join("data");
            fs::create_dir(&data)
                .unwrap_or_else(|err| panic!("cannot create {}: {err}", data.display()));
            let program = program.clone();
            move || redis_command(&program, port, &data)
        });
        Redis { server }
    }

    /// The port the server listens on, on 127.0.0.1; the same across restarts.
    ///
    /// ```
    /// let redis = snowmint_testkit::Redis::start();
    /// assert_eq!(redis.url(), format!("redis://127.0.0.1:{}", redis.port()));
    /// ```
    #[must_use]
    pub fn port(&self) -> u16 {
        self.server.port
    }

    /// The server's address as a `redis://` URL, the form `snowmint serve --lease` takes.
    ///
    /// ```
    /// let redis = snowmint_testkit::Redis::start();
    /// assert_eq!(redis.url(), format!("redis://127.0.0.1:{}", redis.port()));
    /// ```
    #[must_use]
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.server.port)
    }
}

fn redis_command(program: &Path, port: u16, data: &Path) -> Command {
    let mut command = Command::new(program);
    command
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .arg("--dir")
        .arg(data)
        .args(["--appendonly", "yes", "--appendfsync", "always"])
        // No snapshots: the append-only file alone is the data.
        .args(["--save", ""])
        .args(["--daemonize", "no"]);
    command
}

/// Whether Redis answers `PING` with `PONG`; while it loads its data it answers `-LOADING`.
fn answers_ping(port: u16) -> bool {
    let Ok(mut stream) = net::connect(port) else {
        return false;
    };
    if stream.write_all(b"*1\r\n$4\r\nPING\r\n").is_err() {
        return false;
    }
    let mut reply = String::new();
    BufReader::new(stream).read_line(&mut reply).is_ok() && reply == "+PONG\r\n"
}

crate::server_controls!(Redis);
