//! An experiment, not a server: `GET /v1/id` over HTTP/1.1 keep-alive on one thread driven
//! by io_uring, to measure what the kernel's share of a request becomes when the receives
//! and sends of every connection go through a few `io_uring_enter` calls instead of one
//! `epoll_wait`, `recvfrom` and `writev` each (issue 27, part 5; docs/BENCHMARKS.md, "The
//! kernel's share of a request", has the figures and the verdict).
//!
//! ```text
//! uring_id --state-dir DIR [--addr 127.0.0.1:0] [--seconds 10] [--worker 0]
//!          [--ring defer|plain] [--recv poll-first|try-first]
//! scripts/bench-uring [SECONDS_PER_STEP] [ROUNDS] [DEPTH]   # against snowmint serve
//! ```
//!
//! It prints `listening on ADDR` when ready, serves until `--seconds` have passed (at most
//! 600), and then prints one line of `key=value` counts: requests answered, connections,
//! `io_uring_enter` calls and completions, and ids out of order (always 0, or it exits 1).
//! Measure it as `scripts/bench-server` measures `snowmint serve`: `wrk -t1 -cN` against
//! `/v1/id`, utime + stime from `/proc/PID/stat` over the requests wrk reports, and
//! `strace -c -f -p PID` for the system calls.
//!
//! What it does as the server does: each id comes from the core's `Generator` with the
//! server's default settings (twitter layout, monotonic clock) and a high-water mark in a
//! state file ([`FileStore`]), and each answer is the server's bytes: status line,
//! `content-type`, `content-length`, `date`, `{"id":"..."}`. What it leaves out: every other
//! route, TLS, metrics, readiness, the watchdog, leases; a spent tick parks the one thread
//! (the server waits on its runtime's timer). Anything but `GET /v1/id` without a body gets
//! an empty 400 and the connection is closed; a head longer than [`INPUT_BYTES`] gets 431.
//!
//! The loop: one `Recv` in flight per connection and at most one `Send`. Each completion
//! parses every whole request in the input (pipelined ones in order), appends their answers
//! to the connection's queue, and sends the queue in one `Send` once the one before has
//! gone out whole (a short send is sent on from where it stopped). All the operations
//! queued while handling one batch of completions go to the kernel in the next
//! `submit_and_wait`. A connection whose peer closed, or that failed, is freed once none of
//! its operations is in flight.

use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use clap::Parser;
use io_uring::{IoUring, opcode, squeue, types};
use snowmint::{ClockMode, Encoding, Generator, Id, Layout, ModeClock, Store};
use snowmint_lease::{FileStore, Fleet};

/// The longest run, whatever `--seconds` says.
const MAX_SECONDS: u64 = 600;
/// A connection's input buffer: a request head that does not fit is refused with 431.
const INPUT_BYTES: usize = 8 * 1024;
/// Answers queued but not yet sent past which a connection's input is not read until its
/// peer has read some: a client that pipelines without reading cannot grow the queue.
const QUEUED_BYTES_MAX: usize = 64 * 1024;
/// Connections at once; more are closed as they come. Two operations each at most, so the
/// completion queue (twice the submission queue) never overflows.
const MAX_CONNS: usize = 1000;
/// Submission queue entries: a connection's two operations, the accept and the deadline.
const RING_ENTRIES: u32 = 2048;
/// The headers parsed in one request head; more is a 431, as hyper's limit of 100.
const MAX_HEADERS: usize = 100;

const ACCEPT: u64 = 1;
const RECV: u64 = 2;
const SEND: u64 = 3;
const DEADLINE: u64 = 4;
/// `user_data` is the connection's slot above these bits and the operation in them.
const KIND_BITS: u32 = 8;

const BAD_REQUEST: &[u8] =
    b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
const TOO_LARGE: &[u8] =
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
const UNAVAILABLE: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";

