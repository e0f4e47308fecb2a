//! Worker-id leases on Redis (5 or later, standalone or a primary with replicas, found
//! directly or through Sentinel): one Lua script per operation, so every acquisition,
//! renewal and release is a single atomic step on the server. The keys are listed on
//! [`RedisRegistry`].
//!
//! The `wW` key alone says whether a worker is held; `expiry` and `cursor` only make
//! finding a free one fast. Acquiring tries, in order: the identity's old worker, if nobody
//! else holds it; the first [`CANDIDATES`] entries of `expiry` whose lease has ended (a
//! released or expired worker); then a sweep of at most [`SWEEP`] workers from `cursor`,
//! which hands out never-used ids in order and finds ids the index does not know (keys
//! deleted by hand). That is O(log U + `CANDIDATES`) Redis operations, U the workers ever
//! handed out, plus O(1) sweep steps while unused ids remain; the whole `SWEEP` is read only
//! when no index entry has ended, i.e. when the datacenter is full. With at most `SWEEP`
//! workers (the default layout has 32) the sweep covers them all, so "exhausted" is exact;
//! above that it is exact as long as the index is intact.
//!
//! Scripts build worker keys from a prefix, which Redis Cluster forbids: use a standalone
//! server (or a primary with replicas).

mod list;
mod primary;
mod scripts;
mod sentinels;
mod url;

use std::fmt;

use primary::Primary;
use scripts::SCRIPTS;

use crate::listing::{ListFilter, Listing};
use crate::mark;
use crate::registry::{Claim, Lease, LeaseError, Registry};

/// Entries of the expiry index looked at per acquisition before sweeping.
const CANDIDATES: u32 = 16;
/// Workers the sweep looks at per acquisition: bounds the time one script blocks Redis
/// when the datacenter is full (measured: 1.8 ms for 1,024 held workers; 0.13 ms to find a
/// fresh one among 2^22).
const SWEEP: u64 = 1_024;
/// Lua numbers are doubles: worker ids above this would lose precision.
const MAX_WORKERS: u64 = 1 << 53;

/// Leases worker ids through Redis, one Lua script per operation.
///
/// Keys, for a claim's namespace `NS` and datacenter `D`:
///
/// ```text
/// snowmint:NS:dcD:wW      string  the holder of worker W, with a PX TTL: it expires by itself
/// snowmint:NS:dcD:hwm     hash    W -> high-water mark (ms since the Unix epoch); never expires
/// snowmint:NS:dcD:sticky  hash    identity -> the worker it last acquired
/// snowmint:NS:dcD:expiry  zset    W -> when its lease ends (Redis time, ms); 0 once released
/// snowmint:NS:dcD:cursor  string  where the next sweep for a free worker starts
/// snowmint:NS:layout      string  the fleet's layout in canonical form; never expires
/// snowmint:NS:reach       string  the largest reach (ms) of the fleet's servers
/// snowmint:incarnation    hash    run id:replication id -> since when the server vouches
///                                 for its records (Redis time, ms); one field
/// ```
///
/// A Redis that restarts (from a backup, an old snapshot, or nothing) or is promoted from
/// a replica may lack what holders wrote last: a lease taken from it starts after
/// [`Claim::floor_after`] the instant it started or was first seen promoted, so that it
/// issues nothing that a holder it forgot may have issued.
///
/// `NS` is the fleet's namespace (`fleet.default`). Earlier releases used the layout's
/// name and epoch (`twitter-1288834974657`) instead: an acquisition passes over a worker
/// whose `wW` key is held under one of the claim's [`legacy`](Claim::legacy) namespaces,
/// and starts after the largest of the marks left in their `hwm` hashes. Those of a layout
/// that differs slightly are found with a `SCAN` (once per process, a thousand keys a
/// step), which the user needs the right to run (`+scan`).
pub struct RedisRegistry {
    primary: Primary,
    found: crate::legacy::Found,
}

impl RedisRegistry {
    /// A registry for `redis://[USER:PASSWORD@]HOST[:PORT][/DB]`, or for the primary that
    /// Sentinel knows as `NAME`,
    /// `redis+sentinel://[USER:PASSWORD@]HOST[:PORT][,HOST[:PORT]...]/NAME[/DB]` (the
    /// sentinels' port defaults to 26379; the credentials are the primary's). `rediss://`
    /// and `rediss+sentinel://` are the same over TLS, to the sentinels and the primary,
    /// with `tls_ca=FILE` (else the system's CAs) and optionally `tls_cert=FILE` and
    /// `tls_key=FILE`. Each takes `?wait=N`: an acquisition or renewal counts only once
    /// `N` replicas have acknowledged it; and `password_file=FILE`, the password's first
    /// line. Connects on first use.
    ///
    /// # Errors
    ///
    /// A malformed URL, named in the message (without its password).
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint_lease::{Registry, RedisRegistry};
    ///
    /// let registry = RedisRegistry::from_url("redis://127.0.0.1:6379/2?wait=1")?;
    /// assert_eq!(registry.backend(), "redis");
    /// let registry = RedisRegistry::from_url("redis+sentinel://s1,s2,s3/main")?;
    /// assert_eq!(format!("{registry:?}"), r#"RedisRegistry { url: "redis+sentinel://s1:26379,s2:26379,s3:26379/main/0", .. }"#);
    /// let err = RedisRegistry::from_url("redis://:secret@h:6379/x").unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     "lease URL \"redis://***@h:6379/x\": invalid database number; expected redis[s]://[USER:PASSWORD@]HOST[:PORT][/DB][?wait=N&password_file=FILE&tls_ca=FILE&tls_cert=FILE&tls_key=FILE]"
    /// );
    /// # Ok::<(), snowmint_lease::LeaseError>(())
    /// ```
    pub fn from_url(url: &str) -> Result<RedisRegistry, LeaseError> {
        Ok(RedisRegistry {
            primary: Primary::new(url::parse(url)?),
            found: crate::legacy::Found::default(),
        })
    }
}

