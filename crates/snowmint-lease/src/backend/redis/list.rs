//! Listing a Redis registry: snowmint's own keys only, found with `SCAN` (a bounded step
//! at a time, never `KEYS`, which would hold the server for the whole keyspace), then read
//! in one pipeline of plain reads. No script and no write: a user with the read commands
//! on `snowmint:*` keys can list (docs/OPERATIONS.md, "Seeing the fleet").

use std::collections::{BTreeMap, BTreeSet};

use redis::Value;

use super::{LIST_STEP, RedisRegistry};
use crate::listing::{Lasts, ListFilter, Listing, Record, State, now_ms};
use crate::mark;
use crate::registry::LeaseError;

/// Every key snowmint writes starts with this; other data on the same server does not.
const PATTERN: &str = "snowmint:*";

/// What the keys of one namespace's datacenter are, as `SCAN` found them.
#[derive(Debug, Default)]
struct Datacenter {
    /// The worker keys (`wW`) found, by worker. Its `hwm` and `expiry` are read whether
    /// found or not: a key that is missing reads as empty.
    workers: BTreeSet<u64>,
}

/// The keys found, by namespace and datacenter, and the namespaces with a layout key.
#[derive(Debug, Default)]
struct Found {
    datacenters: BTreeMap<(String, u64), Datacenter>,
    layouts: Vec<String>,
}

impl Found {
    /// Files `key` where it belongs; keys of no listing's concern (`sticky`, `cursor`,
    /// `reach`, `incarnation`) are passed over.
    fn file(&mut self, key: &str) {
        let Some(rest) = key.strip_prefix("snowmint:") else {
            return;
        };
        if let Some(namespace) = rest.strip_suffix(":layout") {
            self.layouts.push(namespace.to_string());
            return;
        }
        let Some((namespace, tail)) = rest.rsplit_once(":dc") else {
            return;
        };
        let Some((datacenter, name)) = tail.split_once(':') else {
            return;
        };
        let Ok(datacenter) = datacenter.parse::<u64>() else {
            return;
        };
        let entry = self
            .datacenters
            .entry((namespace.to_string(), datacenter))
            .or_default();
        if let Some(worker) = name.strip_prefix('w').and_then(canonical_number) {
            entry.workers.insert(worker);
        }
    }
}

/// Each worker id that exactly one identity last acquired, from a `sticky` hash
/// (identity -> worker id); a worker id that several name is left out, since which of
/// them held it last is not recorded.
fn last_identities(sticky: &BTreeMap<String, String>) -> BTreeMap<u64, &str> {
    let mut named: BTreeMap<u64, Option<&str>> = BTreeMap::new();
    for (identity, worker) in sticky {
        if let Some(worker) = canonical_number(worker) {
            named
                .entry(worker)
                .and_modify(|one| *one = None)
                .or_insert(Some(identity));
        }
    }
    named
        .into_iter()
        .filter_map(|(worker, one)| Some((worker, one?)))
        .collect()
}

/// A number written as snowmint writes it: digits, no leading zero.
fn canonical_number(digits: &str) -> Option<u64> {
    let n: u64 = digits.parse().ok()?;
    (n.to_string() == digits).then_some(n)
}

impl RedisRegistry {
    /// Every key under [`PATTERN`], a [`LIST_STEP`] at a time.
    async fn snowmint_keys(&self) -> Result<Vec<String>, LeaseError> {
        let mut keys = Vec::new();
        let mut cursor = "0".to_string();
        loop {
            let mut scan = redis::pipe();
            scan.cmd("SCAN")
                .arg(&cursor)
                .arg("MATCH")
                .arg(PATTERN)
                .arg("COUNT")
                .arg(LIST_STEP);
            let ((next, step),): ((String, Vec<String>),) = self.primary.read(&scan).await?;
            keys.extend(step);
            if next == "0" {
                return Ok(keys);
            }
            cursor = next;
        }
    }

