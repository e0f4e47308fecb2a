//! Listing a PostgreSQL registry: the rows of `snowmint_workers`, read in one read-only
//! transaction on a connection of the listing's own.
//!
//! Every statement goes unnamed with its types (`query_typed`), and the only setting is
//! the transaction's own statement timeout (`set_config(..., true)`): nothing is prepared
//! or set for the session, so a listing runs through PgBouncer in transaction mode, which
//! hands each transaction a server connection of its choosing. It needs `SELECT` on the
//! table and nothing else.

use std::collections::BTreeMap;

use tokio_postgres::IsolationLevel;
use tokio_postgres::Row;

use super::PostgresRegistry;
use super::protocol::SHAPE;
use super::session::{CALL_TIMEOUT, STATEMENT_TIMEOUT_MS};
use crate::listing::{Lasts, ListFilter, Listing, Record, State, now_ms};
use crate::registry::LeaseError;

/// Every worker row, with its namespace's layout (recorded in the row of worker -1 of
/// datacenter -1), the instant it was taken as `taken` gives it, and the ms left until it
/// expires on the database's clock (negative once expired). The rows of datacenter -1 (the
/// layouts, and the incarnation record) are no worker's.
fn rows_sql(taken: &str) -> String {
    format!(
        "SELECT w.namespace, w.datacenter, w.worker, w.holder, w.identity, {taken},
                floor(extract(epoch FROM w.expires_at - clock_timestamp()) * 1000)::bigint,
                w.high_water, l.identity
         FROM snowmint_workers w
         LEFT JOIN snowmint_workers l
           ON l.namespace = w.namespace AND l.datacenter = -1 AND l.worker = -1
         WHERE w.datacenter >= 0 AND w.worker >= 0"
    )
}

/// The instant a row was taken, ms since the Unix epoch, from a table that has `taken_at`.
const TAKEN_AT: &str = "floor(extract(epoch FROM w.taken_at) * 1000)::bigint";
/// The same from a table an earlier release made, which lacks it.
const NO_TAKEN_AT: &str = "NULL::bigint";

impl PostgresRegistry {
    pub(super) async fn list_rows(&self, filter: &ListFilter) -> Result<Listing, LeaseError> {
        let late =
            || self.unavailable(&format!("no answer within {} ms", CALL_TIMEOUT.as_millis()));
        crate::backend::within(CALL_TIMEOUT, self.read_rows(filter), late).await
    }

    async fn read_rows(&self, filter: &ListFilter) -> Result<Listing, LeaseError> {
        let pg = |err| self.failed(err);
        let mut client = self.open().await?;
        // One snapshot for every statement, and none of them may write.
        let tx = client
            .build_transaction()
            .isolation_level(IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(pg)?;
        let limit =
            format!("SELECT set_config('statement_timeout', '{STATEMENT_TIMEOUT_MS}', true)");
        tx.query_typed(&limit, &[]).await.map_err(pg)?;
        let shape = tx.query_typed_one(SHAPE, &[]).await.map_err(pg)?;
        let (exists, stamped): (bool, bool) =
            (shape.try_get(0).map_err(pg)?, shape.try_get(1).map_err(pg)?);
        let read_at_ms = now_ms();
        let rows = if exists {
            let taken = if stamped { TAKEN_AT } else { NO_TAKEN_AT };
            tx.query_typed(&rows_sql(taken), &[]).await.map_err(pg)?
        } else {
            Vec::new()
        };
        tx.commit().await.map_err(pg)?;
        let records = rows
            .iter()
            .map(|row| self.record(row, read_at_ms))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Listing::new(
            "postgres",
            read_at_ms,
            records.into_iter().flatten().collect(),
            &BTreeMap::new(),
            filter,
        ))
    }

    /// The record of one row; `None` for a row of no worker id a layout can have (a
    /// number out of range, written by hand).
    fn record(&self, row: &Row, read_at_ms: u64) -> Result<Option<Record>, LeaseError> {
        let pg = |err| self.failed(err);
        let namespace: String = row.try_get(0).map_err(pg)?;
        let (dc, worker): (i64, i64) = (row.try_get(1).map_err(pg)?, row.try_get(2).map_err(pg)?);
        let (Ok(dc), Ok(worker)) = (u64::try_from(dc), u64::try_from(worker)) else {
            return Ok(None);
        };
        let holder: Option<String> = row.try_get(3).map_err(pg)?;
        let taken_at: Option<i64> = row.try_get(5).map_err(pg)?;
        let left_ms: Option<i64> = row.try_get(6).map_err(pg)?;
        let mark: Option<i64> = row.try_get(7).map_err(pg)?;
        let high_water_ms = mark
            .map(|mark| {
                u64::try_from(mark).map_err(|_| {
                    self.unavailable(&format!(
                        "worker {worker} of datacenter {dc} in {namespace} has a negative high-water mark {mark} in snowmint_workers"
                    ))
                })
            })
            .transpose()?;
        let mut record = Record {
            identity: row.try_get(4).map_err(pg)?,
            layout: row.try_get(8).map_err(pg)?,
            taken_at_ms: taken_at.and_then(|ms| u64::try_from(ms).ok()),
            high_water_ms,
            ..Record::new(&namespace, dc, worker, Lasts::Ttl)
        };
        if let Some(holder) = holder {
            let left_ms = left_ms.unwrap_or(0);
            record = record.held_by(&holder);
            record.expires_at_ms = Some(read_at_ms.saturating_add_signed(left_ms));
            if left_ms <= 0 {
                record.state = State::Expired;
            }
        }
        Ok(Some(record))
    }
}
