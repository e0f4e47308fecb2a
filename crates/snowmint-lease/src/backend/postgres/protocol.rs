//! The table, the statements that take, renew and give back its rows, and the calls
//! that run them on a session.
//!
//! Each statement is a [`Sql`]: its text with its parameters' types, sent unnamed in the
//! round trip that runs it (see [`session`](super::session) for why nothing is prepared).

use std::borrow::Cow;
use std::sync::LazyLock;

use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{GenericClient, Row};

use super::PostgresRegistry;
use super::session::{Session, transaction_limits};
use crate::registry::{Claim, Lease, LeaseError};

/// The table, made at the first connection if it is absent: see [`PostgresRegistry`].
pub(super) const CREATE_TABLE: &str = "CREATE TABLE IF NOT EXISTS snowmint_workers (
    namespace text NOT NULL,
    datacenter bigint NOT NULL,
    worker bigint NOT NULL,
    holder text,
    identity text,
    expires_at timestamptz,
    high_water bigint,
    taken_at timestamptz,
    PRIMARY KEY (namespace, datacenter, worker)
)";

/// Whether the table exists, and whether it has `taken_at` (a table made by an earlier
/// release lacks it until a server of this one adds it). No parameters.
pub(super) const SHAPE: &str = "SELECT to_regclass('snowmint_workers') IS NOT NULL,
    EXISTS (SELECT FROM pg_attribute
            WHERE attrelid = to_regclass('snowmint_workers') AND attname = 'taken_at'
              AND NOT attisdropped)";

/// Adds `taken_at` to a table an earlier release made. Nullable and without a default, so
/// it costs no rewrite of the table, and the statements of earlier releases, which name
/// their columns, run on as before: the servers of a fleet being upgraded keep working.
pub(super) const ADD_TAKEN_AT: &str =
    "ALTER TABLE snowmint_workers ADD COLUMN IF NOT EXISTS taken_at timestamptz";

/// Takes the lowest free or expired row, of this identity only when `sticky`. Rows that
/// another acquisition has locked are skipped, not waited for. The choice is a
/// materialized CTE read through a scalar subquery: made once, then one index lookup. (As
/// a subquery joined in `FROM`, the planner may run it again for every row of the
/// datacenter; each rerun skips the rows this statement has just updated and picks the
/// next free one, so one call took every free row.)
/// A row held under one of the namespaces of earlier releases (`$7`) is passed over.
/// Parameters: namespace, datacenter, workers, holder, identity, TTL in seconds, the
/// namespaces of earlier releases. When `stamped` (the table has `taken_at`), the row
/// records when it was taken.
fn take_sql(sticky: bool, stamped: bool) -> Sql {
    let only_identity = if sticky { "AND identity = $5" } else { "" };
    let taken_at = if stamped {
        ", taken_at = clock_timestamp()"
    } else {
        ""
    };
    let text = format!(
        "WITH free AS MATERIALIZED (
             SELECT worker FROM snowmint_workers w
             WHERE namespace = $1 AND datacenter = $2 AND worker >= 0 AND worker < $3
               AND (holder IS NULL OR expires_at < clock_timestamp()) {only_identity}
               AND NOT EXISTS (SELECT FROM snowmint_workers old
                               WHERE old.namespace = ANY($7::text[]) AND old.datacenter = $2
                                 AND old.worker = w.worker AND old.holder IS NOT NULL
                                 AND old.expires_at > clock_timestamp())
             ORDER BY worker LIMIT 1
             FOR UPDATE SKIP LOCKED)
         UPDATE snowmint_workers
         SET holder = $4, identity = $5,
             expires_at = clock_timestamp() + $6::float8 * interval '1 second'{taken_at}
         WHERE namespace = $1 AND datacenter = $2 AND worker = (SELECT worker FROM free)
         RETURNING worker, high_water"
    );
    let types = &[
        Type::TEXT,
        Type::INT8,
        Type::INT8,
        Type::TEXT,
        Type::TEXT,
        Type::FLOAT8,
        Type::TEXT_ARRAY,
    ];
    Sql {
        text: Cow::Owned(text),
        types,
    }
}

