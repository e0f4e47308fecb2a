//! The client's settings: each with its default, checked once into [`Settings`].

use std::fmt;
use std::time::Duration;

use crate::{Client, Error, Tls, blocking, tls};

/// The default `max_age`: an id is handed out at most this long after it was issued.
pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(1);
/// The default `timeout` of one call: half the default max age, so ids that arrive just in
/// time still have half their freshness left. A batch of the default largest size takes
/// about 25 ms at one worker id's cap of 4,096 ids a millisecond.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(500);
/// The default smallest batch: a client that draws a few ids a second asks for this many
/// at least twice a max age, and throws most of them away (see the crate's docs).
pub const DEFAULT_MIN_BATCH: usize = 64;
/// The default largest batch: the server's default `max_batch`.
pub const DEFAULT_MAX_BATCH: usize = 100_000;
/// The default refill threshold: the next batch is fetched when less than 90% of the
/// current one is left, as Leaf loads its next segment when 10% of the current is used.
pub const DEFAULT_REFILL_BELOW: f64 = 0.9;
/// The largest max age: the client keeps time as monotonic instants, and an id an hour old
/// is not fresh in any sense the option serves.
const MAX_MAX_AGE: Duration = Duration::from_secs(3600);
/// The largest batch: 80 MB of ids in one answer.
const MAX_BATCH_LIMIT: usize = 10_000_000;

/// How the client calls its endpoints.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transport {
    /// gRPC `NextBatch` (the default): endpoints are the servers' gRPC addresses,
    /// `http://HOST:PORT` (`snowmint serve` listens on 50051 by default).
    #[default]
    Grpc,
    /// HTTP `GET /v1/ids?count=N`: endpoints are the servers' HTTP addresses (8080 by
    /// default).
    Http,
}

/// Builds a [`Client`]; from [`Client::builder`].
///
/// ```
/// use std::time::Duration;
/// use snowmint_client::{Client, Transport};
///
/// // Connections are made at the first call, not here.
/// let client = Client::builder()
///     .endpoints(["http://127.0.0.1:50051", "http://127.0.0.1:50052"])
///     .timeout(Duration::from_millis(200))
///     .max_age(Duration::from_millis(500))
///     .batch_sizes(256, 50_000)
///     .monotonic(true)
///     .build_blocking()?;
/// # Ok::<(), snowmint_client::Error>(())
/// ```
#[derive(Clone)]
#[must_use]
pub struct Builder {
    endpoints: Vec<String>,
    transport: Transport,
    timeout: Duration,
    max_age: Duration,
    min_batch: usize,
    max_batch: usize,
    refill_below: f64,
    monotonic: bool,
    auth_token: Option<String>,
    tls: Option<Tls>,
}

/// The settings, checked.
#[derive(Clone)]
pub(crate) struct Settings {
    pub(crate) endpoints: Vec<String>,
    pub(crate) transport: Transport,
    pub(crate) timeout: Duration,
    pub(crate) max_age: Duration,
    pub(crate) min_batch: usize,
    pub(crate) max_batch: usize,
    pub(crate) refill_below: f64,
    pub(crate) monotonic: bool,
    pub(crate) auth_token: Option<String>,
    /// For the `https://` endpoints; `None` when there are none.
    pub(crate) tls: Option<tls::Settings>,
}

impl Default for Builder {
    fn default() -> Builder {
        Builder {
            endpoints: Vec::new(),
            transport: Transport::default(),
            timeout: DEFAULT_TIMEOUT,
            max_age: DEFAULT_MAX_AGE,
            min_batch: DEFAULT_MIN_BATCH,
            max_batch: DEFAULT_MAX_BATCH,
            refill_below: DEFAULT_REFILL_BELOW,
            monotonic: false,
            auth_token: None,
            tls: None,
        }
    }
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("endpoints", &self.endpoints)
            .field("transport", &self.transport)
            .field("timeout", &self.timeout)
            .field("max_age", &self.max_age)
            .field("min_batch", &self.min_batch)
            .field("max_batch", &self.max_batch)
            .field("refill_below", &self.refill_below)
            .field("monotonic", &self.monotonic)
            .field("auth_token", &self.auth_token.as_ref().map(|_| "<hidden>"))
            .field("tls", &self.tls)
            .finish()
    }
}

