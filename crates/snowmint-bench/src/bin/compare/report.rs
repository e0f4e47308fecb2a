//! The report: the Markdown tables, one per measurement.

use std::fmt::Write as _;

use crate::Plan;
use crate::peers::{Peer, Shape};
use crate::provenance::{command, machine, peer_versions, snowmint_revision};
use crate::results::{CAP_PER_SEC, CLEAN_WAIT, ClockRow, Results, Spread, Tally};
use crate::targets::targets;

/// The thread counts every multi-thread measurement runs with.
pub const THREADS: [usize; 2] = [1, 2];

/// The whole report, in Markdown.
pub fn render(plan: &Plan, r: &Results) -> String {
    let mut out = String::new();
    let o = &mut out;
    let _ = writeln!(o, "# snowmint and its peers, one process\n");
    let _ = writeln!(o, "- machine: {}", machine());
    let _ = writeln!(o, "- command: `{}`", command());
    let _ = writeln!(o, "- snowmint: {}", snowmint_revision());
    let _ = writeln!(o, "- peers: {}", peer_versions());
    let _ = writeln!(
        o,
        "- rounds: {}, each running every generator once per measurement, in an order rotated \
         each round; figures are medians across rounds (range in brackets), ratios are of medians",
        plan.rounds
    );
    if cfg!(debug_assertions) {
        let _ = writeln!(o, "- WARNING: debug build; the figures mean nothing");
    }
    if !r.per_id.is_empty() {
        per_id(o, plan, r);
    }
    if !r.latency.p99.is_empty() {
        latency(o, plan, r);
    }
    if !r.cap_rate.is_empty() {
        at_cap(o, plan, r);
    }
    if !r.worst.is_empty() {
        worst(o, plan, r);
    }
    if !r.bursts.is_empty() {
        bursts(o, plan, r);
    }
    targets(o, plan, r);
    notes(o);
    out
}

fn notes(o: &mut String) {
    let _ = writeln!(
        o,
        "\n## How each generator was set up\n\n\
         - snowmint: `Generator::builder(layout).build()`, default policies (`OverflowPolicy::Wait` \
         parks the thread), `SystemClock` (a shared ticker thread).\n\
         - ferroid: `AtomicSnowflakeGenerator` with `MonotonicClock` (its own ticker thread); ids \
         from `define_snowflake_id!` (1 reserved + 41 + 0 + 22 bits) and `SnowflakeTwitterId`. On \
         `Pending` it spins (`spin_loop`, as ferroid's own benchmarks do); the \"sleep\" row, run \
         at the cap only, sleeps the `yield_for` it is told instead.\n\
         - snowdon: lock-free `Generator` with a custom `Layout` (timestamp above bit 22, a 22- or \
         12-bit sequence, node bits 0) and Twitter's epoch; it reads `SystemTime` on every call and \
         reports `SnowflakeExhaustion`, on which the caller spins and retries.\n\
         - rs-snowflake: cannot be configured: its sequence is 12 bits and its two 5-bit node \
         fields are fixed, so in the per-id table it runs at its cap of 4,096 ids per ms and its \
         figure is that cap, not its code's cost. `real_time_generate` (its other modes do not \
         follow the clock). It takes `&mut self`: owned by its thread with 1 thread, behind a \
         `std::sync::Mutex` with 2.\n\
         - Mutex IdWorker: written in this crate after Twitter's IdWorker: a `std::sync::Mutex`, \
         `SystemTime::now()` under the lock, a busy loop to the next ms on overflow."
    );
}

fn per_id(o: &mut String, plan: &Plan, r: &Results) {
    let _ = writeln!(
        o,
        "\n## 1. Per-id cost, no cap in reach\n\n\
         Split 41/0/22 (timestamp/node/sequence bits): 4,194,304 ids per ms, so the cap never \
         binds. {} ids per thread ({} for rs-snowflake, capped at 4,096/ms), ids black-boxed; \
         2 threads share one generator. A run is clean when no thread spent more than {:.0} % \
         of it runnable but waiting for a CPU (run delay, /proc/thread-self/schedstat): on this \
         shared 2-core machine other processes' work would otherwise be measured, and two \
         threads taking turns on one core contend for nothing. Ratios and targets use the \
         clean runs' medians. The last row of each thread count is no generator: one \
         `fetch_add` on a shared `AtomicU64` a call, the floor of any design that takes a \
         locked instruction per id.\n",
        grouped(plan.per_thread as f64),
        grouped(plan.capped_per_thread as f64),
        100.0 * CLEAN_WAIT,
    );
    let _ = writeln!(
        o,
        "| generator | split | threads | ids/s, clean runs | clean runs | ns/id | snowmint ÷ this | ids/s, every run in order (M) |"
    );
    let _ = writeln!(o, "|---|---|---:|---:|---:|---:|---:|---|");
    for threads in THREADS {
        let ours = r.per_id_clean.median(&(Peer::Snowmint, threads));
        for peer in Peer::BELOW_CAP {
            let key = (peer, threads);
            let theirs = r.per_id_clean.median(&key);
            let _ = writeln!(
                o,
                "| {} | {} | {threads} | {} | {} of {} | {} | {} | {} |",
                peer.name(),
                peer.split(Shape::Uncapped),
                with_range(&r.per_id_clean, &key, millions),
                r.per_id_clean.count(&key),
                r.per_id.count(&key),
                or_dash(1e9 / theirs, |x| format!("{x:.1}")),
                or_dash(ours / theirs, |x| format!("{x:.2}×")),
                every(&r.per_id, &key, |x| format!("{:.1}", x / 1e6)),
            );
        }
        let floor = r.floor_clean.median(&threads);
        let _ = writeln!(
            o,
            "| *`fetch_add` alone* | — | {threads} | {} | {} of {} | {} | {} | {} |",
            with_range(&r.floor_clean, &threads, millions),
            r.floor_clean.count(&threads),
            r.floor.count(&threads),
            or_dash(1e9 / floor, |x| format!("{x:.1}")),
            or_dash(ours / floor, |x| format!("{x:.2}×")),
            every(&r.floor, &threads, |x| format!("{:.1}", x / 1e6)),
        );
    }
}

