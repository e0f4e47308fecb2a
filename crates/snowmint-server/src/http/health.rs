//! Probes, metrics and the API description.

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::json;
use crate::AppState;

/// `GET /healthz`: the process is alive.
#[utoipa::path(get, path = "/healthz", tag = "server", summary = "Liveness: the process is alive",
    responses((status = 200, description = "Alive", body = super::schema::StatusBody)))]
pub async fn healthz() -> Response {
    json(StatusCode::OK, r#"{"status":"ok"}"#.into())
}

/// `GET /readyz`: 200 while ids may be issued, 503 with the reason otherwise.
#[utoipa::path(get, path = "/readyz", tag = "server", summary = "Readiness: may this process issue ids now?",
    responses(
        (status = 200, description = "Ready", body = super::schema::StatusBody),
        (status = 503, description = "Not ready, with the reason", body = super::schema::NotReadyBody),
    ))]
pub async fn readyz(State(state): State<AppState>) -> Response {
    match state.source.readiness() {
        Ok(_) => json(StatusCode::OK, r#"{"status":"ready"}"#.into()),
        Err(reason) => {
            let body = serde_json::json!({ "status": "not ready", "error": reason });
            json(StatusCode::SERVICE_UNAVAILABLE, body.to_string())
        }
    }
}

/// `GET /metrics`: OpenMetrics text, which Prometheus scrapes.
#[utoipa::path(get, path = "/metrics", tag = "server", summary = "Prometheus metrics, all named snowmint_*",
    responses(
        (status = 200, description = "OpenMetrics text", content_type = "application/openmetrics-text", body = String),
        (status = 401, description = "Missing or wrong bearer token", body = super::schema::ErrorBody),
    ),
    security((), ("bearer" = [])))]
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
#[utoipa::path(get, path = "/openapi.json", tag = "server", summary = "This document",
    responses(
        (status = 200, description = "OpenAPI 3 JSON", content_type = "application/json", body = Object),
        (status = 401, description = "Missing or wrong bearer token", body = super::schema::ErrorBody),
    ),
    security((), ("bearer" = [])))]
pub async fn openapi() -> Response {
    json(StatusCode::OK, super::schema::document())
}
