//! `snowmint serve --clock wall` while its wall clock is stepped back 3 s, then 60 s, then
//! forward again, as NTP or an operator would step it, with clients pulling ids all the
//! while: each rollback policy does what it says, and none ever answers an id twice or one
//! smaller than an id already answered. libfaketime moves the server's wall clock
//! ([`SteppedClock`]); stepping forward again ends a long step without waiting it out.

use crate::support;

use std::collections::HashSet;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use snowmint::{Id, Layout};
use snowmint_testkit::eventually;
use support::{Serve, SteppedClock, http_get, now_ms, serve_command, spawn_logged, twitter_ms};

/// Requests one client sends at most: a test needs a few thousand.
const MAX_REQUESTS: usize = 40_000;
/// How long one client runs at most: a test needs well under 15 s.
const MAX_RUN: Duration = Duration::from_secs(40);
/// A client's pause between requests: about a thousand requests a second leaves the
/// machine's cores to the server, and spends a tick's spare sequence numbers in a few hundred
/// ms, so `spare` is seen both issuing and waiting.
const PACE: Duration = Duration::from_millis(1);
/// Ids the batch client asks for at a time.
const BATCH: u64 = 32;
/// Longest wait for what a test waits for: a wait of `wait` is 3 s here.
const EVENT_WAIT: Duration = Duration::from_secs(20);
/// A request that took this long waited for the clock: the server answers others in
/// well under a millisecond, and this is a third of the 3 s step.
const WAITED: Duration = Duration::from_secs(1);
/// Slack between the test's reading of the real clock and the server's, in ms.
const SLACK_MS: u64 = 20;

const REFUSED: &str = " ms behind the newest id issued; refusing to issue until it catches up";
const WAITS_5000: &str =
    " ms behind the newest id issued, more than the 5000 ms this generator waits";

/// One answer a client read.
#[derive(Debug, Clone)]
struct Answer {
    client: usize,
    sent: Instant,
    done: Instant,
    /// The real wall clock when sent and when read, in ms since the Unix epoch.
    sent_ms: u64,
    done_ms: u64,
    status: u16,
    ids: Vec<u64>,
    /// The JSON error of an answer other than 200.
    error: String,
}

impl Answer {
    fn took(&self) -> Duration {
        self.done - self.sent
    }
}

/// What the clients read, shared with the test, which waits on `changed`.
#[derive(Default)]
struct Record {
    answers: Mutex<Vec<Answer>>,
    changed: Condvar,
    stop: AtomicBool,
    /// While set, no client sends: [`Run::step_between_requests`] steps the clock then.
    held: AtomicBool,
    /// Clients between deciding to send and reading the answer.
    in_flight: AtomicUsize,
}

/// A connection kept alive across requests, as a client pulling ids keeps it.
struct KeptAlive {
    addr: SocketAddr,
    conn: BufReader<TcpStream>,
}

impl KeptAlive {
    fn connect(addr: SocketAddr) -> io::Result<KeptAlive> {
        let stream = TcpStream::connect(addr)?;
        // Longer than any wait of the policies (5 s) with room to spare.
        stream.set_read_timeout(Some(Duration::from_secs(20)))?;
        stream.set_nodelay(true)?;
        Ok(KeptAlive {
            addr,
            conn: BufReader::new(stream),
        })
    }

    /// `GET path` on the kept connection: the status and the body.
    fn get(&mut self, path: &str) -> io::Result<(u16, String)> {
        write!(
            self.conn.get_mut(),
            "GET {path} HTTP/1.1\r\nHost: {}\r\n\r\n",
            self.addr
        )?;
        let mut line = String::new();
        self.conn.read_line(&mut line)?;
        let status = line
            .get(9..12)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| io::Error::other(format!("no status line: {line:?}")))?;
        let mut length = None;
        loop {
            line.clear();
            if self.conn.read_line(&mut line)? == 0 {
                return Err(io::Error::other("closed in the head"));
            }
            if line == "\r\n" {
                break;
            }
            let (name, value) = line.split_once(':').unwrap_or((&line, ""));
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse::<usize>().ok();
            }
        }
        let length = length.ok_or_else(|| io::Error::other("no content-length"))?;
        let mut body = vec![0; length];
        self.conn.read_exact(&mut body)?;
        String::from_utf8(body)
            .map(|body| (status, body))
            .map_err(io::Error::other)
    }
}

