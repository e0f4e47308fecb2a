//! One run: N keepers start together, hold, renew for a while, restart in waves, and give
//! their worker ids back; what each phase took and cost.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use serde::{Deserialize, Serialize};
use snowmint::{Layout, SystemClock};
use snowmint_lease::{Claim, Fleet, Keeper, LeaseSettings, LeaseStatus};
use tokio::task::JoinSet;

use super::proc;
use super::registry::{Kind, Registry};

/// How long the registry's CPU is measured with no instance, before the start.
const IDLE: Duration = Duration::from_secs(5);
/// How often PostgreSQL's sessions are counted through a run.
const SAMPLE_EVERY: Duration = Duration::from_millis(500);

/// What one run does.
pub struct Plan {
    pub instances: usize,
    pub layout: Layout,
    /// The steady window.
    pub steady: Duration,
    /// Instances restarted at once.
    pub wave: usize,
    /// How long one acquisition may take.
    pub deadline: Duration,
    pub max_connections: Option<u32>,
    /// PgBouncer's server connections in front of PostgreSQL, if it has a pool.
    pub pool: Option<u32>,
    pub open_files: u64,
}

/// What one run measured: a line of the record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Outcome {
    pub registry: String,
    pub instances: usize,
    pub layout: String,
    /// When it ran (ms since the Unix epoch) and the 1-minute load average before and after.
    pub at_ms: u64,
    pub load_before: f64,
    pub load_after: f64,
    pub max_connections: Option<u32>,
    /// PgBouncer's server connections in front of PostgreSQL, if it had a pool.
    #[serde(default)]
    pub pool: Option<u32>,
    /// The most sessions PostgreSQL served the fleet at once, sampled every
    /// [`SAMPLE_EVERY`] through the run (`pg_stat_activity`).
    #[serde(default)]
    pub server_connections_max: Option<u64>,
    /// This process's open-file limit, which a registry started here inherits.
    #[serde(default)]
    pub open_files: u64,
    /// Instances that held a worker id within the deadline.
    pub held: usize,
    /// Since the start, until half of them held one, and until the last did (ms).
    pub acquired_median_ms: Option<f64>,
    pub acquired_max_ms: Option<f64>,
    /// The longest wait before issuing that a lease's mark asked for (ms), and how many
    /// leases asked for one.
    pub issue_wait_max_ms: u64,
    pub issue_waits: usize,
    /// CPU from the start until all held (or the deadline), in ms: the registry's, and
    /// this process's own, which runs every instance on the same machine.
    #[serde(default)]
    pub registry_cpu_acquiring_ms: Option<u64>,
    #[serde(default)]
    pub bench_cpu_acquiring_ms: u64,
    /// Acquisitions that failed and were retried, over the fleet.
    pub acquire_failures: u64,
    /// Why an instance that never held was not holding.
    pub first_error: Option<String>,
    /// Registry operations from the start until all held, per instance, and what counts.
    pub ops_per_acquisition: Option<f64>,
    pub counted_as: Option<String>,
    /// The registry's memory once all held (proportional set size, MiB).
    pub registry_pss_mib: Option<f64>,
    /// PostgreSQL's shared memory (MiB), which grows with `max_connections`.
    #[serde(default)]
    pub shared_memory_mib: Option<f64>,
    pub steady: Option<Steady>,
    pub restart: Option<Restart>,
}

/// The steady window after every instance holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Steady {
    pub seconds: f64,
    pub renewals: u64,
    pub renew_failures: u64,
    pub cpu_ms: u64,
    /// The registry's CPU per renewal (µs) and as a share of one core (%).
    pub cpu_us_per_renewal: f64,
    pub core_percent: f64,
    /// The registry's CPU with no instance at all, measured before the start over
    /// [`IDLE`], as a share of one core (%): its own timers, which renewals do not cause.
    #[serde(default)]
    pub idle_core_percent: f64,
    /// The CPU per renewal above that idle share (µs).
    #[serde(default)]
    pub cpu_us_per_renewal_above_idle: f64,
    pub ops_per_renewal: Option<f64>,
}

/// The rolling restart.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Restart {
    pub wave: usize,
    pub total_ms: f64,
    /// The slowest instance, from its release to holding again.
    pub max_ms: f64,
    pub median_ms: f64,
    /// Instances that did not hold again within the deadline.
    pub failed: usize,
    pub issue_wait_max_ms: u64,
}

/// How one keeper is made: the same for every instance but its identity, as a fleet of
/// servers with one configuration.
struct Spec {
    url: String,
    namespace: String,
    layout: Layout,
    deadline: Duration,
}

