//! The registry's connection: opened at the first call and again after a failure, the
//! table created (or given `taken_at`) if need be; and the deadline of every call.
//!
//! The connection keeps no state of its own on the server, so that it may run through a
//! pool in transaction mode (PgBouncer), where each transaction, or each statement outside
//! one, may run on another server connection: no statement is prepared by name (each is
//! sent with its parameter types, unnamed, in the round trip that runs it), and the
//! server's timeouts are set for each acquisition's transaction (`SET LOCAL`), not for the
//! session.

use std::time::Duration;

use snowmint::error::Chain;
use tokio::sync::MutexGuard;
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

use super::protocol::{ADD_TAKEN_AT, CREATE_TABLE, SHAPE};
use super::{PostgresRegistry, one_line};
use crate::registry::LeaseError;

/// How long the whole of one call may take, connecting included: past it the registry is
/// reported unavailable and the connection dropped (the server then rolls back whatever
/// the call had begun).
pub(super) const CALL_TIMEOUT: Duration = Duration::from_secs(2);
/// The server's own limit on one statement of an acquisition or a listing, below
/// [`CALL_TIMEOUT`] so that a slow statement is usually cancelled by the server, which says
/// why.
pub(super) const STATEMENT_TIMEOUT_MS: u64 = 1_500;
/// How long adding `taken_at` waits for the table's lock. `ALTER TABLE` needs the table to
/// itself, and every statement on it queues behind an `ALTER` that waits: a fleet's
/// acquisitions must not stall behind the migration, which the next connection tries again.
const MIGRATION_LOCK_WAIT_MS: u64 = 500;
/// An acquisition that stops talking inside its transaction (its host vanished without
/// closing the socket) is ended after this long, so it cannot hold a row lock, or an
/// uncommitted new worker row that others wait on, for the hours TCP keepalive would take.
const IDLE_IN_TRANSACTION_MS: u64 = 5_000;
/// Set first in each acquisition's transaction, for that transaction only: a session
/// setting would stay on whichever server connection a pool ran it on, for other clients.
/// A renewal or a release is one statement by primary key outside a transaction: the
/// call's deadline bounds it, and a late one only extends or frees its own row.
pub(super) fn transaction_limits() -> String {
    format!(
        "SET LOCAL statement_timeout = {STATEMENT_TIMEOUT_MS}; \
         SET LOCAL idle_in_transaction_session_timeout = {IDLE_IN_TRANSACTION_MS}"
    )
}

/// The advisory lock taken while creating the table: "snowmint" in ASCII. Two sessions
/// running `CREATE TABLE IF NOT EXISTS` at once can both find the table missing, and one
/// then fails on the catalog's unique index; the lock makes them take turns.
const SCHEMA_LOCK: i64 = 0x736e_6f77_6d69_6e74;

/// A connection to the registry, or to a pool in front of it.
pub(super) struct Session {
    pub(super) client: Client,
    /// Whether the table has `taken_at` (a table of an earlier release that this role may
    /// not alter has not): which forms of the take and insert statements to send.
    pub(super) stamped: bool,
}

impl PostgresRegistry {
    pub(super) fn unavailable(&self, problem: &str) -> LeaseError {
        LeaseError::unavailable("postgres", format!("{}: {problem}", self.target))
    }

    /// Unavailable because of `err`, which says what the server or the connection did:
    /// in plain words when the server refused us (TLS, credentials, rights), one line
    /// that names the check.
    pub(super) fn failed(&self, err: tokio_postgres::Error) -> LeaseError {
        self.failed_at(&self.target, err)
    }

    fn failed_at(&self, at: &str, err: tokio_postgres::Error) -> LeaseError {
        match self.refusal(&err) {
            Some(words) => LeaseError::unavailable("postgres", format!("{at}: {words}")),
            None => LeaseError::unavailable_because("postgres", at, err),
        }
    }

    /// What the server refused, if it refused: the TLS handshake, TLS itself, the
    /// credentials, or a statement the role has no rights to.
    fn refusal(&self, err: &tokio_postgres::Error) -> Option<String> {
        if let Some(words) = crate::refusal::tls_refusal(err, &self.trust) {
            return Some(words);
        }
        if crate::refusal::chain(err)
            .any(|cause| cause.to_string() == "server does not support TLS")
        {
            return Some(
                "TLS to a plain port: the server does not offer TLS (ssl = off), and sslmode requires it"
                    .into(),
            );
        }
        let db = err.as_db_error()?;
        let user = self.config.get_user().unwrap_or("?");
        let said = one_line(db.message());
        let code = db.code().code();
        match code {
            // invalid_password
            "28P01" => Some(format!(
                "wrong user name or password for user {user} ({code})"
            )),
            // invalid_authorization_specification: pg_hba.conf has no line for it.
            "28000" if said.contains("no encryption") => Some(format!(
                "the server takes only TLS connections, and sslmode=disable sent plain text: {said} ({code})"
            )),
            "28000" => Some(format!("the server refused user {user}: {said} ({code})")),
            // insufficient_privilege
            "42501" => Some(format!("user {user} lacks the rights: {said} ({code})")),
            _ => None,
        }
    }

