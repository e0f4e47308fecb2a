//! The requests a protocol fills, and their checks: each limit and each error text once.

use serde::Serialize;
use snowmint::serial::{BizCode, Template, Zone};
use snowmint::{Decoded, Fields, Id};

use crate::{ApiError, AppState};

/// A count as a client sent it, under the name its protocol gives it (`count`,
/// `batch_size`).
#[derive(Debug, Clone, Copy)]
pub enum Count<'a> {
    /// Not given at all, described as the protocol names the missing field.
    Missing(&'static str),
    /// Text, such as a query parameter: it may not be a number at all.
    Text(&'static str, &'a str),
    /// A number from a typed message.
    Number(&'static str, u64),
}

impl Count<'_> {
    /// The count, if it is a whole number in `1..=max`.
    fn check(self, max: u64) -> Result<u64, ApiError> {
        let refusal = match self {
            Count::Missing(what) => format!("{what} is required: 1..={max}"),
            Count::Text(name, text) => match text.parse::<u64>() {
                Ok(n) if (1..=max).contains(&n) => return Ok(n),
                _ => format!("{name} {text:?} is out of range: expected a whole number 1..={max}"),
            },
            Count::Number(_, n) if (1..=max).contains(&n) => return Ok(n),
            Count::Number(name, n) => format!("{name} {n} is out of range 1..={max}"),
        };
        Err(ApiError::BadRequest(refusal))
    }
}

/// What a wire format writes besides the items of a list, in bytes at most: beside each
/// item (quotes, a separator, a field's tag and length) and around the whole list.
#[derive(Debug, Clone, Copy)]
pub struct Framing {
    /// Bytes beside each item.
    pub per_item: u64,
    /// Bytes around the list.
    pub around: u64,
}

/// A request for ids, as the client sent it.
#[derive(Debug, Clone, Copy)]
pub struct IdsRequest<'a> {
    /// How many.
    pub count: Count<'a>,
    /// The most bytes one id takes in the wire format, framing aside.
    pub id_bytes: u64,
}

/// A checked request for ids: issue it with [`ids`].
#[derive(Debug, Clone, Copy)]
pub struct Batch {
    count: u64,
    /// The most bytes one id takes on the wire, framing included.
    item_bytes: u64,
    /// The bytes around the list.
    around: u64,
}

impl IdsRequest<'_> {
    /// Checks the count and the size of the response `framing` would make.
    ///
    /// # Errors
    ///
    /// A 400 naming the count or the size, and the limit.
    pub fn check(self, state: &AppState, framing: Framing) -> Result<Batch, ApiError> {
        let count = self.count.check(state.max_batch)?;
        let item_bytes = self.id_bytes + framing.per_item;
        check_size(state, count, "ids", item_bytes, framing.around)?;
        Ok(Batch {
            count,
            item_bytes,
            around: framing.around,
        })
    }
}

impl Batch {
    /// How many ids.
    #[must_use]
    pub fn count(self) -> u64 {
        self.count
    }

    /// The most bytes a response carrying them takes.
    #[must_use]
    pub fn bytes(self) -> u64 {
        self.count * self.item_bytes + self.around
    }

    /// At most `n` of them, for a stream that sends a request in parts.
    #[must_use]
    pub fn up_to(self, n: u64) -> Batch {
        Batch {
            count: self.count.min(n),
            ..self
        }
    }
}

/// A request for serial numbers, as the client sent it.
#[derive(Debug, Clone, Copy)]
pub struct SerialsRequest<'a> {
    /// The business code.
    pub biz: &'a str,
    /// How they are written.
    pub format: SerialFormat<'a>,
    /// How many.
    pub count: Count<'a>,
}

/// How serials are written: a template and a zone, each the default when not given.
#[derive(Debug, Clone, Copy, Default)]
pub struct SerialFormat<'a> {
    /// The template (default [`Template::DEFAULT`]).
    pub template: Option<&'a str>,
    /// The zone their times are written in (default UTC).
    pub tz: Option<&'a str>,
}

impl SerialFormat<'_> {
    /// The template over the server's layout, and the zone.
    pub(super) fn check(self, state: &AppState) -> Result<(Template, Zone), ApiError> {
        let template = Template::parse(self.template.unwrap_or(Template::DEFAULT), state.layout())?;
        let zone = self.tz.map_or(Ok(Zone::UTC), Zone::parse)?;
        Ok((template, zone))
    }
}

/// A checked request for serials: issue it with [`serials`], write each with
/// [`SerialBatch::write`].
#[derive(Debug, Clone)]
pub struct SerialBatch {
    biz: BizCode,
    template: Template,
    zone: Zone,
    count: u64,
    bytes: u64,
}

impl SerialsRequest<'_> {
    /// Checks the business code, the template and zone, the count, and the size of the
    /// response `framing` would make, in that order.
    ///
    /// # Errors
    ///
    /// A 400 naming what is wrong.
    pub fn check(self, state: &AppState, framing: Framing) -> Result<SerialBatch, ApiError> {
        let biz = BizCode::new(self.biz)?;
        let (template, zone) = self.format.check(state)?;
        let count = self.count.check(state.max_batch)?;
        let item_bytes = template.serial_len(&biz) as u64 + framing.per_item;
        let bytes = check_size(state, count, "serials", item_bytes, framing.around)?;
        Ok(SerialBatch {
            biz,
            template,
            zone,
            count,
            bytes,
        })
    }
}

