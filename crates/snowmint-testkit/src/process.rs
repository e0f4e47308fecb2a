//! A server child process that cannot outlive the tests: spawned so it dies with the
//! test process, waited for until it answers, stopped with its own clean-shutdown signal
//! and then SIGKILL, and always reaped.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{OnceLock, mpsc};
use std::thread;
use std::time::{Duration, Instant};

/// How long a server may take to accept connections. A healthy one needs well under two
/// seconds; the rest is room for a CI machine busy with other test binaries.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a server may take to shut down cleanly before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// Pause between readiness probes, and between checks that a stopping server is gone.
const POLL: Duration = Duration::from_millis(20);
/// Ports a first start tries, when another process binds the chosen one first.
const PORT_ATTEMPTS: u32 = 3;
/// Lines of a server's log quoted when it fails to start.
const LOG_TAIL_LINES: usize = 30;

/// Builds the command line of one start; called again for every restart.
pub(crate) type MakeCommand = Box<dyn Fn() -> Command + Send + Sync>;
/// Whether the server accepts connections and answers as it should.
pub(crate) type Probe = Box<dyn Fn() -> bool + Send + Sync>;

/// One server: how to start it, how to tell it is ready, and the running child if any.
pub(crate) struct Daemon {
    name: &'static str,
    address: String,
    command: MakeCommand,
    ready: Probe,
    stop_signal: libc::c_int,
    log: PathBuf,
    ready_timeout: Duration,
    child: Option<Child>,
}

/// Why a server is not serving.
#[derive(Debug)]
pub(crate) enum NotReady {
    Spawn(io::Error),
    Exited(ExitStatus),
    TimedOut(Duration),
}

impl Daemon {
    /// A stopped server named `name` (its program, for messages) for `127.0.0.1:port`,
    /// writing its output to `log` and asked to stop with `stop_signal`.
    pub(crate) fn new(
        name: &'static str,
        port: u16,
        log: PathBuf,
        stop_signal: libc::c_int,
        command: MakeCommand,
        ready: Probe,
    ) -> Daemon {
        Daemon {
            name,
            address: format!("127.0.0.1:{port}"),
            command,
            ready,
            stop_signal,
            log,
            ready_timeout: READY_TIMEOUT,
            child: None,
        }
    }

    /// The same server, named in messages by `address` rather than `127.0.0.1:port`: for
    /// one that serves on an address of a network namespace.
    pub(crate) fn at(mut self, address: impl std::fmt::Display) -> Daemon {
        self.address = address.to_string();
        self
    }

    /// Starts the server and waits until it is ready.
    ///
    /// # Panics
    ///
    /// If it cannot be spawned, exits, or is not ready in time; the message quotes the
    /// end of its log.
    #[track_caller]
    pub(crate) fn start(&mut self) {
        if let Err(err) = self.launch() {
            panic!("{}", self.failure(&err));
        }
    }