impl Spec {
    /// A keeper for `identity` on a registry of its own (its own connection), started now.
    fn start(&self, identity: &str) -> anyhow::Result<Keeper> {
        Ok(self.keeper(snowmint_lease::registry_from_url(&self.url)?, identity))
    }

    /// A keeper for `identity` on `registry`, started now.
    fn keeper(&self, registry: Arc<dyn snowmint_lease::Registry>, identity: &str) -> Keeper {
        let settings = LeaseSettings::default();
        let claim = Claim::new(
            &self.namespace,
            0,
            self.layout.max_worker() + 1,
            identity,
            settings.ttl,
        )
        .with_layout(&self.layout);
        Keeper::start(registry, claim, settings, Arc::new(SystemClock::new()))
    }
}

/// One instance holding: when, which worker id, and the wait its mark asks for.
struct Acquired {
    after: Duration,
    worker: u64,
    wait_ms: u64,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, snowmint::whole_ms)
}

/// Waits until `keeper` holds a worker id, up to `deadline` after `since`.
async fn held(keeper: &Keeper, since: Instant, deadline: Duration) -> Option<Acquired> {
    held_on(keeper.status(), since, deadline).await
}

/// Why a keeper is not holding, if it says.
fn not_holding(keeper: &Keeper) -> Option<String> {
    match &*keeper.status().borrow() {
        LeaseStatus::Acquiring {
            last_error: Some(err),
            ..
        } => Some(snowmint::error::Chain(err).to_string()),
        _ => None,
    }
}

fn median(sorted: &[f64]) -> Option<f64> {
    (!sorted.is_empty()).then(|| sorted[sorted.len() / 2])
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1_000.0
}

/// The registry's operation count, asked off the runtime's threads; `None`, said on
/// stderr, when the registry does not answer (PostgreSQL with every connection taken).
async fn operations(registry: &Registry) -> Option<(u64, &'static str)> {
    tokio::task::block_in_place(|| registry.operations()).unwrap_or_else(|err| {
        eprintln!("cannot count the registry's operations: {err:#}");
        None
    })
}

