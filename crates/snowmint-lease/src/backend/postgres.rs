//! Worker-id leases on PostgreSQL: one row per worker id, taken, renewed and given back by
//! statements that compare the holder and the database's own clock, never the client's.

use std::fmt;
use std::time::Duration;

use tokio::sync::{Mutex, MutexGuard};
use tokio_postgres::config::{Host, SslMode};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Config, NoTls, SimpleQueryMessage, Statement};

use crate::registry::{Claim, Lease, LeaseError, Registry};

/// How long opening a TCP connection may take, unless the URL sets `connect_timeout`.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// How long the whole of one call may take, connecting included: past it the registry is
/// reported unavailable and the connection dropped (the server then rolls back whatever
/// the call had begun).
const CALL_TIMEOUT: Duration = Duration::from_secs(2);
/// The server's own limit on one statement, below [`CALL_TIMEOUT`] so that a slow
/// statement is usually cancelled by the server, which says why.
const STATEMENT_TIMEOUT_MS: u64 = 1_500;
/// A session that stops talking inside a transaction (its host vanished without closing
/// the socket) is ended after this long, so it cannot hold a row lock, or an uncommitted
/// new worker row that others wait on, for the hours TCP keepalive would take.
const IDLE_IN_TRANSACTION_MS: u64 = 5_000;
/// The advisory lock taken while creating the table: "snowmint" in ASCII. Two sessions
/// running `CREATE TABLE IF NOT EXISTS` at once can both find the table missing, and one
/// then fails on the catalog's unique index; the lock makes them take turns.
const SCHEMA_LOCK: i64 = 0x736e_6f77_6d69_6e74;
/// PostgreSQL's port when the URL names none.
const DEFAULT_PORT: u16 = 5432;

const CREATE_TABLE: &str = "CREATE TABLE IF NOT EXISTS snowmint_workers (
    namespace text NOT NULL,
    datacenter bigint NOT NULL,
    worker bigint NOT NULL,
    holder text,
    identity text,
    expires_at timestamptz,
    high_water bigint,
    PRIMARY KEY (namespace, datacenter, worker)
)";

/// Takes the lowest free or expired row, of this identity only when `sticky`. Rows that
/// another acquisition has locked are skipped, not waited for. The choice is a
/// materialized CTE read through a scalar subquery: made once, then one index lookup. (As
/// a subquery joined in `FROM`, the planner may run it again for every row of the
/// datacenter; each rerun skips the rows this statement has just updated and picks the
/// next free one, so one call took every free row.)
/// Parameters: namespace, datacenter, workers, holder, identity, TTL in seconds.
fn take_sql(sticky: bool) -> String {
    let only_identity = if sticky { "AND identity = $5" } else { "" };
    format!(
        "WITH free AS MATERIALIZED (
             SELECT worker FROM snowmint_workers
             WHERE namespace = $1 AND datacenter = $2 AND worker >= 0 AND worker < $3
               AND (holder IS NULL OR expires_at < clock_timestamp()) {only_identity}
             ORDER BY worker LIMIT 1
             FOR UPDATE SKIP LOCKED)
         UPDATE snowmint_workers
         SET holder = $4, identity = $5,
             expires_at = clock_timestamp() + $6::float8 * interval '1 second'
         WHERE namespace = $1 AND datacenter = $2 AND worker = (SELECT worker FROM free)
         RETURNING worker, high_water"
    )
}

/// The lowest worker number in `0..workers` with no row: 0, or the first row (in index
/// order) whose successor is missing. Parameters: namespace, datacenter, workers.
const LOWEST_MISSING: &str = "SELECT candidate FROM (
        SELECT 0::bigint AS candidate
        WHERE NOT EXISTS (SELECT FROM snowmint_workers
                          WHERE namespace = $1 AND datacenter = $2 AND worker = 0)
        UNION ALL
        (SELECT worker + 1 FROM (
             SELECT worker, lead(worker) OVER (ORDER BY worker) AS next
             FROM snowmint_workers
             WHERE namespace = $1 AND datacenter = $2 AND worker >= 0 AND worker < $3) AS rows
         WHERE next IS DISTINCT FROM worker + 1
         ORDER BY worker
         LIMIT 1)
    ) AS missing
    WHERE candidate < $3
    LIMIT 1";

