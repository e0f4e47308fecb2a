//! Running the real `snowmint` in tests: a command with a state directory of its own
//! ([`Snowmint`]), and `snowmint serve` as a process: spawn it, read the address it binds,
//! talk HTTP to it, stop it.

#![allow(dead_code)] // each test file uses what it needs

mod command;

#[allow(unused_imports)] // the serve tests do not run commands
pub use command::Snowmint;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use snowmint::{Id, Layout};
pub use snowmint_testkit::LeaseTimes;
use snowmint_testkit::{ServeCommand, Serving, eventually};

/// What a finished command printed: its standard output, then its standard error.
pub fn printed(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A program that `scripts/setup` installs into a virtual environment under the target
/// directory, such as `schemathesis-venv/bin/schemathesis`; its absence fails the test.
pub fn setup_tool(path: &str) -> PathBuf {
    // CARGO_TARGET_TMPDIR is the target directory's `tmp`.
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().unwrap();
    let tool = target.join(path);
    assert!(
        tool.exists(),
        "{} is missing: run scripts/setup",
        tool.display()
    );
    tool
}

/// The documents of a YAML file under `deploy/` (`kubernetes/service.yaml`) as JSON, read by
/// the PyYAML of the kubernetes-validate environment that `scripts/setup` makes: what a test
/// checks or runs is what the file says, not a copy.
pub fn deploy_yaml(file: &str) -> Vec<serde_json::Value> {
    let python = setup_tool("kubernetes-venv/bin/python");
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy")
        .join(file);
    let out = Command::new(python)
        .args([
            "-c",
            "import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))",
        ])
        .arg(&path)
        .output()
        .expect("python runs");
    assert!(out.status.success(), "{}", printed(&out));
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// `snowmint serve` of this crate's binary on free loopback ports, with `state` as its
/// state directory: the kit's builder, for the flags a test adds.
pub fn serve_builder(state: &Path) -> ServeCommand {
    ServeCommand::new(env!("CARGO_BIN_EXE_snowmint"), state)
}

/// `snowmint serve` on free loopback ports with `state` as its state directory and `extra`
/// flags, with no `SNOWMINT_*` variable of the test's environment leaking in.
pub fn serve_command(state: &Path, extra: &[&str]) -> Command {
    serve_builder(state).args(extra).command()
}

/// `snowmint serve` (HTTP only, batches up to 100,000 ids) leasing its worker id from `url`
/// as `identity` with `times`, and `extra` flags.
pub fn serve_leased(
    state: &Path,
    url: &str,
    identity: &str,
    times: LeaseTimes,
    extra: &[&str],
) -> Serve {
    spawn_logged(
        serve_builder(state)
            .grpc_addr("off")
            .lease(url, identity, times)
            .args(["--max-batch", "100000"])
            .args(extra)
            .command(),
    )
}

/// What `/v1/layout` says of the server's lease, and the worker id it holds, if any.
pub fn layout_lease(server: &Serve) -> (serde_json::Value, Option<u64>) {
    let (_, layout) = server.get("/v1/layout");
    let layout: serde_json::Value = serde_json::from_str(&layout).expect("the layout as JSON");
    (layout["lease"].clone(), layout["worker"].as_u64())
}

/// libfaketime's preload library `name`: `libfaketime.so.1`, or `libfaketimeMT.so.1`, which
/// takes a lock around each reading of the clock.
///
/// # Panics
///
/// When libfaketime is not installed (`scripts/setup` installs it): a test that needs it
/// must fail, not skip.
fn libfaketime(name: &str) -> PathBuf {
    [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib",
    ]
    .iter()
    .map(|dir| Path::new(dir).join("faketime").join(name))
    .find(|path| path.exists())
    .expect("libfaketime is not installed: run scripts/setup")
}

/// Sets the wall clock of the process `cmd` starts `offset` away from this machine's
/// (`"-3s"`, `"+1h"`), the way an NTP step would: libfaketime, loaded with `LD_PRELOAD`,
/// moves the wall clock only, and leaves monotonic time alone.
///
/// # Panics
///
/// When libfaketime is not installed (`scripts/setup` installs it).
pub fn wall_clock_offset(cmd: &mut Command, offset: &str) {
    cmd.env("LD_PRELOAD", libfaketime("libfaketime.so.1"))
        .env("FAKETIME", offset)
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
}

/// A wall clock the test steps while the process runs, as NTP or an operator would step
/// it: libfaketime, loaded with `LD_PRELOAD`, reads the offset from a file on every
/// reading of the wall clock (`FAKETIME_NO_CACHE`), and leaves monotonic time alone. The
/// file holds one offset from the real clock, in libfaketime's `FAKETIME` syntax (`"-3s"`,
/// `"-60s"`, `"+0"`); it starts at `"+0"`.
pub struct SteppedClock {
    dir: tempfile::TempDir,
}

impl SteppedClock {
    /// The file's name in its directory; [`SteppedClock::step`] writes a sibling and renames
    /// it over this one, so a reading never meets a half-written offset.
    const FILE: &str = "faketime";

    /// A clock at the real time, until stepped.
    pub fn new() -> SteppedClock {
        let clock = SteppedClock {
            dir: tempfile::tempdir().expect("temp dir"),
        };
        clock.step("+0");
        clock
    }

    /// Makes `cmd` read its wall clock from this one.
    ///
    /// # Panics
    ///
    /// When libfaketime is not installed (`scripts/setup` installs it).
    pub fn apply(&self, cmd: &mut Command) {
        // Each reading first resets a buffer shared by all threads to "+0", then copies the
        // file's offset into it: without the lock of the MT library, another thread may read
        // the real time meanwhile, a step forward and back that no test asked for.
        // `FAKETIME` in the environment would win over the file.
        cmd.env_remove("FAKETIME")
            .env("LD_PRELOAD", libfaketime("libfaketimeMT.so.1"))
            .env("FAKETIME_TIMESTAMP_FILE", self.dir.path().join(Self::FILE))
            .env("FAKETIME_NO_CACHE", "1")
            .env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
    }

    /// Steps the clock to `offset` from the real time (`"-3s"`, `"-60s"`, `"+0"`); the
    /// process sees it at its next reading.
    pub fn step(&self, offset: &str) {
        let next = self.dir.path().join("faketime.next");
        std::fs::write(&next, format!("{offset}\n")).expect("write the offset");
        std::fs::rename(&next, self.dir.path().join(Self::FILE)).expect("rename the offset");
    }
}

/// A running `snowmint serve`, killed on drop if the test did not stop it.
pub struct Serve {
    process: Serving,
    pub http: SocketAddr,
    /// The gRPC address, when the server logs one.
    pub grpc: Option<SocketAddr>,
    /// The Thrift address, when the server logs one.
    pub thrift: Option<SocketAddr>,
    /// The admin address, when the server logs one.
    pub admin: Option<SocketAddr>,
    /// Every line it has logged, start-up included.
    log: mpsc::Receiver<String>,
    /// What [`Serve::logged`] has read of `log`.
    early: Vec<String>,
}

/// Spawns `cmd` and reads the address it logs as it binds.
pub fn spawn_logged(cmd: Command) -> Serve {
    let mut process = Serving::spawn(cmd).expect("spawn snowmint serve");
    let (tx, rx) = mpsc::channel();
    let addresses = process
        .addresses(Duration::from_secs(20), move |line| {
            let _ = tx.send(line.to_string());
        })
        .expect("the server logs its address");
    Serve {
        process,
        http: addresses.http,
        grpc: addresses.grpc,
        thrift: addresses.thrift,
        admin: addresses.admin,
        log: rx,
        early: Vec::new(),
    }
}

impl Serve {
    pub fn get(&self, path: &str) -> (u16, String) {
        http_get(self.http, path)
    }

    pub fn terminate(&mut self) -> ExitStatus {
        let pid = i32::try_from(self.process.pid()).unwrap();
        // SAFETY: sends SIGTERM to the child this test started and still owns.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        self.wait_exit(Duration::from_secs(15))
    }

    /// Waits at most `limit` for the process to exit (after a signal the test sent): its
    /// status.
    pub fn wait_exit(&mut self, limit: Duration) -> ExitStatus {
        eventually(limit, "the exit", || {
            self.process.try_wait().unwrap().ok_or("still running")
        })
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// Kills the process with SIGKILL, as a crash would.
    pub fn kill(&mut self) {
        let _ = self.process.kill();
    }

    /// Polls `/readyz` until it says ready, for at most `limit`.
    pub fn wait_ready(&self, limit: Duration) {
        eventually(limit, "ready", || match self.get("/readyz") {
            (200, _) => Ok(()),
            (_, body) => Err(body),
        });
    }

    /// A number from the process's /proc status, such as `Threads` or `VmRSS` (in kB).
    pub fn proc_status(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.process.pid()))
            .expect("the server is running");
        status
            .lines()
            .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("no {field} in /proc status"))
    }

    /// Everything it has logged so far, start-up included.
    pub fn logged(&mut self) -> String {
        let more: Vec<String> = self.log.try_iter().collect();
        self.early.extend(more);
        self.early.join("\n")
    }
}

