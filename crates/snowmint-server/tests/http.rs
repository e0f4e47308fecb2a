//! The HTTP API, called as the server serves it (the router, with the fast path for
//! `GET /v1/id` in front) without a socket: every endpoint, and bad input
//! for each.

use crate::support;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::Value;
use snowmint::{Id, Layout};
use snowmint_server::{http_api, router};
use support::{Server, server};
use tower::ServiceExt;

struct Answer {
    status: StatusCode,
    content_type: String,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    fn error(&self) -> String {
        assert!(
            self.content_type.starts_with("application/json"),
            "{}",
            self.content_type
        );
        self.json()["error"]
            .as_str()
            .expect("error message")
            .to_string()
    }
}

async fn call(server: &Server, method: &str, uri: &str, headers: &[(&str, &str)]) -> Answer {
    call_with_body(server, method, uri, headers, Body::empty()).await
}

async fn call_with_body(
    server: &Server,
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
    body: Body,
) -> Answer {
    let mut request = Request::builder().method(method).uri(uri);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    // What the server serves: the router, with the fast path for GET /v1/id in front.
    let response = http_api(server.state.clone())
        .oneshot(request.body(body).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    Answer {
        status,
        content_type,
        body: String::from_utf8(bytes.to_vec()).unwrap(),
    }
}

async fn get(server: &Server, uri: &str) -> Answer {
    call(server, "GET", uri, &[]).await
}

fn now_ms() -> u64 {
    snowmint::Clock::now_ms(&snowmint::WallClock)
}

#[tokio::test]
async fn one_id_in_every_format() {
    let s = server("").await;
    let a = get(&s, "/v1/id").await;
    assert_eq!(a.status, StatusCode::OK);
    let id: Id = a.json()["id"].as_str().unwrap().parse().unwrap();
    let parts = Layout::TWITTER.decode(id).unwrap();
    assert_eq!((parts.datacenter, parts.worker), (2, 5));
    assert!(parts.unix_ms.abs_diff(now_ms()) < 5_000);

    let int = get(&s, "/v1/id?format=int").await.json()["id"]
        .as_u64()
        .unwrap();
    assert!(int > id.as_u64());
    for (format, encoding) in [
        ("hex", snowmint::Encoding::Hex),
        ("base32", snowmint::Encoding::Base32),
        ("base62", snowmint::Encoding::Base62),
        ("dec", snowmint::Encoding::Decimal),
    ] {
        let text = get(&s, &format!("/v1/id?format={format}")).await.json()["id"]
            .as_str()
            .unwrap()
            .to_string();
        let value = Id::parse_as(&text, encoding).unwrap();
        assert!(value.as_u64() > int, "{format}");
    }
    let a = get(&s, "/v1/id?format=octal").await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        a.error(),
        "unknown format \"octal\": expected decimal, hex, base32, base62, binary or int"
    );
    // Every name the core (and so the CLI's --format) reads, in any case.
    for (name, encoding) in [
        ("b32", snowmint::Encoding::Base32),
        ("B32", snowmint::Encoding::Base32),
        ("b62", snowmint::Encoding::Base62),
        ("binary", snowmint::Encoding::Binary),
        ("decimal", snowmint::Encoding::Decimal),
        ("HEX", snowmint::Encoding::Hex),
    ] {
        assert_eq!(name.parse(), Ok(encoding));
        let a = get(&s, &format!("/v1/ids?count=2&format={name}")).await;
        assert_eq!(a.status, StatusCode::OK, "{name}: {}", a.body);
        for id in a.json()["ids"].as_array().unwrap() {
            Id::parse_as(id.as_str().unwrap(), encoding).unwrap();
        }
    }
    let a = get(&s, "/v1/id?fromat=hex").await;
    assert_eq!(
        a.error(),
        "unknown query parameter \"fromat\": expected format"
    );
}

#[tokio::test]
async fn one_id_as_text_when_the_client_prefers_it() {
    let s = server("").await;
    let a = call(&s, "GET", "/v1/id", &[("accept", "text/plain")]).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.content_type, "text/plain; charset=utf-8");
    // The bare id and a newline, as one line of /v1/ids.
    let text = a.body.strip_suffix('\n').expect("a newline after the id");
    let first: Id = text.parse().unwrap();
    assert_eq!(Layout::TWITTER.decode(first).unwrap().worker, 5);

    let a = call(&s, "GET", "/v1/id?format=hex", &[("accept", "text/plain")]).await;
    // 0x, 16 digits and a newline.
    assert_eq!(a.body.len(), 19, "{:?}", a.body);
    let second = Id::parse_as(a.body.trim_end(), snowmint::Encoding::Hex).unwrap();
    assert!(second > first);

    // The Accept header is read as /v1/ids reads it; JSON stays the default.
    for (accept, text) in [
        ("text/plain;q=0, application/json", false),
        ("application/json;q=0.5, text/plain;q=0.9", true),
        ("text/*", true),
        ("*/*", false),
        ("text/html", false),
    ] {
        let a = call(&s, "GET", "/v1/id", &[("accept", accept)]).await;
        assert_eq!(a.status, StatusCode::OK, "{accept}");
        if text {
            assert!(a.content_type.starts_with("text/plain"), "{accept}");
            a.body.trim_end().parse::<Id>().unwrap();
        } else {
            assert_eq!(a.content_type, "application/json", "{accept}");
            a.json()["id"].as_str().unwrap().parse::<Id>().unwrap();
        }
    }
    let a = get(&s, "/v1/id").await;
    assert_eq!(a.content_type, "application/json");
    // Errors stay JSON whatever was asked for.
    let a = call(
        &s,
        "GET",
        "/v1/id?format=octal",
        &[("accept", "text/plain")],
    )
    .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert!(a.error().starts_with("unknown format \"octal\""));
}

