//! Configuration: a TOML file, `SNOWMINT_*` variables and flags, merged and then validated
//! once, with errors that name the key, the value and the rule.
//!
//! [`Settings`] is the raw layer (every key optional, as written); [`Config`] is what a
//! server runs on. The binary fills a `Settings` from its flags and environment,
//! [`Settings::overlay`]s it on the file's, and converts with `Config::try_from`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use snowmint::{Layout, OverflowPolicy, RollbackPolicy, SequenceStart};
use snowmint_lease::LeaseSettings;

use crate::Limits;

/// A configuration key that could not be used, or a file that could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file {path}: {message}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What the system said.
        message: String,
    },
    /// The file is not valid TOML, or has an unknown key or a value of the wrong type.
    #[error("config file {path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What the TOML parser said, with the line and key.
        message: String,
    },
    /// A key has a value that breaks its rule.
    #[error("config key `{key}`: {value:?} {rule}")]
    Invalid {
        /// The key, as written in the file (flags and variables use the same names).
        key: &'static str,
        /// The value given.
        value: String,
        /// The rule it breaks.
        rule: String,
    },
}

pub(crate) fn invalid(key: &'static str, value: impl ToString, rule: impl ToString) -> ConfigError {
    ConfigError::Invalid {
        key,
        value: value.to_string(),
        rule: rule.to_string(),
    }
}

