//! The generators under test, each behind the same face: a factory that gives every thread
//! its own minting closure over one shared generator, built fresh for every run.

use std::hint::spin_loop;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, UNIX_EPOCH};

use ferroid::generator::AtomicSnowflakeGenerator;
use ferroid::id::{SnowflakeId, SnowflakeTwitterId};
use ferroid::time::MonotonicClock;
use snowmint::{Bits, Generator, Layout, OverflowPolicy};

use crate::idworker::IdWorker;

/// Twitter's epoch (2010-11-04T01:42:54.657Z): every generator here counts from it.
pub const EPOCH_MS: u64 = Layout::TWITTER.epoch_ms();

/// The bit split a measurement asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// 41-bit ms timestamp, no node bits, 22-bit sequence: 4,194,304 ids per ms, a cap no
    /// generator here comes near, so each one's own cost shows.
    Uncapped,
    /// Twitter's 41/5/5/12: 4,096 ids per ms.
    Twitter,
}

impl Shape {
    /// The split as a snowmint layout, to decode ids with.
    pub fn layout(self) -> Layout {
        match self {
            Shape::Uncapped => uncapped_layout(),
            Shape::Twitter => Layout::TWITTER,
        }
    }
}

fn uncapped_layout() -> Layout {
    let bits = Bits {
        timestamp: 41,
        datacenter: 0,
        worker: 0,
        sequence: 22,
    };
    Layout::new(bits, 1, EPOCH_MS).expect("41 + 22 bits fit in 63")
}

ferroid::define_snowflake_id!(
    /// ferroid's id with the uncapped split: 1 reserved bit, 41-bit timestamp, no machine
    /// bits, 22-bit sequence.
    FerroidUncapped, u64,
    reserved: 1,
    timestamp: 41,
    machine_id: 0,
    sequence: 22
);

/// snowdon's layout: timestamp above bit 22, `SEQ` sequence bits, node bits (if any) 0.
#[derive(Debug)]
pub struct SnowdonSplit<const SEQ: u32>;

impl<const SEQ: u32> snowdon::Layout for SnowdonSplit<SEQ> {
    fn construct_snowflake(timestamp: u64, sequence_number: u64) -> u64 {
        timestamp << 22 | sequence_number
    }
    fn timestamp(input: u64) -> u64 {
        input >> 22
    }
    fn exceeds_timestamp(input: u64) -> bool {
        input >= 1 << 41
    }
    fn sequence_number(input: u64) -> u64 {
        input & ((1 << SEQ) - 1)
    }
    fn exceeds_sequence_number(input: u64) -> bool {
        input >= 1 << SEQ
    }
    fn is_valid_snowflake(input: u64) -> bool {
        // Bit 63 and the node bits between the sequence and bit 22 are always 0.
        input >> 63 == 0 && (input >> SEQ) & ((1 << (22 - SEQ)) - 1) == 0
    }
}

impl<const SEQ: u32> snowdon::Epoch for SnowdonSplit<SEQ> {
    fn millis_since_unix() -> u64 {
        EPOCH_MS
    }
}

/// The harness's side of [`Peer::visit`]: what to do with a generator.
pub trait Visit {
    /// What the visit measures.
    type Output;

    /// `make` is called once on each thread (before the clock starts) and gives that thread
    /// its closure; every call of the closure mints one id.
    fn visit<M, F>(self, make: M) -> Self::Output
    where
        M: Fn() -> F + Sync,
        F: FnMut() -> u64;
}

/// A generator under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Peer {
    /// snowmint's lock-free generator, default policies (parks on overflow).
    Snowmint,
    /// ferroid's `AtomicSnowflakeGenerator` with `MonotonicClock`, spinning on `Pending` as
    /// ferroid's own benchmarks do.
    Ferroid,
    /// The same, sleeping the `yield_for` it is told (ferroid's "frees the core" option).
    FerroidSleep,
    /// snowdon's lock-free generator; the caller retries on `SnowflakeExhaustion`.
    Snowdon,
    /// rs-snowflake's `real_time_generate` (takes `&mut self`: a `Mutex` to share it).
    RsSnowflake,
    /// Twitter's IdWorker, written here: the seed algorithm.
    IdWorker,
}

impl Peer {
    /// Generators measured below the cap (per-id cost, latency).
    pub const BELOW_CAP: [Peer; 5] = [
        Peer::Snowmint,
        Peer::Ferroid,
        Peer::Snowdon,
        Peer::RsSnowflake,
        Peer::IdWorker,
    ];

    /// Generators measured at the cap: all of them.
    pub const AT_CAP: [Peer; 6] = [
        Peer::Snowmint,
        Peer::Ferroid,
        Peer::FerroidSleep,
        Peer::Snowdon,
        Peer::RsSnowflake,
        Peer::IdWorker,
    ];

