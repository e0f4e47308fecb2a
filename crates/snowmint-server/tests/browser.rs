//! The web page at `/`, driven in Debian's headless Chromium against the real server on a
//! loopback port: what a person sees and does, and that the page decodes as the server does.

use crate::webdriver;

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use snowmint::{Bits, Encoding, Id, Layout, UnixMs};
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
    let clock = browser.text("[data-about='clock']").await;
    assert_eq!(
        clock,
        "monotonic\nrollback wait: no step of the wall clock reaches it"
    );
    let runs_out = browser.text("[data-about='runs-out']").await;
    assert!(
        runs_out.starts_with("2080-07-10\n17:30:30.209 UTC; in "),
        "{runs_out}"
    );
    // Before any id, the diagram shows the server's layout.
    let layout = browser.attr("#diagram", "data-layout").await;
    assert_eq!(layout.as_deref(), Some("server"));

    // What the page says of encodings and the custom layout comes from the core.
    let options = "return [...document.querySelectorAll('#gen-format option')].map(o => [o.value, o.textContent])";
    let expected: Vec<Value> = Encoding::ALL
        .iter()
        .map(|e| json!([e.name(), e.title()]))
        .collect();
    assert_eq!(browser.run(options, vec![]).await, Value::Array(expected));
    assert_eq!(
        browser.text("#parse .hint").await,
        "Decimal, 0x… or 16-character Hex, 13-character Crockford base32, 11-character \
         Base62 or 0b… Binary. Decoded in your browser, exactly."
    );
    let custom = "return ['epoch', 'tick', 'timestamp', 'datacenter', 'worker', 'sequence']
        .map(key => document.getElementById(`custom-${key}`).value)";
    let twitter = Layout::TWITTER;
    let (bits, tick, epoch) = (twitter.bits(), twitter.tick_ms(), twitter.epoch_ms());
    let numbers = [epoch, tick]
        .into_iter()
        .chain([bits.timestamp, bits.datacenter, bits.worker, bits.sequence].map(u64::from));
    let expected: Vec<String> = numbers.map(|n| n.to_string()).collect();
    assert_eq!(browser.run(custom, vec![]).await, json!(expected));
    let legend = "return document.getElementById('custom-legend').textContent";
    assert_eq!(
        browser.run(legend, vec![]).await,
        "Custom layout (timestamp, datacenter, worker, sequence, high bits first)"
    );
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
    // 0x and 16 digits.
    assert_eq!(browser.text("#gen-list code").await.len(), 18);
    assert_eq!(browser.attr("#parse-result", "data-id").await, Some(id));

    // More than the list shows: it lists the newest and says so; every id was issued.
    browser.choose("#gen-format", "decimal").await;
    browser.type_into("#gen-count", "1001").await;
    browser.click("#gen-button").await;
    let summary = "1,001 IDs, decimal; the newest 1,000 listed";
    browser.wait_text("#gen-summary", summary).await;
    let listed = browser.texts("#gen-list code").await;
    assert_eq!(listed.len(), 1000);
    assert_eq!(
        browser.text("#gen-decoded [data-part='id']").await,
        listed[999],
        "the newest is decoded"
    );

    // The server's limit (100000 by default) is the page's, and past it the page refuses
    // inline, in the server's words.
    assert_eq!(
        browser.text("label[for='gen-count']").await,
        "Count, 1–100,000"
    );
    assert_eq!(
        browser.attr("#gen-count", "max").await.as_deref(),
        Some("100000")
    );
    refused_as_the_server_refuses(&browser, "100001").await;
    refused_as_the_server_refuses(&browser, "0").await;
    assert_no_console_errors(&browser).await;
    browser.close().await;
    server.stop().await;
}