/// Runs `plan` on `registry`.
pub async fn run(registry: &Registry, plan: &Plan) -> anyhow::Result<Outcome> {
    let load_before = proc::load_average();
    let spec = Arc::new(Spec {
        url: registry.url.clone(),
        // A fleet of its own, so that a registry given by address starts empty for it.
        namespace: Fleet::new(&format!("bench-{}", now_ms()))?.namespace(),
        layout: plan.layout,
        deadline: plan.deadline,
    });
    let identities: Vec<String> = (0..plan.instances).map(|i| format!("fleet-{i}")).collect();
    let idle_core_percent = if registry.measured() {
        let (before, since) = (registry.cpu_ms(), Instant::now());
        tokio::time::sleep(IDLE).await;
        registry.cpu_ms().saturating_sub(before) as f64 / 10.0 / since.elapsed().as_secs_f64()
    } else {
        0.0
    };
    let ops_before = operations(registry).await;

    // Made before the start: the registries connect at their first acquisition.
    let registries = identities
        .iter()
        .map(|_| snowmint_lease::registry_from_url(&spec.url))
        .collect::<Result<Vec<_>, _>>()?;
    let registry_cpu_before = registry.measured().then(|| registry.cpu_ms());
    let sessions = Sessions::watch(registry);
    let bench_cpu_before = proc::own_cpu_ms();
    let start = Instant::now();
    let keepers: Vec<Keeper> = registries
        .into_iter()
        .zip(&identities)
        .map(|(registry, identity)| spec.keeper(registry, identity))
        .collect();
    let mut acquired = Vec::with_capacity(keepers.len());
    {
        let mut waits = JoinSet::new();
        for (i, keeper) in keepers.iter().enumerate() {
            let status = keeper.status();
            let deadline = plan.deadline;
            waits.spawn(async move { (i, held_on(status, start, deadline).await) });
        }
        acquired.resize_with(keepers.len(), || None);
        while let Some(done) = waits.join_next().await {
            let (i, got) = done.context("a waiting task failed")?;
            acquired[i] = got;
        }
    }
    let registry_cpu_acquiring_ms = registry
        .measured()
        .then(|| registry.cpu_ms())
        .zip(registry_cpu_before)
        .map(|(after, before)| after.saturating_sub(before));
    let bench_cpu_acquiring_ms = proc::own_cpu_ms().saturating_sub(bench_cpu_before);
    let ops_held = operations(registry).await;
    let held: Vec<&Acquired> = acquired.iter().flatten().collect();
    let workers: HashSet<u64> = held.iter().map(|a| a.worker).collect();
    anyhow::ensure!(
        workers.len() == held.len(),
        "two instances hold the same worker id: {} held, {} distinct",
        held.len(),
        workers.len()
    );
    let mut times: Vec<f64> = held.iter().map(|a| ms(a.after)).collect();
    times.sort_by(f64::total_cmp);
    let all_held = held.len() == plan.instances;
    let first_error = keepers
        .iter()
        .zip(&acquired)
        .filter(|(_, a)| a.is_none())
        .find_map(|(k, _)| not_holding(k));
    let acquire_failures = keepers
        .iter()
        .map(|k| k.counters().acquire_failures.load(Ordering::Relaxed))
        .sum();
    let (ops_per_acquisition, counted_as) = match (ops_before, ops_held) {
        (Some((before, what)), Some((after, _))) if !held.is_empty() => (
            Some(after.saturating_sub(before) as f64 / held.len() as f64),
            Some(what.to_string()),
        ),
        _ => (None, None),
    };
    let registry_pss_mib = registry
        .measured()
        .then(|| registry.pss_kib() as f64 / 1_024.0);

    let steady = if registry.kind == Kind::File || held.is_empty() {
        None
    } else {
        Some(
            steady(
                registry,
                &keepers,
                plan.steady,
                LeaseSettings::default().renew_every,
                idle_core_percent,
            )
            .await?,
        )
    };

    let mut keepers = keepers;
    let restart = if all_held {
        let (restarted, restart) = rolling_restart(keepers, &identities, &spec, plan.wave).await;
        keepers = restarted;
        Some(restart)
    } else {
        None
    };
    release_all(keepers).await;
    let server_connections_max = sessions.most().await;

    Ok(Outcome {
        registry: registry.kind.name().to_string(),
        instances: plan.instances,
        layout: plan.layout.canonical().to_string(),
        at_ms: now_ms(),
        load_before,
        load_after: proc::load_average(),
        max_connections: plan.max_connections,
        pool: plan.pool,
        server_connections_max,
        open_files: plan.open_files,
        held: held.len(),
        acquired_median_ms: median(&times),
        acquired_max_ms: times.last().copied(),
        issue_wait_max_ms: held.iter().map(|a| a.wait_ms).max().unwrap_or(0),
        issue_waits: held.iter().filter(|a| a.wait_ms > 0).count(),
        registry_cpu_acquiring_ms,
        bench_cpu_acquiring_ms,
        acquire_failures,
        first_error,
        ops_per_acquisition,
        counted_as,
        registry_pss_mib,
        shared_memory_mib: tokio::task::block_in_place(|| registry.shared_memory_mib()),
        steady,
        restart,
    })
}

/// [`held`] on a status receiver, for a task of its own.
async fn held_on(
    mut status: tokio::sync::watch::Receiver<LeaseStatus>,
    since: Instant,
    deadline: Duration,
) -> Option<Acquired> {
    let waited = tokio::time::timeout_at(
        (since + deadline).into(),
        status.wait_for(|s| matches!(s, LeaseStatus::Held(_))),
    )
    .await;
    let after = since.elapsed();
    let Ok(Ok(status)) = waited else {
        return None;
    };
    let LeaseStatus::Held(held) = &*status else {
        return None;
    };
    Some(Acquired {
        after,
        worker: held.lease.worker,
        wait_ms: held
            .lease
            .high_water_ms
            .map_or(0, |mark| mark.saturating_sub(now_ms())),
    })
}

/// The steady state: one renewal interval to let the first renewals pass, then renewals
/// and the registry's CPU over `window`.
async fn steady(
    registry: &Registry,
    keepers: &[Keeper],
    window: Duration,
    renew_every: Duration,
    idle_core_percent: f64,
) -> anyhow::Result<Steady> {
    let counts = |keepers: &[Keeper]| -> (u64, u64) {
        keepers.iter().fold((0, 0), |(r, f), k| {
            let c = k.counters();
            (
                r + c.renewals.load(Ordering::Relaxed),
                f + c.renew_failures.load(Ordering::Relaxed),
            )
        })
    };
    tokio::time::sleep(renew_every).await;
    let cpu = Registry::cpu_ms;
    let (cpu_before, ops_before, t0) = (cpu(registry), operations(registry).await, Instant::now());
    let (renewals_before, failures_before) = counts(keepers);
    tokio::time::sleep(window).await;
    let (renewals_after, failures_after) = counts(keepers);
    let (cpu_after, ops_after, seconds) = (
        cpu(registry),
        operations(registry).await,
        t0.elapsed().as_secs_f64(),
    );
    let renewals = renewals_after - renewals_before;
    let cpu_ms = cpu_after.saturating_sub(cpu_before);
    let idle_ms = idle_core_percent * 10.0 * seconds;
    Ok(Steady {
        idle_core_percent,
        cpu_us_per_renewal_above_idle: (cpu_ms as f64 - idle_ms).max(0.0) * 1_000.0
            / renewals.max(1) as f64,
        seconds,
        renewals,
        renew_failures: failures_after - failures_before,
        cpu_ms,
        cpu_us_per_renewal: cpu_ms as f64 * 1_000.0 / renewals.max(1) as f64,
        core_percent: cpu_ms as f64 / 10.0 / seconds,
        ops_per_renewal: match (ops_before, ops_after) {
            (Some((before, _)), Some((after, _))) => {
                Some(after.saturating_sub(before) as f64 / renewals.max(1) as f64)
            }
            _ => None,
        },
    })
}

