//! The targets, judged on the run's medians.

use std::fmt::Write as _;

use crate::Plan;
use crate::peers::Peer;
use crate::report::{THREADS, rate, threads_word};
use crate::results::{BurstKind, CAP_PER_SEC, Results, Tally};

/// Fewest clean runs a per-id target is judged on.
const MIN_CLEAN: usize = 3;

/// A target, judged on the run's medians.
struct Target {
    what: String,
    seen: String,
    /// `None`: too few clean runs to judge.
    pass: Option<bool>,
}

/// Appends the targets table: each target, what the run saw, PASS or FAIL.
pub fn targets(o: &mut String, plan: &Plan, r: &Results) {
    let mut t = Vec::new();
    if !r.per_id.is_empty() {
        for threads in THREADS {
            // One thread: 2x, raised from 1.5x once 1.5x was met; two threads: 1.5x.
            let goal = if threads == 1 { 2.0 } else { 1.5 };
            let (ours, theirs) = ((Peer::Snowmint, threads), (Peer::Ferroid, threads));
            let ratio = r.per_id_clean.median(&ours) / r.per_id_clean.median(&theirs);
            let clean = r
                .per_id_clean
                .count(&ours)
                .min(r.per_id_clean.count(&theirs));
            t.push(Target {
                what: format!(
                    "per-id ids/s ≥ {goal}× ferroid's, {}",
                    threads_word(threads)
                ),
                seen: if clean > 0 {
                    format!("{ratio:.2}× (clean runs: at least {clean} each)")
                } else {
                    "no clean runs".into()
                },
                pass: (clean >= MIN_CLEAN).then_some(ratio >= goal),
            });
        }
    }
    if !r.latency.p99.is_empty() {
        let l = &r.latency;
        for (name, tally) in [("p99", &l.p99), ("p99.9", &l.p999)] {
            let ours = tally.median(&Some(Peer::Snowmint));
            let (best, theirs) = Peer::BELOW_CAP[1..]
                .iter()
                .map(|&p| (p, tally.median(&Some(p))))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .expect("peers");
            t.push(Target {
                what: format!("latency {name} ≤ the best peer's {name}"),
                seen: format!(
                    "snowmint {ours:.0} ns, best peer {} {theirs:.0} ns ({:.2}×); timer alone {:.0} ns",
                    best.name(),
                    ours / theirs,
                    tally.median(&None),
                ),
                pass: Some(ours <= theirs),
            });
        }
    }
    if !r.cap_rate.is_empty() {
        for threads in THREADS {
            let key = (Peer::Snowmint, threads);
            let pct = 100.0 * r.cap_rate.median(&key) / CAP_PER_SEC;
            let cpu = r.cap_cpu.median(&key);
            t.push(Target {
                what: format!(
                    "at the cap, {}: ≥ 99.8 % of 4,096,000 ids/s on ≤ 15 % of a core",
                    threads_word(threads)
                ),
                seen: format!("{pct:.2} % on {cpu:.1} %"),
                pass: Some(pct >= 99.8 && cpu <= 15.0),
            });
        }
    }
    if !r.worst.is_empty() {
        let ours = r.worst.median(&Peer::Snowmint);
        let ferroid = r.worst.median(&Peer::Ferroid);
        t.push(Target {
            what: "slowest call at the cap, 2 threads, over a run: ≤ 1.2 ms".into(),
            seen: format!(
                "{:.3} ms (every run: {}); ferroid (spin) {:.3} ms",
                ours / 1e6,
                r.worst
                    .all(&Peer::Snowmint)
                    .iter()
                    .map(|x| format!("{:.3}", x / 1e6))
                    .collect::<Vec<_>>()
                    .join(", "),
                ferroid / 1e6
            ),
            pass: Some(ours <= 1.2e6),
        });
    }
    for (kind, runs) in &r.bursts {
        let mut rates = Tally::default();
        for run in runs {
            rates.push((), run.ids_per_sec);
        }
        let rate_med = rates.median(&());
        let max_lead = runs.iter().map(|b| b.max_lead_ms).max().unwrap_or(i64::MIN);
        let bound = i64::try_from(plan.lead.as_millis()).unwrap_or(i64::MAX);
        // Twice the lead cannot be issued faster than real time lets the second half be:
        // that burst's target is the bound alone.
        let fast = *kind == BurstKind::WithinLead;
        t.push(Target {
            what: format!(
                "burst {}: {}lead never above the bound",
                kind.label(),
                if fast { "≥ 1 G ids/s, " } else { "" }
            ),
            seen: format!(
                "{} ids/s, largest lead {max_lead} ms of {bound} ms",
                rate(rate_med)
            ),
            pass: Some((!fast || rate_med >= 1e9) && max_lead <= bound),
        });
    }
    let _ = writeln!(o, "\n## Targets\n\n| target | seen (medians) | result |");
    let _ = writeln!(o, "|---|---|---|");
    for target in t {
        let _ = writeln!(
            o,
            "| {} | {} | {} |",
            target.what,
            target.seen,
            match target.pass {
                Some(true) => "PASS",
                Some(false) => "FAIL",
                None => "NOT JUDGED (too few clean runs)",
            }
        );
    }
}
