//! A real PostgreSQL server in a fresh cluster of its own, run as the `postgres` user
//! when the tests run as root, because PostgreSQL refuses to run as root.

use std::ffi::CString;
use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::chown;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::instance::{Instance, Kind};
use crate::net;
use crate::pki::{Pair, Pki};
use crate::postgres_secured::{self, Access, LEASE_ROLE};
use crate::program::{self, Missing};

/// The superuser `initdb` creates, and the user of [`Postgres::url`].
pub(crate) const SUPERUSER: &str = "postgres";
/// The database every cluster starts with.
pub(crate) const DATABASE: &str = "postgres";
/// Where Debian installs each major version's programs, side by side and off `PATH`.
const DEBIAN_VERSIONS: &str = "/usr/lib/postgresql";
/// Who may connect: anyone on the server's private socket directory or on 127.0.0.1,
/// without a password. The server listens nowhere else.
const PG_HBA: &str = "local all all trust\nhost all all 127.0.0.1/32 trust\n";

/// What the guard needs to know to run a `postgres` server on a port of its own.
const KIND: Kind = Kind {
    name: "postgres",
    program: "postgres",
    // SIGINT is the fast shutdown: it ends open sessions. SIGTERM would wait for every
    // client to disconnect.
    stop_signal: libc::SIGINT,
    ready: accepts_sessions,
};

/// A PostgreSQL server with a cluster of its own on a free loopback port, stopped when
/// dropped.
///
/// The cluster is made by `initdb` in a temporary directory that outlives restarts and is
/// removed on drop. It trusts connections from 127.0.0.1, so [`url`](Self::url) needs no
/// password. Durability is off (`-F`, no fsync): a restart, even after SIGKILL of the
/// server, keeps every committed row, since the kernel still holds the files; only a
/// machine crash would lose them.
///
/// When the tests run as root, `initdb` and `postgres` run as the `postgres` user (Debian's
/// `postgresql` package creates it), which owns the temporary directory.
///
/// `initdb` makes most of a start's second or so, so the methods' examples are compiled
/// but not run; this one and [`start`](Self::start)'s run, and `tests/services.rs` runs
/// every method.
///
/// ```no_run
/// use std::net::TcpStream;
/// use snowmint_testkit::{Postgres, Server};
///
/// let mut postgres = Postgres::start();
/// assert_eq!(
///     postgres.url(),
///     format!("postgres://postgres@127.0.0.1:{}/postgres", postgres.port())
/// );
/// postgres.kill();
/// postgres.restart(); // crash recovery, same port, same cluster
/// TcpStream::connect(("127.0.0.1", postgres.port()))?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct Postgres {
    server: Instance,
    /// The roles and files of the secured form, and where `psql` is; `None` for an open
    /// server.
    access: Option<(Access, PathBuf)>,
}

/// The user and group the server runs as.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Account {
    pub(crate) uid: u32,
    pub(crate) gid: u32,
}

impl Postgres {
    /// Makes a cluster with `initdb`, starts `postgres` on it, and waits until it accepts
    /// a session as the superuser.
    ///
    /// # Panics
    ///
    /// If PostgreSQL (Debian's `postgresql` package) is not installed, if the tests run as
    /// root and there is no `postgres` user, if `initdb` fails, or if the server does not
    /// accept a session within 30 seconds; the message quotes the end of its log.
    ///
    /// ```no_run
    /// use std::net::TcpStream;
    ///
    /// let postgres = snowmint_testkit::Postgres::start();
    /// TcpStream::connect(("127.0.0.1", postgres.port()))?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[must_use]
    #[track_caller]
    pub fn start() -> Postgres {
        let bin = match bin_dir() {
            Ok(bin) => bin,
            Err(missing) => panic!("{missing}"),
        };
        let account = run_as();
        let server = Instance::start(&KIND, |port, dir| cluster(&bin, account, port, dir));
        Postgres {
            server,
            access: None,
        }
    }

