//! Worker-id leases on etcd, through its v3 JSON gateway (`POST /v3/...` with base64 keys),
//! so building needs no protobuf compiler.
//!
//! # Keys
//!
//! ```text
//! /snowmint/{namespace}/dc{D}/w{W}                 holder   bound to the holder's etcd lease
//! /snowmint/{namespace}/dc{D}/w{W}/hwm             ms       high-water mark, no lease: kept
//! /snowmint/{namespace}/dc{D}/sticky/{identity}    W        the instance's last worker, kept
//! /snowmint/{namespace}/layout                     layout   the fleet's, in canonical form
//! ```
//!
//! `{namespace}` is the fleet's (`fleet.default`). Earlier releases used the layout's name
//! and epoch (`twitter-1288834974657`): the take txn also requires the worker key to be
//! absent in each of the claim's [`legacy`](Claim::legacy) namespaces, and reads their marks
//! to start after the largest. Those of a layout that differs slightly are found once per
//! process, by reading one key name per namespace below `/snowmint/{preset or custom}-`.
//!
//! A worker is held while its key exists; etcd deletes it when the lease expires, so a
//! killed holder frees its worker one TTL after its last keep-alive, never before.
//!
//! # Transactions
//!
//! - **acquire**: grant a lease; read the sticky key and a page of the worker keys in one
//!   read-only txn; then, for the sticky worker and then free ones, one txn each:
//!   `if create_revision(w) == 0 then put w = holder (lease), get hwm, put sticky = W`.
//!   The mark comes back from the same txn that took the worker. On any failure the lease
//!   is revoked, which deletes whatever it took.
//! - **renew**: keep-alive the lease (no TTL in the answer: expired, [`LeaseError::Lost`]);
//!   then read the worker key and the mark in one snapshot, and if the mark is lower,
//!   `if value(w) == holder && lease(w) == ours && mod_revision(hwm) == seen then put hwm`.
//!   The mark's revision guard makes "raise to the max" one atomic step while keeping the
//!   stored value plain decimal; only the holder writes the mark, so a retry is rare.
//! - **release**: `if value(w) == holder && lease(w) == ours then put hwm = exactly the
//!   last id's ms, delete w`, then revoke the lease. Not held: nothing changes.
//!
//! # Cost of an acquisition
//!
//! One grant, one read and one take txn in the common case (sticky worker free, or the
//! first free worker tried). Free workers are tried in an order of each acquirer's own,
//! drawn from all those listed (up to `SPREAD`), so a fleet that starts together spreads
//! over the datacenter rather than racing for its first free ids. Worker keys are listed `PAGE` at a time in key order,
//! and free ids are found in the gaps, so a datacenter with 2^22 worker ids costs the same
//! as one with 32. At most 1 + `MAX_TAKES` take txns are sent (the sticky one, then free
//! ones), each lost only to another acquirer that won. Proving that every worker is held
//! reads every worker and mark key once: `2 * workers / PAGE` reads at worst.

mod auth;
mod gateway;
mod keys;
mod list;
mod take;
mod url;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use snowmint::error::Chain;

use self::auth::Auth;
use self::gateway::{Kv, compare, delete, put, range, unavailable};
use self::keys::Keys;
use super::CONNECT_TIMEOUT;
use crate::listing::{ListFilter, Listing};
use crate::mark;
use crate::registry::{Claim, Lease, LeaseError, Registry};
use crate::secured::TlsFiles;

/// etcd's client port, when the URL names none.
const DEFAULT_PORT: u16 = 2379;
/// Every request answers within this or fails.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
/// Every call (acquire, renew, release) ends within this, however many requests it
/// sends, so a frozen etcd is reported while the fence still stands.
const CALL_TIMEOUT: Duration = Duration::from_millis(2_500);
/// Worker and mark keys per listing page: about 100 bytes of JSON each.
const PAGE: u64 = 256;
/// Take txns per acquisition beyond the sticky one; losing more means a storm of
/// acquirers, and the keeper retries after a backoff.
const MAX_TAKES: u32 = 16;
/// Attempts to raise a mark that keeps changing under us (nothing but the holder writes it).
const RAISE_TRIES: u32 = 3;