/// Creates a held row, unless another session created it first.
/// Parameters: namespace, datacenter, worker, holder, identity, TTL in seconds.
const INSERT: &str = "INSERT INTO snowmint_workers
        (namespace, datacenter, worker, holder, identity, expires_at)
    VALUES ($1, $2, $3, $4, $5, clock_timestamp() + $6::float8 * interval '1 second')
    ON CONFLICT DO NOTHING
    RETURNING worker";

/// Parameters: namespace, datacenter, worker, holder, TTL in seconds, high-water mark.
const RENEW: &str = "UPDATE snowmint_workers
    SET expires_at = clock_timestamp() + $5::float8 * interval '1 second',
        high_water = greatest(coalesce(high_water, 0), $6)
    WHERE namespace = $1 AND datacenter = $2 AND worker = $3
      AND holder = $4 AND expires_at > clock_timestamp()";

/// Why a renewal found nothing to renew. Parameters: namespace, datacenter, worker.
const HOLDER: &str = "SELECT holder FROM snowmint_workers
    WHERE namespace = $1 AND datacenter = $2 AND worker = $3";

/// Sets the mark to the last id issued, but never below the mark the lease began with:
/// that one covers a predecessor's ids. Parameters: namespace, datacenter, worker,
/// holder, last issued (ms), mark at acquisition (ms, or null).
const RELEASE: &str = "UPDATE snowmint_workers
    SET holder = NULL, expires_at = NULL, high_water = greatest($5::bigint, $6::bigint)
    WHERE namespace = $1 AND datacenter = $2 AND worker = $3 AND holder = $4";

/// Leases worker ids through a PostgreSQL table, created at first use if absent:
///
/// ```text
/// snowmint_workers(namespace text, datacenter bigint, worker bigint,   -- primary key
///                  holder text, identity text, expires_at timestamptz, high_water bigint)
/// ```
///
/// A row is created the first time its worker id is needed and kept for good, so its
/// high-water mark outlives every holder. A row is free when it has no holder, and
/// expired when `expires_at` is past by the database's `clock_timestamp()`. Acquiring
/// takes, in one transaction, the claim identity's row if it is free or expired, else the
/// lowest free or expired row, else creates the lowest missing worker number below
/// `workers`. Releasing sets the mark to the last id issued, but never below the mark the
/// lease began with.
///
/// **Cost.** Renewing and releasing touch one row through the primary key: O(log R), R
/// being the rows of the namespace and datacenter. Acquiring walks that datacenter's part
/// of the primary-key index in worker order, stopping at the first free or expired row, or
/// when there is none at the first missing worker number: O(R) when every row is held. R
/// is about the most processes that ever held worker ids at once, not `2^worker_bits`: with
/// Baidu's 2^22 worker ids and 20,000 holders, an acquisition takes some 25 ms. Nothing is
/// looped over on the client.
///
/// **Connection.** One per registry, opened at the first call and again at the call after
/// a failure. A call takes at most 2 s, connecting included (the server's statement
/// timeout is 1.5 s, and a connection attempt 1 s unless the URL sets `connect_timeout`):
/// a registry that is down or frozen is [`LeaseError::Unavailable`] within that.
///
/// ```
/// use snowmint_lease::{PostgresRegistry, Registry};
///
/// // Nothing connects until the first acquisition.
/// let registry = PostgresRegistry::from_url("postgres://snowmint@db.internal:5432/fleet")?;
/// assert_eq!(registry.backend(), "postgres");
/// # Ok::<(), snowmint_lease::LeaseError>(())
/// ```
pub struct PostgresRegistry {
    config: Config,
    /// Hosts, ports and database, for messages: never the password.
    target: String,
    /// The open session, if any; held for the length of a call.
    session: Mutex<Option<Session>>,
}