impl fmt::Debug for RedisRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisRegistry")
            .field("url", &self.primary.shown)
            .finish_non_exhaustive()
    }
}

/// The hash that records since when the server vouches for its records: one field, the
/// server's incarnation (run id and replication id), whose value is that instant.
const INCARNATION: &str = "snowmint:incarnation";

/// The keys looked at by one step of the listing of earlier releases' namespaces.
const LIST_STEP: u32 = 1_000;

impl RedisRegistry {
    /// The namespaces with a `sticky` hash, which every acquisition writes: those of
    /// fleets and of earlier releases. A SCAN with a pattern, a bounded step at a time, so
    /// a big keyspace costs round trips, never a server held busy (`KEYS` would).
    async fn namespaces(&self) -> Result<Vec<String>, LeaseError> {
        let mut found = Vec::new();
        let mut cursor = "0".to_string();
        loop {
            let args = [
                cursor,
                "snowmint:*:dc*:sticky".to_string(),
                LIST_STEP.to_string(),
            ];
            let ((next, keys), _) = self
                .primary
                .run::<(String, Vec<String>)>(&SCRIPTS[3], &[], &args, false)
                .await?;
            if next == "-" {
                let why = keys.concat();
                let (shown, user) = (&self.primary.shown, self.primary.user());
                return Err(LeaseError::unavailable(
                    "redis",
                    format!(
                        "{shown}: user {user} lacks the rights: it may not run SCAN, which lists the namespaces of earlier releases (give it +scan): {why}"
                    ),
                ));
            }
            found.extend(keys.iter().filter_map(|key| {
                let (namespace, _) = key.strip_prefix("snowmint:")?.rsplit_once(":dc")?;
                Some(namespace.to_string())
            }));
            if next == "0" {
                return Ok(found);
            }
            cursor = next;
        }
    }
}

/// `snowmint:NS:dcD:`, the prefix of every key of a datacenter.
fn prefix(namespace: &str, datacenter: u64) -> String {
    format!("snowmint:{namespace}:dc{datacenter}:")
}

/// The keys the renew and release scripts touch: the worker, `hwm` and `expiry`.
fn lease_keys(claim: &Claim, lease: &Lease) -> [String; 3] {
    let p = prefix(&claim.namespace, lease.datacenter);
    [
        format!("{p}w{}", lease.worker),
        format!("{p}hwm"),
        format!("{p}expiry"),
    ]
}

fn ttl_ms(claim: &Claim) -> Result<u64, LeaseError> {
    match u64::try_from(claim.ttl.as_millis()) {
        Ok(ms) if ms > 0 => Ok(ms),
        _ => Err(LeaseError::Invalid(format!(
            "lease TTL {:?} must be a whole number of milliseconds, at least 1",
            claim.ttl
        ))),
    }
}

