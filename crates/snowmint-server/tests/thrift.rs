//! Twitter's Snowflake Thrift service through its processor, without a socket: calls are
//! written and replies read with the `thrift` crate's binary protocol, as a client built
//! from the IDL would. The framed transport over a socket is tried in the CLI's tests.

use crate::support;

use snowmint::{Id, Layout};
use snowmint_server::thrift::{self as snowflake, Reply};
use support::{Server, server};
use thrift::protocol::{
    TBinaryInputProtocol, TBinaryOutputProtocol, TFieldIdentifier, TInputProtocol,
    TMessageIdentifier, TMessageType, TOutputProtocol, TStructIdentifier, TType,
};
use thrift::{ApplicationError, ApplicationErrorKind};

const RULE: &str =
    "does not match [a-zA-Z][a-zA-Z0-9-]*: a letter, then letters, digits and dashes";

/// A call to `method` with sequence number `seq`, and `agent` as field 1 if given.
fn call_message(method: &str, seq: i32, agent: Option<&[u8]>) -> Vec<u8> {
    let mut out = TBinaryOutputProtocol::new(Vec::new(), true);
    out.write_message_begin(&TMessageIdentifier::new(method, TMessageType::Call, seq))
        .unwrap();
    out.write_struct_begin(&TStructIdentifier::new(format!("{method}_args")))
        .unwrap();
    if let Some(agent) = agent {
        out.write_field_begin(&TFieldIdentifier::new("useragent", TType::String, 1))
            .unwrap();
        out.write_bytes(agent).unwrap();
        out.write_field_end().unwrap();
    }
    out.write_field_stop().unwrap();
    out.write_struct_end().unwrap();
    out.write_message_end().unwrap();
    out.transport
}

/// A reply as a generated client reads it: its header, and its value or exception.
fn read_reply(reply: &Reply) -> (TMessageIdentifier, Result<i64, ApplicationError>) {
    let mut input = TBinaryInputProtocol::new(&reply.message[..], true);
    let header = input.read_message_begin().unwrap();
    if header.message_type == TMessageType::Exception {
        let error = thrift::Error::read_application_error_from_in_protocol(&mut input).unwrap();
        return (header, Err(error));
    }
    assert_eq!(header.message_type, TMessageType::Reply);
    input.read_struct_begin().unwrap();
    let field = input.read_field_begin().unwrap();
    assert_eq!((field.field_type, field.id), (TType::I64, Some(0)));
    let value = input.read_i64().unwrap();
    input.read_field_end().unwrap();
    assert_eq!(input.read_field_begin().unwrap().field_type, TType::Stop);
    input.read_struct_end().unwrap();
    (header, Ok(value))
}

async fn value(server: &Server, method: &str, agent: Option<&str>) -> i64 {
    let reply = snowflake::call(
        &server.state,
        &call_message(method, 7, agent.map(str::as_bytes)),
    )
    .await;
    assert!(!reply.close);
    let (header, result) = read_reply(&reply);
    assert_eq!((header.name.as_str(), header.sequence_number), (method, 7));
    result.unwrap_or_else(|e| panic!("{method}: {e:?}"))
}

