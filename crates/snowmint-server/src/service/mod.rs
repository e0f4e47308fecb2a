//! The protocol-neutral service layer: issuing and checking, once for every protocol.
//!
//! A protocol is an adapter over this module and nothing more. It reads its request into
//! one of the requests here ([`IdsRequest`], [`SerialsRequest`], [`DecodeRequest`],
//! [`DecodeSerialRequest`], [`ComposeRequest`], [`AtRequest`]); checking that request is this module's work: the count
//! against `max_batch`, the response's size against `max_response_bytes`, the business
//! code, the template, the zone and the layout, each with its one error text. It calls the
//! operation ([`one`], [`ids`], [`serials`], [`decode`], [`decode_serial`], [`compose`],
//! [`ids_at`]) and writes the
//! answer in its own wire format. The bearer token is checked here too ([`authorize`]), and
//! so are what Twitter's Thrift service checked: the user agent ([`user_agent`]) and the
//! worker ids it issues as ([`worker`]).
//!
//! So HTTP, gRPC and Thrift refuse the same request for the same reason, in the same words, and a
//! new protocol needs only its adapter. Ids come through the [`budget`] of ids in flight.

mod agent;
mod budget;
mod fair;
mod origin;
mod request;
mod room;
mod tokens;

pub use agent::{user_agent, worker};
pub use budget::Budget;
pub use origin::{Caller, Origin, TrustedProxies};
pub use request::{
    AtRequest, Batch, ComposeRequest, Count, DecodeRequest, DecodeSerialRequest, DecodedSerial,
    Framing, IdsRequest, SerialBatch, SerialFormat, SerialsRequest,
};
pub use room::{Drain, Room};
pub use tokens::{TokenSource, Tokens};

use snowmint::{Clock, Decoded, Encoding, Id, Layout, UnixMs, WallClock};

use crate::{ApiError, AppState};

/// Checks the token a request carries (the value of an HTTP `Authorization` header or of
/// gRPC `authorization` metadata), when the server takes tokens. The comparison takes the
/// same time wherever the given token differs, so the answer's timing does not leak a
/// token ([`Tokens::admit`]).
///
/// # Errors
///
/// [`ApiError::Unauthorized`] if it is missing or wrong.
pub fn authorize(state: &AppState, authorization: Option<&[u8]>) -> Result<(), ApiError> {
    match &state.auth {
        Some(tokens) if !tokens.admit(authorization) => Err(ApiError::Unauthorized),
        _ => Ok(()),
    }
}

/// One id. A request that must wait for the clock waits on the runtime's timer
/// ([`IdSource::next_id`](crate::IdSource::next_id)), holding no thread.
///
/// # Errors
///
/// Not ready, or the generator refused.
pub async fn one(state: &AppState) -> Result<Id, ApiError> {
    let id = state.source.next_id().await?;
    state.metrics.ids_issued.inc();
    Ok(id)
}

/// The ids of `batch`, with the room they hold in the budget until the response carrying
/// them is handed to the transport (put the [`Room`] in the response's extensions), or
/// until its drain deadline, when `drain` (the response's, for one message of a stream;
/// a new one if `None`) abandons it.
///
/// # Errors
///
/// No room in the budget in time (503), not ready, or the generator refused.
pub async fn ids(
    state: &AppState,
    batch: Batch,
    caller: Option<&Caller>,
    drain: Option<&Drain>,
) -> Result<(Vec<Id>, Room), ApiError> {
    budget::fill(state, batch.count(), batch.bytes(), caller, drain).await
}

/// The ids for the serials of `batch`, which [`SerialBatch::write`] writes; as [`ids`].
///
/// # Errors
///
/// As [`ids`].
pub async fn serials(
    state: &AppState,
    batch: &SerialBatch,
    caller: Option<&Caller>,
) -> Result<(Vec<Id>, Room), ApiError> {
    budget::fill(state, batch.count(), batch.bytes(), caller, None).await
}

/// An id taken apart, with the server's layout or the preset or custom layout asked for,
/// read in the encoding asked for or the one its form suggests; a negative decimal as a
/// signed 64-bit column holds an id of a layout that uses all 64 bits.
///
/// # Errors
///
/// An unknown encoding or layout, or an id that is malformed or out of the layout's range.
pub fn decode(state: &AppState, request: DecodeRequest<'_>) -> Result<Decoded, ApiError> {
    let encoding = request
        .encoding
        .map(|name| name.parse::<Encoding>().map_err(ApiError::BadRequest))
        .transpose()?;
    let layout = layout(state, request.layout, request.tick_ms)?;
    let reading = layout.read_id(request.id, encoding)?;
    Ok(Decoded::new(&layout, reading.id)?)
}

/// An id composed from the parts asked for, with the server's layout or the preset asked
/// for. Nothing is issued: the id is only written down.
///
/// # Errors
///
/// An unknown layout, a time that is no time, a part that is no whole number, or a part
/// out of the layout's range, named with its range.
pub fn compose(state: &AppState, request: ComposeRequest<'_>) -> Result<Id, ApiError> {
    let layout = layout(state, request.layout, None)?;
    let unix_ms = match request.time {
        Some(text) => UnixMs::parse_time(text)?.0,
        None => WallClock.now_ms(),
    };
    let fields = request.fields()?;
    Ok(layout.compose_at(unix_ms, fields)?)
}

/// The smallest and the largest id of the tick an instant falls in
/// ([`Layout::ids_at`]), with the server's layout or the preset asked for.
///
/// # Errors
///
/// An unknown layout, a time that is no time, or one outside the layout's span.
pub fn ids_at(state: &AppState, request: AtRequest<'_>) -> Result<(Id, Id), ApiError> {
    let layout = layout(state, request.layout, None)?;
    let unix_ms = UnixMs::parse_time(request.time)?.0;
    Ok(layout.ids_at(unix_ms)?)
}

/// The preset asked for, or the server's layout.
/// The layout a request names (a preset or `custom:T/D/W/S`, with its tick if given), or
/// the server's own.
fn layout(state: &AppState, name: Option<&str>, tick_ms: Option<u64>) -> Result<Layout, ApiError> {
    let layout = match name {
        None => *state.layout(),
        Some(name) => Layout::by_name(name)?,
    };
    Ok(match tick_ms {
        None => layout,
        Some(tick_ms) => layout.with_tick_ms(tick_ms)?,
    })
}

/// A serial taken apart, with the template and zone it was made with.
///
/// # Errors
///
/// A bad template or zone, or a serial that does not match them.
pub fn decode_serial(
    state: &AppState,
    request: DecodeSerialRequest<'_>,
) -> Result<DecodedSerial, ApiError> {
    let (template, zone) = request.format.check(state)?;
    let parsed = template.parse_serial(request.serial, &zone)?;
    Ok(DecodedSerial {
        serial: request.serial.to_string(),
        biz: parsed.biz.map(|b| b.as_str().to_string()),
        decoded: parsed.decoded(),
    })
}
