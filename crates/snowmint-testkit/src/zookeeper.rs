//! A real standalone ZooKeeper server, Debian's Java one, whose data directory outlives
//! restarts.

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::instance::{Instance, Kind};
use crate::net;
use crate::program::{self, Missing};

/// What the guard needs to know to run a ZooKeeper server on a port of its own.
pub(crate) const KIND: Kind = Kind {
    name: "zookeeper",
    program: "java",
    // The JVM answers SIGTERM by running its shutdown hooks; the server closes its log.
    stop_signal: libc::SIGTERM,
    ready: serves,
};

/// The server's jar, from Debian's `libzookeeper-java` (which the `zookeeper` package
/// pulls in). Its manifest's `Class-Path` names every other jar it needs, as
/// `/usr/share/zookeeper/bin/zkServer.sh` relies on.
pub(crate) const SERVER_JAR: &str = "/usr/share/java/zookeeper.jar";
/// A logging backend for SLF4J, from Debian's `libslf4j-java`, a dependency of the
/// server: it writes the server's log to stderr, which the guard keeps in its log file.
/// Without it the server says nothing at all.
const LOG_JAR: &str = "/usr/share/java/slf4j-simple.jar";
/// The parts of Netty, from Debian's `libnetty-java`, that the server's TLS port needs
/// beyond those its jar's `Class-Path` names (which it reaches only with TLS).
const NETTY_JARS: [&str; 2] = [
    "/usr/share/java/netty-codec.jar",
    "/usr/share/java/netty-resolver.jar",
];
/// The server that runs alone, without the quorum code `zkServer.sh` starts.
pub(crate) const MAIN_CLASS: &str = "org.apache.zookeeper.server.ZooKeeperServerMain";
/// The server's time unit. ZooKeeper grants a session timeout of 2 to 20 ticks (0.4 s to
/// 4 s here), so the lease tests' TTLs of 2 s and 3 s are granted as asked, and a longer
/// one is clamped to 4 s. Sessions expire on a tick, so a short one also keeps the wait
/// for an expiry short.
pub(crate) const TICK: Duration = Duration::from_millis(200);
/// The JVM's options: a small heap, and only the quick first compiler, which starts the
/// server in about half the time the default needs.
pub(crate) const JVM_OPTIONS: [&str; 3] =
    ["-Xmx128m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"];
/// The root `url()` names: every node the tests make lies below it.
pub(crate) const ROOT: &str = "/snowmint";

/// A standalone ZooKeeper server of its own on a free loopback port, stopped when dropped.
///
/// It runs Debian's `zookeeper` package with `java` (a headless JRE is enough), with a
/// `zoo.cfg` in a temporary directory: a 200 ms `tickTime`, no admin server, no limit on
/// connections from one address, and its data in the same directory, which outlives
/// restarts and is removed on drop. ZooKeeper syncs its transaction log before it answers
/// a write, so a restart, even after SIGKILL, keeps every node a test saw written, and
/// every session: a session outlives a restart as long as its client comes back within
/// its timeout.
///
/// ```no_run
/// use std::io::{Read, Write};
/// use std::net::TcpStream;
/// use snowmint_testkit::{Server, ZooKeeper};
///
/// let mut zookeeper = ZooKeeper::start();
/// assert_eq!(zookeeper.url(), format!("zookeeper://127.0.0.1:{}/snowmint", zookeeper.port()));
/// zookeeper.restart(); // same port, same data
///
/// let mut stream = TcpStream::connect(("127.0.0.1", zookeeper.port()))?;
/// stream.write_all(b"srvr")?;
/// let mut answer = String::new();
/// stream.read_to_string(&mut answer)?;
/// assert!(answer.contains("Mode: standalone"), "{answer}");
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct ZooKeeper {
    pub(crate) server: Instance,
    /// The secure port, TLS files and user of a server started by
    /// [`ZooKeeper::start_secured`].
    pub(crate) secured: Option<crate::zookeeper_secured::Secured>,
}

impl ZooKeeper {
    /// Starts a ZooKeeper server and waits until it answers the `srvr` command as a
    /// standalone server, which it does once it serves sessions.
    ///
    /// # Panics
    ///
    /// If `java` or Debian's `zookeeper` package is missing, or the server does not serve
    /// within 30 seconds; the message quotes the end of its log.
    ///
    /// ```no_run
    /// use std::net::TcpStream;
    ///
    /// let zookeeper = snowmint_testkit::ZooKeeper::start();
    /// TcpStream::connect(("127.0.0.1", zookeeper.port()))?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[must_use]
    #[track_caller]
    pub fn start() -> ZooKeeper {
        let java = program::find_on_path("java", "default-jre-headless");
        if let Err(missing) = server_jar() {
            panic!("{missing}");
        }
        let server = Instance::start(&KIND, |port, dir| {
            let config = configure(port, dir);
            let java = java.clone();
            move || zookeeper_command(&java, &[], MAIN_CLASS, &config)
        });
        ZooKeeper {
            server,
            secured: None,
        }
    }

