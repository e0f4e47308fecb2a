//! Posting to etcd's v3 JSON gateway: the requests the protocol sends, the answers it
//! reads, and the errors that quote them.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use snowmint::error::Chain;

use super::auth::stale_token;
use super::keys::Keys;
use super::url::host_of;
use super::{EtcdRegistry, PAGE};
use crate::refusal::tls_refusal_for;
use crate::registry::LeaseError;

/// How the client says a connection closed before any answer came.
const UNANSWERED: &str = "connection closed before message completed";

/// What a member answered a request: its URL (the member's, for messages), the HTTP
/// status, and the body.
pub(super) struct Answer {
    pub(super) url: String,
    pub(super) status: u16,
    pub(super) body: Vec<u8>,
}

impl EtcdRegistry {
    /// Posts `body` to a gateway path with the user's token, if the URL names a user
    /// ([`auth`](super::auth)): a token the member no longer takes is replaced once, and
    /// the request sent again (it was refused, so it did nothing).
    async fn post(&self, path: &str, body: &Value) -> Result<Answer, LeaseError> {
        let token = self.token().await?;
        let answer = self.send(path, body, token.as_deref()).await?;
        match token {
            Some(stale) if stale_token(&answer) => {
                tracing::debug!(url = %answer.url, "etcd refused the token; authenticating again");
                self.forget_token(&stale).await;
                let token = self.token().await?;
                self.send(path, body, token.as_deref()).await
            }
            _ => Ok(answer),
        }
    }

    /// Posts `body` to a gateway path on the member in use, or on the next ones while a
    /// member cannot be reached at all (the request was never sent, so sending it again
    /// elsewhere cannot apply it twice). A member that times out, or answers that it has
    /// no leader, answers this request as it did; the next request goes to the next member.
    pub(super) async fn send(
        &self,
        path: &str,
        body: &Value,
        token: Option<&str>,
    ) -> Result<Answer, LeaseError> {
        let (at, _) = self.endpoints.current();
        let mut tried = 0;
        loop {
            let (index, endpoint) = self.endpoints.after(at, tried);
            let url = format!("{endpoint}{path}");
            let failed = |err: reqwest::Error| self.transport_failed(endpoint, &url, err);
            let mut request = self.http.post(&url).json(body);
            if let Some(token) = token {
                request = request.header(reqwest::header::AUTHORIZATION, token);
            }
            let sent = request.send().await;
            let response = match sent {
                Ok(response) => response,
                Err(err) if err.is_connect() && tried + 1 < self.endpoints.len() => {
                    tracing::debug!(error = %Chain(&err), %url, "cannot reach this etcd member");
                    self.endpoints.move_on(index);
                    tried += 1;
                    continue;
                }
                Err(err) => {
                    self.endpoints.move_on(index);
                    return Err(self.dropped(endpoint, &url, err).await);
                }
            };
            let status = response.status().as_u16();
            let bytes = match response.bytes().await {
                Ok(bytes) => bytes.to_vec(),
                Err(err) => {
                    self.endpoints.move_on(index);
                    return Err(failed(err));
                }
            };
            if without_quorum(status, &bytes) {
                self.endpoints.move_on(index);
            }
            return Ok(Answer {
                url,
                status,
                body: bytes,
            });
        }
    }

    /// As [`transport_failed`](Self::transport_failed), and when the error does not say why
    /// a member that speaks TLS dropped the request (it refused our client certificate
    /// after the handshake, say), a handshake of our own asks it.
    async fn dropped(&self, endpoint: &str, url: &str, err: reqwest::Error) -> LeaseError {
        if let Some(files) = &self.tls
            && !err.is_timeout()
            && tls_refusal_for(&err, files).is_none()
        {
            let host = host_of(endpoint);
            if let Some(words) = crate::refusal::handshake_refusal(host, files).await {
                return LeaseError::unavailable_because(
                    "etcd",
                    format!("{host}: {words}"),
                    err.without_url(),
                );
            }
        }
        self.transport_failed(endpoint, url, err)
    }

