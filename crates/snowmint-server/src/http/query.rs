//! Query strings, parsed strictly: an unknown or repeated parameter is an error that names
//! it, so a typo never silently falls back to a default. What a route accepts is what its
//! declaration (`#[utoipa::path(params(...))]`) lists.

use std::str::FromStr;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use snowmint::Encoding;

use super::routes::Route;
use crate::ApiError;
use crate::service::Framing;

/// The parameters of one request, checked against what the route declares.
pub struct Params(Vec<(String, String)>);

impl<S: Send + Sync> FromRequestParts<S> for Params {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Params, ApiError> {
        // The front puts the route in; a request it found no route for takes nothing.
        let declared = parts
            .extensions
            .get::<&'static Route>()
            .map_or(&[][..], |route| &route.query);
        Params::parse(parts.uri.query(), declared)
    }
}

impl Params {
    /// Parses `raw`, accepting only the names in `allowed`.
    pub fn parse(raw: Option<&str>, allowed: &[&str]) -> Result<Params, ApiError> {
        let pairs: Vec<(String, String)> = form_urlencoded::parse(raw.unwrap_or("").as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        for (i, (name, _)) in pairs.iter().enumerate() {
            if !allowed.contains(&name.as_str()) {
                let expected = if allowed.is_empty() {
                    "this route takes none".to_string()
                } else {
                    format!("expected {}", allowed.join(", "))
                };
                return Err(ApiError::BadRequest(format!(
                    "unknown query parameter {name:?}: {expected}"
                )));
            }
            if pairs[..i].iter().any(|(n, _)| n == name) {
                return Err(ApiError::BadRequest(format!(
                    "query parameter {name:?} is given more than once"
                )));
            }
        }
        Ok(Params(pairs))
    }

    /// The value of `name`, if given.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// How an id is written in a response: an encoding, or a bare JSON number.
///
/// Its OpenAPI schema (in `schema.rs`) accepts exactly what [`FromStr`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A JSON string in this encoding.
    Text(Encoding),
    /// A JSON number (exact only up to 2^53 in JavaScript).
    Int,
}

impl Format {
    /// The name of [`Format::Int`], beside the core's names of encodings.
    const INT: &str = "int";

    /// Every name `?format=` reads, ignoring case: the core's names of encodings (those
    /// `snowmint gen --format` reads), and `int`.
    pub fn names() -> impl Iterator<Item = &'static str> {
        Encoding::NAMES
            .into_iter()
            .map(|(name, _)| name)
            .chain([Format::INT])
    }

    /// Reads `?format=`, decimal when absent.
    pub fn from_params(params: &Params) -> Result<Format, ApiError> {
        params
            .get("format")
            .map_or(Ok(Format::Text(Encoding::Decimal)), str::parse)
    }

    /// The most bytes one id takes, quotes aside.
    pub fn max_len(self) -> u64 {
        match self {
            Format::Int => Encoding::Decimal.max_len() as u64,
            Format::Text(encoding) => encoding.written_len() as u64,
        }
    }

    /// `{"ids":[...]}`: each id followed by a comma, and quoted unless it is an int;
    /// `{"ids":[` and `]}` around them.
    pub fn json_framing(self) -> Framing {
        let quotes = if self == Format::Int { 0 } else { 2 };
        Framing {
            per_item: quotes + 1,
            around: 10,
        }
    }

    /// Appends one id to `out`: quoted unless it is an int.
    pub fn push_json(self, id: snowmint::Id, out: &mut String) {
        let mut buf = [0u8; Encoding::BUF_LEN];
        match self {
            Format::Int => out.push_str(id.encode(Encoding::Decimal, &mut buf)),
            Format::Text(encoding) => {
                out.push('"');
                out.push_str(id.encode(encoding, &mut buf));
                out.push('"');
            }
        }
    }

    /// Appends one id to `out` as plain text.
    pub fn push_text(self, id: snowmint::Id, out: &mut String) {
        let mut buf = [0u8; Encoding::BUF_LEN];
        let encoding = match self {
            Format::Int => Encoding::Decimal,
            Format::Text(encoding) => encoding,
        };
        out.push_str(id.encode(encoding, &mut buf));
    }
}

impl FromStr for Format {
    type Err = ApiError;

    /// `int`, or a name of an encoding as the core reads it, ignoring case.
    fn from_str(text: &str) -> Result<Format, ApiError> {
        if text.eq_ignore_ascii_case(Format::INT) {
            return Ok(Format::Int);
        }
        text.parse().map(Format::Text).map_err(|_| {
            let names = Encoding::ALL.map(Encoding::name).join(", ");
            ApiError::BadRequest(format!(
                "unknown format {text:?}: expected {names} or {}",
                Format::INT
            ))
        })
    }
}
