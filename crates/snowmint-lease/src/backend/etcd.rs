//! Worker-id leases on etcd, through its v3 JSON gateway (`POST /v3/...` with base64 keys),
//! so building needs no protobuf compiler.
//!
//! # Keys
//!
//! ```text
//! /snowmint/{namespace}/dc{D}/w{W}                 holder   bound to the holder's etcd lease
//! /snowmint/{namespace}/dc{D}/w{W}/hwm             ms       high-water mark, no lease: kept
//! /snowmint/{namespace}/dc{D}/sticky/{identity}    W        the instance's last worker, kept
//! ```
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
//! One grant, one read and one take txn in the common case (sticky worker free, or a free
//! worker among the first listed). Worker keys are listed `PAGE` at a time in key order,
//! and free ids are found in the gaps, so a datacenter with 2^22 worker ids costs the same
//! as one with 32. At most 1 + `MAX_TAKES` take txns are sent (the sticky one, then free
//! ones), each lost only to another acquirer that won. Proving that every worker is held
//! reads every worker and mark key once: `2 * workers / PAGE` reads at worst.

use std::collections::HashSet;
use std::hash::{BuildHasher, RandomState};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::registry::{Claim, Lease, LeaseError, Registry};

/// etcd's client port, when the URL names none.
const DEFAULT_PORT: u16 = 2379;
/// A reachable etcd accepts a connection in well under this.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// Every request answers within this or fails.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
/// Every call (acquire, renew, release) ends within this, however many requests it
/// sends, so a frozen etcd is reported while the fence still stands.
const CALL_TIMEOUT: Duration = Duration::from_millis(2_500);
/// Worker and mark keys per listing page: about 100 bytes of JSON each.
const PAGE: u64 = 256;
/// Free workers tried per batch, in an order of their own per acquirer so concurrent
/// acquirers rarely race for the same one.
const BATCH: usize = 16;
/// Take txns per acquisition beyond the sticky one; losing more means a storm of
/// acquirers, and the keeper retries after a backoff.
const MAX_TAKES: u32 = 16;
/// Attempts to raise a mark that keeps changing under us (nothing but the holder writes it).
const RAISE_TRIES: u32 = 3;

/// Leases worker ids through etcd's v3 JSON gateway: a lease with keep-alive per holder,
/// worker keys created only if absent and bound to it, the high-water mark beside them.
#[derive(Debug)]
pub struct EtcdRegistry {
    /// `http://host:port`.
    endpoint: String,
    http: reqwest::Client,
}

