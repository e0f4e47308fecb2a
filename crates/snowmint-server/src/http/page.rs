//! `GET /`: the web page that generates, parses and explains ids. Its assets are compiled
//! into the binary, so it works with no network.
//!
//! The markup, the style and the script are kept in three files under `assets/`, each
//! readable on its own, and served as one self-contained document: one request, nothing
//! else to route or cache.

use std::sync::LazyLock;

use axum::http::header;
use axum::response::{IntoResponse, Response};

/// The markup, with a marker where the style goes and one where the script goes.
const MARKUP: &str = include_str!("../../assets/index.html");
/// The style, inlined at [`STYLE_MARKER`].
const STYLE: &str = include_str!("../../assets/page.css");
/// The script, inlined at [`SCRIPT_MARKER`].
const SCRIPT: &str = include_str!("../../assets/page.js");

const STYLE_MARKER: &str = "<style>/* page.css */</style>";
const SCRIPT_MARKER: &str = "<script>/* page.js */</script>";

/// The page: built once, on the first request.
static PAGE: LazyLock<String> = LazyLock::new(|| assemble(MARKUP, STYLE, SCRIPT));

/// Puts `style` and `script` in place of their markers in `markup`.
fn assemble(markup: &str, style: &str, script: &str) -> String {
    markup
        .replacen(STYLE_MARKER, &format!("<style>\n{style}</style>"), 1)
        .replacen(SCRIPT_MARKER, &format!("<script>\n{script}</script>"), 1)
}

/// `GET /`: the page.
pub async fn index() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        PAGE.as_str(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn style_and_script_are_inlined_once() {
        assert_eq!(MARKUP.matches(STYLE_MARKER).count(), 1);
        assert_eq!(MARKUP.matches(SCRIPT_MARKER).count(), 1);
        assert!(!PAGE.contains(STYLE_MARKER) && !PAGE.contains(SCRIPT_MARKER));
        assert!(PAGE.contains(STYLE) && PAGE.contains(SCRIPT));
        // Neither asset may close its own element early.
        assert!(!STYLE.contains("</style"));
        assert!(!SCRIPT.contains("</script"));
    }

    /// The page must work with no network: nothing it loads may come from another host.
    #[test]
    fn nothing_is_fetched_from_elsewhere() {
        let page = PAGE.to_ascii_lowercase();
        for needle in [
            "src=\"http",
            "src=\"//",
            "href=\"http",
            "href=\"//",
            "url(http",
            "url(//",
            "@import",
            "fetch('http",
            "fetch(\"http",
        ] {
            assert!(!page.contains(needle), "the page refers to {needle:?}");
        }
    }

    #[test]
    fn the_page_names_snowmint() {
        assert!(PAGE.contains("<title>snowmint"));
        assert!(PAGE.contains("<h1>snowmint</h1>"));
    }
}
