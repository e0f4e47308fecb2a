//! The gRPC API, `snowmint.v1.IdService`, over the same [`AppState`] as HTTP.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use snowmint::{Decoded, Id};
use snowmint_proto::v1::id_service_server::{IdService, IdServiceServer};
use snowmint_proto::v1::{
    DecodeRequest, DecodeResponse, DecodeSerialRequest, DecodeSerialResponse, Ids,
    NextBatchRequest, NextRequest, NextResponse, NextSerialsRequest, SerialFormat, Serials,
    StreamRequest,
};
use tokio_stream::Stream;
use tonic::service::interceptor::InterceptedService;
use tonic::{Request, Response, Status};

use crate::service::{
    self, Caller, Count, DecodeRequest as Decode, DecodeSerialRequest as DecodeSerial, Drain,
    Framing, IdsRequest, Room, SerialsRequest,
};
use crate::{ApiError, AppState, RouteMetrics};

mod bound;
mod fast;

/// Ids per stream message when the client leaves `batch_size` at 0: one default tick.
const DEFAULT_STREAM_BATCH: u64 = 4096;
/// Bytes of a response around its repeated field, at most: the gRPC frame header (5), the
/// field's tag (1) and its length prefix (at most 10).
const AROUND: u64 = 16;
/// Bytes of one id in `Ids`: a packed `fixed64`.
const PROTO_ID_BYTES: u64 = 8;
/// `Ids`: packed, so nothing beside each id.
const IDS: Framing = Framing {
    per_item: 0,
    around: AROUND,
};
/// `Serials`: each serial is a string field, with a tag and a one-byte length (serials are
/// at most 64 bytes) beside it.
const SERIALS: Framing = Framing {
    per_item: 2,
    around: AROUND,
};

/// The service, holding the shared state.
#[derive(Debug, Clone)]
pub struct Service {
    state: AppState,
    /// `Next`'s metrics, looked up once: it is the call made once per id.
    next: Arc<RouteMetrics>,
}

impl Service {
    /// The service over `state`.
    #[must_use]
    pub fn new(state: AppState) -> Service {
        let next = Arc::new(state.metrics.route("grpc", "Next", tonic::Code::Ok as u16));
        Service { state, next }
    }

    /// Counts the call and turns its result into tonic's.
    fn finish<T>(
        &self,
        method: &'static str,
        start: Instant,
        result: Result<T, ApiError>,
    ) -> Result<Response<T>, Status> {
        let code = result
            .as_ref()
            .map_or_else(ApiError::code, |_| tonic::Code::Ok);
        self.state
            .metrics
            .record("grpc", method, code as u16, start.elapsed());
        result.map(Response::new).map_err(Status::from)
    }
}

fn raw(ids: Vec<Id>) -> Ids {
    Ids {
        ids: ids.into_iter().map(Id::as_u64).collect(),
    }
}

/// A proto3 string left empty means the default.
fn given(text: &str) -> Option<&str> {
    (!text.is_empty()).then_some(text)
}

fn serial_format(format: Option<&SerialFormat>) -> service::SerialFormat<'_> {
    format.map_or_else(Default::default, |f| service::SerialFormat {
        template: given(&f.template),
        tz: given(&f.tz),
    })
}

/// Moves the room a response's ids hold into its extensions, where the accept loop keeps
/// it until the transport has taken the message (or its drain deadline passes).
fn held_until_sent<T>(result: Result<Response<(T, Room)>, Status>) -> Result<Response<T>, Status> {
    result.map(|response| {
        let (metadata, (message, room), mut extensions) = response.into_parts();
        extensions.insert(room);
        Response::from_parts(metadata, message, extensions)
    })
}

#[tonic::async_trait]
impl IdService for Service {
    async fn next(&self, _request: Request<NextRequest>) -> Result<Response<NextResponse>, Status> {
        let start = Instant::now();
        let result = service::one(&self.state)
            .await
            .map(|id| NextResponse { id: id.as_u64() });
        let code = result
            .as_ref()
            .map_or_else(ApiError::code, |_| tonic::Code::Ok);
        self.next.record(code as u16, start.elapsed());
        result.map(Response::new).map_err(Status::from)
    }

