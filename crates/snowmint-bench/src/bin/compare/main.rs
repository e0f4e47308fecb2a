//! `compare`: snowmint and its peers in one process, one after the other, round after round
//! in a rotating order, reported as medians and ratios from the same run.
//!
//! ```text
//! cargo run --release -p snowmint-bench --bin compare -- [--rounds N] [--quick] [--only per-id,latency,cap,worst,burst]
//! ```
//!
//! The report (Markdown) goes to stdout, progress to stderr.

mod burst;
mod idworker;
mod measure;
mod peers;
mod provenance;
mod report;
mod results;
mod targets;

use std::time::Duration;

use clap::Parser;

use crate::burst::Burst;
use crate::measure::{Count, ForTime, Latency, Timer, Worst};
use crate::peers::{Peer, Shape, Visit};
use crate::results::{BurstKind, Results};

/// Benchmarks snowmint against ferroid, snowdon, rs-snowflake and a Mutex IdWorker.
#[derive(Debug, Parser)]
#[command(version)]
struct Flags {
    /// Rounds of every measurement; medians are taken across rounds [default: 7, or 3 with --quick].
    #[arg(long, env = "SNOWMINT_BENCH_ROUNDS", value_parser = clap::value_parser!(u32).range(1..))]
    rounds: Option<u32>,

    /// Small counts and short runs, for a smoke run of well under 20 s [default: off].
    #[arg(long, env = "SNOWMINT_BENCH_QUICK")]
    quick: bool,

    /// Run only these measurements (repeat or comma-separate) [default: all].
    #[arg(long, value_enum, value_delimiter = ',', env = "SNOWMINT_BENCH_ONLY")]
    only: Vec<Section>,
}

/// One of the five measurements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Section {
    /// Per-id cost with no cap in reach.
    PerId,
    /// Single-id latency below the cap.
    Latency,
    /// Sustained rate and CPU at the cap.
    Cap,
    /// The slowest single call at the cap, 2 threads.
    Worst,
    /// snowmint's bounded-drift burst.
    Burst,
}

/// Counts and durations of one run.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub rounds: u32,
    /// Ids per thread for the per-id cost.
    pub per_thread: u64,
    /// The same for rs-snowflake, which its fixed 12-bit sequence holds to 4,096 per ms.
    pub capped_per_thread: u64,
    /// Timed calls per latency series.
    pub samples: usize,
    /// The pause after each timed call.
    pub pause: Duration,
    /// Wall time of each run at the cap.
    pub cap_for: Duration,
    /// Wall time of each run timing every call at the cap.
    pub worst_for: Duration,
    /// The drift bound of the burst.
    pub lead: Duration,
    /// Ids asked for per `next_batch` call: one tick of Twitter's split.
    pub batch: u64,
}

impl Plan {
    fn new(flags: &Flags) -> Plan {
        let full = Plan {
            rounds: 7,
            per_thread: 20_000_000,
            capped_per_thread: 2_000_000,
            samples: 20_000,
            pause: Duration::from_micros(100),
            cap_for: Duration::from_secs(2),
            worst_for: Duration::from_secs(6),
            lead: Duration::from_secs(1),
            batch: 4_096,
        };
        let plan = if flags.quick {
            Plan {
                rounds: 3,
                per_thread: 2_000_000,
                capped_per_thread: 200_000,
                samples: 2_000,
                cap_for: Duration::from_millis(200),
                worst_for: Duration::from_millis(600),
                lead: Duration::from_millis(100),
                ..full
            }
        } else {
            full
        };
        Plan {
            rounds: flags.rounds.unwrap_or(plan.rounds),
            ..plan
        }
    }

    /// Ids in a burst: the lead's worth of ticks, or twice that.
    pub fn burst_ids(&self, kind: BurstKind) -> u64 {
        let lead_ticks = snowmint::whole_ms(self.lead);
        let within = lead_ticks * self.batch;
        match kind {
            BurstKind::WithinLead => within,
            BurstKind::TwiceLead => 2 * within,
        }
    }
}

