//! Request messages larger than the server reads are refused before tonic buffers them,
//! as HTTP bodies are: `RESOURCE_EXHAUSTED`, in the server's words, naming the size and
//! the limit. tonic's own limit, which answers `OUT_OF_RANGE` in its words, stays behind
//! this as a backstop.

use axum::body::Body;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use bytes::BytesMut;
use futures_util::StreamExt;
use futures_util::stream;
use tonic::Status;

use crate::{ApiError, MAX_BODY_BYTES, RequestPart};

/// The header of a gRPC message: a compression flag and the length, 4 bytes big-endian.
const PREFIX: usize = 5;

/// Reads the first message's header and refuses the call if the message is too large;
/// otherwise hands the request on with its body as it came.
pub async fn messages(request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let mut data = body.into_data_stream();
    let mut head = BytesMut::new();
    let mut failed = None;
    while head.len() < PREFIX {
        match data.next().await {
            Some(Ok(chunk)) => head.extend_from_slice(&chunk),
            Some(Err(e)) => {
                failed = Some(e);
                break;
            }
            None => break,
        }
    }
    if head.len() >= PREFIX {
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]);
        if len as usize > MAX_BODY_BYTES {
            let refusal = ApiError::TooLarge {
                part: RequestPart::Message,
                size: Some(u64::from(len)),
                limit: MAX_BODY_BYTES as u64,
            };
            return Status::from(refusal).into_http::<Body>();
        }
    }
    let rest = stream::iter([Ok(head.freeze())])
        .chain(stream::iter(failed.map(Err)))
        .chain(data);
    next.run(Request::from_parts(parts, Body::from_stream(rest)))
        .await
}