/// Every key, optional, as written in a file or given by flags and variables.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// HTTP listen address (default `127.0.0.1:8080`; port 0 picks a free port).
    pub http_addr: Option<String>,
    /// gRPC listen address (default `127.0.0.1:50051`; `off` disables gRPC).
    pub grpc_addr: Option<String>,
    /// Directory of the high-water-mark files (default: the per-user state directory).
    pub state_dir: Option<PathBuf>,
    /// Datacenter id (default 0).
    pub datacenter: Option<u64>,
    /// Worker id (default 0).
    pub worker: Option<u64>,
    /// Layout preset (default `twitter`).
    pub layout: Option<String>,
    /// Epoch: ms since the Unix epoch, or RFC 3339 (default: the preset's).
    pub epoch: Option<String>,
    /// Bearer token required on every endpoint but `/healthz` and `/readyz` (default: none).
    pub auth_token: Option<String>,
    /// Largest `count` of `/v1/ids` and gRPC batches (default 100000).
    pub max_batch: Option<u64>,
    /// Most bytes one response of ids or serials may carry, over HTTP or gRPC (default
    /// 33554432, 32 MiB).
    pub max_response_bytes: Option<u64>,
    /// How long shutdown waits for requests in flight, in ms (default 10000).
    pub shutdown_grace_ms: Option<u64>,
    /// On start behind the high-water mark: `wait` until the clock passes it, or `fail`
    /// (default `wait`).
    pub restart_behind: Option<String>,
    /// Clock rollback policy: `refuse`, `wait`, `logical` or `spare` (default `wait`).
    pub rollback: Option<String>,
    /// Longest wait of the `wait` and `spare` rollback policies, in ms (default 5000).
    pub rollback_wait_ms: Option<u64>,
    /// Future ticks a spent tick may borrow, in ms; 0 waits for the next tick (default 0).
    pub overflow_lead_ms: Option<u64>,
    /// Sequence start: `zero`, `random` or `continue` (default `zero`).
    pub sequence_start: Option<String>,
    /// How far ahead the high-water mark is reserved, in ms (default 1000).
    pub reserve_ahead_ms: Option<u64>,
    /// Where the worker id comes from: `static:W`, `hostname`, `file:DIR`, `redis://...`,
    /// `etcd://host:port` or `postgres://...` (default: `static:` the `worker` key).
    pub lease: Option<String>,
    /// The instance's name in the registry, which gets its old worker id back when free
    /// (default: the host name).
    pub identity: Option<String>,
    /// Lease TTL in ms (default 10000).
    pub lease_ttl_ms: Option<u64>,
    /// Lease renewal interval in ms (default: a third of the TTL).
    pub lease_renew_ms: Option<u64>,
    /// Safety margin for clock skew, subtracted from the TTL, in ms (default: a tenth of
    /// the TTL).
    pub lease_margin_ms: Option<u64>,
    /// Open connections over both ports; beyond it new ones are refused (default 10000).
    pub max_connections: Option<u64>,
    /// Longest time to receive a request head, in ms (default 10000).
    pub header_read_timeout_ms: Option<u64>,
    /// Longest time a connection may make no progress, in ms (default 60000).
    pub idle_timeout_ms: Option<u64>,
    /// Largest request head, request line and headers together, in bytes (default 16384).
    pub max_header_bytes: Option<u64>,
    /// HTTP/2 streams one connection may have open (default 100).
    pub max_concurrent_streams: Option<u64>,
    /// Ids being issued or waiting in responses, over all connections (default 4194304).
    pub max_ids_in_flight: Option<u64>,
    /// Ids being issued or waiting in responses, on one connection (default 262144, or
    /// `max_batch` if larger).
    pub max_ids_in_flight_per_connection: Option<u64>,
    /// Response bytes one HTTP/2 stream may buffer for a slow reader (default 65536).
    pub stream_buffer_bytes: Option<u64>,
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
    /// let err = Settings::from_toml("wroker = 3", "snowmint.toml".as_ref()).unwrap_err();
    /// assert!(err.to_string().contains("unknown field `wroker`"), "{err}");
    /// ```
    pub fn from_file(path: &Path) -> Result<Settings, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        Settings::from_toml(&text, path)
    }

    /// Parses TOML text; `path` only names it in errors.
    ///
    /// # Errors
    ///
    /// As [`Settings::from_file`], but for text.
    pub fn from_toml(text: &str, path: &Path) -> Result<Settings, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: e.to_string().trim_end().replace('\n', " "),
        })
    }

    /// `self` with every key that `over` sets replaced by `over`'s value.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint_server::Settings;
    ///
    /// let file = Settings { worker: Some(1), datacenter: Some(2), ..Settings::default() };
    /// let flags = Settings { worker: Some(7), ..Settings::default() };
    /// let merged = file.overlay(flags);
    /// assert_eq!((merged.worker, merged.datacenter), (Some(7), Some(2)));
    /// ```
    #[must_use]
    pub fn overlay(self, over: Settings) -> Settings {
        Settings {
            http_addr: over.http_addr.or(self.http_addr),
            grpc_addr: over.grpc_addr.or(self.grpc_addr),
            state_dir: over.state_dir.or(self.state_dir),
            datacenter: over.datacenter.or(self.datacenter),
            worker: over.worker.or(self.worker),
            layout: over.layout.or(self.layout),
            epoch: over.epoch.or(self.epoch),
            auth_token: over.auth_token.or(self.auth_token),
            max_batch: over.max_batch.or(self.max_batch),
            max_response_bytes: over.max_response_bytes.or(self.max_response_bytes),
            shutdown_grace_ms: over.shutdown_grace_ms.or(self.shutdown_grace_ms),
            restart_behind: over.restart_behind.or(self.restart_behind),
            rollback: over.rollback.or(self.rollback),
            rollback_wait_ms: over.rollback_wait_ms.or(self.rollback_wait_ms),
            overflow_lead_ms: over.overflow_lead_ms.or(self.overflow_lead_ms),
            sequence_start: over.sequence_start.or(self.sequence_start),
            reserve_ahead_ms: over.reserve_ahead_ms.or(self.reserve_ahead_ms),
            lease: over.lease.or(self.lease),
            identity: over.identity.or(self.identity),
            lease_ttl_ms: over.lease_ttl_ms.or(self.lease_ttl_ms),
            lease_renew_ms: over.lease_renew_ms.or(self.lease_renew_ms),
            lease_margin_ms: over.lease_margin_ms.or(self.lease_margin_ms),
            max_connections: over.max_connections.or(self.max_connections),
            header_read_timeout_ms: over.header_read_timeout_ms.or(self.header_read_timeout_ms),
            idle_timeout_ms: over.idle_timeout_ms.or(self.idle_timeout_ms),
            max_header_bytes: over.max_header_bytes.or(self.max_header_bytes),
            max_concurrent_streams: over.max_concurrent_streams.or(self.max_concurrent_streams),
            max_ids_in_flight: over.max_ids_in_flight.or(self.max_ids_in_flight),
            max_ids_in_flight_per_connection: over
                .max_ids_in_flight_per_connection
                .or(self.max_ids_in_flight_per_connection),
            stream_buffer_bytes: over.stream_buffer_bytes.or(self.stream_buffer_bytes),
        }
    }
}

