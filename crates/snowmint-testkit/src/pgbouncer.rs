//! A real PgBouncer in transaction mode in front of a [`Postgres`] of its own: how a fleet
//! shares a few server connections among a thousand clients.

use std::fs;
use std::os::unix::fs::chown;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::instance::{Instance, Kind};
use crate::postgres::{self, Account, DATABASE, Postgres, SUPERUSER};
use crate::program::{self, Missing};

/// How long PgBouncer turns clients away after it failed to log in to PostgreSQL (15 s by
/// default): a test that stops the server behind it sees it used again a second after it
/// is back.
const LOGIN_RETRY_S: u32 = 1;
/// Where Debian installs the program: off a user's `PATH`.
const DEBIAN_PROGRAM: &str = "/usr/sbin/pgbouncer";

/// What the guard needs to know to run `pgbouncer` on a port of its own.
const KIND: Kind = Kind {
    name: "pgbouncer",
    program: "pgbouncer",
    // SIGINT would wait for every client to go; SIGTERM ends them, as a crash of the
    // pool would.
    stop_signal: libc::SIGTERM,
    // A startup answered with "ready for query": the pool reached the server behind it.
    ready: postgres::accepts_sessions,
};

/// PgBouncer on a free loopback port, pooling in transaction mode at most `pool` server
/// connections to a PostgreSQL server started with it; both stop when dropped.
///
/// In transaction mode a client holds a server connection only for one transaction, or
/// one statement outside of one, and its next may run on another: named prepared
/// statements and session settings do not follow it (PgBouncer 1.18, Debian's, carries
/// none). Clients connect as the superuser, with no password, to the `postgres` database.
///
/// ```no_run
/// use snowmint_testkit::{PgBouncer, Server};
///
/// let pool = PgBouncer::start(4);
/// assert_eq!(
///     pool.url(),
///     format!("postgres://postgres@127.0.0.1:{}/postgres", pool.port())
/// );
/// assert_ne!(pool.port(), pool.postgres().port());
/// ```
pub struct PgBouncer {
    // Declared first: the pool stops before the server behind it.
    server: Instance,
    postgres: Postgres,
    pool: u32,
}

impl PgBouncer {
    /// Starts PostgreSQL, then PgBouncer in front of it with at most `pool` server
    /// connections, and waits until a client's startup reaches the server through it.
    ///
    /// # Panics
    ///
    /// If PgBouncer (Debian's `pgbouncer` package) or PostgreSQL is not installed, or if
    /// either does not answer within 30 seconds; the message quotes the end of its log.
    #[must_use]
    #[track_caller]
    pub fn start(pool: u32) -> PgBouncer {
        let program = match find() {
            Ok(program) => program,
            Err(missing) => panic!("{missing}"),
        };
        let postgres = Postgres::start();
        let account = postgres::run_as();
        let behind = postgres.port();
        let server = Instance::start(&KIND, |port, dir| {
            configure(&program, account, port, dir, behind, pool)
        });
        PgBouncer {
            server,
            postgres,
            pool,
        }
    }

    /// The port PgBouncer listens on, on 127.0.0.1; the same across restarts.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.server.port
    }

    /// The most server connections it opens.
    #[must_use]
    pub fn pool(&self) -> u32 {
        self.pool
    }

    /// The PostgreSQL server behind it, for a test's own look at its sessions.
    #[must_use]
    pub fn postgres(&self) -> &Postgres {
        &self.postgres
    }

    /// The PostgreSQL server behind it, to stop, freeze or restart it (as the guard's
    /// [`Server`](crate::Server) methods do).
    #[must_use]
    pub fn postgres_mut(&mut self) -> &mut Postgres {
        &mut self.postgres
    }

    /// PgBouncer's own process, to freeze or kill the pool itself.
    #[must_use]
    pub fn pool_pid(&self) -> Option<u32> {
        self.server.daemon.pid()
    }

    /// PgBouncer as a `postgres://` URL for the superuser and the `postgres` database.
    #[must_use]
    pub fn url(&self) -> String {
        format!(
            "postgres://{SUPERUSER}@127.0.0.1:{}/{DATABASE}",
            self.server.port
        )
    }
}

/// The program: on `PATH`, or where Debian puts it.
fn find() -> Result<PathBuf, Missing> {
    program::search_path("pgbouncer")
        .or_else(|| {
            let debian = PathBuf::from(DEBIAN_PROGRAM);
            program::is_executable(&debian).then_some(debian)
        })
        .ok_or(Missing {
            program: "pgbouncer",
            package: "pgbouncer",
        })
}

/// Writes PgBouncer's configuration into `dir` (owned by `account`, whom it runs as: it
/// refuses to run as root) and answers how to start it.
fn configure(
    program: &Path,
    account: Option<Account>,
    port: u16,
    dir: &Path,
    behind: u16,
    pool: u32,
) -> impl Fn() -> Command + Send + Sync + use<> {
    let users = dir.join("userlist.txt");
    let ini = dir.join("pgbouncer.ini");
    // `trust` still asks that the user be listed.
    write(&users, &format!("\"{SUPERUSER}\" \"\"\n"));
    write(
        &ini,
        &format!(
            "[databases]\n\
             {DATABASE} = host=127.0.0.1 port={behind} dbname={DATABASE}\n\
             [pgbouncer]\n\
             listen_addr = 127.0.0.1\n\
             listen_port = {port}\n\
             unix_socket_dir =\n\
             auth_type = trust\n\
             auth_file = {users}\n\
             pool_mode = transaction\n\
             default_pool_size = {pool}\n\
             max_db_connections = {pool}\n\
             max_client_conn = 10000\n\
             server_login_retry = {LOGIN_RETRY_S}\n\
             ignore_startup_parameters = extra_float_digits\n",
            users = users.display(),
        ),
    );
    if let Some(Account { uid, gid }) = account {
        for path in [dir, users.as_path(), ini.as_path()] {
            chown(path, Some(uid), Some(gid)).unwrap_or_else(|err| {
                panic!("cannot give {} to the postgres user: {err}", path.display())
            });
        }
    }
    let (program, dir) = (program.to_path_buf(), dir.to_path_buf());
    move || {
        let mut command = Command::new(&program);
        command.arg(&ini);
        postgres::as_account(&mut command, account, &dir);
        command
    }
}

fn write(path: &Path, text: &str) {
    fs::write(path, text).unwrap_or_else(|err| panic!("cannot write {}: {err}", path.display()));
}

/// The registry behind the pool is PostgreSQL: stopping, killing, freezing (by its pid),
/// backing up and restoring act on it, while PgBouncer stays up in front of it, as a pool
/// does in production while its database restarts. The URL is the pool's.
impl crate::Server for PgBouncer {
    fn url(&self) -> String {
        PgBouncer::url(self)
    }

    fn dir(&self) -> &Path {
        self.postgres.dir()
    }

    fn pid(&self) -> Option<u32> {
        self.postgres.pid()
    }

    fn stop(&mut self) {
        self.postgres.stop();
    }

    #[track_caller]
    fn restart(&mut self) {
        self.postgres.restart();
    }

    fn kill(&mut self) {
        self.postgres.kill();
    }
}