    /// `Unavailable` for a request that got no answer: a TLS check that failed is said in
    /// plain words, naming the member; anything else names the URL (reqwest's message
    /// names it too: it is said once, here).
    fn transport_failed(&self, endpoint: &str, url: &str, err: reqwest::Error) -> LeaseError {
        let refusal = self
            .tls
            .as_ref()
            .and_then(|files| tls_refusal_for(&err, files));
        let host = host_of(endpoint);
        match refusal {
            Some(words) => LeaseError::unavailable_because(
                "etcd",
                format!("{host}: {words}"),
                err.without_url(),
            ),
            // A member that speaks https only closes a plain-text connection unanswered.
            None if self.tls.is_none() && Chain(&err).to_string().contains(UNANSWERED) => {
                LeaseError::unavailable_because(
                    "etcd",
                    format!(
                        "{host} closed the connection without an answer: plain text to a TLS port? (a member that speaks https needs etcds://)"
                    ),
                    err.without_url(),
                )
            }
            None => LeaseError::unavailable_because("etcd", url, err.without_url()),
        }
    }

    /// Posts and decodes a successful answer; etcd's errors become `Unavailable`.
    pub(super) async fn call<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &Value,
    ) -> Result<T, LeaseError> {
        let answer = self.post(path, body).await?;
        if answer.status != 200 {
            return Err(self.refused(&answer));
        }
        let Answer { url, body, .. } = answer;
        serde_json::from_slice(&body).map_err(|e| {
            let answer = format!("{url} answered {:?}", excerpt(&body));
            LeaseError::unavailable_because("etcd", answer, e)
        })
    }

    pub(super) async fn txn(
        &self,
        compare: Vec<Value>,
        success: Vec<Value>,
    ) -> Result<Txn, LeaseError> {
        let body = json!({ "compare": compare, "success": success });
        self.call("/v3/kv/txn", &body).await
    }

    /// A txn with operations for when a compare fails too.
    pub(super) async fn txn_else(
        &self,
        compare: Vec<Value>,
        success: Vec<Value>,
        failure: Vec<Value>,
    ) -> Result<Txn, LeaseError> {
        let body = json!({ "compare": compare, "success": success, "failure": failure });
        self.call("/v3/kv/txn", &body).await
    }

    /// Since when the members vouch for their keys (ms since the Unix epoch, their
    /// clocks): the earliest start among the members of the URL that answer, each read
    /// from the gauge `process_start_time_seconds` of its `/metrics`, rounded up, and one
    /// second more, since it counts from the host's boot time in whole seconds.
    ///
    /// etcd loses no write it acknowledged, whichever member restarts, since a quorum has
    /// it; only a restore from a snapshot or an old copy of the data goes back, and a
    /// restore restarts every member (it makes a new cluster from the snapshot). So every
    /// member that answers after a restore started after it, and the earliest of them
    /// still dates the restore; after an ordinary restart of one member, another member
    /// that kept running vouches from its own, earlier, start. The members are asked at
    /// once; one that does not answer is left out, and if none answers, the error is the
    /// first member's.
    pub(super) async fn started_ms(&self) -> Result<u64, LeaseError> {
        let asked = self
            .endpoints
            .iter()
            .map(|endpoint| self.member_started_ms(endpoint));
        let answers = futures_util::future::join_all(asked).await;
        let earliest = answers
            .iter()
            .filter_map(|answer| answer.as_ref().ok())
            .min();
        match earliest {
            Some(ms) => Ok(*ms),
            None => answers
                .into_iter()
                .find_map(Result::err)
                .map_or_else(|| Err(unavailable("no etcd member to ask")), Err),
        }
    }

    /// When the member at `endpoint` started, with the second its gauge may be short.
    async fn member_started_ms(&self, endpoint: &str) -> Result<u64, LeaseError> {
        let url = format!("{endpoint}/metrics");
        let failed = |err: reqwest::Error| self.transport_failed(endpoint, &url, err);
        let response = self.http.get(&url).send().await.map_err(failed)?;
        let status = response.status().as_u16();
        let text = response.text().await.map_err(failed)?;
        if status != 200 {
            let body = text.into_bytes();
            return Err(self.refused(&Answer { url, status, body }));
        }
        start_time_ms(&text).ok_or_else(|| {
            unavailable(format!(
                "{url} has no process_start_time_seconds: cannot tell since when etcd vouches for its keys"
            ))
        })
    }

    /// Grants a lease of `ttl`, rounded up to whole seconds as etcd counts them.
    pub(super) async fn grant(&self, ttl: Duration) -> Result<i64, LeaseError> {
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
    pub(super) async fn keepalive(&self, lease: i64) -> Result<i64, LeaseError> {
        let body = json!({ "ID": lease.to_string() });
        let answer = self.post("/v3/lease/keepalive", &body).await?;
        // A stream: one `{"result": ...}` line per keep-alive sent, and one was sent.
        let first = answer
            .body
            .split(|b| *b == b'\n')
            .next()
            .unwrap_or_default();
        match serde_json::from_slice::<KeepAlive>(first) {
            Ok(KeepAlive { result: Some(kept) }) if answer.status == 200 => Ok(kept.ttl),
            _ => Err(self.refused(&answer)),
        }
    }

    /// Revokes a lease, deleting the keys bound to it; one already gone is not an error.
    pub(super) async fn revoke(&self, lease: i64) -> Result<(), LeaseError> {
        let answer = self
            .post("/v3/lease/revoke", &json!({ "ID": lease.to_string() }))
            .await?;
        match answer.status {
            200 | 404 => Ok(()),
            _ => Err(self.refused(&answer)),
        }
    }

    /// The namespaces of earlier releases, each found with one read of a single key name:
    /// the first key at or after a name's `/snowmint/{name}-`, then the first past the
    /// namespace found there, until none is left below `/snowmint/{name}.`. Keys are read
    /// neither with their values nor in pages, so a namespace costs one request whatever
    /// it holds.
    pub(super) async fn earlier_namespaces(&self) -> Result<Vec<String>, LeaseError> {
        let mut found = Vec::new();
        let names = snowmint::Layout::PRESETS.map(|p| p.name());
        for name in names.into_iter().chain(["custom"]) {
            let end = format!("/snowmint/{name}.");
            let mut from = format!("/snowmint/{name}-");
            loop {
                let body = json!({
                    "key": BASE64.encode(&from),
                    "range_end": BASE64.encode(&end),
                    "limit": "1",
                    "keys_only": true,
                });
                let range: Range = self.call("/v3/kv/range", &body).await?;
                let Some(kv) = range.kvs.first() else { break };
                let key = String::from_utf8_lossy(&kv.key);
                match key
                    .strip_prefix("/snowmint/")
                    .and_then(|rest| rest.split_once('/'))
                {
                    Some((namespace, _)) => {
                        // '0' follows '/': the first key past every one of this namespace.
                        from = format!("/snowmint/{namespace}0");
                        found.push(namespace.to_string());
                    }
                    // No namespace of ours: the next key.
                    None => from = format!("{key}\0"),
                }
            }
        }
        Ok(found)
    }

    /// Lists worker (and mark) keys from `from`, in key order.
    pub(super) async fn page(&self, keys: &Keys, from: &[u8]) -> Result<Range, LeaseError> {
        self.call("/v3/kv/range", &list(keys, from)).await
    }
}