/// `GET /v1/id` is answered in front of the router; the router alone must answer every
/// such request the same way, refusals and their words included, and count it the same.
#[tokio::test]
async fn the_fast_path_answers_as_the_router_does() {
    let s = server("auth_token = \"s3cret\"").await;
    let long = format!("/v1/id?format={}", "x".repeat(9000));
    let token = ("authorization", "Bearer s3cret");
    let cases: Vec<(&str, Vec<(&str, &str)>)> = vec![
        ("/v1/id", vec![token]),
        ("/v1/id", vec![token, ("accept", "text/plain")]),
        ("/v1/id?format=hex", vec![token, ("accept", "text/plain")]),
        ("/v1/id?format=int", vec![token]),
        ("/v1/id?format=octal", vec![token]),
        ("/v1/id?format=hex&format=hex", vec![token]),
        ("/v1/id?count=2", vec![token]),
        ("/v1/id", vec![]),
        ("/v1/id", vec![("authorization", "Bearer s3cre")]),
        ("/v1/id", vec![token, ("content-length", "20000")]),
        (long.as_str(), vec![token]),
    ];
    for (uri, headers) in &cases {
        let mut via_router = Request::get(*uri);
        for (name, value) in headers {
            via_router = via_router.header(*name, *value);
        }
        let routed = router(s.state.clone())
            .oneshot(via_router.body(Body::empty()).unwrap())
            .await
            .unwrap();
        let fast = call(&s, "GET", uri, headers).await;
        assert_eq!(fast.status, routed.status(), "{uri} {headers:?}");
        let routed_type = routed.headers()[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .to_string();
        assert_eq!(fast.content_type, routed_type, "{uri} {headers:?}");
        let routed_body = routed.into_body().collect().await.unwrap().to_bytes();
        if fast.status == StatusCode::OK {
            // Two different ids, written alike.
            assert_eq!(fast.body.len(), routed_body.len(), "{uri} {headers:?}");
        } else {
            assert_eq!(fast.body.as_bytes(), &routed_body[..], "{uri} {headers:?}");
        }
    }
    // Both counted each request under the route and its status.
    let metrics = call(&s, "GET", "/metrics", &[token]).await.body;
    for expected in [
        "snowmint_requests_total{protocol=\"http\",route=\"/v1/id\",status=\"200\"} 8\n",
        "snowmint_requests_total{protocol=\"http\",route=\"/v1/id\",status=\"400\"} 6\n",
        "snowmint_requests_total{protocol=\"http\",route=\"/v1/id\",status=\"401\"} 4\n",
        "snowmint_requests_total{protocol=\"http\",route=\"/v1/id\",status=\"413\"} 2\n",
        "snowmint_requests_total{protocol=\"http\",route=\"/v1/id\",status=\"414\"} 2\n",
        "snowmint_request_duration_seconds_count{protocol=\"http\",route=\"/v1/id\"} 22\n",
    ] {
        assert!(metrics.contains(expected), "{expected} in\n{metrics}");
    }
}

#[tokio::test]
async fn many_ids_as_json_and_as_text() {
    let s = server("max_batch = 20000").await;
    let a = get(&s, "/v1/ids?count=10000").await;
    assert_eq!(a.status, StatusCode::OK);
    let ids: Vec<u64> = a.json()["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(ids.len(), 10_000);
    assert!(ids.windows(2).all(|w| w[0] < w[1]));

    let a = call(
        &s,
        "GET",
        "/v1/ids?count=3&format=hex",
        &[("accept", "text/plain")],
    )
    .await;
    assert!(a.content_type.starts_with("text/plain"));
    let lines: Vec<&str> = a.body.lines().collect();
    assert_eq!(lines.len(), 3);
    assert!(lines.iter().all(|l| l.len() == 18 && l.starts_with("0x")));

    // The Accept header is read by q-value, wildcard and specificity.
    for (accept, text) in [
        ("text/plain;q=0, application/json", false),
        ("application/json;q=0.5, text/plain;q=0.9", true),
        ("text/*;q=0.8, application/json;q=0.3", true),
        ("*/*", false),
        ("application/json;q=0, */*", true),
        ("text/html", false),
    ] {
        let a = call(&s, "GET", "/v1/ids?count=2", &[("accept", accept)]).await;
        assert_eq!(a.status, StatusCode::OK, "{accept}");
        let expected = if text {
            "text/plain"
        } else {
            "application/json"
        };
        assert!(
            a.content_type.starts_with(expected),
            "{accept}: {}",
            a.content_type
        );
    }
    let a = call(
        &s,
        "GET",
        "/v1/ids?count=2",
        &[
            ("accept", "text/plain;q=0.5"),
            ("accept", "application/json;q=0.1"),
        ],
    )
    .await;
    assert!(
        a.content_type.starts_with("text/plain"),
        "{}",
        a.content_type
    );

    for (query, message) in [
        (
            "count=0",
            "count \"0\" is out of range: expected a whole number 1..=20000",
        ),
        (
            "count=20001",
            "count \"20001\" is out of range: expected a whole number 1..=20000",
        ),
        (
            "count=abc",
            "count \"abc\" is out of range: expected a whole number 1..=20000",
        ),
        (
            "count=-1",
            "count \"-1\" is out of range: expected a whole number 1..=20000",
        ),
        ("", "query parameter \"count\" is required: 1..=20000"),
        (
            "count=1&count=2",
            "query parameter \"count\" is given more than once",
        ),
    ] {
        let a = get(&s, &format!("/v1/ids?{query}")).await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{query}");
        assert_eq!(a.error(), message, "{query}");
    }
}

#[tokio::test]
async fn decode_any_encoding_with_any_preset() {
    let s = server("").await;
    let a = get(&s, "/v1/decode/175928847299117063?layout=discord").await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(
        a.body,
        r#"{"id":"175928847299117063","unix_ms":1462015105796,"time":"2016-04-30T11:18:25.796Z","datacenter":0,"worker":1,"sequence":7}"#
    );
    // The same id in base32 and hex decodes the same.
    let b32 = Id::from_u64(175_928_847_299_117_063).base32().to_string();
    let a = get(&s, &format!("/v1/decode/{b32}?layout=discord")).await;
    assert_eq!(a.json()["worker"], 1);
    let a = get(&s, "/v1/decode/0x0271065ac1021007?layout=discord").await;
    assert_eq!(a.json()["sequence"], 7, "{}", a.body);

    // All-digit hex and base32 are decimal unless ?encoding= names them.
    let a = get(&s, "/v1/decode/3962102955333052?encoding=hex").await;
    assert_eq!(a.json()["id"], "4134885177588658258", "{}", a.body);
    let a = get(&s, "/v1/decode/3962102955333052").await;
    assert_eq!(a.json()["id"], "3962102955333052", "{}", a.body);
    let a = get(&s, "/v1/decode/8000000000000?encoding=B32&layout=tsid").await;
    assert_eq!(a.json()["id"], "9223372036854775808", "{}", a.body);
    let a = get(&s, "/v1/decode/WIlLsHwljH?encoding=base62&layout=tsid").await;
    assert_eq!(a.json()["id"], "437283649808777971", "{}", a.body);
    // A signed column's id of a 64-bit layout.
    let a = get(&s, "/v1/decode/-8499700661677131895?layout=instagram").await;
    assert_eq!(
        a.body,
        r#"{"id":"9947043412032419721","unix_ms":2500000000000,"time":"2049-03-22T04:26:40.000Z","datacenter":0,"worker":1341,"sequence":905}"#
    );

    for (path, status, message) in [
        (
            "/v1/decode/hello",
            400,
            "invalid character 'h' at position 0 in decimal id, the encoding guessed from its form, but it reads as base32 or base62: name its encoding (base62 written without padding, as TSID libraries other than tsid-creator write it, cannot be told from base32 or decimal)",
        ),
        (
            "/v1/decode/hello!",
            400,
            "invalid character 'h' at position 0 in decimal id",
        ),
        (
            "/v1/decode/-1",
            400,
            "id \"-1\" is negative, but layout twitter uses 63 bits: none of its ids is negative, even in a signed 64-bit column",
        ),
        (
            "/v1/decode/1?encoding=base64",
            400,
            "unknown encoding \"base64\": expected one of decimal, hex, base32, base62, binary",
        ),
        (
            "/v1/decode/99999999999999999999",
            400,
            "decimal id does not fit in 64 bits",
        ),
        (
            "/v1/decode/18446744073709551615",
            400,
            "id 18446744073709551615 is out of range for this layout: its largest id is 9223372036854775807",
        ),
        (
            "/v1/decode/1?layout=flickr",
            400,
            "unknown layout \"flickr\": expected one of twitter, discord, instagram, sonyflake, baidu, tsid, mastodon or custom:T/D/W/S",
        ),
        ("/v1/decode/", 404, "no route for GET /v1/decode/"),
    ] {
        let a = get(&s, path).await;
        assert_eq!(a.status.as_u16(), status, "{path}");
        assert_eq!(a.error(), message, "{path}");
    }
}

/// A server on a 64-bit preset issues ids past what a signed column holds one day, and
/// says when; a server on a custom layout with 10 ms ticks issues ids that decode with it.
#[tokio::test]
async fn every_layout_serves_and_decodes() {
    let s = server("layout = \"discord\"").await;
    let v = get(&s, "/v1/layout").await.json();
    assert_eq!(v["layout"], "discord");
    assert_eq!(v["signed_overflow"], "2084-09-06T15:47:35.552Z");
    assert_eq!(v["signed_overflow_ms"], 3_619_093_655_552_u64);
    assert_eq!(v["warning"], Value::Null);
    let id = get(&s, "/v1/id").await.json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let parts = get(&s, &format!("/v1/decode/{id}")).await.json();
    assert_eq!(
        (parts["datacenter"].as_u64(), parts["worker"].as_u64()),
        (Some(2), Some(5))
    );

    let s = server("layout = \"custom:39/2/8/14\"\ntick_ms = 10").await;
    let v = get(&s, "/v1/layout").await.json();
    assert_eq!(
        (v["layout"].as_str(), v["tick_ms"].as_u64()),
        (Some("custom"), Some(10))
    );
    assert_eq!(v["signed_overflow"], Value::Null);
    let id = get(&s, "/v1/id").await.json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let own = get(&s, &format!("/v1/decode/{id}")).await.json();
    let asked = get(
        &s,
        &format!("/v1/decode/{id}?layout=custom:39/2/8/14&tick_ms=10"),
    )
    .await;
    assert_eq!(asked.status, StatusCode::OK, "{}", asked.body);
    assert_eq!(asked.json(), own);
    assert_eq!(own["worker"], 5);
    assert_eq!(
        own["unix_ms"].as_u64().unwrap() % 10,
        1_288_834_974_657 % 10
    );
    for (path, message) in [
        (
            "/v1/decode/1?layout=custom:41/5/5",
            "custom layout \"custom:41/5/5\" must be custom:T/D/W/S, four bit widths (timestamp/datacenter/worker/sequence) such as custom:41/5/5/12",
        ),
        (
            "/v1/decode/1?layout=twitter&tick_ms=0",
            "tick length must be at least 1 ms, got 0",
        ),
        (
            "/v1/decode/1?tick_ms=soon",
            "tick_ms \"soon\" is not a whole number of milliseconds 1..=18446744073709551615",
        ),
    ] {
        let a = get(&s, path).await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{path}");
        assert_eq!(a.error(), message, "{path}");
    }
}

/// A layout whose time field runs out within a year starts, and says so.
#[tokio::test]
async fn a_layout_running_out_within_a_year_starts_with_a_warning() {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    // 2^35 ms is about 398 days: from an epoch 200 days ago, about 198 are left.
    let epoch = now - 200 * 86_400_000;
    let s = server(&format!(
        "layout = \"custom:35/2/8/18\"\nepoch = \"{epoch}\""
    ))
    .await;
    let v = get(&s, "/v1/layout").await.json();
    let end = snowmint::UnixMs(epoch + (1 << 35));
    assert_eq!(
        v["warning"],
        format!(
            "layout custom's time field runs out on {end}, within a year: no id can be issued after that; move to another layout or a later epoch"
        )
    );
    assert_eq!(get(&s, "/v1/id").await.status, StatusCode::OK);
    let v = server("").await;
    assert_eq!(get(&v, "/v1/layout").await.json()["warning"], Value::Null);
}

#[tokio::test]
async fn compose_ids_from_their_parts() {
    let s = server("").await;
    // Discord's documentation: 2016-04-30 11:18:25.796 UTC, worker 1, process 0, increment 7.
    for time in [
        "1462015105796",
        "2016-04-30T11:18:25.796Z",
        "2016-04-30T13:18:25.796%2B02:00",
    ] {
        let uri = format!("/v1/compose?layout=discord&time={time}&worker=1&sequence=7");
        let a = get(&s, &uri).await;
        assert_eq!(a.status, StatusCode::OK, "{uri}: {}", a.body);
        assert_eq!(a.body, r#"{"id":"175928847299117063"}"#, "{uri}");
    }
    let a = get(
        &s,
        "/v1/compose?layout=discord&time=1462015105796&worker=1&sequence=7&format=binary",
    )
    .await;
    let binary = format!("0b{:064b}", 175_928_847_299_117_063u64);
    assert_eq!(a.json()["id"], binary.as_str());
    // The server's layout by default, and the time now; what it composes decodes back.
    let before = now_ms();
    let a = get(&s, "/v1/compose?datacenter=31&worker=30&sequence=4095").await;
    let id: Id = a.json()["id"].as_str().unwrap().parse().unwrap();
    let parts = Layout::TWITTER.decode(id).unwrap();
    assert_eq!(
        (parts.datacenter, parts.worker, parts.sequence),
        (31, 30, 4095)
    );
    assert!(parts.unix_ms >= before && parts.unix_ms.abs_diff(now_ms()) < 5_000);

    for (uri, message) in [
        (
            "/v1/compose?worker=32",
            "worker id 32 is out of range 0..=31",
        ),
        (
            "/v1/compose?datacenter=32",
            "datacenter id 32 is out of range 0..=31",
        ),
        (
            "/v1/compose?sequence=4096",
            "sequence 4096 is out of range 0..=4095",
        ),
        (
            "/v1/compose?layout=sonyflake&worker=65536",
            "worker id 65536 is out of range 0..=65535",
        ),
        (
            "/v1/compose?worker=-1",
            "worker \"-1\" is not a whole number 0..=18446744073709551615",
        ),
        (
            "/v1/compose?time=0",
            "time 1970-01-01T00:00:00.000Z is outside the layout's range \
             2010-11-04T01:42:54.657Z..=2080-07-10T17:30:30.208Z",
        ),
        (
            "/v1/compose?time=soon",
            "time \"soon\" is neither milliseconds since the Unix epoch nor an RFC 3339 time: \
             failed to parse four digit integer as year: invalid digit, expected 0-9 but got s",
        ),
        (
            "/v1/compose?layout=flickr",
            "unknown layout \"flickr\": expected one of twitter, discord, instagram, sonyflake, baidu, tsid, mastodon or custom:T/D/W/S",
        ),
    ] {
        let a = get(&s, uri).await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{uri}");
        assert_eq!(a.error(), message, "{uri}");
    }
}

#[tokio::test]
async fn the_first_and_last_id_of_an_instant() {
    let s = server("").await;
    let a = get(&s, "/v1/at/2024-01-01T00:00:00Z").await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(
        a.body,
        r#"{"first":"1741610183685046272","last":"1741610183689240575"}"#
    );
    assert_eq!(get(&s, "/v1/at/1704067200000").await.body, a.body);
    // Every id composed at that instant lies between them.
    let composed = get(
        &s,
        "/v1/compose?time=1704067200000&datacenter=7&worker=9&sequence=100",
    )
    .await
    .json()["id"]
        .as_str()
        .unwrap()
        .parse::<u64>()
        .unwrap();
    assert!((1_741_610_183_685_046_272..=1_741_610_183_689_240_575).contains(&composed));
    let sonyflake = get(&s, "/v1/at/1704067200000?layout=sonyflake")
        .await
        .json();
    let first: u64 = sonyflake["first"].as_str().unwrap().parse().unwrap();
    let last: u64 = sonyflake["last"].as_str().unwrap().parse().unwrap();
    assert_eq!(last - first, (1 << 24) - 1);
    for (uri, message) in [
        (
            "/v1/at/2000-01-01T00:00:00Z",
            "time 2000-01-01T00:00:00.000Z is outside the layout's range \
             2010-11-04T01:42:54.657Z..=2080-07-10T17:30:30.208Z",
        ),
        (
            "/v1/at/99999999999999999999",
            "time \"99999999999999999999\" ms does not fit in 64 bits",
        ),
        (
            "/v1/at/1?layout=flickr",
            "unknown layout \"flickr\": expected one of twitter, discord, instagram, sonyflake, baidu, tsid, mastodon or custom:T/D/W/S",
        ),
    ] {
        let a = get(&s, uri).await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{uri}");
        assert_eq!(a.error(), message, "{uri}");
    }
}

#[tokio::test]
async fn layout_health_and_readiness() {
    let s = server("").await;
    let a = get(&s, "/v1/layout").await;
    let v = a.json();
    assert_eq!(v["layout"], "twitter");
    assert_eq!(
        (v["datacenter"].as_u64(), v["worker"].as_u64()),
        (Some(2), Some(5))
    );
    assert_eq!(v["ids_per_second"], 4_096_000);
    assert_eq!(v["worker_ids"], 1024);
    assert_eq!(v["runs_out"], "2080-07-10T17:30:30.209Z");
    assert_eq!(v["bits"]["sequence"], 12);
    assert_eq!(get(&s, "/healthz").await.status, StatusCode::OK);
    assert_eq!(get(&s, "/readyz").await.json()["status"], "ready");
    s.state.source.drain();
    let a = get(&s, "/readyz").await;
    assert_eq!(a.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(a.error(), "shutting down");
    let a = get(&s, "/v1/id").await;
    assert_eq!(a.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(a.error(), "shutting down");
}

#[tokio::test]
async fn metrics_count_ids_requests_and_the_generator() {
    let s = server("").await;
    get(&s, "/v1/ids?count=7").await;
    get(&s, "/v1/id").await;
    get(&s, "/v1/decode/x").await;
    let a = get(&s, "/metrics").await;
    assert_eq!(a.status, StatusCode::OK);
    for needle in [
        "snowmint_ids_issued_total 8",
        "snowmint_requests_total{protocol=\"http\",route=\"/v1/decode/{id}\",status=\"400\"} 1",
        "snowmint_request_duration_seconds_bucket{",
        "snowmint_clock_rollbacks_total 0",
        "snowmint_tick_waits_total",
        "snowmint_high_water_mark_writes_total 1",
        "snowmint_worker_info{layout=\"twitter\",datacenter=\"2\",worker=\"5\"} 1",
        "snowmint_time_field_remaining_seconds",
        "snowmint_ready 1",
    ] {
        assert!(a.body.contains(needle), "missing {needle} in\n{}", a.body);
    }
}

#[tokio::test]
async fn bearer_token_guards_everything_but_the_probes() {
    let s = server("auth_token = \"s3cret\"").await;
    for path in [
        "/v1/id",
        "/v1/ids?count=1",
        "/v1/decode/1",
        "/v1/layout",
        "/metrics",
        "/openapi.json",
    ] {
        let a = get(&s, path).await;
        assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{path}");
        assert_eq!(
            a.error(),
            "missing or wrong bearer token: send `Authorization: Bearer <token>`"
        );
        let a = call(&s, "GET", path, &[("authorization", "Bearer wrong")]).await;
        assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{path}");
        let a = call(&s, "GET", path, &[("authorization", "Bearer s3cret")]).await;
        assert_eq!(a.status, StatusCode::OK, "{path}");
    }
    assert_eq!(get(&s, "/healthz").await.status, StatusCode::OK);
    assert_eq!(get(&s, "/readyz").await.status, StatusCode::OK);
}

#[tokio::test]
async fn unknown_routes_methods_and_oversized_requests_get_json_errors() {
    let s = server("").await;
    let a = get(&s, "/v2/id").await;
    assert_eq!(
        (a.status, a.error()),
        (StatusCode::NOT_FOUND, "no route for GET /v2/id".into())
    );
    let a = call(&s, "POST", "/v1/id", &[]).await;
    assert_eq!(
        (a.status, a.error()),
        (
            StatusCode::METHOD_NOT_ALLOWED,
            "method POST is not allowed on /v1/id; use GET".into()
        )
    );
    let long = format!("/v1/decode/{}", "9".repeat(10_000));
    let a = get(&s, &long).await;
    assert_eq!(a.status, StatusCode::URI_TOO_LONG);
    assert_eq!(
        a.error(),
        "request target is 10011 bytes, more than the 8192 this server accepts"
    );
    let a = call_with_body(
        &s,
        "GET",
        "/v1/id",
        &[("content-length", "20000")],
        Body::from(vec![b'x'; 20_000]),
    )
    .await;
    assert_eq!(a.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        a.error(),
        "request body is 20000 bytes, more than the 16384 this server accepts"
    );
    // A path that does not percent-decode to text.
    for (path, message) in [
        (
            "/v1/decode/%FF",
            "path parameter id of /v1/decode/%FF is not UTF-8 text once percent-decoded",
        ),
        (
            "/v1/serials/%C3%28?count=1",
            "path parameter biz of /v1/serials/%C3%28 is not UTF-8 text once percent-decoded",
        ),
        (
            "/v1/serials/decode/%FFPAY",
            "path parameter serial of /v1/serials/decode/%FFPAY is not UTF-8 text once percent-decoded",
        ),
    ] {
        let a = get(&s, path).await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{path}");
        assert_eq!(a.error(), message, "{path}");
    }
    // The server keeps serving after all of it.
    assert_eq!(get(&s, "/v1/id").await.status, StatusCode::OK);
}

#[tokio::test]
async fn openapi_describes_exactly_the_routes_that_answer() {
    let s = server("auth_token = \"s3cret\"").await;
    let token = [("authorization", "Bearer s3cret")];
    let a = call(&s, "GET", "/openapi.json", &token).await;
    assert_eq!(a.status, StatusCode::OK);
    let doc = a.json();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    assert_eq!(
        a.body,
        snowmint_server::openapi_document(100_000, &snowmint::Layout::TWITTER)
    );
    let paths: Vec<String> = doc["paths"].as_object().unwrap().keys().cloned().collect();
    let expected = [
        "/",
        "/healthz",
        "/metrics",
        "/openapi.json",
        "/readyz",
        "/v1/at/{time}",
        "/v1/compose",
        "/v1/decode/{id}",
        "/v1/id",
        "/v1/ids",
        "/v1/layout",
        "/v1/serials/decode/{serial}",
        "/v1/serials/{biz}",
    ];
    assert_eq!(paths, expected);
    let mut open = Vec::new();
    for path in &paths {
        let uri = match path.as_str() {
            "/v1/ids" => "/v1/ids?count=1".to_string(),
            "/v1/serials/{biz}" => "/v1/serials/PAY?count=1".to_string(),
            "/v1/serials/decode/{serial}" => {
                let made = call(&s, "GET", "/v1/serials/PAY?count=1", &token).await;
                format!(
                    "/v1/serials/decode/{}",
                    made.json()["serials"][0].as_str().unwrap()
                )
            }
            other => other
                .replace("{id}", "1")
                .replace("{time}", "2024-01-01T00:00:00Z"),
        };
        let a = call(&s, "GET", &uri, &token).await;
        assert_eq!(a.status, StatusCode::OK, "{uri}: {}", a.body);
        let operation = &doc["paths"][path]["get"];
        assert!(operation["responses"]["200"].is_object(), "{path}");
        // What the document says of the token is what the route does without it.
        let guarded = operation["responses"]["401"].is_object();
        let a = get(&s, &uri).await;
        if guarded {
            assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{uri}");
            assert_eq!(operation.get("security"), None, "{path}: the document's");
        } else {
            assert_eq!(a.status, StatusCode::OK, "{uri}: {}", a.body);
            assert_eq!(operation["security"], serde_json::json!([{}]), "{path}");
            open.push(path.as_str());
        }
    }
    assert_eq!(open, ["/", "/healthz", "/readyz"]);
    assert_eq!(doc["security"], serde_json::json!([{}, { "bearer": [] }]));
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
    // Every route's metrics carry its path as declared.
    let metrics = call(&s, "GET", "/metrics", &token).await.body;
    for path in &paths {
        assert!(
            metrics.contains(&format!("route=\"{path}\",status=\"200\"")),
            "{path}: {metrics}"
        );
    }
}

/// The schema of query parameter `name` of `path`'s GET, in the served document.
fn query_schema(doc: &Value, path: &str, name: &str) -> Value {
    let params = doc["paths"][path]["get"]["parameters"].as_array().unwrap();
    let param = params.iter().find(|p| p["name"] == name).unwrap();
    assert_eq!(param["in"], "query");
    param["schema"].clone()
}

#[tokio::test]
async fn the_document_allows_exactly_the_names_the_server_reads() {
    let s = server("").await;
    let doc = get(&s, "/openapi.json").await.json();
    let candidates = [
        "dec",
        "DEC",
        "decimal",
        "Decimal",
        "hex",
        "HEX",
        "base32",
        "b32",
        "B32",
        "base62",
        "b62",
        "binary",
        "bin",
        "int",
        "INT",
        "Int",
        "octal",
        "b3",
        "b622",
        "hexx",
        "in",
        "integer",
        "base",
        "",
        " hex",
        "hex ",
        "he x",
        "0x",
        "twitter",
        "TWITTER",
        "Discord",
        "sonyflake",
        "tsid",
        "mastodon",
        "flickr",
        "twitter2",
        "insta",
        // Custom layouts are read, but only those whose widths add up to 63 or 64, which no
        // pattern can say: the document leaves them to its description.
        "custom:0/0/0/0",
        "custom:1/1/1/1",
    ];
    let checks = [
        ("/v1/ids", "format", "/v1/ids?count=1&format="),
        ("/v1/id", "format", "/v1/id?format="),
        ("/v1/decode/{id}", "layout", "/v1/decode/1?layout="),
        ("/v1/decode/{id}", "encoding", "/v1/decode/1?encoding="),
        ("/v1/compose", "format", "/v1/compose?format="),
        ("/v1/compose", "layout", "/v1/compose?layout="),
        ("/v1/at/{time}", "layout", "/v1/at/1704067200000?layout="),
    ];
    for (path, name, uri) in checks {
        let schema = query_schema(&doc, path, name);
        assert_eq!(schema["type"], "string", "{path} {name}");
        let pattern = regex::Regex::new(schema["pattern"].as_str().unwrap()).unwrap();
        for text in candidates {
            let a = get(&s, &format!("{uri}{}", text.replace(' ', "%20"))).await;
            assert_eq!(
                pattern.is_match(text),
                a.status == StatusCode::OK,
                "{path} {name}={text:?}: {} {}",
                a.status,
                a.body
            );
        }
    }
}

/// The schema of parameter `name` of `path`'s GET, wherever it is, in the served document.
fn param_schema(doc: &Value, path: &str, name: &str) -> Value {
    let params = doc["paths"][path]["get"]["parameters"].as_array().unwrap();
    params.iter().find(|p| p["name"] == name).unwrap()["schema"].clone()
}

#[tokio::test]
async fn the_document_allows_exactly_the_zones_and_business_codes_the_server_reads() {
    let s = server("").await;
    let doc = get(&s, "/openapi.json").await.json();
    let zones = [
        "",
        "Z",
        "z",
        "UTC",
        "utc",
        "Utc",
        "UTC+1",
        "GMT",
        "+08:00",
        "-05:30",
        "+23:59",
        "-23:59",
        "+24:00",
        "+23:60",
        "+00:00",
        "-00:00",
        "+8",
        "+0800",
        "08:00",
        "+08:0",
        "+08:000",
        "Asia/Shanghai",
        " +08:00",
        "+08:00 ",
        "\u{ff0b}08:00",
    ];
    let path = "/v1/serials/{biz}";
    for name in ["/v1/serials/{biz}", "/v1/serials/decode/{serial}"] {
        let schema = param_schema(&doc, name, "tz");
        assert_eq!(schema["type"], "string", "{name}");
        assert_eq!(schema["pattern"], snowmint::serial::Zone::PATTERN, "{name}");
    }
    let pattern =
        regex::Regex::new(param_schema(&doc, path, "tz")["pattern"].as_str().unwrap()).unwrap();
    for zone in zones {
        let query: String = form_urlencoded::byte_serialize(zone.as_bytes()).collect();
        let a = get(&s, &format!("/v1/serials/PAY?count=1&tz={query}")).await;
        assert_eq!(
            pattern.is_match(zone),
            a.status == StatusCode::OK,
            "tz={zone:?}: {} {}",
            a.status,
            a.body
        );
    }
    let codes = [
        "",
        "A",
        "PAY",
        "PAY2",
        "0",
        "0123456789ABCDEF",
        "0123456789ABCDEFG",
        "pay",
        "Pay",
        "PA-Y",
        "PA Y",
        "\u{c9}TE",
    ];
    let schema = param_schema(&doc, path, "biz");
    let pattern = regex::Regex::new(schema["pattern"].as_str().unwrap()).unwrap();
    for code in codes {
        let segment: String = form_urlencoded::byte_serialize(code.as_bytes()).collect();
        let a = get(&s, &format!("/v1/serials/{segment}?count=1")).await;
        // An empty code is no route at all.
        let accepted = a.status == StatusCode::OK;
        assert_eq!(
            pattern.is_match(code),
            accepted,
            "biz={code:?}: {} {}",
            a.status,
            a.body
        );
    }
}

#[tokio::test]
async fn the_document_allows_exactly_the_counts_this_server_takes() {
    let s = server("max_batch = 500").await;
    let doc = get(&s, "/openapi.json").await.json();
    assert_eq!(
        get(&s, "/openapi.json").await.body,
        snowmint_server::openapi_document(500, &snowmint::Layout::TWITTER)
    );
    for (path, uri) in [
        ("/v1/ids", "/v1/ids?count="),
        ("/v1/serials/{biz}", "/v1/serials/PAY?count="),
    ] {
        let schema = param_schema(&doc, path, "count");
        assert_eq!(
            (schema["minimum"].as_u64(), schema["maximum"].as_u64()),
            (Some(1), Some(500)),
            "{path}"
        );
        for (count, status) in [
            (0, StatusCode::BAD_REQUEST),
            (1, StatusCode::OK),
            (500, StatusCode::OK),
            (501, StatusCode::BAD_REQUEST),
        ] {
            let a = get(&s, &format!("{uri}{count}")).await;
            assert_eq!(a.status, status, "{uri}{count}: {}", a.body);
        }
        assert_eq!(
            get(&s, &format!("{uri}501")).await.error(),
            "count \"501\" is out of range: expected a whole number 1..=500"
        );
    }
    // A tick is at least 1 ms, in the document as in the server.
    let schema = param_schema(&doc, "/v1/decode/{id}", "tick_ms");
    assert_eq!(schema["minimum"].as_u64(), Some(1));
    let a = get(&s, "/v1/decode/1?layout=twitter&tick_ms=0").await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert_eq!(a.error(), "tick length must be at least 1 ms, got 0");
    assert_eq!(
        get(&s, "/v1/decode/1?layout=twitter&tick_ms=1")
            .await
            .status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn serials_are_made_and_taken_apart() {
    let s = server("").await;
    let a = get(&s, "/v1/serials/PAY?count=3").await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let serials: Vec<String> = a.json()["serials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(serials.len(), 3);
    assert!(serials.windows(2).all(|w| w[0] < w[1]), "{serials:?}");
    // Datacenter 2, worker 5: node 2 << 5 | 5 = 69.
    assert!(
        serials
            .iter()
            .all(|x| x.starts_with("PAY") && &x[20..24] == "0069"),
        "{serials:?}"
    );
    let d = get(&s, &format!("/v1/serials/decode/{}", serials[1]))
        .await
        .json();
    assert_eq!(
        (
            d["biz"].as_str(),
            d["datacenter"].as_u64(),
            d["worker"].as_u64()
        ),
        (Some("PAY"), Some(2), Some(5))
    );
    let id: u64 = d["id"].as_str().unwrap().parse().unwrap();
    let parts = Layout::TWITTER.decode(Id::from_u64(id)).unwrap();
    assert_eq!(d["unix_ms"], parts.unix_ms);
    assert_eq!(d["time"].as_str().unwrap().len(), 24);

    let t = "template=%7Bbiz%7D-%7Btime%7D-%7Bnode%7D-%7Bseq%7D-%7Bcheck%3Amod97%7D&tz=%2B08:00";
    let made = get(&s, &format!("/v1/serials/ORD?count=1&{t}"))
        .await
        .json();
    let serial = made["serials"][0].as_str().unwrap().to_string();
    let d = get(&s, &format!("/v1/serials/decode/{serial}?{t}"))
        .await
        .json();
    assert_eq!(d["biz"], "ORD");

    for (path, message) in [
        ("/v1/serials/pay?count=1", "business code \"pay\""),
        ("/v1/serials/PAY", "query parameter \"count\" is required"),
        (
            "/v1/serials/PAY?count=1&tz=Asia/Shanghai",
            "use a fixed offset such as +08:00",
        ),
        (
            "/v1/serials/PAY?count=1&template=%7Btime%7D%7Bseq%7D",
            "node",
        ),
        (
            "/v1/serials/decode/PAY123",
            "expected 26 to 41 characters for this template, got 6",
        ),
    ] {
        let a = get(&s, path).await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{path}: {}", a.body);
        assert!(a.error().contains(message), "{path}: {}", a.error());
    }
    let last = serial.chars().last().unwrap().to_digit(10).unwrap();
    let mistyped = format!("{}{}", &serial[..serial.len() - 1], (last + 1) % 10);
    let a = get(&s, &format!("/v1/serials/decode/{mistyped}?{t}")).await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert!(
        a.error().contains("mistyped") || a.error().contains("check digit"),
        "{}",
        a.error()
    );
}

#[tokio::test]
async fn an_amplifying_template_is_refused_before_any_id_is_taken() {
    let s = server("").await;
    let template = format!(
        "%7Bbiz%7D%7Btime%7D%7Bnode%7D%7Bseq%7D{}",
        "-".repeat(8_100)
    );
    let uri = format!("/v1/serials/PAY?count=100000&template={template}");
    assert!(uri.len() <= snowmint_server::MAX_URI_BYTES, "{}", uri.len());
    let a = get(&s, &uri).await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        a.error(),
        "template is 8122 bytes long, more than the 128 allowed"
    );
    let a = get(
        &s,
        "/v1/serials/PAY?count=1&template=%7Bbiz%7D%7Btime%7D%7Bnode:19%7D%7Bseq:19%7D",
    )
    .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        a.error(),
        "template makes serials of up to 71 characters, more than the 64 allowed"
    );
    // Nothing was issued for either.
    let metrics = get(&s, "/metrics").await.body;
    assert!(metrics.contains("snowmint_ids_issued_total 0"), "{metrics}");
}

#[tokio::test]
async fn responses_stay_within_the_budget() {
    let s = server("max_response_bytes = 4096").await;
    // {"ids":[ and ]} around ids of up to 20 digits, quoted, with a comma: 177 fit.
    for (query, accept, fit, bytes) in [
        ("", "application/json", 177, 4104),
        ("&format=int", "application/json", 194, 4105),
        ("&format=base62", "application/json", 291, 4098),
        ("", "text/plain", 195, 4116),
    ] {
        let a = call(
            &s,
            "GET",
            &format!("/v1/ids?count={fit}{query}"),
            &[("accept", accept)],
        )
        .await;
        assert_eq!(a.status, StatusCode::OK, "{query} {accept}: {}", a.body);
        assert!(a.body.len() <= 4096);
        let over = fit + 1;
        let a = call(
            &s,
            "GET",
            &format!("/v1/ids?count={over}{query}"),
            &[("accept", accept)],
        )
        .await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{query} {accept}");
        assert_eq!(
            a.error(),
            format!(
                "{over} ids would make a response of up to {bytes} bytes, more than the 4096 of max_response_bytes: ask for at most {fit}"
            )
        );
    }
    // A serial of the default template with PAY is 28 characters; 31 bytes in the array.
    let a = get(&s, "/v1/serials/PAY?count=131").await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert!(a.body.len() <= 4096);
    let a = get(&s, "/v1/serials/PAY?count=132").await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        a.error(),
        "132 serials would make a response of up to 4106 bytes, more than the 4096 of max_response_bytes: ask for at most 131"
    );
}