/// Clients pulling ids from one server, each on its own kept-alive connection.
struct Clients {
    record: Arc<Record>,
    threads: Vec<JoinHandle<Result<(), String>>>,
}

impl Clients {
    /// One client per path, each asking it again and again until stopped.
    fn start(addr: SocketAddr, paths: &[&str]) -> Clients {
        let record = Arc::new(Record::default());
        let threads = paths
            .iter()
            .enumerate()
            .map(|(client, path)| {
                let record = Arc::clone(&record);
                let path = (*path).to_string();
                std::thread::spawn(move || pull(addr, &path, client, &record))
            })
            .collect();
        Clients { record, threads }
    }

    /// Waits until `done` holds for the answers read so far.
    ///
    /// # Panics
    ///
    /// When it does not within [`EVENT_WAIT`], naming `what`.
    fn wait_for(&self, what: &str, done: impl Fn(&[Answer]) -> bool) {
        let deadline = Instant::now() + EVENT_WAIT;
        let mut answers = self.record.answers.lock().unwrap();
        while !done(&answers) {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "no {what} within {EVENT_WAIT:?}; the last answers: {:#?}",
                &answers[answers.len().saturating_sub(3)..]
            );
            answers = self.record.changed.wait_timeout(answers, left).unwrap().0;
        }
    }

    /// Stops the clients and returns every answer they read, in the order they were sent.
    fn stop(self) -> Vec<Answer> {
        self.record.stop.store(true, Ordering::Relaxed);
        for thread in self.threads {
            thread.join().unwrap().expect("the client ran to the end");
        }
        let mut answers = std::mem::take(&mut *self.record.answers.lock().unwrap());
        answers.sort_by_key(|a| a.sent);
        answers
    }
}

/// A client: asks for `path` until stopped, [`MAX_REQUESTS`] times or for [`MAX_RUN`] at
/// most, and records each answer.
fn pull(addr: SocketAddr, path: &str, client: usize, record: &Record) -> Result<(), String> {
    let started = Instant::now();
    let mut conn = KeptAlive::connect(addr).map_err(|e| format!("connect: {e}"))?;
    for _ in 0..MAX_REQUESTS {
        if record.stop.load(Ordering::Relaxed) || started.elapsed() > MAX_RUN {
            break;
        }
        // Counted in flight before looking at `held`, so that the test, which sets `held`
        // before counting, never steps while a request it did not see is on its way.
        record.in_flight.fetch_add(1, Ordering::SeqCst);
        if record.held.load(Ordering::SeqCst) {
            record.in_flight.fetch_sub(1, Ordering::SeqCst);
            std::thread::sleep(PACE);
            continue;
        }
        let (sent, sent_ms) = (Instant::now(), now_ms());
        let got = conn.get(path);
        let (done, done_ms) = (Instant::now(), now_ms());
        record.in_flight.fetch_sub(1, Ordering::SeqCst);
        let (status, body) = got.map_err(|e| format!("client {client}, GET {path}: {e}"))?;
        let json: serde_json::Value =
            serde_json::from_str(&body).map_err(|e| format!("{e}: {body}"))?;
        let ids = match (&json["id"], &json["ids"]) {
            (serde_json::Value::String(id), _) => vec![id.parse().unwrap()],
            (_, serde_json::Value::Array(ids)) => ids
                .iter()
                .map(|id| id.as_str().unwrap().parse().unwrap())
                .collect(),
            _ => Vec::new(),
        };
        let error = json["error"].as_str().unwrap_or_default().to_string();
        record.answers.lock().unwrap().push(Answer {
            client,
            sent,
            done,
            sent_ms,
            done_ms,
            status,
            ids,
            error,
        });
        record.changed.notify_all();
        std::thread::sleep(PACE);
    }
    Ok(())
}

