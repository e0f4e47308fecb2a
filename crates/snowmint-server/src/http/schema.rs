//! The OpenAPI 3 document's frame (its title, the bearer scheme, the 401 every guarded
//! route may answer) and the schemas no derive gives: an id that is a string or a number,
//! and names read in any case. The routes and their bodies are declared on the handlers
//! and collected in [`super::api`].

use serde::Serialize;
use snowmint::serial::{BizCode, Zone};
use snowmint::{Encoding, Layout};
use utoipa::openapi::path::{Operation, ParameterIn, PathItem};
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, OneOfBuilder, Schema, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{Content, OpenApi, RefOr};
use utoipa::{PartialSchema, ToSchema};

use super::query::Format;

/// The query parameter that says how many ids or serials.
const COUNT: &str = "count";

/// The name of the bearer scheme in the document.
const BEARER: &str = "bearer";

/// Every error: `{"error": "..."}`, naming the problem.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong.
    #[schema(example = "count \"0\" is out of range: expected a whole number 1..=100000")]
    pub error: String,
}

/// The document before any route: what it is, and that every route needs the bearer
/// token when the server has one, unless its own declaration says `security(())`.
#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "snowmint",
        description = "Mints 64-bit, time-sorted, unique ids. Ids are JSON strings: JavaScript numbers lose precision above 2^53. When the server has a token, every route with the bearer security scheme needs `Authorization: Bearer <token>`; the others (the page and the probes) answer without it."
    ),
    security((), ("bearer" = []))
)]
pub struct Frame;

/// The operations of `item`, whatever their method.
pub fn operations(item: &PathItem) -> impl Iterator<Item = &Operation> {
    [
        &item.get,
        &item.put,
        &item.post,
        &item.delete,
        &item.options,
        &item.head,
        &item.patch,
        &item.trace,
    ]
    .into_iter()
    .flatten()
}

/// Whether `operation` needs the token. One with no security of its own has the
/// document's, which asks for it: a route is open only when it says so.
pub fn needs_token(operation: &Operation) -> bool {
    operation.security.as_ref().is_none_or(|requirements| {
        requirements.contains(&SecurityRequirement::new(BEARER, Vec::<String>::new()))
    })
}

/// The operations of `item`, whatever their method, to change.
fn operations_mut(item: &mut PathItem) -> impl Iterator<Item = &mut Operation> {
    let PathItem {
        get,
        put,
        post,
        delete,
        options,
        head,
        patch,
        trace,
        ..
    } = item;
    [get, put, post, delete, options, head, patch, trace]
        .into_iter()
        .flat_map(Option::as_mut)
}

/// Adds the bearer scheme, and the 401 answer to every operation that needs the token.
pub fn finish(mut document: OpenApi) -> OpenApi {
    let components = document.components.get_or_insert_default();
    components.add_security_scheme(
        BEARER,
        SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
    );
    components
        .schemas
        .insert(ErrorBody::name().into_owned(), ErrorBody::schema());
    let unauthorized = ResponseBuilder::new()
        .description("Missing or wrong bearer token")
        .content(
            "application/json",
            Content::new(Some(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(
                ErrorBody::name(),
            )))),
        )
        .build();
    for operation in document.paths.paths.values_mut().flat_map(operations_mut) {
        if needs_token(operation) {
            operation
                .responses
                .responses
                .insert("401".into(), unauthorized.clone().into());
        }
    }
    document
}

/// An id in a JSON body: a string in the encoding asked for, or a number with
/// `format=int`.
pub fn id_schema() -> Schema {
    OneOfBuilder::new()
        .item(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .description(Some("In the encoding asked for"))
                .examples([serde_json::json!("7389021983019802624")]),
        )
        .item(
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
                    utoipa::openapi::KnownFormat::Int64,
                )))
                .minimum(Some(0))
                .description(Some("With format=int: exact in JavaScript only up to 2^53")),
        )
        .build()
        .into()
}