    async fn next_batch(
        &self,
        request: Request<NextBatchRequest>,
    ) -> Result<Response<Ids>, Status> {
        let start = Instant::now();
        let caller = request.extensions().get::<Caller>().cloned();
        let asked = IdsRequest {
            count: Count::Number("count", request.get_ref().count),
            id_bytes: PROTO_ID_BYTES,
        };
        let result = match asked.check(&self.state, IDS) {
            Ok(batch) => service::ids(&self.state, batch, caller.as_ref(), None).await,
            Err(e) => Err(e),
        };
        let result = result.map(|(ids, room)| (raw(ids), room));
        held_until_sent(self.finish("NextBatch", start, result))
    }

    type StreamStream = Pin<Box<dyn Stream<Item = Result<Ids, Status>> + Send>>;

    async fn stream(
        &self,
        request: Request<StreamRequest>,
    ) -> Result<Response<Self::StreamStream>, Status> {
        let start = Instant::now();
        let StreamRequest { batch_size, total } = *request.get_ref();
        let batch_size = match batch_size {
            0 => DEFAULT_STREAM_BATCH.min(self.state.max_batch),
            n => n,
        };
        let asked = IdsRequest {
            count: Count::Number("batch_size", batch_size),
            id_bytes: PROTO_ID_BYTES,
        };
        let batch = match asked.check(&self.state, IDS) {
            Ok(batch) => batch,
            Err(e) => return self.finish("Stream", start, Err(e)),
        };
        let caller = request.extensions().get::<Caller>().cloned();
        let state = self.state.clone();
        // One drain for the whole stream: a batch not taken by its deadline ends it.
        let drain = Drain::default();
        let stream_drain = drain.clone();
        // A batch is made only when the transport asks for the next message, which it does
        // once the reader has made room: a reader that does not read holds no thread and no
        // ids beyond the last batch, whose room in the budget is kept until then, or until
        // the batch's drain deadline, which abandons the stream.
        let batches = futures_util::stream::unfold(
            (0u64, None::<Room>, false),
            move |(sent, last, failed)| {
                let (state, caller, drain) = (state.clone(), caller.clone(), drain.clone());
                async move {
                    drop(last);
                    if failed || (total != 0 && sent >= total) {
                        return None;
                    }
                    // Where the accept loop carries the stream, an abandoned one is dropped
                    // before it gets here; elsewhere it ends with the reason.
                    if drain.abandoned() {
                        let reason = "stream abandoned: a batch was not taken within its drain deadline (drain_grace_ms, min_drain_bytes_per_sec)";
                        return Some((Err(Status::resource_exhausted(reason)), (sent, None, true)));
                    }
                    let part = if total == 0 {
                        batch
                    } else {
                        batch.up_to(total - sent)
                    };
                    Some(
                        match service::ids(&state, part, caller.as_ref(), Some(&drain)).await {
                            Ok((ids, room)) => {
                                (Ok(raw(ids)), (sent + part.count(), Some(room), false))
                            }
                            Err(e) => (Err(Status::from(e)), (sent, None, true)),
                        },
                    )
                }
            },
        );
        let mut response =
            self.finish("Stream", start, Ok(Box::pin(batches) as Self::StreamStream));
        if let Ok(response) = &mut response {
            response.extensions_mut().insert(stream_drain);
        }
        response
    }

    async fn decode(
        &self,
        request: Request<DecodeRequest>,
    ) -> Result<Response<DecodeResponse>, Status> {
        let start = Instant::now();
        let DecodeRequest {
            id,
            layout,
            tick_ms,
            encoding,
        } = request.get_ref();
        let asked = Decode {
            id,
            encoding: given(encoding),
            layout: given(layout),
            tick_ms: (*tick_ms != 0).then_some(*tick_ms),
        };
        let result = service::decode(&self.state, asked).map(decode_response);
        self.finish("Decode", start, result)
    }

    async fn next_serials(
        &self,
        request: Request<NextSerialsRequest>,
    ) -> Result<Response<Serials>, Status> {
        let start = Instant::now();
        let caller = request.extensions().get::<Caller>().cloned();
        let NextSerialsRequest { biz, count, format } = request.get_ref();
        let asked = SerialsRequest {
            biz,
            format: serial_format(format.as_ref()),
            count: Count::Number("count", *count),
        };
        let result = async {
            let batch = asked.check(&self.state, SERIALS)?;
            let (ids, room) = service::serials(&self.state, &batch, caller.as_ref()).await?;
            let serials = ids
                .into_iter()
                .map(|id| {
                    let mut serial = String::with_capacity(batch.serial_len());
                    batch.write(id, &mut serial).map(|()| serial)
                })
                .collect::<Result<_, _>>()?;
            Ok((Serials { serials }, room))
        }
        .await;
        held_until_sent(self.finish("NextSerials", start, result))
    }

