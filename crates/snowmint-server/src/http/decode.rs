//! `GET /v1/decode/{id}`: what an id is made of.

use axum::Json;
use axum::extract::State;
use snowmint::Decoded;

use super::path::PathText;
use super::query::Params;
use super::schema::{EncodingName, ErrorBody, IdText, LayoutName};
use crate::service::{self, DecodeRequest};
use crate::{ApiError, AppState};

/// `GET /v1/decode/{id}[?layout=LAYOUT&tick_ms=MS]`: the id in any encoding, taken apart
/// with the server's layout, a preset or a custom layout; the keys of `snowmint parse --json`.
#[utoipa::path(
    get,
    path = "/v1/decode/{id}",
    tag = "ids",
    summary = "Take an id apart",
    params(
        ("id" = inline(IdText), Path, description = "The id: decimal, hex (0x...), Crockford base32 (13 chars), base62 (11 chars) or binary (0b...), read in the encoding ?encoding= names, or else in the one its form suggests. A negative decimal is an id as a signed 64-bit column holds it: read as the two's complement for a layout that uses all 64 bits, refused for a layout of 63"),
        ("encoding" = inline(Option<EncodingName>), Query, description = "How to read the id; default: guessed from its form (digits only is decimal, 0x hex, 0b binary, 13 characters base32, 11 base62, 16 hex). All-digit hex or base32, and base62 without padding, must be named"),
        ("layout" = inline(Option<LayoutName>), Query, description = "A preset or custom:T/D/W/S layout to decode with; default: the server's layout"),
        ("tick_ms" = Option<u64>, Query, minimum = 1, description = "Milliseconds per tick of the layout given; default: the preset's own, 1 for a custom layout. The maximum is the largest tick any layout takes; the layout given takes only a tick that keeps its span within 64 bits of milliseconds, which depends on the layout"),
    ),
    responses(
        (status = 200, description = "The id's parts", body = Decoded),
        (status = 400, description = "Malformed or out-of-range id, or unknown layout", body = ErrorBody),
    ),
)]
pub async fn decode(
    State(state): State<AppState>,
    PathText(text): PathText,
    params: Params,
) -> Result<Json<Decoded>, ApiError> {
    let tick_ms = match params.get("tick_ms") {
        None => None,
        Some(text) => Some(text.parse::<u64>().map_err(|_| {
            ApiError::BadRequest(format!(
                "tick_ms {text:?} is not a whole number of milliseconds 1..={}",
                u64::MAX
            ))
        })?),
    };
    let asked = DecodeRequest {
        id: &text,
        encoding: params.get("encoding"),
        layout: params.get("layout"),
        tick_ms,
    };
    Ok(Json(service::decode(&state, asked)?))
}