impl EtcdRegistry {
    /// A registry for `etcd://HOST[:PORT]` (port 2379 by default). Checks the URL; the
    /// first acquisition connects.
    ///
    /// # Errors
    ///
    /// [`LeaseError::Invalid`] for a URL that is not `etcd://HOST[:PORT]`.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint_lease::{EtcdRegistry, Registry};
    ///
    /// let registry = EtcdRegistry::from_url("etcd://127.0.0.1:2379")?;
    /// assert_eq!(registry.backend(), "etcd");
    /// let err = EtcdRegistry::from_url("etcd://db:port").unwrap_err();
    /// assert_eq!(err.to_string(), r#"lease URL "etcd://db:port": expected etcd://HOST:PORT (invalid port number)"#);
    /// # Ok::<(), snowmint_lease::LeaseError>(())
    /// ```
    pub fn from_url(url: &str) -> Result<EtcdRegistry, LeaseError> {
        let invalid = |why: &str| {
            LeaseError::Invalid(format!(
                "lease URL {url:?}: expected etcd://HOST:PORT ({why})"
            ))
        };
        let rest = url
            .strip_prefix("etcd://")
            .ok_or_else(|| invalid("wrong scheme"))?;
        let parsed =
            reqwest::Url::parse(&format!("http://{rest}")).map_err(|e| invalid(&e.to_string()))?;
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(invalid("user names are not supported"));
        }
        if parsed.path() != "/" || parsed.query().is_some() || parsed.fragment().is_some() {
            return Err(invalid("nothing may follow the port"));
        }
        let host = parsed
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| invalid("no host"))?;
        let endpoint = format!("http://{host}:{}", parsed.port().unwrap_or(DEFAULT_PORT));
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(|e| invalid(&e.to_string()))?;
        Ok(EtcdRegistry { endpoint, http })
    }

    /// Runs one registry call with its deadline. Cut short, it leaves nothing half done:
    /// each txn is atomic, and a lease granted but not handed out expires unrenewed.
    async fn within<T>(
        &self,
        call: &str,
        work: impl Future<Output = Result<T, LeaseError>>,
    ) -> Result<T, LeaseError> {
        tokio::time::timeout(CALL_TIMEOUT, work)
            .await
            .unwrap_or_else(|_| {
                Err(unavailable(format!(
                    "{call} at {} took over {} ms",
                    self.endpoint,
                    CALL_TIMEOUT.as_millis()
                )))
            })
    }

    /// Posts `body` to a gateway path; answers the HTTP status and the body.
    async fn post(&self, path: &str, body: &Value) -> Result<(u16, Vec<u8>), LeaseError> {
        let url = format!("{}{path}", self.endpoint);
        let response = self
            .http
            .post(&url)
            .json(body)
            .send()
            .await
            .map_err(|e| unavailable(chain(&e)))?;
        let status = response.status().as_u16();
        let bytes = response.bytes().await.map_err(|e| unavailable(chain(&e)))?;
        Ok((status, bytes.to_vec()))
    }

    /// Posts and decodes a successful answer; etcd's errors become `Unavailable`.
    async fn call<T: DeserializeOwned>(&self, path: &str, body: &Value) -> Result<T, LeaseError> {
        let (status, bytes) = self.post(path, body).await?;
        if status != 200 {
            return Err(unavailable(format!(
                "{}{path} answered {status}: {}",
                self.endpoint,
                etcd_message(&bytes)
            )));
        }
        serde_json::from_slice(&bytes).map_err(|e| {
            unavailable(format!(
                "{}{path} answered {:?}: {e}",
                self.endpoint,
                excerpt(&bytes)
            ))
        })
    }

    async fn txn(&self, compare: Vec<Value>, success: Vec<Value>) -> Result<Txn, LeaseError> {
        let body = json!({ "compare": compare, "success": success });
        self.call("/v3/kv/txn", &body).await
    }

    /// Grants a lease of `ttl`, rounded up to whole seconds as etcd counts them.
    async fn grant(&self, ttl: Duration) -> Result<i64, LeaseError> {
        let seconds = u64::try_from(ttl.as_millis().div_ceil(1_000))
            .unwrap_or(u64::MAX)
            .max(1);
        let granted: LeaseAnswer = self
            .call("/v3/lease/grant", &json!({ "TTL": seconds.to_string() }))
            .await?;
        if u64::try_from(granted.ttl).unwrap_or(0) > seconds {
            // etcd's shortest lease is 1.5 election timeouts: successors wait longer.
            tracing::warn!(
                asked = seconds,
                granted = granted.ttl,
                "etcd granted a longer lease TTL than asked"
            );
        }
        Ok(granted.id)
    }

    /// Keeps a lease alive; answers its TTL in seconds, 0 once it has expired.
    async fn keepalive(&self, lease: i64) -> Result<i64, LeaseError> {
        let body = json!({ "ID": lease.to_string() });
        let (status, bytes) = self.post("/v3/lease/keepalive", &body).await?;
        // A stream: one `{"result": ...}` line per keep-alive sent, and one was sent.
        let first = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
        match serde_json::from_slice::<KeepAlive>(first) {
            Ok(KeepAlive {
                result: Some(answer),
            }) if status == 200 => Ok(answer.ttl),
            _ => Err(unavailable(format!(
                "{}/v3/lease/keepalive answered {status}: {}",
                self.endpoint,
                etcd_message(&bytes)
            ))),
        }
    }

    /// Revokes a lease, deleting the keys bound to it; one already gone is not an error.
    async fn revoke(&self, lease: i64) -> Result<(), LeaseError> {
        let (status, bytes) = self
            .post("/v3/lease/revoke", &json!({ "ID": lease.to_string() }))
            .await?;
        match status {
            200 | 404 => Ok(()),
            _ => Err(unavailable(format!(
                "{}/v3/lease/revoke answered {status}: {}",
                self.endpoint,
                etcd_message(&bytes)
            ))),
        }
    }

    /// Lists worker (and mark) keys from `from`, in key order.
    async fn page(&self, keys: &Keys, from: &[u8]) -> Result<Range, LeaseError> {
        self.call("/v3/kv/range", &list(keys, from)).await
    }

    /// Tries to take `worker` with one txn; `None` if someone holds it.
    async fn take(
        &self,
        claim: &Claim,
        keys: &Keys,
        worker: u64,
        lease: i64,
    ) -> Result<Option<Lease>, LeaseError> {
        let key = keys.worker(worker);
        let hwm = keys.mark(worker);
        let answer = self
            .txn(
                vec![compare(&key, "CREATE", "create_revision", "0")],
                vec![
                    put(&key, &claim.holder, lease),
                    range(&hwm),
                    put(&keys.sticky, &worker.to_string(), 0),
                ],
            )
            .await?;
        if !answer.succeeded {
            return Ok(None);
        }
        let high_water_ms = match answer.range(1)?.kvs.first() {
            Some(kv) => Some(parse_mark(&hwm, kv)?),
            None => None,
        };
        Ok(Some(Lease {
            datacenter: claim.datacenter,
            worker,
            high_water_ms,
            token: lease,
        }))
    }

    /// Finds and takes a free worker for `lease`: the sticky one, then free ones found in
    /// the gaps of the key listing.
    async fn take_free(&self, claim: &Claim, keys: &Keys, lease: i64) -> Result<Lease, LeaseError> {
        let exhausted = LeaseError::Exhausted {
            datacenter: claim.datacenter,
            workers: claim.workers,
        };
        let first = self
            .txn(
                vec![],
                vec![
                    range(&keys.sticky),
                    json!({ "request_range": list(keys, &keys.workers) }),
                ],
            )
            .await?;
        let mut page = first.range(1)?.clone();
        let sticky = first.range(0)?.kvs.first().and_then(|kv| {
            let worker = std::str::from_utf8(&kv.value).ok()?.parse().ok()?;
            (worker < claim.workers).then_some(worker)
        });
        if let Some(worker) = sticky
            && !page
                .kvs
                .iter()
                .any(|kv| keys.worker_of(&kv.key) == Some(worker))
            && let Some(lease) = self.take(claim, keys, worker, lease).await?
        {
            return Ok(lease);
        }
        let mut order = KeyOrder::new(claim.workers).peekable();
        let mut takes = 0;
        loop {
            let held: HashSet<u64> = page
                .kvs
                .iter()
                .filter_map(|kv| keys.worker_of(&kv.key))
                .collect();
            // The page vouches for the worker keys up to its last key; the last page, for all.
            let last = page.kvs.last().map(|kv| kv.key.as_slice());
            let listed = |worker: &u64| match last {
                Some(last) if page.more => keys.worker(*worker).as_bytes() <= last,
                _ => true,
            };
            let mut batch = Vec::new();
            while batch.len() < BATCH
                && let Some(worker) = order.next_if(listed)
            {
                if !held.contains(&worker) && Some(worker) != sticky {
                    batch.push(worker);
                }
            }
            if batch.is_empty() {
                let Some(last) = last.filter(|_| page.more) else {
                    return Err(exhausted);
                };
                page = self.page(keys, &[last, b"\0"].concat()).await?;
                continue;
            }
            let start = RandomState::new().hash_one(&claim.holder) as usize % batch.len();
            batch.rotate_left(start);
            for worker in batch {
                if takes == MAX_TAKES {
                    return Err(unavailable(format!(
                        "{MAX_TAKES} free worker ids of datacenter {} were taken by other processes first",
                        claim.datacenter
                    )));
                }
                takes += 1;
                if let Some(lease) = self.take(claim, keys, worker, lease).await? {
                    return Ok(lease);
                }
            }
        }
    }
}