    async fn decode_serial(
        &self,
        request: Request<DecodeSerialRequest>,
    ) -> Result<Response<DecodeSerialResponse>, Status> {
        let start = Instant::now();
        let DecodeSerialRequest { serial, format } = request.get_ref();
        let asked = DecodeSerial {
            serial,
            format: serial_format(format.as_ref()),
        };
        let result = service::decode_serial(&self.state, asked).map(|d| DecodeSerialResponse {
            biz: d.biz.unwrap_or_default(),
            parts: Some(decode_response(d.decoded)),
        });
        self.finish("DecodeSerial", start, result)
    }
}

fn decode_response(d: Decoded) -> DecodeResponse {
    DecodeResponse {
        id: d.id.as_u64(),
        unix_ms: d.unix_ms,
        time: d.time,
        datacenter: d.datacenter,
        worker: d.worker,
        sequence: d.sequence,
    }
}

/// Requires `authorization: Bearer <token>` on every call when the server has a token.
fn authorize(state: AppState) -> impl FnMut(Request<()>) -> Result<Request<()>, Status> + Clone {
    move |request: Request<()>| {
        let given = request
            .metadata()
            .get("authorization")
            .map(|v| v.as_bytes());
        service::authorize(&state, given)?;
        Ok(request)
    }
}

/// The gRPC API as the accept loop serves it over HTTP/2: tonic's routes, with `Next`, the
/// call made once per id, answered in front of them (see `fast.rs`).
#[derive(Clone)]
pub struct GrpcApi {
    routes: axum::Router,
    service: Service,
}

impl std::fmt::Debug for GrpcApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcApi").finish_non_exhaustive()
    }
}

impl GrpcApi {
    /// The gRPC API over `state`.
    #[must_use]
    pub fn new(state: AppState) -> GrpcApi {
        let service = Service::new(state.clone());
        // No request needs more than a template, a zone and a code: the HTTP body bound.
        let server =
            IdServiceServer::new(service.clone()).max_decoding_message_size(crate::MAX_BODY_BYTES);
        let server = InterceptedService::new(server, authorize(state));
        let routes = tonic::service::Routes::new(server)
            .into_axum_router()
            .layer(axum::middleware::from_fn(bound::messages));
        GrpcApi { routes, service }
    }

    /// tonic's routes alone, without `Next` answered in front of them: what the fast path
    /// must answer alike.
    pub fn routes(&self) -> axum::Router {
        self.routes.clone()
    }

    /// Answers `request`, with its `caller` (who it counts against in the budget of ids in
    /// flight) for the calls that issue batches. `Next` issues one id and takes no room.
    pub(crate) async fn answer<B>(
        &self,
        mut request: axum::http::Request<B>,
        caller: Option<Caller>,
    ) -> axum::response::Response
    where
        B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
        B::Error: Into<axum::BoxError>,
    {
        use tower::ServiceExt;
        // Boxed: the routes' future is large, and `Next` should not carry its room.
        let through_tonic = |request| {
            Box::pin(async {
                let Ok(response) = self.routes.clone().oneshot(request).await;
                response
            })
        };
        if fast::is_next(&request) {
            return self.service.next_fast(request, through_tonic).await;
        }
        if let Some(caller) = caller {
            request.extensions_mut().insert(caller);
        }
        through_tonic(request.map(axum::body::Body::new)).await
    }
}

impl<B> tower::Service<axum::http::Request<B>> for GrpcApi
where
    B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    type Response = axum::response::Response;
    type Error = std::convert::Infallible;
    type Future =
        Pin<Box<dyn Future<Output = Result<axum::response::Response, Self::Error>> + Send>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: axum::http::Request<B>) -> Self::Future {
        let api = self.clone();
        Box::pin(async move { Ok(api.answer(request, None).await) })
    }
}
