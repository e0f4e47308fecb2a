//! One id at a time, one thread, timed call by call: through the buffered client, through
//! `GET /v1/id`, and through Redis `INCR`, on loopback only, bounded in time.
//!
//! ```text
//! client_load buffered grpc|http ADDR[,ADDR...] SECONDS [RATE]
//!                                                         snowmint-client's next_id, as
//!                                                         fast as it goes or RATE a second
//! client_load per-id ADDR SECONDS                         GET /v1/id, one keep-alive connection
//! client_load incr ADDR SECONDS                           Redis INCR, one connection
//! client_load timer SECONDS                               nothing: the timer and the machine
//! ```
//!
//! Each runs one second untimed first (connections made, the client's batch size grown),
//! then times every call for SECONDS with two readings of `Instant::now` (whose own cost,
//! about 20 ns here, is inside every figure), and prints one line of `key=value` pairs:
//! calls, ids per second, latency p50/p99/p99.9/p99.99/max in ns, and how many calls took
//! longer than 1 µs, 10 µs, 100 µs and 1 ms.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use snowmint_client::{Client, Transport};

/// Stops a run that cannot reach its end, whatever the arguments say.
const MAX_SECONDS: u64 = 120;
const WARM_UP: Duration = Duration::from_secs(1);
/// Latencies below this are counted in 1 ns buckets; the rest are kept as they are.
const LINEAR_NS: usize = 100_000;
/// Calls between two readings of the clock for the end of the run (inside the timed
/// calls, so it costs a comparison a call).
const CHECK_EVERY: u64 = 1024;

struct Histogram {
    buckets: Vec<u64>,
    beyond: Vec<u64>,
    calls: u64,
}

impl Histogram {
    fn new() -> Histogram {
        Histogram {
            buckets: vec![0; LINEAR_NS],
            beyond: Vec::new(),
            calls: 0,
        }
    }

    #[inline]
    fn record(&mut self, ns: u64) {
        self.calls += 1;
        match self.buckets.get_mut(ns as usize) {
            Some(count) => *count += 1,
            None => self.beyond.push(ns),
        }
    }

    /// The latency at or below which `share` of the calls fell; after [`Histogram::sort`].
    fn percentile(&self, share: f64) -> u64 {
        let rank = ((self.calls as f64 * share).ceil() as u64).max(1);
        let mut seen = 0;
        for (ns, count) in self.buckets.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return ns as u64;
            }
        }
        let index = (rank - seen - 1) as usize;
        self.beyond[index.min(self.beyond.len() - 1)]
    }

    fn sort(&mut self) {
        self.beyond.sort_unstable();
    }

    fn max(&self) -> u64 {
        self.beyond.iter().copied().max().unwrap_or_else(|| {
            self.buckets
                .iter()
                .rposition(|&c| c > 0)
                .unwrap_or_default() as u64
        })
    }

    fn over(&self, ns: u64) -> u64 {
        let linear: u64 = self.buckets.iter().skip(ns as usize + 1).sum();
        linear + self.beyond.iter().filter(|&&v| v > ns).count() as u64
    }
}

/// Calls `call` for `seconds`, timing each, after a second of untimed calls; with a
/// `rate`, each call waits (spinning on the clock, outside its timing) until it is due, so
/// `rate` calls a second are made unless they cannot keep up.
fn run(seconds: u64, rate: Option<f64>, mut call: impl FnMut()) -> (Histogram, Duration) {
    let interval = rate.map(|r| Duration::from_secs_f64(1.0 / r));
    let warm = Instant::now();
    let mut due = warm;
    while warm.elapsed() < WARM_UP {
        pace(interval, &mut due);
        call();
    }
    let limit = Duration::from_secs(seconds.min(MAX_SECONDS));
    let mut histogram = Histogram::new();
    let start = Instant::now();
    due = start;
    loop {
        for _ in 0..CHECK_EVERY {
            pace(interval, &mut due);
            let before = Instant::now();
            call();
            let took = before.elapsed();
            histogram.record(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX));
        }
        if start.elapsed() >= limit {
            break;
        }
    }
    (histogram, start.elapsed())
}

/// Spins until `due`, then sets the next call's due time.
#[inline]
fn pace(interval: Option<Duration>, due: &mut Instant) {
    if let Some(interval) = interval {
        while Instant::now() < *due {
            std::hint::spin_loop();
        }
        *due += interval;
    }
}