impl SerialBatch {
    /// How many serials.
    #[must_use]
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The most bytes a response carrying them takes.
    #[must_use]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The length of every serial of the batch.
    #[must_use]
    pub fn serial_len(&self) -> usize {
        self.template.serial_len(&self.biz)
    }

    /// Appends the serial made from `id` to `out`. Serials are digits, A-Z and the
    /// separators `- _ . /` and space: nothing a JSON string or a protocol must escape.
    ///
    /// # Errors
    ///
    /// The id's time is outside what the template can write.
    pub fn write(&self, id: Id, out: &mut String) -> Result<(), ApiError> {
        Ok(self.template.write_to(out, &self.biz, id, &self.zone)?)
    }
}

/// Refuses, before any id is taken, a response of `count` items (`what`: "ids",
/// "serials") of up to `item_bytes` each with `around` bytes around them, that could carry
/// more than `max_response_bytes`; the bytes it may carry if it fits.
fn check_size(
    state: &AppState,
    count: u64,
    what: &str,
    item_bytes: u64,
    around: u64,
) -> Result<u64, ApiError> {
    let max = state.max_response_bytes;
    let bytes = count.saturating_mul(item_bytes).saturating_add(around);
    if bytes <= max {
        return Ok(bytes);
    }
    let fit = max.saturating_sub(around) / item_bytes.max(1);
    Err(ApiError::BadRequest(format!(
        "{count} {what} would make a response of up to {bytes} bytes, more than the {max} of max_response_bytes: ask for at most {fit}"
    )))
}

/// A request to take an id apart, as the client sent it.
#[derive(Debug, Clone, Copy)]
pub struct DecodeRequest<'a> {
    /// The id, as text ([`Layout::read_id`](snowmint::Layout::read_id)).
    pub id: &'a str,
    /// The encoding to read it in; guessed from its form when not given.
    pub encoding: Option<&'a str>,
    /// A preset's name or `custom:T/D/W/S`; the server's layout when not given.
    pub layout: Option<&'a str>,
    /// The tick of the layout given, in ms (default: the preset's own, 1 for a custom one).
    pub tick_ms: Option<u64>,
}

/// A request to take a serial apart, as the client sent it.
#[derive(Debug, Clone, Copy)]
pub struct DecodeSerialRequest<'a> {
    /// The serial.
    pub serial: &'a str,
    /// How it was written.
    pub format: SerialFormat<'a>,
}

/// A serial taken apart: its business code and the keys of `snowmint parse --json`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DecodedSerial {
    /// The serial as given.
    pub serial: String,
    /// The business code, or null when the template has no `{biz}`.
    pub biz: Option<String>,
    /// The id it came from, taken apart.
    #[serde(flatten)]
    pub decoded: Decoded,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(count: Count<'_>) -> String {
        count.check(20_000).unwrap_err().to_string()
    }

    #[test]
    fn a_count_is_a_whole_number_up_to_max_batch() {
        assert_eq!(Count::Text("count", "20000").check(20_000), Ok(20_000));
        assert_eq!(Count::Number("count", 1).check(20_000), Ok(1));
        // Text may be anything, so its refusal says what was expected.
        for text in ["0", "20001", "-1", "1.5", "abc", "", " 1"] {
            assert_eq!(
                refusal(Count::Text("count", text)),
                format!("count {text:?} is out of range: expected a whole number 1..=20000")
            );
        }
        // A number from a typed message only needs the range.
        assert_eq!(
            refusal(Count::Number("batch_size", 0)),
            "batch_size 0 is out of range 1..=20000"
        );
        assert_eq!(
            refusal(Count::Number("count", u64::MAX)),
            "count 18446744073709551615 is out of range 1..=20000"
        );
        assert_eq!(
            refusal(Count::Missing("query parameter \"count\"")),
            "query parameter \"count\" is required: 1..=20000"
        );
    }
}

/// A request to compose an id from its parts, as the client sent it: each part as text,
/// absent parts 0 (the time: now).
#[derive(Debug, Clone, Copy, Default)]
pub struct ComposeRequest<'a> {
    /// The instant: ms since the Unix epoch or RFC 3339; now when not given.
    pub time: Option<&'a str>,
    /// The datacenter id.
    pub datacenter: Option<&'a str>,
    /// The worker id.
    pub worker: Option<&'a str>,
    /// The sequence number.
    pub sequence: Option<&'a str>,
    /// A preset's name; the server's layout when not given.
    pub layout: Option<&'a str>,
}

impl ComposeRequest<'_> {
    /// The fields, each a whole number (their ranges are the layout's to check).
    pub(super) fn fields(self) -> Result<Fields, ApiError> {
        Ok(Fields {
            datacenter: part("datacenter", self.datacenter)?,
            worker: part("worker", self.worker)?,
            sequence: part("sequence", self.sequence)?,
        })
    }
}

/// A part given as text: 0 when absent, else a whole number.
fn part(name: &str, text: Option<&str>) -> Result<u64, ApiError> {
    let Some(text) = text else { return Ok(0) };
    text.parse().map_err(|_| {
        ApiError::BadRequest(format!(
            "{name} {text:?} is not a whole number 0..={}",
            u64::MAX
        ))
    })
}

/// A request for the first and last id of an instant, as the client sent it.
#[derive(Debug, Clone, Copy)]
pub struct AtRequest<'a> {
    /// The instant: ms since the Unix epoch or RFC 3339.
    pub time: &'a str,
    /// A preset's name; the server's layout when not given.
    pub layout: Option<&'a str>,
}
