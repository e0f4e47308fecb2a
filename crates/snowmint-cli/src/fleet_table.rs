//! `snowmint fleet`'s tables, for a person: one row per worker id's record, then the free
//! worker ids per fleet and datacenter, then the datacenters that fleets share.

use std::fmt::Write;

use snowmint::UnixMs;
use snowmint_lease::{Lasts, ListFilter, Listing, Pool, Record, State};

/// Past this many seconds a time left or gone is said in minutes, and so on up.
const SECONDS_SHOWN: i64 = 100;
const MS_PER_MINUTE: i64 = 60_000;
const MS_PER_HOUR: i64 = 60 * MS_PER_MINUTE;
const MS_PER_DAY: i64 = 24 * MS_PER_HOUR;

/// What a cell shows when the registry does not know.
const UNKNOWN: &str = "-";

/// The whole text: the records, the pools, the shared datacenters.
pub fn render(listing: &Listing, filter: &ListFilter) -> String {
    let mut text = String::new();
    if listing.records.is_empty() {
        let _ = writeln!(text, "{}", nothing_found(listing, filter));
    } else {
        let mut rows = vec![
            [
                "FLEET", "LAYOUT", "DC", "WORKER", "IDENTITY", "HOLDER", "TAKEN AT", "MARK",
                "EXPIRES", "STATE",
            ]
            .map(String::from)
            .to_vec(),
        ];
        rows.extend(
            listing
                .records
                .iter()
                .map(|r| record_row(r, listing.read_at_ms)),
        );
        text.push_str(&aligned(&rows, &[2, 3]));
        if listing.records.iter().any(|r| r.earlier_release) {
            text.push_str(
                "(earlier release) marks records that an earlier release left under its layout's name: they name no fleet, and record no layout or taken-at unless a later server wrote one\n",
            );
        }
        text.push('\n');
        let mut rows = vec![
            ["FLEET", "LAYOUT", "DC", "WORKERS", "HELD", "FREE"]
                .map(String::from)
                .to_vec(),
        ];
        rows.extend(listing.pools.iter().map(|p| pool_row(p, listing)));
        text.push_str("Free worker ids\n");
        text.push_str(&aligned(&rows, &[2, 3, 4, 5]));
        for pool in &listing.pools {
            if pool.free == Some(0) {
                let _ = writeln!(
                    text,
                    "fleet {} has no free worker id in datacenter {}: a newcomer waits until a holder releases one or its lease expires",
                    name(pool.fleet.as_deref(), &pool.namespace),
                    pool.datacenter
                );
            }
        }
    }
    for shared in &listing.shared {
        let names: Vec<String> = shared
            .namespaces
            .iter()
            .map(|ns| name(ns.strip_prefix("fleet."), ns))
            .collect();
        let _ = writeln!(
            text,
            "\ndatacenter {} is shared by {}: each draws worker ids from its own pool, so two servers may hold one worker id at once, and where their layouts overlap they issue the same ids; give each fleet a datacenter of its own",
            shared.datacenter,
            in_words(&names)
        );
    }
    text
}