fn report(mut histogram: Histogram, elapsed: Duration) {
    histogram.sort();
    println!(
        "calls={} ids_per_s={:.0} p50_ns={} p99_ns={} p999_ns={} p9999_ns={} max_ns={} over_1us={} over_10us={} over_100us={} over_1ms={}",
        histogram.calls,
        histogram.calls as f64 / elapsed.as_secs_f64(),
        histogram.percentile(0.50),
        histogram.percentile(0.99),
        histogram.percentile(0.999),
        histogram.percentile(0.9999),
        histogram.max(),
        histogram.over(1_000),
        histogram.over(10_000),
        histogram.over(100_000),
        histogram.over(1_000_000),
    );
}

fn loopback(addr: &str) -> SocketAddr {
    let addr: SocketAddr = addr.parse().expect("an address like 127.0.0.1:50051");
    assert!(
        addr.ip().is_loopback(),
        "load goes to loopback addresses only"
    );
    addr
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: client_load buffered grpc|http ADDR[,ADDR...] SECONDS [RATE] | per-id ADDR SECONDS | incr ADDR SECONDS | timer SECONDS";
    let seconds = |i: usize| -> u64 { args.get(i).and_then(|s| s.parse().ok()).expect(usage) };
    match args.get(1).map(String::as_str) {
        Some("buffered") => {
            let transport = match args.get(2).map(String::as_str) {
                Some("grpc") => Transport::Grpc,
                Some("http") => Transport::Http,
                _ => panic!("{usage}"),
            };
            let endpoints: Vec<String> = args
                .get(3)
                .expect(usage)
                .split(',')
                .map(|addr| format!("http://{}", loopback(addr)))
                .collect();
            let client = Client::builder()
                .endpoints(endpoints)
                .transport(transport)
                .build_blocking()
                .expect("a client");
            let rate = args.get(5).map(|r| r.parse::<f64>().expect(usage));
            let (histogram, elapsed) = run(seconds(4), rate, || {
                std::hint::black_box(client.next_id().expect("an id"));
            });
            report(histogram, elapsed);
            eprintln!("{:?}", client.stats());
        }
        Some("per-id") => {
            let mut conn = HttpConn::new(loopback(args.get(2).expect(usage)));
            let (histogram, elapsed) = run(seconds(3), None, || conn.id());
            report(histogram, elapsed);
        }
        Some("incr") => {
            let mut conn = RedisConn::new(loopback(args.get(2).expect(usage)));
            let (histogram, elapsed) = run(seconds(3), None, || conn.incr());
            report(histogram, elapsed);
        }
        Some("timer") => {
            let (histogram, elapsed) = run(seconds(2), None, || std::hint::black_box(()));
            report(histogram, elapsed);
        }
        _ => panic!("{usage}"),
    }
}

/// `GET /v1/id` on one kept-alive HTTP/1.1 connection.
struct HttpConn {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
    request: Vec<u8>,
    line: String,
    body: Vec<u8>,
}

impl HttpConn {
    fn new(addr: SocketAddr) -> HttpConn {
        let stream = TcpStream::connect(addr).expect("connect");
        stream.set_nodelay(true).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        HttpConn {
            writer: stream.try_clone().unwrap(),
            reader: BufReader::new(stream),
            request: format!("GET /v1/id HTTP/1.1\r\nHost: {addr}\r\n\r\n").into_bytes(),
            line: String::new(),
            body: Vec::new(),
        }
    }

    fn id(&mut self) {
        self.writer.write_all(&self.request).expect("send");
        let mut length = 0;
        let mut status = 0;
        loop {
            self.line.clear();
            assert!(
                self.reader.read_line(&mut self.line).expect("read") > 0,
                "closed"
            );
            if status == 0 {
                status = self
                    .line
                    .get(9..12)
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
            } else if let Some(v) = self
                .line
                .strip_prefix("content-length: ")
                .or_else(|| self.line.strip_prefix("Content-Length: "))
            {
                length = v.trim().parse().expect("a length");
            } else if self.line == "\r\n" {
                break;
            }
        }
        self.body.resize(length, 0);
        self.reader.read_exact(&mut self.body).expect("body");
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&self.body));
    }
}

/// `INCR` on one connection, in RESP.
struct RedisConn {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
    line: String,
}

impl RedisConn {
    const INCR: &[u8] = b"*2\r\n$4\r\nINCR\r\n$16\r\nsnowmint:counter\r\n";

    fn new(addr: SocketAddr) -> RedisConn {
        let stream = TcpStream::connect(addr).expect("connect");
        stream.set_nodelay(true).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        RedisConn {
            writer: stream.try_clone().unwrap(),
            reader: BufReader::new(stream),
            line: String::new(),
        }
    }

    fn incr(&mut self) {
        self.writer.write_all(Self::INCR).expect("send");
        self.line.clear();
        self.reader.read_line(&mut self.line).expect("read");
        assert!(self.line.starts_with(':'), "{}", self.line);
    }
}