    /// Starts the server unless it runs, and waits until it is ready.
    fn launch(&mut self) -> Result<(), NotReady> {
        if self.child.is_some() {
            return Ok(());
        }
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(NotReady::Spawn)?;
        // A marker, so the tail quoted after a restart shows which start failed.
        writeln!(
            log,
            "--- snowmint-testkit: starting {} on {}",
            self.name, self.address
        )
        .map_err(NotReady::Spawn)?;
        let mut command = (self.command)();
        command
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(NotReady::Spawn)?)
            .stderr(log);
        self.child = Some(spawn(command).map_err(NotReady::Spawn)?);
        self.wait_ready()
    }

    fn wait_ready(&mut self) -> Result<(), NotReady> {
        let deadline = Instant::now() + self.ready_timeout;
        loop {
            if let Some(status) = self.exit_status() {
                self.child = None;
                return Err(NotReady::Exited(status));
            }
            // Checked again after the probe: a server that lost its port exits, and the
            // probe may have reached whoever holds it.
            if (self.ready)() && self.exit_status().is_none() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(NotReady::TimedOut(self.ready_timeout));
            }
            thread::sleep(POLL);
        }
    }

    fn exit_status(&mut self) -> Option<ExitStatus> {
        self.child.as_mut()?.try_wait().ok().flatten()
    }

    /// Stops the server cleanly, or with SIGKILL after a grace period, and reaps it.
    /// Does nothing when it is not running.
    pub(crate) fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let gone = |child: &mut Child| !matches!(child.try_wait(), Ok(None));
        if !gone(&mut child) {
            signal(&child, self.stop_signal);
            let deadline = Instant::now() + STOP_GRACE;
            while !gone(&mut child) && Instant::now() < deadline {
                thread::sleep(POLL);
            }
        }
        // Both are harmless once the child has exited: std remembers it was reaped.
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Kills the server with SIGKILL, as a crash would, and reaps it. Its own children
    /// (PostgreSQL's backends) notice and exit by themselves; this waits for them, up to
    /// [`ORPHANS_GONE`], so that a restart does not find their shared memory still in use.
    pub(crate) fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let orphans = children(child.id());
            let _ = child.kill();
            let _ = child.wait();
            let deadline = Instant::now() + ORPHANS_GONE;
            while orphans.iter().any(|pid| running(*pid)) && Instant::now() < deadline {
                thread::sleep(POLL);
            }
        }
    }

    /// Stops the server if it runs, then starts it again.
    #[track_caller]
    pub(crate) fn restart(&mut self) {
        self.stop();
        self.start();
    }

    /// The running server's process id.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Whether the server's log says its address was taken.
    fn lost_port_race(&self) -> bool {
        fs::read_to_string(&self.log)
            .is_ok_and(|log| log.to_lowercase().contains("address already in use"))
    }

    /// What went wrong, with the end of the server's own log.
    fn failure(&self, err: &NotReady) -> String {
        let (name, address) = (self.name, &self.address);
        let what = match err {
            NotReady::Spawn(err) => format!("could not start {name} for {address}: {err}"),
            NotReady::Exited(status) => {
                format!("{name} for {address} exited ({status}) before accepting connections")
            }
            NotReady::TimedOut(limit) => format!(
                "{name} did not accept connections on {address} within {}s",
                limit.as_secs_f64()
            ),
        };
        let log = fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        let tail = lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n");
        format!("{what}; the end of its log {}:\n{tail}", self.log.display())
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Builds a service with `make` on a fresh port and starts it, trying another port when
/// a different process bound the first one between its choice and the server's bind.
///
/// # Panics
///
/// As [`Daemon::start`].
#[track_caller]
pub(crate) fn start_on_free_port<S>(
    mut make: impl FnMut() -> S,
    daemon: impl Fn(&mut S) -> &mut Daemon,
) -> S {
    let mut attempt = 1;
    loop {
        let mut service = make();
        let server = daemon(&mut service);
        match server.launch() {
            Ok(()) => return service,
            Err(_) if attempt < PORT_ATTEMPTS && server.lost_port_race() => attempt += 1,
            Err(err) => panic!("{}", server.failure(&err)),
        }
    }
}

/// Sends `signal` to a child that has not been reaped, so its pid is still its own.
fn signal(child: &Child, signal: libc::c_int) {
    let pid = libc::pid_t::try_from(child.id()).expect("a process id fits in pid_t");
    // SAFETY: kill(2) has no memory-safety preconditions; the pid names our own child.
    unsafe {
        libc::kill(pid, signal);
    }
}

/// Spawns `command` so that it gets SIGKILL when the test process dies, even by abort or
/// SIGKILL, when no destructor runs.
///
/// Linux sends the parent-death signal when the *thread* that forked the child exits, so
/// every server is forked by one thread that lives as long as the process; a server
/// started from a short-lived thread (a tokio blocking task, say) would otherwise die
/// with that thread.
fn spawn(mut command: Command) -> io::Result<Child> {
    type Request = (Command, mpsc::Sender<io::Result<Child>>);
    static SPAWNER: OnceLock<mpsc::Sender<Request>> = OnceLock::new();

    let parent = std::process::id();
    // SAFETY: the hook runs in the forked child before exec and only calls prctl(2) and
    // getppid(2), which are async-signal-safe, and builds an io::Error without allocating.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died before the signal was armed.
            if u32::try_from(libc::getppid()) != Ok(parent) {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
    let spawner = SPAWNER.get_or_init(|| {
        let (requests, incoming) = mpsc::channel::<Request>();
        thread::Builder::new()
            .name("snowmint-testkit-spawner".into())
            .spawn(move || {
                for (mut command, reply) in incoming {
                    let _ = reply.send(command.spawn());
                }
            })
            .expect("cannot start the thread that spawns test servers");
        requests
    });
    let (reply, response) = mpsc::channel();
    spawner
        .send((command, reply))
        .expect("the thread that spawns test servers is gone");
    response
        .recv()
        .expect("the thread that spawns test servers is gone")
}

/// How long a killed server's children may take to notice and exit.
const ORPHANS_GONE: Duration = Duration::from_secs(10);

/// The processes whose parent is `parent`.
fn children(parent: u32) -> Vec<u32> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|pid| stat_field(*pid, 1).and_then(|ppid| ppid.parse().ok()) == Some(parent))
        .collect()
}

