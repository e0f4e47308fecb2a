//! The record of runs (one JSON object a line), the Markdown table and the SVG plot made
//! from it: medians over the runs of each registry, fleet size and connection limit.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::Path;

use anyhow::Context;

use super::measure::Outcome;

/// The registries in the order the table and the legend list them.
const ORDER: [&str; 5] = ["redis", "etcd", "postgres", "zookeeper", "file"];
/// The target: all of a fleet of 1,024 hold their worker ids within this (ms).
const TARGET_MS: f64 = 10_000.0;
/// One colour per series, told apart in print too (Okabe-Ito).
const COLOURS: [&str; 7] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
];

/// The run's results in a few lines.
pub fn summary(o: &Outcome) -> String {
    let mut s = format!(
        "registry={} instances={} held={} acquired_median_ms={} acquired_max_ms={} issue_wait_max_ms={} ({} leases) acquire_failures={} ops_per_acquisition={} ({}) registry_pss_mib={} shared_memory_mib={} load={:.2}..{:.2}",
        o.registry,
        o.instances,
        o.held,
        opt(o.acquired_median_ms, 1),
        opt(o.acquired_max_ms, 1),
        o.issue_wait_max_ms,
        o.issue_waits,
        o.acquire_failures,
        opt(o.ops_per_acquisition, 1),
        o.counted_as.as_deref().unwrap_or("not counted"),
        opt(o.registry_pss_mib, 1),
        opt(o.shared_memory_mib, 0),
        o.load_before,
        o.load_after,
    );
    let _ = write!(
        s,
        "\nCPU until all held: registry_ms={} bench_ms={}",
        o.registry_cpu_acquiring_ms
            .map_or_else(|| "-".into(), |ms| ms.to_string()),
        o.bench_cpu_acquiring_ms
    );
    if let Some(err) = &o.first_error {
        let _ = write!(s, "\nnot holding: {err}");
    }
    if let Some(st) = &o.steady {
        let _ = write!(
            s,
            "\nsteady: {:.1} s, renewals={} ({:.1}/s) failures={} registry_cpu_ms={} cpu_us_per_renewal={:.1} core_percent={:.2} idle_core_percent={:.2} cpu_us_per_renewal_above_idle={:.1} ops_per_renewal={}",
            st.seconds,
            st.renewals,
            st.renewals as f64 / st.seconds,
            st.renew_failures,
            st.cpu_ms,
            st.cpu_us_per_renewal,
            st.core_percent,
            st.idle_core_percent,
            st.cpu_us_per_renewal_above_idle,
            opt(st.ops_per_renewal, 1),
        );
    }
    if let Some(r) = &o.restart {
        let _ = write!(
            s,
            "\nrolling restart: waves of {}, total_ms={:.0} median_ms={:.1} max_ms={:.1} failed={} issue_wait_max_ms={}",
            r.wave, r.total_ms, r.median_ms, r.max_ms, r.failed, r.issue_wait_max_ms
        );
    }
    s
}

fn pair(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) => format!("{a:.2} / {b:.2}"),
        _ => "-".into(),
    }
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.digits$}"))
}

/// Appends `outcome` to the record at `path`.
pub fn append(path: &Path, outcome: &Outcome) -> anyhow::Result<()> {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    writeln!(file, "{}", serde_json::to_string(outcome)?)
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Every run in the record at `path`.
pub fn read(path: &Path) -> anyhow::Result<Vec<Outcome>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line).with_context(|| format!("{}:{}", path.display(), i + 1))
        })
        .collect()
}

/// The runs of one registry, connection limit, pool and fleet size.
type Key = (usize, Option<u32>, Option<u32>, usize);

fn groups(runs: &[Outcome]) -> BTreeMap<Key, Vec<&Outcome>> {
    let mut groups: BTreeMap<Key, Vec<&Outcome>> = BTreeMap::new();
    for run in runs {
        let rank = ORDER
            .iter()
            .position(|r| *r == run.registry)
            .unwrap_or(ORDER.len());
        groups
            .entry((rank, run.max_connections, run.pool, run.instances))
            .or_default()
            .push(run);
    }
    groups
}

