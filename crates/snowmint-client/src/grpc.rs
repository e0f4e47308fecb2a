//! Batches over gRPC: `snowmint.v1.IdService/NextBatch`, one call a batch.
//!
//! Not `Stream`: a streaming server issues the next message as soon as the transport has
//! room for it, so ids are issued ahead of the reader and age unseen, and a message says
//! nothing of when its ids were issued but that it was after the stream began. A
//! `NextBatch` sent at `t` gets ids issued after `t`: that is what bounds their age.

use hyper_util::client::legacy::connect::HttpConnector;
use tonic::Code;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::transport::{Channel, Endpoint};

use crate::builder::Settings;
use crate::endpoint::CallError;
use crate::error::{Error, chain};
use crate::tls;

use snowmint_proto::v1::NextBatchRequest;
use snowmint_proto::v1::id_service_client::IdServiceClient;

/// Bytes of one id in `Ids` (a packed `fixed64`), and the most around them in a message.
const ID_BYTES: usize = 8;
const AROUND: usize = 64;

pub(crate) struct Conn {
    client: IdServiceClient<Channel>,
    token: Option<MetadataValue<Ascii>>,
    /// For an `https://` endpoint: its TLS settings and URL, to [`tls::probe`] it.
    tls: Option<(tls::Settings, String)>,
}

impl Conn {
    /// A channel to `url`, connected at its first call (and again after a failure).
    pub(crate) fn new(url: &str, settings: &Settings) -> Result<Conn, Error> {
        let invalid = |reason: String| Error::InvalidEndpoint {
            endpoint: url.to_string(),
            reason,
        };
        let endpoint = Endpoint::from_shared(url.to_string())
            .map_err(|e| invalid(chain(&e)))?
            .connect_timeout(settings.timeout)
            .tcp_nodelay(true);
        let tls = settings
            .tls
            .clone()
            .filter(|_| url.starts_with("https:"))
            .map(|tls| (tls, url.to_string()));
        let channel = match &tls {
            Some((tls, _)) => {
                // tonic's own connector is not used: its timeout and nodelay are set here.
                let mut tcp = HttpConnector::new();
                tcp.enforce_http(false);
                tcp.set_nodelay(true);
                tcp.set_connect_timeout(Some(settings.timeout));
                endpoint.connect_with_connector_lazy(tls.connector(tcp, true))
            }
            None => endpoint.connect_lazy(),
        };
        let client = IdServiceClient::new(channel)
            .max_decoding_message_size(settings.max_batch * ID_BYTES + AROUND);
        let token = match &settings.auth_token {
            Some(token) => Some(
                format!("Bearer {token}")
                    .parse()
                    .map_err(|_| crate::builder::bad_token())?,
            ),
            None => None,
        };
        Ok(Conn { client, token, tls })
    }

    pub(crate) async fn fetch(&mut self, count: usize) -> Result<Vec<u64>, CallError> {
        let mut request = tonic::Request::new(NextBatchRequest {
            count: count as u64,
        });
        if let Some(token) = &self.token {
            request
                .metadata_mut()
                .insert("authorization", token.clone());
        }
        match self.client.next_batch(request).await {
            Ok(response) => Ok(response.into_inner().ids),
            Err(status) => {
                let never_answered = std::error::Error::source(&status).is_some();
                if never_answered
                    && tls::explain(&status).is_none()
                    && let Some((tls, url)) = &self.tls
                    && let Some(reason) = tls::probe(tls, url).await
                {
                    return Err(CallError::failed(reason));
                }
                Err(describe(&status))
            }
        }
    }
}

/// A failed call in words: the server's own, with its status, when it answered; the cause
/// when the call never reached it, a failed TLS handshake said as such.
fn describe(status: &tonic::Status) -> CallError {
    if let Some(tls) = tls::explain(status) {
        return CallError::failed(tls);
    }
    let answered = std::error::Error::source(status).is_none();
    if answered && status.code() == Code::Unavailable {
        return CallError {
            not_ready: true,
            error: status.message().to_string(),
        };
    }
    let error = if answered {
        format!("{}: {}", code_name(status.code()), status.message())
    } else {
        let cause = std::error::Error::source(status).map_or_else(String::new, chain);
        if status.message().is_empty() || cause.contains(status.message()) {
            cause
        } else {
            format!("{}: {cause}", status.message())
        }
    };
    CallError::failed(error)
}

/// A status code as the gRPC specification names it, lowercase.
fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "ok",
        Code::Cancelled => "cancelled",
        Code::Unknown => "unknown",
        Code::InvalidArgument => "invalid argument",
        Code::DeadlineExceeded => "deadline exceeded",
        Code::NotFound => "not found",
        Code::AlreadyExists => "already exists",
        Code::PermissionDenied => "permission denied",
        Code::ResourceExhausted => "resource exhausted",
        Code::FailedPrecondition => "failed precondition",
        Code::Aborted => "aborted",
        Code::OutOfRange => "out of range",
        Code::Unimplemented => "unimplemented",
        Code::Internal => "internal",
        Code::Unavailable => "unavailable",
        Code::DataLoss => "data loss",
        Code::Unauthenticated => "unauthenticated",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_refusal_is_told_in_its_words_with_its_status() {
        let not_ready = describe(&tonic::Status::unavailable("clock is behind"));
        assert_eq!(
            not_ready,
            CallError {
                not_ready: true,
                error: "clock is behind".into()
            }
        );
        let refused = describe(&tonic::Status::invalid_argument(
            "count 200000 is out of range 1..=100000",
        ));
        assert_eq!(
            refused,
            CallError::failed("invalid argument: count 200000 is out of range 1..=100000")
        );
    }
}
