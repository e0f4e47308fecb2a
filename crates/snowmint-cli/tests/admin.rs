//! The admin port (`--admin-addr`), tried on a real `snowmint serve` over loopback: while
//! keep-alive clients that make progress hold every connection `max_connections` allows,
//! the HTTP port's probes are refused and the admin port's are answered; the admin port
//! serves the probes and the metrics and nothing else, within a cap of its own.

use crate::support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use snowmint_server::ADMIN_MAX_CONNECTIONS;
use support::{Serve, error_of, read_kept, serve_command, spawn_logged};

/// The numbers: four places, a 3 s idle timeout, and holders that ask every 2.5 s,
/// so that each answer comes before the idle timeout could close their connection.
const MAX_CONNECTIONS: usize = 4;
const IDLE_TIMEOUT_MS: &str = "3000";
const HOLDER_EVERY: Duration = Duration::from_millis(2_500);
/// Probes asked on each port, one every [`PROBE_EVERY`]: 6 s, twice the idle timeout, so
/// the holders are answered twice (at 2.5 s and 5 s) while the probes run.
const PROBES: usize = 10;
const PROBE_EVERY: Duration = Duration::from_millis(600);

fn start(extra: &[&str]) -> (tempfile::TempDir, Serve) {
    let state = tempfile::tempdir().unwrap();
    let mut args = vec!["--grpc-addr", "off", "--admin-addr", "127.0.0.1:0"];
    args.extend(extra);
    let serve = spawn_logged(serve_command(state.path(), &args));
    (state, serve)
}

/// `GET path` on a connection of its own, as a probe asks it: the status, or what went
/// wrong when no status came back (a refused connection may be reset once answered).
fn probe(addr: SocketAddr, path: &str) -> Result<(u16, String), String> {
    let mut stream = TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let _ = write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n"
    );
    let mut answer = Vec::new();
    let read = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    let status = answer
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no status ({read:?}): {answer:?}"))?;
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    Ok((status, body.to_string()))
}

/// Asks `GET /healthz` on a kept-alive connection and reads the answer: the status.
fn keep_asking(stream: &mut TcpStream) -> std::io::Result<u16> {
    write!(stream, "GET /healthz HTTP/1.1\r\nHost: holder\r\n\r\n")?;
    read_kept(stream).map(|(status, _)| status)
}

