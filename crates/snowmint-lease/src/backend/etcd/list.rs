//! Listing an etcd registry: one range over the `/snowmint/` prefix, read a page at a
//! time, then the time to live of each lease that binds a worker key. It reads only, so a
//! user whose role may read the prefix (and see its leases) can list.
//!
//! Kept to two requests of the gateway (a range and a lease's time to live) and its own
//! types, so that it moves to another transport as it is.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::Deserialize;
use serde_json::json;

use super::EtcdRegistry;
use super::gateway::Range;
use crate::listing::{Lasts, ListFilter, Listing, Record, now_ms};
use crate::mark;
use crate::registry::LeaseError;

/// Every key of the registry starts with this.
const PREFIX: &str = "/snowmint/";
/// The first key past all of them: `0` follows `/`.
const PREFIX_END: &str = "/snowmint0";
/// Keys per page of the range.
const PAGE: u64 = 1_000;
/// How long a whole listing may take: a page per thousand keys, then one request per
/// lease, sent at once.
const LIST_TIMEOUT: Duration = Duration::from_secs(10);

/// etcd's answer to `lease/timetolive`: the seconds left, -1 once expired.
#[derive(Deserialize)]
struct TimeToLive {
    #[serde(rename = "TTL", default)]
    ttl: serde_json::Value,
}

/// A key of a worker (`.../dcD/wW`) or its mark (`.../dcD/wW/hwm`).
#[derive(Debug, PartialEq, Eq)]
enum Key<'a> {
    Worker(&'a str, u64, u64),
    Mark(&'a str, u64, u64),
    Layout(&'a str),
}

/// What a key under [`PREFIX`] is; `None` for keys of no listing's concern (`sticky`,
/// `reach`, the incarnations).
fn key_of(key: &str) -> Option<Key<'_>> {
    let rest = key.strip_prefix(PREFIX)?;
    let (namespace, rest) = rest.split_once('/')?;
    if rest == "layout" {
        return Some(Key::Layout(namespace));
    }
    let (dc, rest) = rest.strip_prefix("dc")?.split_once('/')?;
    let dc = number(dc)?;
    let (worker, mark) = match rest.strip_prefix('w')?.split_once('/') {
        Some((worker, "hwm")) => (worker, true),
        Some(_) => return None,
        None => (rest.strip_prefix('w')?, false),
    };
    let worker = number(worker)?;
    Some(if mark {
        Key::Mark(namespace, dc, worker)
    } else {
        Key::Worker(namespace, dc, worker)
    })
}

/// A number as snowmint writes it: digits, no leading zero.
fn number(digits: &str) -> Option<u64> {
    let n: u64 = digits.parse().ok()?;
    (n.to_string() == digits).then_some(n)
}

impl EtcdRegistry {
    pub(super) async fn list_keys(&self, filter: &ListFilter) -> Result<Listing, LeaseError> {
        let late = || {
            super::gateway::unavailable(format!(
                "listing took over {} ms",
                LIST_TIMEOUT.as_millis()
            ))
        };
        super::super::within(LIST_TIMEOUT, self.read_keys(filter), late).await
    }

    async fn read_keys(&self, filter: &ListFilter) -> Result<Listing, LeaseError> {
        let read_at_ms = now_ms();
        let mut records: BTreeMap<(String, u64, u64), Record> = BTreeMap::new();
        let mut bound: Vec<((String, u64, u64), i64)> = Vec::new();
        let mut layouts = BTreeMap::new();
        let mut from = PREFIX.as_bytes().to_vec();
        loop {
            let body = json!({
                "key": BASE64.encode(&from),
                "range_end": BASE64.encode(PREFIX_END),
                "limit": PAGE.to_string(),
            });
            let page: Range = self.call("/v3/kv/range", &body).await?;
            for kv in &page.kvs {
                let key = String::from_utf8_lossy(&kv.key);
                let record = |ns: &str, dc, worker| Record::new(ns, dc, worker, Lasts::Ttl);
                match key_of(&key) {
                    Some(Key::Layout(ns)) => {
                        layouts.insert(
                            ns.to_string(),
                            String::from_utf8_lossy(&kv.value).into_owned(),
                        );
                    }
                    Some(Key::Mark(ns, dc, worker)) => {
                        let mark = mark::decode(&kv.value).map_err(|corrupt| {
                            super::gateway::unavailable(format!("{key} is corrupt: {corrupt}"))
                        })?;
                        records
                            .entry((ns.to_string(), dc, worker))
                            .or_insert_with(|| record(ns, dc, worker))
                            .high_water_ms = Some(mark);
                    }
                    Some(Key::Worker(ns, dc, worker)) => {
                        let at = (ns.to_string(), dc, worker);
                        let held = records
                            .remove(&at)
                            .unwrap_or_else(|| record(ns, dc, worker));
                        records.insert(
                            at.clone(),
                            held.held_by(&String::from_utf8_lossy(&kv.value)),
                        );
                        bound.push((at, kv.lease));
                    }
                    None => {}
                }
            }
            match page.kvs.last() {
                Some(last) if page.more => from = [last.key.as_slice(), b"\0"].concat(),
                _ => break,
            }
        }
        let leases: BTreeSet<i64> = bound
            .iter()
            .map(|(_, lease)| *lease)
            .filter(|l| *l != 0)
            .collect();
        let asked = leases.iter().map(|lease| async move {
            let body = json!({ "ID": lease.to_string() });
            let answer: TimeToLive = self.call("/v3/lease/timetolive", &body).await?;
            let seconds = match &answer.ttl {
                serde_json::Value::String(text) => text.parse::<i64>().ok(),
                other => other.as_i64(),
            };
            Ok::<_, LeaseError>((*lease, seconds))
        });
        let ttls: BTreeMap<i64, Option<i64>> = futures_util::future::try_join_all(asked)
            .await?
            .into_iter()
            .collect();
        for (at, lease) in bound {
            let left = ttls
                .get(&lease)
                .copied()
                .flatten()
                .and_then(|s| u64::try_from(s).ok());
            if let (Some(record), Some(seconds)) = (records.get_mut(&at), left) {
                record.expires_at_ms = Some(read_at_ms + seconds * 1_000);
            }
        }
        let records = records.into_values().collect();
        Ok(Listing::new("etcd", read_at_ms, records, &layouts, filter))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_say_what_they_hold() {
        assert_eq!(
            key_of("/snowmint/fleet.default/dc0/w3"),
            Some(Key::Worker("fleet.default", 0, 3))
        );
        assert_eq!(
            key_of("/snowmint/twitter-1288834974657/dc1/w12/hwm"),
            Some(Key::Mark("twitter-1288834974657", 1, 12))
        );
        assert_eq!(
            key_of("/snowmint/fleet.a/layout"),
            Some(Key::Layout("fleet.a"))
        );
        for other in [
            "/snowmint/fleet.default/dc0/sticky/web-7",
            "/snowmint/fleet.default/reach",
            "/snowmint/fleet.default/dc0/w03",
            "/other/fleet.default/dc0/w3",
        ] {
            assert_eq!(key_of(other), None, "{other}");
        }
    }
}