/// Whether `pid` runs: it exists and is not a zombie.
fn running(pid: u32) -> bool {
    stat_field(pid, 0).is_some_and(|state| state != "Z")
}

/// The `n`-th field of `/proc/PID/stat` after the command name (0: state, 1: parent pid);
/// the name may hold spaces, so fields are counted after its closing parenthesis.
fn stat_field(pid: u32, n: usize) -> Option<String> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(n).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn shell(script: &'static str, log: &Path, ready_timeout: Duration) -> Daemon {
        shell_with(script, log, ready_timeout, || false)
    }

    fn shell_with(
        script: &'static str,
        log: &Path,
        ready_timeout: Duration,
        ready: impl Fn() -> bool + Send + Sync + 'static,
    ) -> Daemon {
        let command = move || {
            let mut command = Command::new("sh");
            command.args(["-c", script]);
            command
        };
        let mut daemon = Daemon::new(
            "sh",
            1,
            log.to_path_buf(),
            libc::SIGTERM,
            Box::new(command),
            Box::new(ready),
        );
        daemon.ready_timeout = ready_timeout;
        daemon
    }

    #[test]
    fn a_server_that_exits_is_reported_with_its_log() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        let mut daemon = shell(
            "echo 'bind: address already in use' >&2; exit 3",
            &log,
            READY_TIMEOUT,
        );
        let err = daemon.launch().unwrap_err();
        assert!(matches!(err, NotReady::Exited(status) if status.code() == Some(3)));
        assert!(daemon.lost_port_race());
        let message = daemon.failure(&err);
        assert!(
            message.starts_with("sh for 127.0.0.1:1 exited (exit status: 3) before accepting connections; the end of its log "),
            "{message}"
        );
        assert!(
            message.ends_with(
                "--- snowmint-testkit: starting sh on 127.0.0.1:1\nbind: address already in use"
            ),
            "{message}"
        );
        assert_eq!(daemon.pid(), None);
    }

    #[test]
    fn a_server_that_never_answers_times_out_and_is_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let mut daemon = shell(
            "exec sleep 60",
            &dir.path().join("log"),
            Duration::from_millis(100),
        );
        let err = daemon.launch().unwrap_err();
        assert!(matches!(err, NotReady::TimedOut(_)));
        assert!(!daemon.lost_port_race());
        assert!(
            daemon
                .failure(&err)
                .starts_with("sh did not accept connections on 127.0.0.1:1 within 0.1s;")
        );
        let pid = daemon.pid().expect("still running after the timeout");
        let started = Instant::now();
        daemon.stop();
        assert!(started.elapsed() < STOP_GRACE, "sleep obeys SIGTERM");
        assert_eq!(daemon.pid(), None);
        // SAFETY: signal 0 only checks that the pid exists; ours was reaped.
        assert_eq!(unsafe { libc::kill(pid as libc::pid_t, 0) }, -1);
    }

    /// A service whose first `failures` starts lose their port, as `sh` scripts.
    struct Flaky {
        daemon: Daemon,
        _dir: tempfile::TempDir,
    }

    fn flaky(failures: u32) -> impl FnMut() -> Flaky {
        let mut made = 0;
        move || {
            made += 1;
            let dir = tempfile::tempdir().unwrap();
            let log = dir.path().join("log");
            let daemon = if made <= failures {
                shell(
                    "echo 'Address already in use' >&2; exit 1",
                    &log,
                    READY_TIMEOUT,
                )
            } else {
                shell_with("exec sleep 60", &log, READY_TIMEOUT, || true)
            };
            Flaky { daemon, _dir: dir }
        }
    }

    #[test]
    fn a_first_start_moves_to_another_port_when_its_port_is_taken() {
        let mut service = start_on_free_port(flaky(PORT_ATTEMPTS - 1), |s| &mut s.daemon);
        assert!(service.daemon.pid().is_some());
        service.daemon.stop();
    }

    #[test]
    #[should_panic(expected = "sh for 127.0.0.1:1 exited (exit status: 1) before accepting")]
    fn a_first_start_gives_up_after_a_few_ports() {
        let _ = start_on_free_port(flaky(PORT_ATTEMPTS), |s| &mut s.daemon);
    }
}