    /// Starts PostgreSQL in its secured form and waits until it accepts sessions: `ssl =
    /// on` with a certificate for the loopback names signed by `pki`'s CA (which also
    /// signs the client certificates it takes); over TCP only TLS (`hostssl`), with
    /// SCRAM passwords; the lease role [`LEASE_ROLE`](crate::LEASE_ROLE), not a superuser,
    /// owning the database of the same name, where the backend creates its table; and
    /// [`CERT_ROLE`](crate::CERT_ROLE), which logs in with a client certificate
    /// ([`Pki::client`] with its name) and owns a database of its name too.
    /// [`url`](Self::url) is the lease role's URL with `sslmode=verify-full`.
    ///
    /// # Panics
    ///
    /// As [`Postgres::start`], or if the roles cannot be made.
    ///
    /// ```no_run
    /// let pki = snowmint_testkit::Pki::new();
    /// let postgres = snowmint_testkit::Postgres::start_secured(&pki);
    /// assert!(postgres.url().starts_with("postgres://snowmint:"));
    /// assert!(postgres.url().contains("sslmode=verify-full&sslrootcert="));
    /// ```
    #[must_use]
    #[track_caller]
    pub fn start_secured(pki: &Pki) -> Postgres {
        let bin = match bin_dir() {
            Ok(bin) => bin,
            Err(missing) => panic!("{missing}"),
        };
        let account = run_as();
        let mut made = None;
        let server = Instance::start_probed(&KIND, |port, dir| {
            let command = cluster(&bin, account, port, dir);
            made = Some(Access::new(dir, pki, account));
            let socket = dir.join(format!(".s.PGSQL.{port}"));
            let probe = move || {
                std::os::unix::net::UnixStream::connect(&socket).is_ok_and(|stream| {
                    let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(1)));
                    answers_startup(stream)
                })
            };
            (command, probe)
        });
        let access = made.expect("the secured cluster was made");
        access.create_roles(&bin, server.dir.path(), server.port);
        Postgres {
            server,
            access: Some((access, bin)),
        }
    }

    /// The lease role's password in a secured server.
    ///
    /// # Panics
    ///
    /// If the server is not a secured one.
    #[must_use]
    pub fn password(&self) -> &str {
        &self.secured().0.password
    }

    /// The CA certificate that signs a secured server's certificate: a copy in the
    /// server's directory, there as long as the guard.
    ///
    /// # Panics
    ///
    /// If the server is not a secured one.
    #[must_use]
    pub fn ca(&self) -> PathBuf {
        self.secured().0.ca()
    }

    /// Gives a secured server `pair` as its certificate from its next start on: a
    /// [`restart`](crate::Server::restart) serves it, and ends every session, so clients
    /// meet it at their next handshake.
    ///
    /// # Panics
    ///
    /// If the server is not a secured one, or the files cannot be copied.
    pub fn set_certificate(&self, pair: &Pair) {
        self.secured().0.set_certificate(pair);
    }

    /// Runs `statement` as the superuser over the private socket of a secured server
    /// (to add a role, say); answers what `psql` prints, unaligned and without headers.
    ///
    /// # Errors
    ///
    /// What `psql` says when the statement fails.
    ///
    /// # Panics
    ///
    /// If the server is not a secured one.
    pub fn sql(&self, statement: &str) -> Result<String, String> {
        let (_, bin) = self.secured();
        postgres_secured::sql(bin, self.server.dir.path(), self.server.port, statement)
    }

    #[track_caller]
    fn secured(&self) -> &(Access, PathBuf) {
        self.access
            .as_ref()
            .expect("a secured server (Postgres::start_secured)")
    }

    /// The port the server listens on, on 127.0.0.1; the same across restarts.
    ///
    /// ```no_run
    /// let postgres = snowmint_testkit::Postgres::start();
    /// assert!(postgres.url().contains(&format!("@127.0.0.1:{}/", postgres.port())));
    /// ```
    #[must_use]
    pub fn port(&self) -> u16 {
        self.server.port
    }

    /// The superuser's name, `postgres`, who connects without a password.
    ///
    /// ```no_run
    /// let postgres = snowmint_testkit::Postgres::start();
    /// assert!(postgres.url().starts_with(&format!("postgres://{}@", postgres.user())));
    /// ```
    #[must_use]
    pub fn user(&self) -> &'static str {
        SUPERUSER
    }

    /// The server as a `postgres://` URL for the superuser and the `postgres` database,
    /// the form `snowmint serve --lease` and `tokio-postgres` take; for a secured server,
    /// the lease role's, with its password, `sslmode=verify-full` and the CA.
    ///
    /// ```no_run
    /// let postgres = snowmint_testkit::Postgres::start();
    /// assert_eq!(
    ///     postgres.url(),
    ///     format!("postgres://postgres@127.0.0.1:{}/postgres", postgres.port())
    /// );
    /// ```
    #[must_use]
    pub fn url(&self) -> String {
        match &self.access {
            Some((access, _)) => format!(
                "postgres://{LEASE_ROLE}:{}@127.0.0.1:{}/{LEASE_ROLE}?sslmode=verify-full&sslrootcert={}",
                access.password,
                self.server.port,
                access.ca().display()
            ),
            None => format!(
                "postgres://{SUPERUSER}@127.0.0.1:{}/{DATABASE}",
                self.server.port
            ),
        }
    }
}

