//! The OpenAPI 3 document's frame (its title, the bearer scheme, the 401 every guarded
//! route may answer) and the schemas no derive gives: an id that is a string or a number,
//! and names read in any case. The routes and their bodies are declared on the handlers
//! and collected in [`super::api`].

use serde::Serialize;
use snowmint::serial::{BizCode, Template, Zone};
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

/// An instant as `UnixMs::parse_time` reads it: milliseconds since the Unix epoch, or an
/// RFC 3339 time of a real date from 1970 to 9999 (month lengths and leap years included),
/// with `Z` or an offset up to 23:59. What lies outside the span of the layout the request
/// names is refused, which depends on the layout: the operation's text says so.
pub struct TimeText;

/// 4-digit years from 1970, with their leap years.
const YEAR: &str = "(?:19[7-9][0-9]|[2-9][0-9]{3})";
const LEAP_YEAR: &str = "(?:19(?:7[26]|8[048]|9[26])|[2-9][0-9](?:0[48]|[2468][048]|[13579][26])|(?:[2468][048]|[3579][26])00)";

impl TimeText {
    /// The pattern: digits, or a date, a time and an offset.
    fn pattern() -> String {
        let month_day = "(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])|(?:0[13-9]|1[0-2])-(?:29|30)|(?:0[13578]|1[02])-31)";
        let date = format!("(?:{YEAR}-{month_day}|{LEAP_YEAR}-02-29)");
        let time = "(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]{1,9})?";
        let offset = "(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])";
        // 19 digits stay within 64 bits; any 20-digit count is past every layout's span.
        format!("^(?:[0-9]{{1,19}}|{date}T{time}{offset})$")
    }
}

impl PartialSchema for TimeText {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some(TimeText::pattern()))
            .build()
            .into()
    }
}

impl ToSchema for TimeText {}

/// The largest `tick_ms` any layout takes: a custom layout of 1 timestamp bit after its
/// epoch (Twitter's). Which ticks a layout takes depends on its widths and epoch, so a
/// smaller tick may still be refused for the layout a request names.
pub fn largest_tick_ms() -> u64 {
    // Two ticks from the epoch must end within 64 bits of milliseconds.
    (u64::MAX - Layout::TWITTER.epoch_ms()).div_ceil(2)
}

/// Sets what the document says of the server's own settings: the largest `count` every
/// operation takes (`max_batch`, the one limit the server checks it against: the
/// declaration knows the least, 1), and the templates and serials `layout` makes.
pub fn for_server(mut document: OpenApi, max_batch: u64, layout: &Layout) -> OpenApi {
    let parameters = document
        .paths
        .paths
        .values_mut()
        .flat_map(operations_mut)
        .flat_map(|operation| operation.parameters.iter_mut().flatten());
    for parameter in parameters {
        let Some(RefOr::T(Schema::Object(object))) = &mut parameter.schema else {
            continue;
        };
        match (parameter.name.as_str(), &parameter.parameter_in) {
            (COUNT, ParameterIn::Query) => object.maximum = Some(max_batch.into()),
            (TICK_MS, ParameterIn::Query) => object.maximum = Some(largest_tick_ms().into()),
            (TEMPLATE, ParameterIn::Query) => {
                object.pattern = Some(serial_template_pattern(layout));
            }
            (SERIAL, ParameterIn::Path) => {
                let (node, seq) = Template::widths(layout);
                object.min_length = Some(Template::TIME_WIDTH + node + seq);
                object.max_length = Some(Template::MAX_SERIAL_LEN);
                object.pattern = Some(format!("^[A-Z0-9{}]+$", SEPARATORS));
            }
            _ => {}
        }
    }
    document
}

const TEMPLATE: &str = "template";
const TICK_MS: &str = "tick_ms";
const SERIAL: &str = "serial";
/// The separators a template may hold, escaped for a character class.
const SEPARATORS: &str = "\\-_./ ";