/// Ids in a JSON body, each as [`id_schema`].
pub fn ids_schema() -> Schema {
    ArrayBuilder::new()
        .items(RefOr::T(id_schema()))
        .build()
        .into()
}

/// A pattern that matches exactly `names`, in any case, as a parser that ignores case
/// reads them: `^(?:[hH][eE][xX]|...)$`. (An `enum` would refuse `HEX`, which is read.)
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

/// The name of an encoding, which `/v1/decode/{id}?encoding=` takes: the core's names
/// ([`Encoding::NAMES`]), in any case.
pub struct EncodingName;

impl PartialSchema for EncodingName {
    fn schema() -> RefOr<Schema> {
        one_of_names(
            Encoding::NAMES.map(|(name, _)| name),
            "How an id's text is written",
        )
        .into()
    }
}

impl ToSchema for EncodingName {}

/// An id's text as `/v1/decode/{id}` reads it: characters of some encoding's alphabet, a
/// prefix, or a sign, at most as long as the longest text (binary's `0b` and 64 digits).
/// Which characters and how many depends on the encoding, and that may be another
/// parameter, so the document says no more.
pub struct IdText;

impl PartialSchema for IdText {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some(format!("^-?[0-9A-Za-z]{{1,{}}}$", Encoding::BUF_LEN)))
            .build()
            .into()
    }
}

impl ToSchema for IdText {}

/// A preset's name, which `?layout=` takes (see [`Layout::by_name`]). The server also reads
/// `custom:T/D/W/S`, whose widths must add up to 63 or 64: a pattern cannot say that, so the
/// document names custom layouts in the description only, and allows nothing it refuses.
pub struct LayoutName;

impl PartialSchema for LayoutName {
    fn schema() -> RefOr<Schema> {
        let names: Vec<&str> = Layout::PRESETS.iter().map(Layout::name).collect();
        ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some(any_case(names.iter().copied())))
            .description(Some(format!(
                "A preset, one of {} in any case; the server also reads custom:T/D/W/S, the timestamp, datacenter, worker and sequence bits from high to low, adding up to 63 or 64",
                names.join(", ")
            )))
            .build()
            .into()
    }
}

impl ToSchema for LayoutName {}

/// The zone a serial's time is written in, which `?tz=` takes: exactly what [`Zone::parse`]
/// reads ([`Zone::PATTERN`]).
pub struct ZoneName;

impl PartialSchema for ZoneName {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some(Zone::PATTERN))
            .description(Some(
                "UTC (the default), Z, or a fixed offset from -23:59 to +23:59 such as +08:00; never a named zone",
            ))
            .build()
            .into()
    }
}

impl ToSchema for ZoneName {}

/// A business code, which `/v1/serials/{biz}` takes: what [`BizCode::new`] accepts.
pub struct BizName;

impl PartialSchema for BizName {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some(format!("^[A-Z0-9]{{1,{}}}$", BizCode::MAX_LEN)))
            .description(Some(format!(
                "Business code: 1 to {} of A-Z and 0-9",
                BizCode::MAX_LEN
            )))
            .build()
            .into()
    }
}

impl ToSchema for BizName {}

/// Sets the largest `count` every operation takes to `max_batch`, the one limit the server
/// checks it against: the declaration knows the least (1), the server's settings the most.
pub fn with_max_batch(mut document: OpenApi, max_batch: u64) -> OpenApi {
    let counts = document
        .paths
        .paths
        .values_mut()
        .flat_map(operations_mut)
        .flat_map(|operation| operation.parameters.iter_mut().flatten())
        .filter(|p| p.name == COUNT && p.parameter_in == ParameterIn::Query);
    for parameter in counts {
        if let Some(RefOr::T(Schema::Object(object))) = &mut parameter.schema {
            object.maximum = Some(max_batch.into());
        }
    }
    document
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_case_spells_out_both_cases_of_letters_only() {
        assert_eq!(any_case(["b32", "int"]), "^(?:[bB]32|[iI][nN][tT])$");
        assert_eq!(any_case(["a-b"]), "^(?:[aA]\\-[bB])$");
    }
}
