//! The Redis primary that every script runs on: reached at the URL's address, or the
//! server the sentinels name, asked before every operation. A script that must be
//! acknowledged by replicas is followed by `WAIT` on its connection.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use redis::aio::{
    ConnectionLike, ConnectionManager, ConnectionManagerConfig, MultiplexedConnection,
};
use redis::{
    AsyncConnectionConfig, ConnectionAddr, ErrorKind, FromRedisValue, RedisConnectionInfo,
    RedisError, Role, Script, ServerErrorKind, TlsCertificates,
};

use super::sentinels::SentinelLookup;
use super::url::{self, Route, Target};
use crate::backend::CONNECT_TIMEOUT;
use crate::refusal;
use crate::registry::LeaseError;

/// Every request answers within this or fails. A request that ends with `WAIT` included.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(1);
/// Bounds a whole operation: asking the sentinels, reconnecting, loading a script, and the
/// one retry after a connection failed.
const OPERATION_TIMEOUT: Duration = Duration::from_secs(2);
/// How long `WAIT` waits for the replicas: half a request's time, so that the script and
/// the round trip fit in the rest. A replica that is up acknowledges within milliseconds.
const WAIT_TIMEOUT_MS: u64 = 500;

/// How a script's writes were acknowledged: by `acked` of the `asked` replicas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Acks {
    /// Replicas asked for (`?wait=N`); 0 when none were.
    pub(super) asked: u32,
    /// Replicas that acknowledged within [`WAIT_TIMEOUT_MS`].
    pub(super) acked: u32,
}

impl Acks {
    /// Whether enough replicas acknowledged the script's writes.
    pub(super) fn enough(self) -> bool {
        self.acked >= self.asked
    }

    /// Why `what` (the acquisition of a worker id, a renewal) is not confirmed.
    pub(super) fn shortfall(self, shown: &str, what: &str) -> LeaseError {
        let Acks { asked, acked } = self;
        LeaseError::unavailable(
            "redis",
            format!(
                "{shown}: {acked} of {asked} replicas acknowledged {what} within {WAIT_TIMEOUT_MS} ms (wait={asked})"
            ),
        )
    }
}

/// A connection to the primary: one that reconnects by itself to the URL's address, or one
/// to the primary the sentinels named, used only while they name it, and dropped at its
/// first failure.
#[derive(Clone)]
enum Link {
    Managed(ConnectionManager),
    Named(MultiplexedConnection, (String, u16)),
}

/// The primary, and the connection to it that the registry's operations share.
pub(super) struct Primary {
    finder: Finder,
    /// The URL without credentials, for messages.
    pub(super) shown: String,
    /// Replicas that must acknowledge what a confirmed script wrote.
    pub(super) replicas: u32,
    /// With TLS, what the servers' certificates must be signed by, for messages.
    trust: Option<String>,
    /// The user the URL names (`default` if none), for messages.
    user: String,
    /// Made on first use, on the runtime that uses it.
    link: Mutex<Option<Link>>,
}

/// How the primary is found.
enum Finder {
    Direct(redis::Client),
    Sentinels {
        lookup: SentinelLookup,
        /// The credentials and database for the primary.
        node: RedisConnectionInfo,
        /// The TLS files for the primary; `None` without TLS.
        tls: Option<TlsCertificates>,
    },
}

impl Primary {
    /// The primary of a checked URL; connects on first use.
    pub(super) fn new(target: Target) -> Primary {
        let user = match &target.route {
            Route::Direct(client) => client.get_connection_info().redis_settings().username(),
            Route::Sentinel { node, .. } => node.username(),
        }
        .unwrap_or("default")
        .to_string();
        let finder = match target.route {
            Route::Direct(client) => Finder::Direct(client),
            Route::Sentinel {
                sentinels,
                name,
                node,
                tls,
            } => Finder::Sentinels {
                lookup: SentinelLookup::new(name, sentinels),
                node,
                tls,
            },
        };
        Primary {
            finder,
            shown: target.shown,
            replicas: target.replicas,
            trust: target.trust,
            user,
            link: Mutex::new(None),
        }
    }

    /// The user the registry authenticates as (`default` when the URL names none).
    pub(super) fn user(&self) -> &str {
        &self.user
    }

    /// Unavailable because of `err`, met at `at` (the URL, or the primary the sentinels
    /// named): in plain words when the server refused us (TLS, credentials, rights), one
    /// line that names the check; else the client library's error as the cause.
    pub(super) fn failed(&self, at: String, err: RedisError) -> LeaseError {
        match self.refusal(&err) {
            Some(words) => LeaseError::unavailable("redis", format!("{at}: {words}")),
            None => LeaseError::unavailable_because("redis", at, err),
        }
    }

