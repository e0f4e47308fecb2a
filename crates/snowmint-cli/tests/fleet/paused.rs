//! A holder paused past its fence (SIGSTOP, as a VM pause or starvation would) while a
//! newcomer takes its worker id, then resumed with requests queued on every connection:
//! the attack that found a `file:` holder issuing from a reservation made in a lock file a
//! restore had replaced. Run against every registry whose worker ids can change hands.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::{Blockers, assert_unique_and_increasing, serve_leased, signal};
use crate::support::{ids, now_ms, spawn_logged, try_get, twitter_ms};

/// The longest reservation a server may make (`--reserve-ahead-ms`'s bound): the most a
/// paused holder could believe it still holds.
const LONGEST_RESERVATION: &str = "60000";
/// Clients drawing from the holder: each keeps one request queued while it is stopped.
const HOLDER_CLIENTS: usize = 6;
/// Clients drawing from the newcomer.
const NEWCOMER_CLIENTS: usize = 2;
/// Ids a client asks for at a time.
const BATCH: u32 = 100_000;
/// How long both are drawn from once the holder resumes.
const RESUMED_FOR: Duration = Duration::from_secs(2);

/// The holder `H`, reserving as far ahead as a server may, issues to six clients; it is
/// stopped with SIGSTOP, `while_paused` runs (for `file:`, a restore, after which it holds
/// the other worker ids again), and a newcomer `N` takes its worker id (every other one is
/// held) and issues to two clients; `H` is then
/// resumed, its clients' requests still queued, and both are drawn from for 2 s. No id
/// repeats across the two, each client's ids increase, and no id of `H` lies past its
/// last confirmation before the stop and `fence_ms`, what a renewal vouches for (the TTL
/// less the margin, or `file:`'s check): it issues nothing from what it reserved until a
/// renewal confirms its hold again, which it no longer can.
pub fn a_paused_holder_resumed_under_load(
    url: &str,
    fence_ms: u64,
    while_paused: &mut dyn FnMut(),
) {
    let _blockers = Blockers::hold_all_but_one(url);
    let state = tempfile::tempdir().unwrap();
    let mut cmd = serve_leased(&state.path().join("holder"), url, "holder");
    cmd.args(["--reserve-ahead-ms", LONGEST_RESERVATION]);
    let holder = spawn_logged(cmd);
    holder.wait_ready(Duration::from_secs(30));

    let draws = &Draws::default();
    std::thread::scope(|scope| {
        let at = holder.http;
        let holder_clients: Vec<_> = (0..HOLDER_CLIENTS)
            .map(|_| scope.spawn(move || draws.draw(at, &draws.holder_stop)))
            .collect();
        draws.wait_for_batches(holder.http, HOLDER_CLIENTS, "the holder");

        let stopped_ms = now_ms();
        signal(&holder, libc::SIGSTOP);
        while_paused();
        let newcomer = spawn_logged(serve_leased(
            &state.path().join("newcomer"),
            url,
            "newcomer",
        ));
        newcomer.wait_ready(Duration::from_secs(60));
        let at = newcomer.http;
        let newcomer_clients: Vec<_> = (0..NEWCOMER_CLIENTS)
            .map(|_| scope.spawn(move || draws.draw(at, &draws.newcomer_stop)))
            .collect();
        draws.wait_for_batches(newcomer.http, NEWCOMER_CLIENTS, "the newcomer");

        let resumed = Instant::now();
        signal(&holder, libc::SIGCONT);
        std::thread::sleep(RESUMED_FOR);
        draws.holder_stop.store(true, Ordering::SeqCst);
        draws.newcomer_stop.store(true, Ordering::SeqCst);
        let from_holder = join(holder_clients);
        let from_newcomer = join(newcomer_clients);

        let mut by_client = HashMap::new();
        let mut holders_last_ms = 0;
        for (i, got) in from_holder.into_iter().enumerate() {
            if let Some(last) = got.last() {
                holders_last_ms = holders_last_ms.max(twitter_ms(*last));
            }
            by_client.insert(format!("holder client {i}"), got);
        }
        let newcomers: usize = from_newcomer.iter().map(Vec::len).sum();
        for (i, got) in from_newcomer.into_iter().enumerate() {
            by_client.insert(format!("newcomer client {i}"), got);
        }
        let total = assert_unique_and_increasing(&by_client);
        assert!(newcomers > 0, "the newcomer issued nothing");
        assert!(
            holders_last_ms <= stopped_ms + fence_ms,
            "the holder issued an id at {holders_last_ms}, past its fence: stopped at {stopped_ms}, a renewal vouches for {fence_ms} ms"
        );
        eprintln!(
            "{total} ids, {newcomers} of them the newcomer's; the holder's last at {} ms past its stop; resumed {:?} ago",
            holders_last_ms.saturating_sub(stopped_ms),
            resumed.elapsed()
        );
    });
}

/// What the clients drew, and when to stop.
#[derive(Default)]
struct Draws {
    holder_stop: AtomicBool,
    newcomer_stop: AtomicBool,
    /// Batches answered so far, of any server: the test waits for the first ones.
    answered: Mutex<HashMap<SocketAddr, usize>>,
}

impl Draws {
    /// Asks `addr` for batches until `stop`, one request at a time on a new connection,
    /// and keeps the ids of those answered 200; a refusal (503 while the lease is not
    /// confirmed) is asked again.
    fn draw(&self, addr: SocketAddr, stop: &AtomicBool) -> Vec<u64> {
        let mut got = Vec::new();
        while !stop.load(Ordering::SeqCst) {
            match try_get(
                addr,
                &format!("/v1/ids?count={BATCH}"),
                Duration::from_secs(30),
            ) {
                Some((200, body)) => {
                    got.extend(ids(&body));
                    *self.answered.lock().unwrap().entry(addr).or_default() += 1;
                }
                _ => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        got
    }

    /// Waits until `who`, at `addr`, answered a few batches to each of its `clients`.
    fn wait_for_batches(&self, addr: SocketAddr, clients: usize, who: &str) {
        let started = Instant::now();
        while self
            .answered
            .lock()
            .unwrap()
            .get(&addr)
            .copied()
            .unwrap_or(0)
            < 3 * clients
        {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{who} answered no batch within 30 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn join(clients: Vec<std::thread::ScopedJoinHandle<'_, Vec<u64>>>) -> Vec<Vec<u64>> {
    clients
        .into_iter()
        .map(|client| client.join().expect("a client thread"))
        .collect()
}