/// `a`, `a and b`, `a, b and c`.
fn in_words(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// What an empty listing says: what was looked for, and that none was found.
fn nothing_found(listing: &Listing, filter: &ListFilter) -> String {
    let mut what = format!("the {} registry holds no records", listing.backend);
    if let Some(fleet) = &filter.fleet {
        let _ = write!(what, " of fleet {fleet}");
    }
    if let Some(dc) = filter.datacenter {
        let _ = write!(what, " in datacenter {dc}");
    }
    what
}

/// A fleet's name, or the namespace of an earlier release, marked as one.
fn name(fleet: Option<&str>, namespace: &str) -> String {
    match fleet {
        Some(fleet) => fleet.to_string(),
        None => format!("{namespace} (earlier release)"),
    }
}

fn record_row(record: &Record, now_ms: u64) -> Vec<String> {
    let state = match record.state {
        State::Held => "held",
        State::Expired => "expired, not yet taken",
        State::Free => "free",
    };
    let expires = match (record.state, record.lasts, record.expires_at_ms) {
        (State::Free, ..) => UNKNOWN.to_string(),
        (_, Lasts::Ttl, Some(at)) => relative(at, now_ms),
        (_, Lasts::Ttl, None) => UNKNOWN.to_string(),
        (_, Lasts::Session, _) => "with its session".to_string(),
        (_, Lasts::Process, _) => "with its process".to_string(),
    };
    vec![
        name(record.fleet.as_deref(), &record.namespace),
        layout(record.layout.as_deref()),
        record.datacenter.to_string(),
        record.worker.to_string(),
        or_unknown(record.identity.clone()),
        or_unknown(record.holder.clone()),
        or_unknown(record.taken_at_ms.map(|ms| UnixMs(ms).to_string())),
        or_unknown(record.high_water_ms.map(|ms| UnixMs(ms).to_string())),
        expires,
        state.to_string(),
    ]
}

fn pool_row(pool: &Pool, listing: &Listing) -> Vec<String> {
    let layout_of = listing
        .records
        .iter()
        .find(|r| r.namespace == pool.namespace)
        .and_then(|r| r.layout.as_deref());
    vec![
        name(pool.fleet.as_deref(), &pool.namespace),
        layout(layout_of),
        pool.datacenter.to_string(),
        or_unknown(pool.workers.map(|n| n.to_string())),
        pool.held.to_string(),
        or_unknown(pool.free.map(|n| n.to_string())),
    ]
}

/// A layout by its preset's name when it is one; else, when its fields lie in the usual
/// order (timestamp, datacenter, worker, sequence, from the top), as `--layout` spells it
/// with the tick and epoch beside; else in canonical form, which says everything.
fn layout(canonical: Option<&str>) -> String {
    let Some(form) = canonical else {
        return UNKNOWN.to_string();
    };
    if let Some(preset) = snowmint_lease::preset_named(form) {
        return preset.to_string();
    }
    custom(form).unwrap_or_else(|| form.to_string())
}

/// `custom:T/D/W/S tick=Xms epoch=E` for a canonical form whose fields lie in the usual
/// order, each where the widths below it put it; `None` for any other.
fn custom(form: &str) -> Option<String> {
    let (fields, rest) = form.split_once(';')?;
    let mut widths = [0u32; 4];
    let mut expected_shift = None;
    let names = ["timestamp", "datacenter", "worker", "sequence"];
    let mut shifts = [None; 4];
    for field in fields.split(',') {
        let (name, place) = field.split_once('@')?;
        let (shift, width) = place.split_once(':')?;
        let at = names.iter().position(|n| *n == name)?;
        widths[at] = width.parse().ok()?;
        shifts[at] = Some(shift.parse::<u32>().ok()?);
    }
    // From the sequence up, each field starts where the one below it ends.
    for at in (0..names.len()).rev() {
        let Some(shift) = shifts[at] else { continue };
        if expected_shift.is_some_and(|expected| expected != shift)
            || (expected_shift.is_none() && shift != 0)
        {
            return None;
        }
        expected_shift = Some(shift + widths[at]);
    }
    let [t, d, w, s] = widths;
    Some(format!("custom:{t}/{d}/{w}/{s} {}", rest.replace(';', " ")))
}

fn or_unknown(cell: Option<String>) -> String {
    cell.unwrap_or_else(|| UNKNOWN.to_string())
}

/// `at` from `now`: "in 8.1 s", "3.0 s ago", "in 12 min", "2 h ago", "in 3 d".
fn relative(at_ms: u64, now_ms: u64) -> String {
    let ms = i64::try_from(at_ms).unwrap_or(i64::MAX) - i64::try_from(now_ms).unwrap_or(0);
    let span = ms.unsigned_abs();
    let amount = if ms.abs() < SECONDS_SHOWN * 1_000 {
        format!("{}.{} s", span / 1_000, span % 1_000 / 100)
    } else if ms.abs() < MS_PER_HOUR {
        format!("{} min", span / MS_PER_MINUTE.unsigned_abs())
    } else if ms.abs() < MS_PER_DAY {
        format!("{} h", span / MS_PER_HOUR.unsigned_abs())
    } else {
        format!("{} d", span / MS_PER_DAY.unsigned_abs())
    };
    if ms >= 0 {
        format!("in {amount}")
    } else {
        format!("{amount} ago")
    }
}

/// `rows` in columns two spaces apart, each as wide as its widest cell; the columns
/// `numeric` right-aligned. Trailing spaces are cut.
fn aligned(rows: &[Vec<String>], numeric: &[usize]) -> String {
    let columns = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .map(|row| row[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut text = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c > 0 {
                line.push_str("  ");
            }
            let width = widths[c];
            if numeric.contains(&c) {
                let _ = write!(line, "{cell:>width$}");
            } else {
                let _ = write!(line, "{cell:<width$}");
            }
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_said_from_now() {
        assert_eq!(relative(18_100, 10_000), "in 8.1 s");
        assert_eq!(relative(7_000, 10_000), "3.0 s ago");
        assert_eq!(relative(10_000 + 12 * 60_000, 10_000), "in 12 min");
        assert_eq!(relative(0, 2 * 3_600_000 + 5), "2 h ago");
        assert_eq!(relative(3 * 86_400_000, 0), "in 3 d");
    }

    #[test]
    fn a_layout_is_named_as_briefly_as_it_can_be() {
        let twitter = snowmint::Layout::TWITTER.canonical().to_string();
        assert_eq!(layout(Some(&twitter)), "twitter");
        assert_eq!(
            layout(Some(
                "timestamp@22:41,datacenter@17:5,worker@16:1,sequence@0:16;tick=1ms;epoch=1288834974657"
            )),
            "custom:41/5/1/16 tick=1ms epoch=1288834974657"
        );
        assert_eq!(
            layout(Some(
                "timestamp@22:41,worker@12:10,sequence@0:12;tick=1ms;epoch=0"
            )),
            "custom:41/0/10/12 tick=1ms epoch=0"
        );
        // Another order says it all in canonical form.
        let moved = "timestamp@22:41,worker@17:5,datacenter@12:5,sequence@0:12;tick=1ms;epoch=0";
        assert_eq!(layout(Some(moved)), moved);
        assert_eq!(layout(None), "-");
    }

    #[test]
    fn columns_line_up_and_numbers_align_right() {
        let rows = [["FLEET", "DC"], ["default", "0"], ["a", "12"]]
            .map(|r| r.map(String::from).to_vec())
            .to_vec();
        assert_eq!(
            aligned(&rows, &[1]),
            "FLEET    DC\ndefault   0\na        12\n"
        );
    }
}
