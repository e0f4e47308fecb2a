//! A real `redis-server` that writes every command to its append-only file before
//! answering, so a restart, even after SIGKILL, keeps every key a test saw written; and
//! replicas of one.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use crate::instance::{Instance, Kind};
use crate::net;
use crate::pki::{Pair, Pki};
use crate::program;
use crate::redis_secured::{Access, LEASE_USER};

/// What the guard needs to know to run a `redis-server` on a port of its own.
const KIND: Kind = Kind {
    name: "redis",
    program: "redis-server",
    // Redis answers SIGTERM by flushing its append-only file and exiting.
    stop_signal: libc::SIGTERM,
    ready: answers_ping,
};

/// A replica is ready once it has its primary's data and follows its writes.
const REPLICA: Kind = Kind {
    name: "redis-replica",
    ready: follows_its_primary,
    ..KIND
};

/// How long a replica may take to catch up with its primary.
const REPLICATION_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the readiness probe of a replica waits for it to acknowledge a write.
const ACK_WAIT_MS: u64 = 100;
/// How long a test's own request to a server may take: loopback answers in microseconds.
pub(crate) const QUERY_TIMEOUT: Duration = Duration::from_secs(2);

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
    /// The users and files of the secured form; `None` for an open server.
    access: Option<Access>,
}