/// The directory holding `initdb` and `postgres`: the newest of Debian's versions, or
/// the one on `PATH` elsewhere.
pub(crate) fn bin_dir() -> Result<PathBuf, Missing> {
    let newest = fs::read_dir(DEBIAN_VERSIONS)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let major: u32 = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            let complete = ["initdb", "postgres"]
                .iter()
                .all(|p| program::is_executable(&bin.join(p)));
            complete.then_some((major, bin))
        })
        .max_by_key(|(major, _)| *major);
    if let Some((_, bin)) = newest {
        return Ok(bin);
    }
    program::search_path("initdb")
        .and_then(|initdb| Some(initdb.parent()?.to_path_buf()))
        .ok_or(Missing {
            program: "initdb",
            package: "postgresql",
        })
}

/// Who runs `initdb` and `postgres`: the `postgres` user when the tests run as root,
/// since PostgreSQL refuses to run as root; otherwise the tests' own user.
#[track_caller]
pub(crate) fn run_as() -> Option<Account> {
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let Some(account) = lookup(SUPERUSER) else {
        panic!(
            "the tests run as root and PostgreSQL refuses to, but there is no {SUPERUSER} user \
             to run it as; Debian's postgresql package creates it (scripts/setup installs it)"
        )
    };
    Some(account)
}

/// The user and primary group of the account `name`.
fn lookup(name: &str) -> Option<Account> {
    /// Room for the strings of one passwd entry; glibc's own suggestion is 1 KiB.
    const ENTRY_BUFFER: usize = 16 * 1024;
    let name = CString::new(name).ok()?;
    // SAFETY: passwd is plain old data, for which all zeroes is a valid value.
    let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
    let mut buffer = vec![0 as libc::c_char; ENTRY_BUFFER];
    let mut found = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call, and the buffer's length is its own;
    // the reentrant form shares no static state with other threads.
    let status = unsafe {
        libc::getpwnam_r(
            name.as_ptr(),
            &raw mut entry,
            buffer.as_mut_ptr(),
            buffer.len(),
            &raw mut found,
        )
    };
    (status == 0 && !found.is_null()).then_some(Account {
        uid: entry.pw_uid,
        gid: entry.pw_gid,
    })
}