pub fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
    read_response(send_get(addr, path))
}

/// Sends `GET path` on a new connection, leaving the response to [`read_response`].
pub fn send_get(addr: SocketAddr, path: &str) -> TcpStream {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    stream
}

/// `GET path` on a new connection, waiting at most `wait` for the answer: its status and
/// body, or `None` when the server cannot be reached or the answer broke off (a server a
/// test stopped, paused or killed).
pub fn try_get(addr: SocketAddr, path: &str, wait: Duration) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(addr).ok()?;
    stream.set_read_timeout(Some(wait)).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.get(9..12)?.parse().ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    // A server cut off mid-answer (stopped, killed, or a slow reader's answer dropped by
    // its watchdog) closes the connection early: the body falls short of its length.
    if content_length(head).is_some_and(|length| body.len() < length) {
        return None;
    }
    Some((status, body.to_string()))
}

/// The `content-length` a response's head names, if it names one.
fn content_length(head: &str) -> Option<usize> {
    head.lines().find_map(|line| {
        line.to_ascii_lowercase()
            .strip_prefix("content-length: ")?
            .trim()
            .parse()
            .ok()
    })
}

/// Reads one HTTP/1.1 response with a `content-length` body from a connection kept alive:
/// its status and body.
///
/// # Errors
///
/// The connection broke, or the head names no length.
pub fn read_kept(stream: &mut TcpStream) -> std::io::Result<(u16, String)> {
    let mut head = Vec::new();
    let mut byte = [0u8];
    while !head.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte)?;
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let length = content_length(&head)
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, "no content-length"))?;
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body)?;
    let status = head[9..12].parse().expect("a status");
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

