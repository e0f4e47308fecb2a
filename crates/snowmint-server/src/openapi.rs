//! The OpenAPI 3 description of the HTTP API.

/// The OpenAPI document as JSON text.
#[must_use]
pub fn document() -> String {
    String::from("{}")
}
