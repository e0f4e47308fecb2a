//! `GET /v1/compose` and `GET /v1/at/{time}`: ids written down from chosen parts, and the
//! ids that bound an instant. Nothing is issued.

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use snowmint::Id;

use super::ids::IdBody;
use super::path::PathText;
use super::query::{Format, Params};
use super::schema::{ErrorBody, LayoutName, TimeText};
use crate::service::{self, AtRequest, ComposeRequest};
use crate::{ApiError, AppState};

/// `GET /v1/compose?time=..&datacenter=..&worker=..&sequence=..[&layout=..][&format=..]`:
/// the id made of these parts, as `/v1/id` writes one.
#[utoipa::path(
    get,
    path = "/v1/compose",
    tag = "ids",
    summary = "Compose an id from a time, a datacenter, a worker and a sequence",
    params(
        ("time" = inline(Option<TimeText>), Query, description = "Milliseconds since the Unix epoch or an RFC 3339 time, up to 9999-12-31T23:59:59.999Z; default: now. It must fall within the span of the layout given (or the server's), which the document cannot say, as it depends on the layout"),
        ("datacenter" = Option<u64>, Query, description = "Datacenter id; default 0"),
        ("worker" = Option<u64>, Query, description = "Worker id; default 0"),
        ("sequence" = Option<u64>, Query, description = "Sequence number; default 0"),
        ("layout" = inline(Option<LayoutName>), Query, description = "A preset or custom:T/D/W/S layout to compose with; default: the server's layout"),
        ("format" = inline(Option<Format>), Query, description = "How the id is written (default decimal); int for a JSON number"),
    ),
    responses(
        (status = 200, description = "The id", body = IdBody),
        (status = 400, description = "A part out of the layout's range (named with its range), a time that is no time or outside the layout's span, an unknown layout or format", body = ErrorBody),
    ),
)]
pub async fn compose(State(state): State<AppState>, params: Params) -> Result<IdBody, ApiError> {
    let format = Format::from_params(&params)?;
    let asked = ComposeRequest {
        time: params.get("time"),
        datacenter: params.get("datacenter"),
        worker: params.get("worker"),
        sequence: params.get("sequence"),
        layout: params.get("layout"),
    };
    let id = service::compose(&state, asked)?;
    Ok(IdBody::new(id, format))
}

/// The answer of `GET /v1/at/{time}`: every id of the instant's tick lies between them.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Bounds {
    /// The smallest id of the tick: every other field 0 (a decimal string).
    #[schema(value_type = String, example = "1741610183685046272")]
    pub first: Id,
    /// The largest id of the tick: every other field at its largest (a decimal string).
    #[schema(value_type = String, example = "1741610183689240575")]
    pub last: Id,
}

/// `GET /v1/at/{time}[?layout=PRESET]`: the smallest and the largest id of the tick the
/// instant falls in, for `WHERE id BETWEEN first AND last`.
#[utoipa::path(
    get,
    path = "/v1/at/{time}",
    tag = "ids",
    summary = "The first and last id of an instant",
    params(
        ("time" = inline(TimeText), Path, description = "Milliseconds since the Unix epoch or an RFC 3339 time, up to 9999-12-31T23:59:59.999Z. It must fall within the span of the layout given (or the server's), which the document cannot say, as it depends on the layout"),
        ("layout" = inline(Option<LayoutName>), Query, description = "A preset or custom:T/D/W/S layout; default: the server's layout"),
    ),
    responses(
        (status = 200, description = "The bounds", body = Bounds),
        (status = 400, description = "A time that is no time or outside the layout's span, or an unknown layout", body = ErrorBody),
    ),
)]
pub async fn at(
    State(state): State<AppState>,
    PathText(time): PathText,
    params: Params,
) -> Result<Json<Bounds>, ApiError> {
    let asked = AtRequest {
        time: &time,
        layout: params.get("layout"),
    };
    let (first, last) = service::ids_at(&state, asked)?;
    Ok(Json(Bounds { first, last }))
}