/// The start time in a Prometheus exposition, in ms, rounded up, plus the second its boot
/// time may be short (see [`EtcdRegistry::started_ms`]).
fn start_time_ms(metrics: &str) -> Option<u64> {
    let value = metrics.lines().find_map(|line| {
        line.strip_prefix("process_start_time_seconds ")
            .and_then(|v| v.trim().parse::<f64>().ok())
    })?;
    // Whole ms are far inside f64's precision for any date; a negative or huge value is
    // no start time.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let ms = (value * 1_000.0).ceil() as u64;
    (value.is_finite() && value > 0.0).then_some(ms + 1_000)
}

/// Whether an answer says the member cannot serve for want of a quorum: it has no leader,
/// or a request timed out waiting for one (gRPC's `Unavailable`, which the gateway answers
/// with 503), or it lost the proposal to an election.
fn without_quorum(status: u16, body: &[u8]) -> bool {
    const SIGNS: [&str; 4] = [
        "no leader",
        "request timed out",
        "leader changed",
        "proposal dropped",
    ];
    let message = etcd_message(body);
    status == 503 || (status >= 500 && SIGNS.iter().any(|sign| message.contains(sign)))
}

pub(super) fn unavailable(message: impl Into<String>) -> LeaseError {
    LeaseError::unavailable("etcd", message)
}

