//! Batches over HTTP/1.1: `GET /v1/ids?count=N` as plain text, one decimal id a line, on
//! a kept-alive connection, over TLS for an `https://` endpoint.

use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, HeaderValue};
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use crate::builder::Settings;
use crate::endpoint::CallError;
use crate::error::{Error, chain};
use crate::tls;

/// The connection pool of one endpoint: plain or TLS, as its URL's scheme says.
enum Pool {
    Plain(Client<HttpConnector, Empty<Bytes>>),
    Tls(Client<HttpsConnector<HttpConnector>, Empty<Bytes>>),
}

pub(crate) struct Conn {
    client: Pool,
    /// For an `https://` endpoint: its TLS settings, to [`tls::probe`] it.
    tls: Option<tls::Settings>,
    /// `http://host:port`, without a trailing slash.
    base: String,
    token: Option<HeaderValue>,
}

impl Conn {
    pub(crate) fn new(url: &str, settings: &Settings) -> Result<Conn, Error> {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(settings.timeout));
        connector.set_nodelay(true);
        let builder = Client::builder(TokioExecutor::new());
        let client = match (&settings.tls, url.starts_with("https:")) {
            (Some(tls), true) => {
                connector.enforce_http(false);
                Pool::Tls(builder.build(tls.connector(connector, false)))
            }
            _ => Pool::Plain(builder.build(connector)),
        };
        let token = match &settings.auth_token {
            Some(token) => Some(
                HeaderValue::from_str(&format!("Bearer {token}"))
                    .map_err(|_| crate::builder::bad_token())?,
            ),
            None => None,
        };
        Ok(Conn {
            client,
            tls: settings.tls.clone().filter(|_| url.starts_with("https:")),
            base: url.trim_end_matches('/').to_string(),
            token,
        })
    }

    pub(crate) async fn fetch(&mut self, count: usize) -> Result<Vec<u64>, CallError> {
        let mut request = Request::get(format!("{}/v1/ids?count={count}", self.base))
            .header(ACCEPT, "text/plain");
        if let Some(token) = &self.token {
            request = request.header(AUTHORIZATION, token.clone());
        }
        let request = request
            .body(Empty::new())
            .map_err(|e| CallError::failed(chain(&e)))?;
        let response = match &self.client {
            Pool::Plain(client) => client.request(request).await,
            Pool::Tls(client) => client.request(request).await,
        };
        let response = match response {
            Ok(response) => response,
            Err(e) => {
                if let Some(explained) = tls::explain(&e) {
                    return Err(CallError::failed(explained));
                }
                // The request may have met the closed socket before the server's alert.
                if let Some(tls) = &self.tls
                    && let Some(reason) = tls::probe(tls, &self.base).await
                {
                    return Err(CallError::failed(reason));
                }
                return Err(CallError::failed(chain(&e)));
            }
        };
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| CallError::failed(chain(&e)))?
            .to_bytes();
        match status {
            StatusCode::OK => parse_lines(&body),
            StatusCode::SERVICE_UNAVAILABLE => Err(CallError {
                not_ready: true,
                error: error_text(&body),
            }),
            _ => Err(CallError::failed(format!(
                "answered {}: {}",
                status.as_u16(),
                error_text(&body)
            ))),
        }
    }
}

/// Decimal ids, one a line.
fn parse_lines(body: &[u8]) -> Result<Vec<u64>, CallError> {
    body.split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| {
            std::str::from_utf8(line)
                .ok()
                .and_then(|text| text.parse().ok())
                .ok_or_else(|| {
                    CallError::failed(format!(
                        "answered a line that is not a decimal id: {:?}",
                        String::from_utf8_lossy(line)
                    ))
                })
        })
        .collect()
}

/// The `error` of a `{"error": "..."}` body, or the body itself.
fn error_text(body: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("error")?.as_str().map(str::to_string))
        .unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_text_batch_reads_as_ids_and_a_bad_line_is_named() {
        assert_eq!(parse_lines(b"1\n2\n30\n"), Ok(vec![1, 2, 30]));
        assert_eq!(
            parse_lines(b"1\nx2\n").unwrap_err().error,
            "answered a line that is not a decimal id: \"x2\""
        );
    }

    #[test]
    fn an_error_body_is_read_for_its_message() {
        assert_eq!(
            error_text(br#"{"error":"clock is behind"}"#),
            "clock is behind"
        );
        assert_eq!(error_text(b"bad gateway\n"), "bad gateway");
    }
}