    /// What the server refused, if it refused: the TLS handshake, the credentials, a
    /// command or key the user may not touch; or a plain connection the server dropped
    /// unanswered, as a TLS port does.
    fn refusal(&self, err: &RedisError) -> Option<String> {
        if let Some(trust) = &self.trust
            && let Some(words) = refusal::tls_refusal(err, trust)
        {
            return Some(words);
        }
        if err.kind() == ErrorKind::AuthenticationFailed {
            return Some("wrong user name or password (the server refused AUTH)".into());
        }
        match err.code() {
            Some("WRONGPASS") => {
                return Some("wrong user name or password (WRONGPASS)".into());
            }
            Some("NOAUTH") => {
                return Some(
                    "the server wants a user and password (NOAUTH): give USER:PASSWORD@ or password_file=FILE"
                        .into(),
                );
            }
            Some("NOPERM") => {
                let detail = err.detail().unwrap_or_default().trim();
                let user = &self.user;
                return Some(format!("user {user} lacks the rights: {detail} (NOPERM)"));
            }
            _ => {}
        }
        let dropped = refusal::chain(err).any(|cause| {
            cause.downcast_ref::<std::io::Error>().is_some_and(|io| {
                matches!(
                    io.kind(),
                    std::io::ErrorKind::UnexpectedEof
                        | std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::BrokenPipe
                )
            })
        });
        (self.trust.is_none() && dropped).then(|| {
            "the server closed the connection unanswered: plain text to a TLS port? (write rediss://)"
                .into()
        })
    }

    /// Runs `script` with `keys` and `args`, once more if the connection failed (each script
    /// is safe to repeat for the same holder: acquiring again returns the worker it already
    /// holds). When `confirm`, and the URL asks for replicas, `WAIT` follows the script on
    /// its connection, and the answer says how many acknowledged.
    pub(super) async fn run<T: FromRedisValue>(
        &self,
        script: &Script,
        keys: &[String],
        args: &[String],
        confirm: bool,
    ) -> Result<(T, Acks), LeaseError> {
        let asked = if confirm { self.replicas } else { 0 };
        let once = || async {
            let mut invocation = script.prepare_invoke();
            for key in keys {
                invocation.key(key);
            }
            for arg in args {
                invocation.arg(arg);
            }
            let result = match self.link().await? {
                Link::Managed(mut c) => invoke(&mut c, &invocation, asked).await,
                Link::Named(mut c, _) => invoke(&mut c, &invocation, asked).await,
            };
            Ok::<_, LeaseError>(result.map(|(value, acked)| (value, Acks { asked, acked })))
        };
        self.attempted(once).await
    }

    /// Sends `pipeline`, commands that only read (a listing's), once more if the
    /// connection failed, within the operation's deadline. No script: a read-only user
    /// may be refused `EVALSHA`, and needs only the commands sent.
    pub(super) async fn read<T: FromRedisValue>(
        &self,
        pipeline: &redis::Pipeline,
    ) -> Result<T, LeaseError> {
        let once = || async {
            Ok::<_, LeaseError>(match self.link().await? {
                Link::Managed(mut c) => pipeline.query_async(&mut c).await,
                Link::Named(mut c, _) => pipeline.query_async(&mut c).await,
            })
        };
        self.attempted(once).await
    }

    /// Runs `once`, and once more if its connection failed, within [`OPERATION_TIMEOUT`].
    async fn attempted<T, F, Fut>(&self, once: F) -> Result<T, LeaseError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<Result<T, RedisError>, LeaseError>>,
    {
        let attempts = async {
            let mut result = once().await?;
            if let Err(err) = &result
                && self.retry_after(err)
            {
                result = once().await?;
                if let Err(err) = &result {
                    self.retry_after(err);
                }
            }
            result.map_err(|err| self.failed(self.shown.clone(), err))
        };
        super::super::within(OPERATION_TIMEOUT, attempts, || {
            self.forget();
            let ms = OPERATION_TIMEOUT.as_millis();
            // A plain port reads a TLS handshake as the start of a command, and waits.
            let hint = match self.trust {
                Some(_) => {
                    " (a frozen server, or a plain port that leaves the TLS handshake unanswered)"
                }
                None => "",
            };
            LeaseError::unavailable(
                "redis",
                format!("{}: no answer within {ms} ms{hint}", self.shown),
            )
        })
        .await
    }

    /// Whether an operation that met `err` may try once more; forgets the connection when
    /// the next operation needs another. A connection whose requests time out may never
    /// recover (a proxy that dropped it), and is not retried: the operation's time is spent.
    /// A connection to a primary the sentinels named goes when it fails or the server
    /// answers as a replica, and the sentinels are asked again.
    fn retry_after(&self, err: &RedisError) -> bool {
        if err.is_timeout() {
            self.forget();
            return false;
        }
        let lost = err.is_io_error();
        match self.finder {
            Finder::Direct(_) => {
                // A connection manager whose reconnection was refused (the user turned off
                // or its password changed, then put right) answers that refusal for good
                // without trying again: a new one connects afresh at the next operation.
                if refused_connection(err) {
                    self.forget();
                }
                lost
            }
            Finder::Sentinels { .. } => {
                let demoted = err.kind() == ErrorKind::Server(ServerErrorKind::ReadOnly)
                    || err.kind() == ErrorKind::Server(ServerErrorKind::MasterDown)
                    // Redis before 7 reports a script's failed write inside its own error.
                    || err.to_string().contains("READONLY");
                if lost || demoted || err.is_unrecoverable_error() {
                    self.forget();
                }
                lost || demoted
            }
        }
    }

