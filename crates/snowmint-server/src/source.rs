//! Where ids come from: a generator for the worker id the lease holds, swapped when the
//! lease changes, fenced by how long the lease is certainly valid.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwapOption;
use snowmint::error::Chain;
use snowmint::{Clock, ClockMode, Generator, Id, Layout, ModeClock, Poll, Store, SystemClock};
use snowmint_lease::{Claim, FileStore, Held, Keeper, LeaseStatus, LeasedStore, Registry};
use tokio::sync::watch;

use crate::{ApiError, Config, RestartBehind, ServeError};

/// A generator for one lease.
#[derive(Debug)]
pub struct Issuer {
    generator: Generator<ModeClock>,
    store: Arc<LeasedStore>,
    acquisition: u64,
}

impl Issuer {
    /// The generator.
    #[must_use]
    pub fn generator(&self) -> &Generator<ModeClock> {
        &self.generator
    }
}

/// The generator of the current lease, and whether it may issue ids now.
#[derive(Debug)]
pub struct IdSource {
    config: Config,
    /// Real time, never stepped: what leases and readiness are measured on, whatever clock
    /// the ids' time comes from.
    clock: SystemClock,
    issuer: ArcSwapOption<Issuer>,
    /// Why there is no issuer (acquiring, or an issuer that could not be built).
    problem: Mutex<Option<String>>,
    draining: AtomicBool,
    keeper: Mutex<Option<Keeper>>,
    registry: Arc<dyn Registry>,
    backend: &'static str,
    status: watch::Receiver<LeaseStatus>,
}

/// How long start-up waits for a lease that does not expire (static, hostname, file):
/// those answer at once, so a server with one is ready when it starts listening.
const FIRST_LEASE_WAIT: Duration = Duration::from_secs(15);
/// How long start-up waits for a registry whose leases expire to answer the first
/// acquisition, so that a fleet of another layout refuses the server at once: longer than
/// a call to any registry may take, which fails as unavailable within 2.5 s.
const FIRST_ANSWER_WAIT: Duration = Duration::from_secs(3);

impl IdSource {
    /// Starts keeping the configured lease and follows it with generators. Backends whose
    /// leases do not expire are waited for, so the source is ready on return; the others
    /// are acquired in the background while `/readyz` says why it is not ready yet.
    ///
    /// # Errors
    ///
    /// The lease URL is wrong, the first generator cannot be built, or the clock is behind
    /// the high-water mark and `restart_behind` is `fail`.
    pub async fn start(config: &Config) -> Result<Arc<IdSource>, ServeError> {
        let registry =
            snowmint_lease::registry_from_url(&config.lease).map_err(ServeError::Lease)?;
        let mode = config.clock.clock;
        if !mode.tells_time() && registry.expires() {
            return Err(ServeError::CounterLease {
                backend: registry.backend(),
            });
        }
        let layout = config.layout;
        let claim = Claim::new(
            &config.fleet.namespace(),
            config.datacenter,
            layout.max_worker() + 1,
            &config.identity,
            config.lease_settings.ttl,
        )
        .with_layout(&layout)
        .with_clock(mode)
        .with_reach(reach(config, &*registry));
        let clock = SystemClock::new();
        // The generator's clock: the keeper confirms marks in the ids' time (the wall
        // clock's, for `--clock wall`) and validity in real time.
        let keeper = Keeper::start(
            Arc::clone(&registry),
            claim,
            config.lease_settings,
            Arc::new(ModeClock::new(mode)),
        );
        let source = Arc::new(IdSource {
            config: config.clone(),
            clock,
            issuer: ArcSwapOption::empty(),
            problem: Mutex::new(Some("acquiring a worker id".into())),
            draining: AtomicBool::new(false),
            status: keeper.status(),
            backend: registry.backend(),
            registry: Arc::clone(&registry),
            keeper: Mutex::new(Some(keeper)),
        });
        let mut status = source.status.clone();
        source.refuse_another_layout(&mut status).await?;
        if !registry.expires() {
            let no_lease = || ServeError::NoLease {
                waited_ms: snowmint::whole_ms(FIRST_LEASE_WAIT),
                source: source.last_lease_error(),
            };
            let held = tokio::time::timeout(
                FIRST_LEASE_WAIT,
                status.wait_for(|s| matches!(s, LeaseStatus::Held(_))),
            )
            .await
            .map_err(|_| no_lease())?
            .map_err(|_| no_lease())?
            .clone();
            if let LeaseStatus::Held(held) = held {
                source.take(&held).await?;
            }
            if let Some(issuer) = source.issuer.load_full() {
                let lag_ms = issuer.generator.clock_lag_ms();
                if lag_ms > layout.tick_ms() {
                    // `fail` is for a clock set back since an earlier run on this state
                    // directory; a registry's mark, or the floor of a registry that cannot
                    // vouch for its records (a `file:` worker whose file is new), is waited
                    // out.
                    let own_mark = FileStore::open(issuer.store.state_file())
                        .and_then(|file| file.mark())
                        .ok()
                        .flatten()
                        .unwrap_or(0);
                    let own_lag_ms = own_mark.saturating_sub(issuer.generator.clock().now_ms());
                    if config.restart_behind == RestartBehind::Fail && own_lag_ms > layout.tick_ms()
                    {
                        return Err(ServeError::Behind {
                            lag_ms: own_lag_ms,
                            dir: config.state_dir.clone(),
                        });
                    }
                    tracing::warn!(
                        lag_ms,
                        "clock is behind the high-water mark (of an earlier holder, or of a registry that vouches for its records only since it restarted); not ready until it passes"
                    );
                }
            }
        }
        tokio::spawn(Arc::clone(&source).follow(status));
        Ok(source)
    }