/// [`take_sql`] in its four forms: for the claim's identity only or any free row, on a
/// table with `taken_at` or without.
fn take_statement(sticky: bool, stamped: bool) -> &'static Sql {
    static FORMS: LazyLock<[[Sql; 2]; 2]> = LazyLock::new(|| {
        [false, true].map(|sticky| [false, true].map(|stamped| take_sql(sticky, stamped)))
    });
    &FORMS[usize::from(sticky)][usize::from(stamped)]
}

/// The first worker number in `from..workers` with no row: `from`, or the first row (in
/// index order) from `from` on whose successor is missing. Parameters: namespace,
/// datacenter, workers, from.
///
/// An acquisition that finds every row held searches from 0; one that lost the race to
/// create that row searches again from a start of its own, then from 0, so a fleet that
/// starts together on an empty table creates rows all over the datacenter. Searching from
/// 0 alone, every acquirer picked the same lowest missing row, all but one waited for its
/// creator to commit and searched again, so the rows were made one at a time and N
/// acquirers ran O(N²) searches.
const MISSING_FROM: Sql = Sql::new(
    "SELECT candidate FROM (
        SELECT $4::bigint AS candidate
        WHERE NOT EXISTS (SELECT FROM snowmint_workers
                          WHERE namespace = $1 AND datacenter = $2 AND worker = $4)
        UNION ALL
        (SELECT worker + 1 FROM (
             SELECT worker, lead(worker) OVER (ORDER BY worker) AS next
             FROM snowmint_workers
             WHERE namespace = $1 AND datacenter = $2 AND worker >= $4 AND worker < $3) AS rows
         WHERE next IS DISTINCT FROM worker + 1
         ORDER BY worker
         LIMIT 1)
    ) AS missing
    WHERE candidate < $3
    LIMIT 1",
    &[Type::TEXT, Type::INT8, Type::INT8, Type::INT8],
);

/// Creates a held row, unless another session created it first; when `stamped`, with the
/// instant it was taken. Parameters: namespace, datacenter, worker, holder, identity, TTL
/// in seconds.
fn insert_sql(stamped: bool) -> Sql {
    let (column, value) = if stamped {
        (", taken_at", ", clock_timestamp()")
    } else {
        ("", "")
    };
    let text = format!(
        "INSERT INTO snowmint_workers
             (namespace, datacenter, worker, holder, identity, expires_at{column})
         VALUES ($1, $2, $3, $4, $5, clock_timestamp() + $6::float8 * interval '1 second'{value})
         ON CONFLICT DO NOTHING
         RETURNING worker"
    );
    let types = &[
        Type::TEXT,
        Type::INT8,
        Type::INT8,
        Type::TEXT,
        Type::TEXT,
        Type::FLOAT8,
    ];
    Sql {
        text: Cow::Owned(text),
        types,
    }
}

/// [`insert_sql`] on a table with `taken_at` or without.
fn insert_statement(stamped: bool) -> &'static Sql {
    static FORMS: LazyLock<[Sql; 2]> = LazyLock::new(|| [false, true].map(insert_sql));
    &FORMS[usize::from(stamped)]
}

/// The fleet's layout: recorded with its first acquisition, in the row of worker -1 of
/// datacenter -1 (its `identity`), which no acquisition takes; then read back.
/// Parameters: namespace, layout.
const LAYOUT: Sql = Sql::new(
    "WITH recorded AS (
        INSERT INTO snowmint_workers (namespace, datacenter, worker, identity)
        VALUES ($1, -1, -1, $2)
        ON CONFLICT DO NOTHING
        RETURNING identity)
    SELECT identity FROM recorded
    UNION ALL
    SELECT identity FROM snowmint_workers WHERE namespace = $1 AND datacenter = -1 AND worker = -1
    LIMIT 1",
    &[Type::TEXT, Type::TEXT],
);

