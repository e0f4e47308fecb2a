//! The gRPC API, `snowmint.v1.IdService`, over the same [`AppState`] as HTTP.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use snowmint::serial::{Template, Zone};
use snowmint::{BizCode, Decoded, Id, Layout};
use subtle::ConstantTimeEq;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_stream::wrappers::{ReceiverStream, TcpListenerStream};
use tonic::service::interceptor::InterceptedService;
use tonic::{Request, Response, Status};

use crate::metrics::{RequestLabels, RouteLabels};
use crate::{ApiError, AppState};

mod codec;

/// Types generated from `proto/snowmint/v1/id.proto`, client and server.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod proto {
    tonic::include_proto!("snowmint.v1");
    include!(concat!(env!("OUT_DIR"), "/client/snowmint.v1.rs"));
}

use proto::id_service_server::{IdService, IdServiceServer};
use proto::{
    DecodeRequest, DecodeResponse, DecodeSerialRequest, DecodeSerialResponse, Ids,
    NextBatchRequest, NextRequest, NextResponse, NextSerialsRequest, SerialFormat, Serials,
    StreamRequest,
};

/// Ids per stream message when the client leaves `batch_size` at 0: one default tick.
const DEFAULT_STREAM_BATCH: u64 = 4096;
/// Stream messages buffered ahead of a slow reader.
const STREAM_BUFFER: usize = 4;
/// Bytes of a response around its repeated field: the gRPC frame header (5), the field's
/// tag (1) and its length prefix (at most 10).
const PROTO_OVERHEAD: u64 = 16;
/// Bytes of one id in `Ids`: a packed `fixed64`.
const PROTO_ID_BYTES: u64 = 8;

/// The service, holding the shared state.
#[derive(Debug, Clone)]
pub struct Service {
    state: AppState,
}

impl Service {
    /// The service over `state`.
    #[must_use]
    pub fn new(state: AppState) -> Service {
        Service { state }
    }

    fn record(&self, method: &'static str, start: Instant, code: tonic::Code) {
        let metrics = &self.state.metrics;
        metrics
            .latency
            .get_or_create(&RouteLabels {
                protocol: "grpc",
                route: method,
            })
            .observe(start.elapsed().as_secs_f64());
        metrics
            .requests
            .get_or_create(&RequestLabels {
                protocol: "grpc",
                route: method,
                status: code as u16,
            })
            .inc();
    }

    fn finish<T>(
        &self,
        method: &'static str,
        start: Instant,
        result: Result<T, ApiError>,
    ) -> Result<Response<T>, Status> {
        let code = result
            .as_ref()
            .map_or_else(ApiError::code, |_| tonic::Code::Ok);
        self.record(method, start, code);
        result.map(Response::new).map_err(Status::from)
    }

    fn count(&self, count: u64, what: &str) -> Result<u64, ApiError> {
        let max = self.state.max_batch;
        if (1..=max).contains(&count) {
            Ok(count)
        } else {
            Err(ApiError::BadRequest(format!(
                "{what} {count} is out of range 1..={max}"
            )))
        }
    }
}

fn raw(ids: Vec<Id>) -> Ids {
    Ids {
        ids: ids.into_iter().map(Id::as_u64).collect(),
    }
}

#[tonic::async_trait]
impl IdService for Service {
    async fn next(&self, _request: Request<NextRequest>) -> Result<Response<NextResponse>, Status> {
        let start = Instant::now();
        let result = self.state.source.next_id().map(|id| {
            self.state.metrics.ids_issued.inc();
            NextResponse { id: id.as_u64() }
        });
        self.finish("Next", start, result)
    }

    async fn next_batch(
        &self,
        request: Request<NextBatchRequest>,
    ) -> Result<Response<Ids>, Status> {
        let start = Instant::now();
        let result = self
            .count(request.get_ref().count, "count")
            .and_then(|count| {
                self.state
                    .check_response_size(count, "ids", PROTO_ID_BYTES, PROTO_OVERHEAD)?;
                let mut ids = Vec::with_capacity(count as usize);
                self.state.source.fill(count, &mut ids)?;
                self.state.metrics.ids_issued.inc_by(count);
                Ok(raw(ids))
            });
        self.finish("NextBatch", start, result)
    }

    type StreamStream = ReceiverStream<Result<Ids, Status>>;

