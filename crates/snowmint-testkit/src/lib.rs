//! Real registry servers for snowmint's integration tests: [`Redis`], [`Etcd`],
//! [`Postgres`] and [`ZooKeeper`], each a process of its own on a free 127.0.0.1 port with
//! its data in a fresh temporary directory, owned by a guard that stops it and removes the
//! directory when dropped.
//!
//! - `start()` returns once the server really answers: Redis `PING`s back, etcd reports
//!   itself healthy, PostgreSQL accepts a session, ZooKeeper answers `srvr` as a
//!   standalone server. The wait is bounded (30 seconds).
//! - `stop()` shuts it down cleanly (SIGKILL after five seconds), `kill()` sends SIGKILL
//!   as a crash would, and `restart()` brings it back on the same port with the same data,
//!   for tests in which the registry goes away and comes back.
//! - A test that panics drops its guards, which stop their servers; a test process that
//!   dies without unwinding takes them with it (they get SIGKILL when it dies).
//!
//! The servers are the Debian packages `redis-server`, `etcd-server`, `postgresql` and
//! `zookeeper` (a Java server, run with `default-jre-headless`), which `scripts/setup`
//! installs. A missing server is a panic naming its package, never a skip: in CI a
//! registry test that cannot run must fail. When the tests run as root, as CI does,
//! PostgreSQL runs as the `postgres` user, since it refuses to run as root.
//!
//! The API blocks; from an async test, start servers before the first `.await` or in
//! `spawn_blocking`. On an idle machine a start takes about 25 ms for Redis, 0.1 s for
//! etcd, 0.4 s for ZooKeeper (the JVM starting) and 1.5 s for PostgreSQL (`initdb` makes a
//! cluster); a restart, 0.1 to 0.2 s, or ZooKeeper's 0.4 s again.
//!
//! ```
//! use std::io::{BufRead, BufReader, Write};
//! use std::net::TcpStream;
//! use snowmint_testkit::{Redis, Server};
//!
//! let mut redis = Redis::start();
//! let mut stream = TcpStream::connect(("127.0.0.1", redis.port()))?;
//! stream.write_all(b"*3\r\n$3\r\nSET\r\n$6\r\nworker\r\n$1\r\n7\r\n")?;
//! let mut reply = String::new();
//! BufReader::new(stream).read_line(&mut reply)?;
//! assert_eq!(reply, "+OK\r\n");
//!
//! redis.stop(); // the registry goes away...
//! assert!(TcpStream::connect(("127.0.0.1", redis.port())).is_err());
//! redis.restart(); // ...and comes back, with its keys
//! # Ok::<(), std::io::Error>(())
//! ```
#![warn(missing_docs)]

mod etcd;
mod instance;
mod net;
mod postgres;
mod process;
mod program;
mod redis;
mod zookeeper;

pub use etcd::Etcd;
pub use net::free_port;
pub use postgres::Postgres;
pub use redis::Redis;
pub use zookeeper::ZooKeeper;

/// What every server guard does, whichever server it runs: for tests written once and
/// run against each registry.
///
/// ```
/// use snowmint_testkit::{Redis, Server};
///
/// fn bounce(server: &mut dyn Server) {
///     server.stop();
///     server.restart();
/// }
/// let mut redis = Redis::start();
/// bounce(&mut redis);
/// assert!(redis.url().starts_with("redis://127.0.0.1:"));
/// ```
pub trait Server {
    /// The URL `snowmint serve --lease` takes for this server.
    fn url(&self) -> String;
    /// The temporary directory of its data and log, removed when the guard drops.
    fn dir(&self) -> &std::path::Path;
    /// Its process id, or `None` while it is stopped (for tests that send SIGSTOP).
    fn pid(&self) -> Option<u32>;
    /// Shuts it down cleanly (SIGKILL after five seconds) and waits for it to exit; its
    /// port and data stay reserved for [`Server::restart`]. Does nothing if it is stopped.
    fn stop(&mut self);
    /// Stops it if it runs, then starts it again on the same port with the same data and
    /// waits until it answers.
    fn restart(&mut self);
    /// Kills it with SIGKILL, as a crash would, and waits for it to exit.
    fn kill(&mut self);
}

/// Implements [`Server`] for a guard with a `server: Instance` field and an inherent
/// `url()`.
macro_rules! server_controls {
    ($guard:ident) => {
        impl $crate::Server for $guard {
            fn url(&self) -> String {
                $guard::url(self)
            }

            fn dir(&self) -> &std::path::Path {
                self.server.dir.path()
            }

            fn pid(&self) -> Option<u32> {
                self.server.daemon.pid()
            }

            fn stop(&mut self) {
                self.server.daemon.stop();
            }

            #[track_caller]
            fn restart(&mut self) {
                self.server.daemon.restart();
            }

            fn kill(&mut self) {
                self.server.daemon.kill();
            }
        }
    };
}
pub(crate) use server_controls;
