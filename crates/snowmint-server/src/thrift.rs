//! Twitter's Snowflake service (`proto/thrift/snowflake.thrift`, as Twitter published it)
//! over the same [`AppState`] as HTTP and gRPC: [`call`] reads one call from a frame and
//! writes its reply. The accept loop frames it (`net/framed.rs`): the framed transport with
//! the binary protocol, as Twitter's server spoke it.
//!
//! The IDL gives `get_id` no `throws` clause, so a client built from it can receive a
//! refusal only as a `TApplicationException`. A refusal of the service (a user agent that
//! breaks Twitter's rule, a clock that went back, no worker id held) has the type
//! `INTERNAL_ERROR`, which Twitter's server sent for its undeclared exceptions, and a
//! message that names the problem, the same words HTTP and gRPC use. A message that cannot
//! be read gets `PROTOCOL_ERROR`, a method the service lacks `UNKNOWN_METHOD`.
//!
//! The processor is written here over the `thrift` crate's protocol types rather than
//! generated: the crate's generated processors are blocking, made for its thread-per-
//! connection server, while each call here runs on the server's tokio runtime like every
//! other request; and four methods of no or one argument take less code than the glue
//! generated code would need, with no generated file to keep in step with a compiler.

use std::time::Instant;

use snowmint::{Clock, WallClock};
use thrift::protocol::{
    TBinaryInputProtocol, TBinaryOutputProtocol, TFieldIdentifier, TInputProtocol,
    TMessageIdentifier, TMessageType, TOutputProtocol, TStructIdentifier, TType,
};
use thrift::{ApplicationError, ApplicationErrorKind, TConfiguration};

use crate::{ApiError, AppState, issue};

/// The largest frame the server reads: the bound of HTTP bodies and gRPC messages. A call
/// is its method's name, a sequence number and at most a user agent, some tens of bytes.
pub const MAX_FRAME_BYTES: u32 = crate::MAX_BODY_BYTES as u32;

/// The service's methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    WorkerId,
    Timestamp,
    Id,
    DatacenterId,
}

impl Method {
    /// The methods, in the IDL's order.
    const ALL: [Method; 4] = [
        Method::WorkerId,
        Method::Timestamp,
        Method::Id,
        Method::DatacenterId,
    ];

