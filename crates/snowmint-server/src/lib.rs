//! The snowmint ID service: HTTP/JSON, gRPC and Twitter's Snowflake Thrift service over
//! one generator, with metrics, health probes, restart safety and graceful shutdown.
//!
//! [`router`] builds the HTTP API over an [`AppState`] (tests call it without a socket, as
//! they call [`thrift::call`]); [`run`] serves it, the gRPC API and the Thrift service on
//! [`Listeners`] until a shutdown signal; [`serve`] does everything from a validated
//! [`Config`].
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod config;
mod error;
pub mod grpc;
mod http;
mod limits;
mod metrics;
mod net;
mod reload;
mod server;
mod service;
mod source;
mod state;
pub mod thrift;
mod tls;

pub use config::{
    ClockPolicies, ClockSettings, Config, ConfigError, DEFAULT_MAX_RESPONSE_BYTES, LayoutSettings,
    PlaceSettings, RestartBehind, RollbackSetting, SequenceStartSetting, ServeSettings, Settings,
    clock_mode,
};
pub use error::{ApiError, RequestPart};
pub use http::{
    HttpApi, MAX_BODY_BYTES, MAX_URI_BYTES, admin_api, http_api, openapi_document, router,
};
pub use limits::{ADMIN_MAX_CONNECTIONS, Limits};
pub use metrics::{Metrics, RouteMetrics};
pub use server::{Listeners, ServeError, run, serve};
pub use service::{Origin, TokenSource, Tokens, TrustedProxies};
pub use source::{IdSource, Issuer, Ready};
pub use state::AppState;
pub use tls::{ServingTls, TlsFileError};
