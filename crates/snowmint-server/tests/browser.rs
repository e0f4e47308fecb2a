//! The web page at `/`, driven in Debian's headless Chromium against the real server on a
//! loopback port: what a person sees and does, and that the page decodes as the server does.

mod webdriver;

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use webdriver::{Browser, Server, screenshot_dir};

/// Discord's documentation example: 2016-04-30 11:18:25.796 UTC, worker 1, process 0,
/// increment 7.
const DISCORD_ID: &str = "175928847299117063";

/// Starts the server and a browser, or returns from the test when it is skipped.
macro_rules! start {
    ($extra:expr) => {{
        let server = Server::start($extra).await;
        let Some(browser) = Browser::start().await else {
            return;
        };
        (server, browser)
    }};
}

/// The Parse result once it shows `id` (decimal) decoded with `layout`.
fn parsed(id: &str, layout: &str) -> String {
    format!("#parse-result[data-id='{id}'][data-layout='{layout}']")
}

/// The text of `css` within the Parse result.
async fn result_text(browser: &Browser, css: &str) -> String {
    browser.text(&format!("#parse-result {css}")).await
}

async fn assert_no_console_errors(browser: &Browser) {
    let errors = browser.console_errors().await;
    assert!(errors.is_empty(), "console errors: {errors:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_loads_without_console_errors() {
    let (server, browser) = start!("");
    browser.open(&server.url).await;
    assert!(browser.client.title().await.unwrap().contains("snowmint"));
    assert_eq!(browser.text("h1").await, "snowmint");
    // Every control has a label a screen reader reads, and takes the keyboard's focus.
    let script = "return [...document.querySelectorAll('input, select')]
        .filter(el => el.labels.length === 0 || el.tabIndex < 0).map(el => el.id)";
    assert_eq!(browser.run(script, vec![]).await, json!([]));
    // About this server, from GET /v1/layout.
    assert_eq!(browser.first_line("[data-about='layout']").await, "twitter");
    assert_eq!(browser.first_line("[data-about='datacenter']").await, "3");
    assert_eq!(browser.first_line("[data-about='worker']").await, "17");
    assert_eq!(
        browser.first_line("[data-about='capacity']").await,
        "4,096,000"
    );
    let runs_out = browser.text("[data-about='runs-out']").await;
    assert!(
        runs_out.starts_with("2080-07-10\n17:30:30.209 UTC; in "),
        "{runs_out}"
    );
    // Before any id, the diagram shows the server's layout.
    let layout = browser.attr("#diagram", "data-layout").await;
    assert_eq!(layout.as_deref(), Some("server"));
    assert_no_console_errors(&browser).await;
    browser.close().await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generate_shows_fresh_ids_from_this_server() {
    let (server, browser) = start!("");
    browser.open(&server.url).await;

    // Enter in the count field generates.
    browser.type_into("#gen-count", "5").await;
    browser.choose("#gen-format", "base32").await;
    browser.press_enter("#gen-count").await;
    browser.wait_for("#gen-decoded[data-id]").await;
    let ids = browser.texts("#gen-list code").await;
    assert_eq!(ids.len(), 5);
    assert!(ids.iter().all(|id| id.len() == 13), "{ids:?}");
    assert!(
        ids.is_sorted(),
        "base32 ids sort as they were issued: {ids:?}"
    );
    assert_eq!(
        browser.texts("#gen-list button").await.len(),
        10,
        "copy and parse each"
    );

    // The newest, decoded: made just now, by this server's datacenter and worker.
    let data = |key: &'static str| browser.attr("#gen-decoded", key);
    let unix_ms: i64 = data("data-unix-ms").await.unwrap().parse().unwrap();
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    assert!(
        (now_ms - unix_ms).abs() <= 5_000,
        "decoded time {unix_ms} is not now ({now_ms})"
    );
    assert_eq!(data("data-datacenter").await.as_deref(), Some("3"));
    assert_eq!(data("data-worker").await.as_deref(), Some("17"));
    assert_eq!(
        browser.text("#gen-decoded dd[data-name='worker']").await,
        "17"
    );
    assert_eq!(
        browser
            .text("#gen-decoded dd[data-name='datacenter']")
            .await,
        "3"
    );
    assert_eq!(browser.text("#gen-decoded [data-part='id']").await, ids[4]);
    let ago = browser.text("#gen-decoded [data-part='ago']").await;
    assert!(ago.ends_with(" ago") && !ago.contains("minute"), "{ago}");
    // The server agrees on what the newest id is made of.
    let id = data("data-id").await.unwrap();
    let answer = browser.fetch_json(&format!("/v1/decode/{}", ids[4])).await;
    assert_eq!(
        (answer["id"].as_str(), answer["unix_ms"].as_i64()),
        (Some(id.as_str()), Some(unix_ms))
    );

    // The button generates too, in hex; the first batch filled the empty Parse field.
    browser.choose("#gen-format", "hex").await;
    browser.type_into("#gen-count", "1").await;
    browser.click("#gen-button").await;
    browser.wait_text("#gen-summary", "1 ID, hex").await;
    assert_eq!(browser.text("#gen-list code").await.len(), 16);
    assert_eq!(browser.attr("#parse-result", "data-id").await, Some(id));

    // A count out of range is refused inline, without a request.
    browser.type_into("#gen-count", "1001").await;
    browser.click("#gen-button").await;
    let refusal = "count must be a whole number from 1 to 1000, got \"1001\"";
    browser.wait_text("#gen-error", refusal).await;
    assert_no_console_errors(&browser).await;
    browser.close().await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parse_the_discord_documentation_id() {
    let (server, browser) = start!("");
    browser.open(&server.url).await;
    browser.wait_for("#diagram[data-layout='server']").await;
    assert_eq!(
        browser.text("#bits-caption").await,
        "This server's layout (twitter); parse an ID to fill in its bits."
    );
    browser.choose("#parse-layout", "discord").await;
    browser.type_into("#parse-input", DISCORD_ID).await;
    browser.wait_for(&parsed(DISCORD_ID, "discord")).await;
    assert_eq!(
        browser.text("#bits-caption").await,
        format!("{DISCORD_ID} with the discord layout")
    );
    assert_eq!(
        result_text(&browser, "[data-part='utc']").await,
        "2016-04-30 11:18:25.796 UTC"
    );
    assert_eq!(result_text(&browser, "dd[data-name='worker']").await, "1");
    assert_eq!(result_text(&browser, "dd[data-name='process']").await, "0");
    assert_eq!(
        result_text(&browser, "dd[data-name='increment']").await,
        "7"
    );
    assert!(
        result_text(&browser, "[data-part='ago']")
            .await
            .ends_with(" ago")
    );
    // Local time, in the browser's zone (UTC+09:00).
    let local = result_text(&browser, "[data-part='local']").await;
    assert_eq!(
        local,
        format!("2016-04-30 20:18:25.796 (GMT+9, {})", webdriver::TIME_ZONE)
    );

    // The diagram: 64 bits, Discord's fields under Discord's names, the bits of the id.
    let legend = || browser.texts("#legend tbody td:first-child");
    assert_eq!(
        legend().await,
        ["timestamp", "worker", "process", "increment"]
    );
    let bits = browser.texts("#diagram .bit").await.concat();
    assert_eq!(bits, format!("{:064b}", 175_928_847_299_117_063_u64));
    assert!(
        browser
            .text("#legend tr[data-name='timestamp']")
            .await
            .contains("41944705796")
    );

    // Another layout redraws it: Twitter has an unused top bit and a datacenter.
    browser.choose("#parse-layout", "twitter").await;
    browser.wait_for("#diagram[data-layout='twitter']").await;
    assert_eq!(
        legend().await,
        ["unused", "timestamp", "datacenter", "worker", "sequence"]
    );
    assert_eq!(result_text(&browser, "dd[data-name='sequence']").await, "7");
    browser.choose("#parse-layout", "sonyflake").await;
    browser.wait_for("#diagram[data-layout='sonyflake']").await;
    assert_eq!(
        legend().await,
        ["unused", "timestamp", "sequence", "machine"]
    );

    // The same id in hex and in base32 reads the same.
    browser.choose("#parse-layout", "discord").await;
    for text in ["0x0271065ac1020007", "04w86bb0g4oo7"] {
        browser.type_into("#parse-input", text).await;
        browser.wait_for(&parsed(DISCORD_ID, "discord")).await;
        assert!(!browser.shown("#parse-error").await, "{text}");
    }
    // The address keeps the id and layout, so a parsed id can be shared as a link.
    let url = browser.client.current_url().await.unwrap();
    assert_eq!(url.fragment(), Some("id=04w86bb0g4oo7&layout=discord"));
    browser.client.refresh().await.unwrap();
    browser.wait_for(&parsed(DISCORD_ID, "discord")).await;
    assert_no_console_errors(&browser).await;
    browser.close().await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_an_inline_message_and_nothing_else_breaks() {
    let (server, browser) = start!("");
    browser.open(&server.url).await;
    let out_of_range = "id 18446744073709551615 is out of range for this layout: \
                        its largest id is 9223372036854775807";
    for (text, layout, message) in [
        (
            "hello",
            "twitter",
            "invalid character 'h' at position 0 in decimal id",
        ),
        (
            "99999999999999999999",
            "twitter",
            "decimal id does not fit in 64 bits",
        ),
        ("18446744073709551615", "twitter", out_of_range),
        (
            "0x12G4",
            "twitter",
            "invalid character 'G' at position 4 in hex id",
        ),
        (
            "01U",
            "discord",
            "invalid character 'U' at position 2 in decimal id",
        ),
    ] {
        browser.choose("#parse-layout", layout).await;
        browser.type_into("#parse-input", text).await;
        browser.wait_text("#parse-error", message).await;
        assert_eq!(
            browser.attr("#parse-result", "data-id").await,
            None,
            "{text}"
        );
        let invalid = browser.attr("#parse-input", "aria-invalid").await;
        assert_eq!(invalid.as_deref(), Some("true"), "{text}");
    }
    // A valid id after it: the message goes, the result comes.
    browser.type_into("#parse-input", DISCORD_ID).await;
    browser.wait_for(&parsed(DISCORD_ID, "discord")).await;
    assert!(!browser.shown("#parse-error").await);

    // A custom layout that does not fit says why; fixing it decodes.
    browser.choose("#parse-layout", "custom").await;
    browser.type_into("#custom-timestamp", "42").await;
    browser.type_into("#custom-sequence", "13").await;
    browser
        .wait_text("#parse-error", "layout needs 65 bits but an id has 64")
        .await;
    browser.type_into("#custom-sequence", "12").await;
    browser.type_into("#custom-epoch", "2015-01-01").await;
    browser.wait_for(&parsed(DISCORD_ID, "custom")).await;
    let utc = browser.text("#parse-result [data-part='utc']").await;
    assert_eq!(utc, "2016-04-30 11:18:25.796 UTC");
    browser.type_into("#custom-epoch", "yesterday").await;
    let refusal =
        "epoch \"yesterday\" is neither milliseconds since the Unix epoch nor an RFC 3339 time";
    browser.wait_text("#parse-error", refusal).await;

    // And Generate still works.
    browser.click("#gen-button").await;
    browser.wait_for("#gen-decoded[data-worker='17']").await;
    assert_no_console_errors(&browser).await;
    browser.close().await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_decodes_as_the_server_does() {
    let (server, browser) = start!("");
    browser.open(&server.url).await;
    let ids = [
        DISCORD_ID,
        "0x0123456789abcdef",
        "FZZZZZZZZZZZZ",
        "0123456789abc",
        "LygHa16AHYF",
        "1",
        "9223372036854775807",
        "103270115826048975",
        "0000000000000123",
        "12345678901234567890",
        "hello",
        "0x",
        "0xZZ",
        "000000000000000000000001",
        "ilo0ILO0ilo0I",
        "é1",
    ];
    let layouts = [
        "server",
        "twitter",
        "discord",
        "instagram",
        "sonyflake",
        "baidu",
        "tsid",
        "mastodon",
    ];
    // Each id under each layout, entered through the page's own input handlers, in one
    // script: what the page shows beside what the server answers.
    let script = "const [ids, layouts] = arguments;
        const select = document.getElementById('parse-layout');
        const input = document.getElementById('parse-input');
        const shown = () => {
          const r = document.getElementById('parse-result');
          const e = document.getElementById('parse-error');
          if (r.dataset.id === undefined) return { error: e.hidden ? null : e.textContent };
          const { id, unixMs, datacenter, worker, sequence } = r.dataset;
          const utc = r.querySelector('[data-part=utc]').textContent;
          return { id, unix_ms: unixMs, datacenter, worker, sequence, utc };
        };
        return (async () => {
          const out = [];
          for (const layout of layouts) {
            select.value = layout;
            select.dispatchEvent(new Event('change'));
            for (const text of ids) {
              input.value = text;
              input.dispatchEvent(new Event('input'));
              const query = layout === 'server' ? '' : `?layout=${layout}`;
              const server = await fetch(`/v1/decode/${encodeURIComponent(text)}${query}`).then(r => r.json());
              out.push([`${text} with ${layout}`, shown(), server]);
            }
          }
          return out;
        })();";
    let answers = browser.run(script, vec![json!(ids), json!(layouts)]).await;
    let answers = answers.as_array().unwrap();
    assert_eq!(answers.len(), ids.len() * layouts.len());
    for answer in answers {
        let (case, page, server) = (&answer[0], &answer[1], &answer[2]);
        // The server's answer as the page writes it: numbers as exact decimal text, and
        // the time as "YYYY-MM-DD hh:mm:ss.mmm UTC".
        let expected = match server.get("error") {
            Some(error) => json!({ "error": error }),
            None => {
                let text = |key: &str| Value::String(server[key].to_string());
                let time = server["time"].as_str().unwrap();
                json!({
                    "id": server["id"],
                    "unix_ms": text("unix_ms"),
                    "datacenter": text("datacenter"),
                    "worker": text("worker"),
                    "sequence": text("sequence"),
                    "utc": time.replace('T', " ").replace('Z', " UTC"),
                })
            }
        };
        assert_eq!(page, &expected, "{case}");
    }
    let errors = answers
        .iter()
        .filter(|a| a[2].get("error").is_some())
        .count();
    assert!(
        errors > 0 && errors < answers.len(),
        "both kinds are compared"
    );
    browser.close().await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn screenshots_at_desktop_and_phone_widths() {
    let (server, browser) = start!("");
    browser.open(&server.url).await;
    browser.type_into("#gen-count", "5").await;
    browser.click("#gen-button").await;
    browser.wait_for("#gen-decoded[data-id]").await;
    browser.choose("#parse-layout", "discord").await;
    browser.type_into("#parse-input", DISCORD_ID).await;
    browser.wait_for(&parsed(DISCORD_ID, "discord")).await;

    let dir = screenshot_dir();
    let shots = [
        (1280, "page-desktop.png", false),
        (1000, "page-1000.png", false),
        (360, "page-360.png", false),
        (1280, "page-dark.png", true),
    ];
    for (width, name, dark) in shots {
        browser.prefer_dark(dark).await;
        let path = dir.join(name);
        browser.screenshot(width, &path).await;
        let png = std::fs::read(&path).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        // The width in the PNG header, in device pixels at scale 1.
        assert_eq!(
            u32::from_be_bytes(png[16..20].try_into().unwrap()),
            width,
            "{name}"
        );
        eprintln!("screenshot: {}", path.display());
    }
    browser.prefer_dark(false).await;
    // At 360 px nothing is wider than the screen, and the diagram folds into rows.
    browser.emulate_width(360).await;
    assert_eq!(
        browser.widths().await,
        (360, 360),
        "the page scrolls sideways at 360 px"
    );
    assert_eq!(
        browser.texts("#diagram .drow").await.len(),
        4,
        "rows of 16 bits"
    );
    assert_no_console_errors(&browser).await;
    browser.close().await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_is_asked_for_once_then_sent() {
    let (server, browser) = start!("auth_token = \"s3cret\"");
    browser.client.goto(&server.url).await.unwrap();
    browser.wait_for("#auth:not([hidden])").await;
    // The field has the focus: the token can be typed at once.
    let focused = browser
        .run("return document.activeElement.id", vec![])
        .await;
    assert_eq!(focused, "auth-token");

    // A wrong token is refused, and asked for again.
    browser.type_into("#auth-token", "wrong").await;
    browser.press_enter("#auth-token").await;
    let again = "The server refused that token. Enter it again.";
    browser.wait_text("#auth-why", again).await;
    assert!(browser.shown("#auth").await);

    browser.type_into("#auth-token", "s3cret").await;
    browser.click("#auth-button").await;
    browser.wait_for("#about-stats [data-about='worker']").await;
    assert!(!browser.shown("#auth").await);
    browser.click("#gen-button").await;
    browser.wait_for("#gen-decoded[data-worker='17']").await;

    // Kept for the tab: after a reload the page works without asking.
    browser.client.refresh().await.unwrap();
    browser.wait_for("#about-stats [data-about='worker']").await;
    browser.click("#gen-button").await;
    browser.wait_for("#gen-decoded[data-worker='17']").await;
    assert!(!browser.shown("#auth").await);
    // The only errors were the two refusals before the right token.
    let errors = browser.console_errors().await;
    assert!(
        errors.len() == 2 && errors.iter().all(|e| e.contains("401")),
        "{errors:#?}"
    );
    browser.close().await;
    server.stop().await;
}
