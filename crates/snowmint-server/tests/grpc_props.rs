//! Arbitrary messages for every method of the gRPC service, from a real tonic client to a
//! real server on loopback: counts of any size, ids, layouts, codes, templates and zones as
//! any text (empty, huge, any Unicode), and message bytes that are no protobuf at all. No
//! call may end in `INTERNAL` or `UNKNOWN`: every refusal is the client's to fix or a limit,
//! with a lowercase message that names the problem, and the server goes on serving.

use crate::running;

use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use snowmint_proto::v1::id_service_client::IdServiceClient;
use snowmint_proto::v1::{
    DecodeRequest, DecodeSerialRequest, NextBatchRequest, NextRequest, NextSerialsRequest,
    SerialFormat, StreamRequest,
};
use tonic::transport::Channel;
use tonic::{Code, Status};

use running::{Running, raw_call, raw_stream, start};

/// The server's `max_batch` (see [`start`]).
const MAX_BATCH: u64 = 50_000;
/// Cases per run: each is one call and a check that the server still serves.
const CASES: u32 = 1000;
/// Messages read from a stream before the client leaves it (an endless one never ends).
const STREAM_MESSAGES: usize = 3;
/// The longest a case may take: a call the server holds longer is a failure, not a hang.
const CASE_TIMEOUT: Duration = Duration::from_secs(30);

/// One call of one method.
#[derive(Debug, Clone)]
enum Call {
    Next,
    NextBatch(NextBatchRequest),
    Stream(StreamRequest),
    Decode(DecodeRequest),
    NextSerials(NextSerialsRequest),
    DecodeSerial(DecodeSerialRequest),
    /// Bytes that may be no message of the method's type at all.
    Raw(&'static str, Vec<u8>),
}

/// Counts of any size, with the edges of the server's range and of 32 bits drawn often.
fn count() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0),
        1..=3u64,
        MAX_BATCH - 2..=MAX_BATCH + 2,
        (1u64 << 32) - 2..=(1u64 << 32) + 2,
        u64::MAX - 2..=u64::MAX,
        any::<u64>(),
    ]
}

/// Text a field may carry: empty, what the server reads (so that some calls succeed),
/// near misses, any Unicode, and more than the server takes in one message.
fn text() -> impl Strategy<Value = String> {
    let known = prop::sample::select(vec![
        "twitter",
        "DISCORD",
        "sonyflake",
        "custom:41/5/5/12",
        "custom:39/0/10/14",
        "custom:0/0/0/0",
        "custom:64/0/0/0",
        "PAY",
        "ORD2",
        "+08:00",
        "-23:59",
        "+24:00",
        "UTC",
        "Z",
        "Asia/Shanghai",
        "{biz}{time}{node}{seq}",
        "{biz}-{time}-{node}-{seq}-{check:mod97}",
        "{time}{seq}",
        "{biz}{time}{node:19}{seq:19}",
        "0",
        "1",
        "7389021983019802624",
        "18446744073709551615",
        "18446744073709551616",
        "0x7fffffffffffffff",
        "0b1",
        "01HQXW5P7R8ZYFG2A3B4C5D6E7",
        "PAY2026112215304512300340007",
    ])
    .prop_map(String::from);
    prop_oneof![
        Just(String::new()),
        known,
        "[0-9A-Za-z:/+_.{}x -]{0,48}",
        any::<String>(),
        (1usize..=40_000, any::<char>()).prop_map(|(n, c)| c.to_string().repeat(n)),
    ]
}

fn format() -> impl Strategy<Value = Option<SerialFormat>> {
    prop::option::of((text(), text()).prop_map(|(template, tz)| SerialFormat { template, tz }))
}

fn call() -> impl Strategy<Value = Call> {
    let methods = prop::sample::select(vec![
        "Next",
        "NextBatch",
        "Stream",
        "Decode",
        "NextSerials",
        "DecodeSerial",
    ]);
    prop_oneof![
        Just(Call::Next),
        count().prop_map(|count| Call::NextBatch(NextBatchRequest { count })),
        (count(), count())
            .prop_map(|(batch_size, total)| Call::Stream(StreamRequest { batch_size, total })),
        (text(), text(), count(), text()).prop_map(|(id, layout, tick_ms, encoding)| {
            Call::Decode(DecodeRequest {
                id,
                layout,
                tick_ms,
                encoding,
            })
        }),
        (text(), count(), format()).prop_map(|(biz, count, format)| Call::NextSerials(
            NextSerialsRequest { biz, count, format }
        )),
        (text(), format()).prop_map(|(serial, format)| Call::DecodeSerial(DecodeSerialRequest {
            serial,
            format
        })),
        (methods, prop::collection::vec(any::<u8>(), 0..64))
            .prop_map(|(method, bytes)| Call::Raw(method, bytes)),
    ]
}