    async fn stream(
        &self,
        request: Request<StreamRequest>,
    ) -> Result<Response<Self::StreamStream>, Status> {
        let start = Instant::now();
        let StreamRequest { batch_size, total } = *request.get_ref();
        let batch = match batch_size {
            0 => Ok(DEFAULT_STREAM_BATCH.min(self.state.max_batch)),
            n => self.count(n, "batch_size"),
        }
        .and_then(|batch| {
            self.state
                .check_response_size(batch, "ids", PROTO_ID_BYTES, PROTO_OVERHEAD)
                .map(|()| batch)
        });
        let batch = match batch {
            Ok(batch) => batch,
            Err(e) => return self.finish("Stream", start, Err(e)),
        };
        let (tx, rx) = mpsc::channel(STREAM_BUFFER);
        let source = Arc::clone(&self.state.source);
        let state = self.state.clone();
        // The generator may park between ticks, so the producer runs on a blocking thread.
        tokio::task::spawn_blocking(move || {
            let mut sent = 0u64;
            while total == 0 || sent < total {
                let n = if total == 0 {
                    batch
                } else {
                    batch.min(total - sent)
                };
                let mut ids = Vec::with_capacity(n as usize);
                let message = source
                    .fill(n, &mut ids)
                    .map(|()| raw(ids))
                    .map_err(Status::from);
                let failed = message.is_err();
                if tx.blocking_send(message).is_err() {
                    break; // the client stopped reading
                }
                if failed {
                    break;
                }
                state.metrics.ids_issued.inc_by(n);
                sent += n;
            }
        });
        self.finish("Stream", start, Ok(ReceiverStream::new(rx)))
    }

    async fn decode(
        &self,
        request: Request<DecodeRequest>,
    ) -> Result<Response<DecodeResponse>, Status> {
        let start = Instant::now();
        let DecodeRequest { id, layout } = request.into_inner();
        let result = (|| {
            let layout = if layout.is_empty() {
                *self.state.layout()
            } else {
                Layout::by_name(&layout)?
            };
            let (id, _) = Id::parse_any(&id)?;
            Ok(decode_response(Decoded::new(&layout, id)?))
        })()
        .map_err(|e: snowmint::Error| ApiError::from(e));
        self.finish("Decode", start, result)
    }

    async fn next_serials(
        &self,
        request: Request<NextSerialsRequest>,
    ) -> Result<Response<Serials>, Status> {
        let start = Instant::now();
        let NextSerialsRequest { biz, count, format } = request.into_inner();
        let result = (|| {
            let biz = BizCode::new(&biz)?;
            let (template, zone) = self.format(format)?;
            let count = self.count(count, "count")?;
            // Each serial is a string field: a tag, a one-byte length (at most 64), the text.
            let item_bytes = template.serial_len(&biz) as u64 + 2;
            self.state
                .check_response_size(count, "serials", item_bytes, PROTO_OVERHEAD)?;
            let mut ids = Vec::with_capacity(count as usize);
            self.state.source.fill(count, &mut ids)?;
            self.state.metrics.ids_issued.inc_by(count);
            let serials = ids
                .into_iter()
                .map(|id| template.format(&biz, id, &zone))
                .collect::<Result<_, _>>()?;
            Ok(Serials { serials })
        })();
        self.finish("NextSerials", start, result)
    }

    async fn decode_serial(
        &self,
        request: Request<DecodeSerialRequest>,
    ) -> Result<Response<DecodeSerialResponse>, Status> {
        let start = Instant::now();
        let DecodeSerialRequest { serial, format } = request.into_inner();
        let result = (|| {
            let (template, zone) = self.format(format)?;
            let parsed = template.parse_serial(&serial, &zone)?;
            Ok(DecodeSerialResponse {
                biz: parsed
                    .biz
                    .map(|b| b.as_str().to_string())
                    .unwrap_or_default(),
                parts: Some(decode_response(parsed.decoded())),
            })
        })();
        self.finish("DecodeSerial", start, result)
    }
}

impl Service {
    /// The template and zone of a request, over the server's layout; empty means default.
    fn format(&self, format: Option<SerialFormat>) -> Result<(Template, Zone), ApiError> {
        let format = format.unwrap_or_default();
        let text = if format.template.is_empty() {
            Template::DEFAULT
        } else {
            &format.template
        };
        let template = Template::parse(text, self.state.layout())?;
        let zone = if format.tz.is_empty() {
            Zone::UTC
        } else {
            Zone::parse(&format.tz)?
        };
        Ok((template, zone))
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

/// Requires `authorization: Bearer <token>` on every call when a token is configured,
/// compared in constant time.
fn authorize(
    token: Option<Arc<str>>,
) -> impl FnMut(Request<()>) -> Result<Request<()>, Status> + Clone {
    move |request: Request<()>| {
        let Some(token) = &token else {
            return Ok(request);
        };
        let given = request
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        match given {
            Some(given) if bool::from(given.as_bytes().ct_eq(token.as_bytes())) => Ok(request),
            _ => Err(ApiError::Unauthorized.into()),
        }
    }
}

/// Serves the gRPC API on `listener` until `shutdown` resolves, letting calls in flight
/// finish.
///
/// # Errors
///
/// The transport failed.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), std::io::Error> {
    let token = state.auth_token.as_deref().map(Arc::from);
    // No request needs more than a template, a zone and a code: the HTTP body bound.
    let service =
        IdServiceServer::new(Service::new(state)).max_decoding_message_size(crate::MAX_BODY_BYTES);
    let service = InterceptedService::new(service, authorize(token));
    tonic::transport::Server::builder()
        .add_service(service)
        .serve_with_incoming_shutdown(TcpListenerStream::new(listener), shutdown)
        .await
        .map_err(std::io::Error::other)
}