/// What earlier releases left for one worker: the largest mark, how many namespaces hold
/// one, and how many hold the worker now. Parameters: their namespaces, datacenter, worker.
const LEFT: Sql = Sql::new(
    "SELECT max(high_water), count(high_water),
        count(*) FILTER (WHERE holder IS NOT NULL AND expires_at > clock_timestamp())
    FROM snowmint_workers
    WHERE namespace = ANY($1::text[]) AND datacenter = $2 AND worker = $3",
    &[Type::TEXT_ARRAY, Type::INT8, Type::INT8],
);

/// The namespaces that may be an earlier release's: `<name>-...` for each name given
/// (`twitter-%`, `custom-%`), on the first column of the primary key. Parameters: the
/// patterns.
const EARLIER: Sql = Sql::new(
    "SELECT DISTINCT namespace FROM snowmint_workers
    WHERE namespace LIKE ANY($1::text[])",
    &[Type::TEXT_ARRAY],
);

/// Since when the server vouches for its rows (ms since the Unix epoch, its clock),
/// recorded in the row of worker -1 of datacenter -1 in namespace `snowmint.incarnation`
/// (`identity`: the server's start time and timeline; `high_water`: that instant). A
/// server restarted on the same timeline (from a copy of its data directory, say) may lack
/// what holders wrote before it started; one on a new timeline (a promoted standby, a
/// restore to a point in time) may lack what they wrote before it was first seen on it,
/// at the latest now. A server with no record that never left timeline 1 started fresh.
/// The start time and timeline change with every start and promotion, and any role may
/// read them (`pg_control_system()` would need a superuser). The row is written only when
/// the record is not this incarnation's: every acquisition asks, inside its transaction,
/// and a write would hold the row's lock until it commits, so that a fleet's acquisitions
/// took turns. No parameters.
const VOUCHED: Sql = Sql::new(
    "WITH live AS (
        SELECT pg_postmaster_start_time()::text || ' timeline ' || timeline AS stamp, timeline,
               ceil(extract(epoch FROM pg_postmaster_start_time()) * 1000)::bigint AS started,
               floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now
        FROM (SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int
                     AS timeline) AS wal),
    recorded AS (
        SELECT identity, high_water FROM snowmint_workers
        WHERE namespace = 'snowmint.incarnation' AND datacenter = -1 AND worker = -1),
    chosen AS (
        SELECT live.stamp,
               CASE WHEN recorded.identity = live.stamp THEN recorded.high_water
                    WHEN split_part(recorded.identity, ' timeline ', 2) = live.timeline::text
                      OR (recorded.identity IS NULL AND live.timeline = 1) THEN live.started
                    ELSE live.now END AS since
        FROM live LEFT JOIN recorded ON true),
    written AS (
        INSERT INTO snowmint_workers (namespace, datacenter, worker, identity, high_water)
        SELECT 'snowmint.incarnation', -1, -1, stamp, since FROM chosen
        WHERE NOT EXISTS (SELECT FROM recorded WHERE recorded.identity = chosen.stamp)
        ON CONFLICT (namespace, datacenter, worker) DO UPDATE
        SET identity = EXCLUDED.identity,
            high_water = CASE WHEN snowmint_workers.identity = EXCLUDED.identity
                              THEN snowmint_workers.high_water ELSE EXCLUDED.high_water END
        RETURNING high_water)
    SELECT high_water FROM written
    UNION ALL
    SELECT recorded.high_water FROM recorded JOIN live ON recorded.identity = live.stamp
    LIMIT 1",
    &[],
);

/// The largest reach (ms) of the fleet's servers, raised to this one's: kept in the
/// `high_water` of the fleet's layout row. Parameters: namespace, reach.
///
/// Written only to raise it, for the reason [`VOUCHED`] gives. No row when a concurrent
/// acquisition raised it further while this statement ran (it waited for that one, and its
/// snapshot is older than the raise): the next statement sees the raise.
const REACH: Sql = Sql::new(
    "WITH raised AS (
        UPDATE snowmint_workers SET high_water = $2
        WHERE namespace = $1 AND datacenter = -1 AND worker = -1
          AND coalesce(high_water, 0) < $2
        RETURNING high_water)
    SELECT high_water FROM raised
    UNION ALL
    SELECT coalesce(high_water, 0) FROM snowmint_workers
    WHERE namespace = $1 AND datacenter = -1 AND worker = -1 AND coalesce(high_water, 0) >= $2
    LIMIT 1",
    &[Type::TEXT, Type::INT8],
);