/// A bound parameter.
type Param<'a> = &'a (dyn ToSql + Sync);

/// A connection with the statements prepared on it.
struct Session {
    client: Client,
    take_own: Statement,
    take_any: Statement,
    lowest_missing: Statement,
    insert: Statement,
    renew: Statement,
    holder: Statement,
    release: Statement,
}

impl PostgresRegistry {
    /// A registry for a `postgres://` or `postgresql://` URL, in the forms `libpq` takes
    /// (`connect_timeout`, `application_name` and the other parameters included); connects
    /// on first use.
    ///
    /// # Errors
    ///
    /// [`LeaseError::Invalid`] for a URL that does not parse, names no host, or requires
    /// TLS (`sslmode=require`), which this backend does not speak. The message quotes the
    /// URL with its password hidden.
    ///
    /// ```
    /// use snowmint_lease::PostgresRegistry;
    ///
    /// let err = PostgresRegistry::from_url("postgres://app:s3cret@db:port/fleet").unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     r#"lease URL "postgres://app:***@db:port/fleet": invalid connection string: invalid value for option `port`"#
    /// );
    /// # Ok::<(), snowmint_lease::LeaseError>(())
    /// ```
    pub fn from_url(url: &str) -> Result<PostgresRegistry, LeaseError> {
        let invalid =
            |problem: &str| LeaseError::Invalid(format!("lease URL {:?}: {problem}", redact(url)));
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(invalid("expected postgres://USER@HOST:PORT/DATABASE"));
        }
        let mut config: Config = url.parse().map_err(|err| invalid(&describe(&err)))?;
        if config.get_hosts().is_empty() && config.get_hostaddrs().is_empty() {
            return Err(invalid(
                "no host; expected postgres://USER@HOST:PORT/DATABASE",
            ));
        }
        if config.get_ssl_mode() == SslMode::Require {
            return Err(invalid(
                "sslmode=require needs TLS, which the postgres lease backend does not support; \
                 use sslmode=prefer or sslmode=disable",
            ));
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            // So operators can tell the registry's sessions apart in pg_stat_activity.
            config.application_name("snowmint");
        }
        Ok(PostgresRegistry {
            target: target(&config),
            config,
            session: Mutex::new(None),
        })
    }

    fn unavailable(&self, problem: &str) -> LeaseError {
        LeaseError::Unavailable {
            backend: "postgres",
            message: format!("{}: {problem}", self.target),
        }
    }

    fn failed(&self, err: &tokio_postgres::Error) -> LeaseError {
        self.unavailable(&describe(err))
    }

    /// Runs one call within [`CALL_TIMEOUT`]. A call cut short drops its session (it was
    /// taken out of the slot), closing the connection.
    async fn bounded<T>(
        &self,
        call: impl Future<Output = Result<T, LeaseError>>,
    ) -> Result<T, LeaseError> {
        tokio::time::timeout(CALL_TIMEOUT, call)
            .await
            .unwrap_or_else(|_| {
                Err(self.unavailable(&format!("no answer within {} ms", CALL_TIMEOUT.as_millis())))
            })
    }

    /// The open session, or a new one if there is none or its connection has closed.
    async fn checkout(&self) -> Result<(MutexGuard<'_, Option<Session>>, Session), LeaseError> {
        let mut slot = self.session.lock().await;
        let session = match slot.take() {
            Some(session) if !session.client.is_closed() => session,
            _ => self.connect().await?,
        };
        Ok((slot, session))
    }

    async fn connect(&self) -> Result<Session, LeaseError> {
        let cannot = |err: tokio_postgres::Error| {
            self.unavailable(&format!("cannot connect: {}", describe(&err)))
        };
        let (client, connection) = self.config.connect(NoTls).await.map_err(cannot)?;
        let target = self.target.clone();
        tokio::spawn(async move {
            if let Err(err) = connection.await {
                tracing::debug!(%target, error = %describe(&err), "postgres registry connection ended");
            }
        });
        let setup = format!(
            "SET statement_timeout = {STATEMENT_TIMEOUT_MS};
             SET idle_in_transaction_session_timeout = {IDLE_IN_TRANSACTION_MS};
             SELECT to_regclass('snowmint_workers') IS NOT NULL"
        );
        let answers = client.simple_query(&setup).await.map_err(cannot)?;
        let exists = answers
            .iter()
            .any(|m| matches!(m, SimpleQueryMessage::Row(row) if row.get(0) == Some("t")));
        // Checked first so that a role without CREATE rights can use a table made for it.
        if !exists {
            let create = format!(
                "BEGIN; SELECT pg_advisory_xact_lock({SCHEMA_LOCK}); {CREATE_TABLE}; COMMIT"
            );
            client.batch_execute(&create).await.map_err(cannot)?;
        }
        let (take_own, take_any) = (take_sql(true), take_sql(false));
        // Prepared together: the client pipelines them in one round trip.
        let (take_own, take_any, lowest_missing, insert, renew, holder, release) =
            tokio::try_join!(
                client.prepare(&take_own),
                client.prepare(&take_any),
                client.prepare(LOWEST_MISSING),
                client.prepare(INSERT),
                client.prepare(RENEW),
                client.prepare(HOLDER),
                client.prepare(RELEASE),
            )
            .map_err(cannot)?;
        tracing::info!(target = %self.target, "connected to the postgres registry");
        Ok(Session {
            client,
            take_own,
            take_any,
            lowest_missing,
            insert,
            renew,
            holder,
            release,
        })
    }

    async fn acquire_on(&self, s: &mut Session, claim: &Claim) -> Result<Lease, LeaseError> {
        let pg = |err| self.failed(&err);
        let (ns, holder, identity) = (&claim.namespace, &claim.holder, &claim.identity);
        let dc = bigint("datacenter", claim.datacenter)?;
        let workers = bigint("worker count", claim.workers)?;
        let ttl = claim.ttl.as_secs_f64();
        let tx = s.client.transaction().await.map_err(pg)?;
        let take: [Param; 6] = [ns, &dc, &workers, holder, identity, &ttl];
        let mut taken = tx.query_opt(&s.take_own, &take).await.map_err(pg)?;
        if taken.is_none() {
            taken = tx.query_opt(&s.take_any, &take).await.map_err(pg)?;
        }
        let (worker, mark): (i64, Option<i64>) = match taken {
            Some(row) => (row.try_get(0).map_err(pg)?, row.try_get(1).map_err(pg)?),
            // Every row is held: create the lowest missing one. A conflict means another
            // session created that one first and committed it, so the next search sees it
            // and moves past it; the call's deadline bounds the retries.
            None => loop {
                let search: [Param; 3] = [ns, &dc, &workers];
                let missing = tx.query_opt(&s.lowest_missing, &search).await;
                let Some(missing) = missing.map_err(pg)? else {
                    return Err(LeaseError::Exhausted {
                        datacenter: claim.datacenter,
                        workers: claim.workers,
                    });
                };
                let worker: i64 = missing.try_get(0).map_err(pg)?;
                let insert: [Param; 6] = [ns, &dc, &worker, holder, identity, &ttl];
                if tx
                    .query_opt(&s.insert, &insert)
                    .await
                    .map_err(pg)?
                    .is_some()
                {
                    break (worker, None);
                }
            },
        };
        let unsigned = |value: i64, what: &str| {
            u64::try_from(value).map_err(|_| {
                let dc = claim.datacenter;
                self.unavailable(&format!(
                    "worker {worker} of datacenter {dc} has a negative {what} {value} in snowmint_workers"
                ))
            })
        };
        // Checked before committing: a corrupt mark is never read as "none" (ids up to an
        // unknown instant may have been issued), and the row stays as it was.
        let high_water_ms = mark.map(|m| unsigned(m, "high-water mark")).transpose()?;
        let worker = unsigned(worker, "worker id")?;
        tx.commit().await.map_err(pg)?;
        Ok(Lease {
            datacenter: claim.datacenter,
            worker,
            high_water_ms,
            token: 0,
        })
    }

    async fn renew_on(
        &self,
        s: &Session,
        claim: &Claim,
        lease: &Lease,
        mark: u64,
    ) -> Result<(), LeaseError> {
        let pg = |err| self.failed(&err);
        let (ns, holder) = (&claim.namespace, &claim.holder);
        let (dc, worker) = key(lease)?;
        let (ttl, mark) = (claim.ttl.as_secs_f64(), bigint("high-water mark", mark)?);
        let renew: [Param; 6] = [ns, &dc, &worker, holder, &ttl, &mark];
        if s.client.execute(&s.renew, &renew).await.map_err(pg)? == 1 {
            return Ok(());
        }
        // Only to say why: the renewal itself has already failed, atomically.
        let key: [Param; 3] = [ns, &dc, &worker];
        let row = s.client.query_opt(&s.holder, &key).await;
        let reason = match row.map_err(pg)? {
            None => "its row is gone from snowmint_workers".to_string(),
            Some(row) => match row.try_get::<_, Option<String>>(0).map_err(pg)? {
                None => "it was given back".to_string(),
                Some(now) if now == *holder => "it expired before this renewal".to_string(),
                Some(now) => format!("it expired and {now} holds it now"),
            },
        };
        Err(LeaseError::Lost {
            datacenter: lease.datacenter,
            worker: lease.worker,
            reason,
        })
    }

    async fn release_on(
        &self,
        s: &Session,
        claim: &Claim,
        lease: &Lease,
        mark: u64,
    ) -> Result<(), LeaseError> {
        let (ns, holder) = (&claim.namespace, &claim.holder);
        let (dc, worker) = key(lease)?;
        let issued = bigint("high-water mark", mark)?;
        let floor = lease
            .high_water_ms
            .map(|m| bigint("high-water mark", m))
            .transpose()?;
        // No row changed means the lease was already lost: nothing to give back.
        let release: [Param; 6] = [ns, &dc, &worker, holder, &issued, &floor];
        let released = s.client.execute(&s.release, &release).await;
        released.map_err(|err| self.failed(&err))?;
        Ok(())
    }
}

