//! `GET /v1/id` and `GET /v1/ids`: the ids themselves.

use axum::Extension;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::accept::{Answer, negotiate};
use super::json;
use super::query::{Format, Params};
use crate::issue::{self, ConnShare, Count, Framing, IdsRequest};
use crate::{ApiError, AppState};

/// `GET /v1/id[?format=...]`: `{"id":"..."}`.
#[utoipa::path(
    get,
    path = "/v1/id",
    tag = "ids",
    summary = "One id",
    params(("format" = inline(Option<Format>), Query, description = "How the id is written (default decimal); int for a JSON number")),
    responses(
        (status = 200, description = "The id; a string unless format=int", body = super::schema::IdBody),
        (status = 400, description = "Unknown format or parameter", body = super::schema::ErrorBody),
        (status = 401, description = "Missing or wrong bearer token", body = super::schema::ErrorBody),
        (status = 503, description = "Not ready: clock behind the high-water mark, or shutting down", body = super::schema::ErrorBody),
    ),
    security((), ("bearer" = []))
)]
pub async fn one(
    State(state): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let params = Params::parse(raw.as_deref(), &["format"])?;
    let format = Format::from_params(&params)?;
    let id = issue::one(&state)?;
    let mut body = String::with_capacity(32);
    body.push_str("{\"id\":");
    format.push_json(id, &mut body);
    body.push('}');
    Ok(json(StatusCode::OK, body))
}

/// `GET /v1/ids?count=N[&format=...]`: `{"ids":[...]}`, or one id per line with
/// `Accept: text/plain`.
#[utoipa::path(
    get,
    path = "/v1/ids",
    tag = "ids",
    summary = "Many unique, increasing ids",
    params(
        ("count" = u64, Query, description = "How many: 1 to the server's max_batch (default 100000)"),
        ("format" = inline(Option<Format>), Query, description = "How the ids are written (default decimal); int for JSON numbers"),
    ),
    responses(
        (status = 200, description = "The ids, increasing", content(
            (super::schema::IdsBody = "application/json"),
            (String = "text/plain", example = "7389021983019802624\n7389021983019802625\n"),
        )),
        (status = 400, description = "count missing or out of range, a response larger than max_response_bytes, or an unknown parameter", body = super::schema::ErrorBody),
        (status = 401, description = "Missing or wrong bearer token", body = super::schema::ErrorBody),
        (status = 503, description = "Not ready, or no room for more ids in flight (max_ids_in_flight, max_ids_in_flight_per_connection) within 5 s", body = super::schema::ErrorBody),
    ),
    security((), ("bearer" = []))
)]
pub async fn many(
    State(state): State<AppState>,
    share: Option<Extension<ConnShare>>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let params = Params::parse(raw.as_deref(), &["count", "format"])?;
    let format = Format::from_params(&params)?;
    let plain = wants_plain_text(&headers);
    let asked = IdsRequest {
        count: count_param(&params),
        id_bytes: format.max_len(),
    };
    let framing = if plain {
        // One id a line.
        Framing {
            per_item: 1,
            around: 0,
        }
    } else {
        format.json_framing()
    };
    let batch = asked.check(&state, framing)?;
    let (ids, held) = issue::ids(&state, batch, share.as_deref()).await?;
    let mut response = if plain {
        let mut body = String::with_capacity(ids.len() * 20);
        for id in ids {
            format.push_text(id, &mut body);
            body.push('\n');
        }
        ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], body).into_response()
    } else {
        let mut body = String::with_capacity(ids.len() * 22 + 10);
        body.push_str("{\"ids\":[");
        for (i, id) in ids.into_iter().enumerate() {
            if i > 0 {
                body.push(',');
            }
            format.push_json(id, &mut body);
        }
        body.push_str("]}");
        json(StatusCode::OK, body)
    };
    // The ids' room in the budget lasts until the transport has taken the body.
    response.extensions_mut().insert(held);
    Ok(response)
}

/// `?count=`, as given.
pub fn count_param(params: &Params) -> Count<'_> {
    match params.get("count") {
        Some(text) => Count::Text("count", text),
        None => Count::Missing("query parameter \"count\""),
    }
}

/// Whether the client prefers plain text to JSON, by its `Accept` headers' q-values (several
/// header lines count as one list).
fn wants_plain_text(headers: &HeaderMap) -> bool {
    let lines: Vec<&str> = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    let accept = (!lines.is_empty()).then(|| lines.join(","));
    negotiate(accept.as_deref()) == Answer::PlainText
}
