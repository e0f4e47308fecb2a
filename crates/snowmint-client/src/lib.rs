//! A client for `snowmint serve`: ids from a prefetch buffer, one atomic step each, with
//! failover across servers and a bound on how old an id may be when it is handed out.
//!
//! It speaks the servers' wire format only (`proto/snowmint/v1/id.proto` over gRPC, or
//! `GET /v1/ids` over HTTP), never their code.
//!
//! ```no_run
//! use snowmint_client::Client;
//!
//! # async fn run() -> Result<(), snowmint_client::Error> {
//! let client = Client::builder()
//!     .endpoints(["http://10.0.0.1:50051", "http://10.0.0.2:50051"])
//!     .build()?;
//! let id = client.next_id().await?;
//! let batch = client.next_ids(1000).await?;
//! # Ok(())
//! # }
//! ```
//!
//! Code without a runtime uses [`Builder::build_blocking`], whose [`blocking::Client`] has
//! the same calls without `.await`.
//!
//! # TLS
//!
//! An `https://` endpoint is called over TLS, gRPC and HTTP alike; an `http://` one never
//! is. [`Tls`] names the CA that signs the servers' certificates (the system's CAs
//! otherwise), a client certificate for servers that ask for one, and the name the
//! certificates must hold; the bearer token goes with every call either way.
//!
//! ```no_run
//! use snowmint_client::{Client, Tls};
//!
//! # async fn run() -> Result<(), snowmint_client::Error> {
//! let client = Client::builder()
//!     .endpoints(["https://ids-1.internal:50051", "https://ids-2.internal:50051"])
//!     .tls(Tls::new().ca_pem_file("/etc/snowmint/ca.pem")?)
//!     .auth_token("s3cret")
//!     .build()?;
//! let id = client.next_id().await?;
//! # Ok(())
//! # }
//! ```
//!
//! A handshake that fails is said in its own words in [`Error::Unavailable`]: "the
//! server's certificate is not trusted", "not valid for the name dialed", "the server
//! requires a client certificate".
//!
//! # The prefetch buffer
//!
//! The client holds two batches: the one it hands ids out of and the one fetched behind
//! it. Taking an id is one `fetch_add` on the current batch's cursor and one reading of the
//! monotonic clock; no lock, no queue (the batch itself is read through `arc-swap`, whose
//! load takes no lock either). When less than [`refill_below`](Builder::refill_below)
//! of the current batch is left (90% by default: the next batch is asked for once a tenth
//! of the current one is used, as Leaf does), a background task fetches the next batch with
//! one `NextBatch` call (or `GET /v1/ids`). When the current batch is used up, the next
//! takes its place, and a take waits for the network only if the next has not arrived.
//!
//! The batch size follows the rate of use, as Leaf's segment step does: a batch used up in
//! less than an eighth of `max_age` makes the next one twice its size, one that lasted more
//! than a quarter of `max_age` (or went stale) half its size, between
//! [`batch_sizes`](Builder::batch_sizes) (64 and 100,000 by default). A caller does not wait
//! for the network while a tenth of a batch lasts longer than a call takes. The largest
//! batch is bounded by the server (100,000 ids take about 25 ms to issue at one worker id's
//! cap of 4,096 a millisecond), and one call is in flight at a time, so one client draws at
//! most one worker id's cap from its servers, less the gaps between calls: a second server
//! is there for failover, not for more ids.
//!
//! # Bounded staleness, and what it costs
//!
//! Every batch carries the instant its call was sent: the server issued each of its ids
//! after that instant, so an id's age is at most the time since. A take finds an id fresh
//! only before that instant plus [`max_age`](Builder::max_age) (1 s by default); from then
//! on the rest of the batch is thrown away, never handed out. The clock is the client's
//! monotonic clock alone: the bound holds whatever the servers' clocks say, and for servers
//! whose ids tell no time (`--clock counter`). Past half the max age of the current batch,
//! a take also asks for a batch behind it if there is none.
//!
//! What that costs, with the defaults (`max_age` 1 s, smallest batch 64), as the buffer's
//! test `staleness_costs_what_the_docs_say` measures on a fake clock over 20 s:
//!
//! - **At a steady 128 ids/s or more: no id thrown away**, and 4 to 8 calls a second (a
//!   batch lasts an eighth to a quarter of the max age; 1,000 ids/s made 159 calls in
//!   20 s), or one call a largest batch above 800,000 ids/s.
//! - **Below 128 ids/s (2 × smallest batch / `max_age`)**, a batch of the smallest size
//!   outlives half the max age: the client makes about 2 calls a second (2 / `max_age`)
//!   and throws away about 128 − rate ids a second (2 × smallest batch / `max_age` −
//!   rate). Measured: at 10 ids/s, 2,242 ids thrown away in 20 s (112 a second) for 200
//!   handed out, in 40 calls; at 100 ids/s, 532 (27 a second) for 2,000, in 41 calls. A
//!   smaller smallest batch throws fewer away for as many calls.
//! - **A rate that falls by more than half at once:** the batch in use may go stale; what
//!   is left of it is thrown away, at most one largest batch, and the size halves.
//! - **After an idle spell longer than the max age:** the two batches held are thrown
//!   away, and the first take waits for one call.
//!
//! [`Stats::discarded_stale`] counts them.
//!
//! # Failover
//!
//! The client calls one endpoint at a time, starting with the first, and stays with
//! whichever last gave ids. A call that fails, or takes longer than
//! [`timeout`](Builder::timeout) (500 ms by default, connecting included), moves to the next
//! endpoint, within the same round. An endpoint that failed, or answered that it may not
//! issue (HTTP 503, gRPC `UNAVAILABLE`: lease not confirmed, clock behind the high-water
//! mark, shutting down), goes to the back of the order for 100 ms, doubling with each
//! failure in a row up to 5 s, and is called again only when no other endpoint gives ids
//! or when that time is over: so a server that is not ready is skipped until it is ready
//! again, and back in the order the first call after that.
//!
//! No id is handed out twice: each batch comes from one call, the client checks that its
//! ids strictly increase, and a call that timed out is dropped with whatever it would have
//! brought. With every endpoint down, the client hands out what its buffer holds and then
//! fails each call with [`Error::Unavailable`], naming each endpoint and its last error,
//! after one round of calls: at most one timeout per endpoint, not a hang.
//!
//! # Order across a failover
//!
//! Ids from one server increase: one `next_id` caller receives increasing ids, and so do
//! many callers in the order of their takes. After a failover, the new server's ids may be
//! lower than the old one's by up to the clock skew between the two (and by the span of
//! the batch held when it failed): each server's ids carry its own clock's time. With
//! [`monotonic`](Builder::monotonic), the client throws away every id at or below the last
//! id taken before the new batch: ids then increase across failovers too, and after a
//! failover to a server whose clock is behind by `s`, takes wait about `s` for ids high
//! enough, each batch fetched meanwhile thrown away and counted in
//! [`Stats::discarded_out_of_order`].
//!
//! # Metrics
//!
//! [`Client::stats`] returns the ids buffered, batches received, failovers, failed rounds,
//! and the ids thrown away as stale or out of order: counters for a metrics exporter to
//! read. None of them is touched once an id: each moves once a batch or once a failure.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod buffer;
mod builder;
mod client;
mod endpoint;
mod error;
mod grpc;
mod http;
mod segment;
mod stats;
mod tls;

pub mod blocking;

pub use builder::{
    Builder, DEFAULT_MAX_AGE, DEFAULT_MAX_BATCH, DEFAULT_MIN_BATCH, DEFAULT_REFILL_BELOW,
    DEFAULT_TIMEOUT, Transport,
};
pub use client::Client;
pub use error::{EndpointFailure, Error};
pub use snowmint::Id;
pub use stats::Stats;
pub use tls::Tls;

/// The crate's README examples, compiled as doctests so they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