impl Redis {
    /// Starts a `redis-server` and waits until it answers `PING`.
    ///
    /// # Panics
    ///
    /// If `redis-server` (Debian's `redis-server` package) is not on `PATH`, or the server
    /// does not answer within 30 seconds; the message quotes the end of its log.
    ///
    /// ```no_run
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
            move || redis_command(&program, port, &data, None)
        });
        Redis {
            server,
            access: None,
        }
    }

    /// Starts a `redis-server` in its secured form and waits until it answers: its port
    /// speaks TLS only, with a certificate for the loopback names signed by `pki`'s CA
    /// (client certificates signed by it are taken, not required); the open default user
    /// is off, and the lease backend's user [`LEASE_USER`](crate::LEASE_USER) may touch
    /// only snowmint's keys and run only the commands it uses
    /// ([`LEASE_ACL`](crate::LEASE_ACL)). [`url`](Self::url) is a `rediss://` URL with that
    /// user, its password and the CA. The kit's own questions ([`info`](Self::info),
    /// [`command`](Self::command)) go over a Unix socket as an admin user.
    ///
    /// # Panics
    ///
    /// As [`Redis::start`].
    ///
    /// ```no_run
    /// use snowmint_testkit::{Pki, Redis};
    ///
    /// let pki = Pki::new();
    /// let redis = Redis::start_secured(&pki);
    /// assert!(redis.url().starts_with(&format!("rediss://snowmint:{}@127.0.0.1:{}/0?tls_ca=", redis.password(), redis.port())));
    /// assert!(redis.info("server").contains("redis_version"));
    /// // Plain text to its port gets no answer.
    /// use std::io::{Read, Write};
    /// let mut plain = std::net::TcpStream::connect(("127.0.0.1", redis.port()))?;
    /// plain.write_all(b"PING\r\n")?;
    /// let mut reply = Vec::new();
    /// let _ = plain.read_to_end(&mut reply);
    /// assert!(!reply.starts_with(b"+PONG"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[must_use]
    #[track_caller]
    pub fn start_secured(pki: &Pki) -> Redis {
        Redis::start_secured_with(pki, &pki.server())
    }

    /// As [`start_secured`](Self::start_secured), serving `certificate` (one for more
    /// names than the loopback ones, say).
    ///
    /// # Panics
    ///
    /// As [`Redis::start`].
    #[must_use]
    #[track_caller]
    pub fn start_secured_with(pki: &Pki, certificate: &Pair) -> Redis {
        let program = program::find_on_path("redis-server", "redis-server");
        let mut made = None;
        let server = Instance::start_probed(&KIND, |port, dir| {
            let data = dir.join("data");
            fs::create_dir(&data)
                .unwrap_or_else(|err| panic!("cannot create {}: {err}", data.display()));
            let (access, config) = Access::new(dir, pki, port);
            access.set_certificate(certificate);
            let probe = Access {
                password: access.password.clone(),
                admin: access.admin.clone(),
                socket: access.socket.clone(),
                tls: access.tls.clone(),
            };
            made = Some(access);
            let program = program.clone();
            let command = move || {
                let mut command = Command::new(&program);
                command.arg(&config);
                add_options(&mut command, 0, &data, None);
                command
            };
            (command, move || probe.answers_ping())
        });
        Redis {
            server,
            access: made,
        }
    }

    /// A secured server's admin URL (`rediss://admin:PASSWORD@127.0.0.1:PORT/0`, every
    /// right) and its CA, for a test's own reads over TLS; `None` for an open server.
    #[must_use]
    pub fn admin_url(&self) -> Option<(String, PathBuf)> {
        let access = self.access.as_ref()?;
        let url = format!(
            "rediss://{}:{}@127.0.0.1:{}/0",
            crate::redis_secured::ADMIN,
            access.admin,
            self.server.port
        );
        Some((url, access.ca()))
    }

    /// The lease backend user's password in a secured server (see
    /// [`start_secured`](Self::start_secured)).
    ///
    /// # Panics
    ///
    /// If the server is not a secured one.
    #[must_use]
    pub fn password(&self) -> &str {
        &self.secured().password
    }

    /// The CA certificate that signs a secured server's certificate: a copy in the
    /// server's directory, there as long as the guard.
    ///
    /// # Panics
    ///
    /// If the server is not a secured one.
    #[must_use]
    pub fn ca(&self) -> PathBuf {
        self.secured().ca()
    }

    /// Gives a secured server `pair` as its certificate from its next start on: a
    /// [`restart`](crate::Server::restart) serves it (an expired one, say), and drops
    /// every connection, so clients meet it at their next handshake.
    ///
    /// # Panics
    ///
    /// If the server is not a secured one, or the files cannot be copied.
    pub fn set_certificate(&self, pair: &Pair) {
        self.secured().set_certificate(pair);
    }

    /// Runs `command` as the admin (a secured server) or the default user (an open one),
    /// on a connection of its own: to add a user, read a key, change the configuration.
    ///
    /// # Errors
    ///
    /// What the server answers, or a connection that fails.
    ///
    /// ```no_run
    /// let pki = snowmint_testkit::Pki::new();
    /// let redis = snowmint_testkit::Redis::start_secured(&pki);
    /// let ok: String = redis.command(redis::cmd("SET").arg("k").arg("v"))?;
    /// assert_eq!(ok, "OK");
    /// # Ok::<(), redis::RedisError>(())
    /// ```
    pub fn command<T: redis::FromRedisValue>(&self, command: &redis::Cmd) -> redis::RedisResult<T> {
        match &self.access {
            Some(access) => command.query(&mut access.connect()?),
            None => query(self.port(), command),
        }
    }

    #[track_caller]
    fn secured(&self) -> &Access {
        self.access
            .as_ref()
            .expect("a secured server (Redis::start_secured)")
    }

    /// Starts a replica of `primary` (`--replicaof`), persisting as [`Redis::start`] does,
    /// and waits until it has synchronised and follows the primary's writes. A restart
    /// starts it as a replica of `primary` again.
    ///
    /// # Panics
    ///
    /// As [`Redis::start`], or if it has not synchronised within 30 seconds.
    ///
    /// ```no_run
    /// use snowmint_testkit::Redis;
    ///
    /// let primary = Redis::start();
    /// let replica = Redis::start_replica(&primary);
    /// assert!(replica.info("replication").contains("role:slave"));
    /// assert!(primary.info("replication").contains("connected_slaves:1"));
    /// ```
    #[must_use]
    #[track_caller]
    pub fn start_replica(primary: &Redis) -> Redis {
        let program = program::find_on_path("redis-server", "redis-server");
        let of = primary.port();
        let server = Instance::start(&REPLICA, |port, dir| {
            let data = dir.join("data");
            fs::create_dir(&data)
                .unwrap_or_else(|err| panic!("cannot create {}: {err}", data.display()));
            let program = program.clone();
            move || redis_command(&program, port, &data, Some(of))
        });
        Redis {
            server,
            access: None,
        }
    }

    /// Starts a member of a [`RedisReplicated`](crate::RedisReplicated): a server run as
    /// the user `uid` (so that a cut can tell its traffic apart from everyone else's),
    /// started as a replica of the port in `replica_of` (none while it holds 0) on every
    /// start, and ready once it answers `PING`.
    #[track_caller]
    pub(crate) fn start_member(uid: u32, replica_of: Arc<AtomicU16>) -> Redis {
        let program = program::find_on_path("redis-server", "redis-server");
        let server = Instance::start(&KIND, |port, dir| {
            let data = dir.join("data");
            fs::create_dir(&data)
                .unwrap_or_else(|err| panic!("cannot create {}: {err}", data.display()));
            std::os::unix::fs::chown(&data, Some(uid), Some(uid)).unwrap_or_else(|err| {
                panic!("cannot give {} to user {uid}: {err}", data.display())
            });
            let (program, replica_of) = (program.clone(), replica_of.clone());
            move || {
                let primary = replica_of.load(Ordering::SeqCst);
                let mut command =
                    redis_command(&program, port, &data, (primary != 0).then_some(primary));
                command.uid(uid).gid(uid);
                command
            }
        });
        Redis {
            server,
            access: None,
        }
    }

    /// Waits until `replica` has every write this server has made so far (its replication
    /// offset has reached this server's).
    ///
    /// # Panics
    ///
    /// If it has not within 30 seconds.
    ///
    /// ```no_run
    /// use snowmint_testkit::Redis;
    ///
    /// let primary = Redis::start();
    /// let replica = Redis::start_replica(&primary);
    /// primary.wait_for(&replica);
    /// ```
    #[track_caller]
    pub fn wait_for(&self, replica: &Redis) {
        let offset = |redis: &Redis, field: &str| -> u64 {
            redis
                .info("replication")
                .lines()
                .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or(0)
        };
        let wanted = offset(self, "master_repl_offset");
        let deadline = Instant::now() + REPLICATION_TIMEOUT;
        loop {
            let reached = offset(replica, "slave_repl_offset");
            if reached >= wanted {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "replica on port {} reached offset {reached} of {wanted} in {REPLICATION_TIMEOUT:?}",
                replica.port()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// What `INFO section` answers (`replication`, `server`, ...).
    ///
    /// # Panics
    ///
    /// If the server does not answer within two seconds.
    ///
    /// ```no_run
    /// let redis = snowmint_testkit::Redis::start();
    /// assert!(redis.info("replication").contains("role:master"));
    /// ```
    #[must_use]
    #[track_caller]
    pub fn info(&self, section: &str) -> String {
        self.command(redis::cmd("INFO").arg(section))
            .unwrap_or_else(|err| panic!("INFO {section} on port {}: {err}", self.port()))
    }

    /// The port the server listens on, on 127.0.0.1; the same across restarts.
    ///
    /// ```no_run
    /// let redis = snowmint_testkit::Redis::start();
    /// assert_eq!(redis.url(), format!("redis://127.0.0.1:{}", redis.port()));
    /// ```
    #[must_use]
    pub fn port(&self) -> u16 {
        self.server.port
    }

    /// The server's address as a `redis://` URL, the form `snowmint serve --lease` takes;
    /// for a secured server, `rediss://` with the lease user, its password and the CA
    /// (`?tls_ca=`).
    ///
    /// ```no_run
    /// let redis = snowmint_testkit::Redis::start();
    /// assert_eq!(redis.url(), format!("redis://127.0.0.1:{}", redis.port()));
    /// ```
    #[must_use]
    pub fn url(&self) -> String {
        match &self.access {
            Some(access) => format!(
                "rediss://{LEASE_USER}:{}@127.0.0.1:{}/0?tls_ca={}",
                access.password,
                self.server.port,
                access.ca().display()
            ),
            None => format!("redis://127.0.0.1:{}", self.server.port),
        }
    }
}

fn redis_command(program: &Path, port: u16, data: &Path, replica_of: Option<u16>) -> Command {
    let mut command = Command::new(program);
    add_options(&mut command, port, data, replica_of);
    command
}

/// The options of every start: the plain port (0: none), persistence, replication.
fn add_options(command: &mut Command, port: u16, data: &Path, replica_of: Option<u16>) {
    command
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .arg("--dir")
        .arg(data)
        .args(["--appendonly", "yes", "--appendfsync", "always"])
        // No snapshots: the append-only file alone is the data.
        .args(["--save", ""])
        // A replica's first sync starts at once, not after the 5 s Redis waits by default
        // for more replicas to share it.
        .args(["--repl-diskless-sync-delay", "0"])
        .args(["--daemonize", "no"]);
    if let Some(primary) = replica_of {
        command.args(["--replicaof", "127.0.0.1", &primary.to_string()]);
    }
}

/// Sends `command` to the server on `127.0.0.1:port` on a connection of its own.
pub(crate) fn query<T: redis::FromRedisValue>(
    port: u16,
    command: &redis::Cmd,
) -> redis::RedisResult<T> {
    let client = redis::Client::open(("127.0.0.1", port))?;
    let mut connection = client.get_connection_with_timeout(QUERY_TIMEOUT)?;
    connection.set_read_timeout(Some(QUERY_TIMEOUT))?;
    connection.set_write_timeout(Some(QUERY_TIMEOUT))?;
    command.query(&mut connection)
}

/// Whether a replica has loaded its primary's data and acknowledges its writes, as `WAIT`
/// counts them: its primary lists it `online` at once, but streams it nothing until its
/// first acknowledgement, and until then a `WAIT` can time out. And whether the
/// append-only file it writes after loading is done: until then it refuses to shut down
/// ("Writing initial AOF, can't exit"), and a stop would wait for SIGKILL.
pub(crate) fn follows_its_primary(port: u16) -> bool {
    let info = |port: u16, section: &str| {
        query::<String>(port, redis::cmd("INFO").arg(section)).unwrap_or_default()
    };
    if !answers_ping(port) {
        return false;
    }
    let replication = info(port, "replication");
    let primary = replication
        .lines()
        .find_map(|line| line.strip_prefix("master_port:"))
        .and_then(|n| n.trim().parse().ok());
    let persistence = info(port, "persistence");
    replication.contains("master_link_status:up")
        && primary.is_some_and(acknowledged)
        && persistence.contains("aof_rewrite_in_progress:0")
        && persistence.contains("aof_rewrite_scheduled:0")
}

/// Whether every replica of the server on `port` acknowledges a write at once: a `PUBLISH`,
/// which reaches the replicas without touching the keys, then `WAIT` for all of them.
fn acknowledged(port: u16) -> bool {
    let replicas = query::<String>(port, redis::cmd("INFO").arg("replication"))
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("connected_slaves:"))
        .and_then(|n| n.trim().parse::<u32>().ok())
        .unwrap_or(0);
    let probe = || -> redis::RedisResult<u32> {
        let client = redis::Client::open(("127.0.0.1", port))?;
        let mut connection = client.get_connection_with_timeout(QUERY_TIMEOUT)?;
        connection.set_read_timeout(Some(QUERY_TIMEOUT))?;
        let (_, acked): (u32, u32) = redis::pipe()
            .cmd("PUBLISH")
            .arg("snowmint-testkit")
            .arg("probe")
            .cmd("WAIT")
            .arg(replicas)
            .arg(ACK_WAIT_MS)
            .query(&mut connection)?;
        Ok(acked)
    };
    replicas > 0 && probe().is_ok_and(|acked| acked >= replicas)
}

/// Whether Redis answers `PING` with `PONG`; while it loads its data it answers `-LOADING`.
pub(crate) fn answers_ping(port: u16) -> bool {
    let Ok(mut stream) = net::connect(port) else {
        return false;
    };
    if stream.write_all(b"*1\r\n$4\r\nPING\r\n").is_err() {
        return false;
    }
    let mut reply = String::new();
    BufReader::new(stream).read_line(&mut reply).is_ok() && reply == "+PONG\r\n"
}

crate::server_controls!(Redis, Redis::admin_url);
