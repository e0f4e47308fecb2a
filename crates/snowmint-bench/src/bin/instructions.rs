//! Ids for `valgrind --tool=callgrind` to count instructions on: a figure that does not
//! move with what else the machine runs, unlike wall-clock time.
//!
//! ```text
//! instructions next_id|next_batch|next_id_wall|next_id_counter|now_ms|first_of_tick|clock_advance N
//! instructions snowmint_system|snowmint_wall|ferroid|snowdon|rs_snowflake|idworker N
//! ```
//!
//! Issues `N` ids from one generator on one thread, inside [`issue`], which the script
//! `scripts/bench-instructions` tells callgrind to count alone (start-up and the clock's
//! ticker thread are left out). The clock is a [`ManualClock`] that never moves, and the
//! layout has a 22-bit sequence (4,194,304 ids per tick), so every id up to that count takes
//! the same path: the fast path of `next_id`, or batches of up to 4,096 from `next_batch`.
//! The counts are deterministic, so two builds compare to the instruction. `now_ms` reads
//! the [`SystemClock`] `N` times instead: what the fast path pays for the time, which the
//! frozen clock above leaves out. `next_id_wall` issues as `--clock wall` does, from a
//! clock that says it may step (its lease fence is checked on steady time, off the fast
//! path), without the wall clock's own reading; `next_id_counter` as `--clock counter` does.
//! `first_of_tick` moves the frozen clock 1 ms before every id, so every id is the first of
//! its tick (the moves are counted too; `clock_advance` counts them alone).
//!
//! The second line compares generators on the same footing: one thread, each with its own
//! clock, the 41/0/22 split (rs-snowflake's fixed 41/10/12), `N` ids in [`mint`].
//! `snowmint_system` is snowmint with its [`SystemClock`]; `snowmint_wall` is `--clock wall`
//! with the [`WallClock`] it reads in production, its readings counted. Real clocks move while callgrind
//! runs (slowly: callgrind runs a program at a fraction of its speed), so these counts hold
//! the first ids of a few hundred ticks and vary in their last digits between runs.

use std::hint::black_box;

use snowmint::{
    Bits, Clock, ClockMode, Generator, Layout, ManualClock, SystemClock, WallClock, manual,
};

#[path = "compare/idworker.rs"]
mod idworker;
#[path = "compare/peers.rs"]
#[allow(dead_code)]
mod peers;

use peers::{Peer, Shape, Visit};

/// Counts `n` ids of a peer, one thread, its own clock: the closure is made outside the
/// counted function and called inside it.
struct CountPeer(u64);

impl Visit for CountPeer {
    type Output = u64;

    fn visit<M, F>(self, make: M) -> u64
    where
        M: Fn() -> F + Sync,
        F: FnMut() -> u64,
    {
        let mut next = make();
        black_box(next());
        mint(&mut next, self.0)
    }
}

/// Mints `n` ids from a peer; counted like [`issue`].
#[inline(never)]
fn mint(next: &mut impl FnMut() -> u64, n: u64) -> u64 {
    let mut last = 0;
    for _ in 0..n {
        last = black_box(next());
    }
    last
}

/// Ids per `next_batch` call: one default tick's worth.
const BATCH: u64 = 4_096;

/// How far ahead of the frozen clock the fenced measurements put their fence: far enough
/// that no id meets it.
const FENCE_AHEAD_MS: u64 = 3_600_000;