/// One step of the server's wall clock: from `at` on, it reads `offset_ms` from the real
/// clock.
#[derive(Debug, Clone, Copy)]
struct Step {
    offset_ms: i64,
    /// Before the step was written, and after: an answer sent after `at` met the step.
    before: Instant,
    at: Instant,
}

/// A `snowmint serve` on a stepped wall clock, with its clients.
struct Run {
    serve: Serve,
    clock: SteppedClock,
    /// Until [`Run::finish`] stops them.
    clients: Option<Clients>,
    steps: Vec<Step>,
    _state: tempfile::TempDir,
}

impl Run {
    /// Starts `snowmint serve` with `flags` on a fresh state directory and a wall clock at
    /// the real time, and clients pulling ids from it: two one at a time, one in batches.
    /// Returns once each has read an id.
    fn start(flags: &[&str]) -> Run {
        let state = tempfile::tempdir().unwrap();
        let clock = SteppedClock::new();
        let mut cmd = serve_command(state.path(), &["--grpc-addr", "off"]);
        cmd.args(flags);
        clock.apply(&mut cmd);
        let serve = spawn_logged(cmd);
        serve.wait_ready(Duration::from_secs(10));
        let batch = format!("/v1/ids?count={BATCH}");
        let clients = Clients::start(serve.http, &["/v1/id", "/v1/id", &batch]);
        clients.wait_for("id for each client", |answers| {
            (0..3).all(|c| answers.iter().any(|a| a.client == c && a.status == 200))
        });
        Run {
            serve,
            clock,
            clients: Some(clients),
            steps: Vec::new(),
            _state: state,
        }
    }

    /// Steps the server's wall clock to `offset_s` seconds from the real clock.
    fn step(&mut self, offset_s: i64) -> Step {
        let before = Instant::now();
        self.clock.step(&format!("{offset_s:+}s"));
        let step = Step {
            offset_ms: offset_s * 1_000,
            before,
            at: Instant::now(),
        };
        self.steps.push(step);
        step
    }

    /// Steps the clock as [`Run::step`] does, but while no request is in flight: every
    /// answer sent before `at` was read before the step and met the old clock, every one
    /// sent after it meets the new one, however long the step itself takes on a busy
    /// machine.
    fn step_between_requests(&mut self, offset_s: i64) -> Step {
        let record = &self.clients().record;
        record.held.store(true, Ordering::SeqCst);
        let deadline = Instant::now() + EVENT_WAIT;
        while record.in_flight.load(Ordering::SeqCst) > 0 {
            assert!(Instant::now() < deadline, "requests still in flight");
            std::thread::sleep(Duration::from_millis(1));
        }
        let step = self.step(offset_s);
        self.clients().record.held.store(false, Ordering::SeqCst);
        step
    }

    /// Waits until `n` answers sent after `step` have `status`.
    fn wait_for(&self, step: Step, n: usize, status: u16) {
        self.clients()
            .wait_for(&format!("{n} answers {status} after {step:?}"), |answers| {
                answers
                    .iter()
                    .filter(|a| a.sent >= step.at && a.status == status)
                    .count()
                    >= n
            });
    }

    /// Waits until an answer sent after `step` has waited for the clock and brought an id,
    /// and then until each client has read an answer sent after it: no request waits any
    /// more, so the next step meets none halfway through its wait. (Such a wait would go on
    /// until the clock passes the newest id again, the whole new gap, past the policy's
    /// bound.)
    fn wait_out(&self, step: Step) {
        let waited = |a: &Answer| a.sent >= step.at && a.status == 200 && a.took() >= WAITED;
        self.clients()
            .wait_for("id that waited for the clock", |answers| {
                answers.iter().any(waited)
            });
        let done = {
            let answers = self.clients().record.answers.lock().unwrap();
            answers.iter().find(|a| waited(a)).unwrap().done
        };
        self.clients()
            .wait_for("answer to each client after the wait", |answers| {
                (0..3).all(|c| answers.iter().any(|a| a.client == c && a.sent > done))
            });
    }

    fn clients(&self) -> &Clients {
        self.clients.as_ref().expect("clients run until finish")
    }