/// etcd's reason from an error answer (`{"message": ...}`, or a stream's
/// `{"error": {"message": ...}}`), or the start of the answer.
pub(super) fn etcd_message(body: &[u8]) -> String {
    #[derive(Deserialize)]
    struct GatewayError {
        message: String,
    }
    #[derive(Deserialize)]
    struct StreamError {
        error: GatewayError,
    }
    let first = body.split(|b| *b == b'\n').next().unwrap_or_default();
    if let Ok(err) = serde_json::from_slice::<GatewayError>(body) {
        return err.message;
    }
    match serde_json::from_slice::<StreamError>(first) {
        Ok(err) => err.error.message,
        Err(_) => excerpt(body),
    }
}

pub(super) fn excerpt(body: &[u8]) -> String {
    String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned()
}

pub(super) fn range(key: &str) -> Value {
    json!({ "request_range": { "key": BASE64.encode(key) } })
}

/// A range request for one page of the worker and mark keys, from `from` on.
pub(super) fn list(keys: &Keys, from: impl AsRef<[u8]>) -> Value {
    json!({
        "key": BASE64.encode(from),
        "range_end": BASE64.encode(&keys.workers_end),
        "limit": PAGE.to_string(),
        "keys_only": true,
    })
}

/// A put, bound to `lease` unless it is 0.
pub(super) fn put(key: &str, value: &str, lease: i64) -> Value {
    json!({ "request_put": {
        "key": BASE64.encode(key),
        "value": BASE64.encode(value),
        "lease": lease.to_string(),
    } })
}

pub(super) fn delete(key: &str) -> Value {
    json!({ "request_delete_range": { "key": BASE64.encode(key) } })
}

/// `target(key) == operand`; `field` names where etcd reads the operand.
pub(super) fn compare(key: &str, target: &str, field: &str, operand: &str) -> Value {
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
pub(super) struct Txn {
    #[serde(default)]
    pub(super) succeeded: bool,
    #[serde(default)]
    responses: Vec<TxnAnswer>,
}

impl Txn {
    /// The answer to the txn's `i`-th operation, a range.
    pub(super) fn range(&self, i: usize) -> Result<&Range, LeaseError> {
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
pub(super) struct Range {
    #[serde(default)]
    pub(super) kvs: Vec<Kv>,
    #[serde(default)]
    pub(super) more: bool,
}

#[derive(Clone, Deserialize)]
pub(super) struct Kv {
    #[serde(deserialize_with = "bytes")]
    pub(super) key: Vec<u8>,
    #[serde(default, deserialize_with = "bytes")]
    pub(super) value: Vec<u8>,
    #[serde(default, deserialize_with = "int")]
    pub(super) mod_revision: i64,
    #[serde(default, deserialize_with = "int")]
    pub(super) lease: i64,
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
    use super::{start_time_ms, without_quorum};

    /// As etcd 3.4's gateway answers a member that has lost its leader, and others.
    #[test]
    fn answers_of_a_member_without_a_quorum_are_told_apart() {
        let gateway =
            |message: &str| format!(r#"{{"error":"{message}","code":14,"message":"{message}"}}"#);
        assert!(without_quorum(
            503,
            gateway("etcdserver: no leader").as_bytes()
        ));
        assert!(without_quorum(
            503,
            gateway("etcdserver: request timed out").as_bytes()
        ));
        assert!(without_quorum(
            500,
            gateway("raft proposal dropped").as_bytes()
        ));
        assert!(!without_quorum(
            500,
            gateway("etcdserver: mvcc: database space exceeded").as_bytes()
        ));
        assert!(!without_quorum(
            400,
            gateway("etcdserver: requested lease not found").as_bytes()
        ));
        assert!(!without_quorum(200, b"{}"));
    }

    /// As etcd 3.4 prints it: seconds in exponent form, to 10 ms.
    #[test]
    fn the_start_time_is_read_rounded_up_with_a_second_for_the_boot_time() {
        let metrics = "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n\
                       # TYPE process_start_time_seconds gauge\n\
                       process_start_time_seconds 1.79578151535e+09\n";
        assert_eq!(start_time_ms(metrics), Some(1_795_781_515_350 + 1_000));
        assert_eq!(start_time_ms("process_start_time_seconds NaN\n"), None);
        assert_eq!(start_time_ms("etcd_server_id{server_id=\"1\"} 1\n"), None);
    }
}
