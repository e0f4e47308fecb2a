//! [`Config`]: the settings checked, one key at a time, with each default filled in. A check
//! names the key it checks; a check between two keys names both.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use snowmint::error::LayoutChoiceError;
use snowmint::{
    Builder, Clock, ClockMode, Layout, LayoutError, OverflowPolicy, RollbackPolicy, SequenceStart,
    UnixMs, WallClock,
};
use snowmint_lease::{Fleet, IdentitySource, LeaseSettings};

use super::{
    ClockSettings, ConfigError, LayoutSettings, RestartBehind, RollbackSetting,
    SequenceStartSetting, ServeSettings, Settings, invalid, rule_after_value,
};
use crate::service::{TokenSource, Tokens};
use crate::tls::{Loaded, ServingTls};
use crate::{Limits, TrustedProxies};

/// The most threads `worker_threads` may ask for: far beyond any core count that one
/// generator (one worker id) could keep busy.
const MAX_WORKER_THREADS: u64 = 1024;

/// A validated configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// HTTP listen address.
    pub http_addr: SocketAddr,
    /// gRPC listen address, or `None` when disabled.
    pub grpc_addr: Option<SocketAddr>,
    /// Thrift listen address, or `None` when disabled (the default).
    pub thrift_addr: Option<SocketAddr>,
    /// Admin listen address (probes and metrics only, with a connection cap of its own),
    /// or `None` when disabled (the default).
    pub admin_addr: Option<SocketAddr>,
    /// Directory of the high-water-mark files.
    pub state_dir: PathBuf,
    /// The layout, with its epoch.
    pub layout: Layout,
    /// Datacenter id, within the layout's range.
    pub datacenter: u64,
    /// Worker id, within the layout's range.
    pub worker: u64,
    /// The bearer tokens, if one is required.
    pub auth: Option<Arc<Tokens>>,
    /// Largest batch.
    pub max_batch: u64,
    /// Most bytes one response of ids or serials may carry.
    pub max_response_bytes: u64,
    /// Grace period of shutdown.
    pub shutdown_grace: Duration,
    /// Threads that serve requests.
    pub worker_threads: usize,
    /// Start-up behaviour behind the high-water mark.
    pub restart_behind: RestartBehind,
    /// Where the ids' time comes from, what to do when the clock goes back, and where
    /// each tick's sequence starts.
    pub clock: ClockPolicies,
    /// Overflow policy.
    pub overflow: OverflowPolicy,
    /// Reservation window of the high-water mark.
    pub reserve_ahead: Duration,
    /// The lease URL.
    pub lease: String,
    /// The instance's name in the registry.
    pub identity: String,
    /// The pool of worker ids, and the layout, the server shares with its fleet.
    pub fleet: Fleet,
    /// How leases are kept.
    pub lease_settings: LeaseSettings,
    /// What one client may take: connections, timeouts, header bytes, streams, ids.
    pub limits: Limits,
    /// Proxies whose `X-Forwarded-For` names the client for the fair shares of ids in
    /// flight.
    pub trusted_proxies: TrustedProxies,
    /// The certificate, key and client CA the ports serve TLS with; `None` for plain text.
    pub tls: Option<ServingTls>,
}

const DEFAULT_HTTP_ADDR: &str = "127.0.0.1:8080";
const DEFAULT_GRPC_ADDR: &str = "127.0.0.1:50051";
/// The setting of `grpc_addr`, `thrift_addr` and `admin_addr` that serves no gRPC, no
/// Thrift, no admin port.
const OFF: &str = "off";

/// The default largest batch: 100,000 ids are about 2 MB of JSON.
const DEFAULT_MAX_BATCH: u64 = 100_000;
/// The largest batch a request may ask for: a million ids is 20 MB of JSON.
const BATCH_LIMIT: u64 = 1_000_000;

/// The default response budget: room for the largest batch, a million ids, in any format
/// (22 MB of decimal JSON), and for 100,000 serials of the longest kind.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 32 * 1024 * 1024;
/// The response budget's bounds: a kibibyte holds one id or serial in any format; past a
/// gibibyte one response holds more memory than an id service should spend on a request.
const RESPONSE_BYTES: std::ops::RangeInclusive<u64> = 1024..=1024 * 1024 * 1024;