#[test]
fn probes_answer_on_the_admin_port_while_keep_alive_clients_hold_every_connection() {
    let (_state, serve) = start(&[
        "--max-connections",
        &MAX_CONNECTIONS.to_string(),
        "--idle-timeout-ms",
        IDLE_TIMEOUT_MS,
    ]);
    let admin = serve.admin.expect("the server logs its admin address");
    let mut holders: Vec<TcpStream> = (0..MAX_CONNECTIONS)
        .map(|_| TcpStream::connect(serve.http).unwrap())
        .collect();
    for holder in &mut holders {
        holder
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        assert_eq!(keep_asking(holder).unwrap(), 200);
    }
    let stop = AtomicBool::new(false);
    let (public, answered, asked) = std::thread::scope(|scope| {
        // The holders: every 2.5 s an answer on each connection, which is progress.
        let holding = scope.spawn(|| {
            let mut answers = 0;
            let mut last = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                if last.elapsed() >= HOLDER_EVERY {
                    for holder in &mut holders {
                        assert_eq!(keep_asking(holder).expect("a holder is answered"), 200);
                        answers += 1;
                    }
                    last = Instant::now();
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            answers
        });
        let (mut public, mut answered) = (Vec::new(), Vec::new());
        for _ in 0..PROBES {
            public.push(probe(serve.http, "/healthz"));
            for path in ["/healthz", "/readyz", "/metrics"] {
                answered.push((path, probe(admin, path)));
            }
            std::thread::sleep(PROBE_EVERY);
        }
        stop.store(true, Ordering::Relaxed);
        (public, answered, holding.join().unwrap())
    });
    // The holders kept every place through more than one idle timeout.
    assert!(
        asked >= 2 * MAX_CONNECTIONS,
        "{asked} answers to the holders"
    );
    // On the HTTP port, the lockout: every probe refused.
    let refused = public.iter().filter(|p| !matches!(p, Ok((200, _)))).count();
    println!("HTTP port: {refused} of {PROBES} /healthz probes refused");
    assert_eq!(refused, PROBES, "{public:?}");
    for (status, body) in public.iter().flatten() {
        assert_eq!(*status, 503);
        assert_eq!(
            error_of(body),
            format!(
                "too many connections: all {MAX_CONNECTIONS} that max_connections allows are open; try again later"
            )
        );
    }
    // On the admin port, every probe and scrape answered.
    let ok = answered
        .iter()
        .filter(|(_, p)| matches!(p, Ok((200, _))))
        .count();
    println!(
        "admin port: {ok} of {} probes and scrapes answered",
        answered.len()
    );
    assert_eq!(ok, 3 * PROBES, "{answered:?}");
    let (_, last_scrape) = answered.last().unwrap();
    let metrics = &last_scrape.as_ref().unwrap().1;
    assert!(
        metrics.contains(&format!(
            "snowmint_connections_refused_total{{protocol=\"http\"}} {PROBES}\n"
        )),
        "{metrics}"
    );
    assert!(
        metrics.contains("snowmint_connections_refused_total{protocol=\"admin\"} 0\n"),
        "{metrics}"
    );
}

#[test]
fn the_admin_port_serves_only_the_probes_and_the_metrics() {
    let (_state, serve) = start(&[]);
    let admin = serve.admin.unwrap();
    for path in ["/healthz", "/readyz", "/metrics"] {
        assert_eq!(probe(admin, path).unwrap().0, 200, "{path}");
    }
    for path in [
        "/",
        "/v1/id",
        "/v1/ids?count=2",
        "/v1/layout",
        "/v1/decode/1",
        "/openapi.json",
    ] {
        let (status, body) = probe(admin, path).unwrap();
        let route = path.split('?').next().unwrap();
        assert_eq!(
            (status, error_of(&body)),
            (404, format!("no route for GET {route}")),
            "{path}"
        );
        // The same path on the HTTP port is served.
        assert_eq!(probe(serve.http, path).unwrap().0, 200, "{path}");
    }
    // Counted under their own protocol, apart from the HTTP port's requests.
    let metrics = probe(admin, "/metrics").unwrap().1;
    assert!(
        metrics.contains(
            "snowmint_requests_total{protocol=\"admin\",route=\"unmatched\",status=\"404\"} 6\n"
        ),
        "{metrics}"
    );
    assert!(
        metrics.contains(
            "snowmint_requests_total{protocol=\"admin\",route=\"/healthz\",status=\"200\"} 1\n"
        ),
        "{metrics}"
    );
}

#[test]
fn the_admin_port_has_a_cap_of_its_own() {
    // One place on the HTTP port, held: the admin port's are not the HTTP port's.
    let (_state, serve) = start(&["--max-connections", "1"]);
    let admin = serve.admin.unwrap();
    let _held_http = TcpStream::connect(serve.http).unwrap();
    let cap = ADMIN_MAX_CONNECTIONS as usize;
    let held: Vec<TcpStream> = (0..cap)
        .map(|_| TcpStream::connect(admin).unwrap())
        .collect();
    // Accepted in order: the next finds all of the admin port's places taken.
    let (status, body) = probe(admin, "/healthz").unwrap();
    assert_eq!(status, 503);
    assert_eq!(
        error_of(&body),
        format!(
            "too many connections: all {cap} that the admin port allows are open; try again later"
        )
    );
    // They leave; once the server has seen them go, a probe is answered again.
    drop(held);
    snowmint_testkit::eventually(Duration::from_secs(5), "a probe answered", || {
        match probe(admin, "/healthz") {
            Ok((200, _)) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });
}
