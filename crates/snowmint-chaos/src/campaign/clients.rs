//! Clients that draw ids from every server all through the campaign, over HTTP (`/v1/id`,
//! `/v1/ids`, serials) and gRPC (`NextBatch`, `Stream`). Every answer goes to the checker
//! with the times it was asked and received; every failure is counted by kind.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use snowmint::Layout;
use snowmint::serial::{Template, Zone};
use tokio::net::TcpStream;
use tokio::time::timeout;

use super::checker::{Answer, Readiness, ReadyPoll, Via};
use super::fleet::{MAX_BATCH, Target, Targets};
use super::{Epoch, Event};

/// Every request answers within this, or counts as a timeout.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// Connecting takes at most this.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// The pause before trying a server again after a failure: bounds the retry rate.
const RETRY_PAUSE: Duration = Duration::from_millis(25);
/// How often each server's `/readyz` is polled.
const READY_EVERY: Duration = Duration::from_millis(100);
/// The longest pause of one client keeping to the rate.
const PACE_STEP: Duration = Duration::from_millis(200);
/// The business code of the serials drawn.
const BIZ: &str = "CHAOS";
/// Ids per message and per stream, for `Stream`.
const STREAM_BATCH: u64 = 2_000;
const STREAM_TOTAL: u64 = 200_000;

use snowmint_proto::v1::id_service_client::IdServiceClient;
use snowmint_proto::v1::{NextBatchRequest, StreamRequest};

/// A failure, by kind: digits dropped, so that like failures count together.
/// An HTTP status in front (`503: ...`) is kept.
fn kind(text: &str) -> String {
    let (mut out, rest) = match text.split_once(": ") {
        Some((status, rest)) if status.len() == 3 && status.parse::<u16>().is_ok() => {
            (format!("{status}: "), rest)
        }
        _ => (String::new(), text),
    };
    let mut in_digits = false;
    for c in rest.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('N');
            }
            in_digits = true;
        } else {
            out.push(c);
            in_digits = false;
        }
    }
    out.chars().take(140).collect()
}

/// What the clients share.
#[derive(Clone)]
pub struct Shared {
    pub targets: Targets,
    pub events: mpsc::Sender<Event>,
    pub epoch: Epoch,
    pub stop: Arc<AtomicBool>,
    /// At most this many ids a second, fleet-wide, if set.
    pub rate: Option<u64>,
    /// Ids drawn so far by every client.
    pub drawn: Arc<std::sync::atomic::AtomicU64>,
}

impl Shared {
    fn target(&self, slot: usize) -> Option<Target> {
        *self.targets[slot].read().unwrap_or_else(|e| e.into_inner())
    }