    fn name(self) -> &'static str {
        match self {
            Method::WorkerId => "get_worker_id",
            Method::Timestamp => "get_timestamp",
            Method::Id => "get_id",
            Method::DatacenterId => "get_datacenter_id",
        }
    }

    fn named(name: &str) -> Option<Method> {
        Method::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// The answer to one frame.
#[derive(Debug)]
pub struct Reply {
    /// The reply message, to send in a frame of its own.
    pub message: Vec<u8>,
    /// Whether the connection must close after it: the client sent something that is not
    /// a call (a message that cannot be read, or a one-way message, whose sender reads no
    /// reply), so what it sends next cannot be trusted.
    pub close: bool,
}

/// A call refused: what the client is told, and what the metrics count.
struct Refusal {
    kind: ApplicationErrorKind,
    error: ApiError,
}

impl Refusal {
    /// The service refused the call (as Twitter's server did, `INTERNAL_ERROR`).
    fn service(error: ApiError) -> Refusal {
        Refusal {
            kind: ApplicationErrorKind::InternalError,
            error,
        }
    }

    fn protocol(message: String) -> Refusal {
        Refusal {
            kind: ApplicationErrorKind::ProtocolError,
            error: ApiError::BadRequest(message),
        }
    }
}

/// Answers the call in `frame`. Every call is counted in the metrics under its method
/// (`unmatched` when there is none) with status 0, or the gRPC code of its refusal.
pub async fn call(state: &AppState, frame: &[u8]) -> Reply {
    let start = Instant::now();
    // No string in a frame is longer than the frame: nothing larger is ever allocated.
    let config = TConfiguration::builder()
        .max_string_size(Some(frame.len()))
        .build()
        .unwrap_or_default();
    // Not strict: old clients send no version header, as the binary protocol allows.
    let mut input = TBinaryInputProtocol::with_config(frame, false, config);
    let header = match input.read_message_begin() {
        Ok(header) => header,
        Err(e) => {
            let refusal = Refusal::protocol(format!(
                "cannot read a thrift call from a frame of {} bytes: {}",
                frame.len(),
                describe(&e)
            ));
            let header = TMessageIdentifier::new("", TMessageType::Exception, 0);
            return refuse(state, start, "unmatched", &header, refusal, true);
        }
    };
    if header.message_type != TMessageType::Call {
        let refusal = Refusal {
            kind: ApplicationErrorKind::InvalidMessageType,
            error: ApiError::BadRequest(format!(
                "thrift message {:?} has message type {} ({}); the Snowflake service takes calls (type 1)",
                header.name,
                u8::from(header.message_type),
                match header.message_type {
                    TMessageType::Call => "call",
                    TMessageType::Reply => "reply",
                    TMessageType::Exception => "exception",
                    TMessageType::OneWay => "oneway",
                }
            )),
        };
        return refuse(state, start, "unmatched", &header, refusal, true);
    }
    let Some(method) = Method::named(&header.name) else {
        let refusal = Refusal {
            kind: ApplicationErrorKind::UnknownMethod,
            error: ApiError::BadRequest(format!(
                "unknown method {:?}: the Snowflake service has {}",
                header.name,
                Method::ALL.map(Method::name).join(", ")
            )),
        };
        // The frame held the whole message: the next one starts cleanly.
        return refuse(state, start, "unmatched", &header, refusal, false);
    };
    let agent = match arguments(&mut input, method) {
        Ok(agent) => agent,
        Err(e) => {
            let refusal = Refusal::protocol(format!(
                "cannot read the arguments of {}: {}",
                method.name(),
                describe(&e)
            ));
            return refuse(state, start, method.name(), &header, refusal, false);
        }
    };
    // Thrift's i64 carries each value's bits: ids of layouts that use bit 63 (past 2^63)
    // arrive negative, and read back as unsigned; worker ids and times are far below it.
    let result = match method {
        Method::WorkerId => issue::worker(state).map(|(_, worker)| worker as i64),
        Method::DatacenterId => issue::worker(state).map(|(datacenter, _)| datacenter as i64),
        Method::Timestamp => Ok(WallClock.now_ms() as i64),
        Method::Id => match issue::user_agent(agent.as_deref().unwrap_or_default()) {
            Ok(()) => issue::one(state).await.map(|id| id.as_u64() as i64),
            Err(e) => Err(e),
        },
    };
    match result {
        Ok(value) => match encode(&header, TMessageType::Reply, |out| {
            result_struct(out, method, value)
        }) {
            Ok(message) => {
                state
                    .metrics
                    .record("thrift", method.name(), 0, start.elapsed());
                Reply {
                    message,
                    close: false,
                }
            }
            Err(e) => {
                let refusal = Refusal {
                    kind: ApplicationErrorKind::InternalError,
                    error: ApiError::Unavailable(format!(
                        "cannot write the reply of {}: {}",
                        method.name(),
                        describe(&e)
                    )),
                };
                refuse(state, start, method.name(), &header, refusal, true)
            }
        },
        Err(e) => refuse(
            state,
            start,
            method.name(),
            &header,
            Refusal::service(e),
            false,
        ),
    }
}

/// Reads a call's arguments: for `get_id` the user agent (field 1), if given as a string.
/// Fields the method does not take, or of another type, are skipped, as generated code
/// skips them.
fn arguments(input: &mut dyn TInputProtocol, method: Method) -> thrift::Result<Option<Vec<u8>>> {
    let mut agent = None;
    input.read_struct_begin()?;
    loop {
        let field = input.read_field_begin()?;
        match (field.field_type, field.id) {
            (TType::Stop, _) => break,
            (TType::String, Some(1)) if method == Method::Id => agent = Some(input.read_bytes()?),
            (other, _) => input.skip(other)?,
        }
        input.read_field_end()?;
    }
    input.read_struct_end()?;
    input.read_message_end()?;
    Ok(agent)
}

/// The `<method>_result` struct of a call that returned `value`: field 0, `success`.
fn result_struct(out: &mut dyn TOutputProtocol, method: Method, value: i64) -> thrift::Result<()> {
    out.write_struct_begin(&TStructIdentifier::new(format!("{}_result", method.name())))?;
    out.write_field_begin(&TFieldIdentifier::new("success", TType::I64, 0))?;
    out.write_i64(value)?;
    out.write_field_end()?;
    out.write_field_stop()?;
    out.write_struct_end()
}

/// Writes `refusal` as the reply to `header`, and counts it.
fn refuse(
    state: &AppState,
    start: Instant,
    route: &'static str,
    header: &TMessageIdentifier,
    refusal: Refusal,
    close: bool,
) -> Reply {
    let code = refusal.error.code() as u16;
    state.metrics.record("thrift", route, code, start.elapsed());
    let error = ApplicationError::new(refusal.kind, refusal.error.to_string());
    let message = encode(header, TMessageType::Exception, |out| {
        thrift::Error::write_application_error_to_out_protocol(&error, out)
    });
    match message {
        Ok(message) => Reply { message, close },
        // Writing to memory fails only for a string past 2 GiB, which no refusal holds.
        Err(_) => Reply {
            message: Vec::new(),
            close: true,
        },
    }
}

/// A refusal the accept loop sends before it has read a message: the frame was too large
/// to read (`length` is what the client announced). Counted like a call to no method.
pub(crate) fn frame_too_large(state: &AppState, length: u32) -> Vec<u8> {
    // A client of the unframed binary protocol sends the protocol's version (0x8001) where
    // the frame's length belongs, and the length comes out above two billion.
    let hint = if length >> 16 == 0x8001 {
        ": the client seems to send unframed messages; this port speaks the framed transport"
    } else {
        ""
    };
    let refusal = Refusal::protocol(format!(
        "thrift frame of {length} bytes is larger than the {MAX_FRAME_BYTES} bytes this server accepts{hint}"
    ));
    let header = TMessageIdentifier::new("", TMessageType::Exception, 0);
    refuse(state, Instant::now(), "unmatched", &header, refusal, true).message
}

/// A message of `kind` answering `header`, with the body `write` writes.
fn encode(
    header: &TMessageIdentifier,
    kind: TMessageType,
    write: impl FnOnce(&mut dyn TOutputProtocol) -> thrift::Result<()>,
) -> thrift::Result<Vec<u8>> {
    let mut out = TBinaryOutputProtocol::new(Vec::with_capacity(64), true);
    out.write_message_begin(&TMessageIdentifier::new(
        header.name.clone(),
        kind,
        header.sequence_number,
    ))?;
    write(&mut out)?;
    out.write_message_end()?;
    out.flush()?;
    Ok(out.transport)
}

/// The crate's error as one lowercase line: its kind, then what it says beyond that.
fn describe(e: &thrift::Error) -> String {
    let detail = match e {
        thrift::Error::Transport(t) if t.kind == thrift::TransportErrorKind::EndOfFile => {
            return "the message ends early".into();
        }
        thrift::Error::Transport(t) => &t.message,
        thrift::Error::Protocol(p) => &p.message,
        thrift::Error::Application(a) => &a.message,
        thrift::Error::User(u) => return u.to_string(),
    };
    let kind = e.to_string();
    if detail.is_empty() || *detail == kind {
        kind
    } else {
        format!("{kind}: {}", detail.to_lowercase())
    }
}
