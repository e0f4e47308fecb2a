//! `GET /v1/serials/{biz}` and `GET /v1/serials/decode/{serial}`: business serial numbers
//! made from new ids, and taken back apart.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::{Extension, Json};
use snowmint::Id;
use utoipa::ToSchema;

use super::ids::count_param;
use super::json;
use super::path::PathText;
use super::query::Params;
use super::schema::{BizName, ErrorBody, ZoneName};
use crate::service::{
    self, Caller, DecodeSerialRequest, DecodedSerial, Framing, SerialBatch, SerialFormat,
    SerialsRequest,
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

/// `{"serials": [...]}`.
// Holds the ids the serials are made from, and writes each serial into the body by hand.
#[derive(Debug, ToSchema)]
pub struct SerialsBody {
    /// Serials in issue order; one business code's serials sort as strings in that order.
    #[schema(value_type = Vec<String>, example = json!(["PAY2026112215304512300340007"]))]
    serials: Vec<Id>,
    #[schema(ignore)]
    batch: SerialBatch,
}

impl SerialsBody {
    fn render(self) -> Result<Response, ApiError> {
        let item_bytes = self.batch.serial_len() as u64 + JSON_SERIALS.per_item;
        let capacity = self.batch.count() * item_bytes + JSON_SERIALS.around;
        let mut body = String::with_capacity(capacity as usize);
        body.push_str("{\"serials\":[");
        for (i, id) in self.serials.into_iter().enumerate() {
            if i > 0 {
                body.push(',');
            }
            // Nothing in a serial needs escaping (see SerialBatch::write).
            body.push('"');
            self.batch.write(id, &mut body)?;
            body.push('"');
        }
        body.push_str("]}");
        Ok(json(StatusCode::OK, body))
    }
}

/// `GET /v1/serials/{biz}?count=N[&template=T][&tz=+08:00]`.
#[utoipa::path(
    get,
    path = "/v1/serials/{biz}",
    tag = "serials",
    summary = "Business serial numbers made from new ids",
    params(
        ("biz" = inline(BizName), Path),
        ("count" = u64, Query, minimum = 1, description = "How many: 1 to the server's max_batch (its maximum here)"),
        ("template" = Option<String>, Query, description = "Fields {biz} {time} {node} {seq} {check}; default {biz}{time}{node}{seq}"),
        ("tz" = inline(Option<ZoneName>), Query),
    ),
    responses(
        (status = 200, description = "The serials, in issue order", body = SerialsBody),
        (status = 400, description = "Bad business code, template, zone or count, or a response larger than max_response_bytes", body = ErrorBody),
        (status = 503, description = "Not ready, or no room for more ids in flight (max_ids_in_flight and a client's fair share of it, max_ids_in_flight_per_connection) within 5 s", body = ErrorBody),
    ),
)]
pub async fn issue_serials(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    PathText(biz): PathText,
    params: Params,
) -> Result<Response, ApiError> {
    let asked = SerialsRequest {
        biz: &biz,
        format: format_params(&params),
        count: count_param(&params),
    };
    let batch = asked.check(&state, JSON_SERIALS)?;
    let (serials, room) = service::serials(&state, &batch, caller.as_deref()).await?;
    let mut response = SerialsBody { serials, batch }.render()?;
    // The ids' room in the budget lasts until the transport has taken the body, or until
    // its drain deadline.
    response.extensions_mut().insert(room);
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
        ("serial" = String, Path, description = "A serial made with the same template and zone: its length and fields must match the template's, which depends on the template"),
        ("template" = Option<String>, Query, description = "The template it was made with (default {biz}{time}{node}{seq})"),
        ("tz" = inline(Option<ZoneName>), Query, description = "The zone it was made in (default UTC)"),
    ),
    responses(
        (status = 200, description = "Its parts and the id it came from", body = DecodedSerial),
        (status = 400, description = "Wrong length, bad field or check digit, or a bad template", body = ErrorBody),
    ),
)]
pub async fn decode_serial(
    State(state): State<AppState>,
    PathText(serial): PathText,
    params: Params,
) -> Result<Json<DecodedSerial>, ApiError> {
    let asked = DecodeSerialRequest {
        serial: &serial,
        format: format_params(&params),
    };
    Ok(Json(service::decode_serial(&state, asked)?))
}
