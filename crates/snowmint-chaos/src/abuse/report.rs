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
pub fn markdown(rows: &[Row]) -> String {
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
