//! The server's settings, declared once: each field is a flag, a `SNOWMINT_*` variable and
//! a key of the TOML file, with its default named in its doc.

use std::ops::Range;
use std::path::{Path, PathBuf};

use clap::Args;

use serde::Deserialize;

use super::ConfigError;
use snowmint::ClockMode;

use super::choices::{RestartBehind, RollbackSetting, SequenceStartSetting, clock_mode};
use crate::TrustedProxies;

/// The layout when none is given.
const DEFAULT_LAYOUT: &str = "twitter";

/// Every setting of `snowmint serve`, as given: a key left out is `None`, and takes the
/// default its doc names when [`Config::try_from`](crate::Config) validates the whole.
///
/// One declaration serves three sources, with one name for each setting: the field is the
/// TOML key (`lease_ttl_ms`), the flag is that name with dashes (`--lease-ttl-ms`), and the
/// variable is that name in capitals after `SNOWMINT_` (`SNOWMINT_LEASE_TTL_MS`). Flags
/// override variables (clap reads both), which override the file: read the file, then let
/// clap update it with what the command line gave.
///
/// The settings come in groups, and the groups other commands take too ([`LayoutSettings`],
/// [`PlaceSettings`], [`ClockSettings`]) are flattened into theirs: `snowmint gen
/// --rollback spare` and `rollback = "spare"` in serve's file set one field, declared
/// once. The file is flat, as the command line is: each group reads its own keys from it,
/// and [`Settings::from_toml`] refuses a key no group has.
///
/// # Examples
///
/// ```
/// use clap::{Args, Command, FromArgMatches};
/// use snowmint_server::Settings;
///
/// let mut settings = Settings::from_toml("worker = 1\ndatacenter = 2", "snowmint.toml".as_ref())?;
/// let command = Settings::augment_args(Command::new("serve"));
/// let given = command.try_get_matches_from(["serve", "--worker", "7"])?;
/// // Only the keys the command line gave replace the file's.
/// settings.update_from_arg_matches(&given)?;
/// assert_eq!((settings.place.worker, settings.place.datacenter), (Some(7), Some(2)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct Settings {
    /// Which layout the ids have.
    #[command(flatten)]
    pub layout: LayoutSettings,

    /// Where in its fleet the server issues.
    #[command(flatten)]
    pub place: PlaceSettings,

    /// The settings only `serve` has.
    #[command(flatten)]
    pub serve: ServeSettings,

    /// How the clock is read, and what is done when it goes back.
    #[command(flatten)]
    pub clock: ClockSettings,
}

/// The settings only `snowmint serve` has: its ports, lease, limits and the clock policies
/// no other command needs. The rest are the groups other commands share.
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args, Deserialize)]
pub struct ServeSettings {
    /// HTTP listen address; port 0 picks a free port (default: 127.0.0.1:8080)
    #[arg(long, env = "SNOWMINT_HTTP_ADDR", value_name = "ADDR")]
    pub http_addr: Option<String>,

    /// gRPC listen address, or `off` (default: 127.0.0.1:50051)
    #[arg(long, env = "SNOWMINT_GRPC_ADDR", value_name = "ADDR")]
    pub grpc_addr: Option<String>,

    /// Thrift listen address, or `off`: Twitter's Snowflake service (framed transport, binary
    /// protocol). It takes no bearer token, so bind it to a trusted interface only
    /// (default: off)
    #[arg(long, env = "SNOWMINT_THRIFT_ADDR", value_name = "ADDR")]
    pub thrift_addr: Option<String>,

    /// Admin listen address, or `off`: /healthz, /readyz and /metrics only, behind a
    /// connection cap of its own that the other ports' clients cannot fill, so probes and
    /// scrapes answer while they hold every connection max_connections allows; TLS as the
    /// HTTP port (default: off)
    #[arg(long, env = "SNOWMINT_ADMIN_ADDR", value_name = "ADDR")]
    pub admin_addr: Option<String>,

