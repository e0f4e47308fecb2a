//! The client's one error type.

use std::fmt;
use std::sync::Arc;

/// Why a client could not be built, or could not hand out an id.
///
/// ```
/// use snowmint_client::{Client, Error};
///
/// let err = Client::builder().build_blocking().unwrap_err();
/// assert!(matches!(err, Error::NoEndpoints));
/// assert_eq!(err.to_string(), "no endpoint given: a client needs at least one");
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The builder was given no endpoint.
    #[error("no endpoint given: a client needs at least one")]
    NoEndpoints,
    /// An endpoint is not a URL the client can call.
    #[error("endpoint {endpoint:?} is not an http(s)://HOST:PORT URL: {reason}")]
    InvalidEndpoint {
        /// The endpoint as given.
        endpoint: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A setting is out of its range.
    #[error("{setting} {value} is out of range {range}")]
    OutOfRange {
        /// The setting's name, as the builder method that sets it.
        setting: &'static str,
        /// The value given, with its unit.
        value: String,
        /// The values allowed, with their unit and, when another setting bounds it, why.
        range: String,
    },
    /// The bearer token has a character a header cannot carry. The token itself is never
    /// repeated in an error.
    #[error("auth_token cannot go in a header: use visible ASCII characters only, no spaces")]
    InvalidToken,
    /// A TLS file (the CA file, the client certificate or its key) cannot be read or holds
    /// nothing usable. The key itself is never repeated in an error.
    #[error("{file} {}: {reason}", path.display())]
    TlsFile {
        /// Which file: `CA file`, `client certificate file` or `client key file`.
        file: &'static str,
        /// The file as named.
        path: std::path::PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The TLS settings cannot be used: a client certificate and key that do not belong
    /// together, a domain name that is no name, no CA to trust, or TLS given with no
    /// `https://` endpoint.
    #[error("tls: {0}")]
    Tls(String),
    /// [`Builder::build`](crate::Builder::build) was called outside a tokio runtime.
    #[error("no tokio runtime: build the async client inside one, or use Builder::build_blocking")]
    NoRuntime,
    /// [`Builder::build_blocking`](crate::Builder::build_blocking) was called inside a tokio
    /// runtime, where a blocking call would stall the runtime's thread.
    #[error("a blocking client cannot run inside a tokio runtime: use Builder::build there")]
    InsideRuntime,
    /// The blocking client's runtime could not start.
    #[error("cannot start the client's runtime: {0}")]
    Runtime(#[source] Arc<std::io::Error>),
    /// The buffer is empty and no endpoint gave ids in the last round of calls: each
    /// endpoint with its last error, in the order they were tried.
    #[error("no endpoint gave ids: {}", Failures(.0))]
    Unavailable(Vec<EndpointFailure>),
}

/// One endpoint's last failure.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EndpointFailure {
    /// The endpoint, as given to the builder.
    pub endpoint: String,
    /// Whether the server answered that it may not issue ids now (HTTP 503, gRPC
    /// `UNAVAILABLE` from the server itself): its lease is not confirmed, its clock is
    /// behind, or it is shutting down.
    pub not_ready: bool,
    /// What went wrong, in the server's words when it answered.
    pub error: String,
}

impl fmt::Display for EndpointFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ready = if self.not_ready { "not ready: " } else { "" };
        write!(f, "{} ({ready}{})", self.endpoint, self.error)
    }
}

struct Failures<'a>(&'a [EndpointFailure]);

impl fmt::Display for Failures<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, failure) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{failure}")?;
        }
        Ok(())
    }
}

/// An error and its sources, joined by ": ", each said once (transport errors often repeat
/// their source's words in their own).
pub(crate) fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let said = cause.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outage_names_every_endpoint_and_its_last_error_in_order() {
        let err = Error::Unavailable(vec![
            EndpointFailure {
                endpoint: "http://127.0.0.1:1".into(),
                not_ready: false,
                error: "timed out after 200 ms".into(),
            },
            EndpointFailure {
                endpoint: "http://127.0.0.1:2".into(),
                not_ready: true,
                error: "clock is behind".into(),
            },
        ]);
        assert_eq!(
            err.to_string(),
            "no endpoint gave ids: http://127.0.0.1:1 (timed out after 200 ms); \
             http://127.0.0.1:2 (not ready: clock is behind)"
        );
    }

    #[test]
    fn a_chain_says_each_cause_once() {
        #[derive(Debug)]
        struct Outer(std::io::Error);
        impl fmt::Display for Outer {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "connect failed: {}", self.0)
            }
        }
        impl std::error::Error for Outer {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        assert_eq!(chain(&Outer(refused)), "connect failed: refused");
    }
}
