//! Real registry servers for snowmint's integration tests: [`Redis`] (and its replicas,
//! watched by [`Sentinels`]), [`Etcd`], [`Postgres`] (and [`PgBouncer`] in front of one) and
//! [`ZooKeeper`], each a process of its own on a free 127.0.0.1 port with its data in a
//! fresh temporary directory, owned by a guard that stops it and removes the directory
//! when dropped.
//!
//! - `start()` returns once the server really answers: Redis `PING`s back, etcd reports
//!   itself healthy, PostgreSQL accepts a session, ZooKeeper answers `srvr` as a
//!   standalone server. The wait is bounded (30 seconds).
//! - `stop()` shuts it down cleanly (SIGKILL after five seconds), `kill()` sends SIGKILL
//!   as a crash would, and `restart()` brings it back on the same port with the same data,
//!   for tests in which the registry goes away and comes back.
//! - `Etcd::start_secured` and `ZooKeeper::start_secured` start them in their production
//!   form, with certificates from a [`Pki`]: etcd over https only, with client certificates
//!   and etcd's users and roles; ZooKeeper with a TLS port and a digest user.
//! - A test that panics drops its guards, which stop their servers; a test process that
//!   dies without unwinding takes them with it (they get SIGKILL when it dies).
//!
//! The servers are the Debian packages `redis-server`, `etcd-server`, `postgresql`,
//! `pgbouncer` and `zookeeper` (a Java server, run with `default-jre-headless`), which
//! `scripts/setup` installs. A missing server is a panic naming its package, never a
//! skip: in CI a registry test that cannot run must fail. When the tests run as root, as
//! CI does, PostgreSQL and PgBouncer run as the `postgres` user, since they refuse to run
//! as root.
//!
//! The API blocks; from an async test, start servers before the first `.await` or in
//! `spawn_blocking`. On an idle machine a start takes about 25 ms for Redis, 0.1 s for
//! etcd, 0.4 s for ZooKeeper (the JVM starting) and 1.5 s for PostgreSQL (`initdb` makes a
//! cluster); a restart, 0.1 to 0.2 s, or ZooKeeper's 0.4 s again.
//!
//! ```no_run
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

mod cluster;
mod cut;
mod etcd;
mod etcd_cluster;
mod etcd_secured;
mod expiring;
mod instance;
mod net;
mod pgbouncer;
mod pki;
mod postgres;
mod postgres_replicated;
mod postgres_secured;
mod process;
mod program;
mod redis;
mod redis_replicated;
mod redis_secured;
mod sentinel;
mod serve;
mod wait;
mod zookeeper;
mod zookeeper_ensemble;
mod zookeeper_secured;

pub use cluster::Cluster;
pub use etcd::Etcd;
pub use etcd_cluster::EtcdCluster;
pub use etcd_secured::{SNOWMINT_PREFIX, SNOWMINT_USER};
pub use expiring::{ExpiringCertificate, ServesCertificate};
pub use net::free_port;
pub use pgbouncer::PgBouncer;
pub use pki::{LOOPBACK_NAMES, Pair, Pki, Validity, secured_url};
pub use postgres::Postgres;
pub use postgres_replicated::PostgresReplicated;
pub use postgres_secured::{CERT_ROLE, LEASE_ROLE};
pub use redis::Redis;
pub use redis_replicated::RedisReplicated;
pub use redis_secured::{DEFAULT_USER_ACL, LEASE_ACL, LEASE_USER};
pub use sentinel::{PRIMARY_NAME, Sentinels};
pub use serve::{Addresses, LeaseTimes, ServeCommand, Serving};
pub use wait::{Frozen, eventually, eventually_async};
pub use zookeeper::ZooKeeper;
pub use zookeeper_ensemble::ZooKeeperEnsemble;
pub use zookeeper_secured::ZOOKEEPER_USER;

/// What every server guard does, whichever server it runs: for tests written once and
/// run against each registry.
///
/// ```no_run
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

    /// For a test's own reads of a secured server, whose [`Server::url`] has only a
    /// client's rights: a URL with every right (over TLS), and the CA file its
    /// certificate is checked against. `None` for the others: `url` has every right.
    fn admin(&self) -> Option<(String, std::path::PathBuf)> {
        None
    }

    /// Stops it cleanly, copies its data directory into `to` (a cold backup: new files,
    /// as every backup tool writes), and starts it again.
    ///
    /// # Panics
    ///
    /// When the data cannot be copied.
    #[track_caller]
    fn back_up(&mut self, to: &std::path::Path) {
        self.stop();
        copy_tree(&self.dir().join("data"), to);
        self.restart();
    }

    /// Kills it, puts the data of a [`Server::back_up`] in place of its own, and starts
    /// it again: a restore that loses every write made since the backup.
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
    /// let backup = tempfile::tempdir()?;
    /// redis.back_up(backup.path());
    /// send(&redis, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n")?;
    /// redis.restore(backup.path());
    /// assert_eq!(send(&redis, b"*2\r\n$6\r\nEXISTS\r\n$1\r\nk\r\n")?, ":0\r\n");
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Panics
    ///
    /// When the data cannot be replaced.
    #[track_caller]
    fn restore(&mut self, from: &std::path::Path) {
        self.kill();
        let data = self.dir().join("data");
        std::fs::remove_dir_all(&data)
            .unwrap_or_else(|err| panic!("cannot remove {}: {err}", data.display()));
        copy_tree(from, &data);
        self.restart();
    }
}

/// Copies the directory `from` into `to`, file by file, keeping each file's mode and
/// owner (a server may run as a user of its own, such as `postgres`).
#[track_caller]
fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    use std::os::unix::fs::MetadataExt;
    let failed = |what: &str, path: &std::path::Path, err: std::io::Error| -> ! {
        panic!("cannot {what} {}: {err}", path.display())
    };
    let keep_owner = |source: &std::fs::Metadata, target: &std::path::Path| {
        std::os::unix::fs::chown(target, Some(source.uid()), Some(source.gid()))
            .unwrap_or_else(|err| failed("set the owner of", target, err));
    };
    std::fs::create_dir_all(to).unwrap_or_else(|err| failed("create", to, err));
    let meta = std::fs::metadata(from).unwrap_or_else(|err| failed("read", from, err));
    std::fs::set_permissions(to, meta.permissions())
        .unwrap_or_else(|err| failed("set the mode of", to, err));
    keep_owner(&meta, to);
    for entry in std::fs::read_dir(from).unwrap_or_else(|err| failed("list", from, err)) {
        let entry = entry.unwrap_or_else(|err| failed("list", from, err));
        let (path, target) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            copy_tree(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap_or_else(|err| failed("copy", &path, err));
            let meta = entry
                .metadata()
                .unwrap_or_else(|err| failed("read", &path, err));
            keep_owner(&meta, &target);
        }
    }
}

/// Implements [`Server`] for a guard with a `server: Instance` field and an inherent
/// `url()`.
macro_rules! server_controls {
    ($guard:ident) => {
        $crate::server_controls!($guard, |_guard: &$guard| None);
    };
    ($guard:ident, $admin:expr) => {
        impl $crate::Server for $guard {
            fn admin(&self) -> Option<(String, std::path::PathBuf)> {
                ($admin)(self)
            }

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
