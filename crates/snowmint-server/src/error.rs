//! The server's one error type, mapped once to an HTTP status and a gRPC code.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use snowmint::error::Chain;
use snowmint::serial::SerialError;
use snowmint::{IssueError, LayoutError, ParseError, RangeError, TimeError};

/// Why a request was not served. Every variant's message names the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// The request is malformed or out of range: the client's to fix.
    #[error("{0}")]
    BadRequest(String),
    /// A bearer token is required and was missing or wrong.
    #[error("missing or wrong bearer token: send `Authorization: Bearer <token>`")]
    Unauthorized,
    /// No such route.
    #[error("no route for {method} {path}")]
    NotFound {
        /// The request's method.
        method: String,
        /// The request's path.
        path: String,
    },
    /// The route exists but not for this method.
    #[error("method {method} is not allowed on {path}; use GET")]
    MethodNotAllowed {
        /// The request's method.
        method: String,
        /// The request's path.
        path: String,
    },
    /// A part of the request is larger than the server accepts: 414 for the target, 431 for
    /// the head, 413 for a body or a gRPC message.
    #[error("{}", oversized(*part, *size, *limit))]
    TooLarge {
        /// Which part.
        part: RequestPart,
        /// Its size in bytes, where it was measured (hyper refuses some heads unmeasured).
        size: Option<u64>,
        /// The most this server accepts, in bytes.
        limit: u64,
    },
    /// The server may not issue ids right now (clock behind, lease lost, shutting down).
    #[error("{0}")]
    Unavailable(String),
}

/// A part of a request that can be larger than the server accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestPart {
    /// The request target: path and query.
    Target,
    /// The request head: the request line and headers, or HTTP/2's header list.
    Head,
    /// An HTTP request's body.
    Body,
    /// A gRPC request's message.
    Message,
}

/// The words of [`ApiError::TooLarge`], written once for every place that refuses a size.
fn oversized(part: RequestPart, size: Option<u64>, limit: u64) -> String {
    match (part, size) {
        (RequestPart::Target, Some(size)) => {
            format!("request target is {size} bytes, more than the {limit} this server accepts")
        }
        (RequestPart::Target, None) => {
            format!("request target is longer than the {limit} bytes this server accepts")
        }
        (RequestPart::Head, Some(size)) => format!(
            "request headers take {size} bytes, more than the {limit} this server accepts (max_header_bytes)"
        ),
        (RequestPart::Head, None) => format!(
            "request head is larger than the {limit} bytes this server accepts (max_header_bytes), or has more than {} headers",
            crate::net::MAX_HEADERS
        ),
        (RequestPart::Body | RequestPart::Message, size) => {
            let what = if part == RequestPart::Body {
                "body"
            } else {
                "message"
            };
            match size {
                Some(size) => format!(
                    "request {what} is {size} bytes, more than the {limit} this server accepts"
                ),
                None => {
                    format!("request {what} is larger than the {limit} bytes this server accepts")
                }
            }
        }
    }
}

impl ApiError {
    /// The longest message a refusal carries, in bytes. A message quotes what the request
    /// sent, and a gRPC message travels in a trailer, percent-encoded to up to three bytes
    /// a byte: quoting a 16 KiB request whole would pass the 16 KiB header list that
    /// clients accept by default, and the client would see a protocol error instead of the
    /// refusal. 1 KiB names any problem; every protocol cuts at the same place, so they
    /// still refuse a request in the same words.
    pub const MAX_MESSAGE_BYTES: usize = 1024;

    /// The message a client gets: the error's text, cut at [`ApiError::MAX_MESSAGE_BYTES`]
    /// (at a character boundary) with a note of how long it was.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint_server::ApiError;
    ///
    /// let short = ApiError::BadRequest("count \"0\" is out of range".into());
    /// assert_eq!(short.message(), "count \"0\" is out of range");
    /// let long = ApiError::BadRequest("x".repeat(5000));
    /// assert_eq!(long.message(), format!("{}... (cut at 1024 of 5000 bytes)", "x".repeat(1024)));
    /// ```
    #[must_use]
    pub fn message(&self) -> String {
        let text = self.to_string();
        if text.len() <= Self::MAX_MESSAGE_BYTES {
            return text;
        }
        let mut cut = Self::MAX_MESSAGE_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{}... (cut at {cut} of {} bytes)", &text[..cut], text.len())
    }

    /// The HTTP status.
    #[must_use]
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::NotFound { .. } => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::TooLarge { part, .. } => match part {
                RequestPart::Target => StatusCode::URI_TOO_LONG,
                RequestPart::Head => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                RequestPart::Body | RequestPart::Message => StatusCode::PAYLOAD_TOO_LARGE,
            },
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The gRPC status code.
    #[must_use]
    pub fn code(&self) -> tonic::Code {
        match self {
            ApiError::BadRequest(_) => tonic::Code::InvalidArgument,
            ApiError::Unauthorized => tonic::Code::Unauthenticated,
            ApiError::NotFound { .. } => tonic::Code::NotFound,
            ApiError::MethodNotAllowed { .. } => tonic::Code::Unimplemented,
            ApiError::TooLarge { .. } => tonic::Code::ResourceExhausted,
            ApiError::Unavailable(_) => tonic::Code::Unavailable,
        }
    }
}

/// The core's input errors are the client's to fix, whatever the variant: each type is
/// returned only by operations on what a request sent (an id, a layout name, a serial).
macro_rules! bad_request_from {
    ($($error:ty),*) => {$(
        impl From<$error> for ApiError {
            fn from(err: $error) -> ApiError {
                ApiError::BadRequest(Chain(&err).to_string())
            }
        }
    )*};
}

bad_request_from!(ParseError, RangeError, LayoutError, SerialError, TimeError);

impl From<IssueError> for ApiError {
    /// Anything about the clock, the store, the lease or the generator's life is the
    /// server's state (503), never a 500; asking for no ids is the request's fault. Every
    /// variant is named, so a new one cannot become a status by default.
    fn from(err: IssueError) -> ApiError {
        let message = Chain(&err).to_string();
        match err {
            IssueError::ClockBehind { .. }
            | IssueError::BehindTooFar { .. }
            | IssueError::TimeOutOfRange { .. }
            | IssueError::Reserve { .. }
            | IssueError::ShortGrant { .. }
            | IssueError::Fenced { .. }
            | IssueError::Closed => ApiError::Unavailable(message),
            IssueError::ZeroBatch => ApiError::BadRequest(message),
        }
    }
}

impl From<ApiError> for tonic::Status {
    fn from(err: ApiError) -> tonic::Status {
        tonic::Status::new(err.code(), err.message())
    }
}

impl ApiError {
    /// The JSON body every refusal is answered with: `{"error": "..."}`.
    fn body(&self) -> crate::http::ErrorBody {
        crate::http::ErrorBody {
            error: self.message(),
        }
    }

    /// The whole HTTP/1.1 answer, for where no HTTP library answers and the bytes go
    /// straight to the socket (a connection past `max_connections`, a head hyper could not
    /// read): the status, the same JSON body as every other refusal, and
    /// `connection: close`.
    pub(crate) fn http1_answer(&self) -> Vec<u8> {
        let status = self.status();
        let body = serde_json::to_string(&self.body()).unwrap_or_default();
        format!(
            "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            status.as_u16(),
            status.canonical_reason().unwrap_or_default(),
            body.len()
        )
        .into_bytes()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status(), Json(self.body())).into_response()
    }
}