/// A refusal is fine when its code says the client must change the request, or that a
/// limit was reached, and its message names the problem in the server's words.
fn check_refusal(call: &Call, status: &Status) -> Result<(), TestCaseError> {
    prop_assert!(
        matches!(
            status.code(),
            Code::InvalidArgument | Code::ResourceExhausted
        ),
        "{call:?}: {status:?}"
    );
    let message = status.message();
    prop_assert!(
        message.chars().next().is_some_and(char::is_lowercase),
        "{call:?}: a message that does not read as the server's: {message:?}"
    );
    Ok(())
}

/// How the calls ended, for the figures a run prints.
#[derive(Debug, Default)]
struct Tally {
    answered: u64,
    refused: std::collections::BTreeMap<String, u64>,
}

/// Makes `call`, and checks what came back.
async fn run(
    client: &mut IdServiceClient<Channel>,
    server: &Running,
    call: &Call,
    tally: &std::sync::Mutex<Tally>,
) -> Result<(), TestCaseError> {
    let answer = match call.clone() {
        Call::Next => client.next(NextRequest {}).await.map(drop),
        Call::NextBatch(request) => client.next_batch(request).await.map(|ids| {
            let ids = ids.into_inner().ids;
            assert_eq!(ids.len() as u64, request.count);
            assert!(ids.windows(2).all(|w| w[0] < w[1]));
        }),
        Call::Stream(request) => match client.stream(request).await {
            Ok(stream) => {
                let mut stream = stream.into_inner();
                for _ in 0..STREAM_MESSAGES {
                    match stream.message().await {
                        Ok(Some(ids)) => prop_assert!(!ids.ids.is_empty()),
                        Ok(None) => break,
                        Err(status) => check_refusal(call, &status)?,
                    }
                }
                Ok(())
            }
            Err(status) => Err(status),
        },
        Call::Decode(request) => client.decode(request).await.map(drop),
        Call::NextSerials(request) => client.next_serials(request).await.map(|serials| {
            let serials = serials.into_inner().serials;
            assert!(serials.windows(2).all(|w| w[0] < w[1]), "{serials:?}");
        }),
        Call::DecodeSerial(request) => client.decode_serial(request).await.map(drop),
        // A unary call of a streaming method would read an endless answer to its end.
        Call::Raw("Stream", bytes) => raw_stream(server, bytes, STREAM_MESSAGES).await.map(drop),
        Call::Raw(method, bytes) => raw_call(server, method, bytes).await.map(drop),
    };
    match answer {
        Ok(()) => tally.lock().unwrap().answered += 1,
        Err(status) => {
            let code = format!("{:?}", status.code());
            *tally.lock().unwrap().refused.entry(code).or_default() += 1;
            check_refusal(call, &status)?;
        }
    }
    // The server goes on serving.
    let next = client.next(NextRequest {}).await;
    prop_assert!(next.is_ok(), "after {call:?}: {next:?}");
    Ok(())
}

#[test]
fn any_message_to_any_method_is_answered_or_refused_in_the_servers_words() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime.block_on(start(""));
    let client = runtime.block_on(server.client());
    let mut runner = TestRunner::new(Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    });
    let tally = std::sync::Mutex::new(Tally::default());
    let outcome = runner.run(&call(), |call| {
        let mut client = client.clone();
        let case = run(&mut client, &server, &call, &tally);
        runtime
            .block_on(async { tokio::time::timeout(CASE_TIMEOUT, case).await })
            .unwrap_or_else(|_| {
                Err(TestCaseError::fail(format!(
                    "no answer within {CASE_TIMEOUT:?}"
                )))
            })
    });
    runtime.block_on(server.stop());
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
    // The figures, for `--nocapture`.
    eprintln!("grpc_props: {:?}", tally.into_inner().unwrap());
}