/// Restarts every instance, `wave` at a time: each gives its worker id back and a new
/// keeper with the same identity (and a new connection) acquires again.
async fn rolling_restart(
    keepers: Vec<Keeper>,
    identities: &[String],
    spec: &Arc<Spec>,
    wave: usize,
) -> (Vec<Keeper>, Restart) {
    let start = Instant::now();
    let mut slots: Vec<Option<Keeper>> = keepers.into_iter().map(Some).collect();
    let mut times = Vec::with_capacity(slots.len());
    let mut failed = 0;
    let mut issue_wait_max_ms = 0;
    for first in (0..slots.len()).step_by(wave) {
        let mut restarts = JoinSet::new();
        for i in first..(first + wave).min(slots.len()) {
            let Some(old) = slots[i].take() else { continue };
            let (spec, identity) = (Arc::clone(spec), identities[i].clone());
            restarts.spawn(async move {
                let since = Instant::now();
                if let Err(err) = old.release(now_ms()).await {
                    eprintln!("{identity}: release failed: {err}");
                }
                let new = match spec.start(&identity) {
                    Ok(new) => new,
                    Err(err) => {
                        eprintln!("{identity}: {err:#}");
                        return (i, None, None);
                    }
                };
                let got = held(&new, since, spec.deadline).await;
                (i, Some(new), got)
            });
        }
        while let Some(done) = restarts.join_next().await {
            let Ok((i, new, got)) = done else {
                failed += 1;
                continue;
            };
            slots[i] = new;
            match got {
                Some(a) => {
                    times.push(ms(a.after));
                    issue_wait_max_ms = issue_wait_max_ms.max(a.wait_ms);
                }
                None => failed += 1,
            }
        }
    }
    times.sort_by(f64::total_cmp);
    let restart = Restart {
        wave,
        total_ms: ms(start.elapsed()),
        max_ms: times.last().copied().unwrap_or(f64::NAN),
        median_ms: median(&times).unwrap_or(f64::NAN),
        failed,
        issue_wait_max_ms,
    };
    (slots.into_iter().flatten().collect(), restart)
}

/// Gives every worker id back, all at once.
async fn release_all(keepers: Vec<Keeper>) {
    let mut releases = JoinSet::new();
    for keeper in keepers {
        releases.spawn(async move { keeper.release(now_ms()).await });
    }
    while releases.join_next().await.is_some() {}
}

/// The most sessions PostgreSQL has served at once, counted by a thread of its own (each
/// count runs `psql`) until asked; nothing for the other registries.
struct Sessions {
    counting: Option<(
        std::thread::JoinHandle<Option<u64>>,
        Arc<std::sync::atomic::AtomicBool>,
    )>,
}

impl Sessions {
    fn watch(registry: &Registry) -> Sessions {
        registry
            .server_connections()
            .map_or(Sessions { counting: None }, |first| {
                let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
                let (flag, stats) = (Arc::clone(&stop), registry.stats_handle());
                let counting = std::thread::spawn(move || {
                    let mut most = first;
                    while !flag.load(Ordering::Relaxed) {
                        std::thread::sleep(SAMPLE_EVERY);
                        if let Some(now) = stats.server_connections() {
                            most = most.max(now);
                        }
                    }
                    Some(most)
                });
                Sessions {
                    counting: Some((counting, stop)),
                }
            })
    }

    async fn most(self) -> Option<u64> {
        let (counting, stop) = self.counting?;
        stop.store(true, Ordering::Relaxed);
        tokio::task::spawn_blocking(move || counting.join().ok().flatten())
            .await
            .ok()
            .flatten()
    }
}
