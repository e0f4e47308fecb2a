//! `GET /`: the web page that generates, parses and explains ids. Its assets are compiled
//! into the binary, so it works with no network.
//!
//! The markup, the style and the script are kept in three files under `assets/`, each
//! readable on its own, and served as one self-contained document: one request, nothing
//! else to route or cache.
//!
//! The script knows no preset, encoding or limit of its own: the page carries them as JSON
//! (see [`data`]), written from the core's definitions and this server's state when the
//! router is built, so the page decodes with the same numbers the server does.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use snowmint::{Encoding, Layout, UnixMs};

/// The markup, with a marker where the style goes, one where the data goes and one where
/// the script goes.
const MARKUP: &str = include_str!("../../assets/index.html");
/// The style, inlined at [`STYLE_MARKER`].
const STYLE: &str = include_str!("../../assets/page.css");
/// The script, inlined at [`SCRIPT_MARKER`].
const SCRIPT: &str = include_str!("../../assets/page.js");

const STYLE_MARKER: &str = "<style>/* page.css */</style>";
const DATA_MARKER: &str = "<script type=\"application/json\" id=\"snowmint-data\"></script>";
const SCRIPT_MARKER: &str = "<script>/* page.js */</script>";

/// The page of one server, assembled once per router: every request gets the same bytes.
#[derive(Debug, Clone)]
pub struct Page(Bytes);

impl Page {
    /// The page for a server that issues at most `max_batch` ids a request.
    pub fn new(max_batch: u64) -> Page {
        Page(Bytes::from(page(max_batch)))
    }
}

/// `GET /`: the page.
#[utoipa::path(
    get,
    path = "/",
    tag = "page",
    summary = "The web page that generates, parses and explains ids",
    responses((status = 200, description = "One self-contained HTML document", content_type = "text/html", body = String)),
    // Open: the page asks for the token itself before it calls the API.
    security(()),
)]
pub async fn index(State(Page(page)): State<Page>) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        page,
    )
        .into_response()
}

/// Each client's tested example: (language, directory under `clients/`, file, code). The
/// page shows them as they are, with the layout it shows where they name `"twitter"`; each
/// client's `test.sh` runs its own. `assets/snippets/` links to them, so that the
/// packaged crate carries a copy.
const SNIPPETS: [(&str, &str, &str, &str); 6] = [
    (
        "JavaScript",
        "js",
        "snippet.js",
        include_str!("../../assets/snippets/snippet.js"),
    ),
    (
        "Python",
        "python",
        "snippet.py",
        include_str!("../../assets/snippets/snippet.py"),
    ),
    (
        "Java",
        "java",
        "snippet.java",
        include_str!("../../assets/snippets/snippet.java"),
    ),
    (
        "Go",
        "go",
        "snippet.go",
        include_str!("../../assets/snippets/snippet.go"),
    ),
    (
        "Ruby",
        "ruby",
        "snippet.rb",
        include_str!("../../assets/snippets/snippet.rb"),
    ),
    (
        "PHP",
        "php",
        "snippet.php",
        include_str!("../../assets/snippets/snippet.php"),
    ),
];

/// The page for a server that issues at most `max_batch` ids a request.
fn page(max_batch: u64) -> String {
    let data = format!(
        "<script type=\"application/json\" id=\"snowmint-data\">{}</script>",
        script_safe(&data(max_batch).to_string())
    );
    MARKUP
        .replacen(STYLE_MARKER, &format!("<style>\n{STYLE}</style>"), 1)
        .replacen(DATA_MARKER, &data, 1)
        .replacen(SCRIPT_MARKER, &format!("<script>\n{SCRIPT}</script>"), 1)
}

/// What the page knows: every encoding and preset as the core defines them, the layout a
/// custom one starts from, where dates end, and this server's batch limit.
///
/// Every `u64` is a decimal string, which the page reads as a `BigInt`: a JavaScript number
/// is exact only up to 2^53, and an epoch or tick may be larger.
fn data(max_batch: u64) -> Value {
    let default = Layout::PRESETS[0];
    // The order and names Layout::new gives a layout, with the default preset's numbers:
    // what the page's custom layout starts from.
    let custom = Layout::new_u64(default.bits(), default.tick_ms(), default.epoch_ms())
        .expect("every preset is a valid layout");
    json!({
        "encodings": Encoding::ALL.map(encoding),
        "presets": Layout::PRESETS.map(|l| l.form()),
        "custom": custom.form(),
        "last_date_ms": UnixMs::LAST_DATE.0.to_string(),
        "max_batch": max_batch.to_string(),
        "snippets": SNIPPETS.map(|(language, dir, file, code)| json!({
            "language": language,
            "dir": dir,
            "file": file,
            // Go's build constraint keeps the example out of the package: no reader needs it.
            "code": code.trim_start_matches("//go:build ignore\n\n"),
        })),
    })
}

fn encoding(encoding: Encoding) -> Value {
    let digits: Map<String, Value> = encoding
        .digits()
        .map(|(ch, value)| (ch.to_string(), value.into()))
        .collect();
    json!({
        "name": encoding.name(),
        "title": encoding.title(),
        "alphabet": encoding.alphabet(),
        "max_len": encoding.max_len(),
        "padded": encoding.is_padded(),
        "prefixes": encoding.prefixes(),
        "written_prefix": encoding.written_prefix(),
        "digits": digits,
    })
}

/// JSON that may sit inside a `<script>` element: no `<` can start `</script>` or `<!--`.
/// A `<` only occurs inside JSON strings, where `\u003c` means the same.
fn script_safe(json: &str) -> String {
    json.replace('<', "\\u003c")
}