/// Requests in flight get 10 s to finish at shutdown, well within an orchestrator's patience.
const DEFAULT_SHUTDOWN_GRACE_MS: u64 = 10_000;
/// The longest shutdown grace: orchestrators stop a process long before ten minutes
/// (Kubernetes after 30 s, systemd after 90 s, by default).
const SHUTDOWN_GRACE_MAX_MS: u64 = 600_000;

/// The core's default wait for a clock that went back.
const DEFAULT_ROLLBACK_WAIT_MS: u64 = 5_000;
/// The longest wait for a clock that went back: a request waits that long, and past a
/// minute its client has given up.
const ROLLBACK_WAIT_MAX_MS: u64 = 60_000;

/// The default reservation window: a crashed server's successor waits at most 1 s.
const DEFAULT_RESERVE_AHEAD_MS: u64 = 1_000;
/// The longest reservation window: after a crash, a restart waits out what was reserved.
const RESERVE_AHEAD_MAX_MS: u64 = 60_000;

/// The default lease TTL: a crashed holder's worker id is free again after 10 s.
const DEFAULT_LEASE_TTL_MS: u64 = 10_000;
/// The shortest lease TTL the lease keeper takes: renewals need room within it.
const LEASE_TTL_MIN_MS: u64 = 1_000;
/// The longest lease TTL: a crashed holder's worker id stays unusable that long.
const LEASE_TTL_MAX_MS: u64 = 600_000;

/// The longest identity, in bytes: registries store it in a key or a column of bounded size.
const IDENTITY_MAX_BYTES: usize = 200;

/// Leaf's cure for all-even ids at low traffic: a random start below a small bound, so most
/// of the tick stays free for bursts.
const RANDOM_START_BELOW: u64 = 16;

impl TryFrom<Settings> for Config {
    type Error = ConfigError;

    fn try_from(settings: Settings) -> Result<Config, ConfigError> {
        let Settings {
            layout,
            place,
            serve: mut s,
            clock,
        } = settings;
        let http_addr = addr("http_addr", s.http_addr.as_deref(), DEFAULT_HTTP_ADDR)?;
        let grpc_addr = match s.grpc_addr.as_deref() {
            Some(OFF) => None,
            given => Some(addr("grpc_addr", given, DEFAULT_GRPC_ADDR)?),
        };
        let thrift_addr = match s.thrift_addr.as_deref() {
            None | Some(OFF) => None,
            given => Some(addr("thrift_addr", given, OFF)?),
        };
        let admin_addr = match s.admin_addr.as_deref() {
            None | Some(OFF) => None,
            given => Some(addr("admin_addr", given, OFF)?),
        };
        let layout = chosen_layout(&layout)?;
        let datacenter = place.datacenter.unwrap_or(0);
        in_layout("datacenter", datacenter, layout.max_datacenter(), &layout)?;
        let (lease, worker) = lease_and_worker(&s, place.worker)?;
        in_layout("worker", worker, layout.max_worker(), &layout)?;
        let max_batch = s.max_batch.unwrap_or(DEFAULT_MAX_BATCH);
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
        let clock = ClockPolicies::new(&clock, &layout)?;
        let (reserve_ahead, overflow) = reservation(&s, &layout)?;
        let lease_settings = lease_settings(&s)?;
        let fleet = match place.fleet.as_deref() {
            None => Fleet::default(),
            Some(name) => Fleet::new(name)
                .map_err(|err| invalid("fleet", name, rule_after_value(&err.to_string(), name)))?,
        };
        let identity = identity(&s)?;
        if identity.is_empty() || identity.len() > IDENTITY_MAX_BYTES {
            return Err(invalid(
                "identity",
                &identity,
                format!("must be 1 to {IDENTITY_MAX_BYTES} characters"),
            ));
        }
        let auth = auth(s.auth_token.take(), s.auth_token_file.take())?;
        let tls = serving_tls(&s, thrift_addr.is_some())?;
        let limits = Limits::from_settings(&s, max_batch)?;
        let shutdown_grace_ms = at_most(
            "shutdown_grace_ms",
            s.shutdown_grace_ms.unwrap_or(DEFAULT_SHUTDOWN_GRACE_MS),
            SHUTDOWN_GRACE_MAX_MS,
            "requests in flight are waited for this long at shutdown",
        )?;
        let worker_threads = match s.worker_threads {
            None => std::thread::available_parallelism().map_or(1, usize::from),
            Some(n @ 1..=MAX_WORKER_THREADS) => n as usize,
            Some(n) => {
                return Err(invalid(
                    "worker_threads",
                    n,
                    format!("is out of range 1..={MAX_WORKER_THREADS}"),
                ));
            }
        };
        Ok(Config {
            http_addr,
            grpc_addr,
            thrift_addr,
            admin_addr,
            state_dir: place
                .state_dir
                .unwrap_or_else(snowmint_lease::default_state_dir),
            datacenter,
            worker,
            auth,
            max_batch,
            max_response_bytes,
            shutdown_grace: Duration::from_millis(shutdown_grace_ms),
            worker_threads,
            restart_behind: s.restart_behind.unwrap_or(RestartBehind::Wait),
            clock,
            overflow,
            layout,
            reserve_ahead,
            lease,
            identity,
            fleet,
            lease_settings,
            limits,
            trusted_proxies: s.trusted_proxies.unwrap_or_default(),
            tls,
        })
    }
}

