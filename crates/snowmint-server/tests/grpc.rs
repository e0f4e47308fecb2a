//! The gRPC service over a real loopback socket, from a real tonic client.

use crate::running;

use snowmint::{Id, Layout};
use snowmint_proto::v1::{
    DecodeRequest, DecodeSerialRequest, NextBatchRequest, NextRequest, NextSerialsRequest,
    SerialFormat, StreamRequest,
};

use running::{Running, raw_call, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn next_batch_stream_and_decode() {
    let server = start("").await;
    let mut client = server.client().await;
    let a = client.next(NextRequest {}).await.unwrap().into_inner().id;
    let b = client.next(NextRequest {}).await.unwrap().into_inner().id;
    assert!(b > a);
    assert_eq!(Layout::TWITTER.decode(Id::from_u64(b)).unwrap().worker, 9);

    let batch = client
        .next_batch(NextBatchRequest { count: 10_000 })
        .await
        .unwrap()
        .into_inner()
        .ids;
    assert_eq!(batch.len(), 10_000);
    assert!(batch[0] > b && batch.windows(2).all(|w| w[0] < w[1]));

    let mut stream = client
        .stream(StreamRequest {
            batch_size: 1000,
            total: 25_500,
        })
        .await
        .unwrap()
        .into_inner();
    let mut streamed = Vec::new();
    while let Some(message) = stream.message().await.unwrap() {
        streamed.extend(message.ids);
    }
    assert_eq!(streamed.len(), 25_500);
    assert!(streamed[0] > *batch.last().unwrap() && streamed.windows(2).all(|w| w[0] < w[1]));

    let d = client
        .decode(DecodeRequest {
            id: "175928847299117063".into(),
            layout: "discord".into(),
            tick_ms: 0,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (
            d.time.as_str(),
            d.unix_ms,
            d.worker,
            d.datacenter,
            d.sequence
        ),
        ("2016-04-30T11:18:25.796Z", 1_462_015_105_796, 1, 0, 7)
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_stream_stops_when_the_client_does() {
    let server = start("").await;
    let mut client = server.client().await;
    let mut stream = client
        .stream(StreamRequest {
            batch_size: 0,
            total: 0,
        })
        .await
        .unwrap()
        .into_inner();
    let mut got = 0;
    while got < 100_000 {
        got += stream.message().await.unwrap().unwrap().ids.len();
    }
    drop(stream);
    // The server notices, stops producing, and still serves.
    let id = client.next(NextRequest {}).await.unwrap().into_inner().id;
    assert!(id > 0);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_a_code_and_a_message() {
    let server = start("").await;
    let mut client = server.client().await;
    let err = client
        .next_batch(NextBatchRequest { count: 0 })
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert_eq!(err.message(), "count 0 is out of range 1..=50000");
    let err = client
        .next_batch(NextBatchRequest { count: 50_001 })
        .await
        .unwrap_err();
    assert_eq!(err.message(), "count 50001 is out of range 1..=50000");
    let err = client
        .stream(StreamRequest {
            batch_size: 60_000,
            total: 1,
        })
        .await
        .unwrap_err();
    assert_eq!(err.message(), "batch_size 60000 is out of range 1..=50000");
    let err = client
        .decode(DecodeRequest {
            id: "hello!".into(),
            layout: String::new(),
            tick_ms: 0,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert_eq!(
        err.message(),
        "invalid character 'h' at position 0 in decimal id"
    );
    let err = client
        .decode(DecodeRequest {
            id: "1".into(),
            layout: "flickr".into(),
            tick_ms: 0,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(
        err.message().starts_with("unknown layout \"flickr\""),
        "{}",
        err.message()
    );
    let custom = snowmint::Layout::by_name("custom:39/0/10/14")
        .unwrap()
        .with_tick_ms(10)
        .unwrap();
    let fields = snowmint::Fields {
        datacenter: 0,
        worker: 3,
        sequence: 2,
    };
    let id = custom.compose(5, fields).unwrap();
    let d = client
        .decode(DecodeRequest {
            id: id.to_string(),
            layout: "custom:39/0/10/14".into(),
            tick_ms: 10,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (d.unix_ms, d.worker, d.sequence),
        (custom.epoch_ms() + 50, 3, 2)
    );
    assert!(client.next(NextRequest {}).await.is_ok());
    server.stop().await;
}

/// The error message of `GET path` over HTTP/1.1.
async fn http_error(server: &Running, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(server.http).await.unwrap();
    let head = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    tcp.write_all(head.as_bytes()).await.unwrap();
    let mut answer = String::new();
    tcp.read_to_string(&mut answer).await.unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 4"), "{path}: {head}");
    let body: serde_json::Value = serde_json::from_str(body).unwrap();
    body["error"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_protocols_refuse_a_request_for_the_same_reason_in_the_same_words() {
    let server = start("max_response_bytes = 4096").await;
    let mut client = server.client().await;
    let serials = |biz: &str, count, template: &str, tz: &str| NextSerialsRequest {
        biz: biz.into(),
        count,
        format: Some(SerialFormat {
            template: template.into(),
            tz: tz.into(),
        }),
    };
    let cases = [
        (
            serials("pay", 1, "", ""),
            "/v1/serials/pay?count=1".to_string(),
        ),
        (
            serials("PAY", 1, "{biz}{nope}", ""),
            "/v1/serials/PAY?count=1&template=%7Bbiz%7D%7Bnope%7D".to_string(),
        ),
        (
            serials("PAY", 1, "", "+25:00"),
            "/v1/serials/PAY?count=1&tz=%2B25:00".to_string(),
        ),
        // Checked in the same order: the business code before the template.
        (
            serials("pay", 1, "{nope}", ""),
            "/v1/serials/pay?count=1&template=%7Bnope%7D".to_string(),
        ),
        (
            serials("PAY", 1, &"-".repeat(200), ""),
            format!("/v1/serials/PAY?count=1&template={}", "-".repeat(200)),
        ),
    ];
    for (grpc, http) in cases {
        let err = client.next_serials(grpc).await.unwrap_err();
        assert_eq!(err.code(), tonic::Code::InvalidArgument);
        assert_eq!(err.message(), http_error(&server, &http).await, "{http}");
    }
    let decodes = [
        ("hello", "", 0, "/v1/decode/hello"),
        ("-1", "", 0, "/v1/decode/-1"),
        ("1", "flickr", 0, "/v1/decode/1?layout=flickr"),
        (
            "18446744073709551615",
            "",
            0,
            "/v1/decode/18446744073709551615",
        ),
        ("1", "custom:41/5/5", 0, "/v1/decode/1?layout=custom:41/5/5"),
        (
            "18446744073709551615",
            "custom:39/0/10/14",
            10,
            "/v1/decode/18446744073709551615?layout=custom:39/0/10/14&tick_ms=10",
        ),
    ];
    for (id, layout, tick_ms, http) in decodes {
        let grpc = DecodeRequest {
            id: id.into(),
            layout: layout.into(),
            tick_ms,
            ..Default::default()
        };
        let err = client.decode(grpc).await.unwrap_err();
        assert_eq!(err.message(), http_error(&server, http).await, "{http}");
    }
    // The encoding, named or not, as HTTP reads it.
    for (id, encoding, expected) in [
        ("3962102955333052", "hex", 4_134_885_177_588_658_258),
        ("3962102955333052", "", 3_962_102_955_333_052),
        ("-8499700661677131895", "", 9_947_043_412_032_419_721),
    ] {
        let grpc = DecodeRequest {
            id: id.into(),
            layout: "instagram".into(),
            encoding: encoding.into(),
            ..Default::default()
        };
        let d = client.decode(grpc).await.unwrap().into_inner();
        assert_eq!(d.id, expected, "{id} {encoding}");
    }
    let grpc = DecodeRequest {
        id: "1".into(),
        encoding: "base64".into(),
        ..Default::default()
    };
    let err = client.decode(grpc).await.unwrap_err();
    assert_eq!(
        err.message(),
        http_error(&server, "/v1/decode/1?encoding=base64").await
    );
    let err = client
        .decode_serial(DecodeSerialRequest {
            serial: "PAY1".into(),
            format: None,
        })
        .await
        .unwrap_err();
    let http = http_error(&server, "/v1/serials/decode/PAY1").await;
    assert_eq!(err.message(), http);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_is_required_when_configured() {
    let server = start("auth_token = \"s3cret\"").await;
    let mut client = server.client().await;
    let err = client.next(NextRequest {}).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unauthenticated);
    let mut request = tonic::Request::new(NextRequest {});
    request
        .metadata_mut()
        .insert("authorization", "Bearer s3cret".parse().unwrap());
    assert!(client.next(request).await.is_ok());
    let mut request = tonic::Request::new(NextRequest {});
    request
        .metadata_mut()
        .insert("authorization", "Bearer nope".parse().unwrap());
    assert_eq!(
        client.next(request).await.unwrap_err().code(),
        tonic::Code::Unauthenticated
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serials_over_grpc() {
    let server = start("").await;
    let mut client = server.client().await;
    let format = SerialFormat {
        template: "{biz}-{time}-{node}-{seq}-{check}".into(),
        tz: "+08:00".into(),
    };
    let serials = client
        .next_serials(NextSerialsRequest {
            biz: "PAY".into(),
            count: 5,
            format: Some(format.clone()),
        })
        .await
        .unwrap()
        .into_inner()
        .serials;
    assert_eq!(serials.len(), 5);
    assert!(serials.windows(2).all(|w| w[0] < w[1]), "{serials:?}");
    let d = client
        .decode_serial(DecodeSerialRequest {
            serial: serials[4].clone(),
            format: Some(format),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(d.biz, "PAY");
    let parts = d.parts.unwrap();
    assert_eq!(parts.worker, 9);
    assert_eq!(
        Layout::TWITTER
            .decode(Id::from_u64(parts.id))
            .unwrap()
            .unix_ms,
        parts.unix_ms
    );
    let err = client
        .next_serials(NextSerialsRequest {
            biz: "pay".into(),
            count: 1,
            format: None,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert!(
        err.message().starts_with("business code \"pay\""),
        "{}",
        err.message()
    );
    let err = client
        .decode_serial(DecodeSerialRequest {
            serial: "PAY1".into(),
            format: None,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_count_past_32_bits_is_refused_as_itself() {
    let server = start("").await;
    let mut client = server.client().await;
    let err = client
        .next_batch(NextBatchRequest { count: 1 << 40 })
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert_eq!(
        err.message(),
        "count 1099511627776 is out of range 1..=50000"
    );
    let err = client
        .stream(StreamRequest {
            batch_size: (1 << 32) + 5,
            total: 10,
        })
        .await
        .unwrap_err();
    assert_eq!(
        err.message(),
        "batch_size 4294967301 is out of range 1..=50000"
    );
    let err = client
        .next_serials(NextSerialsRequest {
            biz: "PAY".into(),
            count: u64::MAX,
            format: None,
        })
        .await
        .unwrap_err();
    assert_eq!(
        err.message(),
        "count 18446744073709551615 is out of range 1..=50000"
    );
    // The bytes any client sends for 2^40, whatever the width of its own field.
    let bytes = prost::Message::encode_to_vec(&NextBatchRequest { count: 1 << 40 });
    assert_eq!(bytes, [0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20]);
    let err = raw_call(&server, "NextBatch", bytes).await.unwrap_err();
    assert_eq!(
        err.message(),
        "count 1099511627776 is out of range 1..=50000"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_protobuf_is_the_clients_error() {
    use prost::Message;
    let server = start("").await;
    // Field 1 as a varint whose continuation bit promises a byte that never comes.
    let err = raw_call(&server, "NextBatch", vec![0x08, 0x80])
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err:?}");
    assert_eq!(
        err.message(),
        "malformed request: failed to decode Protobuf message: NextBatchRequest.count: invalid varint"
    );
    // A string field (the business code) that is not UTF-8.
    let err = raw_call(&server, "NextSerials", vec![0x0a, 0x02, 0xff, 0xfe])
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err:?}");
    assert!(
        err.message().starts_with(
            "malformed request: failed to decode Protobuf message: NextSerialsRequest.biz"
        ),
        "{}",
        err.message()
    );
    // A count as a client of the uint32 field writes it (varint 3) still reads as 3.
    let ids = raw_call(&server, "NextBatch", vec![0x08, 0x03])
        .await
        .unwrap();
    let ids = snowmint_proto::v1::Ids::decode(ids.as_slice()).unwrap();
    assert_eq!(ids.ids.len(), 3);
    // Requests are bounded like HTTP bodies.
    let big = NextSerialsRequest {
        biz: "PAY".into(),
        count: 1,
        format: Some(SerialFormat {
            template: "-".repeat(20_000),
            tz: String::new(),
        }),
    };
    let err = raw_call(&server, "NextSerials", big.encode_to_vec())
        .await
        .unwrap_err();
    // Refused before it is read, as an HTTP body would be, in the server's words.
    assert_eq!(err.code(), tonic::Code::ResourceExhausted, "{err:?}");
    assert_eq!(
        err.message(),
        "request message is 20015 bytes, more than the 16384 this server accepts"
    );
    // And the server goes on serving.
    let mut client = server.client().await;
    assert!(client.next(NextRequest {}).await.is_ok());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_stay_within_the_budget() {
    let server = start("max_response_bytes = 4096").await;
    let mut client = server.client().await;
    // 510 ids of 8 bytes and 16 bytes of framing fit in 4096; 511 do not.
    let ids = client
        .next_batch(NextBatchRequest { count: 510 })
        .await
        .unwrap()
        .into_inner()
        .ids;
    assert_eq!(ids.len(), 510);
    let err = client
        .next_batch(NextBatchRequest { count: 1000 })
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert_eq!(
        err.message(),
        "1000 ids would make a response of up to 8016 bytes, more than the 4096 of max_response_bytes: ask for at most 510"
    );
    let err = client
        .stream(StreamRequest {
            batch_size: 600,
            total: 1200,
        })
        .await
        .unwrap_err();
    assert_eq!(
        err.message(),
        "600 ids would make a response of up to 4816 bytes, more than the 4096 of max_response_bytes: ask for at most 510"
    );
    // A serial of the default template with PAY is 28 characters, 30 bytes on the wire.
    let serials = |count, template: &str| NextSerialsRequest {
        biz: "PAY".into(),
        count,
        format: Some(SerialFormat {
            template: template.into(),
            tz: String::new(),
        }),
    };
    let made = client.next_serials(serials(136, "")).await.unwrap();
    assert_eq!(made.into_inner().serials.len(), 136);
    let err = client.next_serials(serials(137, "")).await.unwrap_err();
    assert_eq!(
        err.message(),
        "137 serials would make a response of up to 4126 bytes, more than the 4096 of max_response_bytes: ask for at most 136"
    );
    // The amplifying template is refused before any id is taken.
    let padded = format!("{{biz}}{{time}}{{node}}{{seq}}{}", "-".repeat(8_100));
    let err = client
        .next_serials(serials(300, &padded))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert_eq!(
        err.message(),
        "template is 8122 bytes long, more than the 128 allowed"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_that_quotes_a_long_request_still_reaches_the_client() {
    let server = start("").await;
    let mut client = server.client().await;
    // 8,000 characters that the message quotes, each percent-encoded to three bytes in the
    // grpc-message trailer: 24 KB, past the 16 KiB header list a client accepts.
    let code = "<".repeat(8_000);
    let err = client
        .next_serials(NextSerialsRequest {
            biz: code.clone(),
            count: 1,
            format: None,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err:?}");
    let full = format!("business code {code:?} has '<' at position 0: use only A-Z and 0-9");
    let cut = snowmint_server::ApiError::MAX_MESSAGE_BYTES;
    assert_eq!(
        err.message(),
        format!("{}... (cut at {cut} of {} bytes)", &full[..cut], full.len())
    );
    // The same words over HTTP, where a request target of 8 KiB carries such a code too.
    let http = http_error(
        &server,
        &format!("/v1/serials/{}?count=1", "%3C".repeat(2_000)),
    )
    .await;
    let full = format!(
        "business code {:?} has '<' at position 0: use only A-Z and 0-9",
        "<".repeat(2_000)
    );
    assert_eq!(
        http,
        format!("{}... (cut at {cut} of {} bytes)", &full[..cut], full.len())
    );
    assert!(client.next(NextRequest {}).await.is_ok());
    server.stop().await;
}

/// A request's headers, as name and value.
type Headers = Vec<(&'static str, &'static str)>;

/// A call's answer, whole: what both paths must agree on.
struct Answer {
    status: axum::http::StatusCode,
    headers: axum::http::HeaderMap,
    data: bytes::Bytes,
    trailers: Option<axum::http::HeaderMap>,
}

async fn answer(response: axum::response::Response) -> Answer {
    use http_body_util::BodyExt;
    let (parts, body) = response.into_parts();
    let collected = body.collect().await.unwrap();
    Answer {
        status: parts.status,
        headers: parts.headers,
        trailers: collected.trailers().cloned(),
        data: collected.to_bytes(),
    }
}

/// `Next` is answered in front of tonic's routes; every call, plain or not, gets the
/// answer tonic gives, and each is counted once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn next_in_front_of_tonic_answers_as_tonic_does() {
    use axum::body::Body;
    use axum::http::Request;
    use snowmint_server::grpc::GrpcApi;
    use snowmint_server::{AppState, Config, IdSource, Settings};
    use tower::ServiceExt;

    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        "state_dir = {:?}\nworker = 9\nauth_token = \"s3cret\"",
        dir.path()
    );
    let config = Config::try_from(Settings::from_toml(&toml, "t.toml".as_ref()).unwrap()).unwrap();
    let state = AppState::for_config(IdSource::start(&config).await.unwrap(), &config);
    let api = GrpcApi::new(state.clone());

    let token = ("authorization", "Bearer s3cret");
    let plain = vec![0, 0, 0, 0, 0];
    let mut two = plain.clone();
    two.extend_from_slice(&plain);
    // NextRequest with a field it does not know (7, varint 1): proto3 skips it.
    let unknown = vec![0, 0, 0, 0, 2, 0x38, 0x01];
    #[rustfmt::skip]
    let cases: Vec<(&str, Headers, Vec<u8>)> = vec![
        ("plain", vec![token], plain.clone()),
        ("identity", vec![token, ("grpc-encoding", "identity")], plain.clone()),
        ("an unknown field", vec![token], unknown),
        ("no token", vec![], plain.clone()),
        ("a wrong token", vec![("authorization", "Bearer nope")], plain.clone()),
        ("compressed by name", vec![token, ("grpc-encoding", "gzip")], plain.clone()),
        ("compressed by flag", vec![token], vec![1, 0, 0, 0, 0]),
        ("no message", vec![token], vec![]),
        ("half a prefix", vec![token], vec![0, 0, 0]),
        ("two messages", vec![token], two),
        ("a truncated message", vec![token], vec![0, 0, 0, 0, 3, 0x38]),
        ("a malformed message", vec![token], vec![0, 0, 0, 0, 2, 0x08, 0x80]),
        ("too large", vec![token], [vec![0, 0, 0, 0x4e, 0x20], vec![0; 20_000]].concat()),
    ];
    let mut ok = 0;
    for (case, headers, body) in &cases {
        let request = || {
            let mut request = Request::post("/snowmint.v1.IdService/Next")
                .header("content-type", "application/grpc")
                .header("te", "trailers");
            for (name, value) in headers {
                request = request.header(*name, *value);
            }
            request.body(Body::from(body.clone())).unwrap()
        };
        let through_tonic = answer(api.routes().oneshot(request()).await.unwrap()).await;
        let in_front = answer(api.clone().oneshot(request()).await.unwrap()).await;
        assert_eq!(in_front.status, through_tonic.status, "{case}");
        assert_eq!(in_front.headers, through_tonic.headers, "{case}");
        assert_eq!(in_front.trailers, through_tonic.trailers, "{case}");
        let status = through_tonic
            .trailers
            .as_ref()
            .unwrap_or(&through_tonic.headers)["grpc-status"]
            .clone();
        if status == "0" {
            ok += 2;
            // Two ids, framed alike: a 5-byte prefix, then field 1 as a fixed64.
            for data in [&in_front.data, &through_tonic.data] {
                assert_eq!(&data[..6], &[0, 0, 0, 0, 9, 0x09], "{case}");
                assert_eq!(data.len(), 14, "{case}");
            }
            // tonic reads the first message of a unary call and leaves the rest.
            let succeeds = ["plain", "identity", "an unknown field", "two messages"];
            assert!(succeeds.contains(case), "{case}");
        } else {
            assert_eq!(in_front.data, through_tonic.data, "{case}");
            assert!(through_tonic.trailers.is_none(), "{case}: trailers only");
        }
    }
    assert_eq!(ok, 8);
    // Each call counted once, by its code, whichever path answered it.
    let metrics = snowmint_server::http_api(state)
        .oneshot(
            Request::get("/metrics")
                .header(token.0, token.1)
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    let metrics = String::from_utf8(answer(metrics).await.data.to_vec()).unwrap();
    let count = format!(
        "snowmint_request_duration_seconds_count{{protocol=\"grpc\",route=\"Next\"}} {ok}\n"
    );
    assert!(metrics.contains(&count), "{count} in {metrics}");
}

/// What tonic refuses as soon as it reads it is refused at once in front of it too: a
/// client that leaves its stream unfinished does not hold the call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn next_is_refused_at_its_first_bytes_without_waiting_for_the_stream_to_end() {
    use std::time::Duration;

    use axum::body::Body;
    use axum::http::Request;
    use futures_util::StreamExt;
    use snowmint_server::grpc::GrpcApi;
    use snowmint_server::{AppState, Config, IdSource, Settings};
    use tower::ServiceExt;

    let dir = tempfile::tempdir().unwrap();
    let toml = format!("state_dir = {:?}\nworker = 9", dir.path());
    let config = Config::try_from(Settings::from_toml(&toml, "t.toml".as_ref()).unwrap()).unwrap();
    let state = AppState::for_config(IdSource::start(&config).await.unwrap(), &config);
    let api = GrpcApi::new(state);
    #[rustfmt::skip]
    let cases: [(&str, Vec<u8>, tonic::Code); 3] = [
        ("a length past the bound", vec![0, 0x01, 0x31, 0x2d, 0x00], tonic::Code::ResourceExhausted),
        ("a malformed message", vec![0, 0, 0, 0, 2, 0x08, 0x80], tonic::Code::InvalidArgument),
        ("a compressed message", vec![1, 0, 0, 0, 0], tonic::Code::Internal),
    ];
    for (case, first, code) in cases {
        // The first bytes, then a stream that never ends.
        let body = futures_util::stream::iter([Ok::<_, std::io::Error>(bytes::Bytes::from(first))])
            .chain(futures_util::stream::pending());
        let request = Request::post("/snowmint.v1.IdService/Next")
            .header("content-type", "application/grpc")
            .body(Body::from_stream(body))
            .unwrap();
        let response = tokio::time::timeout(Duration::from_secs(5), api.clone().oneshot(request))
            .await
            .unwrap_or_else(|_| panic!("{case}: no answer before the stream ended"))
            .unwrap();
        let status = tonic::Status::from_header_map(response.headers())
            .unwrap_or_else(|| panic!("{case}: a trailers-only answer"));
        assert_eq!(status.code(), code, "{case}: {status:?}");
    }
}