    pub(super) async fn list_keys(&self, filter: &ListFilter) -> Result<Listing, LeaseError> {
        let mut found = Found::default();
        for key in self.snowmint_keys().await? {
            found.file(&key);
        }
        // One pipeline, read in the order it was built: the server's time, then per
        // datacenter its marks, its expiry index, its identities' last worker ids, and
        // each worker key's holder and TTL; then the layouts.
        let mut reads = redis::pipe();
        reads.cmd("TIME");
        for ((namespace, dc), keys) in &found.datacenters {
            let p = super::prefix(namespace, *dc);
            reads.cmd("HGETALL").arg(format!("{p}hwm"));
            reads
                .cmd("ZRANGE")
                .arg(format!("{p}expiry"))
                .arg(0)
                .arg(-1)
                .arg("WITHSCORES");
            reads.cmd("HGETALL").arg(format!("{p}sticky"));
            for worker in &keys.workers {
                reads.cmd("GET").arg(format!("{p}w{worker}"));
                reads.cmd("PTTL").arg(format!("{p}w{worker}"));
            }
        }
        for namespace in &found.layouts {
            reads.cmd("GET").arg(format!("snowmint:{namespace}:layout"));
        }
        let read_at_ms = now_ms();
        let answers: Vec<Value> = self.primary.read(&reads).await?;
        let mut answers = answers.into_iter();
        let (seconds, micros): (u64, u64) = self.parse(&mut answers, "TIME")?;
        let server_ms = seconds * 1_000 + micros / 1_000;
        let mut records = Vec::new();
        for ((namespace, dc), keys) in &found.datacenters {
            let p = super::prefix(namespace, *dc);
            let marks: BTreeMap<String, Vec<u8>> = self.parse(&mut answers, "HGETALL")?;
            let ends: Vec<(String, f64)> = self.parse(&mut answers, "ZRANGE")?;
            let sticky: BTreeMap<String, String> = self.parse(&mut answers, "HGETALL")?;
            let mut by_worker: BTreeMap<u64, Record> = BTreeMap::new();
            let fresh = |worker| Record::new(namespace, *dc, worker, Lasts::Ttl);
            for (field, stored) in marks {
                let Some(worker) = canonical_number(&field) else {
                    continue;
                };
                let mark = mark::decode(&stored).map_err(|corrupt| {
                    self.unavailable_key(&format!("field {worker} of {p}hwm is corrupt: {corrupt}"))
                })?;
                by_worker
                    .entry(worker)
                    .or_insert_with(|| fresh(worker))
                    .high_water_ms = Some(mark);
            }
            for (member, ends_ms) in ends {
                let Some(worker) = canonical_number(&member) else {
                    continue;
                };
                // 0 once released; an instant past, expired without a release. Scores are
                // whole ms, which an f64 holds exactly.
                let ends_ms = ends_ms as u64;
                if ends_ms > 0 && ends_ms <= server_ms {
                    let record = by_worker.entry(worker).or_insert_with(|| fresh(worker));
                    record.state = State::Expired;
                    record.expires_at_ms = Some(read_at_ms.saturating_sub(server_ms - ends_ms));
                }
            }
            for worker in &keys.workers {
                let holder: Option<String> = self.parse(&mut answers, "GET")?;
                let left_ms: i64 = self.parse(&mut answers, "PTTL")?;
                // Gone since the scan: its expiry entry says how it ended.
                let Some(holder) = holder else { continue };
                let record = by_worker.entry(*worker).or_insert_with(|| fresh(*worker));
                *record = Record {
                    high_water_ms: record.high_water_ms,
                    expires_at_ms: u64::try_from(left_ms).ok().map(|ms| read_at_ms + ms),
                    ..fresh(*worker)
                }
                .held_by(&holder);
            }
            // A worker key goes with its lease: who held an expired or released worker id
            // last is known only from the identity whose last worker id it is.
            for (worker, identity) in last_identities(&sticky) {
                if let Some(record) = by_worker.get_mut(&worker)
                    && record.identity.is_none()
                {
                    record.identity = Some(identity.to_string());
                }
            }
            records.extend(by_worker.into_values());
        }
        let mut layouts = BTreeMap::new();
        for namespace in &found.layouts {
            let layout: Option<String> = self.parse(&mut answers, "GET")?;
            if let Some(layout) = layout {
                layouts.insert(namespace.clone(), layout);
            }
        }
        Ok(Listing::new("redis", read_at_ms, records, &layouts, filter))
    }

    /// The next answer of the listing's pipeline, as `T`.
    fn parse<T: redis::FromRedisValue>(
        &self,
        answers: &mut impl Iterator<Item = Value>,
        command: &str,
    ) -> Result<T, LeaseError> {
        let answer = answers.next().ok_or_else(|| {
            self.unavailable_key(&format!("answered fewer replies than asked ({command})"))
        })?;
        redis::from_redis_value(answer)
            .map_err(|err| self.unavailable_key(&format!("{command} answered {err}")))
    }

    fn unavailable_key(&self, problem: &str) -> LeaseError {
        LeaseError::unavailable("redis", format!("{}: {problem}", self.primary.shown))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_snowmints_keys_of_a_datacenter_are_filed() {
        let mut found = Found::default();
        for key in [
            "snowmint:fleet.default:dc0:w3",
            "snowmint:fleet.default:dc0:w03",
            "snowmint:fleet.default:dc0:hwm",
            "snowmint:fleet.default:dc0:sticky",
            "snowmint:twitter-1288834974657:dc2:expiry",
            "snowmint:fleet.default:layout",
            "snowmint:incarnation",
            "snowmint:fleet.default:reach",
        ] {
            found.file(key);
        }
        let dc0 = &found.datacenters[&("fleet.default".to_string(), 0)];
        assert_eq!(dc0.workers.iter().copied().collect::<Vec<_>>(), [3]);
        assert!(
            found
                .datacenters
                .contains_key(&("twitter-1288834974657".to_string(), 2))
        );
        assert_eq!(found.layouts, ["fleet.default"]);
    }

    #[test]
    fn a_worker_id_names_its_last_identity_only_when_one_names_it() {
        let sticky = BTreeMap::from(
            [
                ("web-1", "0"),
                ("web-2", "1"),
                ("web-3", "1"),
                ("web-4", "x"),
            ]
            .map(|(i, w)| (i.to_string(), w.to_string())),
        );
        assert_eq!(last_identities(&sticky), BTreeMap::from([(0, "web-1")]));
    }
}