    /// Bearer token required on every HTTP and gRPC endpoint but the page, /healthz and
    /// /readyz; the Thrift service has no place for one. On a shared host prefer
    /// --auth-token-file: `ps` shows a flag's value to every user (default: none)
    #[arg(
        long,
        env = "SNOWMINT_AUTH_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true,
        conflicts_with = "auth_token_file"
    )]
    pub auth_token: Option<String>,

    /// File of bearer tokens, one per line, each valid (blank lines and lines starting with
    /// # are skipped): write the new token beside the old, move clients over, then remove
    /// the old. Read again when it changes or on SIGHUP (default: none)
    #[arg(long, env = "SNOWMINT_AUTH_TOKEN_FILE", value_name = "FILE")]
    pub auth_token_file: Option<PathBuf>,

    /// Certificate (PEM; a chain, leaf first, is allowed) that the HTTP, gRPC and admin
    /// ports serve TLS with, and Thrift's with --thrift-tls. Reloaded when the file changes or on
    /// SIGHUP (default: none; plain text)
    #[arg(
        long,
        env = "SNOWMINT_TLS_CERT",
        value_name = "FILE",
        help_heading = "TLS"
    )]
    pub tls_cert: Option<PathBuf>,

    /// Private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1) (default: none)
    #[arg(
        long,
        env = "SNOWMINT_TLS_KEY",
        value_name = "FILE",
        help_heading = "TLS"
    )]
    pub tls_key: Option<PathBuf>,

    /// CA certificates (PEM) that sign the clients' certificates: mutual TLS, where a
    /// client without such a certificate is refused at the handshake (default: none; no
    /// client certificate asked for)
    #[arg(
        long,
        env = "SNOWMINT_TLS_CLIENT_CA",
        value_name = "FILE",
        help_heading = "TLS"
    )]
    pub tls_client_ca: Option<PathBuf>,

    /// Serve the Thrift port over TLS too, with --tls-cert and --tls-client-ca; off by
    /// default since Twitter's clients speak plain framed Thrift (default: false)
    #[arg(
        long,
        env = "SNOWMINT_THRIFT_TLS",
        value_name = "BOOL",
        num_args = 0..=1,
        default_missing_value = "true",
        help_heading = "TLS"
    )]
    pub thrift_tls: Option<bool>,

    /// How long shutdown waits for requests in flight, in ms (default: 10000)
    #[arg(long, env = "SNOWMINT_SHUTDOWN_GRACE_MS", value_name = "MS")]
    pub shutdown_grace_ms: Option<u64>,

    /// Threads that serve requests, 1 to 1024 (default: the cores this process may run on).
    /// Fewer leave cores to other work on the machine, such as a load generator beside it
    #[arg(long, env = "SNOWMINT_WORKER_THREADS", value_name = "N")]
    pub worker_threads: Option<u64>,

    /// Where the worker id comes from: static:W, hostname, file:DIR,
    /// redis[s]://[USER:PASSWORD@]HOST:PORT, redis[s]+sentinel://HOST:PORT[,HOST:PORT...]/MASTER,
    /// etcd[s]://[USER@]HOST:PORT[,HOST:PORT...], postgres://USER@HOST:PORT/DB[?sslmode=verify-full]
    /// or zookeeper[s]://[USER@]HOST:PORT[,HOST:PORT...]/PATH; the s forms speak TLS
    /// (default: static: the --worker value). Files: tls_ca=, tls_cert=, tls_key=,
    /// password_file= (PostgreSQL also sslrootcert=, sslcert=, sslkey=)
    #[arg(
        long,
        env = "SNOWMINT_LEASE",
        value_name = "URL",
        help_heading = "Worker id lease",
        hide_env_values = true
    )]
    pub lease: Option<String>,

    /// This instance's name in the registry; it gets its old worker id back when free
    /// (default: from --identity-from)
    #[arg(
        long,
        env = "SNOWMINT_IDENTITY",
        value_name = "NAME",
        help_heading = "Worker id lease"
    )]
    pub identity: Option<String>,

    /// Where the identity comes from when --identity is not given: hostname, ip (the
    /// address of the interface with the default route, else of the first that is not
    /// loopback) or ip:IFACE (default: hostname)
    #[arg(
        long,
        env = "SNOWMINT_IDENTITY_FROM",
        value_name = "SOURCE",
        help_heading = "Worker id lease"
    )]
    pub identity_from: Option<String>,

    /// Lease TTL in ms (default: 10000)
    #[arg(
        long,
        env = "SNOWMINT_LEASE_TTL_MS",
        value_name = "MS",
        help_heading = "Worker id lease"
    )]
    pub lease_ttl_ms: Option<u64>,

    /// Lease renewal interval in ms (default: a third of the TTL)
    #[arg(
        long,
        env = "SNOWMINT_LEASE_RENEW_MS",
        value_name = "MS",
        help_heading = "Worker id lease"
    )]
    pub lease_renew_ms: Option<u64>,

    /// Safety margin for clock skew, taken off the TTL, in ms (default: a tenth of the TTL)
    #[arg(
        long,
        env = "SNOWMINT_LEASE_MARGIN_MS",
        value_name = "MS",
        help_heading = "Worker id lease"
    )]
    pub lease_margin_ms: Option<u64>,

    /// Started behind the high-water mark: wait until the clock passes it, or fail
    /// (default: wait)
    #[arg(
        long,
        env = "SNOWMINT_RESTART_BEHIND",
        value_name = "POLICY",
        help_heading = "Clock"
    )]
    pub restart_behind: Option<RestartBehind>,

    /// Future time a spent tick may borrow, in ms; 0 waits for the next tick (default: 0)
    #[arg(
        long,
        env = "SNOWMINT_OVERFLOW_LEAD_MS",
        value_name = "MS",
        help_heading = "Clock"
    )]
    pub overflow_lead_ms: Option<u64>,

    /// How far ahead the high-water mark is reserved, in ms (default: 1000)
    #[arg(
        long,
        env = "SNOWMINT_RESERVE_AHEAD_MS",
        value_name = "MS",
        help_heading = "Clock"
    )]
    pub reserve_ahead_ms: Option<u64>,

    /// Largest count of /v1/ids and gRPC batches (default: 100000)
    #[arg(
        long,
        env = "SNOWMINT_MAX_BATCH",
        value_name = "N",
        help_heading = "Limits"
    )]
    pub max_batch: Option<u64>,

    /// Most bytes one response of ids or serials may carry, over HTTP or gRPC (default:
    /// 33554432, 32 MiB)
    #[arg(
        long,
        env = "SNOWMINT_MAX_RESPONSE_BYTES",
        value_name = "BYTES",
        help_heading = "Limits"
    )]
    pub max_response_bytes: Option<u64>,

    /// Open connections over every port but the admin port, which has its own; beyond it
    /// new ones are refused (default: 10000)
    #[arg(
        long,
        env = "SNOWMINT_MAX_CONNECTIONS",
        value_name = "N",
        help_heading = "Limits"
    )]
    pub max_connections: Option<u64>,

    /// Longest time to receive a request head or a Thrift frame, in ms (default: 10000)
    #[arg(
        long,
        env = "SNOWMINT_HEADER_READ_TIMEOUT_MS",
        value_name = "MS",
        help_heading = "Limits"
    )]
    pub header_read_timeout_ms: Option<u64>,

    /// Longest time a connection may make no progress (no request, no response byte
    /// taken), in ms (default: 60000)
    #[arg(
        long,
        env = "SNOWMINT_IDLE_TIMEOUT_MS",
        value_name = "MS",
        help_heading = "Limits"
    )]
    pub idle_timeout_ms: Option<u64>,

    /// Largest request head, request line and headers together, in bytes (default: 16384)
    #[arg(
        long,
        env = "SNOWMINT_MAX_HEADER_BYTES",
        value_name = "BYTES",
        help_heading = "Limits"
    )]
    pub max_header_bytes: Option<u64>,

    /// HTTP/2 streams one connection may have open, advertised in SETTINGS (default: 100)
    #[arg(
        long,
        env = "SNOWMINT_MAX_CONCURRENT_STREAMS",
        value_name = "N",
        help_heading = "Limits"
    )]
    pub max_concurrent_streams: Option<u64>,

    /// Ids being issued or waiting in responses, over all connections (default: 4194304)
    #[arg(
        long,
        env = "SNOWMINT_MAX_IDS_IN_FLIGHT",
        value_name = "N",
        help_heading = "Limits"
    )]
    pub max_ids_in_flight: Option<u64>,

    /// Ids being issued or waiting in responses, on one connection (default: 262144, or
    /// max_batch if larger)
    #[arg(
        long,
        env = "SNOWMINT_MAX_IDS_IN_FLIGHT_PER_CONNECTION",
        value_name = "N",
        help_heading = "Limits"
    )]
    pub max_ids_in_flight_per_connection: Option<u64>,

    /// Response bytes one HTTP/2 stream may buffer for a slow reader (default: 65536)
    #[arg(
        long,
        env = "SNOWMINT_STREAM_BUFFER_BYTES",
        value_name = "BYTES",
        help_heading = "Limits"
    )]
    pub stream_buffer_bytes: Option<u64>,

    /// Time any response of ids or serials has to drain before its rate counts, in ms; a
    /// response not taken by this plus its bytes at min_drain_bytes_per_sec gives its ids'
    /// room back and is dropped (default: 2000)
    #[arg(
        long,
        env = "SNOWMINT_DRAIN_GRACE_MS",
        value_name = "MS",
        help_heading = "Limits"
    )]
    pub drain_grace_ms: Option<u64>,

    /// Slowest read, in bytes a second, at which a response's ids keep their room in
    /// max_ids_in_flight (default: 1048576)
    #[arg(
        long,
        env = "SNOWMINT_MIN_DRAIN_BYTES_PER_SEC",
        value_name = "BYTES",
        help_heading = "Limits"
    )]
    pub min_drain_bytes_per_sec: Option<u64>,

    /// Reverse proxies whose X-Forwarded-For names the client for the fair shares of
    /// max_ids_in_flight: addresses or networks, comma-separated, such as
    /// "10.0.0.0/8, 192.168.1.7" (default: none; every peer address is a client)
    #[arg(
        long,
        env = "SNOWMINT_TRUSTED_PROXIES",
        value_name = "NETS",
        help_heading = "Limits"
    )]
    pub trusted_proxies: Option<TrustedProxies>,
}