    /// The connection to the primary: through Sentinel, the one to the server the
    /// sentinels name now, made if it is another than before.
    async fn link(&self) -> Result<Link, LeaseError> {
        let (lookup, node) = match &self.finder {
            Finder::Direct(client) => {
                if let Some(link) = self.cached() {
                    return Ok(link);
                }
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(CONNECT_TIMEOUT))
                    .set_response_timeout(Some(RESPONSE_TIMEOUT))
                    // One quick retry per reconnection; the keeper retries beyond that.
                    .set_number_of_retries(1)
                    .set_max_delay(Duration::from_millis(200));
                let manager = ConnectionManager::new_lazy_with_config(client.clone(), config)
                    .map_err(|e| self.failed(self.shown.clone(), e))?;
                let link = Link::Managed(manager);
                *self.slot() = Some(link.clone());
                return Ok(link);
            }
            Finder::Sentinels { lookup, node, tls } => (lookup, (node, tls)),
        };
        let named = lookup.primary().await.map_err(|e| {
            let name = &lookup.name;
            let message = format!("{}: no primary {name:?}", self.shown);
            // Sentinels that refuse the handshake: which check, in plain words.
            let refused = self
                .trust
                .as_ref()
                .and_then(|trust| refusal::tls_refusal(&e, trust));
            match refused {
                Some(words) => LeaseError::unavailable("redis", format!("{message}: {e}: {words}")),
                None => LeaseError::unavailable_because("redis", message, e),
            }
        })?;
        if let Some(Link::Named(connection, at)) = self.cached()
            && at == named
        {
            return Ok(Link::Named(connection, at));
        }
        let (host, port) = named.clone();
        let address = format!("{host}:{port}");
        let unreachable =
            |e: RedisError| self.failed(format!("{}: primary {address}", self.shown), e);
        let (node, tls) = node;
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(RESPONSE_TIMEOUT));
        let mut connection = url::client(
            ConnectionAddr::Tcp(host, port),
            Some(node.clone()),
            tls.as_ref(),
        )
        .map_err(unreachable)?
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .map_err(unreachable)?;
        // A server the sentinels name may not know yet that it was promoted.
        let role: Role = redis::cmd("ROLE")
            .query_async(&mut connection)
            .await
            .map_err(unreachable)?;
        if !matches!(role, Role::Primary { .. }) {
            return Err(LeaseError::unavailable(
                "redis",
                format!(
                    "{}: the sentinels name {address} the primary {:?}, and it is not one (yet)",
                    self.shown, lookup.name
                ),
            ));
        }
        tracing::info!(name = %lookup.name, primary = %address, "connected to the redis primary the sentinels named");
        let link = Link::Named(connection, named);
        *self.slot() = Some(link.clone());
        Ok(link)
    }

    fn cached(&self) -> Option<Link> {
        self.slot().clone()
    }

    /// Drops the connection: the next operation makes another. A managed connection whose
    /// requests time out may never recover (a proxy that dropped it); a named one goes with
    /// the primary it was made to.
    fn forget(&self) {
        *self.slot() = None;
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Link>> {
        self.link.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Whether `err` is a connection's refusal rather than a command's: authentication
/// refused, or an error after which the client library reconnects.
fn refused_connection(err: &RedisError) -> bool {
    err.kind() == ErrorKind::AuthenticationFailed
        || matches!(err.code(), Some("WRONGPASS" | "NOAUTH"))
        || err.is_unrecoverable_error()
}

/// Runs `invocation`, loading its script if the server lacks it; when `asked` replicas
/// must acknowledge, sends `WAIT` right behind it, in one pipeline on one connection, so
/// that it waits for the script's writes: `WAIT` counts the replicas that have everything
/// this connection wrote, and a reconnection in between would count them for nothing.
async fn invoke<T: FromRedisValue>(
    connection: &mut impl ConnectionLike,
    invocation: &redis::ScriptInvocation<'_>,
    asked: u32,
) -> Result<(T, u32), RedisError> {
    if asked == 0 {
        return Ok((invocation.invoke_async(connection).await?, 0));
    }
    let mut pipeline = redis::pipe();
    pipeline
        .invoke_script(invocation)
        .cmd("WAIT")
        .arg(asked)
        .arg(WAIT_TIMEOUT_MS)
        .ignore_errors();
    let sent: (Result<T, RedisError>, Result<u32, RedisError>) =
        pipeline.query_async(connection).await?;
    let (ran, acked) = match sent {
        (Err(err), _) if err.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
            invocation.load_async(connection).await?;
            pipeline.query_async(connection).await?
        }
        sent => sent,
    };
    Ok((ran?, acked?))
}