    /// The slot's current process and a connection to it: the one kept in `conn` while that
    /// process lives, else a new one from `open`, kept for the next call. `None`, after a
    /// pause, when the slot has no process or the connection cannot be made (the failure is
    /// counted against `via`).
    async fn connection<'c, C, Open, Opening>(
        &self,
        slot: usize,
        via: Via,
        conn: &'c mut Option<(u32, C)>,
        open: Open,
    ) -> Option<(Target, &'c mut C)>
    where
        Open: FnOnce(Target) -> Opening,
        Opening: std::future::Future<Output = Result<C, String>>,
    {
        let Some(target) = self.target(slot) else {
            tokio::time::sleep(RETRY_PAUSE).await;
            return None;
        };
        if conn
            .as_ref()
            .is_none_or(|(incarnation, _)| *incarnation != target.incarnation)
        {
            match open(target).await {
                Ok(opened) => *conn = Some((target.incarnation, opened)),
                Err(err) => {
                    self.error(via, &err);
                    tokio::time::sleep(RETRY_PAUSE).await;
                    return None;
                }
            }
        }
        let (_, connected) = conn.as_mut()?;
        Some((target, connected))
    }

    fn error(&self, via: Via, what: &str) {
        let _ = self
            .events
            .send(Event::ClientError(format!("{via:?}: {}", kind(what))));
    }

    /// Sends `answer` to the checker and, under a rate, waits while the clients are ahead
    /// of it (at most [`PACE_STEP`] at a time, so that a stop is seen).
    async fn deliver(&self, answer: Answer) {
        let n = answer.ids.len() as u64;
        let _ = self.events.send(Event::Answer(answer));
        let drawn = self.drawn.fetch_add(n, Ordering::Relaxed) + n;
        if let Some(rate) = self.rate {
            let due_us = drawn.saturating_mul(1_000_000) / rate.max(1);
            let now = self.epoch.now();
            if due_us > now {
                tokio::time::sleep(Duration::from_micros(due_us - now).min(PACE_STEP)).await;
            }
        }
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Starts every client of every slot, and the `/readyz` pollers.
pub fn spawn_all(shared: &Shared, runtime: &tokio::runtime::Handle, seed: u64) {
    for slot in 0..shared.targets.len() {
        for via in [Via::HttpOne, Via::HttpMany, Via::Serials] {
            let shared = shared.clone();
            let seed = seed ^ ((slot as u64) << 8) ^ via as u64;
            runtime.spawn(async move { http_client(shared, slot, via, seed).await });
        }
        let shared_grpc = shared.clone();
        runtime.spawn(async move { grpc_batches(shared_grpc, slot, seed ^ slot as u64).await });
        let shared_stream = shared.clone();
        runtime.spawn(async move { grpc_streams(shared_stream, slot).await });
        let shared_ready = shared.clone();
        runtime.spawn(async move { ready_poller(shared_ready, slot).await });
    }
}

/// A small deterministic generator for batch sizes (xorshift64*).
struct Sizes(u64);

impl Sizes {
    fn next(&mut self, max: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        1 + self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % max
    }
}

async fn connect(addr: SocketAddr) -> Result<SendRequest<Empty<Bytes>>, String> {
    let stream = match timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
        Err(_) => return Err("connect timeout".into()),
        Ok(Err(err)) if err.kind() == std::io::ErrorKind::ConnectionRefused => {
            return Err("connection refused".into());
        }
        Ok(Err(err)) => return Err(format!("connect: {}", err.kind())),
        Ok(Ok(stream)) => stream,
    };
    let _ = stream.set_nodelay(true);
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    tokio::spawn(conn);
    Ok(sender)
}

/// One GET on `sender`: its status and body, or why not.
async fn get(sender: &mut SendRequest<Empty<Bytes>>, path: &str) -> Result<(u16, Bytes), String> {
    let call = async {
        sender
            .ready()
            .await
            .map_err(|e| format!("connection: {e}"))?;
        let request = http::Request::get(path)
            .header(http::header::HOST, "127.0.0.1")
            .body(Empty::new())
            .map_err(|e| e.to_string())?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| format!("request: {e}"))?;
        let status = response.status().as_u16();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("body: {e}"))?
            .to_bytes();
        Ok((status, body))
    };
    match timeout(REQUEST_TIMEOUT, call).await {
        Ok(result) => result,
        Err(_) => Err("timeout".into()),
    }
}

/// The `"error"` of a JSON error body, or the body's start.
fn reason(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v["error"].as_str().map(str::to_string))
        .unwrap_or_else(|| text.chars().take(80).collect())
}

/// The decimal ids in a JSON body (`{"id":"1"}`, `{"ids":["1","2"]}`): its digit runs.
fn decimal_ids(body: &[u8]) -> Result<Vec<u64>, String> {
    let mut ids = Vec::new();
    let mut current: Option<u64> = None;
    for &b in body {
        if b.is_ascii_digit() {
            let digit = u64::from(b - b'0');
            let value = current.unwrap_or(0);
            current = Some(
                value
                    .checked_mul(10)
                    .and_then(|v| v.checked_add(digit))
                    .ok_or("an id past u64")?,
            );
        } else if let Some(id) = current.take() {
            ids.push(id);
        }
    }
    if let Some(id) = current {
        ids.push(id);
    }
    Ok(ids)
}