/// `GET /v1/id` on io_uring, one thread, for a bounded time (an experiment).
#[derive(Parser, Debug)]
struct Args {
    /// Loopback address to listen on; port 0 picks a free one (default: 127.0.0.1:0)
    #[arg(long, default_value = "127.0.0.1:0")]
    addr: SocketAddr,
    /// Stop after this many seconds, at most 600 (default: 10)
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Directory of the high-water-mark file, as `snowmint serve --state-dir`
    #[arg(long)]
    state_dir: PathBuf,
    /// Worker id of the generator (default: 0); give it one no running server uses
    #[arg(long, default_value_t = 0)]
    worker: u64,
    /// Ring set-up: `defer` (single issuer, task work deferred to `io_uring_enter`) or
    /// `plain` (no flags) (default: defer)
    #[arg(long, default_value = "defer")]
    ring: RingSetup,
    /// How a receive starts: `poll-first` waits for data before trying (the next request
    /// comes only after the answer to the last), `try-first` tries at once and waits only
    /// if nothing is there (default: poll-first)
    #[arg(long, default_value = "poll-first")]
    recv: RecvStart,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum RecvStart {
    PollFirst,
    TryFirst,
}

/// `IORING_RECVSEND_POLL_FIRST`, in a receive's `ioprio` (include/uapi/linux/io_uring.h).
const RECVSEND_POLL_FIRST: u16 = 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum RingSetup {
    Defer,
    Plain,
}

/// What a run did, printed at the end.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Summary {
    requests: u64,
    accepted: u64,
    closed: u64,
    enters: u64,
    completions: u64,
    out_of_order: u64,
}

fn main() {
    let args = Args::parse();
    assert!(
        args.addr.ip().is_loopback(),
        "an experiment: it listens on loopback addresses only"
    );
    let listener = TcpListener::bind(args.addr).expect("bind the listen address");
    let generator = generator(&args.state_dir, args.worker).expect("build the generator");
    println!(
        "listening on {}",
        listener.local_addr().expect("the bound address")
    );
    let seconds = args.seconds.min(MAX_SECONDS);
    let summary = serve(
        &listener,
        &generator,
        Duration::from_secs(seconds),
        args.ring,
        args.recv,
    )
    .expect("run the ring");
    generator.shutdown().expect("lower the high-water mark");
    let Summary {
        requests,
        accepted,
        closed,
        enters,
        completions,
        out_of_order,
    } = summary;
    println!(
        "requests={requests} accepted={accepted} closed={closed} enters={enters} completions={completions} out_of_order={out_of_order}"
    );
    if out_of_order > 0 {
        std::process::exit(1);
    }
}

/// The generator `snowmint serve` builds by default (`source.rs`): twitter layout,
/// datacenter 0, monotonic clock, its mark in a state file of the default fleet.
fn generator(dir: &std::path::Path, worker: u64) -> Result<Generator<ModeClock>, String> {
    let layout = Layout::TWITTER;
    let mode = ClockMode::Monotonic;
    let store = FileStore::for_generator(dir, &Fleet::default(), &layout, 0, worker)
        .map_err(|e| e.to_string())?
        .with_clock(mode);
    Generator::builder(layout)
        .worker(worker)
        .clock(ModeClock::new(mode))
        .mode(mode)
        .store(Arc::new(store) as Arc<dyn Store>)
        .build()
        .map_err(|e| e.to_string())
}

/// One connection: its socket, its input, and the answers being sent and queued.
struct Conn {
    stream: TcpStream,
    input: Box<[u8]>,
    filled: usize,
    /// Bytes the `Send` in flight points into: never touched until it completes.
    sending: Vec<u8>,
    sent: usize,
    /// Answers written while a `Send` was in flight.
    queued: Vec<u8>,
    recv_in_flight: bool,
    send_in_flight: bool,
    /// Close once what is queued has gone out (a refusal, or `connection: close`).
    close_after_send: bool,
    /// The peer closed, or an operation failed: freed once nothing is in flight.
    closing: bool,
}

/// The `date` header's value, formatted again when the second changes.
struct DateCache {
    second: u64,
    text: String,
}