/// Which layout ids have: a preset or custom widths, with another tick or epoch if given.
/// Every command that reads or issues ids takes this group.
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args, Deserialize)]
pub struct LayoutSettings {
    /// Layout: a preset (twitter, discord, instagram, sonyflake, tsid, mastodon; baidu ran
    /// out in 2024) or custom:T/D/W/S, the timestamp, datacenter, worker and sequence bits
    /// from high to low, adding up to 63 or 64 (default: twitter)
    #[arg(
        long,
        env = "SNOWMINT_LAYOUT",
        value_name = "LAYOUT",
        help_heading = "Ids"
    )]
    pub layout: Option<String>,

    /// Epoch: ms since the Unix epoch, or an RFC 3339 time such as 2020-01-01T00:00:00Z;
    /// never in the future (default: the layout's)
    #[arg(
        long,
        env = "SNOWMINT_EPOCH",
        value_name = "MS|RFC3339",
        help_heading = "Ids"
    )]
    pub epoch: Option<String>,

    /// Milliseconds per tick of the timestamp field (default: the preset's own; 1 for a
    /// custom layout)
    #[arg(
        long,
        env = "SNOWMINT_TICK_MS",
        value_name = "MS",
        help_heading = "Ids"
    )]
    pub tick_ms: Option<u64>,
}

