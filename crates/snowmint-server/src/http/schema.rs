//! The OpenAPI 3 description, generated from the handlers' annotations, and the shapes of
//! the bodies it names.

use serde::Serialize;
use snowmint::Layout;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi, PartialSchema, ToSchema};

use super::query::Format;

/// A pattern that matches exactly `names`, in any case, as a parser that ignores case
/// reads them: `^(?:[Hh][Ee][Xx]|...)$`. (An `enum` would refuse `HEX`, which is read.)
fn any_case<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let alternatives: Vec<String> = names
        .into_iter()
        .map(|name| {
            name.chars()
                .map(|c| match (c.to_ascii_lowercase(), c.to_ascii_uppercase()) {
                    (lower, upper) if lower != upper => format!("[{lower}{upper}]"),
                    _ if c.is_ascii_alphanumeric() => c.to_string(),
                    _ => format!("\\{c}"),
                })
                .collect()
        })
        .collect();
    format!("^(?:{})$", alternatives.join("|"))
}

/// A string that is one of `names`, in any case.
fn one_of_names<'a>(names: impl IntoIterator<Item = &'a str>, description: &str) -> Schema {
    let names: Vec<&str> = names.into_iter().collect();
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some(any_case(names.iter().copied())))
        .description(Some(format!(
            "{description}: one of {}, in any case",
            names.join(", ")
        )))
        .build()
        .into()
}

impl PartialSchema for Format {
    fn schema() -> RefOr<Schema> {
        one_of_names(
            Format::names(),
            "How ids are written: an encoding, or int for JSON numbers",
        )
        .into()
    }
}

impl ToSchema for Format {}

/// The name of a preset, which `?layout=` takes (see [`Layout::by_name`]).
pub struct PresetName;

impl PartialSchema for PresetName {
    fn schema() -> RefOr<Schema> {
        one_of_names(Layout::PRESETS.iter().map(Layout::name), "A preset").into()
    }
}

impl ToSchema for PresetName {}

/// `{"id": "..."}`.
#[derive(Serialize, ToSchema)]
pub struct IdBody {
    /// The id: a string in the chosen encoding, or a number with `format=int`.
    #[schema(example = "7389021983019802624")]
    pub id: String,
}

/// `{"ids": [...]}`.
#[derive(Serialize, ToSchema)]
pub struct IdsBody {
    /// Strictly increasing ids, as strings in the chosen encoding (numbers with `format=int`).
    pub ids: Vec<String>,
}

/// An id taken apart: the keys of `snowmint parse --json`.
#[derive(Serialize, ToSchema)]
pub struct DecodedBody {
    /// The id, decimal.
    #[schema(example = "175928847299117063")]
    pub id: String,
    /// Its time, ms since the Unix epoch.
    #[schema(example = 1_462_015_105_796_u64)]
    pub unix_ms: u64,
    /// Its time, RFC 3339 UTC with milliseconds.
    #[schema(example = "2016-04-30T11:18:25.796Z")]
    pub time: String,
    /// Datacenter field (Discord: process).
    pub datacenter: u64,
    /// Worker field (Discord: worker; Instagram: shard; Sonyflake: machine; TSID: node).
    pub worker: u64,
    /// Sequence field (Discord: increment; TSID: counter).
    pub sequence: u64,
}

/// `{"serials": [...]}`.
#[derive(Serialize, ToSchema)]
pub struct SerialsBody {
    /// Serials in issue order; one business code's serials sort as strings in that order.
    #[schema(example = json!(["PAY2026112215304512300340007"]))]
    pub serials: Vec<String>,
}

/// A serial taken apart: its business code and the keys of `snowmint parse --json`.
#[derive(Serialize, ToSchema)]
pub struct DecodedSerialBody {
    /// The serial as given.
    pub serial: String,
    /// The business code, or null when the template has no {biz}.
    pub biz: Option<String>,
    /// The id it came from, decimal.
    pub id: String,
    /// Its time, ms since the Unix epoch.
    pub unix_ms: u64,
    /// Its time, RFC 3339 UTC with milliseconds.
    pub time: String,
    /// Datacenter field.
    pub datacenter: u64,
    /// Worker field.
    pub worker: u64,
    /// Sequence field.
    pub sequence: u64,
}

/// Every error: `{"error": "..."}`, naming the problem.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong.
    #[schema(example = "count \"0\" is out of range: expected a whole number 1..=100000")]
    pub error: String,
}

/// `{"status": "ok"}` or `{"status": "ready"}`.
#[derive(Serialize, ToSchema)]
pub struct StatusBody {
    /// `ok` or `ready`.
    pub status: String,
}

/// `{"status": "not ready", "error": "..."}`.
#[derive(Serialize, ToSchema)]
pub struct NotReadyBody {
    /// `not ready`.
    pub status: String,
    /// Why.
    pub error: String,
}

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        if let Some(components) = openapi.components.as_mut() {
            components.add_security_scheme(
                "bearer",
                SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
            );
        }
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "snowmint",
        description = "Mints 64-bit, time-sorted, unique ids. Ids are JSON strings: JavaScript numbers lose precision above 2^53. When the server has a token, every route but /healthz and /readyz needs `Authorization: Bearer <token>`."
    ),
    paths(
        super::ids::one,
        super::ids::many,
        super::decode::decode,
        super::decode::layout,
        super::serials::issue_serials,
        super::serials::decode_serial,
        super::health::healthz,
        super::health::readyz,
        super::health::metrics,
        super::health::openapi,
    ),
    components(schemas(IdBody, IdsBody, DecodedBody, SerialsBody, DecodedSerialBody, ErrorBody, StatusBody, NotReadyBody)),
    modifiers(&BearerAuth)
)]
struct ApiDoc;

/// The OpenAPI document as JSON text.
#[must_use]
pub fn document() -> String {
    ApiDoc::openapi()
        .to_pretty_json()
        .unwrap_or_else(|e| format!("{{\"error\":\"openapi: {e}\"}}"))
}