impl DateCache {
    fn refresh(&mut self) {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        if now.as_secs() != self.second || self.text.is_empty() {
            self.second = now.as_secs();
            let at = jiff::Timestamp::from_second(self.second as i64).unwrap_or_default();
            self.text = jiff::fmt::rfc2822::DateTimePrinter::new()
                .timestamp_to_rfc9110_string(&at)
                .unwrap_or_default();
        }
    }
}

struct Server<'a> {
    ring: IoUring,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    listener: RawFd,
    generator: &'a Generator<ModeClock>,
    recv_ioprio: u16,
    last: Option<Id>,
    date: DateCache,
    summary: Summary,
}

/// Serves until `limit` has passed, then closes every connection and returns the counts.
fn serve(
    listener: &TcpListener,
    generator: &Generator<ModeClock>,
    limit: Duration,
    setup: RingSetup,
    recv: RecvStart,
) -> io::Result<Summary> {
    let mut builder = IoUring::builder();
    if setup == RingSetup::Defer {
        builder.setup_single_issuer().setup_defer_taskrun();
    }
    let mut server = Server {
        ring: builder.build(RING_ENTRIES)?,
        conns: Vec::with_capacity(MAX_CONNS),
        free: Vec::new(),
        listener: listener.as_raw_fd(),
        generator,
        recv_ioprio: match recv {
            RecvStart::PollFirst => RECVSEND_POLL_FIRST,
            RecvStart::TryFirst => 0,
        },
        last: None,
        date: DateCache {
            second: 0,
            text: String::new(),
        },
        summary: Summary::default(),
    };
    // The kernel reads the timespec when the operation is submitted; it lives to the end.
    let deadline = types::Timespec::from(limit);
    server.push(opcode::Timeout::new(&deadline).build().user_data(DEADLINE))?;
    server.push_accept()?;
    let mut done: Vec<(u64, i32)> = Vec::with_capacity(RING_ENTRIES as usize * 2);
    let mut stopping = false;
    while !stopping || server.live() > 0 {
        server.summary.enters += 1;
        match server.ring.submit_and_wait(1) {
            // A signal (a tracer attaching): nothing was lost, enter again.
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            result => result?,
        };
        done.extend(
            server
                .ring
                .completion()
                .map(|c| (c.user_data(), c.result())),
        );
        server.summary.completions += done.len() as u64;
        server.date.refresh();
        for &(data, result) in &done {
            let slot = (data >> KIND_BITS) as usize;
            match data & ((1 << KIND_BITS) - 1) {
                ACCEPT => server.accepted(result, stopping)?,
                RECV => server.received(slot, result)?,
                SEND => server.sent(slot, result)?,
                DEADLINE => {
                    stopping = true;
                    // Each connection's receive then ends with 0, and it is freed.
                    for slot in 0..server.conns.len() {
                        if let Some(conn) = server.conns[slot].as_mut() {
                            conn.closing = true;
                            let _ = conn.stream.shutdown(Shutdown::Both);
                            server.release(slot);
                        }
                    }
                }
                _ => {}
            }
        }
        done.clear();
    }
    Ok(server.summary)
}

