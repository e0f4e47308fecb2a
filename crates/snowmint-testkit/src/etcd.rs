//! A real single-member `etcd` cluster, whose data directory outlives restarts.

use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;

use crate::etcd_secured::{Secured, Tls};
use crate::instance::{Instance, Kind};
use crate::net::{self, free_port};
use crate::program;

/// What the guard needs to know to run an `etcd` on a port of its own.
pub(crate) const KIND: Kind = Kind {
    name: "etcd",
    program: "etcd",
    // etcd answers SIGTERM by stopping its server and closing its log.
    stop_signal: libc::SIGTERM,
    ready: healthy,
};

/// Milliseconds between the leader's heartbeats.
const HEARTBEAT_MS: u32 = 10;
/// Milliseconds a member waits for a leader before it stands; etcd wants at least five
/// heartbeats.
const ELECTION_TIMEOUT_MS: u32 = 100;

/// An `etcd` of its own, a cluster of one member on two free loopback ports (clients and
/// peers), stopped when dropped.
///
/// Its data directory is a temporary directory that outlives restarts and is removed on
/// drop. etcd syncs its write-ahead log before acknowledging a write, so a restart, even
/// after SIGKILL, keeps every key a test saw written.
///
/// ```no_run
/// use std::io::{Read, Write};
/// use std::net::TcpStream;
/// use snowmint_testkit::{Etcd, Server};
///
/// let mut etcd = Etcd::start();
/// assert_eq!(etcd.url(), format!("etcd://127.0.0.1:{}", etcd.port()));
/// assert_eq!(etcd.endpoint(), format!("http://127.0.0.1:{}", etcd.port()));
/// etcd.restart(); // same ports, same data
///
/// let mut stream = TcpStream::connect(("127.0.0.1", etcd.port()))?;
/// stream.write_all(b"GET /version HTTP/1.1\r\nHost: etcd\r\nConnection: close\r\n\r\n")?;
/// let mut response = String::new();
/// stream.read_to_string(&mut response)?;
/// assert!(response.contains("etcdserver"), "{response}");
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct Etcd {
    pub(crate) server: Instance,
    /// The TLS files and users of an etcd started by [`Etcd::start_secured`].
    pub(crate) secured: Option<Secured>,
}

impl Etcd {
    /// Starts `etcd` and waits until its `/health` endpoint reports it healthy, which
    /// means it has elected itself leader and serves reads and writes.
    ///
    /// # Panics
    ///
    /// If `etcd` (Debian's `etcd-server` package) is not on `PATH`, or it is not healthy
    /// within 30 seconds; the message quotes the end of its log.
    ///
    /// ```no_run
    /// use std::net::TcpStream;
    ///
    /// let etcd = snowmint_testkit::Etcd::start();
    /// TcpStream::connect(("127.0.0.1", etcd.port()))?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[must_use]
    #[track_caller]
    pub fn start() -> Etcd {
        let program = program::find_on_path("etcd", "etcd-server");
        let server = Instance::start(&KIND, |port, dir| {
            let (program, data, peer_port) = (program.clone(), dir.join("data"), free_port());
            move || etcd_command(&program, port, peer_port, &data, None)
        });
        Etcd {
            server,
            secured: None,
        }
    }

    /// The client port on 127.0.0.1; the same across restarts.
    ///
    /// ```no_run
    /// let etcd = snowmint_testkit::Etcd::start();
    /// assert_eq!(etcd.endpoint(), format!("http://127.0.0.1:{}", etcd.port()));
    /// ```
    #[must_use]
    pub fn port(&self) -> u16 {
        self.server.port
    }

    /// The client endpoint as an `http://` URL, the form etcd's own clients take.
    ///
    /// ```no_run
    /// let etcd = snowmint_testkit::Etcd::start();
    /// assert!(etcd.endpoint().starts_with("http://127.0.0.1:"));
    /// ```
    #[must_use]
    pub fn endpoint(&self) -> String {
        let scheme = if self.secured.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://127.0.0.1:{}", self.server.port)
    }

    /// The client endpoint as an `etcd://` URL, the form `snowmint serve --lease` takes.
    ///
    /// ```no_run
    /// let etcd = snowmint_testkit::Etcd::start();
    /// assert_eq!(etcd.url(), format!("etcd://127.0.0.1:{}", etcd.port()));
    /// ```
    ///
    /// A secured etcd's URL is `etcds://snowmint@...` with the CA, the client certificate
    /// and the password file of the user `snowmint` ([`Etcd::start_secured`]).
    #[must_use]
    pub fn url(&self) -> String {
        match &self.secured {
            Some(secured) => secured.url(self.server.port),
            None => format!("etcd://127.0.0.1:{}", self.server.port),
        }
    }
}

/// A lone member of a cluster of its own, serving clients on `port` and its peer
/// protocol on `peer_port`, with its data in `data`.
///
/// With `tls`, clients speak https only and must present a certificate of the CA there.
pub(crate) fn etcd_command(
    program: &Path,
    port: u16,
    peer_port: u16,
    data: &Path,
    tls: Option<&Tls>,
) -> Command {
    let scheme = if tls.is_some() { "https" } else { "http" };
    let client = format!("{scheme}://127.0.0.1:{port}");
    let peer = format!("http://127.0.0.1:{peer_port}");
    let mut command = Command::new(program);
    command
        .args(["--name", "default"])
        .arg("--data-dir")
        .arg(data)
        .args(["--listen-client-urls", &client])
        .args(["--advertise-client-urls", &client])
        .args(["--listen-peer-urls", &peer])
        .args(["--initial-advertise-peer-urls", &peer])
        .args(["--initial-cluster", &format!("default={peer}")])
        // Only read on the first start: later ones find the member in the data.
        .args(["--initial-cluster-state", "new"])
        // A lone member elects itself after one election timeout, which the default (1 s)
        // adds to every restart. Alone, it has no rival to lose leadership to, so a short
        // timeout is safe; it also lowers etcd's shortest lease TTL from 2 s to 1 s.
        .args(["--heartbeat-interval", &HEARTBEAT_MS.to_string()])
        .args(["--election-timeout", &ELECTION_TIMEOUT_MS.to_string()])
        .args(["--logger", "zap", "--log-outputs", "stderr"]);
    if let Some(tls) = tls {
        tls.add_flags(&mut command);
    }
    if let Some(arch) = unsupported_arch() {
        command.env("ETCD_UNSUPPORTED_ARCH", arch);
    }
    command
}

/// The value etcd 3.4 wants in `ETCD_UNSUPPORTED_ARCH` before it runs on this
/// architecture: Go's name for it. It runs unasked on amd64, ppc64le and s390x.
pub(crate) fn unsupported_arch() -> Option<&'static str> {
    match std::env::consts::ARCH {
        "x86_64" | "powerpc64" | "s390x" => None,
        "aarch64" => Some("arm64"),
        "x86" => Some("386"),
        other => Some(other),
    }
}

/// Whether a secured etcd accepts connections; [`Etcd::start_secured`] then waits until
/// it answers `etcdctl` over TLS.
pub(crate) fn listening(port: u16) -> bool {
    net::connect(port).is_ok()
}

/// Whether etcd's `/health` says it is healthy: it has a leader and answers reads.
fn healthy(port: u16) -> bool {
    let Ok(mut stream) = net::connect(port) else {
        return false;
    };
    let request =
        format!("GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut response = String::new();
    stream.read_to_string(&mut response).is_ok()
        && response.starts_with("HTTP/1.1 200")
        && response.contains(r#""health":"true""#)
}

crate::server_controls!(Etcd);