/// The templates `Template::parse` takes for `layout`, and a little less: `{time}` before
/// `{node}` and `{seq}`, `{biz}` anywhere, `{check}` after every other field, at most one
/// separator between two fields, and widths that keep every serial within
/// `Template::MAX_SERIAL_LEN` characters.
fn serial_template_pattern(layout: &Layout) -> String {
    let (node, seq) = Template::widths(layout);
    // Every piece at its widest: a 16-character business code, 17 of time, 2 of check
    // digits, 5 separators; what is left goes to node and seq, shared evenly.
    let fixed = BizCode::MAX_LEN + Template::TIME_WIDTH + 2 + 5;
    let spare = Template::MAX_SERIAL_LEN.saturating_sub(fixed + node + seq) / 2;
    let widths = |needed: usize| {
        let widest = (needed + spare).min(Template::MAX_WIDTH);
        let options: Vec<String> = (needed..=widest).map(|w| w.to_string()).collect();
        format!("(?::(?:{}))?", options.join("|"))
    };
    let node = format!("\\{{node{}\\}}", widths(node));
    let seq = format!("\\{{seq{}\\}}", widths(seq));
    let (biz, time) = ("\\{biz\\}".to_string(), "\\{time\\}".to_string());
    let check = "\\{check(?::(?:luhn|mod97))?\\}".to_string();
    let separator = format!("[{SEPARATORS}]?");
    let mut alternatives = Vec::new();
    for varying in [[&time, &node, &seq], [&time, &seq, &node]] {
        for biz_at in 0..=4 {
            for with_check in [false, true] {
                let mut fields: Vec<&String> = varying.to_vec();
                if biz_at < 4 {
                    fields.insert(biz_at, &biz);
                }
                if with_check {
                    fields.push(&check);
                }
                let mut alternative = separator.clone();
                for field in fields {
                    alternative.push_str(field);
                    alternative.push_str(&separator);
                }
                alternatives.push(alternative);
            }
        }
    }
    format!("^(?:{})$", alternatives.join("|"))
}

#[cfg(test)]
mod tests {
    use super::*;

    use proptest::prelude::*;
    use snowmint::UnixMs;

    /// Text matching `pattern`, anchors aside (the generator takes none).
    fn matching(pattern: &str) -> proptest::string::RegexGeneratorStrategy<String> {
        let bare = pattern.trim_start_matches('^').trim_end_matches('$');
        proptest::string::string_regex(bare).unwrap()
    }

    proptest! {
        /// Every time the document allows is one the server reads.
        #[test]
        fn every_time_the_document_allows_is_read(text in matching(&TimeText::pattern())) {
            let read = UnixMs::parse_time(&text);
            prop_assert!(read.is_ok(), "{text}: {read:?}");
        }

        /// Every template the document allows, for each preset, is one the server takes.
        #[test]
        fn every_template_the_document_allows_is_taken(
            (index, text) in (0..Layout::PRESETS.len()).prop_flat_map(|i| {
                (Just(i), matching(&serial_template_pattern(&Layout::PRESETS[i])))
            })
        ) {
            let layout = Layout::PRESETS[index];
            let parsed = Template::parse(&text, &layout);
            prop_assert!(parsed.is_ok(), "{} {text:?}: {parsed:?}", layout.name());
        }
    }

    #[test]
    fn the_time_pattern_knows_month_lengths_and_leap_years() {
        let pattern = regex::Regex::new(&TimeText::pattern()).unwrap();
        for (text, allowed) in [
            ("2024-02-29T00:00:00Z", true),
            ("2000-02-29T00:00:00Z", true),
            ("2023-02-29T00:00:00Z", false),
            ("2100-02-29T00:00:00Z", false),
            ("2024-04-31T00:00:00Z", false),
            ("1969-12-31T23:59:59Z", false),
            ("9999-12-31T23:59:59.999Z", true),
            ("2024-01-01T00:00:00.5+05:30", true),
            ("1704067200000", true),
            ("", false),
        ] {
            assert_eq!(pattern.is_match(text), allowed, "{text}");
            assert!(UnixMs::parse_time(text).is_ok() || !allowed, "{text}");
        }
    }

    /// The largest tick is one a layout takes, and the next one is taken by none.
    #[test]
    fn the_largest_tick_is_the_largest_any_layout_takes() {
        let widest = Layout::by_name("custom:1/31/31/1").unwrap();
        assert!(widest.with_tick_ms(largest_tick_ms()).is_ok());
        assert!(widest.with_tick_ms(largest_tick_ms() + 1).is_err());
        for layout in Layout::PRESETS {
            assert!(
                layout.with_tick_ms(largest_tick_ms() + 1).is_err(),
                "{}",
                layout.name()
            );
        }
    }

    #[test]
    fn any_case_spells_out_both_cases_of_letters_only() {
        assert_eq!(any_case(["b32", "int"]), "^(?:[bB]32|[iI][nN][tT])$");
        assert_eq!(any_case(["a-b"]), "^(?:[aA]\\-[bB])$");
    }
}