/// Makes a cluster in `dir`, owned by `account` if one is given, and answers how to start
/// `postgres` on it at `port`.
fn cluster(
    bin: &Path,
    account: Option<Account>,
    port: u16,
    dir: &Path,
) -> impl Fn() -> Command + Send + Sync + use<> {
    if let Some(Account { uid, gid }) = account {
        chown(dir, Some(uid), Some(gid)).unwrap_or_else(|err| {
            panic!("cannot give {} to the postgres user: {err}", dir.display())
        });
    }
    let data = dir.join("data");
    initdb(bin, &data, dir, account);
    let hba = data.join("pg_hba.conf");
    fs::write(&hba, PG_HBA).unwrap_or_else(|err| panic!("cannot write {}: {err}", hba.display()));

    let program = bin.join("postgres");
    let sockets = dir.to_path_buf();
    move || {
        let mut command = Command::new(&program);
        command
            .arg("-D")
            .arg(&data)
            .args(["-p", &port.to_string()])
            .args(["-c", "listen_addresses=127.0.0.1"])
            // Its Unix socket goes in the private directory, not /var/run/postgresql.
            .arg("-k")
            .arg(&sockets)
            // No fsync: see the type's documentation.
            .arg("-F");
        as_account(&mut command, account, &sockets);
        command
    }
}

/// Makes `command` run as `account`, if one is given, from `dir`, which it owns: a
/// program started by root may otherwise sit in a directory its user cannot read.
pub(crate) fn as_account(command: &mut Command, account: Option<Account>, dir: &Path) {
    command.current_dir(dir);
    if let Some(Account { uid, gid }) = account {
        command.uid(uid).gid(gid);
    }
}

/// Makes a cluster in `data` whose superuser needs no password.
pub(crate) fn initdb(bin: &Path, data: &Path, dir: &Path, account: Option<Account>) {
    let mut command = Command::new(bin.join("initdb"));
    command
        .arg("-D")
        .arg(data)
        .args(["-U", SUPERUSER, "-A", "trust", "-E", "UTF8", "--locale=C"])
        // Not syncing the new files to disk saves most of initdb's time.
        .arg("--no-sync");
    as_account(&mut command, account, dir);
    let output = command
        .output()
        .unwrap_or_else(|err| panic!("could not run {}: {err}", bin.join("initdb").display()));
    assert!(
        output.status.success(),
        "initdb failed ({}):\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Whether the server accepts a session: a startup message for the superuser is answered
/// with "ready for query", not "the database system is starting up".
pub(crate) fn accepts_sessions(port: u16) -> bool {
    let Ok(stream) = net::connect(port) else {
        return false;
    };
    answers_startup(stream)
}

/// Whether the server on `stream` answers a startup message for the superuser with "ready
/// for query".
fn answers_startup(mut stream: impl Read + Write) -> bool {
    /// Protocol version 3.0, as the startup message spells it.
    const PROTOCOL_3_0: u32 = 3 << 16;
    /// The most a probe reads of one message; startup answers are a few dozen bytes.
    const LARGEST_MESSAGE: usize = 64 * 1024;
    /// The Terminate message: type 'X' and its own length, 4.
    const TERMINATE: [u8; 5] = [b'X', 0, 0, 0, 4];

    let mut body = PROTOCOL_3_0.to_be_bytes().to_vec();
    for field in ["user", SUPERUSER, "database", DATABASE] {
        body.extend_from_slice(field.as_bytes());
        body.push(0);
    }
    body.push(0);
    let length = u32::try_from(body.len() + 4).expect("a startup message is small");
    let mut startup = length.to_be_bytes().to_vec();
    startup.append(&mut body);
    if stream.write_all(&startup).is_err() {
        return false;
    }
    loop {
        let mut header = [0; 5];
        if stream.read_exact(&mut header).is_err() {
            return false;
        }
        let [kind, length @ ..] = header;
        let Some(length) = (u32::from_be_bytes(length) as usize).checked_sub(4) else {
            return false;
        };
        if length > LARGEST_MESSAGE {
            return false;
        }
        let mut message = vec![0; length];
        if stream.read_exact(&mut message).is_err() {
            return false;
        }
        match kind {
            b'Z' => {
                let _ = stream.write_all(&TERMINATE);
                return true;
            }
            // AuthenticationOk; any other 'R' asks for a password.
            b'R' if message == [0, 0, 0, 0] => {}
            b'R' | b'E' => return false,
            // ParameterStatus, BackendKeyData, NoticeResponse: read on.
            _ => {}
        }
    }
}

crate::server_controls!(Postgres);
