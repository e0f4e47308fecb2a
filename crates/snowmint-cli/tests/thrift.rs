//! Twitter's Snowflake Thrift service on `snowmint serve --thrift-addr`, as a real process:
//! a client that the Thrift compiler builds from the committed IDL, in Python, calls every
//! method; and the framed transport is attacked with raw bytes (frames over the cap,
//! garbage, half a frame, a thousand silent connections) while the server keeps serving.

use crate::support;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use snowmint::{Id, Layout};
use support::{Serve, SteppedClock, now_ms, serve_command, spawn_logged};

const RULE: &str =
    "does not match [a-zA-Z][a-zA-Z0-9-]*: a letter, then letters, digits and dashes";
/// TApplicationException's types, as the IDL's clients know them.
const INTERNAL_ERROR: i64 = 6;
const PROTOCOL_ERROR: i64 = 7;

fn start(state: &Path, extra: &[&str]) -> Serve {
    let mut args = vec!["--grpc-addr", "off", "--thrift-addr", "127.0.0.1:0"];
    args.extend(extra);
    spawn_logged(serve_command(state, &args))
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// What the Python client of `tests/thrift/client.py` answers, calling `addr` with each of
/// `agents` in turn. Its bindings are generated afresh from
/// `crates/snowmint-proto/proto/thrift/snowflake.thrift` by Debian's Thrift compiler; it runs
/// in the virtual environment `scripts/setup` makes under the target directory, with the
/// `thrift` package installed.
fn python_client(addr: SocketAddr, agents: &[&str]) -> Value {
    let python = support::setup_tool("thrift-venv/bin/python");
    let generated = tempfile::tempdir().unwrap();
    let compiled = Command::new("thrift")
        .arg("-out")
        .arg(generated.path())
        .args(["--gen", "py"])
        .arg(repo().join("crates/snowmint-proto/proto/thrift/snowflake.thrift"))
        .output()
        .expect("the Thrift compiler runs (thrift-compiler: run scripts/setup)");
    assert!(
        compiled.status.success(),
        "{}",
        String::from_utf8_lossy(&compiled.stderr)
    );
    let out = Command::new(python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/thrift/client.py"))
        .arg(addr.to_string())
        .arg(json!(agents).to_string())
        .env("PYTHONPATH", generated.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The id of a client call, or its refusal's type and message.
fn outcome(call: &Value) -> Result<u64, (i64, String)> {
    match call.get("id") {
        Some(id) => Ok(id.as_u64().expect("a positive id")),
        None => Err((
            call["error"]["type"].as_i64().unwrap(),
            call["error"]["message"].as_str().unwrap().to_string(),
        )),
    }
}

fn http_id(serve: &Serve) -> u64 {
    let (status, body) = serve.get("/v1/id");
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    v["id"].as_str().unwrap().parse().unwrap()
}

fn metric_line(serve: &Serve, line: &str) -> bool {
    serve.get("/metrics").1.contains(&format!("{line}\n"))
}

#[test]
fn a_python_client_built_from_twitters_idl_gets_ids_of_this_worker() {
    let state = tempfile::tempdir().unwrap();
    let serve = start(state.path(), &["--datacenter", "3", "--worker", "7"]);
    let thrift = serve.thrift.expect("the server logs its thrift address");
    let (before_ms, before) = (now_ms(), http_id(&serve));
    let agents = [
        "snowmint-test",
        "",
        "1abc",
        "-abc",
        "has space",
        "under_score",
        "dot.ted",
        "caf\u{e9}",
        "a",
        "Tweet-Button-2",
    ];
    let answers = python_client(thrift, &agents);
    let (after, after_ms) = (http_id(&serve), now_ms());

    assert_eq!(answers["worker_id"], 7);
    assert_eq!(answers["datacenter_id"], 3);
    let timestamp = answers["timestamp"].as_u64().unwrap();
    assert!((before_ms..=after_ms).contains(&timestamp), "{timestamp}");

    let mut ids = vec![before];
    for (agent, call) in agents.iter().zip(answers["calls"].as_array().unwrap()) {
        assert_eq!(call["agent"], *agent);
        let good = agent.starts_with(|c: char| c.is_ascii_alphabetic())
            && agent.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        match outcome(call) {
            Ok(id) if good => ids.push(id),
            Err((kind, message)) if !good => {
                assert_eq!(kind, INTERNAL_ERROR, "{agent:?}");
                assert_eq!(message, format!("user agent {agent:?} {RULE}"));
            }
            other => panic!("{agent:?}: {other:?}"),
        }
    }
    ids.push(after);
    // From the one generator that serves HTTP too: strictly between its ids, and all of
    // this server's datacenter and worker.
    assert_eq!(ids.len(), 5, "{ids:?}");
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    for id in &ids {
        let parts = Layout::TWITTER.decode(Id::from_u64(*id)).unwrap();
        assert_eq!((parts.datacenter, parts.worker), (3, 7), "{id}");
    }
    for line in [
        "snowmint_requests_total{protocol=\"thrift\",route=\"get_id\",status=\"0\"} 3",
        "snowmint_requests_total{protocol=\"thrift\",route=\"get_id\",status=\"3\"} 7",
        "snowmint_requests_total{protocol=\"thrift\",route=\"get_worker_id\",status=\"0\"} 1",
        "snowmint_requests_total{protocol=\"thrift\",route=\"get_datacenter_id\",status=\"0\"} 1",
        "snowmint_requests_total{protocol=\"thrift\",route=\"get_timestamp\",status=\"0\"} 1",
    ] {
        assert!(metric_line(&serve, line), "{line}");
    }

    // A user agent too long for a frame is refused by the transport, by size; the
    // connection closes, and the next client is served.
    let long = "a".repeat(20_000);
    let answers = python_client(thrift, &[&long]);
    let refusal = outcome(&answers["calls"][0]).unwrap_err();
    assert_eq!(
        refusal,
        (
            PROTOCOL_ERROR,
            "thrift frame of 20026 bytes is larger than the 16384 bytes this server accepts"
                .to_string()
        )
    );
    let answers = python_client(thrift, &["again"]);
    assert!(outcome(&answers["calls"][0]).unwrap() > after);
}

#[test]
fn a_clock_that_went_back_is_refused_by_name_and_serving_resumes() {
    let state = tempfile::tempdir().unwrap();
    let clock = SteppedClock::new();
    let mut cmd = serve_command(
        state.path(),
        &[
            "--grpc-addr",
            "off",
            "--thrift-addr",
            "127.0.0.1:0",
            "--clock",
            "wall",
            "--rollback",
            "refuse",
        ],
    );
    clock.apply(&mut cmd);
    let serve = spawn_logged(cmd);
    let thrift = serve.thrift.unwrap();
    let first = outcome(&python_client(thrift, &["before"])["calls"][0]).unwrap();

    // An NTP step of 30 s back, while it runs.
    clock.step("-30s");
    let answers = python_client(thrift, &["behind"]);
    let (kind, message) = outcome(&answers["calls"][0]).unwrap_err();
    assert_eq!(kind, INTERNAL_ERROR);
    assert!(message.starts_with("clock is "), "{message}");
    assert!(
        message.ends_with(" ms behind the newest id issued; refusing to issue until it catches up"),
        "{message}"
    );
    assert!(metric_line(
        &serve,
        "snowmint_requests_total{protocol=\"thrift\",route=\"get_id\",status=\"14\"} 1"
    ));

    // The clock set right again: ids go on above the first.
    clock.step("+0s");
    let answers = python_client(thrift, &["after"]);
    assert!(outcome(&answers["calls"][0]).unwrap() > first);
}

#[test]
fn the_thrift_port_takes_no_bearer_token_and_the_server_warns_of_it() {
    let state = tempfile::tempdir().unwrap();
    let mut serve = start(state.path(), &["--auth-token", "s3cret"]);
    assert_eq!(serve.get("/v1/id").0, 401);
    let answers = python_client(serve.thrift.unwrap(), &["no-token"]);
    assert!(outcome(&answers["calls"][0]).is_ok());
    let logged = serve.logged();
    assert!(
        logged.contains(
            "the thrift port takes no bearer token: Twitter's protocol has no place for one; bind it to a trusted interface only"
        ),
        "{logged}"
    );
}

/// A call in the binary protocol (strict, with the version), as a client writes it.
fn call(method: &str, seq: i32, agent: Option<&str>) -> Vec<u8> {
    let mut m = Vec::new();
    m.extend_from_slice(&0x8001_0001_u32.to_be_bytes());
    m.extend_from_slice(&(method.len() as u32).to_be_bytes());
    m.extend_from_slice(method.as_bytes());
    m.extend_from_slice(&seq.to_be_bytes());
    if let Some(agent) = agent {
        m.extend_from_slice(&[11, 0, 1]);
        m.extend_from_slice(&(agent.len() as u32).to_be_bytes());
        m.extend_from_slice(agent.as_bytes());
    }
    m.push(0);
    m
}

fn framed(message: &[u8]) -> Vec<u8> {
    let mut f = (message.len() as u32).to_be_bytes().to_vec();
    f.extend_from_slice(message);
    f
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// Reads one framed reply: its method name, sequence number, and value or exception.
fn reply(s: &mut TcpStream) -> (String, i32, Result<i64, (i32, String)>) {
    let mut length = [0u8; 4];
    s.read_exact(&mut length).expect("a reply frame");
    let mut m = vec![0u8; u32::from_be_bytes(length) as usize];
    s.read_exact(&mut m).unwrap();
    let mut at = 0;
    let mut take = |n: usize| {
        at += n;
        &m[at - n..at]
    };
    let u32_at = |b: &[u8]| u32::from_be_bytes(b.try_into().unwrap());
    let header = u32_at(take(4));
    assert_eq!(header >> 16, 0x8001, "strict binary");
    let kind = header & 0xff;
    let n = u32_at(take(4)) as usize;
    let name = String::from_utf8(take(n).to_vec()).unwrap();
    let seq = u32_at(take(4)) as i32;
    let (mut value, mut message, mut code) = (None, String::new(), 0);
    loop {
        let ty = take(1)[0];
        if ty == 0 {
            break;
        }
        let id = i16::from_be_bytes(take(2).try_into().unwrap());
        match (ty, id) {
            (10, 0) => value = Some(i64::from_be_bytes(take(8).try_into().unwrap())),
            (11, 1) => {
                let n = u32_at(take(4)) as usize;
                message = String::from_utf8(take(n).to_vec()).unwrap();
            }
            (8, 2) => code = u32_at(take(4)) as i32,
            other => panic!("unexpected field {other:?}"),
        }
    }
    let result = match kind {
        2 => Ok(value.expect("a value")),
        3 => Err((code, message)),
        other => panic!("message type {other}"),
    };
    (name, seq, result)
}

/// Whether the server closed `s`: it reads end of file or a reset, within the read timeout.
fn closes(s: &mut TcpStream) -> bool {
    match s.read(&mut [0u8; 64]) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
    }
}

/// One `get_id` on a new connection: the server still serves.
fn still_serves(addr: SocketAddr) -> i64 {
    let mut s = connect(addr);
    s.write_all(&framed(&call("get_id", 1, Some("still"))))
        .unwrap();
    reply(&mut s).2.expect("an id")
}

#[test]
fn frames_over_the_cap_and_garbage_are_answered_then_closed() {
    let state = tempfile::tempdir().unwrap();
    let mut serve = start(state.path(), &[]);
    let thrift = serve.thrift.unwrap();

    // A length over the cap: the answer comes at once, without the frame being sent.
    let mut s = connect(thrift);
    s.write_all(&16_385u32.to_be_bytes()).unwrap();
    let (name, seq, result) = reply(&mut s);
    assert_eq!((name.as_str(), seq), ("", 0));
    assert_eq!(
        result,
        Err((
            7,
            "thrift frame of 16385 bytes is larger than the 16384 bytes this server accepts"
                .to_string()
        ))
    );
    assert!(closes(&mut s));
    // A length of 4 GiB less one; its bytes follow, and are not read.
    let mut s = connect(thrift);
    s.write_all(&u32::MAX.to_be_bytes()).unwrap();
    let _ = s.write_all(&[b'x'; 64 * 1024]);
    assert_eq!(
        reply(&mut s).2.unwrap_err().1,
        "thrift frame of 4294967295 bytes is larger than the 16384 bytes this server accepts"
    );
    assert!(closes(&mut s));
    // A client of the unframed transport.
    let mut s = connect(thrift);
    s.write_all(&call("get_id", 1, Some("unframed"))).unwrap();
    assert_eq!(
        reply(&mut s).2.unwrap_err().1,
        "thrift frame of 2147549185 bytes is larger than the 16384 bytes this server accepts: the client seems to send unframed messages; this port speaks the framed transport"
    );
    assert!(closes(&mut s));

    // Garbage in a frame: answered, then closed, for what follows cannot be trusted.
    let mut s = connect(thrift);
    s.write_all(&framed(b"\x80\x01\x00\x01GET / HTTP/1.1\r\n\r\n"))
        .unwrap();
    let (_, _, result) = reply(&mut s);
    assert_eq!(
        result,
        Err((
            7,
            "cannot read a thrift call from a frame of 22 bytes: message too long: byte array size 1195725856 exceeds maximum allowed size of 22"
                .to_string()
        ))
    );
    assert!(closes(&mut s));
    // An HTTP request on the Thrift port: its first bytes are a length over the cap.
    let mut s = connect(thrift);
    s.write_all(b"GET /v1/id HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert_eq!(
        reply(&mut s).2.unwrap_err().1,
        "thrift frame of 1195725856 bytes is larger than the 16384 bytes this server accepts"
    );
    assert!(closes(&mut s));

    // A refused call keeps its connection: an unknown method, a bad user agent, arguments
    // that cannot be read (a frame holds the whole call, so the next starts cleanly), then
    // ids, even when the calls come all at once.
    let mut s = connect(thrift);
    let mut calls = framed(&call("get_ids", 5, None));
    calls.extend(framed(&call("get_id", 6, Some("no agent"))));
    // The user agent's field begins, and the frame ends before its length.
    let mut cut = call("get_id", 7, Some("agent"));
    cut.truncate(cut.len() - "agent".len() - 5);
    calls.extend(framed(&cut));
    calls.extend(framed(&call("get_id", 8, Some("agent"))));
    s.write_all(&calls).unwrap();
    assert_eq!(reply(&mut s).2.unwrap_err().0, 1);
    let (_, seq, result) = reply(&mut s);
    assert_eq!(
        (seq, result),
        (6, Err((6, format!("user agent \"no agent\" {RULE}"))))
    );
    let (name, seq, result) = reply(&mut s);
    assert_eq!(
        (name.as_str(), seq, result),
        (
            "get_id",
            7,
            Err((
                PROTOCOL_ERROR as i32,
                "cannot read the arguments of get_id: the message ends early".to_string()
            ))
        )
    );
    let (name, seq, id) = reply(&mut s);
    assert_eq!((name.as_str(), seq), ("get_id", 8));
    assert!(still_serves(thrift) > id.unwrap());
    assert!(metric_line(
        &serve,
        "snowmint_requests_total{protocol=\"thrift\",route=\"unmatched\",status=\"3\"} 6"
    ));

    // Connections between calls, or silent, do not hold up a graceful stop.
    let _silent = connect(thrift);
    let asked = Instant::now();
    let status = serve.terminate();
    let took = asked.elapsed();
    assert!(status.success(), "exit status {status}\n{}", serve.logged());
    assert!(
        !serve.logged().contains("after the grace period"),
        "{took:?}"
    );
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(closes(&mut s));
}

#[test]
fn half_frames_and_silent_connections_are_closed_like_the_other_ports() {
    let state = tempfile::tempdir().unwrap();
    let serve = start(
        state.path(),
        &[
            "--header-read-timeout-ms",
            "1000",
            "--idle-timeout-ms",
            "2500",
            "--max-connections",
            "600",
        ],
    );
    let thrift = serve.thrift.unwrap();
    let begun = Instant::now();
    // Half a frame, then nothing.
    let mut half = connect(thrift);
    let whole = framed(&call("get_id", 1, Some("half")));
    half.write_all(&whole[..whole.len() / 2]).unwrap();
    // One call, then an idle connection: it outlives the frame timeout, until idle.
    let mut kept = connect(thrift);
    kept.write_all(&whole).unwrap();
    reply(&mut kept).2.unwrap();
    let answered = Instant::now();
    // A thousand silent connections: those past max_connections are refused at once, the
    // others closed when their first frame does not come.
    let mut silent: Vec<TcpStream> = (0..1000).map(|_| connect(thrift)).collect();

    assert!(closes(&mut half));
    let half_closed = begun.elapsed();
    assert!(
        half_closed >= Duration::from_millis(900) && half_closed < Duration::from_secs(4),
        "{half_closed:?}"
    );
    for s in &mut silent {
        assert!(closes(s), "a silent connection stays open");
    }
    assert!(
        begun.elapsed() < Duration::from_secs(5),
        "{:?}",
        begun.elapsed()
    );
    assert!(closes(&mut kept));
    let kept_closed = answered.elapsed();
    assert!(
        kept_closed >= Duration::from_millis(2400) && kept_closed < Duration::from_secs(6),
        "{kept_closed:?}"
    );

    // Each silent one was refused or timed out; the half frame timed out too.
    let metrics = serve.get("/metrics").1;
    let count = |name: &str| -> u64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or(0)
    };
    let refused = count("snowmint_connections_refused_total{protocol=\"thrift\"}");
    let timed_out =
        count("snowmint_connections_timed_out_total{protocol=\"thrift\",timeout=\"header_read\"}");
    assert!(refused >= 400, "{refused} refused\n{metrics}");
    assert_eq!(refused + timed_out, 1001, "{metrics}");
    assert_eq!(
        count("snowmint_connections_timed_out_total{protocol=\"thrift\",timeout=\"idle\"}"),
        1,
        "{metrics}"
    );
    assert_eq!(
        count("snowmint_connections_open{protocol=\"thrift\"}"),
        0,
        "{metrics}"
    );
    assert!(still_serves(thrift) > 0);
}