    /// Runs one call on the open session, or a new one, within [`CALL_TIMEOUT`], then
    /// puts the session back for the next call unless the call failed on it. A call cut
    /// short drops its session (it was taken out of the slot), closing the connection.
    pub(super) async fn on_session<T>(
        &self,
        call: impl AsyncFnOnce(&mut Session) -> Result<T, LeaseError>,
    ) -> Result<T, LeaseError> {
        let work = async {
            let (mut slot, mut session) = self.checkout().await?;
            let result = call(&mut session).await;
            checkin(&mut slot, session, &result);
            result
        };
        let late =
            || self.unavailable(&format!("no answer within {} ms", CALL_TIMEOUT.as_millis()));
        crate::backend::within(CALL_TIMEOUT, work, late).await
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

    /// Why a connection could not be opened or set up.
    fn cannot_connect(&self, err: tokio_postgres::Error) -> LeaseError {
        match self.refusal(&err) {
            Some(_) => self.failed_at(&self.target, err),
            None => self.failed_at(&format!("{}: cannot connect", self.target), err),
        }
    }

    /// A new connection, with nothing set on it and nothing prepared: a listing's, which
    /// then sends every statement unnamed (`query_typed`), so that it also runs through a
    /// pooler in transaction mode.
    pub(super) async fn open(&self) -> Result<tokio_postgres::Client, LeaseError> {
        let cannot = |err| self.cannot_connect(err);
        let target = self.target.clone();
        let ended = move |err: tokio_postgres::Error| {
            tracing::debug!(%target, error = %Chain(&err), "postgres registry connection ended");
        };
        let client = match &self.tls {
            Some(tls) => {
                let (client, connection) =
                    self.config.connect(tls.clone()).await.map_err(cannot)?;
                tokio::spawn(async move { connection.await.map_err(ended) });
                client
            }
            None => {
                let (client, connection) = self.config.connect(NoTls).await.map_err(cannot)?;
                tokio::spawn(async move { connection.await.map_err(ended) });
                client
            }
        };
        Ok(client)
    }

    async fn connect(&self) -> Result<Session, LeaseError> {
        let cannot = |err| self.cannot_connect(err);
        let client = self.open().await?;
        // One statement, outside a transaction: through a pool, the table's shape is all
        // it learns, and it sets nothing on the server connection.
        let answers = client.simple_query(SHAPE).await.map_err(cannot)?;
        let (exists, mut stamped) = answers
            .iter()
            .find_map(|m| match m {
                SimpleQueryMessage::Row(row) => {
                    Some((row.get(0) == Some("t"), row.get(1) == Some("t")))
                }
                _ => None,
            })
            .unwrap_or_default();
        // Checked first so that a role without CREATE rights can use a table made for it.
        if !exists {
            let create = format!(
                "BEGIN; SELECT pg_advisory_xact_lock({SCHEMA_LOCK}); {CREATE_TABLE}; COMMIT"
            );
            client.batch_execute(&create).await.map_err(cannot)?;
            stamped = true;
        } else if !stamped {
            stamped = self.add_taken_at(&client).await;
        }
        tracing::info!(target = %self.target, "connected to the postgres registry");
        Ok(Session { client, stamped })
    }
}

impl PostgresRegistry {
    /// Adds `taken_at` to a table an earlier release made, under the lock that table
    /// changes take ([`SCHEMA_LOCK`]); whether the table has it now. A role that may not
    /// alter the table (it belongs to another), or a table too busy to lock within
    /// [`MIGRATION_LOCK_WAIT_MS`], leaves it as it is: leases work without it, and only a
    /// listing misses when each worker id was taken.
    async fn add_taken_at(&self, client: &tokio_postgres::Client) -> bool {
        let migrate = format!(
            "BEGIN; SET LOCAL lock_timeout = {MIGRATION_LOCK_WAIT_MS};
             SELECT pg_advisory_xact_lock({SCHEMA_LOCK}); {ADD_TAKEN_AT}; COMMIT"
        );
        match client.batch_execute(&migrate).await {
            Ok(()) => {
                tracing::info!(target = %self.target, "added column taken_at to snowmint_workers");
                true
            }
            Err(err) => {
                // The failed statement left the transaction aborted.
                let _ = client.batch_execute("ROLLBACK").await;
                tracing::warn!(
                    target = %self.target,
                    error = %Chain(&err),
                    "cannot add column taken_at to snowmint_workers (run `ALTER TABLE snowmint_workers ADD COLUMN IF NOT EXISTS taken_at timestamptz` as its owner): leases work without it, and `snowmint fleet` shows no taken-at"
                );
                false
            }
        }
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