/// `layout`, with `tick_ms` and moved to `epoch` if they are given: a preset or custom
/// layout whose time field has not run out.
fn chosen_layout(s: &LayoutSettings) -> Result<Layout, ConfigError> {
    let name = s.name();
    let now = UnixMs(WallClock.now_ms());
    let epoch_rule = |e: &dyn std::fmt::Display, epoch: &str| {
        invalid("epoch", epoch, rule_after_value(&e.to_string(), epoch))
    };
    let layout = Layout::chosen(name, s.tick_ms, s.epoch.as_deref(), now).map_err(|e| match e {
        LayoutChoiceError::Name(LayoutError::UnknownPreset { .. }) => {
            let presets = Layout::PRESETS.map(|l| l.name()).join(", ");
            invalid(
                "layout",
                name,
                format!("is not a layout: expected one of {presets} or custom:T/D/W/S"),
            )
        }
        LayoutChoiceError::Name(other) => {
            invalid("layout", name, rule_after_value(&other.to_string(), name))
        }
        LayoutChoiceError::TickMs { tick_ms, source } => invalid("tick_ms", tick_ms, source),
        LayoutChoiceError::EpochTime(source) => {
            epoch_rule(&source, s.epoch.as_deref().unwrap_or_default())
        }
        LayoutChoiceError::Epoch { text, source } => epoch_rule(&source, &text),
        // The core may name another part in time: its message, under the layout's key.
        other => invalid("layout", name, other),
    })?;
    let runs_out_ms = layout.capacity().runs_out_ms;
    if runs_out_ms <= now.0 {
        let end = UnixMs(runs_out_ms);
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
                name,
                format!("has a time field that ran out on {end}, {rule}"),
            ),
        });
    }
    Ok(layout)
}

/// A datacenter or worker id within what `layout` holds.
fn in_layout(key: &'static str, id: u64, max: u64, layout: &Layout) -> Result<(), ConfigError> {
    if id > max {
        return Err(invalid(
            key,
            id,
            format!("is out of range 0..={max} for layout {}", layout.name()),
        ));
    }
    Ok(())
}

/// The bearer tokens of `auth_token` or `auth_token_file`, read now so that a broken file
/// stops the start.
fn auth(token: Option<String>, file: Option<PathBuf>) -> Result<Option<Arc<Tokens>>, ConfigError> {
    let source = match (token, file) {
        (None, None) => return Ok(None),
        (Some(_), Some(file)) => {
            return Err(invalid(
                "auth_token_file",
                file.display(),
                "conflicts with auth_token: give one of them (the file may hold several tokens)",
            ));
        }
        (Some(token), None) => TokenSource::Given(token),
        (None, Some(file)) => TokenSource::File(file),
    };
    let tokens = Tokens::load(&source).map_err(|why| match &source {
        // The value is not repeated: a token is a secret, even a blank or malformed one.
        TokenSource::Given(_) => invalid("auth_token", "", why),
        TokenSource::File(file) => invalid("auth_token_file", file.display(), why),
    })?;
    Ok(Some(Arc::new(tokens)))
}