fn main() {
    let flags = Flags::parse();
    let plan = Plan::new(&flags);
    let only = |s: Section| flags.only.is_empty() || flags.only.contains(&s);
    // Start snowmint's and ferroid's clock threads now, so every run (and the idle
    // measurement) sees the same process.
    let _ = snowmint::SystemClock::new();
    let _ = ferroid::time::MonotonicClock::<1>::default();
    sanity_check();
    let timer = Timer::calibrate();

    let mut r = Results::default();
    for round in 0..plan.rounds {
        eprintln!("round {}/{}", round + 1, plan.rounds);
        let round = round as usize;
        if only(Section::PerId) {
            per_id(&plan, round, &mut r);
        }
        if only(Section::Latency) {
            latency(&plan, timer, round, &mut r);
        }
        if only(Section::Cap) {
            at_cap(&plan, round, &mut r);
        }
        if only(Section::Worst) {
            worst(&plan, timer, round, &mut r);
        }
        if only(Section::Burst) {
            bursts(&plan, round, &mut r);
        }
    }
    print!("{}", report::render(&plan, &r));
}

fn per_id(plan: &Plan, round: usize, r: &mut Results) {
    for peer in rotated(&Peer::BELOW_CAP, round) {
        for threads in report::THREADS {
            let per_thread = match peer {
                Peer::RsSnowflake => plan.capped_per_thread,
                _ => plan.per_thread,
            };
            let count = Count {
                threads,
                per_thread,
            };
            let t = peer.visit(Shape::Uncapped, threads, count);
            eprintln!(
                "  per-id   {:<16} {threads}t {:>8.1} M ids/s, waited for a CPU {:>4.1} %",
                peer.name(),
                t.ids_per_sec / 1e6,
                100.0 * t.waited
            );
            r.per_id.push((peer, threads), t.ids_per_sec);
            if t.waited <= results::CLEAN_WAIT {
                r.per_id_clean.push((peer, threads), t.ids_per_sec);
            }
        }
    }
    for threads in report::THREADS {
        let t = measure::fetch_add_floor(Count {
            threads,
            per_thread: plan.per_thread,
        });
        eprintln!(
            "  per-id   {:<16} {threads}t {:>8.1} M ids/s, waited for a CPU {:>4.1} %",
            "fetch_add alone",
            t.ids_per_sec / 1e6,
            100.0 * t.waited
        );
        r.floor.push(threads, t.ids_per_sec);
        if t.waited <= results::CLEAN_WAIT {
            r.floor_clean.push(threads, t.ids_per_sec);
        }
    }
}

fn latency(plan: &Plan, timer: Timer, round: usize, r: &mut Results) {
    let latency = Latency {
        samples: plan.samples,
        pause: plan.pause,
        timer,
    };
    let show = |name: &str, p: &measure::Percentiles| {
        eprintln!(
            "  latency  {name:<16} p50 {:>4.0} ns, p99 {:>4.0} ns, p99.9 {:>5.0} ns, max {:>7.0} ns",
            p.p50_ns, p.p99_ns, p.p999_ns, p.max_ns
        );
    };
    for peer in rotated(&Peer::BELOW_CAP, round) {
        let p = peer.visit(Shape::Twitter, 1, latency);
        show(peer.name(), &p);
        r.latency.push(Some(peer), &p);
    }
    // The clocks alone: the first reading after each tick is one the clock's thread wrote.
    let clock = snowmint::SystemClock::new();
    let p = latency.of(|| snowmint::Clock::now_ms(&clock));
    show("snowmint's clock", &p);
    r.clocks.push(results::ClockRow::Snowmint, &p);
    let clock = ferroid::time::MonotonicClock::<1>::default();
    let p = latency.of(|| ferroid::time::TimeSource::<u64>::current_millis(&clock));
    show("ferroid's clock", &p);
    r.clocks.push(results::ClockRow::Ferroid, &p);
    let alone = latency.timer();
    show("timer alone", &alone);
    r.latency.push(None, &alone);
    let instant = latency.instant_pair();
    show("Instant pair", &instant);
    r.instant_pair.push((), &instant);
}