/// Leases worker ids through etcd's v3 JSON gateway: a lease with keep-alive per holder,
/// worker keys created only if absent and bound to it, the high-water mark beside them.
///
/// The URL names one member or several (`etcd://HOST:PORT,HOST:PORT,...`). Requests go to
/// one of them, and move on to the next ([`Endpoints`]) when it cannot be reached, does
/// not answer in time, or answers that it has no leader: a member cut off from its peers
/// answers its clients, but every read or write it is asked waits for a quorum it cannot
/// reach.
///
/// `etcds://` speaks https, trusting `tls_ca=FILE` and presenting `tls_cert=FILE` with
/// `tls_key=FILE` to a member that checks client certificates; a user in the URL
/// (`USER:PASSWORD@` or `USER@` with `password_file=FILE`) authenticates with etcd's own
/// users and roles, whose tokens it renews (docs/OPERATIONS.md, "Security").
pub struct EtcdRegistry {
    endpoints: Endpoints,
    http: reqwest::Client,
    /// The TLS files of an `etcds://` URL, to name the one at fault in a refusal.
    tls: Option<TlsFiles>,
    /// etcd's authentication, when the URL names a user.
    auth: Option<Auth>,
    /// The URL as it may be shown: no password.
    shown: String,
    /// The namespaces of earlier releases, listed once.
    found: crate::legacy::Found,
}

impl std::fmt::Debug for EtcdRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdRegistry")
            .field("url", &self.shown)
            .finish_non_exhaustive()
    }
}

impl EtcdRegistry {
    /// A registry for `etcd://[USER[:PASSWORD]@]HOST[:PORT][,HOST[:PORT]...]` (port 2379 by
    /// default), or `etcds://` with the same parts and `?tls_ca=FILE&tls_cert=FILE&tls_key=FILE`
    /// for https; either takes `password_file=FILE`. One member, or the members of a
    /// cluster. Checks the URL and reads its files; the first acquisition connects.
    ///
    /// # Errors
    ///
    /// [`LeaseError::Invalid`] for a URL of another form, or a file it names that cannot
    /// be read; the message shows the URL without its password.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint_lease::{EtcdRegistry, Registry};
    ///
    /// let registry = EtcdRegistry::from_url("etcd://127.0.0.1:2379")?;
    /// assert_eq!(registry.backend(), "etcd");
    /// EtcdRegistry::from_url("etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379/")?;
    /// let err = EtcdRegistry::from_url("etcd://snowmint:s3cret@db:port").unwrap_err();
    /// assert_eq!(err.to_string(), r#"lease URL "etcd://snowmint:***@db:port": expected etcd[s]://[USER[:PASSWORD]@]HOST:PORT[,HOST:PORT...][?PARAMETERS] (invalid port number)"#);
    /// # Ok::<(), snowmint_lease::LeaseError>(())
    /// ```
    pub fn from_url(url: &str) -> Result<EtcdRegistry, LeaseError> {
        let target = url::parse(url)?;
        let invalid = |why: String| {
            LeaseError::Invalid(format!(
                "lease URL {:?}: {why}",
                crate::secured::redact(url)
            ))
        };
        // The client needs the process's provider even for plain http.
        crate::secured::install_crypto_provider();
        let mut http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT);
        if let Some(files) = &target.tls {
            // The gateway speaks HTTP/1.1, the only version this client has.
            let config = files.client_config(&[b"http/1.1"]).map_err(invalid)?;
            http = http.tls_backend_preconfigured((*config).clone());
        }
        let http = http.build().map_err(|e| invalid(e.to_string()))?;
        Ok(EtcdRegistry {
            found: crate::legacy::Found::default(),
            shown: target.shown(),
            endpoints: Endpoints::new(target.endpoints),
            http,
            tls: target.tls,
            auth: target.user.map(Auth::new),
        })
    }

    /// Runs one registry call with its deadline. Cut short, it leaves nothing half done:
    /// each txn is atomic, and a lease granted but not handed out expires unrenewed. A
    /// member that made the call late is left for the next.
    async fn within<T>(
        &self,
        call: &str,
        work: impl Future<Output = Result<T, LeaseError>>,
    ) -> Result<T, LeaseError> {
        super::within(CALL_TIMEOUT, work, || {
            let (at, endpoint) = self.endpoints.current();
            self.endpoints.move_on(at);
            unavailable(format!(
                "{call} at {endpoint} took over {} ms",
                CALL_TIMEOUT.as_millis()
            ))
        })
        .await
    }
}

