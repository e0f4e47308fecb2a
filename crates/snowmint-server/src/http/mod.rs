//! The HTTP/JSON API: routes (each declared once, in [`routes`]), and the layers every
//! request passes through (size limits, bearer token, metrics, JSON errors).

mod accept;
mod compose;
mod decode;
mod fast;
mod health;
mod ids;
mod layout;
mod page;
mod path;
mod query;
mod routes;
mod schema;
mod serials;

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::{Method, StatusCode, Uri, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};

pub use fast::HttpApi;
pub(crate) use schema::ErrorBody;

use self::routes::{DECLARED, Document, Http, Route, Shared};
use crate::service;
use crate::{ApiError, AppState, RequestPart, RouteMetrics};

/// The longest request target (path and query) accepted, in bytes.
pub const MAX_URI_BYTES: usize = 8 * 1024;
/// The largest request body accepted: no endpoint reads a body, so a small bound. A body
/// announced larger is refused at once; one sent without a length is never read.
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// The HTTP API over `state`, ready to serve or to call in tests without a socket.
///
/// # Examples
///
/// ```no_run
/// # async fn demo(state: snowmint_server::AppState) {
/// let app = snowmint_server::router(state);
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
/// axum::serve(listener, app).await.unwrap();
/// # }
/// ```
pub fn router(state: AppState) -> Router {
    routed(state, routes::api(), "http").0
}

/// The HTTP API as the server serves it: [`router`], with `GET /v1/id`, the call made once
/// per id, answered in front of it through the same checks, handler and metrics.
pub fn http_api(state: AppState) -> HttpApi {
    let (router, front) = routed(state, routes::api(), "http");
    HttpApi::new(router, front)
}

/// The admin port's API: `/healthz`, `/readyz` and `/metrics`, through the same front and
/// handlers as on the HTTP port, counted under the protocol `admin`; any other path is a
/// 404, `GET /v1/id` included (no fast path).
///
/// # Examples
///
/// ```no_run
/// # async fn demo(state: snowmint_server::AppState) {
/// use tower::ServiceExt;
/// let request = axum::http::Request::get("/v1/id").body(axum::body::Body::empty()).unwrap();
/// let response = snowmint_server::admin_api(state).oneshot(request).await.unwrap();
/// assert_eq!(response.status(), 404);
/// # }
/// ```
pub fn admin_api(state: AppState) -> HttpApi {
    let (router, front) = routed(state, routes::admin(), "admin");
    HttpApi::admin(router, front)
}

/// The router of `routes`, and the front it puts every request through, which counts them
/// under `protocol`.
fn routed(
    state: AppState,
    routes: utoipa_axum::router::OpenApiRouter<Http>,
    protocol: &'static str,
) -> (Router, Front) {
    let http = Http(Arc::new(Shared {
        page: page::Page::new(state.max_batch),
        document: Document::new(state.max_batch, state.layout()),
        app: state.clone(),
    }));
    let front_state = Front(Arc::new(FrontShared {
        routes: DECLARED
            .routes()
            .iter()
            .map(|route| state.metrics.route(protocol, route.path, 200))
            .collect(),
        unmatched: state.metrics.route(protocol, "unmatched", 404),
        app: state,
    }));
    let router = Router::from(routes)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(front_state.clone(), front))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(http);
    (router, front_state)
}

/// The OpenAPI 3 document of the HTTP API of a server whose largest batch is `max_batch`
/// and whose layout is `layout` (the serials it makes), as its `GET /openapi.json` serves
/// it.
///
/// # Examples
///
/// ```
/// let document = snowmint_server::openapi_document(500, &snowmint::Layout::TWITTER);
/// assert!(document.contains("\"maximum\": 500"));
/// ```
#[must_use]
pub fn openapi_document(max_batch: u64, layout: &snowmint::Layout) -> String {
    Document::json(max_batch, layout)
}

async fn not_found(method: Method, uri: Uri) -> ApiError {
    ApiError::NotFound {
        method: method.to_string(),
        path: uri.path().to_string(),
    }
}

async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::MethodNotAllowed {
        method: method.to_string(),
        path: uri.path().to_string(),
    }
}

/// What the front needs: the server's state, and each route's metrics, resolved once.
#[derive(Clone)]
struct Front(Arc<FrontShared>);

struct FrontShared {
    app: AppState,
    /// By [`Route::index`].
    routes: Vec<RouteMetrics>,
    /// Requests no route matched.
    unmatched: RouteMetrics,
}

