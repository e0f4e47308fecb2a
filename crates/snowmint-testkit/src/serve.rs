//! `snowmint serve` as the tests and the chaos campaign run it: the command line
//! ([`ServeCommand`], with the short lease flags of [`LeaseTimes`]) and the running process
//! ([`Serving`]), which reads the addresses the server logs and is killed when dropped.
//!
//! The kit does not build the binary: callers pass its path (`CARGO_BIN_EXE_snowmint` in
//! the CLI's tests, a flag of the campaign).

use std::ffi::OsString;
use std::io::{self, BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long a lease lasts, how often it is renewed and the safety margin (issuing stops
/// this long before the lease could end), in ms: the `--lease-*` flags of `snowmint serve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseTimes {
    /// `--lease-ttl-ms`.
    pub ttl_ms: u64,
    /// `--lease-renew-ms`.
    pub renew_ms: u64,
    /// `--lease-margin-ms`.
    pub margin_ms: u64,
}

impl LeaseTimes {
    /// Short enough that a test (or a fault) past the TTL is cheap: a 3 s TTL renewed every
    /// 500 ms, issuing stopped 300 ms before it could end.
    pub const SHORT: LeaseTimes = LeaseTimes {
        ttl_ms: 3_000,
        renew_ms: 500,
        margin_ms: 300,
    };

    /// A lease that outlasts a registry's failover of a few seconds: a 6 s TTL renewed
    /// every second, a 600 ms margin.
    pub const FAILOVER: LeaseTimes = LeaseTimes {
        ttl_ms: 6_000,
        renew_ms: 1_000,
        margin_ms: 600,
    };

    /// The flags that set these times.
    ///
    /// ```
    /// use snowmint_testkit::LeaseTimes;
    ///
    /// assert_eq!(
    ///     LeaseTimes::SHORT.flags(),
    ///     ["--lease-ttl-ms", "3000", "--lease-renew-ms", "500", "--lease-margin-ms", "300"]
    /// );
    /// ```
    #[must_use]
    pub fn flags(&self) -> [String; 6] {
        [
            "--lease-ttl-ms".into(),
            self.ttl_ms.to_string(),
            "--lease-renew-ms".into(),
            self.renew_ms.to_string(),
            "--lease-margin-ms".into(),
            self.margin_ms.to_string(),
        ]
    }
}

/// The command line of `snowmint serve` on free loopback ports (`--http-addr
/// 127.0.0.1:0`) with a state directory of its own, built up flag by flag.
///
/// The [`Command`] it yields has no `SNOWMINT_*` variable of the caller's environment
/// (they would set flags the caller did not ask for), no stdin or stdout, and its stderr
/// piped for [`Serving::spawn`] to read the addresses from.
///
/// ```
/// use snowmint_testkit::{LeaseTimes, ServeCommand};
///
/// let cmd = ServeCommand::new("/bin/snowmint", "/tmp/state")
///     .grpc_addr("off")
///     .lease("redis://127.0.0.1:6379", "node-a", LeaseTimes::SHORT)
///     .arg("--max-batch")
///     .arg("100000")
///     .command();
/// let args: Vec<_> = cmd.get_args().map(|a| a.to_str().unwrap()).collect();
/// assert_eq!(args[..5], ["serve", "--http-addr", "127.0.0.1:0", "--grpc-addr", "off"]);
/// assert!(args.windows(2).any(|w| w == ["--lease-ttl-ms", "3000"]));
/// assert_eq!(args[args.len() - 2..], ["--max-batch", "100000"]);
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct ServeCommand {
    program: PathBuf,
    launcher: Vec<OsString>,
    state: PathBuf,
    grpc: Option<String>,
    lease: Option<(String, String)>,
    times: Option<LeaseTimes>,
    args: Vec<OsString>,
}

impl ServeCommand {
    /// `program serve --http-addr 127.0.0.1:0 --state-dir state`.
    pub fn new(program: impl Into<PathBuf>, state: impl AsRef<Path>) -> ServeCommand {
        ServeCommand {
            program: program.into(),
            launcher: Vec::new(),
            state: state.as_ref().to_path_buf(),
            grpc: None,
            lease: None,
            times: None,
            args: Vec::new(),
        }
    }

    /// Runs the binary through `launcher` (`["ip", "netns", "exec", "ns"]`): its first word
    /// is the program started, the binary its last argument before `serve`.
    pub fn launcher<S: Into<OsString>>(mut self, launcher: impl IntoIterator<Item = S>) -> Self {
        self.launcher = launcher.into_iter().map(Into::into).collect();
        self
    }

    /// `--grpc-addr addr` (`"off"`, `"127.0.0.1:0"`); without it the server's default.
    pub fn grpc_addr(mut self, addr: &str) -> Self {
        self.grpc = Some(addr.to_string());
        self
    }

    /// `--lease url --identity identity` and the `--lease-*` flags of `times`.
    pub fn lease(self, url: &str, identity: &str, times: LeaseTimes) -> Self {
        let mut this = self.lease_times(times);
        this.lease = Some((url.to_string(), identity.to_string()));
        this
    }

    /// The `--lease-*` flags of `times` alone, for a lease URL given among the other
    /// arguments.
    pub fn lease_times(mut self, times: LeaseTimes) -> Self {
        self.times = Some(times);
        self
    }

    /// One more argument, after those the builder writes.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// More arguments, after those the builder writes.
    pub fn args<S: Into<OsString>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// The command, ready to spawn (see [`Serving::spawn`]).
    #[must_use]
    pub fn command(&self) -> Command {
        let mut cmd = match self.launcher.split_first() {
            Some((first, rest)) => {
                let mut cmd = Command::new(first);
                cmd.args(rest).arg(&self.program);
                cmd
            }
            None => Command::new(&self.program),
        };
        cmd.args(["serve", "--http-addr", "127.0.0.1:0"]);
        if let Some(grpc) = &self.grpc {
            cmd.args(["--grpc-addr", grpc]);
        }
        cmd.arg("--state-dir").arg(&self.state);
        if let Some((url, identity)) = &self.lease {
            cmd.args(["--lease", url, "--identity", identity]);
        }
        if let Some(times) = &self.times {
            cmd.args(times.flags());
        }
        cmd.args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("SNOWMINT_") {
                cmd.env_remove(key);
            }
        }
        cmd
    }
}