#[async_trait::async_trait]
impl Registry for RedisRegistry {
    fn backend(&self) -> &'static str {
        "redis"
    }

    async fn acquire(&self, claim: &Claim) -> Result<Lease, LeaseError> {
        if claim.workers == 0 || claim.workers > MAX_WORKERS {
            return Err(LeaseError::Invalid(format!(
                "{} worker ids are out of range for the redis registry: 1..=2^53",
                claim.workers
            )));
        }
        let claim = &self.found.widen(claim, || self.namespaces()).await?;
        let p = prefix(&claim.namespace, claim.datacenter);
        let mut keys = ["hwm", "sticky", "expiry", "cursor"]
            .map(|k| format!("{p}{k}"))
            .to_vec();
        keys.push(format!("snowmint:{}:layout", claim.namespace));
        keys.push(INCARNATION.to_string());
        keys.push(format!("snowmint:{}:reach", claim.namespace));
        let mut args = vec![
            format!("{p}w"),
            claim.identity.clone(),
            claim.holder.clone(),
            claim.workers.to_string(),
            ttl_ms(claim)?.to_string(),
            CANDIDATES.to_string(),
            SWEEP.to_string(),
            claim.layout.clone(),
            claim.reach_ms().to_string(),
        ];
        args.extend(claim.legacy.iter().map(|ns| prefix(ns, claim.datacenter)));
        // The mark as stored, read here rather than by the client library's conversion, so
        // that a corrupt one is named with its key.
        type Taken = (i64, Option<Vec<u8>>, Option<u64>, u64, u64);
        let (taken, acks) = self
            .primary
            .run::<Option<Taken>>(&SCRIPTS[0], &keys, &args, true)
            .await?;
        let Some((worker, stored, holding, since, reach)) = taken else {
            return Err(LeaseError::exhausted(claim));
        };
        let Ok(worker) = u64::try_from(worker) else {
            let recorded = String::from_utf8_lossy(stored.as_deref().unwrap_or_default());
            if worker == -2 {
                return Err(LeaseError::unavailable(
                    "redis",
                    format!(
                        "{}: maxmemory-policy {recorded} may evict the keys of leases and marks; set maxmemory-policy noeviction (or maxmemory 0)",
                        self.primary.shown
                    ),
                ));
            }
            return Err(claim.other_layout(&recorded).unwrap_or_else(|| {
                let shown = &self.primary.shown;
                LeaseError::unavailable("redis", format!("{shown}: refused the layout"))
            }));
        };
        if holding.unwrap_or(0) > 1 {
            tracing::warn!(
                worker,
                namespaces = ?claim.legacy,
                "marks of this worker id were left under several namespaces of earlier releases; starting after the largest"
            );
        }
        let high_water_ms = stored
            .map(|bytes| mark::decode(&bytes))
            .transpose()
            .map_err(|corrupt| {
                let shown = &self.primary.shown;
                LeaseError::unavailable(
                    "redis",
                    format!(
                        "{shown}: field {worker} of {} is corrupt: {corrupt}",
                        keys[0]
                    ),
                )
            })?;
        if !acks.enough() {
            // The worker stays held by this holder on the primary until its TTL ends: the
            // keeper's next try, with the same holder, takes it again.
            let what = format!("the acquisition of worker {worker}");
            return Err(acks.shortfall(&self.primary.shown, &what));
        }
        Ok(Lease {
            datacenter: claim.datacenter,
            worker,
            high_water_ms: claim.clone().reaching(reach).start_after(
                crate::legacy::after_leads(claim, high_water_ms),
                since,
                worker,
            ),
            token: 0,
        })
    }

    async fn renew(
        &self,
        claim: &Claim,
        lease: &Lease,
        high_water_ms: u64,
    ) -> Result<(), LeaseError> {
        let args = [
            claim.holder.clone(),
            lease.worker.to_string(),
            ttl_ms(claim)?.to_string(),
            mark::encode(high_water_ms),
        ];
        let (renewed, acks) = self
            .primary
            .run::<u8>(&SCRIPTS[1], &lease_keys(claim, lease), &args, true)
            .await?;
        let reason = match renewed {
            // Renewed on the primary, which may lose it in a failover before a replica has
            // it: the fence stays where the last confirmed renewal put it.
            1 if !acks.enough() => return Err(acks.shortfall(&self.primary.shown, "the renewal")),
            1 => return Ok(()),
            0 => "its TTL ended",
            _ => "another holder took it over after its TTL ended",
        };
        Err(LeaseError::lost(lease, reason))
    }

    async fn give_back(
        &self,
        claim: &Claim,
        lease: &Lease,
        mark_ms: u64,
    ) -> Result<(), LeaseError> {
        let args = [
            claim.holder.clone(),
            lease.worker.to_string(),
            mark::encode(mark_ms),
        ];
        // Not waited for: a release that a failover loses leaves the lease to expire, and
        // the mark at the last renewal's, which is never below the one it writes.
        let (released, _): (u8, _) = self
            .primary
            .run(&SCRIPTS[2], &lease_keys(claim, lease), &args, false)
            .await?;
        if released == 0 {
            tracing::debug!(worker = lease.worker, "released a lease no longer held");
        }
        Ok(())
    }

    async fn list(&self, filter: &ListFilter) -> Result<Listing, LeaseError> {
        self.list_keys(filter).await
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_registry_shows_its_url_without_a_password() {
        let registry = RedisRegistry::from_url("redis://u:pw@10.0.0.1:6380/3").unwrap();
        assert_eq!(
            format!("{registry:?}"),
            "RedisRegistry { url: \"redis://10.0.0.1:6380/3\", .. }"
        );
        let registry =
            RedisRegistry::from_url("redis+sentinel://u:pw@10.0.0.1,10.0.0.2:7/m?wait=1").unwrap();
        assert_eq!(
            format!("{registry:?}"),
            "RedisRegistry { url: \"redis+sentinel://10.0.0.1:26379,10.0.0.2:7/m/0\", .. }"
        );
    }

    #[test]
    fn keys_live_under_the_namespace_and_datacenter() {
        let claim = Claim::new("twitter-1", 2, 32, "web", Duration::from_secs(10));
        let lease = Lease {
            datacenter: 2,
            worker: 7,
            high_water_ms: None,
            token: 0,
        };
        assert_eq!(
            lease_keys(&claim, &lease),
            [
                "snowmint:twitter-1:dc2:w7",
                "snowmint:twitter-1:dc2:hwm",
                "snowmint:twitter-1:dc2:expiry"
            ]
        );
    }
}