/// The lease URL, and the worker id it fixes (a registry's lease picks one later: 0 here).
/// `worker` and `lease` both choose the worker id, so a conflict names both.
fn lease_and_worker(s: &ServeSettings, given: Option<u64>) -> Result<(String, u64), ConfigError> {
    let lease = match (&s.lease, given) {
        (None, worker) => format!("static:{}", worker.unwrap_or(0)),
        (Some(url), Some(worker)) if !url.starts_with("static:") => {
            let shown = snowmint_lease::redact(url);
            return Err(invalid(
                "worker",
                worker,
                format!(
                    "conflicts with lease {shown:?}, which chooses the worker id; drop one of them"
                ),
            ));
        }
        (Some(url), _) => {
            // The URL as it may be shown: without its password.
            let shown = snowmint_lease::redact(url);
            snowmint_lease::registry_from_url(url)
                .map_err(|e| invalid("lease", &shown, rule_after_value(&e.to_string(), &shown)))?;
            url.clone()
        }
    };
    let worker = match lease.strip_prefix("static:").map(str::parse::<u64>) {
        Some(Ok(w)) if given.is_some_and(|given| given != w) => {
            return Err(invalid(
                "worker",
                given.unwrap_or(0),
                format!("conflicts with lease {lease:?}"),
            ));
        }
        Some(Ok(w)) => w,
        _ => 0,
    };
    Ok((lease, worker))
}

/// `identity`, or the identity `identity_from` names (the host name by default).
fn identity(s: &ServeSettings) -> Result<String, ConfigError> {
    let Some(from) = s.identity_from.as_deref() else {
        return Ok(s.identity.clone().unwrap_or_else(snowmint_lease::hostname));
    };
    let source: IdentitySource = from
        .parse()
        .map_err(|rule| invalid("identity_from", from, rule))?;
    if let Some(identity) = &s.identity {
        return Err(invalid(
            "identity_from",
            from,
            format!("conflicts with identity {identity:?}: give one of them"),
        ));
    }
    source
        .identity()
        .map_err(|why| invalid("identity_from", from, format!("names no address: {why}")))
}

/// The clock mode and what the generator does when the clock misbehaves, checked: what
/// `clock`, `rollback`, `rollback_wait_ms` and `sequence_start` select for `serve`, and the
/// flags of the same names for every command that issues ids.
///
/// # Examples
///
/// ```
/// use snowmint::{ClockMode, Layout, RollbackPolicy};
/// use snowmint_server::{ClockPolicies, ClockSettings, RollbackSetting};
///
/// let settings = ClockSettings {
///     clock: Some(ClockMode::Wall),
///     rollback: Some(RollbackSetting::Refuse),
///     ..ClockSettings::default()
/// };
/// let p = ClockPolicies::new(&settings, &Layout::TWITTER)?;
/// assert_eq!((p.clock, p.rollback), (ClockMode::Wall, RollbackPolicy::Refuse));
/// # Ok::<(), snowmint_server::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockPolicies {
    /// Where the ids' time comes from.
    pub clock: ClockMode,
    /// What to do when the clock goes back.
    pub rollback: RollbackPolicy,
    /// Where each tick's sequence starts.
    pub sequence_start: SequenceStart,
}

