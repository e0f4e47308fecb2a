//! Every route, declared once.
//!
//! A route is its handler's `#[utoipa::path(...)]`, collected in [`api`]. From that one
//! declaration come the router's method and path, the OpenAPI document, the label of the
//! route's metrics, whether it answers without the token (it says `security(())`; any
//! other route needs it), and the query parameters it takes.

use std::sync::{Arc, LazyLock};

use axum::body::Bytes;
use axum::extract::FromRef;
use snowmint::Layout;
use utoipa::OpenApi as _;
use utoipa::openapi::OpenApi;
use utoipa::openapi::path::ParameterIn;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::page::Page;
use super::schema::{self, Frame};
use super::{compose, decode, health, ids, layout, page, serials};
use crate::AppState;

/// What the HTTP handlers share: the server's state, and the page made for it. Cloned for
/// every request, so one shared allocation.
#[derive(Debug, Clone)]
pub struct Http(pub Arc<Shared>);

/// The contents of [`Http`].
#[derive(Debug)]
pub struct Shared {
    /// The server's state.
    pub app: AppState,
    /// The web page, with this server's limits in it.
    pub page: Page,
    /// The OpenAPI document, with this server's limits in it.
    pub document: Document,
}

/// The OpenAPI document of one server, as `GET /openapi.json` serves it: the declaration,
/// with the largest `count` this server takes. Made once per router.
#[derive(Debug, Clone)]
pub struct Document(pub Bytes);

impl Document {
    /// The document of a server that issues at most `max_batch` ids a request, with
    /// `layout`.
    pub fn new(max_batch: u64, layout: &Layout) -> Document {
        Document(Bytes::from(Document::json(max_batch, layout)))
    }

    /// The document's JSON, for a server that issues at most `max_batch` ids a request,
    /// with `layout`.
    pub fn json(max_batch: u64, layout: &Layout) -> String {
        schema::for_server(DOCUMENT.clone(), max_batch, layout)
            .to_pretty_json()
            .unwrap_or_else(|e| format!("{{\"error\":\"openapi: {e}\"}}"))
    }
}

impl FromRef<Http> for Document {
    fn from_ref(http: &Http) -> Document {
        http.0.document.clone()
    }
}

impl FromRef<Http> for AppState {
    fn from_ref(http: &Http) -> AppState {
        http.0.app.clone()
    }
}

impl FromRef<Http> for Page {
    fn from_ref(http: &Http) -> Page {
        http.0.page.clone()
    }
}

/// Every route.
pub fn api() -> OpenApiRouter<Http> {
    OpenApiRouter::with_openapi(Frame::openapi())
        .routes(routes!(page::index))
        .routes(routes!(ids::one))
        .routes(routes!(ids::many))
        .routes(routes!(decode::decode))
        .routes(routes!(layout::layout))
        .routes(routes!(compose::compose))
        .routes(routes!(compose::at))
        .routes(routes!(serials::issue_serials))
        .routes(routes!(serials::decode_serial))
        .routes(routes!(health::healthz))
        .routes(routes!(health::readyz))
        .routes(routes!(health::metrics))
        .routes(routes!(health::openapi))
}

/// The routes of the admin port: the probes and the metrics, the same handlers as in
/// [`api`], declared there; nothing that issues ids or serves the page.
pub fn admin() -> OpenApiRouter<Http> {
    OpenApiRouter::new()
        .routes(routes!(health::healthz))
        .routes(routes!(health::readyz))
        .routes(routes!(health::metrics))
}

/// What the layers in front of the handlers need to know of a route.
#[derive(Debug)]
pub struct Route {
    /// Its place in [`Declared::routes`], where tables by route look it up.
    pub index: usize,
    /// Its path template (`/v1/decode/{id}`), which labels its metrics.
    pub path: &'static str,
    /// Whether it answers without the token.
    pub open: bool,
    /// The query parameters it takes, in the order it declares them.
    pub query: Vec<&'static str>,
}

/// The declaration, read once per process.
#[derive(Debug)]
pub struct Declared {
    routes: Vec<Route>,
}

impl Declared {
    /// The route whose template is `path` (axum's `MatchedPath`).
    pub fn route(&self, path: &str) -> Option<&Route> {
        self.routes.iter().find(|route| route.path == path)
    }

    /// Every route, in the order of their indexes.
    pub fn routes(&self) -> &[Route] {
        &self.routes
    }
}

static DOCUMENT: LazyLock<OpenApi> = LazyLock::new(|| schema::finish(api().into_openapi()));

/// The routes as the front reads them.
pub static DECLARED: LazyLock<Declared> = LazyLock::new(|| Declared {
    routes: DOCUMENT
        .paths
        .paths
        .iter()
        .enumerate()
        .map(|(index, (path, item))| {
            let operations = || schema::operations(item);
            let mut query = Vec::new();
            for parameter in operations().flat_map(|op| op.parameters.iter().flatten()) {
                if parameter.parameter_in == ParameterIn::Query
                    && !query.contains(&parameter.name.as_str())
                {
                    query.push(parameter.name.as_str());
                }
            }
            Route {
                index,
                path,
                open: !operations().any(schema::needs_token),
                query,
            }
        })
        .collect(),
});
