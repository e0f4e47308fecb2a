//! `GET /v1/layout`: what this server is made of: its layout, identity, lease and clock.

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use snowmint::error::Chain;
use snowmint::{Bits, UnixMs};

use super::query::Params;
use super::schema::ErrorBody;
use crate::{ApiError, AppState};

/// The answer of `GET /v1/layout`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct LayoutInfo {
    /// The layout's name.
    pub layout: &'static str,
    /// Bits of each field.
    pub bits: Bits,
    /// Milliseconds per tick.
    pub tick_ms: u64,
    /// The epoch, ms since the Unix epoch.
    pub epoch_ms: u64,
    /// The epoch, RFC 3339.
    pub epoch: String,
    /// This server's datacenter id (null while it holds no worker id).
    pub datacenter: Option<u64>,
    /// This server's worker id (null while it holds no worker id).
    pub worker: Option<u64>,
    /// The worker-id lease.
    pub lease: LeaseInfo,
    /// Where the ids' time comes from, and what happens when the clock goes back.
    pub clock: ClockInfo,
    /// Ids per second one worker id can issue.
    pub ids_per_second: u64,
    /// Distinct (datacenter, worker) pairs.
    pub worker_ids: u64,
    /// When the time field runs out, ms since the Unix epoch.
    pub runs_out_ms: u64,
    /// When the time field runs out, RFC 3339.
    pub runs_out: String,
    /// For a layout that uses bit 63: when its ids pass 2^63 and overflow a signed 64-bit
    /// column (SQL `BIGINT`), ms since the Unix epoch; null for 63-bit layouts.
    pub signed_overflow_ms: Option<u64>,
    /// The same instant, RFC 3339.
    pub signed_overflow: Option<String>,
    /// A warning about the layout, such as a time field that runs out within a year.
    pub warning: Option<String>,
}

/// The worker-id lease, as JSON.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct LeaseInfo {
    /// `static`, `hostname`, `file`, `redis`, `etcd`, `postgres` or `zookeeper`.
    pub backend: &'static str,
    /// `held`, `acquiring` or `released`.
    pub state: &'static str,
    /// Ids may be issued until then (RFC 3339), null for leases that do not expire.
    pub valid_until: Option<String>,
    /// How long the held lease lasts without renewal, in ms: the TTL asked for, or the one
    /// the registry granted (ZooKeeper's session timeout); null for leases that do not
    /// expire, and while none is held.
    pub ttl_ms: Option<u64>,
    /// Renewals confirmed.
    pub renewals: u64,
    /// Renewals and acquisitions that failed.
    pub failures: u64,
    /// The last error, if any.
    pub error: Option<String>,
}

/// The clock and its policies, as JSON.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ClockInfo {
    /// `monotonic`, `wall` or `counter`.
    pub mode: &'static str,
    /// Whether an id's time field is when it was made: false for `counter`, whose time
    /// field counts spent sequences.
    pub ids_tell_time: bool,
    /// `refuse`, `wait`, `logical` or `spare`: what happens when the clock goes back.
    pub rollback: &'static str,
    /// The longest wait of `wait` and `spare`, in ms; null for the others.
    pub rollback_wait_ms: Option<u64>,
    /// Where each tick's sequence starts: `zero`, `random` or `continue`.
    pub sequence_start: &'static str,
}

impl From<&crate::ClockPolicies> for ClockInfo {
    fn from(p: &crate::ClockPolicies) -> ClockInfo {
        ClockInfo {
            mode: p.clock.name(),
            ids_tell_time: p.clock.tells_time(),
            rollback: p.rollback_name(),
            rollback_wait_ms: p.rollback_wait_ms(),
            sequence_start: p.sequence_start_name(),
        }
    }
}

/// `GET /v1/layout`: the server's layout, identity and capacity.
#[utoipa::path(
    get,
    path = "/v1/layout",
    tag = "server",
    summary = "This server's layout, datacenter, worker and capacity",
    responses(
        (status = 200, description = "The layout", body = LayoutInfo),
        (status = 400, description = "A query parameter: this route takes none", body = ErrorBody),
    ),
)]
pub async fn layout(
    State(state): State<AppState>,
    // Refuses any query parameter.
    _: Params,
) -> Result<Json<LayoutInfo>, ApiError> {
    let source = &state.source;
    let issuer = source.issuer();
    let layout = source.layout();
    let capacity = layout.capacity();
    Ok(Json(LayoutInfo {
        layout: layout.name(),
        bits: layout.bits(),
        tick_ms: layout.tick_ms(),
        epoch_ms: layout.epoch_ms(),
        epoch: UnixMs(layout.epoch_ms()).to_string(),
        datacenter: issuer.as_ref().map(|s| s.generator().datacenter()),
        worker: issuer.as_ref().map(|s| s.generator().worker()),
        lease: lease_info(source),
        clock: ClockInfo::from(source.clock_policies()),
        ids_per_second: capacity.ids_per_second,
        worker_ids: capacity.worker_ids,
        runs_out_ms: capacity.runs_out_ms,
        runs_out: UnixMs(capacity.runs_out_ms).to_string(),
        signed_overflow_ms: capacity.signed_overflow_ms,
        signed_overflow: capacity.signed_overflow_ms.map(|ms| UnixMs(ms).to_string()),
        warning: layout.runs_out_warning(snowmint::Clock::now_ms(&snowmint::WallClock)),
    }))
}

fn lease_info(source: &crate::IdSource) -> LeaseInfo {
    use snowmint_lease::LeaseStatus;
    use std::sync::atomic::Ordering::Relaxed;
    let (renewals, failures) = source
        .with_keeper(|k| {
            let c = k.counters();
            (
                c.renewals.load(Relaxed),
                c.renew_failures.load(Relaxed) + c.acquire_failures.load(Relaxed),
            )
        })
        .unwrap_or((0, 0));
    let (state, valid_until, ttl_ms, error) = match source.lease_status() {
        LeaseStatus::Held(held) => (
            "held",
            (held.valid_until_ms != u64::MAX).then(|| UnixMs(held.valid_until_ms).to_string()),
            (held.ttl_ms > 0).then_some(held.ttl_ms),
            held.last_error,
        ),
        LeaseStatus::Acquiring { last_error, .. } => ("acquiring", None, None, last_error),
        LeaseStatus::Released => ("released", None, None, None),
    };
    LeaseInfo {
        backend: source.backend(),
        state,
        valid_until,
        ttl_ms,
        renewals,
        failures,
        error: error.map(|err| Chain(&err).to_string()),
    }
}