impl Builder {
    /// The servers to call, in order of preference: `http://HOST:PORT` each, or
    /// `https://HOST:PORT` for a server that speaks TLS (see [`Builder::tls`]). The client
    /// starts with the first and stays with whichever last gave ids.
    pub fn endpoints<I, S>(mut self, endpoints: I) -> Builder
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.endpoints = endpoints.into_iter().map(Into::into).collect();
        self
    }

    /// gRPC (the default) or HTTP.
    pub fn transport(mut self, transport: Transport) -> Builder {
        self.transport = transport;
        self
    }

    /// The longest one call may take, connecting included, before the client moves to the
    /// next endpoint (default 500 ms). Below `max_age`: ids that arrive later than that
    /// are stale already.
    pub fn timeout(mut self, timeout: Duration) -> Builder {
        self.timeout = timeout;
        self
    }

    /// The oldest an id may be when handed out, counted from when the call that fetched it
    /// was sent (default 1 s); older ids are thrown away.
    pub fn max_age(mut self, max_age: Duration) -> Builder {
        self.max_age = max_age;
        self
    }

    /// The smallest and largest batch (default 64 and 100,000). The size starts at the
    /// smallest and follows the rate of use between the two; the largest must not pass
    /// the servers' `max_batch`.
    pub fn batch_sizes(mut self, min: usize, max: usize) -> Builder {
        self.min_batch = min;
        self.max_batch = max;
        self
    }

    /// The share of the current batch left, from 0 to 1, below which the next batch is
    /// fetched (default 0.9). 0 waits until the current batch is used up.
    pub fn refill_below(mut self, share: f64) -> Builder {
        self.refill_below = share;
        self
    }

    /// Throw away ids at or below the last one taken, so ids increase across a failover
    /// too (default off): see the crate's docs for the cost.
    pub fn monotonic(mut self, monotonic: bool) -> Builder {
        self.monotonic = monotonic;
        self
    }

    /// The servers' bearer token (`snowmint serve --auth-token`), sent on every call, over
    /// TLS or not.
    pub fn auth_token(mut self, token: impl Into<String>) -> Builder {
        self.auth_token = Some(token.into());
        self
    }

    /// The TLS settings of the `https://` endpoints: the CA that signs the servers'
    /// certificates, a client certificate, the name to check. Without it, `https://`
    /// endpoints trust the system's CA certificates; `http://` endpoints never use TLS.
    ///
    /// ```no_run
    /// use snowmint_client::{Client, Transport, Tls};
    ///
    /// let client = Client::builder()
    ///     .endpoints(["https://127.0.0.1:8443"])
    ///     .transport(Transport::Http)
    ///     .tls(Tls::new().ca_pem_file("ca.pem")?.domain_name("ids.internal"))
    ///     .build_blocking()?;
    /// # Ok::<(), snowmint_client::Error>(())
    /// ```
    pub fn tls(mut self, tls: Tls) -> Builder {
        self.tls = Some(tls);
        self
    }

    /// The async client, whose background task runs on the current tokio runtime.
    ///
    /// # Errors
    ///
    /// A setting out of range, an endpoint that is no `http://` or `https://` URL, TLS
    /// settings that cannot be used ([`Error::Tls`]), or [`Error::NoRuntime`] outside a
    /// tokio runtime.
    pub fn build(self) -> Result<Client, Error> {
        let handle = tokio::runtime::Handle::try_current().map_err(|_| Error::NoRuntime)?;
        Client::start(self.check()?, &handle)
    }

    /// The blocking client, for code without a runtime: it runs its own, on one thread.
    ///
    /// # Errors
    ///
    /// As [`Builder::build`], and [`Error::InsideRuntime`] inside a tokio runtime.
    pub fn build_blocking(self) -> Result<blocking::Client, Error> {
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(Error::InsideRuntime);
        }
        blocking::Client::start(self.check()?)
    }

    pub(crate) fn check(self) -> Result<Settings, Error> {
        if self.endpoints.is_empty() {
            return Err(Error::NoEndpoints);
        }
        for endpoint in &self.endpoints {
            check_url(endpoint)?;
        }
        let ms = |d: Duration| d.as_millis();
        if self.max_age.is_zero() || self.max_age > MAX_MAX_AGE {
            return Err(Error::OutOfRange {
                setting: "max_age",
                value: format!("{} ms", ms(self.max_age)),
                range: format!("1..={} ms", ms(MAX_MAX_AGE)),
            });
        }
        if self.timeout.is_zero() || self.timeout >= self.max_age {
            return Err(Error::OutOfRange {
                setting: "timeout",
                value: format!("{} ms", ms(self.timeout)),
                range: format!(
                    "1..{} ms: below max_age, or every id would arrive stale",
                    ms(self.max_age)
                ),
            });
        }
        if !(1..=MAX_BATCH_LIMIT).contains(&self.max_batch) {
            return Err(Error::OutOfRange {
                setting: "max_batch",
                value: self.max_batch.to_string(),
                range: format!("1..={MAX_BATCH_LIMIT}"),
            });
        }
        if !(1..=self.max_batch).contains(&self.min_batch) {
            return Err(Error::OutOfRange {
                setting: "min_batch",
                value: self.min_batch.to_string(),
                range: format!("1..={}: at most max_batch", self.max_batch),
            });
        }
        if !(0.0..=1.0).contains(&self.refill_below) {
            return Err(Error::OutOfRange {
                setting: "refill_below",
                value: self.refill_below.to_string(),
                range: "0..=1".into(),
            });
        }
        if let Some(token) = &self.auth_token
            && !token.bytes().all(|b| b.is_ascii_graphic())
        {
            return Err(bad_token());
        }
        let any_https = self
            .endpoints
            .iter()
            .any(|endpoint| endpoint.starts_with("https:"));
        let tls = match (self.tls, any_https) {
            (Some(tls), true) => Some(tls.config()?),
            (None, true) => Some(Tls::new().config()?),
            (Some(_), false) => {
                return Err(Error::Tls(
                    "TLS settings are given but no endpoint is an https:// URL".into(),
                ));
            }
            (None, false) => None,
        };
        Ok(Settings {
            endpoints: self.endpoints,
            transport: self.transport,
            timeout: self.timeout,
            max_age: self.max_age,
            min_batch: self.min_batch,
            max_batch: self.max_batch,
            refill_below: self.refill_below,
            monotonic: self.monotonic,
            auth_token: self.auth_token,
            tls,
        })
    }
}