    /// The client port on 127.0.0.1; the same across restarts.
    ///
    /// ```no_run
    /// let zookeeper = snowmint_testkit::ZooKeeper::start();
    /// assert!(zookeeper.url().contains(&format!(":{}/", zookeeper.port())));
    /// ```
    #[must_use]
    pub fn port(&self) -> u16 {
        self.server.port
    }

    /// The server's `tickTime`: it grants session timeouts from 2 to 20 of them.
    ///
    /// ```no_run
    /// let zookeeper = snowmint_testkit::ZooKeeper::start();
    /// assert_eq!(zookeeper.tick() * 20, std::time::Duration::from_secs(4));
    /// ```
    #[must_use]
    pub fn tick(&self) -> Duration {
        TICK
    }

    /// The server as a `zookeeper://` URL with the root `/snowmint`, the form
    /// `snowmint serve --lease` takes. A secured server's is a `zookeepers://` URL of its
    /// secure port, with the CA, a client certificate and the digest user `snowmint`
    /// ([`ZooKeeper::start_secured`]).
    ///
    /// ```no_run
    /// let zookeeper = snowmint_testkit::ZooKeeper::start();
    /// assert_eq!(
    ///     zookeeper.url(),
    ///     format!("zookeeper://127.0.0.1:{}/snowmint", zookeeper.port())
    /// );
    /// ```
    #[must_use]
    pub fn url(&self) -> String {
        match &self.secured {
            Some(secured) => secured.url(),
            None => format!("zookeeper://127.0.0.1:{}{ROOT}", self.server.port),
        }
    }
}

/// The server's jar, or what to install to get it.
pub(crate) fn server_jar() -> Result<PathBuf, Missing> {
    let jar = PathBuf::from(SERVER_JAR);
    if jar.is_file() {
        Ok(jar)
    } else {
        Err(Missing {
            program: SERVER_JAR,
            package: "zookeeper",
        })
    }
}

/// Writes the `zoo.cfg` of a server on `port` with its data in `dir`, and returns its path.
pub(crate) fn configure(port: u16, dir: &Path) -> PathBuf {
    let data = dir.join("data");
    fs::create_dir(&data).unwrap_or_else(|err| panic!("cannot create {}: {err}", data.display()));
    let config = dir.join("zoo.cfg");
    let text = format!(
        "tickTime={tick}\n\
         dataDir={data}\n\
         clientPort={port}\n\
         clientPortAddress=127.0.0.1\n\
         # Every test client connects from 127.0.0.1: the default allows 60 at once.\n\
         maxClientCnxns=0\n\
         admin.enableServer=false\n\
         4lw.commands.whitelist=srvr\n",
        tick = TICK.as_millis(),
        data = data.display(),
    );
    fs::write(&config, text)
        .unwrap_or_else(|err| panic!("cannot write {}: {err}", config.display()));
    config
}

/// The server of `main_class` (the standalone one, or an ensemble's member) with the
/// configuration `config` and the system properties `properties` (`name=value`).
pub(crate) fn zookeeper_command(
    java: &Path,
    properties: &[String],
    main_class: &str,
    config: &Path,
) -> Command {
    let mut classpath = SERVER_JAR.to_string();
    for jar in [LOG_JAR].iter().chain(&NETTY_JARS) {
        if Path::new(jar).is_file() {
            classpath = format!("{classpath}:{jar}");
        }
    }
    let mut command = Command::new(java);
    command
        .args(JVM_OPTIONS)
        // Its log says when a session expires, which is what a failing lease test needs.
        .arg("-Dorg.slf4j.simpleLogger.showDateTime=true")
        .args(properties.iter().map(|property| format!("-D{property}")))
        .args(["-cp", &classpath, main_class])
        .arg(config);
    command
}

/// Whether the server answers `srvr` as a standalone server: it then serves sessions.
pub(crate) fn serves(port: u16) -> bool {
    let Ok(mut stream) = net::connect(port) else {
        return false;
    };
    if stream.write_all(b"srvr").is_err() {
        return false;
    }
    let mut answer = String::new();
    stream.read_to_string(&mut answer).is_ok() && answer.contains("Mode: standalone")
}

crate::server_controls!(ZooKeeper);