impl Front {
    /// What every HTTP request goes through once, in the router's middleware ([`front`])
    /// and on the fast path alike: its bounds and token ([`admit`], unless the route is
    /// `open`), then `handle`, then its count and time by route and status (through
    /// metrics looked up once per route, not per request).
    async fn admit_then<B, Answered>(
        &self,
        route: Option<&'static Route>,
        request: axum::http::Request<B>,
        handle: impl FnOnce(axum::http::Request<B>) -> Answered,
    ) -> Response
    where
        Answered: Future<Output = Response>,
    {
        let start = Instant::now();
        let shared = &self.0;
        let response = match admit(&shared.app, route.is_some_and(|r| r.open), &request) {
            Err(refused) => refused.into_response(),
            Ok(()) => handle(request).await,
        };
        let metrics = route.map_or(&shared.unmatched, |r| &shared.routes[r.index]);
        metrics.record(response.status().as_u16(), start.elapsed());
        response
    }
}

/// Every request the router serves passes here once ([`Front::admit_then`]).
async fn front(State(front): State<Front>, mut request: Request, next: Next) -> Response {
    let route: Option<&'static Route> = request
        .extensions()
        .get::<MatchedPath>()
        .and_then(|path| DECLARED.route(path.as_str()));
    if let Some(route) = route {
        // For the handler's extractors (the query parameters it declares).
        request.extensions_mut().insert(route);
    }
    front
        .admit_then(route, request, |request| next.run(request))
        .await
}

/// The bounds every request is held to before its route sees it: the target's length, the
/// HTTP/2 header list's size, the announced body's size, then the token (unless the route
/// is `open`).
fn admit<B>(
    state: &AppState,
    open: bool,
    request: &axum::http::Request<B>,
) -> Result<(), ApiError> {
    let len = request
        .uri()
        .path_and_query()
        .map_or(0, |pq| pq.as_str().len());
    // A declared body over the limit gets a JSON error here, before the body layer's own.
    let body = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
        .unwrap_or(0);
    let head = http2_header_list_size(request);
    let max_head = state.limits.max_header_bytes as usize;
    if len > MAX_URI_BYTES {
        Err(ApiError::TooLarge {
            part: RequestPart::Target,
            size: Some(len as u64),
            limit: MAX_URI_BYTES as u64,
        })
    } else if head > max_head {
        Err(ApiError::TooLarge {
            part: RequestPart::Head,
            size: Some(head as u64),
            limit: max_head as u64,
        })
    } else if body > MAX_BODY_BYTES as u64 {
        Err(ApiError::TooLarge {
            part: RequestPart::Body,
            size: Some(body),
            limit: MAX_BODY_BYTES as u64,
        })
    } else {
        authorize(state, open, request)
    }
}

/// An HTTP/2 request's header list size as RFC 9113 counts it (name, value and 32 bytes
/// per field, pseudo-fields included); 0 for HTTP/1, whose head hyper bounds as it reads.
///
/// The HTTP/2 layer lets lists up to twice `max_header_bytes` through so that this check,
/// not the protocol layer's empty 431, answers the usual oversized request.
fn http2_header_list_size<B>(request: &axum::http::Request<B>) -> usize {
    if request.version() != axum::http::Version::HTTP_2 {
        return 0;
    }
    const FIELD: usize = 32;
    let uri = request.uri();
    let pseudo = [
        ":method".len() + request.method().as_str().len(),
        ":path".len() + uri.path_and_query().map_or(0, |pq| pq.as_str().len()),
        ":scheme".len() + uri.scheme_str().map_or(0, str::len),
        ":authority".len() + uri.authority().map_or(0, |a| a.as_str().len()),
    ];
    pseudo.iter().map(|n| n + FIELD).sum::<usize>()
        + request
            .headers()
            .iter()
            .map(|(name, value)| name.as_str().len() + value.len() + FIELD)
            .sum::<usize>()
}

/// The token check, for every request but those to open routes.
fn authorize<B>(
    state: &AppState,
    open: bool,
    request: &axum::http::Request<B>,
) -> Result<(), ApiError> {
    if open {
        return Ok(());
    }
    let given = request.headers().get(header::AUTHORIZATION);
    service::authorize(state, given.map(|v| v.as_bytes()))
}

/// A JSON body with the right content type, built without a serializer on hot paths.
fn json(status: StatusCode, body: String) -> Response {
    answer(status, "application/json", body)
}

/// A response of `body` as `content_type`, built in place: the generic conversions (a
/// header name and value from strings) cost more than the single id they carry.
fn answer(status: StatusCode, content_type: &'static str, body: String) -> Response {
    let mut response = Response::new(axum::body::Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(content_type),
    );
    response
}