fn latency(o: &mut String, plan: &Plan, r: &Results) {
    let _ = writeln!(
        o,
        "\n## 2. Single-id latency below the cap\n\n\
         Twitter's split. One id, then {} µs spun on `Instant`, {} times (after {} untimed), so \
         about one call in {} is the first of its millisecond; the time of the call alone \
         between two readings of the time-stamp counter (`lfence; rdtsc` before, `rdtscp; \
         lfence` after, scaled to ns against `Instant`). The timer's own cost, two readings \
         with nothing between, is in the row \"timer alone\" and inside every other figure; \
         two `Instant::now`, the timer of earlier runs, is in the last row. The rows of the clocks \
         alone read snowmint's and ferroid's clock the same way: both are a word a thread of \
         their own writes once a millisecond, so the first reading after each write fetches the \
         line from the core that wrote it. Each figure is \
         the median over rounds (range in brackets); the p99 and p99.9 of every round are \
         listed after.\n",
        plan.pause.as_micros(),
        grouped(plan.samples as f64),
        grouped((plan.samples / 10) as f64),
        1_000 / plan.pause.as_micros().max(1),
    );
    let _ = writeln!(
        o,
        "| generator | split | p50 ns | p99 ns | p99.9 ns | max ns | this p99 ÷ snowmint's | p99 every round | p99.9 every round |"
    );
    let _ = writeln!(o, "|---|---|---:|---:|---:|---:|---:|---|---|");
    let l = &r.latency;
    let ours = l.p99.median(&Some(Peer::Snowmint));
    for peer in Peer::BELOW_CAP {
        let key = Some(peer);
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {:.2}× | {} | {} |",
            peer.name(),
            peer.split(Shape::Twitter),
            with_range(&l.p50, &key, whole),
            with_range(&l.p99, &key, whole),
            with_range(&l.p999, &key, whole),
            with_range(&l.max, &key, whole),
            l.p99.median(&key) / ours,
            every(&l.p99, &key, whole),
            every(&l.p999, &key, whole),
        );
    }
    for clock in [ClockRow::Snowmint, ClockRow::Ferroid] {
        spread_row(o, clock.name(), &r.clocks, &clock);
    }
    spread_row(o, "timer alone", l, &None);
    spread_row(o, "two `Instant::now`", &r.instant_pair, &());
}

/// A latency row of something that is no generator.
fn spread_row<K: Ord>(o: &mut String, name: &str, s: &Spread<K>, key: &K) {
    let _ = writeln!(
        o,
        "| {name} | — | {} | {} | {} | {} | — | {} | {} |",
        with_range(&s.p50, key, whole),
        with_range(&s.p99, key, whole),
        with_range(&s.p999, key, whole),
        with_range(&s.max, key, whole),
        every(&s.p99, key, whole),
        every(&s.p999, key, whole),
    );
}

fn worst(o: &mut String, plan: &Plan, r: &Results) {
    let _ = writeln!(
        o,
        "\n## 4. The slowest call at the cap\n\n\
         Twitter's split, 2 threads minting as fast as they can for {} ms a run, every call \
         timed with the time-stamp counter as above: the slowest single call of either \
         thread, and how many calls took over 1 ms. A generator at its cap makes a caller \
         wait for the next millisecond, so a call of up to 1 ms is the wait itself; what is \
         over it is the wake-up.\n",
        plan.worst_for.as_millis()
    );
    let _ = writeln!(
        o,
        "| generator | waits by | slowest call, µs | calls over 1 ms | slowest call every round, µs |"
    );
    let _ = writeln!(o, "|---|---|---:|---:|---|");
    for peer in Peer::AT_CAP {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} |",
            peer.name(),
            peer.waits_by(),
            with_range(&r.worst, &peer, micros),
            with_range(&r.worst_over_1ms, &peer, whole),
            every(&r.worst, &peer, micros),
        );
    }
}