/// The addresses a server logs once it listens; `None` for a port it runs `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Addresses {
    /// HTTP.
    pub http: SocketAddr,
    /// gRPC.
    pub grpc: Option<SocketAddr>,
    /// Thrift.
    pub thrift: Option<SocketAddr>,
    /// The admin port: probes and metrics.
    pub admin: Option<SocketAddr>,
}

impl Addresses {
    /// Reads the `http=`, `grpc=`, `thrift=` and `admin=` fields of the `listening` line;
    /// `None` when the line has no HTTP address.
    ///
    /// ```
    /// use snowmint_testkit::Addresses;
    ///
    /// let line = "INFO listening http=127.0.0.1:8080 grpc=off thrift=127.0.0.1:9090 admin=127.0.0.1:8081 worker=3";
    /// let addresses = Addresses::of_line(line).unwrap();
    /// assert_eq!(addresses.http.port(), 8080);
    /// assert_eq!(addresses.grpc, None);
    /// assert_eq!(addresses.thrift.map(|a| a.port()), Some(9090));
    /// assert_eq!(addresses.admin.map(|a| a.port()), Some(8081));
    /// assert!(Addresses::of_line("INFO lease taken worker=3").is_none());
    /// ```
    #[must_use]
    pub fn of_line(line: &str) -> Option<Addresses> {
        let field = |key: &str| -> Option<SocketAddr> {
            line.split(key)
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        };
        Some(Addresses {
            http: field("http=")?,
            grpc: field(" grpc="),
            thrift: field(" thrift="),
            admin: field(" admin="),
        })
    }
}

/// A running `snowmint serve` (or any process started from a [`ServeCommand`]), killed
/// with SIGKILL and reaped when dropped.
///
/// ```no_run
/// use std::time::Duration;
/// use snowmint_testkit::{ServeCommand, Serving};
///
/// let state = tempfile::tempdir()?;
/// let mut serving = Serving::spawn(ServeCommand::new("target/debug/snowmint", state.path()).command())?;
/// let addresses = serving.addresses(Duration::from_secs(20), |line| eprintln!("{line}"))?;
/// println!("serving HTTP on {}", addresses.http);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct Serving {
    child: Child,
}

impl Serving {
    /// Spawns `cmd`, whose stderr must be piped (as [`ServeCommand::command`] pipes it).
    ///
    /// # Errors
    ///
    /// The process could not be started.
    pub fn spawn(mut cmd: Command) -> io::Result<Serving> {
        cmd.spawn().map(|child| Serving { child })
    }

    /// Reads the process's stderr on a thread of its own, handing every line to `each_line`
    /// until the stream ends, and returns the addresses of the first line that has them.
    /// Call it once.
    ///
    /// # Errors
    ///
    /// `TimedOut` when no line had the addresses within `within` (or the stream ended
    /// first), `InvalidInput` when stderr was not piped or was already read.
    pub fn addresses(
        &mut self,
        within: Duration,
        mut each_line: impl FnMut(&str) + Send + 'static,
    ) -> io::Result<Addresses> {
        let stderr = self.child.stderr.take().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "the server's stderr is not piped",
            )
        })?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                each_line(&line);
                if tx.is_some()
                    && let Some(addresses) = Addresses::of_line(&line)
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(addresses);
                }
            }
        });
        rx.recv_timeout(within).map_err(|_| {
            io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the server (pid {}) logged no address within {} ms",
                    self.pid(),
                    within.as_millis()
                ),
            )
        })
    }

    /// Its process id.
    #[must_use]
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its exit status, if it has exited.
    ///
    /// # Errors
    ///
    /// As [`Child::try_wait`].
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.child.try_wait()
    }

    /// Kills it with SIGKILL, as a crash would, and waits for it.
    ///
    /// # Errors
    ///
    /// The signal could not be sent or the process not waited for.
    pub fn kill(&mut self) -> io::Result<ExitStatus> {
        self.child.kill()?;
        self.child.wait()
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        // A stopped (SIGSTOP) process dies of SIGKILL too.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