#[cfg(test)]
mod tests {
    use super::*;
    use snowmint::Field;

    fn embedded(page: &str) -> Value {
        let start = "<script type=\"application/json\" id=\"snowmint-data\">";
        let json = &page[page.find(start).expect("the data element") + start.len()..];
        let json = &json[..json.find("</script>").expect("the data element's end")];
        serde_json::from_str(json).expect("the data is JSON")
    }

    #[test]
    fn style_data_and_script_are_inlined_once() {
        let page = page(100);
        for marker in [STYLE_MARKER, DATA_MARKER, SCRIPT_MARKER] {
            assert_eq!(MARKUP.matches(marker).count(), 1, "{marker}");
            assert!(!page.contains(marker), "{marker}");
        }
        assert!(page.contains(STYLE) && page.contains(SCRIPT));
        // The data comes before the script that reads it.
        assert!(page.find("id=\"snowmint-data\"").unwrap() < page.find(SCRIPT).unwrap());
        // Neither asset may close its own element early.
        assert!(!STYLE.contains("</style"));
        assert!(!SCRIPT.contains("</script"));
    }

    /// The embedded JSON holds every preset with the core's numbers, and every u64 as a
    /// string, so the page reads them exactly whatever their size.
    #[test]
    fn the_data_holds_every_preset_with_the_cores_numbers() {
        let data = embedded(&page(100));
        let presets = data["presets"].as_array().unwrap();
        assert_eq!(presets.len(), Layout::PRESETS.len());
        for (preset, layout) in presets.iter().zip(Layout::PRESETS) {
            let expected = json!({
                "name": layout.name(),
                "title": layout.title(),
                "bits": {
                    "timestamp": layout.bits().timestamp,
                    "datacenter": layout.bits().datacenter,
                    "worker": layout.bits().worker,
                    "sequence": layout.bits().sequence,
                },
                "order": layout.order().map(Field::key),
                "names": {
                    "datacenter": layout.names().datacenter,
                    "worker": layout.names().worker,
                    "sequence": layout.names().sequence,
                },
                "tick_ms": layout.tick_ms().to_string(),
                "epoch_ms": layout.epoch_ms().to_string(),
            });
            assert_eq!(preset, &expected, "{}", layout.name());
        }
        let discord = &presets[1];
        assert_eq!(
            discord["order"],
            json!(["worker", "datacenter", "sequence"])
        );
        assert_eq!(discord["names"]["datacenter"], "process");
        assert_eq!(discord["epoch_ms"], "1420070400000");
        assert_eq!(presets[3]["tick_ms"], "10");

        let custom = &data["custom"];
        assert_eq!(custom["order"], json!(["datacenter", "worker", "sequence"]));
        assert_eq!(custom["bits"], presets[0]["bits"]);
        assert_eq!(custom["epoch_ms"], presets[0]["epoch_ms"]);
        assert_eq!(data["last_date_ms"], "253402300799999");
    }

    #[test]
    fn the_data_holds_every_encoding_as_the_core_decodes_it() {
        let data = embedded(&page(100));
        let encodings = data["encodings"].as_array().unwrap();
        assert_eq!(encodings.len(), Encoding::ALL.len());
        for (described, encoding) in encodings.iter().zip(Encoding::ALL) {
            assert_eq!(described["name"], encoding.name());
            assert_eq!(described["alphabet"], encoding.alphabet());
            assert_eq!(described["max_len"], encoding.max_len());
            assert_eq!(described["padded"], encoding.is_padded());
            assert_eq!(described["prefixes"], json!(encoding.prefixes()));
            assert_eq!(described["written_prefix"], encoding.written_prefix());
            // Every character in the table decodes to its value, and no other does.
            let digits = described["digits"].as_object().unwrap();
            for (ch, value) in digits {
                assert_eq!(encoding.decode(ch), Ok(value.as_u64().unwrap()), "{ch}");
            }
            for ch in (0..128u8).map(char::from) {
                let decodes = encoding.decode(&ch.to_string()).is_ok();
                assert_eq!(digits.contains_key(&ch.to_string()), decodes, "{ch:?}");
            }
        }
        let base32 = &encodings[2]["digits"];
        assert_eq!(
            (&base32["o"], &base32["L"], &base32["z"]),
            (&json!(0), &json!(1), &json!(31))
        );
        assert_eq!(base32.get("U"), None);
    }

    /// The page is built from the state: another batch limit, another page.
    #[test]
    fn the_batch_limit_is_the_servers() {
        assert_eq!(embedded(&page(100_000))["max_batch"], "100000");
        assert_eq!(embedded(&page(50))["max_batch"], "50");
        assert_eq!(embedded(&page(u64::MAX))["max_batch"], u64::MAX.to_string());
    }

    #[test]
    fn the_data_cannot_close_its_element() {
        assert_eq!(
            script_safe(r#"{"a":"</script><!--"}"#),
            r#"{"a":"\u003c/script>\u003c!--"}"#
        );
        let back: Value = serde_json::from_str(&script_safe(r#"{"a":"</script>"}"#)).unwrap();
        assert_eq!(back["a"], "</script>");
    }

    /// The page must work with no network: nothing it loads may come from another host.
    #[test]
    fn nothing_is_fetched_from_elsewhere() {
        let page = page(100).to_ascii_lowercase();
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
        let page = page(100);
        assert!(page.contains("<title>snowmint"));
        assert!(page.contains("<h1>snowmint</h1>"));
    }
}