    /// Waits for the keeper's first answer from the registry, for at most
    /// [`FIRST_ANSWER_WAIT`]: a fleet of another layout refuses this server at start, with
    /// the registry's message; anything else (a registry that is down or slow, every worker
    /// id held) is waited out in the background, with `/readyz` saying why.
    async fn refuse_another_layout(
        &self,
        status: &mut watch::Receiver<LeaseStatus>,
    ) -> Result<(), ServeError> {
        let answered = tokio::time::timeout(
            FIRST_ANSWER_WAIT,
            status.wait_for(|s| !matches!(s, LeaseStatus::Acquiring { attempts: 0, .. })),
        )
        .await;
        if let Ok(Ok(current)) = answered
            && let LeaseStatus::Acquiring {
                last_error: Some(err @ snowmint_lease::LeaseError::OtherLayout { .. }),
                ..
            } = &*current
        {
            return Err(ServeError::Lease(err.clone()));
        }
        Ok(())
    }

    /// Follows the keeper: a new lease gets a new generator, a renewal moves the fence, a
    /// lost lease retires the generator.
    async fn follow(self: Arc<Self>, mut status: watch::Receiver<LeaseStatus>) {
        loop {
            let current = status.borrow_and_update().clone();
            match current {
                LeaseStatus::Held(held) => {
                    let same = self
                        .issuer
                        .load()
                        .as_ref()
                        .is_some_and(|s| s.acquisition == held.acquisition);
                    if same {
                        if let Some(issuer) = self.issuer.load_full() {
                            issuer.store.confirm(held.confirmed_high_water_ms);
                            issuer.generator.set_valid_until_ms(held.valid_until_ms);
                        }
                    } else if let Err(err) = self.take(&held).await {
                        let why = Chain(&err).to_string();
                        tracing::warn!(error = %why, "cannot start a generator for the new lease");
                        self.set_problem(Some(why));
                    }
                }
                LeaseStatus::Acquiring { last_error, .. } => {
                    self.retire();
                    let why = last_error.map_or_else(
                        || "acquiring a worker id".to_string(),
                        |e| format!("acquiring a worker id: {}", Chain(&e)),
                    );
                    self.set_problem(Some(why));
                }
                LeaseStatus::Released => return,
            }
            if status.changed().await.is_err() {
                return;
            }
        }
    }