pub(crate) fn bad_token() -> Error {
    Error::InvalidToken
}

/// `http://HOST[:PORT]` or `https://HOST[:PORT]`, with nothing after but an optional `/`.
fn check_url(endpoint: &str) -> Result<(), Error> {
    let invalid = |reason: &str| Error::InvalidEndpoint {
        endpoint: endpoint.to_string(),
        reason: reason.to_string(),
    };
    let uri: http::Uri = endpoint
        .parse()
        .map_err(|e: http::uri::InvalidUri| invalid(&e.to_string()))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        Some(other) => {
            return Err(invalid(&format!(
                "the scheme is {other}, not http or https"
            )));
        }
        None => return Err(invalid("no scheme")),
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(invalid("no host"));
    }
    if !matches!(uri.path(), "" | "/") || uri.query().is_some() {
        return Err(invalid("a path or query after the address"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(builder: Builder) -> String {
        match builder.check() {
            Ok(_) => panic!("accepted"),
            Err(e) => e.to_string(),
        }
    }

    fn one() -> Builder {
        Builder::default().endpoints(["http://127.0.0.1:50051"])
    }

    #[test]
    fn the_defaults_are_accepted() {
        let settings = one().check().unwrap();
        assert_eq!(settings.max_age, Duration::from_secs(1));
        assert_eq!(settings.timeout, Duration::from_millis(500));
        assert_eq!((settings.min_batch, settings.max_batch), (64, 100_000));
        assert!(!settings.monotonic);
    }

    #[test]
    fn each_setting_out_of_range_is_named_with_its_range() {
        assert_eq!(
            refused(Builder::default()),
            "no endpoint given: a client needs at least one"
        );
        assert_eq!(
            refused(one().max_age(Duration::ZERO)),
            "max_age 0 ms is out of range 1..=3600000 ms"
        );
        assert_eq!(
            refused(one().timeout(Duration::from_secs(1))),
            "timeout 1000 ms is out of range 1..1000 ms: below max_age, or every id would arrive stale"
        );
        assert_eq!(
            refused(one().batch_sizes(1, 0)),
            "max_batch 0 is out of range 1..=10000000"
        );
        assert_eq!(
            refused(one().batch_sizes(500, 100)),
            "min_batch 500 is out of range 1..=100: at most max_batch"
        );
        assert_eq!(
            refused(one().refill_below(1.5)),
            "refill_below 1.5 is out of range 0..=1"
        );
        assert_eq!(
            refused(one().refill_below(f64::NAN)),
            "refill_below NaN is out of range 0..=1"
        );
        assert_eq!(
            refused(one().auth_token("two words")),
            "auth_token cannot go in a header: use visible ASCII characters only, no spaces"
        );
    }

    #[test]
    fn an_endpoint_that_is_no_http_or_https_url_is_named_with_the_reason() {
        let bad = |url: &str| refused(Builder::default().endpoints([url]));
        assert_eq!(
            bad("127.0.0.1:50051"),
            "endpoint \"127.0.0.1:50051\" is not an http(s)://HOST:PORT URL: no scheme"
        );
        assert_eq!(
            bad("ftp://example.test:443"),
            "endpoint \"ftp://example.test:443\" is not an http(s)://HOST:PORT URL: the scheme is ftp, not http or https"
        );
        assert_eq!(
            bad("http://127.0.0.1:8080/v1/ids"),
            "endpoint \"http://127.0.0.1:8080/v1/ids\" is not an http(s)://HOST:PORT URL: a path or query after the address"
        );
        assert_eq!(
            bad("http://"),
            "endpoint \"http://\" is not an http(s)://HOST:PORT URL: empty string"
        );
    }

    #[test]
    fn https_endpoints_take_tls_and_http_ones_need_none() {
        let https =
            Builder::default().endpoints(["https://127.0.0.1:8443", "http://127.0.0.1:8080"]);
        assert!(https.check().unwrap().tls.is_some(), "the system's CAs");
        assert!(one().check().unwrap().tls.is_none());
        assert_eq!(
            refused(one().tls(Tls::new())),
            "tls: TLS settings are given but no endpoint is an https:// URL"
        );
        assert_eq!(
            refused(
                Builder::default()
                    .endpoints(["https://127.0.0.1:8443"])
                    .tls(Tls::new().domain_name("not a name"))
            ),
            "tls: domain_name \"not a name\": invalid dns name"
        );
    }

    #[test]
    fn the_token_is_never_shown() {
        let debug = format!("{:?}", one().auth_token("s3cret"));
        assert!(!debug.contains("s3cret"), "{debug}");
    }
}
