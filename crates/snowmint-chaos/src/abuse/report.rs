//! The run's findings: for each attack, what the attacker saw and how the well-behaved
//! client fared meanwhile, as a Markdown table.

use std::fmt::Write as _;
use std::time::Duration;

use super::client::Fared;

/// What an attack's attacker saw, in words.
#[derive(Debug)]
pub struct Saw {
    /// One line: how many got in, what the server answered, when it closed them.
    pub text: String,
}

/// What a budget attack left in the server.
#[derive(Debug, Default)]
pub struct Budget {
    /// The most ids in flight seen (sampled every 250 ms).
    pub in_flight_peak: u64,
    /// Ids given back at a drain deadline from the attack's start to the window's end.
    pub abandoned: u64,
}

/// One row of the table.
pub struct Row {
    /// The attack, as run.
    pub attack: String,
    /// What the attacker saw.
    pub saw: Saw,
    /// How the well-behaved client fared meanwhile.
    pub fared: Fared,
    /// The server's peak resident memory, threads and descriptors during the window.
    pub server: String,
    /// How a client reading a large batch every second fared, if one was measured.
    pub large: Option<Fared>,
    /// For an attack on the budget: what it left in the server.
    pub budget: Option<Budget>,
}

/// Milliseconds, to one decimal.
pub fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1000.0)
}

/// "1.0-1.1 s (median 1.0 s)" for a set of times.
pub fn seconds_range(times: &[Duration]) -> String {
    let mut sorted = times.to_vec();
    sorted.sort_unstable();
    let (Some(first), Some(last)) = (sorted.first(), sorted.last()) else {
        return "-".into();
    };
    let median = sorted[sorted.len() / 2];
    format!(
        "{:.1}-{:.1} s (median {:.1} s)",
        first.as_secs_f64(),
        last.as_secs_f64(),
        median.as_secs_f64()
    )
}

/// "3 HTTP 431, 1 reset": each kind once, with its count, in order of first sight.
pub fn count_kinds<'a>(kinds: impl IntoIterator<Item = &'a str>) -> String {
    let mut counted: Vec<(&str, usize)> = Vec::new();
    for kind in kinds {
        match counted.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, n)) => *n += 1,
            None => counted.push((kind, 1)),
        }
    }
    counted
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The table.
pub fn markdown(rows: &[&Row]) -> String {
    let mut out = String::from(
        "| attack | what the attacker saw | client requests | client errors | p50 ms | p99 ms | max ms | server at its peak |\n\
         |---|---|---:|---|---:|---:|---:|---|\n",
    );
    for row in rows {
        let q = |q: f64| row.fared.quantile(q).map_or("-".into(), ms);
        let max = row
            .fared
            .latencies
            .iter()
            .max()
            .map_or("-".into(), |d| ms(*d));
        let errors = if row.fared.errors.is_empty() {
            "0".to_string()
        } else {
            format!("{} ({})", row.fared.errors.len(), row.fared.error_kinds())
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {errors} | {} | {} | {max} | {} |",
            row.attack,
            row.saw.text,
            row.fared.requests(),
            q(0.5),
            q(0.99),
            row.server
        );
    }
    out
}

/// "0" or "3 (2 HTTP 503, 1 timed out)".
fn errors(kinds: &[&str]) -> String {
    if kinds.is_empty() {
        "0".to_string()
    } else {
        format!("{} ({})", kinds.len(), count_kinds(kinds.iter().copied()))
    }
}

/// The table of the attacks on the budget: the small client over the whole window and from
/// [`BUDGET_SETTLES`](super::BUDGET_SETTLES) on, and the large reader.
pub fn budget_markdown(rows: &[&Row]) -> String {
    let settles = super::BUDGET_SETTLES.as_secs();
    let mut out = format!(
        "| attack | what the attacker saw | 100 ids: requests, errors | p50 / p99 / max ms | from {settles} s on: requests, errors, max ms | 65,536 ids read: requests, errors, max ms | ids in flight at peak | ids abandoned |\n\
         |---|---|---|---|---|---|---:|---:|\n"
    );
    for row in rows {
        let fared = &row.fared;
        let q = |q: f64| fared.quantile(q).map_or("-".into(), ms);
        let max = fared.latencies.iter().max().map_or("-".into(), |d| ms(*d));
        let whole: Vec<&str> = fared.errors.iter().map(String::as_str).collect();
        let (late, late_errors, late_max) = fared.since(super::BUDGET_SETTLES);
        let large = row.large.as_ref().map_or("-".into(), |large| {
            let (made, errs, slowest) = large.since(Duration::ZERO);
            format!(
                "{made}, {}, {}",
                errors(&errs),
                slowest.map_or("-".into(), ms)
            )
        });
        let (peak, abandoned) = row.budget.as_ref().map_or(("-".into(), "-".into()), |b| {
            (b.in_flight_peak.to_string(), b.abandoned.to_string())
        });
        let _ = writeln!(
            out,
            "| {} | {} | {}, {} | {} / {} / {max} | {late}, {}, {} | {large} | {peak} | {abandoned} |",
            row.attack,
            row.saw.text,
            fared.requests(),
            errors(&whole),
            q(0.5),
            q(0.99),
            errors(&late_errors),
            late_max.map_or("-".into(), ms),
        );
    }
    out
}