    /// Builds the generator for a newly acquired lease and swaps it in.
    async fn take(&self, held: &Held) -> Result<(), ServeError> {
        self.retire();
        let config = self.config.clone();
        let held = held.clone();
        let registry = Arc::clone(&self.registry);
        // Claiming the local state file may wait for a retired generator's last request.
        let issuer = tokio::task::spawn_blocking(move || build_issuer(&config, registry, &held))
            .await
            .map_err(ServeError::Setup)??;
        // Two processes logging the same pair here will collide: the log is how an operator
        // spots a worker id given twice by hand.
        tracing::info!(
            datacenter = issuer.generator.datacenter(),
            worker = issuer.generator.worker(),
            backend = self.backend,
            fleet = %self.config.fleet,
            state_file = %issuer.store.state_file().display(),
            clock = issuer.generator.mode().name(),
            rollback = self.config.clock.rollback_name(),
            "issuing ids"
        );
        self.issuer.store(Some(Arc::new(issuer)));
        self.set_problem(None);
        Ok(())
    }

    /// Takes the generator out of service, lowering its local mark to what it issued.
    fn retire(&self) {
        if let Some(old) = self.issuer.swap(None) {
            let _ = old.generator.shutdown();
        }
    }

    fn set_problem(&self, problem: Option<String>) {
        *self.problem.lock().unwrap_or_else(|e| e.into_inner()) = problem;
    }

    /// Why the last attempt to acquire a worker id failed, if one did.
    fn last_lease_error(&self) -> Option<snowmint_lease::LeaseError> {
        match &*self.status.borrow() {
            LeaseStatus::Acquiring { last_error, .. } => last_error.clone(),
            _ => None,
        }
    }

    /// The current generator, if a lease is held.
    #[must_use]
    pub fn issuer(&self) -> Option<Arc<Issuer>> {
        self.issuer.load_full()
    }

    /// The layout.
    #[must_use]
    pub fn layout(&self) -> &Layout {
        &self.config.layout
    }

    /// The clock mode and its policies.
    #[must_use]
    pub fn clock_policies(&self) -> &crate::ClockPolicies {
        &self.config.clock
    }