/// Parameters: namespace, datacenter, worker, holder, TTL in seconds, high-water mark.
const RENEW: Sql = Sql::new(
    "UPDATE snowmint_workers
    SET expires_at = clock_timestamp() + $5::float8 * interval '1 second',
        high_water = greatest(coalesce(high_water, 0), $6)
    WHERE namespace = $1 AND datacenter = $2 AND worker = $3
      AND holder = $4 AND expires_at > clock_timestamp()",
    &[
        Type::TEXT,
        Type::INT8,
        Type::INT8,
        Type::TEXT,
        Type::FLOAT8,
        Type::INT8,
    ],
);

/// Why a renewal found nothing to renew. Parameters: namespace, datacenter, worker.
const HOLDER: Sql = Sql::new(
    "SELECT holder FROM snowmint_workers
    WHERE namespace = $1 AND datacenter = $2 AND worker = $3",
    &[Type::TEXT, Type::INT8, Type::INT8],
);

/// Frees the worker with the mark [`Registry::release`](crate::Registry::release) chose.
/// Parameters: namespace, datacenter, worker, holder, mark (ms).
const RELEASE: Sql = Sql::new(
    "UPDATE snowmint_workers
    SET holder = NULL, expires_at = NULL, high_water = $5
    WHERE namespace = $1 AND datacenter = $2 AND worker = $3 AND holder = $4",
    &[Type::TEXT, Type::INT8, Type::INT8, Type::TEXT, Type::INT8],
);

/// A bound parameter.
type Param<'a> = &'a (dyn ToSql + Sync);

/// A statement and the types of its parameters, `$1` first: sent unnamed with them, parsed
/// and run in one round trip.
pub(super) struct Sql {
    text: Cow<'static, str>,
    types: &'static [Type],
}

impl Sql {
    const fn new(text: &'static str, types: &'static [Type]) -> Sql {
        Sql {
            text: Cow::Borrowed(text),
            types,
        }
    }

