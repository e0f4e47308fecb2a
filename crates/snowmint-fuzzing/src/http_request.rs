//! The HTTP API's request target, path and query, as a client sends it: fed in process to
//! the HTTP API as the server serves it ([`snowmint_server::http_api`]: the router, with
//! `GET /v1/id` answered in front of it; the path and query parsers are private to the
//! server), after one of the routes' prefixes so that most inputs reach a handler. Nothing
//! panics; no answer is a server error; every refusal to GET is the server's JSON error, one
//! lowercase line, and every answer to HEAD has no body.

use std::sync::LazyLock;

use arbitrary::Arbitrary;
use axum::body::Body;
use axum::http::{Method, Request, Uri, header};
use snowmint_server::{AppState, Config, HttpApi, IdSource, Settings};
use tower::ServiceExt;

/// Where each input starts: every route, and the root.
const PREFIXES: [&str; 13] = [
    "/",
    "/v1/id",
    "/v1/ids",
    "/v1/decode/",
    "/v1/layout",
    "/v1/compose",
    "/v1/at/",
    "/v1/serials/",
    "/v1/serials/decode/",
    "/healthz",
    "/readyz",
    "/metrics",
    "/openapi.json",
];

#[derive(Debug, Arbitrary)]
struct Input<'a> {
    prefix: u8,
    head: bool,
    rest: &'a [u8],
}

struct Server {
    runtime: tokio::runtime::Runtime,
    api: HttpApi,
    _state_dir: tempfile::TempDir,
}

/// One server for the whole run, with a small batch limit so that no input costs much.
static SERVER: LazyLock<Server> = LazyLock::new(|| {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        "state_dir = {:?}\ndatacenter = 2\nworker = 5\nmax_batch = 64",
        dir.path()
    );
    let config =
        Config::try_from(Settings::from_toml(&toml, "fuzz.toml".as_ref()).unwrap()).unwrap();
    let source = runtime.block_on(IdSource::start(&config)).unwrap();
    let api = snowmint_server::http_api(AppState::for_config(source, &config));
    Server {
        runtime,
        api,
        _state_dir: dir,
    }
});

/// Feeds the bytes, as a route's prefix, GET or HEAD and the rest of the request target, to
/// the HTTP API.
pub fn check(data: &[u8]) {
    let Some(input) = crate::input::<Input>(data) else {
        return;
    };
    let mut target = PREFIXES[usize::from(input.prefix) % PREFIXES.len()]
        .as_bytes()
        .to_vec();
    target.extend_from_slice(input.rest);
    // What is no request target never reaches the API: the HTTP layer refuses it.
    let Ok(uri) = Uri::try_from(target) else {
        return;
    };
    let method = if input.head {
        Method::HEAD
    } else {
        Method::GET
    };
    let request = Request::builder()
        .method(method)
        .uri(uri.clone())
        .body(Body::empty())
        .unwrap();
    let server = &*SERVER;
    let (status, content_type, body) = server.runtime.block_on(async {
        let response = server.api.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let content_type = response.headers().get(header::CONTENT_TYPE).cloned();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        (status, content_type, body)
    });
    assert!(!status.is_server_error(), "{uri}: {status} {body:?}");
    if input.head {
        // An answer to HEAD is the head of the answer to GET: no body.
        assert!(body.is_empty(), "{uri}: HEAD answered {body:?}");
    } else if status.is_client_error() {
        assert_eq!(
            content_type.as_ref().map(|v| v.as_bytes()),
            Some(&b"application/json"[..]),
            "{uri}: {status}"
        );
        let error: serde_json::Value = serde_json::from_slice(&body)
            .unwrap_or_else(|e| panic!("{uri}: {status}: {e}: {body:?}"));
        let message = error["error"].as_str().unwrap();
        assert!(
            !message.is_empty() && !message.contains('\n'),
            "{uri}: {message:?}"
        );
        assert!(
            !message.starts_with(|c: char| c.is_uppercase()),
            "{uri}: {message:?}"
        );
    }
}