fn worst(plan: &Plan, timer: Timer, round: usize, r: &mut Results) {
    let run = Worst {
        threads: 2,
        run_for: plan.worst_for,
        timer,
    };
    for peer in rotated(&Peer::AT_CAP, round) {
        let w = peer.visit(Shape::Twitter, run.threads, run);
        eprintln!(
            "  worst    {:<16} 2t {:>9.0} ns slowest call, {} of {} calls over 1 ms",
            peer.name(),
            w.max_ns,
            w.over_1ms,
            w.calls
        );
        r.worst.push(peer, w.max_ns);
        r.worst_over_1ms.push(peer, w.over_1ms as f64);
    }
}

fn at_cap(plan: &Plan, round: usize, r: &mut Results) {
    for peer in rotated(&Peer::AT_CAP, round) {
        for threads in report::THREADS {
            let run = ForTime {
                threads,
                run_for: plan.cap_for,
            };
            let s = peer.visit(Shape::Twitter, threads, run);
            eprintln!(
                "  at cap   {:<16} {threads}t {:>7.2} % of cap, CPU {:>5.1} %, waited for a CPU {:>4.1} %",
                peer.name(),
                100.0 * s.ids_per_sec / results::CAP_PER_SEC,
                s.cpu_pct,
                100.0 * s.waited
            );
            r.cap_rate.push((peer, threads), s.ids_per_sec);
            r.cap_cpu.push((peer, threads), s.cpu_pct);
            r.cap_waited.push((peer, threads), 100.0 * s.waited);
        }
    }
    let idle = measure::idle_cpu_pct(plan.cap_for);
    eprintln!("  at cap   {:<16}    CPU {idle:>5.1} %", "process idle");
    r.idle_cpu.push((), idle);
}

fn bursts(plan: &Plan, round: usize, r: &mut Results) {
    for kind in rotated(&[BurstKind::WithinLead, BurstKind::TwiceLead], round) {
        let run = Burst {
            ids: plan.burst_ids(kind),
            batch: plan.batch,
            lead: plan.lead,
        }
        .run();
        eprintln!(
            "  burst    {:<16} {:.3} ms, largest lead {} ms",
            kind.label(),
            run.wall.as_secs_f64() * 1e3,
            run.max_lead_ms
        );
        r.bursts.entry(kind).or_default().push(run);
    }
}

/// `items` rotated left by `round`, so each round starts with another one.
fn rotated<T: Copy>(items: &[T], round: usize) -> Vec<T> {
    let mut v = items.to_vec();
    let by = round % v.len();
    v.rotate_left(by);
    v
}

/// Before measuring anything: every generator, in every split, mints strictly increasing
/// ids whose time (decoded with the split asked for) is the wall clock's.
fn sanity_check() {
    struct Check(Shape);
    impl Visit for Check {
        type Output = Result<(), String>;
        fn visit<M, F>(self, make: M) -> Result<(), String>
        where
            M: Fn() -> F + Sync,
            F: FnMut() -> u64,
        {
            let mut next = make();
            let mut last = 0;
            for _ in 0..10_000 {
                let id = next();
                if id <= last {
                    return Err(format!("id {id} after {last}"));
                }
                last = id;
            }
            let parts = self
                .0
                .layout()
                .decode(snowmint::Id::from_u64(last))
                .map_err(|e| e.to_string())?;
            let wall = snowmint::WallClock;
            let now = snowmint::Clock::now_ms(&wall);
            if parts.unix_ms.abs_diff(now) > 1_000 {
                return Err(format!("id time {} vs wall clock {now}", parts.unix_ms));
            }
            Ok(())
        }
    }
    for shape in [Shape::Uncapped, Shape::Twitter] {
        for peer in Peer::AT_CAP {
            let shape_used = match (peer, shape) {
                // rs-snowflake cannot take the uncapped split; it mints Twitter's.
                (Peer::RsSnowflake, _) => Shape::Twitter,
                _ => shape,
            };
            if let Err(e) = peer.visit(shape, 1, Check(shape_used)) {
                panic!("{} with {shape:?}: {e}", peer.name());
            }
        }
    }
}
