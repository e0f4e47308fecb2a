//! `Next` in front of tonic's routes: the call made once per id, answered with the same
//! checks (the token, the message's bound and its decoding), the same metrics and the same
//! answer as through tonic ([`Service::next`](super::Service)), without what the generic
//! path costs per call: the router, the interceptor and the bound's layers, tonic's codec
//! and the boxed futures and bodies between them.
//!
//! Only a plain call is answered here: one uncompressed message that decodes, with a token
//! the server admits (or none needed). Anything else (a compressed message, a refused
//! token, a message that does not decode or is too large, more or less than one message)
//! goes on to tonic with the bytes already read in front of the rest, so it is answered
//! exactly as before.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};
use bytes::{BufMut, Bytes, BytesMut};
use futures_util::{StreamExt, stream};
use http_body::Frame;
use prost::Message;
use snowmint_proto::v1::{NextRequest, NextResponse};

use super::Service;
use crate::{ApiError, MAX_BODY_BYTES, service};

/// The path of `Next`, as gRPC names a method: `/package.Service/Method`.
pub const NEXT: &str = "/snowmint.v1.IdService/Next";
/// The header of a gRPC message: a compression flag and the length, 4 bytes big-endian.
const PREFIX: usize = 5;
/// What tonic sends as the content type of every answer.
const GRPC: HeaderValue = HeaderValue::from_static("application/grpc");
const GRPC_STATUS: &str = "grpc-status";
const GRPC_ENCODING: &str = "grpc-encoding";

/// Whether `request` is a call to `Next` that this path may take.
pub fn is_next<B>(request: &Request<B>) -> bool {
    request.method() == Method::POST && request.uri().path() == NEXT
}

/// What reading a call's body found.
enum Read {
    /// One uncompressed message that decodes as [`NextRequest`].
    Plain,
    /// Anything else, with the bytes read so far and what ended the reading, for tonic.
    Other(Bytes, Option<axum::Error>),
}

impl Service {
    /// Answers a call to `Next` (see [`is_next`]), or hands it to `tonic` (the routes) as
    /// it came when it is not a plain call.
    pub(super) async fn next_fast<B, F, Fut>(&self, request: Request<B>, tonic: F) -> Response<Body>
    where
        B: http_body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<axum::BoxError>,
        F: FnOnce(Request<Body>) -> Fut,
        Fut: Future<Output = Response<Body>>,
    {
        let (parts, body) = request.into_parts();
        let body = Body::new(body);
        let plain_encoding = parts
            .headers
            .get(GRPC_ENCODING)
            .is_none_or(|e| e.as_bytes() == b"identity");
        let authorization = parts.headers.get(header::AUTHORIZATION);
        if !plain_encoding
            || service::authorize(&self.state, authorization.map(HeaderValue::as_bytes)).is_err()
        {
            return tonic(Request::from_parts(parts, body)).await;
        }
        let mut data = body.into_data_stream();
        let (read, failed) = match one_message(&mut data).await {
            Read::Plain => return self.answer_next().await,
            Read::Other(read, failed) => (read, failed),
        };
        let rest = stream::iter([Ok(read)])
            .chain(stream::iter(failed.map(Err)))
            .chain(data);
        tonic(Request::from_parts(parts, Body::from_stream(rest))).await
    }

    /// Issues the id and answers as tonic would: the message, then `grpc-status: 0` in the
    /// trailers; a refusal as a trailers-only answer with its status.
    async fn answer_next(&self) -> Response<Body> {
        let start = Instant::now();
        let result = service::one(&self.state).await;
        let code = result
            .as_ref()
            .map_or_else(ApiError::code, |_| tonic::Code::Ok);
        self.next.record(code as u16, start.elapsed());
        match result {
            Ok(id) => {
                let message = NextResponse { id: id.as_u64() };
                let len = message.encoded_len();
                let mut frame = BytesMut::with_capacity(PREFIX + len);
                frame.put_u8(0);
                frame.put_u32(u32::try_from(len).expect("a NextResponse is 9 bytes at most"));
                message
                    .encode(&mut frame)
                    .expect("the buffer holds the message");
                let body = Unary {
                    message: Some(frame.freeze()),
                    trailers: true,
                };
                let mut response = Response::new(Body::new(body));
                *response.status_mut() = StatusCode::OK;
                response.headers_mut().insert(header::CONTENT_TYPE, GRPC);
                response
            }
            Err(e) => tonic::Status::from(e).into_http(),
        }
    }
}

/// Reads a call's whole body, at most one message's bound beyond its prefix. What tonic
/// refuses as soon as it sees it (a compressed message, a length past the bound, a message
/// that does not decode) goes on to tonic as soon as it is read, without waiting for the
/// rest of the body: a client cannot hold the call open by leaving its stream unfinished.
async fn one_message(data: &mut axum::body::BodyDataStream) -> Read {
    let mut read = BytesMut::new();
    // The first message's length once its prefix is read, and whether it has been decoded.
    let mut declared = None;
    let mut decoded = false;
    loop {
        match data.next().await {
            Some(Ok(chunk)) => read.extend_from_slice(&chunk),
            Some(Err(e)) => return Read::Other(read.freeze(), Some(e)),
            None => break,
        }
        if declared.is_none() && read.len() >= PREFIX {
            let len = u32::from_be_bytes([read[1], read[2], read[3], read[4]]) as usize;
            if read[0] != 0 || len > MAX_BODY_BYTES {
                return Read::Other(read.freeze(), None);
            }
            declared = Some(len);
        }
        if let Some(len) = declared
            && !decoded
            && read.len() >= PREFIX + len
        {
            if NextRequest::decode(&read[PREFIX..PREFIX + len]).is_err() {
                return Read::Other(read.freeze(), None);
            }
            decoded = true;
        }
        // More than one message's worth: tonic reads the first and leaves the rest.
        if read.len() > PREFIX + MAX_BODY_BYTES {
            return Read::Other(read.freeze(), None);
        }
    }
    match declared {
        Some(len) if decoded && read.len() == PREFIX + len => Read::Plain,
        _ => Read::Other(read.freeze(), None),
    }
}

/// The body of a unary answer: its one message, then the trailers that say it succeeded.
struct Unary {
    message: Option<Bytes>,
    /// Whether the trailers are still to send.
    trailers: bool,
}

impl http_body::Body for Unary {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Some(message) = self.message.take() {
            return Poll::Ready(Some(Ok(Frame::data(message))));
        }
        if std::mem::take(&mut self.trailers) {
            let mut trailers = HeaderMap::with_capacity(1);
            trailers.insert(GRPC_STATUS, HeaderValue::from_static("0"));
            return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
        }
        Poll::Ready(None)
    }

    fn is_end_stream(&self) -> bool {
        self.message.is_none() && !self.trailers
    }
}