    /// A short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            Peer::Snowmint => "snowmint",
            Peer::Ferroid => "ferroid (spin)",
            Peer::FerroidSleep => "ferroid (sleep)",
            Peer::Snowdon => "snowdon",
            Peer::RsSnowflake => "rs-snowflake",
            Peer::IdWorker => "Mutex IdWorker",
        }
    }

    /// The split the generator really used when asked for `shape`: timestamp / node / sequence.
    pub fn split(self, shape: Shape) -> &'static str {
        match (self, shape) {
            (Peer::RsSnowflake, Shape::Uncapped) => "41/10/12 (fixed: no 22-bit sequence)",
            (_, Shape::Uncapped) => "41/0/22",
            (_, Shape::Twitter) => "41/10/12",
        }
    }

    /// How the generator waits when a millisecond's sequence is spent.
    pub fn waits_by(self) -> &'static str {
        match self {
            Peer::Snowmint => "parks until the next ms",
            Peer::Ferroid => "spins (spin_loop backoff)",
            Peer::FerroidSleep => "sleeps `yield_for` ms",
            Peer::Snowdon => "error; caller spins and retries",
            Peer::RsSnowflake => "spins on the wall clock",
            Peer::IdWorker => "spins under the lock",
        }
    }

    /// Builds the generator for `shape` and hands the harness a factory of minting closures
    /// for `threads` threads.
    pub fn visit<V: Visit>(self, shape: Shape, threads: usize, v: V) -> V::Output {
        match (self, shape) {
            (Peer::Snowmint, _) => {
                let g = Generator::builder(shape.layout())
                    .overflow(OverflowPolicy::Wait)
                    .build()
                    .expect("snowmint builds");
                let g = &g;
                v.visit(move || move || g.next_id().expect("snowmint mints").as_u64())
            }
            (Peer::Ferroid, Shape::Uncapped) => ferroid::<FerroidUncapped, V>(v, |_| spin_loop()),
            (Peer::Ferroid, Shape::Twitter) => ferroid::<SnowflakeTwitterId, V>(v, |_| spin_loop()),
            (Peer::FerroidSleep, Shape::Uncapped) => ferroid::<FerroidUncapped, V>(v, sleep_ms),
            (Peer::FerroidSleep, Shape::Twitter) => ferroid::<SnowflakeTwitterId, V>(v, sleep_ms),
            (Peer::Snowdon, Shape::Uncapped) => snowdon::<22, V>(v),
            (Peer::Snowdon, Shape::Twitter) => snowdon::<12, V>(v),
            (Peer::RsSnowflake, _) => {
                let epoch = UNIX_EPOCH + Duration::from_millis(EPOCH_MS);
                let fresh = move || snowflake::SnowflakeIdGenerator::with_epoch(0, 0, epoch);
                if threads == 1 {
                    // Owned by its one thread: no lock, as a single-threaded user would have it.
                    v.visit(move || {
                        let mut g = fresh();
                        move || g.real_time_generate() as u64
                    })
                } else {
                    let g = Mutex::new(fresh());
                    let g = &g;
                    v.visit(move || {
                        move || {
                            let mut g = g.lock().unwrap_or_else(PoisonError::into_inner);
                            g.real_time_generate() as u64
                        }
                    })
                }
            }
            (Peer::IdWorker, _) => {
                let bits = match shape {
                    Shape::Uncapped => 22,
                    Shape::Twitter => 12,
                };
                let w = IdWorker::new(bits, EPOCH_MS);
                let w = &w;
                v.visit(move || {
                    move || {
                        w.next_id()
                            .unwrap_or_else(|e| panic!("clock went back by {} ms", e.by_ms))
                    }
                })
            }
        }
    }
}

fn sleep_ms(ms: u64) {
    // `Pending { yield_for: 0 }` means a lost race: retry at once (sleeping 0 returns at once).
    std::thread::sleep(Duration::from_millis(ms));
}

fn ferroid<ID, V>(v: V, backoff: fn(u64)) -> V::Output
where
    ID: SnowflakeId<Ty = u64> + Sync,
    V: Visit,
{
    let clock = MonotonicClock::<1>::with_epoch(Duration::from_millis(EPOCH_MS));
    let g = AtomicSnowflakeGenerator::<ID, _>::new(0, clock);
    let g = &g;
    v.visit(move || move || g.next_id(backoff).to_raw())
}

fn snowdon<const SEQ: u32, V: Visit>(v: V) -> V::Output {
    let g = snowdon::Generator::<SnowdonSplit<SEQ>, SnowdonSplit<SEQ>>::default();
    let g = &g;
    v.visit(move || {
        move || loop {
            match g.generate_lock_free() {
                Ok(id) => break id.into_inner(),
                // Snowdon leaves waiting to the caller: "retry in the next millisecond".
                Err(snowdon::Error::SnowflakeExhaustion) => spin_loop(),
                Err(e) => panic!("snowdon failed: {e}"),
            }
        }
    })
}