/// The ids the serials of `{"serials":[...]}` were made from.
fn serial_ids(body: &[u8], template: &Template) -> Result<Vec<u64>, String> {
    let text = std::str::from_utf8(body).map_err(|e| e.to_string())?;
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let serials = value["serials"].as_array().ok_or("no serials")?;
    serials
        .iter()
        .map(|s| {
            let s = s.as_str().ok_or("a serial that is not a string")?;
            template
                .parse_serial(s, &Zone::UTC)
                .map(|parsed| parsed.id.as_u64())
                .map_err(|e| format!("serial {s:?} does not parse: {e}"))
        })
        .collect()
}

async fn http_client(shared: Shared, slot: usize, via: Via, seed: u64) {
    let mut sizes = Sizes(seed | 1);
    let template = Template::new(&Layout::TWITTER);
    let mut conn: Option<(u32, SendRequest<Empty<Bytes>>)> = None;
    while !shared.stopped() {
        let Some((target, sender)) = shared
            .connection(slot, via, &mut conn, |t| connect(t.http))
            .await
        else {
            continue;
        };
        let path = match via {
            Via::HttpOne => "/v1/id".to_string(),
            Via::HttpMany => format!("/v1/ids?count={}", sizes.next(MAX_BATCH / 5)),
            _ => format!("/v1/serials/{BIZ}?count={}", sizes.next(1_000)),
        };
        let sent = shared.epoch.now();
        match get(sender, &path).await {
            Ok((200, body)) => {
                let received = shared.epoch.now();
                let ids = if via == Via::Serials {
                    serial_ids(&body, &template)
                } else {
                    decimal_ids(&body)
                };
                match ids {
                    Ok(ids) => {
                        shared
                            .deliver(Answer {
                                incarnation: target.incarnation,
                                via,
                                sent,
                                received,
                                after: None,
                                ids,
                            })
                            .await;
                    }
                    Err(err) => shared.error(via, &format!("bad body: {err}")),
                }
            }
            Ok((status, body)) => {
                shared.error(via, &format!("{status}: {}", reason(&body)));
                tokio::time::sleep(RETRY_PAUSE).await;
            }
            Err(err) => {
                shared.error(via, &err);
                conn = None;
                tokio::time::sleep(RETRY_PAUSE).await;
            }
        }
    }
}

async fn grpc_client(
    target: &Target,
) -> Result<IdServiceClient<tonic::transport::Channel>, String> {
    let endpoint = tonic::transport::Endpoint::from_shared(format!("http://{}", target.grpc))
        .map_err(|e| e.to_string())?
        .connect_timeout(CONNECT_TIMEOUT)
        .tcp_nodelay(true);
    let channel = match timeout(CONNECT_TIMEOUT, endpoint.connect()).await {
        Ok(Ok(channel)) => channel,
        Ok(Err(err)) => {
            let text = format!("{err:?}");
            return Err(if text.contains("ConnectionRefused") {
                "connection refused".into()
            } else {
                format!("connect: {err}")
            });
        }
        Err(_) => return Err("connect timeout".into()),
    };
    Ok(IdServiceClient::new(channel).max_decoding_message_size(64 << 20))
}

fn status_kind(status: &tonic::Status) -> String {
    format!("{:?}: {}", status.code(), status.message())
}

async fn grpc_batches(shared: Shared, slot: usize, seed: u64) {
    let via = Via::GrpcBatch;
    let mut sizes = Sizes(seed | 1);
    let mut conn: Option<(u32, IdServiceClient<tonic::transport::Channel>)> = None;
    while !shared.stopped() {
        let Some((target, client)) = shared
            .connection(
                slot,
                via,
                &mut conn,
                |t| async move { grpc_client(&t).await },
            )
            .await
        else {
            continue;
        };
        let sent = shared.epoch.now();
        let call = client.next_batch(NextBatchRequest {
            count: sizes.next(MAX_BATCH / 5),
        });
        match timeout(REQUEST_TIMEOUT, call).await {
            Ok(Ok(response)) => {
                let received = shared.epoch.now();
                shared
                    .deliver(Answer {
                        incarnation: target.incarnation,
                        via,
                        sent,
                        received,
                        after: None,
                        ids: response.into_inner().ids,
                    })
                    .await;
            }
            Ok(Err(status)) => {
                shared.error(via, &status_kind(&status));
                tokio::time::sleep(RETRY_PAUSE).await;
            }
            Err(_) => {
                shared.error(via, "timeout");
                conn = None;
            }
        }
    }
}

