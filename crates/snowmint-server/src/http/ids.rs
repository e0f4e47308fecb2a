//! `GET /v1/id` and `GET /v1/ids`: the ids themselves.

use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use snowmint::Id;
use utoipa::ToSchema;

use super::accept::Accept;
use super::{answer, json};

/// The content type of ids as text.
const TEXT: &str = "text/plain; charset=utf-8";
use super::query::{Format, Params};
use super::schema::{self, ErrorBody};
use crate::service::{self, Caller, Count, Framing, IdsRequest};
use crate::{ApiError, AppState};

/// `{"id": ...}`: one id.
// Written by hand, as the ids below: no serializer on the hot path.
#[derive(Debug, ToSchema)]
pub struct IdBody {
    /// The id.
    #[schema(schema_with = schema::id_schema)]
    id: Id,
    #[schema(ignore)]
    format: Format,
}

impl IdBody {
    /// One id, written in `format`.
    pub fn new(id: Id, format: Format) -> IdBody {
        IdBody { id, format }
    }
}

impl IntoResponse for IdBody {
    fn into_response(self) -> Response {
        let mut body = String::with_capacity(32);
        body.push_str("{\"id\":");
        self.format.push_json(self.id, &mut body);
        body.push('}');
        json(StatusCode::OK, body)
    }
}

/// `{"ids": [...]}`: strictly increasing ids.
#[derive(Debug, ToSchema)]
pub struct IdsBody {
    /// The ids.
    #[schema(schema_with = schema::ids_schema)]
    ids: Vec<Id>,
    #[schema(ignore)]
    format: Format,
}

impl IntoResponse for IdsBody {
    fn into_response(self) -> Response {
        let framing = self.format.json_framing();
        let per_id = self.format.max_len() + framing.per_item;
        let mut body = String::with_capacity(self.ids.len() * per_id as usize + 10);
        body.push_str("{\"ids\":[");
        for (i, id) in self.ids.into_iter().enumerate() {
            if i > 0 {
                body.push(',');
            }
            self.format.push_json(id, &mut body);
        }
        body.push_str("]}");
        json(StatusCode::OK, body)
    }
}

/// Ids as plain text, one a line.
#[derive(Debug)]
struct IdLines {
    ids: Vec<Id>,
    format: Format,
}

impl IdLines {
    const FRAMING: Framing = Framing {
        per_item: 1,
        around: 0,
    };
}

impl IntoResponse for IdLines {
    fn into_response(self) -> Response {
        let mut body = String::with_capacity(self.ids.len() * (self.format.max_len() as usize + 1));
        for id in self.ids {
            self.format.push_text(id, &mut body);
            body.push('\n');
        }
        answer(StatusCode::OK, TEXT, body)
    }
}

/// One id as plain text: the id and a newline, as one line of `/v1/ids`.
#[derive(Debug)]
struct IdLine {
    id: Id,
    format: Format,
}

impl IntoResponse for IdLine {
    fn into_response(self) -> Response {
        let mut body = String::with_capacity(self.format.max_len() as usize + 1);
        self.format.push_text(self.id, &mut body);
        body.push('\n');
        answer(StatusCode::OK, TEXT, body)
    }
}

/// `GET /v1/id[?format=...]`, as JSON or, with `Accept: text/plain`, the bare id and a
/// newline.
#[utoipa::path(
    get,
    path = "/v1/id",
    tag = "ids",
    summary = "One id",
    params(("format" = inline(Option<Format>), Query, description = "How the id is written (default decimal); int for a JSON number")),
    responses(
        (status = 200, description = "The id", content(
            (IdBody = "application/json"),
            (String = "text/plain", example = "7389021983019802624\n"),
        )),
        (status = 400, description = "Unknown format or parameter", body = ErrorBody),
        (status = 503, description = "Not ready: clock behind the high-water mark, or shutting down", body = ErrorBody),
    ),
)]
pub async fn one(
    State(state): State<AppState>,
    accept: Accept,
    params: Params,
) -> Result<Response, ApiError> {
    answer_one(&state, accept, &params).await
}

/// What [`one`] answers, once its request is read; the fast path in front of the router
/// answers through it too.
pub async fn answer_one(
    state: &AppState,
    accept: Accept,
    params: &Params,
) -> Result<Response, ApiError> {
    let format = Format::from_params(params)?;
    let id = service::one(state).await?;
    Ok(if accept.plain_text() {
        IdLine { id, format }.into_response()
    } else {
        IdBody { id, format }.into_response()
    })
}

/// `GET /v1/ids?count=N[&format=...]`, as JSON or, with `Accept: text/plain`, one id a line.
#[utoipa::path(
    get,
    path = "/v1/ids",
    tag = "ids",
    summary = "Many unique, increasing ids",
    params(
        ("count" = u64, Query, minimum = 1, description = "How many: 1 to the server's max_batch (its maximum here)"),
        ("format" = inline(Option<Format>), Query, description = "How the ids are written (default decimal); int for JSON numbers"),
    ),
    responses(
        (status = 200, description = "The ids, increasing", content(
            (IdsBody = "application/json"),
            (String = "text/plain", example = "7389021983019802624\n7389021983019802625\n"),
        )),
        (status = 400, description = "count missing or out of range, a response larger than max_response_bytes, or an unknown parameter", body = ErrorBody),
        (status = 503, description = "Not ready, or no room for more ids in flight (max_ids_in_flight and a client's fair share of it, max_ids_in_flight_per_connection) within 5 s", body = ErrorBody),
    ),
)]
pub async fn many(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    accept: Accept,
    params: Params,
) -> Result<Response, ApiError> {
    let format = Format::from_params(&params)?;
    let plain = accept.plain_text();
    let asked = IdsRequest {
        count: count_param(&params),
        id_bytes: format.max_len(),
    };
    let framing = if plain {
        IdLines::FRAMING
    } else {
        format.json_framing()
    };
    let batch = asked.check(&state, framing)?;
    let (ids, room) = service::ids(&state, batch, caller.as_deref(), None).await?;
    let mut response = if plain {
        IdLines { ids, format }.into_response()
    } else {
        IdsBody { ids, format }.into_response()
    };
    // The ids' room in the budget lasts until the transport has taken the body, or until
    // its drain deadline.
    response.extensions_mut().insert(room);
    Ok(response)
}

/// `?count=`, as given.
pub fn count_param(params: &Params) -> Count<'_> {
    match params.get("count") {
        Some(text) => Count::Text("count", text),
        None => Count::Missing("query parameter \"count\""),
    }
}