impl Server<'_> {
    fn live(&self) -> usize {
        self.conns.len() - self.free.len()
    }

    fn push(&mut self, entry: squeue::Entry) -> io::Result<()> {
        loop {
            // SAFETY: every buffer an entry points into (a connection's input or `sending`,
            // the deadline's timespec) stays where it is, untouched, until its completion.
            if unsafe { self.ring.submission().push(&entry) }.is_ok() {
                return Ok(());
            }
            self.summary.enters += 1;
            match self.ring.submit() {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                result => drop(result?),
            }
        }
    }

    fn push_accept(&mut self) -> io::Result<()> {
        let entry = opcode::Accept::new(
            types::Fd(self.listener),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
        .flags(libc::SOCK_CLOEXEC)
        .build()
        .user_data(ACCEPT);
        self.push(entry)
    }

    /// A new connection, taken unless the run is ending or full; the next accept queued.
    fn accepted(&mut self, result: i32, stopping: bool) -> io::Result<()> {
        if result >= 0 {
            // SAFETY: the kernel just handed over this descriptor: nothing else owns it.
            let stream = unsafe { TcpStream::from_raw_fd(result) };
            if stopping {
                return Ok(());
            }
            if self.live() >= MAX_CONNS {
                drop(stream);
            } else {
                self.summary.accepted += 1;
                // As `snowmint serve` does (net/mod.rs).
                let _ = stream.set_nodelay(true);
                let conn = Conn {
                    stream,
                    input: vec![0; INPUT_BYTES].into_boxed_slice(),
                    filled: 0,
                    sending: Vec::new(),
                    sent: 0,
                    queued: Vec::new(),
                    recv_in_flight: false,
                    send_in_flight: false,
                    close_after_send: false,
                    closing: false,
                };
                let slot = match self.free.pop() {
                    Some(slot) => {
                        self.conns[slot] = Some(conn);
                        slot
                    }
                    None => {
                        self.conns.push(Some(conn));
                        self.conns.len() - 1
                    }
                };
                self.push_recv(slot)?;
            }
        }
        self.push_accept()
    }

    fn push_recv(&mut self, slot: usize) -> io::Result<()> {
        let conn = self.conns[slot].as_mut().expect("a live connection");
        let spare = &mut conn.input[conn.filled..];
        let entry = opcode::Recv::new(
            types::Fd(conn.stream.as_raw_fd()),
            spare.as_mut_ptr(),
            spare.len() as u32,
        )
        .ioprio(self.recv_ioprio)
        .build()
        .user_data(((slot as u64) << KIND_BITS) | RECV);
        conn.recv_in_flight = true;
        self.push(entry)
    }

    /// Sends what is queued if nothing is in flight.
    fn flush(&mut self, slot: usize) -> io::Result<()> {
        let conn = self.conns[slot].as_mut().expect("a live connection");
        if conn.send_in_flight || conn.closing || conn.queued.is_empty() {
            return Ok(());
        }
        std::mem::swap(&mut conn.sending, &mut conn.queued);
        conn.sent = 0;
        self.push_send(slot)
    }

    fn push_send(&mut self, slot: usize) -> io::Result<()> {
        let conn = self.conns[slot].as_mut().expect("a live connection");
        let rest = &conn.sending[conn.sent..];
        // MSG_NOSIGNAL: a peer gone is an error on this connection, not SIGPIPE.
        let entry = opcode::Send::new(
            types::Fd(conn.stream.as_raw_fd()),
            rest.as_ptr(),
            rest.len() as u32,
        )
        .flags(libc::MSG_NOSIGNAL)
        .build()
        .user_data(((slot as u64) << KIND_BITS) | SEND);
        conn.send_in_flight = true;
        self.push(entry)
    }

    fn received(&mut self, slot: usize, result: i32) -> io::Result<()> {
        let conn = self.conns[slot].as_mut().expect("a live connection");
        conn.recv_in_flight = false;
        if result <= 0 || conn.closing {
            // 0: the peer closed; below 0: the connection failed.
            conn.closing = true;
            self.release(slot);
            return Ok(());
        }
        conn.filled += result as usize;
        self.answer(slot);
        self.flush(slot)?;
        self.read_more(slot)
    }

    fn sent(&mut self, slot: usize, result: i32) -> io::Result<()> {
        let conn = self.conns[slot].as_mut().expect("a live connection");
        conn.send_in_flight = false;
        if result <= 0 || conn.closing {
            conn.closing = true;
            self.release(slot);
            return Ok(());
        }
        conn.sent += result as usize;
        if conn.sent < conn.sending.len() {
            // A short send: the rest from where it stopped.
            return self.push_send(slot);
        }
        conn.sending.clear();
        if conn.queued.is_empty() && conn.close_after_send {
            conn.closing = true;
            let _ = conn.stream.shutdown(Shutdown::Both);
            self.release(slot);
            return Ok(());
        }
        self.flush(slot)?;
        self.read_more(slot)
    }

    /// Reads on, unless a read is in flight, the connection is ending, or its peer has
    /// not read enough of what is queued.
    fn read_more(&mut self, slot: usize) -> io::Result<()> {
        let conn = self.conns[slot].as_mut().expect("a live connection");
        if conn.recv_in_flight
            || conn.closing
            || conn.close_after_send
            || conn.queued.len() >= QUEUED_BYTES_MAX
        {
            return Ok(());
        }
        self.push_recv(slot)
    }

    /// Frees the slot if none of its operations is in flight (the socket closes on drop).
    fn release(&mut self, slot: usize) {
        let conn = self.conns[slot].as_ref().expect("a live connection");
        if conn.closing && !conn.recv_in_flight && !conn.send_in_flight {
            self.conns[slot] = None;
            self.free.push(slot);
            self.summary.closed += 1;
        }
    }

    /// Answers every whole request in the input, in order, and keeps the partial rest.
    fn answer(&mut self, slot: usize) {
        let Server {
            conns,
            generator,
            last,
            date,
            summary,
            ..
        } = self;
        let conn = conns[slot].as_mut().expect("a live connection");
        let mut start = 0;
        while !conn.close_after_send {
            let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut request = httparse::Request::new(&mut headers);
            let refusal = match request.parse(&conn.input[start..conn.filled]) {
                Ok(httparse::Status::Partial) => break,
                Ok(httparse::Status::Complete(len)) => {
                    start += len;
                    match head_of_one(&request) {
                        Some(keep_alive) => {
                            conn.close_after_send = !keep_alive;
                            match generator.next_id() {
                                Ok(id) => {
                                    if last.is_some_and(|last| id <= last) {
                                        summary.out_of_order += 1;
                                    }
                                    *last = Some(id);
                                    summary.requests += 1;
                                    write_answer(&mut conn.queued, id, &date.text);
                                    continue;
                                }
                                Err(_) => UNAVAILABLE,
                            }
                        }
                        None => BAD_REQUEST,
                    }
                }
                Err(httparse::Error::TooManyHeaders) => TOO_LARGE,
                Err(_) => BAD_REQUEST,
            };
            conn.queued.extend_from_slice(refusal);
            conn.close_after_send = true;
        }
        conn.input.copy_within(start..conn.filled, 0);
        conn.filled -= start;
        if conn.filled == conn.input.len() && !conn.close_after_send {
            conn.queued.extend_from_slice(TOO_LARGE);
            conn.close_after_send = true;
        }
    }
}

