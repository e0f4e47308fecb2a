//! `GET /`: the web page that generates, parses and explains ids. Its assets are compiled
//! into the binary, so it works with no network.

use axum::http::header;
use axum::response::{IntoResponse, Response};

/// The page: one self-contained HTML file.
const INDEX: &str = include_str!("../../assets/index.html");

/// `GET /`: the page.
pub async fn index() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        INDEX,
    )
        .into_response()
}