/// Puts a session back for the next call, unless the call failed on it: after an error
/// the next call starts on a fresh connection, whatever state this one was left in.
fn checkin<T>(slot: &mut Option<Session>, session: Session, result: &Result<T, LeaseError>) {
    let failed = matches!(result, Err(LeaseError::Unavailable { .. }));
    if !failed && !session.client.is_closed() {
        *slot = Some(session);
    }
}

#[async_trait::async_trait]
impl Registry for PostgresRegistry {
    fn backend(&self) -> &'static str {
        "postgres"
    }

    async fn acquire(&self, claim: &Claim) -> Result<Lease, LeaseError> {
        self.bounded(async {
            let (mut slot, mut session) = self.checkout().await?;
            let result = self.acquire_on(&mut session, claim).await;
            checkin(&mut slot, session, &result);
            result
        })
        .await
    }

    async fn renew(
        &self,
        claim: &Claim,
        lease: &Lease,
        high_water_ms: u64,
    ) -> Result<(), LeaseError> {
        self.bounded(async {
            let (mut slot, session) = self.checkout().await?;
            let result = self.renew_on(&session, claim, lease, high_water_ms).await;
            checkin(&mut slot, session, &result);
            result
        })
        .await
    }

    async fn release(
        &self,
        claim: &Claim,
        lease: &Lease,
        high_water_ms: u64,
    ) -> Result<(), LeaseError> {
        self.bounded(async {
            let (mut slot, session) = self.checkout().await?;
            let result = self.release_on(&session, claim, lease, high_water_ms).await;
            checkin(&mut slot, session, &result);
            result
        })
        .await
    }
}

