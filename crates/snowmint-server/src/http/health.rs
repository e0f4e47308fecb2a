//! Probes, metrics and the API description.

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use super::routes::Document;
use crate::AppState;

/// `{"status": "ok"}` or `{"status": "ready"}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Status {
    /// `ok` or `ready`.
    #[schema(example = "ok")]
    pub status: &'static str,
}

/// `{"status": "not ready", "error": "..."}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct NotReady {
    /// `not ready`.
    #[schema(example = "not ready")]
    pub status: &'static str,
    /// Why.
    pub error: String,
}

/// `GET /healthz`: the process is alive.
#[utoipa::path(get, path = "/healthz", tag = "server", summary = "Liveness: the process is alive",
    responses((status = 200, description = "Alive", body = Status)),
    // Open: probes must work without secrets.
    security(()))]
pub async fn healthz() -> Json<Status> {
    Json(Status { status: "ok" })
}

/// `GET /readyz`: 200 while ids may be issued, 503 with the reason otherwise.
#[utoipa::path(get, path = "/readyz", tag = "server", summary = "Readiness: may this process issue ids now?",
    responses(
        (status = 200, description = "Ready", body = Status),
        (status = 503, description = "Not ready, with the reason", body = NotReady),
    ),
    security(()))]
pub async fn readyz(State(state): State<AppState>) -> Response {
    match state.source.readiness() {
        Ok(_) => Json(Status { status: "ready" }).into_response(),
        Err(error) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(NotReady {
                status: "not ready",
                error,
            }),
        )
            .into_response(),
    }
}

/// `GET /metrics`: OpenMetrics text, which Prometheus scrapes.
#[utoipa::path(get, path = "/metrics", tag = "server", summary = "Prometheus metrics, all named snowmint_*",
    responses((status = 200, description = "OpenMetrics text", content_type = "application/openmetrics-text", body = String)))]
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
    responses((status = 200, description = "OpenAPI 3 JSON", content_type = "application/json", body = Object)))]
pub async fn openapi(State(Document(document)): State<Document>) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], document).into_response()
}