    /// The lease backend's name.
    #[must_use]
    pub fn backend(&self) -> &'static str {
        self.backend
    }

    /// The keeper's status.
    #[must_use]
    pub fn lease_status(&self) -> LeaseStatus {
        self.status.borrow().clone()
    }

    /// Runs `f` with the lease keeper's counters, if it still runs.
    pub fn with_keeper<T>(&self, f: impl FnOnce(&Keeper) -> T) -> Option<T> {
        self.keeper
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(f)
    }

    /// The clock.
    #[must_use]
    pub fn clock(&self) -> &SystemClock {
        &self.clock
    }

    /// `Ok` while ids may be issued; otherwise the reason, for `/readyz` and 503 answers.
    ///
    /// # Errors
    ///
    /// Shutting down, no worker id held, the lease not confirmed for now, the clock
    /// outside the layout's range, or the clock behind the high-water mark (or, for the
    /// wall clock, behind the newest id by more than the rollback policy allows).
    pub fn readiness(&self) -> Result<Arc<Issuer>, String> {
        self.check(Asking::Probe).map(|ready| ready.issuer)
    }

    /// [`IdSource::readiness`] for a request about to issue. A wall clock set back is left
    /// to the generator, whose rollback policy answers the request (and counts what it did).
    ///
    /// # Errors
    ///
    /// As [`IdSource::readiness`], as a 503.
    pub fn ready_to_issue(&self) -> Result<Ready, ApiError> {
        self.check(Asking::ToIssue).map_err(ApiError::Unavailable)
    }

    fn check(&self, asking: Asking) -> Result<Ready, String> {
        if self.draining.load(Ordering::Acquire) {
            return Err("shutting down".into());
        }
        let Some(issuer) = self.issuer.load_full() else {
            let problem = self
                .problem
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            return Err(problem.unwrap_or_else(|| "acquiring a worker id".into()));
        };
        if let LeaseStatus::Held(held) = &*self.status.borrow()
            && self.clock.now_ms() >= held.valid_until_ms
        {
            let why = held.last_error.as_ref().map_or_else(
                || "no renewal confirmed".to_string(),
                |e| Chain(e).to_string(),
            );
            return Err(format!(
                "worker id lease ({} datacenter {} worker {}) is not confirmed for now: {why}",
                self.backend, held.lease.datacenter, held.lease.worker
            ));
        }
        let mode = issuer.generator.mode();
        // The generator refuses every id while the clock is before the epoch or past the
        // time field's end: say so here, not only in each 503. A counter reads no clock.
        if mode.tells_time()
            && let Err(err) = self
                .config
                .layout
                .tick_at(issuer.generator.clock().now_ms())
        {
            return Err(format!(
                "no id of layout {} can be issued now: {}",
                self.config.layout.name(),
                Chain(&err)
            ));
        }
        if mode == ClockMode::Wall {
            // A wall clock may step back at any time: it is ready while the rollback policy
            // would issue (at once, ahead of the clock, or after a wait within its bound).
            return match issuer.generator.refusal() {
                Some(err) if asking == Asking::Probe => Err(Chain(&err).to_string()),
                _ => Ok(Ready { issuer, wall: true }),
            };
        }
        let lag = issuer.generator.clock_lag_ms();
        // A lag of one tick is a spent sequence, not a clock behind its mark.
        if lag > self.config.layout.tick_ms() {
            return Err(format!(
                "clock is {lag} ms behind the high-water mark left by an earlier holder of this worker id, or by a registry that vouches for its records only since it restarted, was restored or failed over; ids resume when it passes"
            ));
        }
        Ok(Ready {
            issuer,
            wall: false,
        })
    }

    /// The mark the held lease came with, 0 if none.
    fn acquired_mark(&self) -> u64 {
        match &*self.status.borrow() {
            LeaseStatus::Held(held) => held.lease.high_water_ms.unwrap_or(0),
            _ => 0,
        }
    }

    /// Marks the source as shutting down: `/readyz` turns 503 so balancers move away.
    pub fn drain(&self) {
        self.draining.store(true, Ordering::Release);
    }

    /// One id, or 503 with the reason. While a tick's sequence is spent or the clock is
    /// behind the newest id, the request waits on the runtime's timer, not on a thread: a
    /// clock set back makes every request in flight wait at once, and a thread for each
    /// would fill the blocking pool. A wait the rollback policy would not make is refused
    /// at once, with the policy's words.
    ///
    /// # Errors
    ///
    /// Not ready, or the generator refused (see [`ApiError`]).
    pub async fn next_id(&self) -> Result<Id, ApiError> {
        let ready = self.ready_to_issue()?;
        let generator = &ready.issuer.generator;
        loop {
            match generator.try_next_id()? {
                Poll::Ready(id) => return Ok(id),
                Poll::Pending { tick, behind, .. } => {
                    let wait = generator.begin_wait(tick, behind);
                    tokio::time::sleep(wait.duration()).await;
                }
            }
        }
    }

    /// After the last request: stops the generator (persisting its local mark) and gives
    /// the worker id back with its high-water mark set to the last id issued, trying again
    /// for up to `patience` while the registry is away ([`Keeper::release_within`]). Says
    /// whether there was a worker id to do this for: none while it was still being acquired.
    ///
    /// # Errors
    ///
    /// The local mark or the registry could not be written; the higher mark is kept.
    pub async fn shutdown(&self, patience: Duration) -> Result<bool, ServeError> {
        let issuer = self.issuer.swap(None);
        let issued = match &issuer {
            Some(issuer) => {
                issuer.generator.shutdown().map_err(ServeError::LowerMark)?;
                Some(issuer.store.issued_ms())
            }
            None => None,
        };
        let mut held = issued.is_some();
        let keeper = self.keeper.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(keeper) = keeper {
            // Nothing issued: the present for a clock, the count it started after for a
            // counter; the release never writes less than the mark the lease came with.
            let mark = issued.filter(|ms| *ms > 0).unwrap_or_else(|| {
                if self.config.clock.clock.tells_time() {
                    self.clock.now_ms()
                } else {
                    self.acquired_mark()
                }
            });
            let acquired = self.acquired_mark();
            if keeper
                .release_within(mark, patience)
                .await
                .map_err(ServeError::Release)?
            {
                // What the registry now holds: the rule of `Lease::release_mark`.
                let given_back = snowmint::UnixMs(mark.max(acquired));
                tracing::info!(mark = %given_back, "gave the worker id back");
                held = true;
            }
        }
        Ok(held)
    }
}