/// A refused call: the exception's kind and message, and whether the connection closes.
async fn refused(server: &Server, message: &[u8]) -> (ApplicationErrorKind, String, bool) {
    let reply = snowflake::call(&server.state, message).await;
    let (_, result) = read_reply(&reply);
    let error = result.expect_err("refused");
    (error.kind, error.message, reply.close)
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[tokio::test]
async fn every_method_answers_as_twitters_server_did() {
    let server = server("").await;
    assert_eq!(value(&server, "get_worker_id", None).await, 5);
    assert_eq!(value(&server, "get_datacenter_id", None).await, 2);
    let before = now_ms();
    let timestamp = value(&server, "get_timestamp", None).await;
    assert!((before..=now_ms()).contains(&timestamp), "{timestamp}");

    let a = value(&server, "get_id", Some("snowmint-test")).await;
    let b = value(&server, "get_id", Some("b")).await;
    assert!(b > a, "{a} {b}");
    let parts = Layout::TWITTER.decode(Id::from_u64(b as u64)).unwrap();
    assert_eq!((parts.datacenter, parts.worker), (2, 5));
    // The same generator as HTTP and gRPC: its count of ids issued moved.
    let metrics = server.state.metrics.render();
    assert!(
        metrics.contains("snowmint_ids_issued_total 2\n"),
        "{metrics}"
    );
    for (route, n) in [
        ("get_worker_id", 1),
        ("get_datacenter_id", 1),
        ("get_timestamp", 1),
        ("get_id", 2),
    ] {
        let line = format!(
            "snowmint_requests_total{{protocol=\"thrift\",route=\"{route}\",status=\"0\"}} {n}\n"
        );
        assert!(metrics.contains(&line), "{line}{metrics}");
    }
}

#[tokio::test]
async fn each_bad_user_agent_is_refused_with_its_name_and_the_rule() {
    let server = server("").await;
    for (agent, quoted) in [
        (&b""[..], "\"\""),
        (b"1abc", "\"1abc\""),
        (b"-abc", "\"-abc\""),
        (b"has space", "\"has space\""),
        (b"under_score", "\"under_score\""),
        (b"slash/1.0", "\"slash/1.0\""),
        (b"caf\xc3\xa9", "\"caf\u{e9}\""),
        (b"\xff", "\"\u{fffd}\""),
    ] {
        let (kind, message, close) =
            refused(&server, &call_message("get_id", 3, Some(agent))).await;
        assert_eq!(kind, ApplicationErrorKind::InternalError, "{agent:?}");
        assert_eq!(message, format!("user agent {quoted} {RULE}"));
        assert!(!close, "a refusal keeps the connection");
    }
    // No user agent at all is an empty one.
    let (_, message, _) = refused(&server, &call_message("get_id", 3, None)).await;
    assert_eq!(message, format!("user agent \"\" {RULE}"));
    // Nothing was issued; each refusal was counted with the gRPC code of a bad request.
    let metrics = server.state.metrics.render();
    assert!(
        metrics.contains("snowmint_ids_issued_total 0\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains(
            "snowmint_requests_total{protocol=\"thrift\",route=\"get_id\",status=\"3\"} 9\n"
        ),
        "{metrics}"
    );
}

#[tokio::test]
async fn what_is_not_a_call_of_the_service_is_refused_by_name() {
    let server = server("").await;
    let (kind, message, close) = refused(&server, &call_message("get_ids", 1, None)).await;
    assert_eq!(kind, ApplicationErrorKind::UnknownMethod);
    assert_eq!(
        message,
        "unknown method \"get_ids\": the Snowflake service has get_worker_id, get_timestamp, get_id, get_datacenter_id"
    );
    assert!(!close, "the frame held the whole call");

    // A one-way message: its sender reads no reply, so the connection closes.
    let mut oneway = call_message("get_id", 1, Some(b"a"));
    oneway[3] = 4;
    let (kind, message, close) = refused(&server, &oneway).await;
    assert_eq!(kind, ApplicationErrorKind::InvalidMessageType);
    assert_eq!(
        message,
        "thrift message \"get_id\" has message type 4 (oneway); the Snowflake service takes calls (type 1)"
    );
    assert!(close);

    // Garbage: no message at all.
    let (kind, message, close) = refused(&server, b"hello, world").await;
    assert_eq!(kind, ApplicationErrorKind::ProtocolError);
    assert_eq!(
        message,
        "cannot read a thrift call from a frame of 12 bytes: message too long: message name size 1751477356 exceeds maximum allowed size of 12"
    );
    assert!(close);
    let (_, message, _) = refused(&server, b"hi!").await;
    assert_eq!(
        message,
        "cannot read a thrift call from a frame of 3 bytes: the message ends early"
    );
    let (_, message, _) = refused(&server, &[0x80, 0x02, 0, 1, 0, 0, 0, 0]).await;
    assert_eq!(
        message,
        "cannot read a thrift call from a frame of 8 bytes: invalid thrift version: received bad version: [128, 2]"
    );

    // Arguments cut short, or claiming a string longer than the frame.
    let whole = call_message("get_id", 1, Some(b"agent"));
    let (kind, message, close) = refused(&server, &whole[..whole.len() - 3]).await;
    assert_eq!(kind, ApplicationErrorKind::ProtocolError);
    assert_eq!(
        message,
        "cannot read the arguments of get_id: the message ends early"
    );
    assert!(!close);
    let mut long = call_message("get_id", 1, Some(b"agent"));
    let at = long.len() - 10;
    long[at..at + 4].copy_from_slice(&i32::MAX.to_be_bytes());
    let (_, message, _) = refused(&server, &long).await;
    assert_eq!(
        message,
        format!(
            "cannot read the arguments of get_id: message too long: byte array size {} exceeds maximum allowed size of {}",
            i32::MAX,
            long.len()
        )
    );

    // The server still issues; the refusals were counted as bad requests.
    assert!(value(&server, "get_id", Some("still")).await > 0);
    let metrics = server.state.metrics.render();
    assert!(
        metrics.contains(
            "snowmint_requests_total{protocol=\"thrift\",route=\"unmatched\",status=\"3\"} 5\n"
        ),
        "{metrics}"
    );
}

#[tokio::test]
async fn fields_a_method_does_not_take_are_skipped_and_old_headers_are_read() {
    let server = server("").await;
    // get_worker_id with a field it does not take (a list of structs), then get_id with its
    // user agent as an i32, which generated code skips too: the user agent is missing.
    let mut out = TBinaryOutputProtocol::new(Vec::new(), true);
    out.write_message_begin(&TMessageIdentifier::new(
        "get_worker_id",
        TMessageType::Call,
        9,
    ))
    .unwrap();
    out.write_struct_begin(&TStructIdentifier::new("args"))
        .unwrap();
    out.write_field_begin(&TFieldIdentifier::new("extra", TType::List, 4))
        .unwrap();
    out.write_list_begin(&thrift::protocol::TListIdentifier::new(TType::Struct, 2))
        .unwrap();
    for _ in 0..2 {
        out.write_struct_begin(&TStructIdentifier::new("e"))
            .unwrap();
        out.write_field_stop().unwrap();
        out.write_struct_end().unwrap();
    }
    out.write_list_end().unwrap();
    out.write_field_end().unwrap();
    out.write_field_stop().unwrap();
    out.write_struct_end().unwrap();
    let reply = snowflake::call(&server.state, &out.transport).await;
    assert_eq!(read_reply(&reply).1.unwrap(), 5);

    // A client of the old, unversioned header: the name's length comes first.
    let mut out = TBinaryOutputProtocol::new(Vec::new(), false);
    out.write_message_begin(&TMessageIdentifier::new(
        "get_datacenter_id",
        TMessageType::Call,
        1,
    ))
    .unwrap();
    out.write_struct_begin(&TStructIdentifier::new("args"))
        .unwrap();
    out.write_field_stop().unwrap();
    out.write_struct_end().unwrap();
    let old = out.transport;
    assert_eq!(&old[..4], &17u32.to_be_bytes());
    let reply = snowflake::call(&server.state, &old).await;
    assert_eq!(read_reply(&reply).1.unwrap(), 2);
}

#[tokio::test]
async fn a_stopping_server_still_names_its_worker_but_issues_nothing() {
    let server = server("").await;
    server.state.source.drain();
    assert_eq!(value(&server, "get_worker_id", None).await, 5);
    let (kind, message, close) = refused(&server, &call_message("get_id", 1, Some(b"a"))).await;
    assert_eq!(kind, ApplicationErrorKind::InternalError);
    assert_eq!(message, "shutting down");
    assert!(!close);
    let metrics = server.state.metrics.render();
    assert!(
        metrics.contains(
            "snowmint_requests_total{protocol=\"thrift\",route=\"get_id\",status=\"14\"} 1\n"
        ),
        "{metrics}"
    );
}

/// A small deterministic generator, so a failing frame can be found again.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[tokio::test]
async fn random_and_mangled_frames_always_get_an_answer() {
    let server = server("").await;
    let valid = [
        call_message("get_id", 1, Some(b"agent")),
        call_message("get_worker_id", 2, None),
        call_message("get_timestamp", 3, None),
    ];
    let mut rng = XorShift(0x5eed_cafe_f00d_d00d);
    // Bounded: a few thousand frames of each kind, each a few dozen bytes.
    for round in 0..6_000 {
        let frame: Vec<u8> = if round % 3 == 0 {
            (0..rng.below(64)).map(|_| rng.next() as u8).collect()
        } else {
            let mut frame = valid[rng.below(valid.len())].clone();
            for _ in 0..=rng.below(4) {
                let at = rng.below(frame.len());
                match rng.below(3) {
                    0 => frame[at] = rng.next() as u8,
                    1 => frame.truncate(at),
                    _ => frame.insert(at, rng.next() as u8),
                }
                if frame.is_empty() {
                    break;
                }
            }
            frame
        };
        let reply = snowflake::call(&server.state, &frame).await;
        // Every frame is answered with a reply or an exception a client can read.
        let (header, _) = read_reply(&reply);
        assert!(
            matches!(
                header.message_type,
                TMessageType::Reply | TMessageType::Exception
            ),
            "{frame:?}"
        );
    }
    assert!(value(&server, "get_id", Some("after")).await > 0);
}