/// Types `count` and asks for ids: the page refuses inline, with the message the server
/// answers for the same count, and the list keeps what it showed.
async fn refused_as_the_server_refuses(browser: &Browser, count: &str) {
    let before = browser.texts("#gen-list code").await;
    let server = browser.fetch_json(&format!("/v1/ids?count={count}")).await;
    let message = server["error"].as_str().expect("the server refuses it");
    // The console logs that refusal; the page's own must log nothing, as it asks nothing.
    let logged = browser.console_errors().await;
    assert!(
        logged.len() == 1 && logged[0].contains("400 (Bad Request)"),
        "{logged:#?}"
    );
    browser.type_into("#gen-count", count).await;
    browser.click("#gen-button").await;
    browser.wait_text("#gen-error", message).await;
    assert_no_console_errors(browser).await;
    let invalid = browser.attr("#gen-count", "aria-invalid").await;
    assert_eq!(invalid.as_deref(), Some("true"), "{count}");
    assert_eq!(browser.texts("#gen-list code").await, before, "{count}");
}

/// The page is built from the server's state: a server that issues at most 50 ids a request
/// offers 50, and refuses 51 inline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_offers_what_this_server_allows() {
    let (server, browser) = start!("max_batch = 50");
    browser.open(&server.url).await;
    assert_eq!(browser.text("label[for='gen-count']").await, "Count, 1–50");
    assert_eq!(
        browser.attr("#gen-count", "max").await.as_deref(),
        Some("50")
    );
    refused_as_the_server_refuses(&browser, "51").await;
    assert_eq!(
        browser.text("#gen-error").await,
        "count \"51\" is out of range: expected a whole number 1..=50"
    );
    assert!(!browser.shown("#gen-output").await, "nothing was generated");
    let path = screenshot_dir().join("page-max-batch-50.png");
    browser.screenshot(1280, &path).await;
    eprintln!("screenshot: {}", path.display());

    browser.type_into("#gen-count", "50").await;
    browser.click("#gen-button").await;
    browser.wait_text("#gen-summary", "50 IDs, decimal").await;
    assert_eq!(browser.texts("#gen-list code").await.len(), 50);
    assert!(!browser.shown("#gen-error").await);
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
    // The other encodings, written as the core writes them.
    let id = Id::parse_any(DISCORD_ID).unwrap().0;
    let also: Vec<String> = Encoding::ALL[1..]
        .iter()
        .map(|e| format!("{e} {}", id.encode(*e, &mut [0; Encoding::BUF_LEN])))
        .collect();
    assert_eq!(
        result_text(&browser, "[data-part='also']").await,
        also.join("\n")
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

    // All digits at hex's width read as decimal, and the page says how to write hex.
    browser.type_into("#parse-input", "0000000000000123").await;
    browser.wait_for(&parsed("123", "discord")).await;
    assert_eq!(
        result_text(&browser, "[data-part='read-as']").await,
        "decimal (all digits; write hex as 0x…)"
    );
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
            "hello!",
            "twitter",
            "invalid character 'h' at position 0 in decimal id",
        ),
        (
            "-1",
            "twitter",
            "id \"-1\" is negative, but layout twitter uses 63 bits: none of its ids is negative, even in a signed 64-bit column",
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
            "invalid character 'U' at position 2 in decimal id, the encoding guessed from its form, but it reads as base62: name its encoding (base62 written without padding, as TSID libraries other than tsid-creator write it, cannot be told from base32 or decimal)",
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

/// What the page shows for the id in the Parse field, as JSON: its parts, or its message.
const SHOWN: &str = "const shown = () => {
      const r = document.getElementById('parse-result');
      const e = document.getElementById('parse-error');
      if (r.dataset.id === undefined) return { error: e.hidden ? null : e.textContent };
      const { id, unixMs, datacenter, worker, sequence } = r.dataset;
      const utc = r.querySelector('[data-part=utc]').textContent;
      return { id, unix_ms: unixMs, datacenter, worker, sequence, utc };
    };";