    /// Stops the clients, checks that no id was answered twice or after a larger one, and
    /// returns the answers. The server runs on, to be asked what it counted.
    fn finish(&mut self) -> Vec<Answer> {
        let answers = self.clients.take().expect("finished once").stop();
        never_repeated_nor_smaller(&answers);
        for a in &answers {
            assert!(
                a.status == 200 || a.status == 503,
                "unexpected answer: {a:#?}"
            );
        }
        answers
    }
}

/// When the step after `step` began, if there was one.
fn next_step(steps: &[Step], step: Step) -> Option<Instant> {
    steps.iter().find(|s| s.before > step.at).map(|s| s.before)
}

/// The answers sent after `step` and read before the next one.
fn during<'a>(answers: &'a [Answer], steps: &[Step], step: Step) -> Vec<&'a Answer> {
    let next = next_step(steps, step);
    answers
        .iter()
        .filter(|a| a.sent >= step.at && next.is_none_or(|next| a.done <= next))
        .collect()
}

/// No id answered twice; each client's ids strictly increase; and an answer sent after
/// another was read holds only ids above that one's.
fn never_repeated_nor_smaller(answers: &[Answer]) {
    let mut seen = HashSet::new();
    for id in answers.iter().flat_map(|a| &a.ids) {
        assert!(seen.insert(*id), "id {id} was answered twice");
    }
    for client in 0..3 {
        let ids: Vec<u64> = answers
            .iter()
            .filter(|a| a.client == client)
            .flat_map(|a| a.ids.iter().copied())
            .collect();
        if let Some(w) = ids.windows(2).find(|w| w[0] >= w[1]) {
            panic!("client {client} read {} after {}", w[1], w[0]);
        }
    }
    let mut by_done: Vec<&Answer> = answers.iter().collect();
    by_done.sort_by_key(|a| a.done);
    let (mut read, mut largest) = (0, 0);
    for a in answers {
        while read < by_done.len() && by_done[read].done < a.sent {
            largest = by_done[read].ids.iter().copied().fold(largest, u64::max);
            read += 1;
        }
        if let Some(smaller) = a.ids.iter().find(|id| **id <= largest) {
            panic!("{smaller} was answered after {largest} had been read: {a:#?}");
        }
    }
}