    fn typed<'a>(&self, params: &[Param<'a>]) -> Vec<(Param<'a>, Type)> {
        debug_assert_eq!(params.len(), self.types.len(), "{}", self.text);
        params
            .iter()
            .copied()
            .zip(self.types.iter().cloned())
            .collect()
    }

    /// The row it answers, if any (more than one is an error).
    async fn opt(
        &self,
        on: &impl GenericClient,
        params: &[Param<'_>],
    ) -> Result<Option<Row>, tokio_postgres::Error> {
        on.query_typed_opt(&self.text, &self.typed(params)).await
    }

    /// The one row it answers.
    async fn one(
        &self,
        on: &impl GenericClient,
        params: &[Param<'_>],
    ) -> Result<Row, tokio_postgres::Error> {
        on.query_typed_one(&self.text, &self.typed(params)).await
    }

    /// Every row it answers.
    async fn all(
        &self,
        on: &impl GenericClient,
        params: &[Param<'_>],
    ) -> Result<Vec<Row>, tokio_postgres::Error> {
        on.query_typed(&self.text, &self.typed(params)).await
    }

    /// How many rows it changed.
    async fn execute(
        &self,
        on: &impl GenericClient,
        params: &[Param<'_>],
    ) -> Result<u64, tokio_postgres::Error> {
        on.execute_typed(&self.text, &self.typed(params)).await
    }
}

/// Where a search for a missing row starts: anywhere in `0..workers`, a different place
/// for each search.
fn start_of_search(workers: i64) -> i64 {
    use std::hash::{BuildHasher, RandomState};
    let anywhere = RandomState::new().hash_one(std::time::SystemTime::now());
    // `workers` is positive here: a claim of none is refused before any search.
    i64::try_from(anywhere % workers.unsigned_abs().max(1)).unwrap_or(0)
}

impl PostgresRegistry {
    pub(super) async fn acquire_on(
        &self,
        s: &mut Session,
        claim: &Claim,
    ) -> Result<Lease, LeaseError> {
        let pg = |err| self.failed(err);
        let (ns, holder, identity) = (&claim.namespace, &claim.holder, &claim.identity);
        let dc = bigint("datacenter", claim.datacenter)?;
        let workers = bigint("worker count", claim.workers)?;
        let ttl = claim.ttl.as_secs_f64();
        let legacy = &claim.legacy;
        // A statement racing another session's first record waits for it, then sees
        // neither its own insert nor the other's row: the second statement sees that row.
        let mut recorded: Option<String> = None;
        for _ in 0..2 {
            let row = LAYOUT.opt(&s.client, &[ns, &claim.layout]).await;
            if let Some(row) = row.map_err(pg)? {
                recorded = row.try_get(0).map_err(pg)?;
                break;
            }
        }
        if let Some(err) = claim.other_layout(recorded.as_deref().unwrap_or_default()) {
            return Err(err);
        }
        let tx = s.client.transaction().await.map_err(pg)?;
        tx.batch_execute(&transaction_limits()).await.map_err(pg)?;
        let take: [Param; 7] = [ns, &dc, &workers, holder, identity, &ttl, legacy];
        let mut taken = take_statement(true, s.stamped)
            .opt(&tx, &take)
            .await
            .map_err(pg)?;
        if taken.is_none() {
            taken = take_statement(false, s.stamped)
                .opt(&tx, &take)
                .await
                .map_err(pg)?;
        }
        let mut from = 0i64;
        let (worker, mark): (i64, Option<i64>) = match taken {
            Some(row) => (row.try_get(0).map_err(pg)?, row.try_get(1).map_err(pg)?),
            // Every row is held: create the lowest missing one. A conflict means another
            // session created that one first and committed it, so the next search sees it
            // and moves past it; the call's deadline bounds the retries. After a conflict
            // the search starts at a place of its own (MISSING_FROM says why).
            None => loop {
                let search: [Param; 4] = [ns, &dc, &workers, &from];
                let mut missing = MISSING_FROM.opt(&tx, &search).await.map_err(pg)?;
                if missing.is_none() && from > 0 {
                    let search: [Param; 4] = [ns, &dc, &workers, &0i64];
                    missing = MISSING_FROM.opt(&tx, &search).await.map_err(pg)?;
                }
                let Some(missing) = missing else {
                    return Err(LeaseError::exhausted(claim));
                };
                let worker: i64 = missing.try_get(0).map_err(pg)?;
                let insert: [Param; 6] = [ns, &dc, &worker, holder, identity, &ttl];
                if insert_statement(s.stamped)
                    .opt(&tx, &insert)
                    .await
                    .map_err(pg)?
                    .is_none()
                {
                    from = start_of_search(workers);
                    continue;
                }
                // A server of an earlier release holds it under its own namespace: leave
                // the new row free, so the next search moves past it.
                let left = LEFT.one(&tx, &[legacy, &dc, &worker]).await;
                if left.map_err(pg)?.try_get::<_, i64>(2).map_err(pg)? > 0 {
                    let free: [Param; 5] = [ns, &dc, &worker, holder, &None::<i64>];
                    RELEASE.execute(&tx, &free).await.map_err(pg)?;
                    continue;
                }
                break (worker, None);
            },
        };
        let left = LEFT.one(&tx, &[legacy, &dc, &worker]).await;
        let left = left.map_err(pg)?;
        let (left_mark, holding): (Option<i64>, i64) =
            (left.try_get(0).map_err(pg)?, left.try_get(1).map_err(pg)?);
        if holding > 1 {
            tracing::warn!(
                worker,
                namespaces = ?legacy,
                "marks of this worker id were left under {holding} namespaces of earlier releases; starting after the largest"
            );
        }
        let mark = mark.max(left_mark);
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
        let since: i64 = VOUCHED
            .one(&tx, &[])
            .await
            .map_err(pg)?
            .try_get(0)
            .map_err(pg)?;
        let own_reach = bigint("reach", claim.reach_ms())?;
        let mut reach: Option<i64> = None;
        // As for the layout: a statement that waited for a concurrent raise sees it only
        // in the next one.
        for _ in 0..2 {
            if let Some(row) = REACH.opt(&tx, &[ns, &own_reach]).await.map_err(pg)? {
                reach = Some(row.try_get(0).map_err(pg)?);
                break;
            }
        }
        let reach = reach.ok_or_else(|| {
            self.unavailable("the fleet's reach changed under two statements that raised it")
        })?;
        let claim = &claim.clone().reaching(u64::try_from(reach).unwrap_or(0));
        tx.commit().await.map_err(pg)?;
        Ok(Lease {
            datacenter: claim.datacenter,
            worker,
            high_water_ms: claim.start_after(
                crate::legacy::after_leads(claim, high_water_ms),
                u64::try_from(since).unwrap_or(0),
                worker,
            ),
            token: 0,
        })
    }

    /// The namespaces of earlier releases in the table ([`EARLIER`]).
    pub(super) async fn earlier_namespaces(&self, s: &Session) -> Result<Vec<String>, LeaseError> {
        let names = snowmint::Layout::PRESETS.map(|p| p.name());
        let patterns: Vec<String> = names
            .into_iter()
            .chain(["custom"])
            .map(|name| format!("{name}-%"))
            .collect();
        let rows = EARLIER.all(&s.client, &[&patterns]).await;
        rows.map_err(|err| self.failed(err))?
            .iter()
            .map(|row| row.try_get(0).map_err(|err| self.failed(err)))
            .collect()
    }

    pub(super) async fn renew_on(
        &self,
        s: &Session,
        claim: &Claim,
        lease: &Lease,
        mark: u64,
    ) -> Result<(), LeaseError> {
        let pg = |err| self.failed(err);
        let (ns, holder) = (&claim.namespace, &claim.holder);
        let (dc, worker) = key(lease)?;
        let (ttl, mark) = (claim.ttl.as_secs_f64(), bigint("high-water mark", mark)?);
        let renew: [Param; 6] = [ns, &dc, &worker, holder, &ttl, &mark];
        if RENEW.execute(&s.client, &renew).await.map_err(pg)? == 1 {
            return Ok(());
        }
        // Only to say why: the renewal itself has already failed, atomically.
        let key: [Param; 3] = [ns, &dc, &worker];
        let row = HOLDER.opt(&s.client, &key).await;
        let reason = match row.map_err(pg)? {
            None => "its row is gone from snowmint_workers".to_string(),
            Some(row) => match row.try_get::<_, Option<String>>(0).map_err(pg)? {
                None => "it was given back".to_string(),
                Some(now) if now == *holder => "it expired before this renewal".to_string(),
                Some(now) => format!("it expired and {now} holds it now"),
            },
        };
        Err(LeaseError::lost(lease, reason))
    }

    pub(super) async fn release_on(
        &self,
        s: &Session,
        claim: &Claim,
        lease: &Lease,
        mark: u64,
    ) -> Result<(), LeaseError> {
        let (ns, holder) = (&claim.namespace, &claim.holder);
        let (dc, worker) = key(lease)?;
        let mark = bigint("high-water mark", mark)?;
        // No row changed means the lease was already lost: nothing to give back.
        let release: [Param; 5] = [ns, &dc, &worker, holder, &mark];
        let released = RELEASE.execute(&s.client, &release).await;
        released.map_err(|err| self.failed(err))?;
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_beyond_bigint_are_refused_not_wrapped() {
        assert_eq!(bigint("worker", 7).unwrap(), 7);
        assert_eq!(
            bigint("high-water mark", u64::MAX).unwrap_err().to_string(),
            "high-water mark 18446744073709551615 is out of range of a postgres bigint (at most 9223372036854775807)"
        );
    }
}