/// What the server does when it starts with its clock behind the high-water mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestartBehind {
    /// Serve, answer `/readyz` with 503 and the reason, and issue once the clock passes.
    Wait,
    /// Exit with an error naming the gap.
    Fail,
}

/// A validated configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// HTTP listen address.
    pub http_addr: SocketAddr,
    /// gRPC listen address, or `None` when disabled.
    pub grpc_addr: Option<SocketAddr>,
    /// Directory of the high-water-mark files.
    pub state_dir: PathBuf,
    /// The layout, with its epoch.
    pub layout: Layout,
    /// Datacenter id, within the layout's range.
    pub datacenter: u64,
    /// Worker id, within the layout's range.
    pub worker: u64,
    /// Bearer token, if required.
    pub auth_token: Option<String>,
    /// Largest batch.
    pub max_batch: u64,
    /// Most bytes one response of ids or serials may carry.
    pub max_response_bytes: u64,
    /// Grace period of shutdown.
    pub shutdown_grace: Duration,
    /// Start-up behaviour behind the high-water mark.
    pub restart_behind: RestartBehind,
    /// Clock rollback policy.
    pub rollback: RollbackPolicy,
    /// Overflow policy.
    pub overflow: OverflowPolicy,
    /// Sequence start policy.
    pub sequence_start: SequenceStart,
    /// Reservation window of the high-water mark.
    pub reserve_ahead: Duration,
    /// The lease URL.
    pub lease: String,
    /// The instance's name in the registry.
    pub identity: String,
    /// How leases are kept.
    pub lease_settings: LeaseSettings,
    /// What one client may take: connections, timeouts, header bytes, streams, ids.
    pub limits: Limits,
}

/// The largest batch a request may ask for: a million ids is 20 MB of JSON.
const BATCH_LIMIT: u64 = 1_000_000;

/// The default response budget: room for the largest batch, a million ids, in any format
/// (22 MB of decimal JSON), and for 100,000 serials of the longest kind.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 32 * 1024 * 1024;

/// The response budget's bounds: a kibibyte holds one id or serial in any format; past a
/// gibibyte one response holds more memory than an id service should spend on a request.
const RESPONSE_BYTES: std::ops::RangeInclusive<u64> = 1024..=1024 * 1024 * 1024;

/// The longest reservation window: after a crash, a restart waits out what was reserved.
const RESERVE_AHEAD_MAX_MS: u64 = 60_000;
/// The longest wait for a clock that went back: a request waits that long, and past a
/// minute its client has given up.
const ROLLBACK_WAIT_MAX_MS: u64 = 60_000;
/// The longest shutdown grace: orchestrators stop a process long before ten minutes
/// (Kubernetes after 30 s, systemd after 90 s, by default).
const SHUTDOWN_GRACE_MAX_MS: u64 = 600_000;
/// The longest lease TTL: a crashed holder's worker id stays unusable that long.
const LEASE_TTL_MAX_MS: u64 = 600_000;

