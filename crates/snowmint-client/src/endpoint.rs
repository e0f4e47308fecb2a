//! The servers a client calls, and a round of calls across them: the current endpoint
//! first, then each other in turn, those that failed lately last.

use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use crate::builder::{Settings, Transport};
use crate::error::{EndpointFailure, Error};
use crate::segment::Segment;
use crate::stats::Counters;
use crate::{grpc, http};

/// How long an endpoint that failed goes to the back of the order at first; each failure
/// in a row doubles it, up to [`MAX_SKIP`].
const FIRST_SKIP: Duration = Duration::from_millis(100);
/// The longest an endpoint that keeps failing goes to the back of the order: when it is
/// back, the client finds out within this time of needing it.
const MAX_SKIP: Duration = Duration::from_secs(5);

/// Why one call gave no ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallError {
    /// The server said it may not issue ids now.
    pub(crate) not_ready: bool,
    pub(crate) error: String,
}

impl CallError {
    pub(crate) fn failed(error: impl Into<String>) -> CallError {
        CallError {
            not_ready: false,
            error: error.into(),
        }
    }
}

enum Conn {
    Grpc(grpc::Conn),
    Http(http::Conn),
}

struct Endpoint {
    url: String,
    conn: Conn,
    /// Until when it goes to the back of the order, after a failure.
    skip_until: Option<Instant>,
    skip: Duration,
    failure: Option<CallError>,
}

/// Every endpoint, owned by the refill task.
pub(crate) struct Endpoints {
    list: Vec<Endpoint>,
    /// The endpoint the last batch came from; the next round starts there.
    current: usize,
    timeout: Duration,
    max_age: Duration,
    refill_below: f64,
}

impl Endpoints {
    /// A connection to each endpoint, made lazily at its first call; inside a tokio runtime.
    pub(crate) fn new(settings: &Settings) -> Result<Endpoints, Error> {
        let list = settings
            .endpoints
            .iter()
            .map(|url| {
                let conn = match settings.transport {
                    Transport::Grpc => Conn::Grpc(grpc::Conn::new(url, settings)?),
                    Transport::Http => Conn::Http(http::Conn::new(url, settings)?),
                };
                Ok(Endpoint {
                    url: url.clone(),
                    conn,
                    skip_until: None,
                    skip: FIRST_SKIP,
                    failure: None,
                })
            })
            .collect::<Result<_, Error>>()?;
        Ok(Endpoints {
            list,
            current: 0,
            timeout: settings.timeout,
            max_age: settings.max_age,
            refill_below: settings.refill_below,
        })
    }

    /// The order of a round: the current endpoint and those after it, cyclically; those
    /// skipped for a failure after every other, the soonest back first.
    fn order(&self, now: Instant) -> Vec<usize> {
        let n = self.list.len();
        let mut order: Vec<usize> = (0..n).map(|k| (self.current + k) % n).collect();
        order.sort_by_key(|&i| self.list[i].skip_until.filter(|&until| until > now));
        order
    }

    /// Asks each endpoint in turn for `count` ids, each call bounded by the timeout, until
    /// one gives them; each endpoint is called at most once.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`], naming each endpoint and its last error, when none did.
    pub(crate) async fn round(
        &mut self,
        count: usize,
        counters: &Counters,
    ) -> Result<Segment, Error> {
        let order = self.order(Instant::now());
        for &i in &order {
            let sent = Instant::now();
            let endpoint = &mut self.list[i];
            let outcome = match tokio::time::timeout(self.timeout, endpoint.conn.fetch(count)).await
            {
                Ok(Ok(ids)) => check(ids, count),
                Ok(Err(e)) => Err(e),
                Err(_) => Err(CallError::failed(format!(
                    "timed out after {} ms",
                    self.timeout.as_millis()
                ))),
            };
            match outcome {
                Ok(ids) => {
                    endpoint.skip_until = None;
                    endpoint.skip = FIRST_SKIP;
                    if i != self.current {
                        counters.failovers.fetch_add(1, Relaxed);
                        self.current = i;
                    }
                    return Ok(Segment::new(ids, sent, self.max_age, self.refill_below, i));
                }
                Err(e) => {
                    endpoint.skip_until = Some(Instant::now() + endpoint.skip);
                    endpoint.skip = (endpoint.skip * 2).min(MAX_SKIP);
                    endpoint.failure = Some(e);
                }
            }
        }
        Err(Error::Unavailable(
            order
                .iter()
                .map(|&i| {
                    let endpoint = &self.list[i];
                    let failure = endpoint
                        .failure
                        .clone()
                        .unwrap_or_else(|| CallError::failed("not called"));
                    EndpointFailure {
                        endpoint: endpoint.url.clone(),
                        not_ready: failure.not_ready,
                        error: failure.error,
                    }
                })
                .collect(),
        ))
    }
}

impl Conn {
    async fn fetch(&mut self, count: usize) -> Result<Vec<u64>, CallError> {
        match self {
            Conn::Grpc(conn) => conn.fetch(count).await,
            Conn::Http(conn) => conn.fetch(count).await,
        }
    }
}

/// The promises the buffer relies on, checked rather than trusted: some ids, no more than
/// asked for, strictly increasing (so none twice).
fn check(ids: Vec<u64>, count: usize) -> Result<Vec<u64>, CallError> {
    if ids.is_empty() {
        return Err(CallError::failed("answered no ids"));
    }
    if ids.len() > count {
        return Err(CallError::failed(format!(
            "answered {} ids, more than the {count} asked for",
            ids.len()
        )));
    }
    if let Some(pair) = ids.windows(2).find(|pair| pair[0] >= pair[1]) {
        return Err(CallError::failed(format!(
            "answered ids out of order: {} then {}",
            pair[0], pair[1]
        )));
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Builder;

    #[tokio::test]
    async fn a_round_starts_at_the_current_endpoint_and_tries_those_failing_lately_last() {
        let settings = Builder::default()
            .endpoints([
                "http://127.0.0.1:1",
                "http://127.0.0.1:2",
                "http://127.0.0.1:3",
            ])
            .check()
            .unwrap();
        let mut endpoints = Endpoints::new(&settings).unwrap();
        let now = Instant::now();
        assert_eq!(endpoints.order(now), vec![0, 1, 2]);
        endpoints.current = 1;
        assert_eq!(
            endpoints.order(now),
            vec![1, 2, 0],
            "from the current, in turn"
        );
        endpoints.list[2].skip_until = Some(now + Duration::from_secs(2));
        endpoints.list[1].skip_until = Some(now + Duration::from_secs(1));
        assert_eq!(
            endpoints.order(now),
            vec![0, 1, 2],
            "the soonest back first"
        );
        assert_eq!(
            endpoints.order(now + Duration::from_secs(1)),
            vec![1, 0, 2],
            "back in turn once its time is over"
        );
    }

    #[test]
    fn a_batch_that_breaks_a_promise_is_refused_with_the_reason() {
        assert_eq!(check(vec![1, 2, 3], 3), Ok(vec![1, 2, 3]));
        assert_eq!(check(vec![], 3).unwrap_err().error, "answered no ids");
        assert_eq!(
            check(vec![1, 2, 3], 2).unwrap_err().error,
            "answered 3 ids, more than the 2 asked for"
        );
        assert_eq!(
            check(vec![1, 5, 5], 3).unwrap_err().error,
            "answered ids out of order: 5 then 5"
        );
    }
}