fn main() {
    let mut args = std::env::args().skip(1);
    let what = args.next().unwrap_or_else(|| "next_id".into());
    let n: u64 = args
        .next()
        .map_or(1_000_000, |n| n.parse().expect("N is a whole number"));
    assert!(
        n < 1 << 22,
        "N must stay within one tick of the 22-bit sequence"
    );
    let layout = Layout::new(
        Bits {
            timestamp: 41,
            datacenter: 0,
            worker: 0,
            sequence: 22,
        },
        1,
        Layout::TWITTER.epoch_ms(),
    )
    .expect("41 + 22 bits fit in 63");
    let start = Layout::TWITTER.epoch_ms() + 1_000_000;
    let clock = ManualClock::new(start);
    // The frozen clock, saying that it never goes back, as the [`SystemClock`] does: the
    // first id of each tick then takes the path it takes in `--clock monotonic`.
    let monotone = ManualClock::new(start).never_going_back();
    // The frozen clock, saying that it may step as a wall clock does.
    let stepping = ManualClock::new(start).stepping();
    let system = SystemClock::new();
    black_box(system.now_ms());
    // Let the clock's ticker thread start and publish: callgrind runs one thread at a time,
    // and a loop that never blocks would otherwise keep it from ever running.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let builder = Generator::builder(layout);
    let last = match what.as_str() {
        "now_ms" => read_clock(&system, n),
        "first_of_tick" => {
            // Every id the first of its tick: the clock moves 1 ms before each.
            let generator = builder.clock(&monotone).build();
            let generator = generator.expect("a valid generator");
            black_box(generator.next_id().expect("an id"));
            first_of_tick(&generator, &monotone, n)
        }
        "clock_advance" => advance(&clock, n),
        "snowmint_system" => warm_then_issue(
            &builder.clock(system).build().expect("a valid generator"),
            "next_id",
            n,
        ),
        "snowmint_wall" => {
            let generator = builder.clock(WallClock).mode(ClockMode::Wall);
            warm_then_issue(&generator.build().expect("a valid generator"), "next_id", n)
        }
        "ferroid" => Peer::Ferroid.visit(Shape::Uncapped, 1, CountPeer(n)),
        "snowdon" => Peer::Snowdon.visit(Shape::Uncapped, 1, CountPeer(n)),
        "rs_snowflake" => Peer::RsSnowflake.visit(Shape::Uncapped, 1, CountPeer(n)),
        "idworker" => Peer::IdWorker.visit(Shape::Uncapped, 1, CountPeer(n)),
        "next_id_wall" => {
            let generator = builder.clock(&stepping).mode(ClockMode::Wall);
            warm_then_issue(&generator.build().expect("a valid generator"), "next_id", n)
        }
        "next_id_counter" => {
            let generator = builder.clock(&clock).mode(ClockMode::Counter);
            warm_then_issue(&generator.build().expect("a valid generator"), "next_id", n)
        }
        // Under a fence an hour ahead, as every leased generator now has (a `file:` hold
        // too, fenced 1 s past its last check): what the fence costs each clock mode.
        "next_id_fenced" => {
            let generator = builder.clock(&clock).build().expect("a valid generator");
            generator.set_valid_until_ms(start + FENCE_AHEAD_MS);
            warm_then_issue(&generator, "next_id", n)
        }
        "next_id_wall_fenced" => {
            let generator = builder.clock(&stepping).mode(ClockMode::Wall).build();
            let generator = generator.expect("a valid generator");
            generator.set_valid_until_ms(start + FENCE_AHEAD_MS);
            warm_then_issue(&generator, "next_id", n)
        }
        "next_id_counter_fenced" => {
            let generator = builder.clock(&clock).mode(ClockMode::Counter).build();
            let generator = generator.expect("a valid generator");
            generator.set_valid_until_ms(start + FENCE_AHEAD_MS);
            warm_then_issue(&generator, "next_id", n)
        }
        _ => warm_then_issue(
            &builder.clock(&clock).build().expect("a valid generator"),
            &what,
            n,
        ),
    };
    println!("{what}: {n} ids, the last {last}");
}

/// The first id starts the tick, uncounted; then [`issue`].
fn warm_then_issue<C: Clock>(generator: &Generator<C>, what: &str, n: u64) -> u64 {
    black_box(generator.next_id().expect("an id"));
    issue(generator, what, n)
}

/// Issues `n` ids; the only function callgrind counts.
#[inline(never)]
fn issue<C: Clock>(generator: &Generator<C>, what: &str, n: u64) -> u64 {
    let mut last = 0;
    match what {
        "next_id" => {
            for _ in 0..n {
                last = black_box(generator.next_id().expect("an id")).as_u64();
            }
        }
        "next_batch" => {
            let mut left = n;
            while left > 0 {
                let batch = generator.next_batch(left.min(BATCH)).expect("a batch");
                for id in batch.iter() {
                    last = black_box(id).as_u64();
                }
                left -= batch.len();
            }
        }
        other => panic!("unknown measurement {other:?}: expected next_id or next_batch"),
    }
    last
}

/// Issues `n` ids, each the first of its tick; counted like [`issue`], with the moves of
/// the clock, which [`advance`] counts alone.
#[inline(never)]
fn first_of_tick<C: Clock, K: manual::Kind>(
    generator: &Generator<C>,
    clock: &ManualClock<K>,
    n: u64,
) -> u64 {
    let mut last = 0;
    for _ in 0..n {
        clock.advance(1);
        last = black_box(generator.next_id().expect("an id")).as_u64();
    }
    last
}

/// Moves the clock `n` times: what [`first_of_tick`] counts beside the ids.
#[inline(never)]
fn advance(clock: &ManualClock, n: u64) -> u64 {
    for _ in 0..n {
        clock.advance(1);
    }
    black_box(clock.now_ms())
}

/// Reads the clock `n` times; counted like [`issue`].
#[inline(never)]
fn read_clock(clock: &SystemClock, n: u64) -> u64 {
    let mut last = 0;
    for _ in 0..n {
        last = black_box(clock.now_ms());
    }
    last
}