fn at_cap(o: &mut String, plan: &Plan, r: &Results) {
    let _ = writeln!(
        o,
        "\n## 3. Sustained at the cap\n\n\
         Twitter's split (4,096,000 ids/s per generator). Threads mint as fast as they can for \
         {} ms per run; process CPU is getrusage(RUSAGE_SELF) user + sys over wall time, in % \
         of one core, and includes every thread of the process (the last row: the process \
         idle, which is mostly snowmint's and ferroid's clock threads). \"Waited for a CPU\": \
         the median over runs of the largest share of a run any thread spent runnable but \
         waiting for a core (other processes at work). All runs count here.\n",
        plan.cap_for.as_millis()
    );
    let _ = writeln!(
        o,
        "| generator | waits by | threads | ids/s | % of 4,096,000 | process CPU, % of a core | waited for a CPU | % of 4,096,000, every run |"
    );
    let _ = writeln!(o, "|---|---|---:|---:|---:|---:|---:|---|");
    for peer in Peer::AT_CAP {
        for threads in THREADS {
            let key = (peer, threads);
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {:.2} % | {} | {:.1} % | {} |",
                peer.name(),
                peer.waits_by(),
                threads,
                with_range(&r.cap_rate, &key, grouped),
                100.0 * r.cap_rate.median(&key) / CAP_PER_SEC,
                with_range(&r.cap_cpu, &key, |x| format!("{x:.1} %")),
                r.cap_waited.median(&key),
                every(&r.cap_rate, &key, |x| format!(
                    "{:.2}",
                    100.0 * x / CAP_PER_SEC
                )),
            );
        }
    }
    let _ = writeln!(
        o,
        "| (process idle) | — | 0 | — | — | {} | — | — |",
        with_range(&r.idle_cpu, &(), |x| format!("{x:.1} %"))
    );
}

fn bursts(o: &mut String, plan: &Plan, r: &Results) {
    let lead_ms = plan.lead.as_millis();
    let _ = writeln!(
        o,
        "\n## 5. Bounded drift: `next_batch` under `OverflowPolicy::Borrow {{ lead: {lead_ms} ms }}`\n\n\
         snowmint alone, Twitter's split, a fresh generator per burst, `next_batch({})` in a \
         loop. After each batch the last id's ms is compared with `SystemTime::now()`. A burst \
         of the lead's worth ({lead_ms} ms × 4,096) fits in the ids the lead lets it borrow; a \
         burst of twice that must wait for real time to pass for the second half.\n",
        plan.batch
    );
    let _ = writeln!(
        o,
        "| burst | ids | wall | ids/s | largest lead seen | bound | parked waits |"
    );
    let _ = writeln!(o, "|---|---:|---:|---:|---:|---:|---:|");
    for (kind, runs) in &r.bursts {
        let mut rates = Tally::default();
        let mut walls = Tally::default();
        let mut waits = Tally::default();
        for run in runs {
            rates.push((), run.ids_per_sec);
            walls.push((), run.wall.as_secs_f64() * 1e3);
            waits.push((), run.tick_waits as f64);
        }
        let max_lead = runs.iter().map(|b| b.max_lead_ms).max().unwrap_or(i64::MIN);
        let _ = writeln!(
            o,
            "| {} | {} | {} ms | {} | {max_lead} ms | {lead_ms} ms | {} |",
            kind.label(),
            grouped(plan.burst_ids(*kind) as f64),
            with_range(&walls, &(), |x| format!("{x:.3}")),
            with_range(&rates, &(), rate),
            with_range(&waits, &(), whole),
        );
    }
}
pub fn threads_word(threads: usize) -> String {
    match threads {
        1 => "1 thread".into(),
        n => format!("{n} threads"),
    }
}

/// The median with the range in brackets, or a dash when there is no value.
fn with_range<K: Ord>(t: &Tally<K>, key: &K, f: impl Fn(f64) -> String) -> String {
    if t.count(key) == 0 {
        return "—".into();
    }
    let (lo, hi) = t.range(key);
    format!("{} ({}–{})", f(t.median(key)), f(lo), f(hi))
}

/// Every round's value, in order, or a dash when there is none.
fn every<K: Ord>(t: &Tally<K>, key: &K, f: impl Fn(f64) -> String) -> String {
    let all = t.all(key);
    if all.is_empty() {
        return "—".into();
    }
    all.iter().map(|&x| f(x)).collect::<Vec<_>>().join(", ")
}

fn micros(x: f64) -> String {
    format!("{:.0}", x / 1e3)
}

/// `f(x)`, or a dash when `x` is not a number (a median of nothing).
fn or_dash(x: f64, f: impl Fn(f64) -> String) -> String {
    if x.is_finite() { f(x) } else { "—".into() }
}

fn millions(x: f64) -> String {
    format!("{:.1} M", x / 1e6)
}

fn whole(x: f64) -> String {
    format!("{x:.0}")
}

pub fn rate(x: f64) -> String {
    if x >= 1e9 {
        format!("{:.2} G", x / 1e9)
    } else {
        format!("{:.2} M", x / 1e6)
    }
}

/// An integer with thousands separators.
fn grouped(x: f64) -> String {
    let digits = format!("{:.0}", x.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}