impl LayoutSettings {
    /// The layout's name as given, or the default's.
    #[must_use]
    pub fn name(&self) -> &str {
        self.layout.as_deref().unwrap_or(DEFAULT_LAYOUT)
    }
}

/// Where in its fleet a process issues ids: its datacenter and worker id, the fleet whose
/// worker ids it shares, and the directory of its high-water marks. Every command that
/// issues ids takes this group.
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args, Deserialize)]
pub struct PlaceSettings {
    /// Datacenter id (default: 0)
    #[arg(
        long,
        env = "SNOWMINT_DATACENTER",
        value_name = "D",
        help_heading = "Ids"
    )]
    pub datacenter: Option<u64>,

    /// Worker id (default: 0). Two processes with the same worker id and different state
    /// directories, or on different hosts, issue the same ids: give each its own, or let
    /// `serve --lease` hand them out
    #[arg(long, env = "SNOWMINT_WORKER", value_name = "W", help_heading = "Ids")]
    pub worker: Option<u64>,

    /// Directory of the high-water-mark files (default: $XDG_STATE_HOME/snowmint, else
    /// ~/.local/state/snowmint, else <temp dir>/snowmint-<uid>; created with mode 0700)
    #[arg(
        long,
        env = "SNOWMINT_STATE_DIR",
        value_name = "DIR",
        help_heading = "Ids"
    )]
    pub state_dir: Option<PathBuf>,

    /// The fleet: the pool of worker ids shared with the rest of it, and the one layout it
    /// issues. A process of another layout on the same registry or state directory needs a
    /// fleet name of its own (default: default)
    #[arg(
        long,
        env = "SNOWMINT_FLEET",
        value_name = "NAME",
        help_heading = "Ids"
    )]
    pub fleet: Option<String>,
}

/// Where the ids' time comes from, and what is done when the clock goes back: the
/// policies every command that issues ids takes, checked into
/// [`ClockPolicies`](crate::ClockPolicies).
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args, Deserialize)]
pub struct ClockSettings {
    /// Where the ids' time comes from: monotonic, wall or counter (default: monotonic)
    #[arg(
        long,
        env = "SNOWMINT_CLOCK",
        value_name = "MODE",
        value_parser = clock_mode(),
        help_heading = "Clock"
    )]
    pub clock: Option<ClockMode>,

    /// What to do when the clock goes back (default: wait)
    #[arg(
        long,
        env = "SNOWMINT_ROLLBACK",
        value_name = "POLICY",
        help_heading = "Clock"
    )]
    pub rollback: Option<RollbackSetting>,

    /// Longest wait of the wait and spare rollback policies, in ms (default: 5000)
    #[arg(
        long,
        env = "SNOWMINT_ROLLBACK_WAIT_MS",
        value_name = "MS",
        help_heading = "Clock"
    )]
    pub rollback_wait_ms: Option<u64>,

    /// Where each tick's sequence starts (default: zero)
    #[arg(
        long,
        env = "SNOWMINT_SEQUENCE_START",
        value_name = "START",
        help_heading = "Clock"
    )]
    pub sequence_start: Option<SequenceStartSetting>,
}