/// The median of what `f` gives for each run that has it.
fn median_of(runs: &[&Outcome], f: impl Fn(&Outcome) -> Option<f64>) -> Option<f64> {
    let mut values: Vec<f64> = runs
        .iter()
        .filter_map(|r| f(r))
        .filter(|v| v.is_finite())
        .collect();
    values.sort_by(f64::total_cmp);
    let n = values.len();
    // Of an even count, the mean of the middle two.
    (n > 0).then(|| (values[(n - 1) / 2] + values[n / 2]) / 2.0)
}

fn series_name(run: &Outcome) -> String {
    match (run.max_connections, run.pool) {
        (_, Some(pool)) => format!("{} (PgBouncer, {pool} server connections)", run.registry),
        (Some(max), None) => format!("{} (max_connections {max})", run.registry),
        (None, None) => run.registry.clone(),
    }
}

fn ms_or_s(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if v >= 10_000.0 => format!("{:.1} s", v / 1_000.0),
        Some(v) if v >= 100.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.1}"),
    }
}

/// The Markdown table of every recorded run: medians per registry and fleet size.
pub fn table(runs: &[Outcome]) -> String {
    let mut t = String::from(
        "| registry | N | runs | held | all held: median / slowest (ms) | wait before issuing, max (ms) | ops per acquisition | registry CPU per renewal, above idle (µs) | registry CPU, steady / idle (% of a core) | renewals/s | rolling restart: total / slowest (ms) | registry PSS (MiB) | PostgreSQL sessions, most |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for ((_, _, _, n), group) in groups(runs) {
        let first = group[0];
        let held = median_of(&group, |r| Some(r.held as f64)).unwrap_or(0.0);
        let all = group.iter().all(|r| r.held == r.instances);
        let steady =
            |f: fn(&super::measure::Steady) -> f64| median_of(&group, |r| r.steady.as_ref().map(f));
        let restart = |f: fn(&super::measure::Restart) -> f64| {
            median_of(&group, |r| r.restart.as_ref().map(f))
        };
        let _ = writeln!(
            t,
            "| {} | {n} | {} | {}{} | {} / {} | {} | {} | {} | {} | {} | {} / {} | {} | {} |",
            series_name(first),
            group.len(),
            held,
            if all { "" } else { " (not all)" },
            ms_or_s(median_of(&group, |r| r.acquired_median_ms)),
            ms_or_s(median_of(&group, |r| r.acquired_max_ms)),
            ms_or_s(median_of(&group, |r| Some(r.issue_wait_max_ms as f64))),
            opt(median_of(&group, |r| r.ops_per_acquisition), 1),
            opt(steady(|s| s.cpu_us_per_renewal_above_idle), 1),
            pair(steady(|s| s.core_percent), steady(|s| s.idle_core_percent)),
            opt(steady(|s| s.renewals as f64 / s.seconds), 0),
            ms_or_s(restart(|r| r.total_ms)),
            ms_or_s(restart(|r| r.max_ms)),
            opt(median_of(&group, |r| r.registry_pss_mib), 1),
            opt(
                median_of(&group, |r| r.server_connections_max.map(|n| n as f64)),
                0
            ),
        );
    }
    t
}

