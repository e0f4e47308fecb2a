//! Probes, metrics and the API description.

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::json;
use crate::AppState;

/// `GET /healthz`: the process is alive.
pub async fn healthz() -> Response {
    json(StatusCode::OK, r#"{"status":"ok"}"#.into())
}

/// `GET /readyz`: 200 while ids may be issued, 503 with the reason otherwise.
pub async fn readyz(State(state): State<AppState>) -> Response {
    match state.source.readiness() {
        Ok(()) => json(StatusCode::OK, r#"{"status":"ready"}"#.into()),
        Err(reason) => {
            let body = serde_json::json!({ "status": "not ready", "error": reason });
            json(StatusCode::SERVICE_UNAVAILABLE, body.to_string())
        }
    }
}

/// `GET /metrics`: OpenMetrics text, which Prometheus scrapes.
pub async fn metrics(State(state): State<AppState>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.metrics.render(),
    )
        .into_response()
}

/// `GET /openapi.json`: the OpenAPI 3 description of this API.
pub async fn openapi() -> Response {
    json(StatusCode::OK, crate::openapi::document())
}