/// How far past the last instant it reached the registry a holder of this fleet may
/// have issued ids ([`Claim::reach`]): one TTL when leases expire (a renewal reserves that
/// far ahead, and a holder whose renewals fail issues until its fence, a TTL on); when they
/// last as long as the process, how long a renewal vouches for the hold (its fence,
/// [`Registry::confirms_for`], whatever the holder reserved; else a reservation) and the
/// overflow lead its ids may run ahead of its clock; and the safety margin, for a clock
/// ahead of the registry's.
fn reach(config: &Config, registry: &dyn Registry) -> Duration {
    let settings = &config.lease_settings;
    let ahead = if registry.expires() {
        settings.ttl
    } else {
        let lead = match config.overflow {
            snowmint::OverflowPolicy::Borrow { lead } => lead,
            _ => Duration::ZERO,
        };
        registry.confirms_for().unwrap_or(config.reserve_ahead) + lead
    };
    ahead + settings.safety_margin
}

fn build_issuer(
    config: &Config,
    registry: Arc<dyn Registry>,
    held: &Held,
) -> Result<Issuer, ServeError> {
    let (datacenter, worker) = (held.lease.datacenter, held.lease.worker);
    let mode = config.clock.clock;
    let local = FileStore::for_generator(
        &config.state_dir,
        &config.fleet,
        &config.layout,
        datacenter,
        worker,
    )?
    .with_clock(mode);
    let store = Arc::new(LeasedStore::new(
        registry,
        held.lease.clone(),
        held.confirmed_high_water_ms,
        local,
    ));
    let builder = Generator::builder(config.layout)
        .datacenter(datacenter)
        .worker(worker)
        .clock(ModeClock::new(mode));
    let mut builder = config
        .clock
        .apply(builder)
        .overflow(config.overflow)
        .reserve_ahead(config.reserve_ahead)
        .store(Arc::clone(&store) as Arc<dyn Store>);
    if let Some(mark) = held.lease.high_water_ms {
        builder = builder.after_ms(mark);
    }
    let generator = builder.build()?;
    generator.set_valid_until_ms(held.valid_until_ms);
    Ok(Issuer {
        generator,
        store,
        acquisition: held.acquisition,
    })
}

/// An [`IdSource`] found ready to issue, as one request sees it: its issuer, and whether
/// issuing may wait for its clock ([`Ready::behind`]).
#[derive(Debug)]
pub struct Ready {
    /// The issuer the request takes its ids from.
    pub issuer: Arc<Issuer>,
    /// Whether the clock is a wall clock, the only one that can be behind the next id once
    /// the source is ready: readiness refuses any other clock behind its mark.
    wall: bool,
}

impl Ready {
    /// Whether issuing may wait for the clock: a wall clock set back behind the next id by
    /// more than a tick. Measured when asked, so a request that never asks (a single id,
    /// which waits on the runtime's timer either way) does not pay for the reading.
    #[must_use]
    pub fn behind(&self) -> bool {
        let generator = &self.issuer.generator;
        self.wall && generator.clock_lag_ms() > generator.layout().tick_ms()
    }

    /// Fills `out` with exactly `n` ids, batch by batch. Readiness was checked once, when
    /// the request began: a request that began before shutdown is finished, not cut off.
    ///
    /// # Errors
    ///
    /// The generator refused; ids already taken are dropped, never reissued.
    pub fn fill(&self, n: u64, out: &mut Vec<Id>) -> Result<(), ApiError> {
        let mut left = n;
        while left > 0 {
            let batch = self.issuer.generator.next_batch(left)?;
            out.extend(batch.iter());
            left -= batch.len();
        }
        Ok(())
    }
}

/// Who asks [`IdSource::check`] whether ids may be issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asking {
    /// `/readyz` and the other probes: a wall clock behind the newest id by more than the
    /// rollback policy allows is not ready.
    Probe,
    /// A request about to issue: the generator's rollback policy answers it instead.
    ToIssue,
}

#[cfg(test)]
mod tests;