/// The `error` of a JSON error body.
pub fn error_of(body: &str) -> String {
    let v: serde_json::Value =
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body:?}"));
    v["error"].as_str().expect("an error message").to_string()
}

/// Reads the whole response on `stream`: its status and its body.
pub fn read_response(mut stream: TcpStream) -> (u16, String) {
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response[9..12].parse().unwrap();
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

pub fn ids(body: &str) -> Vec<u64> {
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    v["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().parse().unwrap())
        .collect()
}

/// The wall clock, in ms since the Unix epoch.
pub fn now_ms() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970");
    u64::try_from(since.as_millis()).expect("fits")
}

/// The time of a decimal Twitter-layout id, in ms since the Unix epoch.
pub fn twitter_ms(id: u64) -> u64 {
    Layout::TWITTER
        .decode(Id::from_u64(id))
        .expect("a twitter id")
        .unix_ms
}

/// The datacenter and worker id of a Twitter-layout id.
pub fn twitter_worker(id: u64) -> (u64, u64) {
    let decoded = Layout::TWITTER
        .decode(Id::from_u64(id))
        .expect("a twitter id");
    (decoded.datacenter, decoded.worker)
}

/// Lines of decimal ids, as `snowmint gen` prints them.
pub fn id_lines(stdout: &str) -> Vec<u64> {
    stdout
        .lines()
        .map(|line| {
            line.parse()
                .unwrap_or_else(|_| panic!("not a decimal id: {line:?}"))
        })
        .collect()
}

pub fn strictly_increasing(ids: &[u64]) -> bool {
    ids.windows(2).all(|w| w[0] < w[1])
}