/// The members a registry may ask, and the one it asks now: it keeps to one member while
/// that member answers, and moves on to the next, in the URL's order and round again, when
/// it fails. One member that fails does not keep the registry on it; one that answers is
/// not left for nothing.
#[derive(Debug)]
struct Endpoints {
    /// `http://host:port` of each member, in the URL's order.
    all: Vec<String>,
    /// The index of the member asked now.
    current: AtomicUsize,
}

impl Endpoints {
    fn new(all: Vec<String>) -> Endpoints {
        Endpoints {
            all,
            current: AtomicUsize::new(0),
        }
    }

    /// The member asked now, and its index.
    fn current(&self) -> (usize, &str) {
        let at = self.current.load(Ordering::Relaxed) % self.all.len();
        (at, &self.all[at])
    }

    /// The member `n` places after the one at `at`, and its index.
    fn after(&self, at: usize, n: usize) -> (usize, &str) {
        let index = (at + n) % self.all.len();
        (index, &self.all[index])
    }

    /// Leaves the member at `at` for the next, unless a concurrent request already has.
    fn move_on(&self, at: usize) {
        let next = (at + 1) % self.all.len();
        if self
            .current
            .compare_exchange(at, next, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
            && next != at
        {
            tracing::info!(from = %self.all[at], to = %self.all[next], "moving to the next etcd member");
        }
    }

    fn len(&self) -> usize {
        self.all.len()
    }

    fn iter(&self) -> impl Iterator<Item = &str> {
        self.all.iter().map(String::as_str)
    }
}

/// The three calls, each run within [`CALL_TIMEOUT`] by the [`Registry`] impl below.
impl EtcdRegistry {
    async fn acquire_within(&self, claim: &Claim) -> Result<Lease, LeaseError> {
        if claim.workers == 0 {
            return Err(LeaseError::exhausted(claim));
        }
        let claim = &self
            .found
            .widen(claim, || self.earlier_namespaces())
            .await?;
        let keys = Keys::new(claim);
        self.check_layout(claim, &keys).await?;
        let reach = self.fleet_reach(claim, &keys).await?;
        let claim = &claim.clone().reaching(reach);
        let lease = self.grant(claim.ttl).await?;
        let taken = match self.take_free(claim, &keys, lease).await {
            // Asked after taking: a restart in between only moves the start later.
            Ok(taken) => self.started_ms().await.map(|since| Lease {
                high_water_ms: claim.start_after(
                    crate::legacy::after_leads(claim, taken.high_water_ms),
                    since,
                    taken.worker,
                ),
                ..taken
            }),
            Err(err) => Err(err),
        };
        match taken {
            Ok(taken) => Ok(taken),
            Err(err) => {
                // Revoking deletes whatever the lease took, even by a txn whose answer was
                // lost; if etcd is gone too, the lease expires on its own.
                if let Err(revoke) = self.revoke(lease).await {
                    tracing::warn!(error = %Chain(&revoke), lease, "cannot revoke an unused etcd lease");
                }
                Err(err)
            }
        }
    }