/// A `key` of `value` ms above `max` ms: the error names both and says what it bounds.
fn at_most(key: &'static str, value: u64, max: u64, why: &str) -> Result<u64, ConfigError> {
    if value > max {
        return Err(invalid(
            key,
            value,
            format!("must be at most {max} ms: {why}"),
        ));
    }
    Ok(value)
}

fn addr(
    key: &'static str,
    value: Option<String>,
    default: &str,
) -> Result<SocketAddr, ConfigError> {
    let text = value.unwrap_or_else(|| default.to_string());
    text.parse().map_err(|_| {
        invalid(
            key,
            &text,
            "is not an address like 127.0.0.1:8080 or [::1]:0",
        )
    })
}

impl TryFrom<Settings> for Config {
    type Error = ConfigError;

    fn try_from(s: Settings) -> Result<Config, ConfigError> {
        // The limits are read last, once the largest batch is known.
        let limit_keys = s.clone();
        let http_addr = addr("http_addr", s.http_addr, "127.0.0.1:8080")?;
        let grpc_addr = match s.grpc_addr.as_deref() {
            Some("off") => None,
            _ => Some(addr("grpc_addr", s.grpc_addr, "127.0.0.1:50051")?),
        };
        let name = s.layout.unwrap_or_else(|| "twitter".into());
        let presets = Layout::PRESETS.map(|l| l.name()).join(", ");
        let mut layout = Layout::by_name(&name).map_err(|_| {
            invalid(
                "layout",
                &name,
                format!("is not a layout: expected one of {presets}"),
            )
        })?;
        if layout.is_decode_only() {
            return Err(invalid(
                "layout",
                &name,
                "uses bit 63 and can decode ids but not generate them; use twitter, sonyflake or baidu",
            ));
        }
        if let Some(epoch) = &s.epoch {
            let now = snowmint::UnixMs(snowmint::Clock::now_ms(&snowmint::WallClock));
            let ms = snowmint::UnixMs::parse_epoch(epoch, now)
                .map_err(|e| invalid("epoch", epoch, rule_after_value(&e.to_string(), epoch)))?
                .0;
            layout = layout
                .with_epoch_ms(ms)
                .map_err(|e| invalid("epoch", epoch, e))?;
        }
        let runs_out_ms = layout.capacity().runs_out_ms;
        if runs_out_ms <= snowmint::Clock::now_ms(&snowmint::WallClock) {
            let end = snowmint::UnixMs(runs_out_ms);
            let rule = "so no id can be issued; use another layout or a later epoch";
            // The epoch moves the end too, so the key to change is the one that was set.
            return Err(match &s.epoch {
                Some(epoch) => invalid(
                    "epoch",
                    epoch,
                    format!("makes layout {name}'s time field run out on {end}, {rule}"),
                ),
                None => invalid(
                    "layout",
                    &name,
                    format!("has a time field that ran out on {end}, {rule}"),
                ),
            });
        }
        let datacenter = s.datacenter.unwrap_or(0);
        if datacenter > layout.max_datacenter() {
            return Err(invalid(
                "datacenter",
                datacenter,
                format!(
                    "is out of range 0..={} for layout {}",
                    layout.max_datacenter(),
                    layout.name()
                ),
            ));
        }
        let lease = match (&s.lease, s.worker) {
            (None, worker) => format!("static:{}", worker.unwrap_or(0)),
            (Some(url), Some(worker)) if !url.starts_with("static:") => {
                return Err(invalid(
                    "worker",
                    worker,
                    format!(
                        "conflicts with lease {url:?}, which chooses the worker id; drop one of them"
                    ),
                ));
            }
            (Some(url), _) => {
                snowmint_lease::registry_from_url(url)
                    .map_err(|e| invalid("lease", url, rule_after_value(&e.to_string(), url)))?;
                url.clone()
            }
        };
        let worker = match lease.strip_prefix("static:").map(str::parse::<u64>) {
            Some(Ok(w)) if s.worker.is_some_and(|given| given != w) => {
                return Err(invalid(
                    "worker",
                    s.worker.unwrap_or(0),
                    format!("conflicts with lease {lease:?}"),
                ));
            }
            Some(Ok(w)) => w,
            _ => 0,
        };
        if worker > layout.max_worker() {
            return Err(invalid(
                "worker",
                worker,
                format!(
                    "is out of range 0..={} for layout {}",
                    layout.max_worker(),
                    layout.name()
                ),
            ));
        }
        let max_batch = s.max_batch.unwrap_or(100_000);
        if !(1..=BATCH_LIMIT).contains(&max_batch) {
            return Err(invalid(
                "max_batch",
                max_batch,
                format!("is out of range 1..={BATCH_LIMIT}"),
            ));
        }
        let max_response_bytes = s.max_response_bytes.unwrap_or(DEFAULT_MAX_RESPONSE_BYTES);
        if !RESPONSE_BYTES.contains(&max_response_bytes) {
            return Err(invalid(
                "max_response_bytes",
                max_response_bytes,
                format!(
                    "is out of range {}..={}",
                    RESPONSE_BYTES.start(),
                    RESPONSE_BYTES.end()
                ),
            ));
        }
        let restart_behind = match s.restart_behind.as_deref().unwrap_or("wait") {
            "wait" => RestartBehind::Wait,
            "fail" => RestartBehind::Fail,
            other => return Err(invalid("restart_behind", other, "must be wait or fail")),
        };
        let wait = Duration::from_millis(at_most(
            "rollback_wait_ms",
            s.rollback_wait_ms.unwrap_or(5_000),
            ROLLBACK_WAIT_MAX_MS,
            "a request waits this long for a clock that went back",
        )?);
        let rollback = match s.rollback.as_deref().unwrap_or("wait") {
            "refuse" => RollbackPolicy::Refuse,
            "wait" => RollbackPolicy::WaitUpTo(wait),
            "logical" => RollbackPolicy::LogicalClock,
            "spare" => RollbackPolicy::SpareSequence {
                then_wait_up_to: wait,
            },
            other => {
                return Err(invalid(
                    "rollback",
                    other,
                    "must be refuse, wait, logical or spare",
                ));
            }
        };
        let overflow = match s.overflow_lead_ms.unwrap_or(0) {
            0 => OverflowPolicy::Wait,
            ms => OverflowPolicy::Borrow {
                lead: Duration::from_millis(ms),
            },
        };
        let sequence_start = match s.sequence_start.as_deref().unwrap_or("zero") {
            "zero" => SequenceStart::Zero,
            // Leaf's cure for all-even ids at low traffic: start below a small bound, so
            // most of the tick stays free for bursts.
            "random" => SequenceStart::Random {
                below: (layout.max_sequence() + 1).min(16),
            },
            "continue" => SequenceStart::Continue,
            other => {
                return Err(invalid(
                    "sequence_start",
                    other,
                    "must be zero, random or continue",
                ));
            }
        };
        let reserve_ahead_ms = s.reserve_ahead_ms.unwrap_or(1_000);
        if reserve_ahead_ms < layout.tick_ms() {
            return Err(invalid(
                "reserve_ahead_ms",
                reserve_ahead_ms,
                format!("must be at least one tick ({} ms)", layout.tick_ms()),
            ));
        }
        at_most(
            "reserve_ahead_ms",
            reserve_ahead_ms,
            RESERVE_AHEAD_MAX_MS,
            "after a crash, a restart waits out what was reserved",
        )?;
        // Borrowed ids stay within the window the mark reserves ahead anyway, so a burst
        // cannot push the mark far ahead: a restart waits out at most twice the window.
        at_most(
            "overflow_lead_ms",
            s.overflow_lead_ms.unwrap_or(0),
            reserve_ahead_ms,
            "ids borrowed ahead of the clock must stay within reserve_ahead_ms",
        )?;
        let ttl_ms = at_most(
            "lease_ttl_ms",
            s.lease_ttl_ms.unwrap_or(10_000),
            LEASE_TTL_MAX_MS,
            "a crashed holder's worker id stays unusable for the TTL",
        )?;
        let lease_settings = LeaseSettings {
            ttl: Duration::from_millis(ttl_ms),
            renew_every: Duration::from_millis(s.lease_renew_ms.unwrap_or(ttl_ms / 3)),
            safety_margin: Duration::from_millis(s.lease_margin_ms.unwrap_or(ttl_ms / 10)),
        };
        lease_settings
            .validate()
            .map_err(|e| invalid("lease_ttl_ms", ttl_ms, e.to_string()))?;
        let identity = s.identity.unwrap_or_else(snowmint_lease::hostname);
        if identity.is_empty() || identity.len() > 200 {
            return Err(invalid(
                "identity",
                &identity,
                "must be 1 to 200 characters",
            ));
        }
        if let Some(token) = &s.auth_token
            && token.trim().is_empty()
        {
            return Err(invalid("auth_token", "", "must not be empty"));
        }
        let limits = Limits::from_settings(&limit_keys, max_batch)?;
        Ok(Config {
            http_addr,
            grpc_addr,
            state_dir: s
                .state_dir
                .unwrap_or_else(snowmint_lease::default_state_dir),
            layout,
            datacenter,
            worker,
            auth_token: s.auth_token,
            max_batch,
            max_response_bytes,
            shutdown_grace: Duration::from_millis(at_most(
                "shutdown_grace_ms",
                s.shutdown_grace_ms.unwrap_or(10_000),
                SHUTDOWN_GRACE_MAX_MS,
                "requests in flight are waited for this long at shutdown",
            )?),
            restart_behind,
            rollback,
            overflow,
            sequence_start,
            reserve_ahead: Duration::from_millis(reserve_ahead_ms),
            lease,
            identity,
            lease_settings,
            limits,
        })
    }
}