async fn grpc_streams(shared: Shared, slot: usize) {
    let via = Via::GrpcStream;
    while !shared.stopped() {
        let Some(target) = shared.target(slot) else {
            tokio::time::sleep(RETRY_PAUSE).await;
            continue;
        };
        let mut client = match grpc_client(&target).await {
            Ok(client) => client,
            Err(err) => {
                shared.error(via, &err);
                tokio::time::sleep(RETRY_PAUSE).await;
                continue;
            }
        };
        while !shared.stopped() {
            let opened = shared.epoch.now();
            let call = client.stream(StreamRequest {
                batch_size: STREAM_BATCH,
                total: STREAM_TOTAL,
            });
            let mut stream = match timeout(REQUEST_TIMEOUT, call).await {
                Ok(Ok(response)) => response.into_inner(),
                Ok(Err(status)) => {
                    shared.error(via, &status_kind(&status));
                    tokio::time::sleep(RETRY_PAUSE).await;
                    break;
                }
                Err(_) => {
                    shared.error(via, "timeout");
                    break;
                }
            };
            let mut last = None;
            loop {
                match timeout(REQUEST_TIMEOUT, stream.message()).await {
                    Ok(Ok(Some(message))) => {
                        let received = shared.epoch.now();
                        let after = last;
                        last = message.ids.last().copied().or(last);
                        shared
                            .deliver(Answer {
                                incarnation: target.incarnation,
                                via,
                                sent: opened,
                                received,
                                after,
                                ids: message.ids,
                            })
                            .await;
                    }
                    Ok(Ok(None)) => break,
                    Ok(Err(status)) => {
                        shared.error(via, &status_kind(&status));
                        tokio::time::sleep(RETRY_PAUSE).await;
                        break;
                    }
                    Err(_) => {
                        shared.error(via, "timeout");
                        break;
                    }
                }
                if shared.stopped() {
                    break;
                }
            }
            if shared
                .target(slot)
                .is_none_or(|t| t.incarnation != target.incarnation)
            {
                break;
            }
        }
    }
}

/// Polls `/readyz` of the slot's current process every [`READY_EVERY`], on a new
/// connection each time.
async fn ready_poller(shared: Shared, slot: usize) {
    while !shared.stopped() {
        tokio::time::sleep(READY_EVERY).await;
        let Some(target) = shared.target(slot) else {
            continue;
        };
        let sent = shared.epoch.now();
        let answer = match connect(target.http).await {
            Ok(mut sender) => get(&mut sender, "/readyz").await,
            Err(err) => Err(err),
        };
        let received = shared.epoch.now();
        let state = match answer {
            Ok((200, _)) => Readiness::Ready,
            Ok((_, body)) => {
                let why = reason(&body);
                if why.contains("not confirmed") || why.contains("acquiring a worker id") {
                    Readiness::NotConfirmed
                } else {
                    Readiness::OtherNotReady
                }
            }
            Err(_) => Readiness::Silent,
        };
        let _ = shared.events.send(Event::Ready(ReadyPoll {
            incarnation: target.incarnation,
            sent,
            received,
            state,
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_give_their_ids() {
        assert_eq!(decimal_ids(br#"{"id":"42"}"#).unwrap(), [42]);
        assert_eq!(decimal_ids(br#"{"ids":["1","23"]}"#).unwrap(), [1, 23]);
        assert!(decimal_ids(b"99999999999999999999").is_err());
        assert_eq!(
            kind("503: clock is 120 ms behind"),
            "503: clock is N ms behind"
        );
    }
}
