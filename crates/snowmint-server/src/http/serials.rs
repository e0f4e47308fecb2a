//! `GET /v1/serials/{biz}` and `GET /v1/serials/decode/{serial}`: business serial numbers
//! made from new ids, and taken back apart.

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::{Extension, Json};
use serde::Serialize;
use snowmint::BizCode;
use snowmint::serial::{Template, Zone};

use super::ids::count_param;
use super::json;
use super::path::PathText;
use super::query::Params;
use crate::issue::{ConnShare, issue};
use crate::{ApiError, AppState};

/// `{"serials":[` and `]}` around the serials.
const JSON_SERIALS_OVERHEAD: u64 = 14;

/// `?template=` and `?tz=`, over the server's layout.
fn format_params(state: &AppState, params: &Params) -> Result<(Template, Zone), ApiError> {
    let template = Template::parse(
        params.get("template").unwrap_or(Template::DEFAULT),
        state.layout(),
    )?;
    let zone = params.get("tz").map_or(Ok(Zone::UTC), Zone::parse)?;
    Ok((template, zone))
}

/// `GET /v1/serials/{biz}?count=N[&template=T][&tz=+08:00]`: `{"serials":[...]}`.
#[utoipa::path(
    get,
    path = "/v1/serials/{biz}",
    tag = "serials",
    summary = "Business serial numbers made from new ids",
    params(
        ("biz" = String, Path, description = "Business code: 1 to 16 of A-Z and 0-9"),
        ("count" = u64, Query, description = "How many: 1 to the server's max_batch"),
        ("template" = Option<String>, Query, description = "Fields {biz} {time} {node} {seq} {check}; default {biz}{time}{node}{seq}"),
        ("tz" = Option<String>, Query, description = "UTC (default) or a fixed offset such as +08:00"),
    ),
    responses(
        (status = 200, description = "The serials, in issue order", body = super::schema::SerialsBody),
        (status = 400, description = "Bad business code, template, zone or count, or a response larger than max_response_bytes", body = super::schema::ErrorBody),
        (status = 401, description = "Missing or wrong bearer token", body = super::schema::ErrorBody),
        (status = 503, description = "Not ready, or no room for more ids in flight (max_ids_in_flight, max_ids_in_flight_per_connection) within 5 s", body = super::schema::ErrorBody),
    ),
    security((), ("bearer" = []))
)]
pub async fn issue_serials(
    State(state): State<AppState>,
    share: Option<Extension<ConnShare>>,
    PathText(biz): PathText,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let params = Params::parse(raw.as_deref(), &["count", "template", "tz"])?;
    let biz = BizCode::new(&biz)?;
    let (template, zone) = format_params(&state, &params)?;
    let count = count_param(&params, state.max_batch)?;
    // Each serial is quoted and followed by a comma.
    let item_bytes = template.serial_len(&biz) as u64 + 3;
    state.check_response_size(count, "serials", item_bytes, JSON_SERIALS_OVERHEAD)?;
    let (ids, held) = issue(&state, count, share.as_deref()).await?;
    let mut body = String::with_capacity((count * item_bytes + JSON_SERIALS_OVERHEAD) as usize);
    body.push_str("{\"serials\":[");
    for (i, id) in ids.into_iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        // Serials are digits, A-Z and the separators - _ . / and space: nothing to escape.
        body.push('"');
        template.write_to(&mut body, &biz, id, &zone)?;
        body.push('"');
    }
    body.push_str("]}");
    let mut response = json(StatusCode::OK, body);
    response.extensions_mut().insert(held);
    Ok(response)
}

/// A serial taken apart.
#[derive(Debug, Serialize)]
pub struct DecodedSerial {
    serial: String,
    biz: Option<String>,
    #[serde(flatten)]
    decoded: snowmint::Decoded,
}

/// `GET /v1/serials/decode/{serial}[?template=T][&tz=+08:00]`: its business code and the
/// keys of `snowmint parse --json`.
#[utoipa::path(
    get,
    path = "/v1/serials/decode/{serial}",
    tag = "serials",
    summary = "Take a serial apart",
    params(
        ("serial" = String, Path, description = "A serial made with the same template and zone"),
        ("template" = Option<String>, Query, description = "The template it was made with (default {biz}{time}{node}{seq})"),
        ("tz" = Option<String>, Query, description = "The zone it was made in (default UTC)"),
    ),
    responses(
        (status = 200, description = "Its parts and the id it came from", body = super::schema::DecodedSerialBody),
        (status = 400, description = "Wrong length, bad field or check digit, or a bad template", body = super::schema::ErrorBody),
        (status = 401, description = "Missing or wrong bearer token", body = super::schema::ErrorBody),
    ),
    security((), ("bearer" = []))
)]
pub async fn decode_serial(
    State(state): State<AppState>,
    PathText(serial): PathText,
    RawQuery(raw): RawQuery,
) -> Result<Json<DecodedSerial>, ApiError> {
    let params = Params::parse(raw.as_deref(), &["template", "tz"])?;
    let (template, zone) = format_params(&state, &params)?;
    let parsed = template.parse_serial(&serial, &zone)?;
    Ok(Json(DecodedSerial {
        serial,
        biz: parsed.biz.map(|b| b.as_str().to_string()),
        decoded: parsed.decoded(),
    }))
}