/// The part of a message after the value it names, so it is not said twice.
fn rule_after_value(message: &str, value: &str) -> String {
    message.split_once(&format!("{value:?}")).map_or_else(
        || message.to_string(),
        |(_, rest)| rest.trim_start_matches(':').trim().to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(toml: &str) -> Result<Config, ConfigError> {
        Config::try_from(Settings::from_toml(toml, "test.toml".as_ref())?)
    }

    #[test]
    fn defaults_serve_on_loopback() {
        let c = config("").unwrap();
        assert_eq!(c.http_addr, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(c.grpc_addr, Some("127.0.0.1:50051".parse().unwrap()));
        assert_eq!((c.datacenter, c.worker, c.layout), (0, 0, Layout::TWITTER));
        assert_eq!(c.max_batch, 100_000);
        assert_eq!(c.max_response_bytes, 32 * 1024 * 1024);
    }

    #[test]
    fn durations_up_to_their_bounds_are_taken() {
        let c = config(
            "overflow_lead_ms = 60000\nreserve_ahead_ms = 60000\nrollback_wait_ms = 60000\nshutdown_grace_ms = 600000\nlease_ttl_ms = 600000",
        )
        .unwrap();
        assert_eq!(
            c.overflow,
            OverflowPolicy::Borrow {
                lead: Duration::from_secs(60)
            }
        );
        assert_eq!(c.reserve_ahead, Duration::from_secs(60));
        assert_eq!(
            c.rollback,
            RollbackPolicy::WaitUpTo(Duration::from_secs(60))
        );
        assert_eq!(c.shutdown_grace, Duration::from_secs(600));
        assert_eq!(c.lease_settings.ttl, Duration::from_secs(600));
    }

    #[test]
    fn errors_name_the_key_the_value_and_the_rule() {
        let cases = [
            (
                "worker = 40",
                "config key `worker`: \"40\" is out of range 0..=31 for layout twitter",
            ),
            (
                "datacenter = 32",
                "config key `datacenter`: \"32\" is out of range 0..=31 for layout twitter",
            ),
            (
                "http_addr = \"localhost\"",
                "config key `http_addr`: \"localhost\" is not an address like 127.0.0.1:8080 or [::1]:0",
            ),
            (
                "layout = \"discord\"",
                "config key `layout`: \"discord\" uses bit 63 and can decode ids but not generate them; use twitter, sonyflake or baidu",
            ),
            (
                "max_batch = 0",
                "config key `max_batch`: \"0\" is out of range 1..=1000000",
            ),
            (
                "max_response_bytes = 100",
                "config key `max_response_bytes`: \"100\" is out of range 1024..=1073741824",
            ),
            (
                "overflow_lead_ms = 18446744073709551615",
                "config key `overflow_lead_ms`: \"18446744073709551615\" must be at most 1000 ms: ids borrowed ahead of the clock must stay within reserve_ahead_ms",
            ),
            (
                "overflow_lead_ms = 3000\nreserve_ahead_ms = 2000",
                "config key `overflow_lead_ms`: \"3000\" must be at most 2000 ms: ids borrowed ahead of the clock must stay within reserve_ahead_ms",
            ),
            (
                "reserve_ahead_ms = 60001",
                "config key `reserve_ahead_ms`: \"60001\" must be at most 60000 ms: after a crash, a restart waits out what was reserved",
            ),
            (
                "rollback_wait_ms = 18446744073709551615",
                "config key `rollback_wait_ms`: \"18446744073709551615\" must be at most 60000 ms: a request waits this long for a clock that went back",
            ),
            (
                "shutdown_grace_ms = 600001",
                "config key `shutdown_grace_ms`: \"600001\" must be at most 600000 ms: requests in flight are waited for this long at shutdown",
            ),
            (
                "lease_ttl_ms = 18446744073709551615",
                "config key `lease_ttl_ms`: \"18446744073709551615\" must be at most 600000 ms: a crashed holder's worker id stays unusable for the TTL",
            ),
            (
                "rollback = \"ignore\"",
                "config key `rollback`: \"ignore\" must be refuse, wait, logical or spare",
            ),
            (
                "epoch = \"yesterday\"",
                "config key `epoch`: \"yesterday\" is neither milliseconds since the Unix epoch nor an RFC 3339 time",
            ),
            (
                "auth_token = \" \"",
                "config key `auth_token`: \"\" must not be empty",
            ),
        ];
        for (toml, expected) in cases {
            assert_eq!(config(toml).unwrap_err().to_string(), expected, "{toml}");
        }
        let err = config("epoch = \"2999-01-01T00:00:00Z\"")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("config key `epoch`: \"2999-01-01T00:00:00Z\" is in the future"),
            "{err}"
        );
        assert_eq!(
            config("layout = \"flickr\"").unwrap_err().to_string(),
            "config key `layout`: \"flickr\" is not a layout: expected one of twitter, discord, instagram, sonyflake, baidu, tsid, mastodon"
        );
        assert_eq!(
            config("layout = \"baidu\"").unwrap_err().to_string(),
            "config key `layout`: \"baidu\" has a time field that ran out on 2024-11-20T21:24:16.000Z, so no id can be issued; use another layout or a later epoch"
        );
        // Baidu's 28 bits of seconds from 2010 ran out in 2018.
        assert_eq!(
            config("layout = \"baidu\"\nepoch = \"2010-01-01T00:00:00Z\"")
                .unwrap_err()
                .to_string(),
            "config key `epoch`: \"2010-01-01T00:00:00Z\" makes layout baidu's time field run out on 2018-07-04T21:24:16.000Z, so no id can be issued; use another layout or a later epoch"
        );
        assert!(config("layout = \"baidu\"\nepoch = \"2024-01-01T00:00:00Z\"").is_ok());
        let err = config("worker = \"three\"").unwrap_err().to_string();
        assert!(
            err.starts_with("config file test.toml: TOML parse error"),
            "{err}"
        );
    }
}