impl Settings {
    /// Reads a TOML file.
    ///
    /// # Errors
    ///
    /// The file cannot be read, is not TOML, has an unknown key or a mistyped value.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint_server::Settings;
    ///
    /// let err = Settings::from_file("/nonexistent/snowmint.toml".as_ref()).unwrap_err();
    /// assert_eq!(err.to_string(), "cannot read config file /nonexistent/snowmint.toml");
    /// assert!(std::error::Error::source(&err).is_some());
    /// ```
    pub fn from_file(path: &Path) -> Result<Settings, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Settings::from_toml(&text, path)
    }

    /// Parses TOML text; `path` only names it in errors, which give the line at fault.
    ///
    /// # Errors
    ///
    /// As [`Settings::from_file`], but for text.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint_server::Settings;
    ///
    /// let err = Settings::from_toml("wroker = 3", "snowmint.toml".as_ref()).unwrap_err();
    /// assert!(err.to_string().starts_with(
    ///     "config file snowmint.toml: line 1, `wroker = ***`: unknown field `wroker`, expected one of "
    /// ), "{err}");
    /// ```
    pub fn from_toml(text: &str, path: &Path) -> Result<Settings, ConfigError> {
        Settings::read_toml(text).map_err(|(message, span)| ConfigError::Parse {
            path: path.to_path_buf(),
            message: at_line(text, message.trim_end(), span),
        })
    }

    /// Each group's keys, read from the one flat file; a key no group has is refused at its
    /// line, as a parser that knew the whole would refuse it. The error: the parser's
    /// message and the span it points at.
    fn read_toml(text: &str) -> Result<Settings, (String, Option<Range<usize>>)> {
        let fault = |e: toml::de::Error| (e.message().to_string(), e.span());
        let table = toml::de::DeTable::parse(text).map_err(fault)?;
        let known = Settings::keys();
        if let Some(key) = table
            .get_ref()
            .keys()
            .find(|key| !known.iter().any(|k| k == key.get_ref()))
        {
            let expected = known.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>();
            let message = format!(
                "unknown field `{}`, expected one of {}",
                key.get_ref(),
                expected.join(", ")
            );
            return Err((message, Some(key.span())));
        }
        Ok(Settings {
            layout: toml::from_str(text).map_err(fault)?,
            place: toml::from_str(text).map_err(fault)?,
            serve: toml::from_str(text).map_err(fault)?,
            clock: toml::from_str(text).map_err(fault)?,
        })
    }

    /// Every key, in the order `--help` gives them: the flags' names with underscores.
    fn keys() -> Vec<String> {
        Settings::augment_args(clap::Command::new("serve"))
            .get_arguments()
            .map(|arg| arg.get_id().to_string())
            .collect()
    }
}

/// The parser's message after the line it points at, so the key at fault is in view: the
/// parser's own rendering spans several lines, and an error is one line.
fn at_line(text: &str, message: &str, span: Option<Range<usize>>) -> String {
    let message = message.replace('\n', " ");
    let Some(start) = span.map(|span| span.start) else {
        return message;
    };
    if !text.is_char_boundary(start) {
        return message;
    }
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let number = text[..start].matches('\n').count() + 1;
    let line = shown_line(text[line_start..line_end].trim());
    format!("line {number}, `{line}`: {message}")
}

/// The keys whose values are secrets: the bearer token, and the lease URL, which may hold
/// a registry's password.
const SECRET_KEYS: [&str; 2] = ["auth_token", "lease"];

/// A line of the file as an error may show it: whole when it sets a known key that holds
/// no secret; otherwise its key alone, the value hidden (a misspelled key may hold a
/// secret too).
fn shown_line(line: &str) -> String {
    let key = line
        .split('=')
        .next()
        .unwrap_or("")
        .trim()
        .trim_matches(|c| c == '"' || c == '\'');
    let known = Settings::keys();
    if known.iter().any(|k| k == key) && !SECRET_KEYS.contains(&key) {
        line.to_string()
    } else if line.contains('=') {
        format!("{key} = ***")
    } else if line.starts_with('[') {
        // A table's header.
        line.to_string()
    } else {
        "***".to_string()
    }
}