/// The gap a 503 names, in ms, checked against the ids answered and the step: the server's
/// clock read between `sent_ms` and `done_ms`, `step.offset_ms` away, and the newest id it
/// had issued was at least the largest one read before `a` was sent, and at most the largest
/// one sent for before `a` was read and answered before the next step.
fn gap_named(answers: &[Answer], steps: &[Step], a: &Answer, text: &str, step: Step) -> u64 {
    assert_eq!(a.status, 503, "{a:#?}");
    let gap: u64 = a
        .error
        .strip_prefix("clock is ")
        .and_then(|rest| rest.strip_suffix(text))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not a gap ending {text:?}: {a:#?}"));
    let next = next_step(steps, step);
    let largest = |keep: &dyn Fn(&Answer) -> bool| {
        let id = answers
            .iter()
            .filter(|b| keep(b))
            .flat_map(|b| b.ids.iter().copied())
            .max()
            .expect("ids before the step");
        twitter_ms(id)
    };
    let newest_at_least = largest(&|b| b.done < a.sent);
    let newest_at_most = largest(&|b| b.sent < a.done && next.is_none_or(|n| b.done <= n));
    let clock = |real_ms: u64| real_ms.saturating_add_signed(step.offset_ms);
    let lowest = newest_at_least.saturating_sub(clock(a.done_ms) + SLACK_MS);
    let highest = newest_at_most.saturating_sub(clock(a.sent_ms)) + SLACK_MS;
    assert!(
        (lowest..=highest).contains(&gap),
        "gap {gap} ms, where the newest id and the clock say {lowest}..={highest}: {a:#?}"
    );
    gap
}

fn metric(serve: &Serve, name: &str) -> f64 {
    let (status, text) = serve.get("/metrics");
    assert_eq!(status, 200, "{text}");
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in /metrics: {text}"))
}

/// `/v1/layout`'s `clock`.
fn clock_info(serve: &Serve) -> serde_json::Value {
    let (status, body) = serve.get("/v1/layout");
    assert_eq!(status, 200, "{body}");
    let layout: serde_json::Value = serde_json::from_str(&body).unwrap();
    layout["clock"].clone()
}

fn tick(id: u64) -> u64 {
    Layout::TWITTER.decode(Id::from_u64(id)).unwrap().timestamp
}

fn sequence(id: u64) -> u64 {
    Layout::TWITTER.decode(Id::from_u64(id)).unwrap().sequence
}

fn count(answers: &[&Answer], status: u16) -> usize {
    answers.iter().filter(|a| a.status == status).count()
}

#[test]
fn refuse_answers_503_naming_the_gap_while_behind_and_recovers() {
    let mut run = Run::start(&["--clock", "wall", "--rollback", "refuse"]);
    let back3 = run.step(-3);
    run.wait_for(back3, 20, 503);
    let back60 = run.step(-60);
    run.wait_for(back60, 20, 503);
    let (status, body) = run.serve.get("/readyz");
    assert_eq!(status, 503, "{body}");
    assert!(body.contains(REFUSED), "{body}");
    let ahead = run.step(0);
    run.wait_for(ahead, 20, 200);
    let answers = run.finish();
    let (steps, serve) = (&run.steps, &run.serve);

    for (step, near) in [(back3, 3_000), (back60, 60_000)] {
        let behind = during(&answers, steps, step);
        assert!(count(&behind, 503) >= 20);
        for a in behind {
            let gap = gap_named(&answers, steps, a, REFUSED, step);
            // The first step is about 3 s behind the newest id; the second 60 s, less what
            // the first lasted.
            assert!((near - 2_000..=near).contains(&gap), "{gap} ms: {a:#?}");
        }
    }
    let after = during(&answers, steps, ahead);
    assert_eq!(count(&after, 200), after.len(), "{after:#?}");

    let refused = answers.iter().filter(|a| a.status == 503).count() as f64;
    assert_eq!(metric(serve, "snowmint_rollback_refusals_total"), refused);
    assert!(metric(serve, "snowmint_clock_rollbacks_total") >= refused);
    let clock = clock_info(serve);
    assert_eq!(
        (
            &clock["mode"],
            &clock["rollback"],
            &clock["rollback_wait_ms"]
        ),
        (
            &serde_json::json!("wall"),
            &serde_json::json!("refuse"),
            &serde_json::Value::Null
        ),
        "{clock}"
    );
}

#[test]
fn wait_waits_out_a_short_step_and_refuses_a_long_one_at_once() {
    let mut run = Run::start(&[
        "--clock",
        "wall",
        "--rollback",
        "wait",
        "--rollback-wait-ms",
        "5000",
    ]);
    // Between requests: requests in flight while the test was still writing the step
    // wait it out before its `at`, and on a loaded machine the ones sent after may find
    // less than the second's wait looked for left (seen once: no such wait in 20 s).
    let back3 = run.step_between_requests(-3);
    run.wait_out(back3);
    let back60 = run.step(-60);
    run.wait_for(back60, 20, 503);
    let ahead = run.step(0);
    run.wait_for(ahead, 20, 200);
    let answers = run.finish();
    let (steps, serve) = (&run.steps, &run.serve);

    let short = during(&answers, steps, back3);
    assert_eq!(count(&short, 200), short.len(), "{short:#?}");
    let waited: Vec<&&Answer> = short.iter().filter(|a| a.took() >= WAITED).collect();
    // A wait is bounded by the gap, 3 s, with room for a loaded machine.
    assert!(
        waited.iter().all(|a| a.took() < Duration::from_secs(6)),
        "{waited:#?}"
    );
    let long = during(&answers, steps, back60);
    assert!(count(&long, 503) >= 20);
    for a in &long {
        let gap = gap_named(&answers, steps, a, WAITS_5000, back60);
        // The first step was waited out: the newest id is about 3 s behind the real clock.
        assert!((50_000..=57_000).contains(&gap), "{gap} ms: {a:#?}");
        assert!(a.took() < WAITED, "a refusal waited: {a:#?}");
    }
    let after = during(&answers, steps, ahead);
    assert_eq!(count(&after, 200), after.len(), "{after:#?}");

    let refused = answers.iter().filter(|a| a.status == 503).count() as f64;
    assert_eq!(metric(serve, "snowmint_rollback_refusals_total"), refused);
    assert!(metric(serve, "snowmint_rollback_waits_total") >= waited.len() as f64);
    assert!(metric(serve, "snowmint_rollback_wait_seconds_total") >= WAITED.as_secs_f64());
    let clock = clock_info(serve);
    assert_eq!(
        (
            &clock["mode"],
            &clock["rollback"],
            &clock["rollback_wait_ms"]
        ),
        (
            &serde_json::json!("wall"),
            &serde_json::json!("wait"),
            &serde_json::json!(5000)
        ),
        "{clock}"
    );
}

#[test]
fn logical_keeps_issuing_increasing_ids_ahead_of_a_clock_set_back() {
    let mut run = Run::start(&["--clock", "wall", "--rollback", "logical"]);
    let back3 = run.step(-3);
    run.wait_for(back3, 100, 200);
    let back60 = run.step(-60);
    run.wait_for(back60, 100, 200);
    let ahead = run.step(0);
    run.wait_for(ahead, 20, 200);
    let answers = run.finish();
    let (steps, serve) = (&run.steps, &run.serve);

    assert!(answers.iter().all(|a| a.status == 200));
    for step in [back3, back60] {
        let behind = during(&answers, steps, step);
        assert!(behind.len() >= 100);
        // Ahead of the clock, which reads the real time less the step: by most of the step.
        let ahead_by = step.offset_ms.unsigned_abs() / 2;
        for a in behind {
            let clock = a.done_ms.saturating_add_signed(step.offset_ms);
            assert!(
                a.ids.iter().all(|id| twitter_ms(*id) > clock + ahead_by),
                "{a:#?}"
            );
        }
    }
    // Each tick counts once, however many ids and steps it holds.
    assert!(metric(serve, "snowmint_logical_ticks_total") >= 1.0);
    assert_eq!(metric(serve, "snowmint_rollback_refusals_total"), 0.0);
    let clock = clock_info(serve);
    assert_eq!(
        (&clock["mode"], &clock["rollback"]),
        (&serde_json::json!("wall"), &serde_json::json!("logical")),
        "{clock}"
    );
}

#[test]
fn spare_issues_the_newest_ticks_unused_numbers_then_waits() {
    let mut run = Run::start(&[
        "--clock",
        "wall",
        "--rollback",
        "spare",
        "--rollback-wait-ms",
        "5000",
    ]);
    // Between requests: a request that met a step while the test was still writing it
    // could spend the tick's spare numbers before the step's `at`, where none is looked for.
    let back3 = run.step_between_requests(-3);
    run.wait_out(back3);
    let back60 = run.step_between_requests(-60);
    run.wait_for(back60, 20, 503);
    let ahead = run.step(0);
    run.wait_for(ahead, 20, 200);
    let answers = run.finish();
    let (steps, serve) = (&run.steps, &run.serve);

    let mut spares = 0;
    for step in [back3, back60] {
        let behind = during(&answers, steps, step);
        // Spare ids are far ahead of the clock; an id issued after a wait is not.
        let ahead_by = step.offset_ms.unsigned_abs() / 2;
        let spare: Vec<u64> = behind
            .iter()
            .flat_map(|a| {
                let clock = a.done_ms.saturating_add_signed(step.offset_ms);
                a.ids
                    .iter()
                    .copied()
                    .filter(move |id| twitter_ms(*id) > clock + ahead_by)
            })
            .collect();
        assert!(!spare.is_empty(), "no spare ids after {step:?}");
        spares += spare.len();
        // All in the newest tick issued before the step, above the numbers read before it.
        let largest = |keep: &dyn Fn(&Answer) -> bool| {
            answers
                .iter()
                .filter(|a| keep(a))
                .flat_map(|a| a.ids.iter().copied())
                .max()
                .unwrap()
        };
        let newest = largest(&|a| a.sent < step.at);
        let read = largest(&|a| a.done < step.before);
        for id in &spare {
            assert_eq!(tick(*id), tick(newest), "spare {id} after {newest}");
            assert!(
                (tick(read), sequence(read)) < (tick(*id), sequence(*id)),
                "spare {id} after {read}"
            );
        }
    }
    // Spent, they wait as `wait` does: out for 3 s, refused for 60 s.
    let short = during(&answers, steps, back3);
    assert_eq!(count(&short, 200), short.len(), "{short:#?}");
    assert!(short.iter().any(|a| a.took() >= WAITED));
    let long = during(&answers, steps, back60);
    assert!(count(&long, 503) >= 20);
    for a in long.iter().filter(|a| a.status == 503) {
        let gap = gap_named(&answers, steps, a, WAITS_5000, back60);
        assert!((50_000..=57_000).contains(&gap), "{gap} ms: {a:#?}");
    }

    // Those read here, and any an answer sent just before a step took.
    assert!(metric(serve, "snowmint_spare_sequence_ids_total") >= spares as f64);
    assert!(metric(serve, "snowmint_rollback_waits_total") >= 1.0);
    let refused = answers.iter().filter(|a| a.status == 503).count() as f64;
    assert_eq!(metric(serve, "snowmint_rollback_refusals_total"), refused);
    let clock = clock_info(serve);
    assert_eq!(
        (
            &clock["mode"],
            &clock["rollback"],
            &clock["rollback_wait_ms"]
        ),
        (
            &serde_json::json!("wall"),
            &serde_json::json!("spare"),
            &serde_json::json!(5000)
        ),
        "{clock}"
    );
}

/// The default clock never sees the step: ids keep coming, and their time is the real one.
#[test]
fn monotonic_issues_through_a_step_back_with_ids_that_keep_the_real_time() {
    let mut run = Run::start(&[]);
    let back60 = run.step(-60);
    run.wait_for(back60, 100, 200);
    let ahead = run.step(0);
    run.wait_for(ahead, 20, 200);
    let answers = run.finish();
    let (steps, serve) = (&run.steps, &run.serve);

    assert!(answers.iter().all(|a| a.status == 200));
    for a in during(&answers, steps, back60) {
        for id in &a.ids {
            let ms = twitter_ms(*id);
            assert!(
                (a.sent_ms - SLACK_MS..=a.done_ms + SLACK_MS).contains(&ms),
                "{id} is at {ms} ms: {a:#?}"
            );
        }
    }
    assert_eq!(metric(serve, "snowmint_clock_rollbacks_total"), 0.0);
    let clock = clock_info(serve);
    assert_eq!(
        (&clock["mode"], &clock["rollback"]),
        (&serde_json::json!("monotonic"), &serde_json::json!("wait")),
        "{clock}"
    );
}

/// The step reaches the server at its next reading of the wall clock: stepped 60 s ahead, a
/// `wall` server's next id is 60 s ahead, while a `monotonic` one's stays at the real time.
#[test]
fn a_wall_server_reads_the_stepped_clock_and_a_monotonic_one_does_not() {
    for (mode, ahead_ms) in [("wall", 60_000), ("monotonic", 0)] {
        let state = tempfile::tempdir().unwrap();
        let clock = SteppedClock::new();
        let mut cmd = serve_command(state.path(), &["--grpc-addr", "off", "--clock", mode]);
        clock.apply(&mut cmd);
        let serve = spawn_logged(cmd);
        serve.wait_ready(Duration::from_secs(10));
        let id_at = |serve: &Serve| {
            let before = now_ms();
            let (status, body) = http_get(serve.http, "/v1/id");
            assert_eq!(status, 200, "{body}");
            let json: serde_json::Value = serde_json::from_str(&body).unwrap();
            let ms = twitter_ms(json["id"].as_str().unwrap().parse().unwrap());
            (before, ms, now_ms())
        };
        let (before, ms, after) = id_at(&serve);
        assert!(
            (before - SLACK_MS..=after + SLACK_MS).contains(&ms),
            "{mode}"
        );
        clock.step("+60s");
        let (before, ms, after) = id_at(&serve);
        assert!(
            (before + ahead_ms - SLACK_MS..=after + ahead_ms + SLACK_MS).contains(&ms),
            "{mode}: an id at {ms} ms, read between {before} and {after}"
        );
    }
}

/// A request waiting out a 3 s step meets a further step of 60 s: it waits no longer than
/// its 3 s (on real time), then the policy, asked again with the clock as it now reads,
/// refuses it at once. Without the bound it slept until the clock came back, 60 s.
#[test]
fn a_wait_that_meets_a_further_step_back_keeps_its_bound() {
    let state = tempfile::tempdir().unwrap();
    let clock = SteppedClock::new();
    let mut cmd = serve_command(
        state.path(),
        &[
            "--grpc-addr",
            "off",
            "--clock",
            "wall",
            "--rollback",
            "wait",
            "--rollback-wait-ms",
            "5000",
        ],
    );
    clock.apply(&mut cmd);
    let serve = spawn_logged(cmd);
    serve.wait_ready(Duration::from_secs(10));
    assert_eq!(serve.get("/v1/id").0, 200);
    let before = metric(&serve, "snowmint_tick_waits_total");
    clock.step("-3s");
    let addr = serve.http;
    let waiting = std::thread::spawn(move || {
        let start = Instant::now();
        let conn = support::send_get(addr, "/v1/id");
        conn.set_read_timeout(Some(Duration::from_secs(90)))
            .unwrap();
        (support::read_response(conn), start.elapsed())
    });
    eventually(Duration::from_secs(5), "a wait begun", || {
        match metric(&serve, "snowmint_tick_waits_total") {
            waits if waits > before => Ok(()),
            waits => Err(format!("snowmint_tick_waits_total {waits}")),
        }
    });
    clock.step("-60s");
    let ((status, body), took) = waiting.join().unwrap();
    assert!(
        took < Duration::from_secs(7),
        "the request took {took:?}: {status} {body}"
    );
    assert_eq!(status, 503, "{body}");
    assert!(
        body.contains("ms behind the newest id issued, more than the 5000 ms this generator waits"),
        "{body}"
    );
    clock.step("+0");
    assert_eq!(serve.get("/v1/id").0, 200);
}

/// Found by the fault-injection campaign (`snowmint-chaos run`): under a lease that expires
/// (Redis here), a wall server whose clock was stepped forward past the TTL refused every
/// id with "high-water mark store vouches for ids only up to ..." while `/readyz` said
/// ready, because the lease's marks were confirmed on the steady clock, behind the ids'
/// time. One that started with its clock 10 s behind never issued again once the clock was
/// set right. Now the next renewal (every 500 ms) confirms marks in the ids' time.
#[test]
fn a_leased_wall_server_set_right_after_starting_behind_issues_at_the_real_time() {
    let redis = snowmint_testkit::Redis::start();
    let state = tempfile::tempdir().unwrap();
    let clock = SteppedClock::new();
    clock.step("-10s");
    let url = redis.url();
    let mut cmd = support::serve_builder(state.path())
        .grpc_addr("off")
        .args(["--clock", "wall", "--lease", &url])
        .lease_times(support::LeaseTimes::SHORT)
        .command();
    clock.apply(&mut cmd);
    let serve = spawn_logged(cmd);
    serve.wait_ready(Duration::from_secs(20));
    let (status, body) = http_get(serve.http, "/v1/id");
    assert_eq!(status, 200, "{body}");

    clock.step("+0");
    // A renewal or two after the step; bounded well past them.
    let (before, body) = eventually(
        Duration::from_secs(5),
        "an id after the clock was set right",
        || {
            let before = now_ms();
            match http_get(serve.http, "/v1/id") {
                (200, body) => Ok((before, body)),
                (status, body) => Err(format!("{status} {body}")),
            }
        },
    );
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    let ms = twitter_ms(json["id"].as_str().unwrap().parse().unwrap());
    assert!(
        ms + SLACK_MS >= before,
        "an id at {ms} ms, asked at {before}"
    );
}