    async fn renew_within(
        &self,
        claim: &Claim,
        lease: &Lease,
        high_water_ms: u64,
    ) -> Result<(), LeaseError> {
        let lost = |reason: String| LeaseError::lost(lease, reason);
        if self.keepalive(lease.token).await? <= 0 {
            return Err(lost(format!("etcd lease {:x} has expired", lease.token)));
        }
        let keys = Keys::new(claim);
        let (key, hwm) = (keys.worker(lease.worker), keys.mark(lease.worker));
        for _ in 0..RAISE_TRIES {
            let read = self.txn(vec![], vec![range(&key), range(&hwm)]).await?;
            match read.range(0)?.kvs.first() {
                Some(kv) if kv.value == claim.holder.as_bytes() && kv.lease == lease.token => {}
                Some(kv) => {
                    let holder = String::from_utf8_lossy(&kv.value);
                    return Err(lost(format!("{key} is held by {holder}")));
                }
                None => return Err(lost(format!("{key} is gone"))),
            }
            let (mark, revision) = match read.range(1)?.kvs.first() {
                Some(kv) => (Some(parse_mark(&hwm, kv)?), kv.mod_revision),
                None => (None, 0),
            };
            if mark.is_some_and(|mark| mark >= high_water_ms) {
                return Ok(());
            }
            let raised = self
                .txn(
                    vec![
                        compare(&key, "VALUE", "value", &BASE64.encode(&claim.holder)),
                        compare(&key, "LEASE", "lease", &lease.token.to_string()),
                        // 0 matches an absent key: the first mark.
                        compare(&hwm, "MOD", "mod_revision", &revision.to_string()),
                    ],
                    vec![put(&hwm, &mark::encode(high_water_ms), 0)],
                )
                .await?;
            if raised.succeeded {
                return Ok(());
            }
            // The holder changed (the next read says so) or the mark moved: look again.
        }
        Err(unavailable(format!(
            "{hwm} changed under each of {RAISE_TRIES} attempts to raise it"
        )))
    }

    async fn release_within(
        &self,
        claim: &Claim,
        lease: &Lease,
        high_water_ms: u64,
    ) -> Result<(), LeaseError> {
        let keys = Keys::new(claim);
        let (key, hwm) = (keys.worker(lease.worker), keys.mark(lease.worker));
        // The mark as `Registry::release` chose it: the last id's instant, which may be
        // lower than the reservation (nothing past it was issued), never below the mark
        // the lease was acquired with.
        self.txn(
            vec![
                compare(&key, "VALUE", "value", &BASE64.encode(&claim.holder)),
                compare(&key, "LEASE", "lease", &lease.token.to_string()),
            ],
            vec![put(&hwm, &mark::encode(high_water_ms), 0), delete(&key)],
        )
        .await?;
        // The worker is free now; the lease holds nothing more, and would expire anyway.
        if let Err(err) = self.revoke(lease.token).await {
            tracing::warn!(error = %Chain(&err), lease = lease.token, "cannot revoke a released etcd lease");
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl Registry for EtcdRegistry {
    fn backend(&self) -> &'static str {
        "etcd"
    }

    async fn acquire(&self, claim: &Claim) -> Result<Lease, LeaseError> {
        self.within("acquire", self.acquire_within(claim)).await
    }

    async fn renew(
        &self,
        claim: &Claim,
        lease: &Lease,
        high_water_ms: u64,
    ) -> Result<(), LeaseError> {
        self.within("renew", self.renew_within(claim, lease, high_water_ms))
            .await
    }

    async fn give_back(
        &self,
        claim: &Claim,
        lease: &Lease,
        mark_ms: u64,
    ) -> Result<(), LeaseError> {
        self.within("release", self.release_within(claim, lease, mark_ms))
            .await
    }

    async fn list(&self, filter: &ListFilter) -> Result<Listing, LeaseError> {
        self.list_keys(filter).await
    }
}

/// A mark as stored ([`mark::decode`](crate::mark::decode)). Anything else is an error,
/// never read as zero.
fn parse_mark(key: &str, kv: &Kv) -> Result<u64, LeaseError> {
    mark::decode(&kv.value).map_err(|corrupt| unavailable(format!("{key} is corrupt: {corrupt}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_member_is_left_for_the_next_once() {
        let endpoints = Endpoints::new(vec!["a".into(), "b".into(), "c".into()]);
        assert_eq!(endpoints.current(), (0, "a"));
        endpoints.move_on(0);
        // A second request that failed on the same member moves on no further.
        endpoints.move_on(0);
        assert_eq!(endpoints.current(), (1, "b"));
        endpoints.move_on(1);
        endpoints.move_on(2);
        assert_eq!(endpoints.current(), (0, "a"));
        assert_eq!(endpoints.after(2, 2), (1, "b"));
        let one = Endpoints::new(vec!["a".into()]);
        one.move_on(0);
        assert_eq!(one.current(), (0, "a"));
    }
}