/// The core's answer as the page writes it: numbers as exact decimal text, and the time as
/// "YYYY-MM-DD hh:mm:ss.mmm UTC" (or the core's count of ms past its last date).
fn as_the_page_writes(id: Id, unix_ms: u64, parts: [u64; 3]) -> Value {
    let time = UnixMs(unix_ms).to_string();
    json!({
        "id": id.as_u64().to_string(),
        "unix_ms": unix_ms.to_string(),
        "datacenter": parts[0].to_string(),
        "worker": parts[1].to_string(),
        "sequence": parts[2].to_string(),
        "utc": time.replace('T', " ").replace('Z', " UTC"),
    })
}

/// The ids the systems document themselves, from `testdata/vectors.json`, with a preset's own
/// tick and epoch (the page decodes presets by name).
fn documented_ids() -> Vec<Value> {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/vectors.json");
    let vectors: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let documented: Vec<Value> = vectors["documented"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d.get("tick_ms").is_none())
        .filter(|d| Layout::by_name(d["layout"].as_str().unwrap()).is_ok())
        .cloned()
        .collect();
    assert!(documented.len() >= 5, "{documented:?}");
    documented
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_decodes_as_the_server_does() {
    let (server, browser) = start!("");
    browser.open(&server.url).await;
    // Every encoding read and refused in every way, characters Rust's {:?} escapes, and
    // Mastodon times around the last one the server writes as a date.
    let last_date = UnixMs::LAST_DATE.0;
    let mastodon = |ms: u64| (ms << 16).to_string();
    let ids: Vec<String> = vec![
        DISCORD_ID.to_string(),
        "0x0123456789abcdef".into(),
        "FZZZZZZZZZZZZ".into(),
        "0123456789abc".into(),
        "LygHa16AHYF".into(),
        "1".into(),
        "9223372036854775807".into(),
        "103270115826048975".into(),
        "0000000000000123".into(),
        "00000000000000ff".into(),
        "12345678901234567890".into(),
        "99999999999999999999".into(),
        "hello".into(),
        "hello!".into(),
        "WIlLsHwljH".into(),
        "-1".into(),
        "-0".into(),
        "-8499700661677131895".into(),
        "-9223372036854775809".into(),
        "-12a".into(),
        "0x3962102955333052".into(),
        "0x".into(),
        "0xZZ".into(),
        "0b101".into(),
        "0B1111".into(),
        "0b".into(),
        "0b102".into(),
        "0b00000000002".into(),
        "0b00000000000002".into(),
        format!("0b{}", "1".repeat(64)),
        format!("0b{}", "1".repeat(65)),
        format!("0b{:064b}", 1_234_567_890u64),
        "0x00000000000000001".into(),
        "000000000000000000000001".into(),
        "0000000000U00".into(),
        "G000000000000".into(),
        "0000000000_".into(),
        "LygHa16AHYG".into(),
        "ilo0ILO0ilo0I".into(),
        "é1".into(),
        "1'2".into(),
        "1\\2".into(),
        "1\"2".into(),
        "1\t2".into(),
        "1\u{7f}".into(),
        "1\u{85}2".into(),
        "1\u{a0}2".into(),
        "1\u{ad}".into(),
        "1\u{301}".into(),
        "1\u{200b}2".into(),
        "1\u{2028}2".into(),
        "1\u{e000}".into(),
        "1\u{1f600}".into(),
        mastodon(last_date),
        mastodon(last_date + 1),
        mastodon(253_402_300_799_999),
        mastodon((1 << 48) - 1),
    ];
    // And every id a system documents itself, from the shared vectors.
    let documented = documented_ids();
    let mut ids = ids;
    ids.extend(
        documented
            .iter()
            .map(|d| d["id"].as_str().unwrap().to_string()),
    );
    let layouts: Vec<&str> = ["server"]
        .into_iter()
        .chain(Layout::PRESETS.iter().map(|l| l.name()))
        .collect();
    // The page offers every preset of the core, under its title, and nothing else.
    let options = "return [...document.querySelectorAll('#parse-layout option')].map(o => [o.value, o.textContent])";
    let offered = browser.run(options, vec![]).await;
    let mut expected = vec![json!(["server", "This server's (twitter)"])];
    expected.extend(Layout::PRESETS.iter().map(|l| json!([l.name(), l.title()])));
    expected.push(json!(["custom", "Custom…"]));
    assert_eq!(offered, Value::Array(expected));

    // Each id under each layout, entered through the page's own input handlers, in one
    // script: what the page shows beside what the server answers.
    let script = format!(
        "const [ids, layouts] = arguments;
        const select = document.getElementById('parse-layout');
        const input = document.getElementById('parse-input');
        {SHOWN}
        return (async () => {{
          const out = [];
          for (const layout of layouts) {{
            select.value = layout;
            select.dispatchEvent(new Event('change'));
            for (const text of ids) {{
              input.value = text;
              input.dispatchEvent(new Event('input'));
              const query = layout === 'server' ? '' : `?layout=${{layout}}`;
              const server = await fetch(`/v1/decode/${{encodeURIComponent(text)}}${{query}}`).then(r => r.json());
              out.push([`${{JSON.stringify(text)}} with ${{layout}}`, shown(), server]);
            }}
          }}
          return out;
        }})();"
    );
    let answers = browser.run(&script, vec![json!(ids), json!(layouts)]).await;
    let answers = answers.as_array().unwrap();
    assert_eq!(answers.len(), ids.len() * layouts.len());
    for answer in answers {
        let (case, page, server) = (&answer[0], &answer[1], &answer[2]);
        let expected = match server.get("error") {
            Some(error) => json!({ "error": error }),
            None => {
                let id = Id::from_u64(server["id"].as_str().unwrap().parse().unwrap());
                let number = |key: &str| server[key].as_u64().unwrap();
                let fields = [number("datacenter"), number("worker"), number("sequence")];
                let expected = as_the_page_writes(id, number("unix_ms"), fields);
                let time = server["time"].as_str().unwrap();
                assert_eq!(expected["utc"], time.replace('T', " ").replace('Z', " UTC"));
                expected
            }
        };
        assert_eq!(page, &expected, "{case}");
    }
    // Each documented id, under its preset, shows what its source says.
    for d in &documented {
        let case = format!("{} with {}", d["id"], d["layout"].as_str().unwrap());
        let answer = answers.iter().find(|a| a[0] == case.as_str()).unwrap();
        for key in ["unix_ms", "datacenter", "worker", "sequence"] {
            assert_eq!(answer[1][key], d[key], "{key} of {}", d["source"]);
        }
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

/// A custom layout is checked with `Layout::new_u64`'s rules and words, and
/// decodes as the core decodes with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_layouts_are_checked_and_decoded_as_the_core_does() {
    let (server, browser) = start!("");
    browser.open(&server.url).await;
    let bits = |timestamp, datacenter, worker, sequence| Bits {
        timestamp,
        datacenter,
        worker,
        sequence,
    };
    // Bits (timestamp, datacenter, worker, sequence), tick, epoch, id.
    let cases: [(Bits, u64, u64, &str); 12] = [
        (bits(42, 5, 5, 13), 1, 0, DISCORD_ID),
        (bits(0, 5, 5, 12), 1, 0, DISCORD_ID),
        (bits(41, 5, 5, 12), 0, 0, DISCORD_ID),
        (bits(41, 5, 5, 12), 1, u64::MAX - 5, DISCORD_ID),
        (bits(64, 0, 0, 0), 1, 0, DISCORD_ID),
        (bits(41, 0, 0, 0), 1_000_000_000_000, 0, "1"),
        (bits(63, 0, 0, 0), 1, 1, DISCORD_ID),
        (bits(42, 5, 5, 12), 1, 1_420_070_400_000, DISCORD_ID),
        (bits(20, 0, 0, 0), 1000, 0, DISCORD_ID),
        (bits(1, 0, 0, 0), i64::MAX as u64, 0, "1"),
        (bits(30, 10, 12, 12), 10, 1_000, "0x0123456789abcdef"),
        (bits(41, 5, 5, 12), 1, 1_288_834_974_657, "0123456789abc"),
    ];
    let inputs: Vec<Value> = cases
        .iter()
        .map(|(b, tick, epoch, id)| {
            json!({
                "timestamp": b.timestamp.to_string(), "datacenter": b.datacenter.to_string(),
                "worker": b.worker.to_string(), "sequence": b.sequence.to_string(),
                "tick": tick.to_string(), "epoch": epoch.to_string(), "id": id,
            })
        })
        .collect();
    let script = format!(
        "const [cases] = arguments;
        const select = document.getElementById('parse-layout');
        select.value = 'custom';
        select.dispatchEvent(new Event('change'));
        {SHOWN}
        return cases.map((c) => {{
          for (const key of ['epoch', 'tick', 'timestamp', 'datacenter', 'worker', 'sequence']) {{
            const el = document.getElementById(`custom-${{key}}`);
            el.value = c[key];
            el.dispatchEvent(new Event('input'));
          }}
          const input = document.getElementById('parse-input');
          input.value = c.id;
          input.dispatchEvent(new Event('input'));
          return shown();
        }});"
    );
    let shown = browser.run(&script, vec![json!(inputs)]).await;
    let mut refused = 0;
    for (case, page) in cases.iter().zip(shown.as_array().unwrap()) {
        let (bits, tick, epoch, text) = *case;
        let (id, _) = Id::parse_any(text).unwrap();
        let decoded = Layout::new_u64(bits, tick, epoch)
            .map_err(|err| err.to_string())
            .and_then(|layout| layout.decode(id).map_err(|err| err.to_string()));
        let expected = match decoded {
            Ok(p) => as_the_page_writes(id, p.unix_ms, [p.datacenter, p.worker, p.sequence]),
            Err(err) => {
                refused += 1;
                json!({ "error": err })
            }
        };
        assert_eq!(page, &expected, "{case:?}");
    }
    assert!(
        (1..cases.len()).contains(&refused),
        "both kinds are compared"
    );
    assert_no_console_errors(&browser).await;
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
    browser
        .type_into("#compose-time", "2016-04-30T11:18:25.796Z")
        .await;
    browser.type_into("#compose-worker", "1").await;
    browser.type_into("#compose-sequence", "7").await;
    browser
        .wait_for(&format!("#compose-result[data-id='{DISCORD_ID}']"))
        .await;

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

/// "Use it from your language": each client's own example file, as its tests run it, with
/// the layout chosen under Parse written in where the file names "twitter".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_shows_each_clients_tested_example_for_the_chosen_layout() {
    let (server, browser) = start!("");
    browser.open(&server.url).await;
    browser
        .wait_for("#clients-code[data-layout='twitter']")
        .await;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../clients");
    let examples = [
        ("JavaScript", "js/snippet.js"),
        ("Python", "python/snippet.py"),
        ("Java", "java/snippet.java"),
        ("Go", "go/snippet.go"),
        ("Ruby", "ruby/snippet.rb"),
        ("PHP", "php/snippet.php"),
    ];
    let code = "return document.getElementById('clients-code').textContent";
    for (language, file) in examples {
        browser.choose("#clients-language", language).await;
        let file_text = std::fs::read_to_string(root.join(file)).unwrap();
        let shown = browser.run(code, vec![]).await;
        let shown = shown.as_str().unwrap();
        assert_eq!(
            shown,
            file_text.trim_start_matches("//go:build ignore\n\n"),
            "{language}"
        );
        assert_eq!(shown.matches("\"twitter\"").count(), 1, "{language}");
        let dir = file.split('/').next().unwrap();
        assert!(
            browser
                .text("#clients-where")
                .await
                .contains(&format!("clients/{file}")),
            "{language} names clients/{dir}/"
        );
    }
    // Another preset is written in, and a custom layout with its tick is named beside.
    browser.choose("#clients-language", "Python").await;
    browser.choose("#parse-layout", "discord").await;
    browser
        .wait_for("#clients-code[data-layout='discord']")
        .await;
    let shown = browser.run(code, vec![]).await;
    assert!(
        shown
            .as_str()
            .unwrap()
            .contains("decode(new_id, \"discord\")"),
        "{shown}"
    );
    assert!(!browser.shown("#clients-note").await);
    browser.choose("#parse-layout", "custom").await;
    browser.type_into("#custom-timestamp", "40").await;
    browser.type_into("#custom-tick", "10").await;
    browser
        .wait_for("#clients-code[data-layout='custom:40/5/5/12']")
        .await;
    assert_eq!(
        browser.text("#clients-note").await,
        "This layout has a tick of 10 ms: pass them to decode, as the client's README shows."
    );
    browser.choose("#parse-layout", "server").await;
    browser
        .wait_for("#clients-code[data-layout='twitter']")
        .await;
    let path = screenshot_dir().join("page-clients.png");
    browser.screenshot(1280, &path).await;
    eprintln!("screenshot: {}", path.display());
    assert_no_console_errors(&browser).await;
    browser.close().await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_names_the_clock_and_what_a_step_back_meets() {
    let (server, browser) =
        start!("clock = \"wall\"\nrollback = \"spare\"\nrollback_wait_ms = 250");
    browser.open(&server.url).await;
    browser.wait_for("#about-stats [data-about='clock']").await;
    assert_eq!(
        browser.text("[data-about='clock']").await,
        "wall\nrollback spare: a clock set back gets the newest tick's spare numbers, then a wait of up to 250 ms"
    );
    browser.close().await;
    server.stop().await;

    let (server, browser) = start!("clock = \"counter\"");
    browser.open(&server.url).await;
    browser.wait_for("#about-stats [data-about='clock']").await;
    assert_eq!(
        browser.text("[data-about='clock']").await,
        "counter\nids count spent sequences: their time field does not tell time"
    );
    assert_no_console_errors(&browser).await;
    browser.close().await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_composes_as_the_server_does() {
    let (server, browser) = start!("");
    browser.open(&server.url).await;
    // Discord's documentation instant, a second later, 2024 in RFC 3339, and 1970, before
    // every layout's epoch here.
    let times = [
        "1462015105796",
        "1462015106796",
        "2024-01-01T00:00:00Z",
        "1970-01-01T00:00:00Z",
    ];
    let script = "const [choice, custom, time, parts] = arguments;
        const select = document.getElementById('parse-layout');
        select.value = choice;
        select.dispatchEvent(new Event('change'));
        for (const [key, value] of Object.entries(custom)) {
          const el = document.getElementById(`custom-${key}`);
          el.value = value;
          el.dispatchEvent(new Event('input'));
        }
        const set = (key, value) => {
          const el = document.getElementById(`compose-${key}`);
          el.value = value;
          el.dispatchEvent(new Event('input'));
        };
        set('time', time);
        for (const [key, value] of Object.entries(parts)) set(key, value);
        const r = document.getElementById('compose-result');
        const e = document.getElementById('compose-error');
        const encodings = [...r.querySelectorAll('[data-encoding]')]
          .map((el) => [el.dataset.encoding, el.querySelector('code').textContent]);
        return { id: r.dataset.id || null, first: r.dataset.first || null, last: r.dataset.last || null,
          error: e.hidden ? null : e.textContent, encodings,
          diagram: document.getElementById('bits-caption').textContent };";
    let mut cases: Vec<(String, Layout, Value)> = Layout::PRESETS
        .iter()
        .map(|l| (l.name().to_string(), *l, json!({})))
        .collect();
    for (bits, tick, epoch) in [
        (
            Bits {
                timestamp: 39,
                datacenter: 0,
                worker: 10,
                sequence: 14,
            },
            10u64,
            1_288_834_974_657u64,
        ),
        (
            Bits {
                timestamp: 30,
                datacenter: 10,
                worker: 12,
                sequence: 12,
            },
            1000,
            1_000,
        ),
    ] {
        let layout = Layout::new_u64(bits, tick, epoch).unwrap();
        let custom = json!({
            "epoch": epoch.to_string(), "tick": tick.to_string(),
            "timestamp": bits.timestamp.to_string(), "datacenter": bits.datacenter.to_string(),
            "worker": bits.worker.to_string(), "sequence": bits.sequence.to_string(),
        });
        cases.push(("custom".into(), layout, custom));
    }
    let mut compared = 0;
    for (choice, layout, custom) in &cases {
        for time in times {
            let unix_ms = snowmint::UnixMs::parse_time(time).unwrap().0;
            // Each part at its largest, and one past the largest worker id.
            let max = [
                layout.max_datacenter(),
                layout.max_worker(),
                layout.max_sequence(),
            ];
            for (parts, over) in [(max, false), ([0, max[1] + 1, 0], true)] {
                let given = json!({"datacenter": parts[0].to_string(), "worker": parts[1].to_string(), "sequence": parts[2].to_string()});
                let page = browser
                    .run(
                        script,
                        vec![json!(choice), custom.clone(), json!(time), given],
                    )
                    .await;
                let fields = snowmint::Fields {
                    datacenter: parts[0],
                    worker: parts[1],
                    sequence: parts[2],
                };
                let ctx = format!("{choice} {layout:?} {time} {parts:?}");
                match layout.compose_at(unix_ms, fields) {
                    Ok(id) => {
                        assert!(!over, "{ctx}");
                        assert_eq!(page["id"], json!(id.to_string()), "{ctx}: {page}");
                        let (first, last) = layout.ids_at(unix_ms).unwrap();
                        assert_eq!(page["first"], json!(first.to_string()), "{ctx}");
                        assert_eq!(page["last"], json!(last.to_string()), "{ctx}");
                        let shown: Vec<Value> = Encoding::ALL
                            .iter()
                            .map(|e| {
                                json!([
                                    e.name(),
                                    e.encode(id.as_u64(), &mut [0; Encoding::BUF_LEN])
                                ])
                            })
                            .collect();
                        assert_eq!(page["encodings"], Value::Array(shown), "{ctx}");
                        assert!(
                            page["diagram"]
                                .as_str()
                                .unwrap()
                                .starts_with(&id.to_string()),
                            "{ctx}: {page}"
                        );
                    }
                    Err(err) => {
                        assert_eq!(page["error"], json!(err.to_string()), "{ctx}");
                        assert_eq!(page["id"], Value::Null, "{ctx}");
                    }
                }
                // A preset the server knows by name: it answers the same.
                if choice != "custom" {
                    let url = format!(
                        "/v1/compose?layout={choice}&time={time}&datacenter={}&worker={}&sequence={}",
                        parts[0], parts[1], parts[2]
                    );
                    let body = browser.fetch_json(&url).await;
                    if page["id"].is_null() {
                        assert_eq!(body["error"], page["error"], "{ctx}");
                    } else {
                        assert_eq!(body["id"], page["id"], "{ctx}: {body}");
                    }
                }
                compared += 1;
            }
        }
    }
    assert_eq!(compared, cases.len() * times.len() * 2);
    // The only errors are the browser's notes of the refusals this test asked for.
    let errors = browser.console_errors().await;
    assert!(
        errors
            .iter()
            .all(|e| e.contains("/v1/compose?") && e.contains("status of 400")),
        "console errors: {errors:#?}"
    );
    browser.close().await;
    server.stop().await;
}