impl ClockPolicies {
    /// Checks the settings, filling in each default: `monotonic`, `wait` up to
    /// `rollback_wait_ms` (5000), `zero`.
    ///
    /// # Errors
    ///
    /// `rollback_wait_ms` above a minute, or a sequence start other than `zero` with the
    /// `counter` clock, whose sequence runs on from one tick into the next.
    pub fn new(settings: &ClockSettings, layout: &Layout) -> Result<ClockPolicies, ConfigError> {
        let ClockSettings {
            clock,
            rollback,
            rollback_wait_ms,
            sequence_start,
        } = *settings;
        let clock = clock.unwrap_or_default();
        let wait = Duration::from_millis(at_most(
            "rollback_wait_ms",
            rollback_wait_ms.unwrap_or(DEFAULT_ROLLBACK_WAIT_MS),
            ROLLBACK_WAIT_MAX_MS,
            "a request waits this long for a clock that went back",
        )?);
        let rollback = match rollback.unwrap_or(RollbackSetting::Wait) {
            RollbackSetting::Refuse => RollbackPolicy::Refuse,
            RollbackSetting::Wait => RollbackPolicy::WaitUpTo(wait),
            RollbackSetting::Logical => RollbackPolicy::LogicalClock,
            RollbackSetting::Spare => RollbackPolicy::SpareSequence {
                then_wait_up_to: wait,
            },
        };
        let start = sequence_start.unwrap_or(SequenceStartSetting::Zero);
        if clock == ClockMode::Counter && start != SequenceStartSetting::Zero {
            let name = format!("{start:?}").to_lowercase();
            return Err(invalid(
                "sequence_start",
                name,
                "conflicts with clock counter: a counter's sequence runs on from one tick into the next, from zero",
            ));
        }
        let sequence_start = match start {
            SequenceStartSetting::Zero => SequenceStart::Zero,
            SequenceStartSetting::Random => SequenceStart::Random {
                below: (layout.max_sequence() + 1).min(RANDOM_START_BELOW),
            },
            SequenceStartSetting::Continue => SequenceStart::Continue,
        };
        Ok(ClockPolicies {
            clock,
            rollback,
            sequence_start,
        })
    }

    /// Gives a generator's builder these policies.
    pub fn apply<C: Clock>(&self, builder: Builder<C>) -> Builder<C> {
        builder
            .mode(self.clock)
            .rollback(self.rollback)
            .sequence_start(self.sequence_start)
    }

    /// The policies in words, for logs, `/v1/layout` and the page: `wall clock, rollback
    /// refuse`.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::{ClockMode, RollbackPolicy, SequenceStart};
    /// use snowmint_server::ClockPolicies;
    ///
    /// let p = ClockPolicies {
    ///     clock: ClockMode::Wall,
    ///     rollback: RollbackPolicy::WaitUpTo(std::time::Duration::from_secs(5)),
    ///     sequence_start: SequenceStart::Zero,
    /// };
    /// assert_eq!(p.rollback_name(), "wait");
    /// assert_eq!(p.rollback_wait_ms(), Some(5_000));
    /// ```
    #[must_use]
    pub fn rollback_name(&self) -> &'static str {
        match self.rollback {
            RollbackPolicy::Refuse => "refuse",
            RollbackPolicy::WaitUpTo(_) => "wait",
            RollbackPolicy::LogicalClock => "logical",
            RollbackPolicy::SpareSequence { .. } => "spare",
        }
    }

    /// The longest wait of the rollback policy, if it waits.
    #[must_use]
    pub fn rollback_wait_ms(&self) -> Option<u64> {
        match self.rollback {
            RollbackPolicy::WaitUpTo(wait)
            | RollbackPolicy::SpareSequence {
                then_wait_up_to: wait,
            } => Some(snowmint::whole_ms(wait)),
            RollbackPolicy::Refuse | RollbackPolicy::LogicalClock => None,
        }
    }

    /// The sequence start's name.
    #[must_use]
    pub fn sequence_start_name(&self) -> &'static str {
        match self.sequence_start {
            SequenceStart::Zero => "zero",
            SequenceStart::Random { .. } => "random",
            SequenceStart::Continue => "continue",
        }
    }
}

