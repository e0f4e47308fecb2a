//! `GET /v1/serials/{biz}` and `GET /v1/serials/decode/{serial}`: business serial numbers
//! made from new ids, and taken back apart.

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::{Extension, Json};

use super::ids::count_param;
use super::json;
use super::path::PathText;
use super::query::Params;
use crate::issue::{
    self, ConnShare, DecodeSerialRequest, DecodedSerial, Framing, SerialFormat, SerialsRequest,
};
use crate::{ApiError, AppState};

/// `{"serials":[...]}`: each serial quoted and followed by a comma, `{"serials":[` and `]}`
/// around them.
const JSON_SERIALS: Framing = Framing {
    per_item: 3,
    around: 14,
};

/// `?template=` and `?tz=`.
fn format_params(params: &Params) -> SerialFormat<'_> {
    SerialFormat {
        template: params.get("template"),
        tz: params.get("tz"),
    }
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
    let asked = SerialsRequest {
        biz: &biz,
        format: format_params(&params),
        count: count_param(&params),
    };
    let batch = asked.check(&state, JSON_SERIALS)?;
    let (ids, held) = issue::serials(&state, &batch, share.as_deref()).await?;
    let item_bytes = batch.serial_len() as u64 + JSON_SERIALS.per_item;
    let mut body =
        String::with_capacity((batch.count() * item_bytes + JSON_SERIALS.around) as usize);
    body.push_str("{\"serials\":[");
    for (i, id) in ids.into_iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        // Nothing in a serial needs escaping (see SerialBatch::write).
        body.push('"');
        batch.write(id, &mut body)?;
        body.push('"');
    }
    body.push_str("]}");
    let mut response = json(StatusCode::OK, body);
    response.extensions_mut().insert(held);
    Ok(response)
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
    let asked = DecodeSerialRequest {
        serial: &serial,
        format: format_params(&params),
    };
    Ok(Json(issue::decode_serial(&state, asked)?))
}