impl fmt::Debug for PostgresRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresRegistry")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

/// The datacenter and worker of a lease's row.
fn key(lease: &Lease) -> Result<(i64, i64), LeaseError> {
    Ok((
        bigint("datacenter", lease.datacenter)?,
        bigint("worker", lease.worker)?,
    ))
}

/// A value as a PostgreSQL `bigint`.
fn bigint(what: &str, value: u64) -> Result<i64, LeaseError> {
    i64::try_from(value).map_err(|_| {
        LeaseError::Invalid(format!(
            "{what} {value} is out of range of a postgres bigint (at most {})",
            i64::MAX
        ))
    })
}

/// An error and its causes, which tokio-postgres keeps out of its own message.
fn describe(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// `host:port,host:port/database`: where the registry is, without credentials.
fn target(config: &Config) -> String {
    let ports = config.get_ports();
    let port = |i: usize| {
        ports
            .get(i)
            .or(ports.first())
            .copied()
            .unwrap_or(DEFAULT_PORT)
    };
    let hosts: Vec<String> = if config.get_hosts().is_empty() {
        let addrs = config.get_hostaddrs().iter();
        addrs
            .enumerate()
            .map(|(i, a)| format!("{a}:{}", port(i)))
            .collect()
    } else {
        let hosts = config.get_hosts().iter().enumerate();
        hosts
            .map(|(i, host)| match host {
                Host::Tcp(name) => format!("{name}:{}", port(i)),
                Host::Unix(dir) => format!("{}:{}", dir.display(), port(i)),
            })
            .collect()
    };
    format!("{}/{}", hosts.join(","), config.get_dbname().unwrap_or(""))
}

/// The URL with its password, in the user part or as a parameter, replaced by `***`.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => match userinfo.split_once(':') {
            Some((user, _password)) => format!("{user}:***@{hosts}"),
            None => authority.to_string(),
        },
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let params: Vec<&str> = query
                .split('&')
                .map(|p| {
                    if p.starts_with("password=") {
                        "password=***"
                    } else {
                        p
                    }
                })
                .collect();
            format!("{path}?{}", params.join("&"))
        }
        None => tail.to_string(),
    };
    format!("{scheme}://{authority}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invalid(url: &str) -> String {
        PostgresRegistry::from_url(url).unwrap_err().to_string()
    }

    #[test]
    fn urls_are_checked_without_connecting_and_passwords_never_shown() {
        let registry =
            PostgresRegistry::from_url("postgresql://app:s3cret@db1:5433,db2/fleet?sslmode=prefer")
                .unwrap();
        let debug = format!("{registry:?}");
        assert_eq!(
            debug,
            r#"PostgresRegistry { target: "db1:5433,db2:5432/fleet", .. }"#
        );
        assert_eq!(
            invalid("postgres://app:s3cret@db:x/fleet?password=s3cret&sslmode=disable"),
            r#"lease URL "postgres://app:***@db:x/fleet?password=***&sslmode=disable": invalid connection string: invalid value for option `port`"#
        );
        assert_eq!(
            invalid("postgres:///fleet"),
            r#"lease URL "postgres:///fleet": no host; expected postgres://USER@HOST:PORT/DATABASE"#
        );
        assert_eq!(
            invalid("postgres://db/fleet?sslmode=require"),
            r#"lease URL "postgres://db/fleet?sslmode=require": sslmode=require needs TLS, which the postgres lease backend does not support; use sslmode=prefer or sslmode=disable"#
        );
        assert_eq!(
            invalid("host=db user=app"),
            r#"lease URL "host=db user=app": expected postgres://USER@HOST:PORT/DATABASE"#
        );
    }

    #[test]
    fn values_beyond_bigint_are_refused_not_wrapped() {
        assert_eq!(bigint("worker", 7).unwrap(), 7);
        assert_eq!(
            bigint("high-water mark", u64::MAX).unwrap_err().to_string(),
            "high-water mark 18446744073709551615 is out of range of a postgres bigint (at most 9223372036854775807)"
        );
    }
}