/// The plot: the time until all of a fleet hold their worker ids (the slowest instance,
/// median over runs) against the fleet's size, one line per registry, both axes
/// logarithmic; only sizes at which every run's fleet held.
pub fn svg(runs: &[Outcome]) -> String {
    const W: f64 = 720.0;
    const H: f64 = 440.0;
    const LEFT: f64 = 70.0;
    const RIGHT: f64 = 220.0;
    const TOP: f64 = 40.0;
    const BOTTOM: f64 = 60.0;
    let mut series: BTreeMap<(usize, String), Vec<(f64, f64)>> = BTreeMap::new();
    for ((rank, _, _, n), group) in groups(runs) {
        if group.iter().any(|r| r.held < r.instances) {
            continue;
        }
        if let Some(v) = median_of(&group, |r| r.acquired_max_ms) {
            series
                .entry((rank, series_name(group[0])))
                .or_default()
                .push((n as f64, v.max(0.1)));
        }
    }
    let points = series.values().flatten();
    let (mut n_min, mut n_max, mut v_min, mut v_max) = (16.0f64, 1_024.0f64, TARGET_MS, TARGET_MS);
    for (n, v) in points {
        n_min = n_min.min(*n);
        n_max = n_max.max(*n);
        v_min = v_min.min(*v);
        v_max = v_max.max(*v);
    }
    let (x_lo, x_hi) = (
        n_min.log2().floor(),
        n_max.log2().ceil().max(n_min.log2().floor() + 1.0),
    );
    let (y_lo, y_hi) = (
        v_min.log10().floor(),
        v_max.log10().ceil().max(v_min.log10().floor() + 1.0),
    );
    let x = |n: f64| LEFT + (n.log2() - x_lo) / (x_hi - x_lo) * (W - LEFT - RIGHT);
    let y = |v: f64| H - BOTTOM - (v.log10() - y_lo) / (y_hi - y_lo) * (H - TOP - BOTTOM);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{LEFT}\" y=\"22\" font-size=\"14\">Time until every instance holds a worker id (slowest, median of runs)</text>\n"
    );
    let (x0, x1, y0, y1) = (LEFT, W - RIGHT, H - BOTTOM, TOP);
    let _ = writeln!(
        s,
        "<path d=\"M{x0} {y1} V{y0} H{x1}\" stroke=\"black\" fill=\"none\"/>"
    );
    let mut e = x_lo;
    while e <= x_hi {
        let n = 2f64.powf(e);
        let px = x(n);
        let _ = writeln!(
            s,
            "<line x1=\"{px:.1}\" y1=\"{y0}\" x2=\"{px:.1}\" y2=\"{y1}\" stroke=\"#ddd\"/><text x=\"{px:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{n}</text>",
            y0 + 16.0
        );
        e += 1.0;
    }
    let mut e = y_lo;
    while e <= y_hi {
        let v = 10f64.powf(e);
        let py = y(v);
        let label = if v >= 1_000.0 {
            format!("{} s", v / 1_000.0)
        } else {
            format!("{v} ms")
        };
        let _ = writeln!(
            s,
            "<line x1=\"{x0}\" y1=\"{py:.1}\" x2=\"{x1}\" y2=\"{py:.1}\" stroke=\"#ddd\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{label}</text>",
            x0 - 6.0,
            py + 4.0
        );
        e += 1.0;
    }
    let target = y(TARGET_MS);
    let _ = writeln!(
        s,
        "<line x1=\"{x0}\" y1=\"{target:.1}\" x2=\"{x1}\" y2=\"{target:.1}\" stroke=\"#c00\" stroke-dasharray=\"6 4\"/><text x=\"{:.1}\" y=\"{:.1}\" fill=\"#c00\">target: 10 s</text>",
        x0 + 6.0,
        target - 6.0
    );
    let _ = writeln!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">instances started together (N)</text>",
        (x0 + x1) / 2.0,
        H - 16.0
    );
    for (i, ((_, name), points)) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let path: Vec<String> = points
            .iter()
            .map(|(n, v)| format!("{:.1},{:.1}", x(*n), y(*v)))
            .collect();
        let _ = writeln!(
            s,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\"/>",
            path.join(" ")
        );
        for (n, v) in points {
            let _ = writeln!(
                s,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3.5\" fill=\"{colour}\"><title>{name}, N={n}: {v:.1} ms</title></circle>",
                x(*n),
                y(*v)
            );
        }
        let ly = TOP + 10.0 + 20.0 * i as f64;
        let _ = writeln!(
            s,
            "<line x1=\"{:.1}\" y1=\"{ly:.1}\" x2=\"{:.1}\" y2=\"{ly:.1}\" stroke=\"{colour}\" stroke-width=\"2\"/><text x=\"{:.1}\" y=\"{:.1}\">{name}</text>",
            x1 + 16.0,
            x1 + 36.0,
            x1 + 42.0,
            ly + 4.0
        );
    }
    s.push_str("</svg>\n");
    s
}