/// How far ahead the high-water mark is reserved, and how far a burst may borrow.
fn reservation(
    s: &ServeSettings,
    layout: &Layout,
) -> Result<(Duration, OverflowPolicy), ConfigError> {
    let reserve_ahead_ms = s.reserve_ahead_ms.unwrap_or(DEFAULT_RESERVE_AHEAD_MS);
    if reserve_ahead_ms < layout.tick_ms() {
        return Err(invalid(
            "reserve_ahead_ms",
            reserve_ahead_ms,
            format!(
                "must be at least one tick of layout {} ({} ms)",
                layout.name(),
                layout.tick_ms()
            ),
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
    let lead_ms = at_most(
        "overflow_lead_ms",
        s.overflow_lead_ms.unwrap_or(0),
        reserve_ahead_ms,
        "ids borrowed ahead of the clock must stay within reserve_ahead_ms",
    )?;
    let overflow = match lead_ms {
        0 => OverflowPolicy::Wait,
        ms => OverflowPolicy::Borrow {
            lead: Duration::from_millis(ms),
        },
    };
    Ok((Duration::from_millis(reserve_ahead_ms), overflow))
}

/// The lease's TTL, renewal interval and safety margin, each checked under its own key:
/// the rules of [`LeaseSettings::validate`], with the keys named.
fn lease_settings(s: &ServeSettings) -> Result<LeaseSettings, ConfigError> {
    let ttl_ms = s.lease_ttl_ms.unwrap_or(DEFAULT_LEASE_TTL_MS);
    if ttl_ms < LEASE_TTL_MIN_MS {
        return Err(invalid(
            "lease_ttl_ms",
            ttl_ms,
            format!("must be at least {LEASE_TTL_MIN_MS} ms: renewals need room within it"),
        ));
    }
    at_most(
        "lease_ttl_ms",
        ttl_ms,
        LEASE_TTL_MAX_MS,
        "a crashed holder's worker id stays unusable for the TTL",
    )?;
    let margin_ms = s.lease_margin_ms.unwrap_or(ttl_ms / 10);
    if margin_ms >= ttl_ms {
        return Err(invalid(
            "lease_margin_ms",
            margin_ms,
            format!("must be shorter than lease_ttl_ms ({ttl_ms} ms)"),
        ));
    }
    let renew_ms = s.lease_renew_ms.unwrap_or(ttl_ms / 3);
    if renew_ms == 0 || renew_ms >= ttl_ms - margin_ms {
        return Err(invalid(
            "lease_renew_ms",
            renew_ms,
            format!(
                "must be 1 ms or more and shorter than lease_ttl_ms ({ttl_ms} ms) less lease_margin_ms ({margin_ms} ms)"
            ),
        ));
    }
    Ok(LeaseSettings {
        ttl: Duration::from_millis(ttl_ms),
        renew_every: Duration::from_millis(renew_ms),
        safety_margin: Duration::from_millis(margin_ms),
    })
}

/// The TLS files, each one read once to check it: a certificate needs its key and the key
/// its certificate; a client CA and Thrift over TLS need both.
fn serving_tls(s: &ServeSettings, thrift_on: bool) -> Result<Option<ServingTls>, ConfigError> {
    let thrift = s.thrift_tls.unwrap_or(false);
    let shown = |path: &std::path::Path| path.display().to_string();
    let (cert, key) = match (&s.tls_cert, &s.tls_key) {
        (Some(cert), Some(key)) => (cert.clone(), key.clone()),
        (Some(cert), None) => {
            return Err(invalid(
                "tls_cert",
                shown(cert),
                "needs tls_key, the certificate's private key",
            ));
        }
        (None, Some(key)) => {
            return Err(invalid(
                "tls_key",
                shown(key),
                "needs tls_cert, the key's certificate",
            ));
        }
        (None, None) => {
            if let Some(ca) = &s.tls_client_ca {
                return Err(invalid(
                    "tls_client_ca",
                    shown(ca),
                    "needs tls_cert and tls_key: client certificates are asked for in a TLS handshake",
                ));
            }
            if thrift {
                return Err(invalid(
                    "thrift_tls",
                    thrift,
                    "needs tls_cert and tls_key, the pair Thrift serves too",
                ));
            }
            return Ok(None);
        }
    };
    if thrift && !thrift_on {
        return Err(invalid(
            "thrift_tls",
            thrift,
            "needs thrift_addr: the Thrift port is off",
        ));
    }
    let files = ServingTls {
        cert,
        key,
        client_ca: s.tls_client_ca.clone(),
        thrift,
    };
    Loaded::read(&files).map_err(|e| invalid(e.key, shown(&e.path), e.problem))?;
    Ok(Some(files))
}

fn addr(key: &'static str, given: Option<&str>, default: &str) -> Result<SocketAddr, ConfigError> {
    let text = given.unwrap_or(default);
    text.parse().map_err(|_| {
        invalid(
            key,
            text,
            "is not an address like 127.0.0.1:8080 or [::1]:0",
        )
    })
}

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