/// For `GET /v1/id` over HTTP/1.1 with no body: whether the connection stays open after
/// it. `None` for anything else.
fn head_of_one(request: &httparse::Request<'_, '_>) -> Option<bool> {
    if request.method != Some("GET") || request.path != Some("/v1/id") || request.version != Some(1)
    {
        return None;
    }
    let mut keep_alive = true;
    for header in request.headers.iter() {
        if header.name.eq_ignore_ascii_case("content-length") {
            if header.value != b"0" {
                return None;
            }
        } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
            return None;
        } else if header.name.eq_ignore_ascii_case("connection")
            && header.value.eq_ignore_ascii_case(b"close")
        {
            keep_alive = false;
        }
    }
    Some(keep_alive)
}

/// The bytes `snowmint serve` answers `GET /v1/id` with.
fn write_answer(out: &mut Vec<u8>, id: Id, date: &str) {
    use std::io::Write;
    let mut buf = [0u8; Encoding::BUF_LEN];
    let digits = id.encode(Encoding::Decimal, &mut buf);
    // `{"id":"` and `"}` around the digits.
    let body_len = digits.len() + 9;
    let _ = write!(
        out,
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {body_len}\r\ndate: {date}\r\n\r\n{{\"id\":\"{digits}\"}}"
    );
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::thread;

    use super::*;

    /// Runs the loop on a thread for `seconds` and hands the test its address.
    fn start(seconds: u64) -> (SocketAddr, thread::JoinHandle<Summary>, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let state = dir.path().to_path_buf();
        let handle = thread::spawn(move || {
            let generator = generator(&state, 0).unwrap();
            let summary = serve(
                &listener,
                &generator,
                Duration::from_secs(seconds),
                RingSetup::Defer,
                RecvStart::PollFirst,
            )
            .unwrap();
            generator.shutdown().unwrap();
            summary
        });
        (addr, handle, dir)
    }

    /// Reads one answer: its status line, its headers and the id in its body.
    fn read_answer(reader: &mut impl BufRead) -> (String, Vec<String>, u64) {
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        let mut headers = Vec::new();
        let mut len = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if line == "\r\n" {
                break;
            }
            if let Some(v) = line.strip_prefix("content-length: ") {
                len = v.trim().parse().unwrap();
            }
            headers.push(line);
        }
        let mut body = vec![0; len];
        reader.read_exact(&mut body).unwrap();
        let body = String::from_utf8(body).unwrap();
        let id = body
            .strip_prefix("{\"id\":\"")
            .and_then(|b| b.strip_suffix("\"}"))
            .unwrap_or_else(|| panic!("body {body:?}"))
            .parse()
            .unwrap();
        (status, headers, id)
    }

    #[test]
    fn answers_pipelined_split_and_many_unread_requests_in_order() {
        let (addr, handle, _dir) = start(3);
        let one = b"GET /v1/id HTTP/1.1\r\nHost: x\r\n\r\n";
        let mut stream = TcpStream::connect(addr).unwrap();
        // Three in one write, then one split across writes.
        stream.write_all(&one.repeat(3)).unwrap();
        stream.write_all(&one[..10]).unwrap();
        stream.flush().unwrap();
        thread::sleep(Duration::from_millis(50));
        stream.write_all(&one[10..]).unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut ids = Vec::new();
        for _ in 0..4 {
            let (status, headers, id) = read_answer(&mut reader);
            assert_eq!(status, "HTTP/1.1 200 OK\r\n");
            assert_eq!(headers[0], "content-type: application/json\r\n");
            assert!(headers[2].starts_with("date: ") && headers[2].ends_with(" GMT\r\n"));
            ids.push(id);
        }
        // Far more than the socket buffers hold, written before any answer is read: the
        // server stops reading, sends short, and catches up as the answers are read.
        let many = 20_000;
        let mut writer = stream.try_clone().unwrap();
        let sender = thread::spawn(move || writer.write_all(&one.repeat(many)).unwrap());
        for _ in 0..many {
            ids.push(read_answer(&mut reader).2);
        }
        sender.join().unwrap();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids increase");
        drop((reader, stream));
        let summary = handle.join().unwrap();
        assert_eq!(summary.requests, 4 + many as u64);
        assert_eq!(summary.out_of_order, 0);
        assert_eq!(summary.accepted, summary.closed);
    }

    #[test]
    fn refuses_other_requests_and_frees_closed_connections() {
        let (addr, handle, _dir) = start(2);
        for _ in 0..50 {
            drop(TcpStream::connect(addr).unwrap());
        }
        let mut stream = TcpStream::connect(addr).unwrap();
        stream
            .write_all(b"GET /v1/ids HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        assert_eq!(
            answer,
            "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        );
        let mut stream = TcpStream::connect(addr).unwrap();
        stream
            .write_all(b"GET /v1/id HTTP/1.1\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut reader = BufReader::new(stream);
        let (status, ..) = read_answer(&mut reader);
        assert_eq!(status, "HTTP/1.1 200 OK\r\n");
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty(), "closed after the answer");
        let summary = handle.join().unwrap();
        assert_eq!(summary.accepted, 52);
        assert_eq!(summary.closed, 52);
        assert_eq!(summary.requests, 1);
    }

    #[test]
    fn writes_the_servers_bytes() {
        let mut out = Vec::new();
        write_answer(
            &mut out,
            Id::from_u64(2_126_634_919_336_607_744),
            "Sat, 28 Nov 2026 11:10:50 GMT",
        );
        // As captured from `snowmint serve` with `curl -sv`.
        assert_eq!(
            out,
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 28\r\ndate: Sat, 28 Nov 2026 11:10:50 GMT\r\n\r\n{\"id\":\"2126634919336607744\"}"
        );
    }
}