/// The three calls, each run within [`CALL_TIMEOUT`] by the [`Registry`] impl below.
impl EtcdRegistry {
    async fn acquire_within(&self, claim: &Claim) -> Result<Lease, LeaseError> {
        if claim.workers == 0 {
            return Err(LeaseError::Exhausted {
                datacenter: claim.datacenter,
                workers: 0,
            });
        }
        let keys = Keys::new(claim);
        let lease = self.grant(claim.ttl).await?;
        match self.take_free(claim, &keys, lease).await {
            Ok(taken) => Ok(taken),
            Err(err) => {
                // Revoking deletes whatever the lease took, even by a txn whose answer was
                // lost; if etcd is gone too, the lease expires on its own.
                if let Err(revoke) = self.revoke(lease).await {
                    tracing::warn!(error = %revoke, lease, "cannot revoke an unused etcd lease");
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
        let lost = |reason: String| LeaseError::Lost {
            datacenter: lease.datacenter,
            worker: lease.worker,
            reason,
        };
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
                    vec![put(&hwm, &high_water_ms.to_string(), 0)],
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
        // The mark becomes the last id's instant, lower than the reservation: nothing past
        // it was issued, so a successor need not wait out the reservation.
        self.txn(
            vec![
                compare(&key, "VALUE", "value", &BASE64.encode(&claim.holder)),
                compare(&key, "LEASE", "lease", &lease.token.to_string()),
            ],
            vec![put(&hwm, &high_water_ms.to_string(), 0), delete(&key)],
        )
        .await?;
        // The worker is free now; the lease holds nothing more, and would expire anyway.
        if let Err(err) = self.revoke(lease.token).await {
            tracing::warn!(error = %err, lease = lease.token, "cannot revoke a released etcd lease");
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

    async fn release(
        &self,
        claim: &Claim,
        lease: &Lease,
        high_water_ms: u64,
    ) -> Result<(), LeaseError> {
        self.within("release", self.release_within(claim, lease, high_water_ms))
            .await
    }
}

/// The keys of one claim's datacenter.
struct Keys {
    /// `/snowmint/{namespace}/dc{D}/w`: worker keys start with it, and their marks.
    workers: String,
    /// `/snowmint/{namespace}/dc{D}/x`: the first key after all of those.
    workers_end: String,
    /// The claim's sticky key.
    sticky: String,
}

impl Keys {
    fn new(claim: &Claim) -> Keys {
        let dc = format!("/snowmint/{}/dc{}", claim.namespace, claim.datacenter);
        Keys {
            workers: format!("{dc}/w"),
            workers_end: format!("{dc}/x"),
            sticky: format!("{dc}/sticky/{}", claim.identity),
        }
    }

    fn worker(&self, worker: u64) -> String {
        format!("{}{worker}", self.workers)
    }

    fn mark(&self, worker: u64) -> String {
        format!("{}{worker}/hwm", self.workers)
    }

    /// The worker a listed key holds, if it is a worker key (not a mark) in canonical form.
    fn worker_of(&self, key: &[u8]) -> Option<u64> {
        let digits = std::str::from_utf8(key.strip_prefix(self.workers.as_bytes())?).ok()?;
        let worker: u64 = digits.parse().ok()?;
        (worker.to_string() == digits).then_some(worker)
    }
}

/// Worker ids `0..n` in the order etcd lists their keys (byte order of the decimal digits:
/// 0, 1, 10, 100, 11, 2, ...), so free ones are found in the gaps of a listing page.
struct KeyOrder {
    next: Option<u64>,
    n: u64,
}

impl KeyOrder {
    fn new(n: u64) -> KeyOrder {
        KeyOrder {
            next: (n > 0).then_some(0),
            n,
        }
    }
}

impl Iterator for KeyOrder {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        let current = self.next?;
        self.next = if current == 0 {
            (self.n > 1).then_some(1)
        } else if let Some(child) = current.checked_mul(10).filter(|c| *c < self.n) {
            Some(child) // "12" is followed by "120"
        } else {
            // Climb while the id is the last of its siblings ("129", or the last below n).
            let mut id = current;
            while id % 10 == 9 || id + 1 >= self.n {
                id /= 10;
                if id == 0 {
                    break;
                }
            }
            (id != 0).then_some(id + 1)
        };
        Some(current)
    }
}

fn unavailable(message: impl Into<String>) -> LeaseError {
    LeaseError::Unavailable {
        backend: "etcd",
        message: message.into(),
    }
}

/// An error and its causes: reqwest's own message omits "connection refused".
fn chain(err: &dyn std::error::Error) -> String {
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        message = format!("{message}: {cause}");
        source = cause.source();
    }
    message
}

/// etcd's reason from an error answer, or the start of the answer.
fn etcd_message(body: &[u8]) -> String {
    #[derive(Deserialize)]
    struct GatewayError {
        message: String,
    }
    match serde_json::from_slice::<GatewayError>(body) {
        Ok(err) => err.message,
        Err(_) => excerpt(body),
    }
}

fn excerpt(body: &[u8]) -> String {
    String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned()
}

/// A mark as stored: decimal ms. Anything else is an error, never read as zero.
fn parse_mark(key: &str, kv: &Kv) -> Result<u64, LeaseError> {
    std::str::from_utf8(&kv.value)
        .ok()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| {
            unavailable(format!(
                "{key} holds {:?}, not milliseconds since the Unix epoch",
                excerpt(&kv.value)
            ))
        })
}

fn range(key: &str) -> Value {
    json!({ "request_range": { "key": BASE64.encode(key) } })
}

/// A range request for one page of the worker and mark keys, from `from` on.
fn list(keys: &Keys, from: impl AsRef<[u8]>) -> Value {
    json!({
        "key": BASE64.encode(from),
        "range_end": BASE64.encode(&keys.workers_end),
        "limit": PAGE.to_string(),
        "keys_only": true,
    })
}

/// A put, bound to `lease` unless it is 0.
fn put(key: &str, value: &str, lease: i64) -> Value {
    json!({ "request_put": {
        "key": BASE64.encode(key),
        "value": BASE64.encode(value),
        "lease": lease.to_string(),
    } })
}

fn delete(key: &str) -> Value {
    json!({ "request_delete_range": { "key": BASE64.encode(key) } })
}

/// `target(key) == operand`; `field` names where etcd reads the operand.
fn compare(key: &str, target: &str, field: &str, operand: &str) -> Value {
    json!({ "key": BASE64.encode(key), "target": target, "result": "EQUAL", field: operand })
}

/// etcd's answers, as the gateway writes them: 64-bit integers as strings, bytes as
/// base64, and fields at their default value left out.
#[derive(Deserialize)]
struct LeaseAnswer {
    #[serde(rename = "ID", deserialize_with = "int")]
    id: i64,
    #[serde(rename = "TTL", default, deserialize_with = "int")]
    ttl: i64,
}

#[derive(Deserialize)]
struct KeepAlive {
    result: Option<LeaseAnswer>,
}

#[derive(Deserialize)]
struct Txn {
    #[serde(default)]
    succeeded: bool,
    #[serde(default)]
    responses: Vec<TxnAnswer>,
}

impl Txn {
    /// The answer to the txn's `i`-th operation, a range.
    fn range(&self, i: usize) -> Result<&Range, LeaseError> {
        self.responses
            .get(i)
            .and_then(|r| r.response_range.as_ref())
            .ok_or_else(|| unavailable(format!("etcd's txn answer has no range at {i}")))
    }
}

#[derive(Deserialize)]
struct TxnAnswer {
    response_range: Option<Range>,
}

#[derive(Clone, Deserialize)]
struct Range {
    #[serde(default)]
    kvs: Vec<Kv>,
    #[serde(default)]
    more: bool,
}

#[derive(Clone, Deserialize)]
struct Kv {
    #[serde(deserialize_with = "bytes")]
    key: Vec<u8>,
    #[serde(default, deserialize_with = "bytes")]
    value: Vec<u8>,
    #[serde(default, deserialize_with = "int")]
    mod_revision: i64,
    #[serde(default, deserialize_with = "int")]
    lease: i64,
}

fn int<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Int {
        Number(i64),
        Text(String),
    }
    match Int::deserialize(d)? {
        Int::Number(n) => Ok(n),
        Int::Text(text) => text.parse().map_err(serde::de::Error::custom),
    }
}

fn bytes<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    BASE64
        .decode(String::deserialize(d)?)
        .map_err(serde::de::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_order_is_the_byte_order_of_the_keys() {
        for n in (0..=1_200).chain([9_999, 10_000, 10_001]) {
            let mut sorted: Vec<u64> = (0..n).collect();
            sorted.sort_by_key(u64::to_string);
            assert_eq!(KeyOrder::new(n).collect::<Vec<_>>(), sorted, "n = {n}");
        }
        let huge: Vec<u64> = KeyOrder::new(u64::MAX).take(4).collect();
        assert_eq!(huge, [0, 1, 10, 100]);
    }

    #[test]
    fn only_canonical_worker_keys_name_a_worker() {
        let claim = Claim::new("ns", 3, 32, "web-7", Duration::from_secs(2));
        let keys = Keys::new(&claim);
        assert_eq!(keys.worker(12), "/snowmint/ns/dc3/w12");
        assert_eq!(keys.mark(12), "/snowmint/ns/dc3/w12/hwm");
        assert_eq!(keys.sticky, "/snowmint/ns/dc3/sticky/web-7");
        assert_eq!(keys.worker_of(b"/snowmint/ns/dc3/w12"), Some(12));
        for other in [
            "/snowmint/ns/dc3/w12/hwm",
            "/snowmint/ns/dc3/w012",
            "/snowmint/ns/dc3/w",
        ] {
            assert_eq!(keys.worker_of(other.as_bytes()), None, "{other}");
        }
    }

    #[test]
    fn urls_are_checked_without_connecting() {
        let endpoint = |url| EtcdRegistry::from_url(url).map(|r| r.endpoint);
        assert_eq!(
            endpoint("etcd://10.0.0.5:2381").unwrap(),
            "http://10.0.0.5:2381"
        );
        assert_eq!(
            endpoint("etcd://etcd.internal").unwrap(),
            "http://etcd.internal:2379"
        );
        assert_eq!(endpoint("etcd://[::1]:2379/").unwrap(), "http://[::1]:2379");
        for (url, why) in [
            ("etcd://", "empty host"),
            ("etcd://h:2379/v3", "nothing may follow the port"),
            ("etcd://user:pw@h:2379", "user names are not supported"),
            ("http://h:2379", "wrong scheme"),
        ] {
            assert_eq!(
                endpoint(url).unwrap_err().to_string(),
                format!("lease URL {url:?}: expected etcd://HOST:PORT ({why})")
            );
        }
    }
}
