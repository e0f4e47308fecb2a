//! `snowmint serve` as a real process: start, serve, stop on SIGTERM with requests in
//! flight, and restart with the clock set back without repeating an id.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A running `snowmint serve`, killed on drop if the test did not stop it.
struct Serve {
    child: Child,
    http: SocketAddr,
    log: mpsc::Receiver<String>,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn command(state: &Path, offset_ms: i64, extra: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_snowmint"));
    cmd.args([
        "serve",
        "--http-addr",
        "127.0.0.1:0",
        "--grpc-addr",
        "127.0.0.1:0",
        "--state-dir",
    ])
    .arg(state)
    .args(extra)
    .env("SNOWMINT_TEST_CLOCK_OFFSET_MS", offset_ms.to_string())
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    for (key, _) in std::env::vars() {
        if key.starts_with("SNOWMINT_") && key != "SNOWMINT_TEST_CLOCK_OFFSET_MS" {
            cmd.env_remove(key);
        }
    }
    cmd
}

/// Starts the server and reads the address it logs as it binds.
fn start(state: &Path, offset_ms: i64, extra: &[&str]) -> Serve {
    spawn_logged(command(state, offset_ms, extra))
}

/// Spawns `cmd` and reads the address it logs as it binds.
fn spawn_logged(mut cmd: Command) -> Serve {
    let mut child = cmd.spawn().expect("spawn snowmint serve");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    // Owned by the guard at once, so a failing test still kills it.
    let mut serve = Serve {
        child,
        http: SocketAddr::from(([127, 0, 0, 1], 0)),
        log: rx,
    };
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let line = serve
            .log
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("the server logs its address");
        if let Some(rest) = line.split("http=").nth(1) {
            serve.http = rest.split_whitespace().next().unwrap().parse().unwrap();
            return serve;
        }
    }
}

impl Serve {
    fn get(&self, path: &str) -> (u16, String) {
        http_get(self.http, path)
    }

    fn terminate(&mut self) -> ExitStatus {
        let pid = i32::try_from(self.child.id()).unwrap();
        // SAFETY: sends SIGTERM to the child this test started and still owns.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "still running 15 s after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn logged(&self) -> String {
        self.log.try_iter().collect::<Vec<_>>().join("\n")
    }
}

fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response[9..12].parse().unwrap();
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

fn ids(body: &str) -> Vec<u64> {
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    v["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().parse().unwrap())
        .collect()
}

#[test]
fn sigterm_finishes_requests_in_flight_and_exits_zero() {
    let state = tempfile::tempdir().unwrap();
    let mut serve = start(state.path(), 0, &["--max-batch", "1000000"]);
    let addr = serve.http;
    // A million ids take about 250 ms at the default layout's cap of 4,096 per ms.
    let in_flight = std::thread::spawn(move || http_get(addr, "/v1/ids?count=1000000"));
    std::thread::sleep(Duration::from_millis(60));
    let status = serve.terminate();
    assert!(status.success(), "exit status {status}\n{}", serve.logged());
    let (code, body) = in_flight.join().unwrap();
    assert_eq!(code, 200);
    let got = ids(&body);
    assert_eq!(got.len(), 1_000_000);
    assert!(got.windows(2).all(|w| w[0] < w[1]));
    assert!(serve.logged().contains("high-water mark persisted"));
}

#[test]
fn restart_with_the_clock_set_back_never_repeats_an_id() {
    let state = tempfile::tempdir().unwrap();
    let first = start(state.path(), 0, &[]);
    let (code, body) = first.get("/v1/ids?count=5000");
    assert_eq!(code, 200);
    let before = ids(&body);
    let highest = *before.last().unwrap();
    // A crash: no clean shutdown, so the mark stays reserved ahead.
    drop(first);

    // Set back 10 s and told to fail: exits with the gap named, issuing nothing.
    let out = command(state.path(), -10_000, &["--restart-behind", "fail"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("ms behind the high-water mark"), "{stderr}");

    // Set back 10 s and told to wait: serves probes, but is not ready and issues nothing.
    let behind = start(state.path(), -10_000, &[]);
    let (code, body) = behind.get("/readyz");
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("behind the high-water mark"), "{body}");
    let (code, body) = behind.get("/v1/id");
    assert_eq!(code, 503, "{body}");
    assert_eq!(behind.get("/healthz").0, 200);
    drop(behind);

    // Set back 1.5 s: ready once the clock passes the mark, and every id is higher.
    let later = start(state.path(), -1_500, &[]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while later.get("/readyz").0 != 200 {
        assert!(Instant::now() < deadline, "never became ready");
        std::thread::sleep(Duration::from_millis(50));
    }
    let after = ids(&later.get("/v1/ids?count=5000").1);
    assert!(after[0] > highest, "{} <= {highest}", after[0]);
}

#[test]
fn flags_override_the_environment_which_overrides_the_file() {
    let state = tempfile::tempdir().unwrap();
    let file = state.path().join("snowmint.toml");
    std::fs::write(&file, "worker = 3\ndatacenter = 1\n").unwrap();
    let config = file.to_str().unwrap();
    let worker_of = |serve: &Serve| {
        let (_, body) = serve.get("/v1/layout");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        (
            v["datacenter"].as_u64().unwrap(),
            v["worker"].as_u64().unwrap(),
        )
    };
    assert_eq!(
        worker_of(&start(state.path(), 0, &["--config", config])),
        (1, 3)
    );
    let mut cmd = command(state.path(), 0, &["--config", config]);
    cmd.env("SNOWMINT_WORKER", "4");
    let from_env = spawn_logged(cmd);
    assert_eq!(worker_of(&from_env), (1, 4));
    drop(from_env);
    let mut cmd = command(state.path(), 0, &["--config", config, "--worker", "5"]);
    cmd.env("SNOWMINT_WORKER", "4");
    assert_eq!(worker_of(&spawn_logged(cmd)), (1, 5));
}

#[test]
fn a_broken_config_is_refused_with_the_key_named() {
    let state = tempfile::tempdir().unwrap();
    let file = state.path().join("bad.toml");
    std::fs::write(&file, "worker = 99\n").unwrap();
    let out = command(state.path(), 0, &["--config", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "error: config key `worker`: \"99\" is out of range 0..=31 for layout twitter"
    );
    let out = command(state.path(), 0, &["--config", "/nonexistent/snowmint.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .starts_with("error: cannot read config file /nonexistent/snowmint.toml:")
    );
    let out = Command::new(env!("CARGO_BIN_EXE_snowmint"))
        .args(["serve", "--http-addr", "nowhere", "--state-dir"])
        .arg(state.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("config key `http_addr`: \"nowhere\""));
}
