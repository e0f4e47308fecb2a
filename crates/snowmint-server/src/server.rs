//! Start-up and shutdown: from a validated config to listening sockets, and back to a
//! persisted high-water mark.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use snowmint::Clock;
use snowmint::error::Chain;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::net::{Net, Protocol};
use crate::tls::Tls;
use crate::{AppState, Config, IdSource, ServingTls};

/// Why the server could not start or stop cleanly. Each message says what failed here;
/// the cause (the system's error, the lease's, the store's) is the
/// [`source`](std::error::Error::source).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// A listener could not be bound.
    #[error("cannot listen on {addr}")]
    Bind {
        /// The address.
        addr: std::net::SocketAddr,
        /// What the system said.
        source: std::io::Error,
    },
    /// A TLS file could not be used at start (the error names the setting and the file).
    #[error(transparent)]
    Tls(#[from] crate::TlsFileError),
    /// A listener's own address could not be read.
    #[error("cannot read a listener's address")]
    LocalAddr(#[source] std::io::Error),
    /// The high-water-mark file or its directory could not be used (the error names the
    /// path).
    #[error(transparent)]
    State(#[from] snowmint_lease::StateError),
    /// The task that sets a generator up for a new lease ended before it finished.
    #[error("cannot set up a generator for the new lease")]
    Setup(#[source] tokio::task::JoinError),
    /// The generator refused the configuration or the stored mark.
    #[error(transparent)]
    Generator(#[from] snowmint::BuildError),
    /// Started behind the high-water mark with `restart_behind = "fail"`.
    #[error(
        "clock is {lag_ms} ms behind the high-water mark in {dir}: ids up to then may have been issued before the restart; fix the clock or use restart_behind = \"wait\""
    )]
    Behind {
        /// How far behind.
        lag_ms: u64,
        /// The state directory.
        dir: std::path::PathBuf,
    },
    /// The lease URL names no registry that can be used (the error quotes the URL).
    #[error(transparent)]
    Lease(snowmint_lease::LeaseError),
    /// The `counter` clock was asked for with a lease that expires: such a registry vouches
    /// for marks by real time (renewal + TTL), and a counter's marks are counts.
    #[error(
        "clock counter cannot issue under a {backend} lease, which vouches for high-water marks by real time (renewal + TTL) while a counter's marks count ticks: use a static, hostname or file: lease, or clock monotonic or wall"
    )]
    CounterLease {
        /// The lease backend.
        backend: &'static str,
    },
    /// A lease that never expires (static, hostname, file) was not acquired in time.
    #[error("cannot acquire a worker id within {waited_ms} ms")]
    NoLease {
        /// How long start-up waited.
        waited_ms: u64,
        /// Why the last attempt failed, if one did.
        source: Option<snowmint_lease::LeaseError>,
    },
    /// On shutdown, the worker id could not be given back (it expires, or stays taken
    /// for a lease that does not expire, until the registry is reached again).
    #[error("cannot give the worker id back")]
    Release(#[source] snowmint_lease::LeaseError),
    /// On shutdown, the high-water mark could not be lowered to the last id issued (the
    /// higher mark stays: safe, but a restart may wait it out).
    #[error("cannot lower the high-water mark to the last id issued")]
    LowerMark(#[source] snowmint::StoreError),
}

/// The sockets a server listens on: HTTP always, gRPC, Thrift and admin when they are on.
#[derive(Debug)]
pub struct Listeners {
    /// The HTTP/JSON API, the page, the probes and the metrics.
    pub http: TcpListener,
    /// The gRPC API, `snowmint.v1.IdService`.
    pub grpc: Option<TcpListener>,
    /// Twitter's Snowflake Thrift service, framed and binary. It has no bearer token: bind
    /// it to a trusted interface only.
    pub thrift: Option<TcpListener>,
    /// The probes and the metrics alone, with connections of their own
    /// ([`ADMIN_MAX_CONNECTIONS`](crate::ADMIN_MAX_CONNECTIONS)) that the other ports'
    /// clients cannot take.
    pub admin: Option<TcpListener>,
    /// The certificate and key the ports serve TLS with (Thrift's only if it says so); `None`
    /// for plain text.
    pub tls: Option<ServingTls>,
}

impl Listeners {
    /// Binds the addresses `config` names.
    ///
    /// # Errors
    ///
    /// [`ServeError::Bind`] naming the address that could not be bound.
    pub fn bind(config: &Config) -> Result<Listeners, ServeError> {
        let bind =
            |addr| crate::net::bind(addr).map_err(|source| ServeError::Bind { addr, source });
        Ok(Listeners {
            http: bind(config.http_addr)?,
            grpc: config.grpc_addr.map(bind).transpose()?,
            thrift: config.thrift_addr.map(bind).transpose()?,
            admin: config.admin_addr.map(bind).transpose()?,
            tls: config.tls.clone(),
        })
    }
}

/// Tells systemd `states` when it started the process with `NOTIFY_SOCKET` set (a unit of
/// `Type=notify`); does nothing otherwise. A failure to tell it is logged, never fatal:
/// systemd then times the start out, which says more than a server that refused to run.
fn tell_systemd(states: &[sd_notify::NotifyState<'_>]) {
    if std::env::var_os("NOTIFY_SOCKET").is_none() {
        return;
    }
    if let Err(e) = sd_notify::notify(false, states) {
        tracing::warn!(error = %e, "cannot tell systemd of the server's state (NOTIFY_SOCKET)");
    }
}

/// A certificate's notAfter, in Unix seconds, as a time.
pub(crate) fn expiry(not_after: i64) -> snowmint::UnixMs {
    snowmint::UnixMs(u64::try_from(not_after).unwrap_or(0).saturating_mul(1000))
}

/// Serves `config` until `shutdown` resolves, then drains and persists the mark.
///
/// # Errors
///
/// See [`IdSource::start`] and [`run`]; binding a listener can fail too.
pub async fn serve(
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let source = IdSource::start(&config).await?;
    let listeners = Listeners::bind(&config)?;
    let state = AppState::for_config(source, &config);
    run(listeners, state, config.shutdown_grace, shutdown).await
}

/// Serves the HTTP API and, if their listeners are given, the gRPC API, the Thrift
/// service and the admin port, until `shutdown` resolves, within the state's
/// [`crate::Limits`]. Then it stops
/// accepting, turns `/readyz` to 503, lets requests in flight finish for up to `grace`, and
/// shuts the generator down so its mark is persisted.
///
/// # Errors
///
/// A listener fails, or the mark cannot be persisted (the higher mark is kept; safe).
pub async fn run(
    listeners: Listeners,
    state: AppState,
    grace: Duration,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let Listeners {
        http,
        grpc,
        thrift,
        admin,
        tls,
    } = listeners;
    let tls = tls.map(Tls::load).transpose()?.map(Arc::new);
    let http_addr = http.local_addr().map_err(ServeError::LocalAddr)?;
    let addr = |listener: &Option<TcpListener>| {
        listener
            .as_ref()
            .map(TcpListener::local_addr)
            .transpose()
            .map(|addr| addr.map_or_else(|| "off".to_string(), |a| a.to_string()))
            .map_err(ServeError::LocalAddr)
    };
    let (grpc_addr, thrift_addr, admin_addr) = (addr(&grpc)?, addr(&thrift)?, addr(&admin)?);
    if let Some(tls) = &tls {
        let loaded = tls.loaded();
        let mut ports = vec!["http"];
        ports.extend(grpc.as_ref().map(|_| "grpc"));
        ports.extend(
            thrift
                .as_ref()
                .filter(|_| tls.files().thrift)
                .map(|_| "thrift"),
        );
        ports.extend(admin.as_ref().map(|_| "admin"));
        tracing::info!(
            ports = ports.join(","),
            subject = %loaded.subject,
            serial = %loaded.serial,
            expires = %expiry(loaded.not_after),
            client_certificates = if tls.files().client_ca.is_some() { "required" } else { "not asked for" },
            "serving TLS"
        );
        if loaded.not_after < (snowmint::WallClock.now_ms() / 1000) as i64 {
            tracing::warn!(
                expired = %expiry(loaded.not_after),
                "the TLS certificate has expired: clients will refuse it"
            );
        }
    }
    tracing::info!(
        http = %http_addr,
        grpc = %grpc_addr,
        thrift = %thrift_addr,
        admin = %admin_addr,
        datacenter = state.source.issuer().map(|s| s.generator().datacenter()),
        worker = state.source.issuer().map(|s| s.generator().worker()),
        lease = state.source.backend(),
        layout = state.layout().name(),
        clock = state.source.clock_policies().clock.name(),
        rollback = state.source.clock_policies().rollback_name(),
        "listening"
    );
    // Client certificates stand in for the token there.
    let thrift_authenticated = tls
        .as_ref()
        .is_some_and(|tls| tls.files().thrift && tls.files().client_ca.is_some());
    if thrift.is_some() && state.auth.is_some() && !thrift_authenticated {
        tracing::warn!(
            thrift = %thrift_addr,
            "the thrift port takes no bearer token: Twitter's protocol has no place for one; bind it to a trusted interface only, or serve it with --thrift-tls and --tls-client-ca"
        );
    }
    if let Some(warning) = state
        .layout()
        .runs_out_warning(snowmint::Clock::now_ms(&snowmint::WallClock))
    {
        tracing::warn!("{warning}");
    }
    let (stop_tx, stop_rx) = watch::channel(false);
    let source = Arc::clone(&state.source);
    let status = format!(
        "serving on {http_addr} (http), {grpc_addr} (grpc), {thrift_addr} (thrift), {admin_addr} (admin)"
    );
    let net = Net::new(state.clone());
    let serve_on = |net: &Arc<Net>, listener, protocol: Protocol| {
        let acceptor = tls
            .as_ref()
            .and_then(|tls| tls.acceptor(protocol.label(), &state.metrics));
        tokio::spawn(Arc::clone(net).serve(listener, protocol, acceptor, stop_rx.clone()))
    };
    let serve = |listener, protocol| serve_on(&net, listener, protocol);
    let mut tasks = vec![(
        "http",
        serve(http, Protocol::Http(crate::http_api(state.clone()))),
    )];
    if let Some(listener) = grpc {
        tasks.push((
            "grpc",
            serve(
                listener,
                Protocol::Grpc(crate::grpc::GrpcApi::new(state.clone())),
            ),
        ));
    }
    if let Some(listener) = thrift {
        tasks.push(("thrift", serve(listener, Protocol::Thrift)));
    }
    if let Some(listener) = admin {
        let api = Protocol::Admin(crate::admin_api(state.clone()));
        tasks.push(("admin", serve_on(&Net::admin(state.clone()), listener, api)));
    }
    tokio::spawn(crate::reload::watch(state.clone(), tls, stop_rx.clone()));
    // Every port accepts now: a unit of `Type=notify` is started.
    tell_systemd(&[
        sd_notify::NotifyState::Ready,
        sd_notify::NotifyState::Status(&status),
    ]);
    shutdown.await;
    tell_systemd(&[sd_notify::NotifyState::Stopping]);
    tracing::info!(grace_ms = grace.as_millis() as u64, "shutting down");
    source.drain();
    let _ = stop_tx.send(true);
    let stopping = tokio::time::Instant::now();
    let drained = tokio::time::timeout(grace, async {
        let mut ended = Vec::with_capacity(tasks.len());
        for (port, task) in tasks {
            ended.push((port, task.await));
        }
        ended
    })
    .await;
    match drained {
        Ok(ended) => {
            for (port, result) in ended {
                if let Err(e) = result {
                    tracing::warn!(error = %Chain(&e), port, "server ended with an error");
                }
            }
        }
        Err(_) => {
            tracing::warn!("requests still in flight after the grace period; stopping anyway")
        }
    }
    // After the last id: lower the mark to what was issued and give the worker id back,
    // so a restart or a successor need not wait; a registry away for a moment is tried
    // again for what is left of the grace.
    let left = grace.saturating_sub(stopping.elapsed());
    let held = source.shutdown(left).await?;
    let now = source.clock().now_ms();
    if held {
        tracing::info!(stopped_at = %snowmint::UnixMs(now), "stopped; high-water mark persisted");
    } else {
        tracing::info!(
            stopped_at = %snowmint::UnixMs(now),
            "stopped before a worker id was acquired; no id was issued, so no mark to persist"
        );
    }
    Ok(())
}
