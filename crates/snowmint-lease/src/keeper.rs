//! Keeping a lease: acquire with backoff, renew in the background, publish how long it is
//! certainly valid, and give it back on shutdown.
//!
//! Validity is counted from when a renewal was *sent*: `sent + ttl - safety_margin`. The
//! registry cannot have expired the lease before that, whatever the network delay, as long
//! as the two clocks run at nearly the same rate (the margin covers the difference). When
//! renewals fail the published instant stops moving, and a generator fenced by it stops
//! issuing at that instant, not when the failure is noticed. A lease that does not expire
//! but can be lost behind its holder's back (a `file` lock file a restore replaced) is
//! fenced the same way, at what a renewal vouches for ([`Registry::confirms_for`]), so a
//! holder paused past it issues nothing until a renewal confirms its hold again.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use snowmint::Clock;
use snowmint::error::Chain;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use crate::registry::{Claim, Lease, LeaseError, Registry};

/// How leases are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseSettings {
    /// How long a lease lasts in the registry without renewal (default 10 s).
    pub ttl: Duration,
    /// How often it is renewed (default: a third of the TTL, so two renewals can fail
    /// before the lease is at risk).
    pub renew_every: Duration,
    /// Subtracted from the TTL when deciding until when ids may be issued: covers a
    /// registry clock that runs faster than ours (default 1 s, i.e. 10 % of the TTL).
    pub safety_margin: Duration,
}

impl Default for LeaseSettings {
    fn default() -> LeaseSettings {
        LeaseSettings {
            ttl: Duration::from_secs(10),
            renew_every: Duration::from_millis(3_333),
            safety_margin: Duration::from_secs(1),
        }
    }
}

impl LeaseSettings {
    /// Checks that renewals come well before the lease could lapse.
    ///
    /// # Errors
    ///
    /// A margin not below the TTL, or renewals no more often than the TTL less the margin.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use snowmint_lease::LeaseSettings;
    ///
    /// let bad = LeaseSettings { renew_every: Duration::from_secs(9), ..LeaseSettings::default() };
    /// assert_eq!(
    ///     bad.validate().unwrap_err().to_string(),
    ///     "lease renewal every 9000 ms must be shorter than the TTL (10000 ms) less the safety margin (1000 ms)"
    /// );
    /// ```
    pub fn validate(&self) -> Result<(), LeaseError> {
        let (ttl, every, margin) = (
            snowmint::whole_ms(self.ttl),
            snowmint::whole_ms(self.renew_every),
            snowmint::whole_ms(self.safety_margin),
        );
        if ttl < 1_000 {
            return Err(LeaseError::Invalid(format!(
                "lease TTL {ttl} ms is shorter than 1000 ms"
            )));
        }
        if margin >= ttl {
            return Err(LeaseError::Invalid(format!(
                "lease safety margin {margin} ms must be shorter than the TTL ({ttl} ms)"
            )));
        }
        if every == 0 || every >= ttl - margin {
            return Err(LeaseError::Invalid(format!(
                "lease renewal every {every} ms must be shorter than the TTL ({ttl} ms) less the safety margin ({margin} ms)"
            )));
        }
        Ok(())
    }

    /// The same settings for a registry that grants `ttl` rather than the TTL asked (a
    /// ZooKeeper session timeout, clamped to the ensemble's bounds): the renewal interval
    /// and the safety margin keep their share of the TTL. The margin covers a registry
    /// clock that runs faster than ours, an error that grows with the time measured; and
    /// renewing every third of the TTL still lets two renewals fail before the fence.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use snowmint_lease::LeaseSettings;
    ///
    /// let granted = LeaseSettings::default().scaled_to(Duration::from_secs(4));
    /// assert_eq!(granted.ttl, Duration::from_secs(4));
    /// assert_eq!(granted.renew_every, Duration::from_millis(1_333));
    /// assert_eq!(granted.safety_margin, Duration::from_millis(400));
    /// ```
    #[must_use]
    pub fn scaled_to(&self, ttl: Duration) -> LeaseSettings {
        let asked = self.ttl.as_millis().max(1);
        let granted = ttl.as_millis();
        let scale = |d: Duration| {
            let ms = d.as_millis() * granted / asked;
            Duration::from_millis(u64::try_from(ms).unwrap_or(u64::MAX))
        };
        LeaseSettings {
            ttl,
            // Never 0: a renewal must wait for something.
            renew_every: scale(self.renew_every).max(Duration::from_millis(1)),
            safety_margin: scale(self.safety_margin),
        }
    }
}

/// A lease this process holds, and how far it is confirmed.
#[derive(Debug, Clone)]
pub struct Held {
    /// The lease.
    pub lease: Lease,
    /// Counts acquisitions: a new number means a new lease (perhaps another worker id).
    pub acquisition: u64,
    /// How long the lease lasts without renewal, in ms: the TTL asked for, or the one the
    /// registry granted instead (see [`Registry::granted_ttl`]); 0 for backends whose
    /// leases do not expire.
    pub ttl_ms: u64,
    /// Ids may be issued while the clock reads before this (ms since the Unix epoch): the
    /// fence, a renewal's sending plus the TTL less the margin, or plus what a renewal
    /// vouches for ([`Registry::confirms_for`]); `u64::MAX` for backends never fenced.
    pub valid_until_ms: u64,
    /// The registry has recorded a high-water mark at least this far (ms since the Unix
    /// epoch): ids may be issued up to it.
    pub confirmed_high_water_ms: u64,
    /// The last renewal error, if the latest renewal failed.
    pub last_error: Option<LeaseError>,
}

/// Where the keeper is.
#[derive(Debug, Clone)]
pub enum LeaseStatus {
    /// Looking for a worker id.
    Acquiring {
        /// Failed attempts so far.
        attempts: u64,
        /// Why the last attempt failed, or why the last lease ended.
        last_error: Option<LeaseError>,
    },
    /// Holding one.
    Held(Held),
    /// Released on shutdown.
    Released,
}

/// Counts for metrics.
#[derive(Debug, Default)]
pub struct LeaseCounters {
    /// Renewals confirmed.
    pub renewals: AtomicU64,
    /// Renewals that failed.
    pub renew_failures: AtomicU64,
    /// Acquisitions that failed, of any cause.
    pub acquire_failures: AtomicU64,
    /// Acquisitions that found every worker id held.
    pub exhausted: AtomicU64,
}

/// Owns the background task that keeps a lease. Dropping it stops the task without
/// releasing (as a crash would); [`Keeper::release`] gives the worker id back.
#[derive(Debug)]
pub struct Keeper {
    status: watch::Receiver<LeaseStatus>,
    stop: Option<oneshot::Sender<StopReply>>,
    task: JoinHandle<()>,
    registry: Arc<dyn Registry>,
    counters: Arc<LeaseCounters>,
}

/// The first wait after a failed acquisition; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// The longest wait between acquisitions.
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// How soon a failed renewal is retried (or the renewal interval, if shorter).
const RETRY_RENEW: Duration = Duration::from_millis(500);

impl Keeper {
    /// Starts keeping a lease for `claim` on the current tokio runtime. Time is read from
    /// `clock`, the same clock the generator uses, so the fence and the ids agree: the
    /// lease's validity on its steady reading ([`Clock::steady_ms`]), the marks on its
    /// reading ([`Clock::now_ms`]), which for a wall clock follows its steps.
    #[must_use]
    pub fn start(
        registry: Arc<dyn Registry>,
        claim: Claim,
        settings: LeaseSettings,
        clock: Arc<dyn Clock>,
    ) -> Keeper {
        let (status_tx, status) = watch::channel(LeaseStatus::Acquiring {
            attempts: 0,
            last_error: None,
        });
        let (stop_tx, stop_rx) = oneshot::channel();
        let counters = Arc::new(LeaseCounters::default());
        let task = tokio::spawn(keep(
            Arc::clone(&registry),
            claim,
            settings,
            clock,
            status_tx,
            stop_rx,
            Arc::clone(&counters),
        ));
        Keeper {
            status,
            stop: Some(stop_tx),
            task,
            registry,
            counters,
        }
    }

    /// Watches the status.
    #[must_use]
    pub fn status(&self) -> watch::Receiver<LeaseStatus> {
        self.status.clone()
    }

    /// The backend's name.
    #[must_use]
    pub fn backend(&self) -> &'static str {
        self.registry.backend()
    }

    /// Counts for metrics.
    #[must_use]
    pub fn counters(&self) -> &LeaseCounters {
        &self.counters
    }

    /// Stops renewing and gives the worker id back, setting its high-water mark to
    /// `issued_until_ms`: call it after the last id was issued. Says whether there was a
    /// lease to give back (none while it was still being acquired). One attempt:
    /// [`Keeper::release_within`] tries again while the registry is away.
    ///
    /// # Errors
    ///
    /// The registry could not be reached; the lease then expires by itself after its TTL.
    pub async fn release(self, issued_until_ms: u64) -> Result<bool, LeaseError> {
        self.release_within(issued_until_ms, Duration::ZERO).await
    }

    /// [`Keeper::release`], tried again while the registry is unavailable, for at most
    /// `patience` in all. A registry that restarts beside its holders (`docker-compose
    /// restart` stops them all at once) is away for the moment a holder gives its worker
    /// id back; one attempt would leave the worker id held until its TTL ends, and the
    /// holder, started again at once, would find it taken and lease another. Attempts come
    /// 50 ms apart, doubling to 1 s; each is cut off when the patience ends.
    ///
    /// # Errors
    ///
    /// The registry was not reached within `patience` (the last error), or it refused the
    /// release for another reason.
    pub async fn release_within(
        mut self,
        issued_until_ms: u64,
        patience: Duration,
    ) -> Result<bool, LeaseError> {
        let Some(stop) = self.stop.take() else {
            return Ok(false);
        };
        let (tx, rx) = oneshot::channel();
        if stop.send(tx).is_err() {
            return Ok(false);
        }
        let Ok((claim, lease)) = rx.await else {
            return Ok(false);
        };
        let Some(lease) = lease else {
            return Ok(false);
        };
        let deadline = tokio::time::Instant::now() + patience;
        let mut pause = Duration::from_millis(50);
        loop {
            let attempt = self.registry.release(&claim, &lease, issued_until_ms);
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let error = if patience.is_zero() {
                attempt.await.err()
            } else {
                match tokio::time::timeout(left, attempt).await {
                    Ok(done) => done.err(),
                    Err(_) => {
                        return Err(LeaseError::Unavailable {
                            backend: self.registry.backend(),
                            message: format!(
                                "the release did not end within {} ms",
                                patience.as_millis()
                            ),
                            source: None,
                        });
                    }
                }
            };
            let Some(error) = error else {
                return Ok(true);
            };
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if !matches!(error, LeaseError::Unavailable { .. }) || left <= pause {
                return Err(error);
            }
            tracing::warn!(
                worker = lease.worker,
                error = %Chain(&error),
                "cannot give the worker id back yet; trying again"
            );
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(1));
        }
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        if self.stop.is_some() {
            self.task.abort();
        }
    }
}

/// Where the task answers a stop: the claim and the lease it held, if any.
type StopReply = oneshot::Sender<(Claim, Option<Lease>)>;
type StopRequest = oneshot::Receiver<StopReply>;

/// Answers a stop with the claim and the lease held (if any), and says so.
fn stopped(
    reply: Option<StopReply>,
    claim: &Claim,
    lease: Option<Lease>,
    status: &watch::Sender<LeaseStatus>,
) {
    if let Some(reply) = reply {
        let _ = reply.send((claim.clone(), lease));
    }
    status.send_replace(LeaseStatus::Released);
}

/// The keeper's task: acquires a lease, renews it until it is lost or the keeper is
/// stopped, and acquires again after a loss.
async fn keep(
    registry: Arc<dyn Registry>,
    claim: Claim,
    settings: LeaseSettings,
    clock: Arc<dyn Clock>,
    status: watch::Sender<LeaseStatus>,
    mut stop: StopRequest,
    counters: Arc<LeaseCounters>,
) {
    let mut keeping = Keeping {
        expires: registry.expires(),
        registry,
        claim,
        settings,
        clock,
        status,
        counters,
        acquisition: 0,
        warned: None,
        backoff: FIRST_BACKOFF,
    };
    let mut lost = false;
    loop {
        if lost && let Err(reply) = keeping.pause(&mut stop).await {
            return keeping.stopped(reply, None);
        }
        let lease = match keeping.acquire(&mut stop).await {
            Ok(lease) => lease,
            Err(reply) => return keeping.stopped(reply, None),
        };
        match keeping.renew(&lease, &mut stop).await {
            Ok(()) => lost = true,
            Err(reply) => return keeping.stopped(reply, Some(lease)),
        }
    }
}

/// What the keeper's task keeps between leases.
struct Keeping {
    registry: Arc<dyn Registry>,
    claim: Claim,
    settings: LeaseSettings,
    clock: Arc<dyn Clock>,
    status: watch::Sender<LeaseStatus>,
    counters: Arc<LeaseCounters>,
    /// Whether the registry's leases expire unless renewed.
    expires: bool,
    /// Leases acquired so far.
    acquisition: u64,
    /// The last TTL granted other than the one asked, once warned about.
    warned: Option<Duration>,
    /// Grows while leases are lost or refused, and resets once a renewal is confirmed, so a
    /// registry that keeps taking leases back is not hammered.
    backoff: Duration,
}

impl Keeping {
    /// Waits out the backoff, and grows it; `Err` with the stop request's reply if the
    /// keeper is stopped meanwhile.
    async fn pause(&mut self, stop: &mut StopRequest) -> Result<(), Option<StopReply>> {
        tokio::select! {
            () = tokio::time::sleep(self.backoff) => {}
            reply = stop => return Err(reply.ok()),
        }
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
        Ok(())
    }

    fn stopped(&self, reply: Option<StopReply>, lease: Option<Lease>) {
        stopped(reply, &self.claim, lease, &self.status);
    }

    /// Acquires a lease, retrying with backoff and publishing each failure.
    async fn acquire(&mut self, stop: &mut StopRequest) -> Result<Lease, Option<StopReply>> {
        let mut attempts = 0;
        let lease = loop {
            match self.registry.acquire(&self.claim).await {
                Ok(lease) => break lease,
                Err(err) => {
                    attempts += 1;
                    self.counters
                        .acquire_failures
                        .fetch_add(1, Ordering::Relaxed);
                    if matches!(err, LeaseError::Exhausted { .. }) {
                        self.counters.exhausted.fetch_add(1, Ordering::Relaxed);
                    }
                    tracing::warn!(error = %Chain(&err), attempts, "cannot acquire a worker id");
                    self.status.send_replace(LeaseStatus::Acquiring {
                        attempts,
                        last_error: Some(err),
                    });
                    self.pause(stop).await?;
                }
            }
        };
        self.acquisition += 1;
        tracing::info!(
            backend = self.registry.backend(),
            datacenter = lease.datacenter,
            worker = lease.worker,
            identity = %self.claim.identity,
            "acquired worker id"
        );
        Ok(lease)
    }

    /// Renews `lease` at once (recording a high-water mark ahead), then every
    /// `renew_every`, publishing what each renewal confirmed, until the lease is lost
    /// (`Ok`) or the keeper is stopped (`Err` with the stop request's reply).
    async fn renew(
        &mut self,
        lease: &Lease,
        stop: &mut StopRequest,
    ) -> Result<(), Option<StopReply>> {
        let timing = timing(&*self.registry, lease, &self.settings, &mut self.warned);
        let ttl = snowmint::whole_ms(timing.ttl);
        let expires = self.expires;
        let fence = Fence::of(&*self.registry, &timing);
        let mut held = Held {
            lease: lease.clone(),
            acquisition: self.acquisition,
            ttl_ms: if expires { ttl } else { 0 },
            valid_until_ms: 0,
            confirmed_high_water_ms: 0,
            last_error: None,
        };
        let mut wait = Duration::ZERO;
        loop {
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                reply = &mut *stop => return Err(reply.ok()),
            }
            // Validity is real time: the steady reading, which no wall-clock step reaches.
            let sent = self.clock.steady_ms();
            let mark = self.mark_to_confirm(ttl, held.confirmed_high_water_ms);
            match self.registry.renew(&self.claim, lease, mark).await {
                Ok(()) => {
                    self.counters.renewals.fetch_add(1, Ordering::Relaxed);
                    held.valid_until_ms = fence.after(sent);
                    // A registry that keeps no expiring lease vouches for any mark: the
                    // local state file is what records it.
                    held.confirmed_high_water_ms = if expires { mark } else { u64::MAX };
                    held.last_error = None;
                    self.status.send_replace(LeaseStatus::Held(held.clone()));
                    wait = fence.renew_every;
                    self.backoff = FIRST_BACKOFF;
                }
                // A lease that does not expire is lost too when its file was replaced.
                Err(err @ LeaseError::Lost { .. }) | Err(err @ LeaseError::Invalid(_))
                    if expires || matches!(err, LeaseError::Lost { .. }) =>
                {
                    self.counters.renew_failures.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(worker = lease.worker, error = %Chain(&err), "lease lost; acquiring again");
                    self.status.send_replace(LeaseStatus::Acquiring {
                        attempts: 0,
                        last_error: Some(err),
                    });
                    return Ok(());
                }
                Err(err) => {
                    self.counters.renew_failures.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(error = %Chain(&err), "cannot renew the lease");
                    // The fence stays where the last confirmed renewal put it.
                    held.last_error = Some(err);
                    self.status.send_replace(LeaseStatus::Held(held.clone()));
                    wait = RETRY_RENEW.min(timing.renew_every);
                }
            }
        }
    }

    /// The mark a renewal asks the registry to confirm, given the last one it confirmed.
    ///
    /// An expiring lease records a mark past anything it may issue before it lapses. The
    /// mark is in the ids' time: for a generator on the wall clock that is the wall clock's
    /// reading, which a step forward moves ahead of the steady one; a mark on the steady
    /// reading would then lie behind every id, and each would be refused for as long as the
    /// step lasts (for good, if the clock was behind at start and is set right). A step back
    /// must not lower a mark already confirmed. A lease held for the life of the process
    /// records only the present: its mark moves ahead of the ids with every reservation
    /// (`Registry::reserve_now`, the file registry) or lives in the local state file alone
    /// (a fixed worker id), and a successor after a crash need not wait out a TTL it never
    /// had. A counter's marks are counts, not instants: its reservations alone record them.
    fn mark_to_confirm(&self, ttl: u64, confirmed: u64) -> u64 {
        let ids_now = self.clock.now_ms();
        if !self.claim.clock.tells_time() {
            0
        } else if self.expires {
            (ids_now + ttl).max(confirmed)
        } else {
            ids_now
        }
    }
}

/// How long each confirmed renewal lets a holder issue, and so how often it renews.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fence {
    /// How long past a renewal's sending the hold is vouched for, in ms: the TTL less the
    /// safety margin for a lease that expires, [`Registry::confirms_for`] for one that can
    /// be lost behind its back; `None` for one never fenced.
    vouched_ms: Option<u64>,
    /// The wait between confirmed renewals: the settings', or a quarter of what a renewal
    /// vouches for, if shorter.
    renew_every: Duration,
}

/// How many renewals fit in what one vouches for, for a registry whose leases do not
/// expire: three may come late before ids wait.
const CONFIRMS_PER_FENCE: u32 = 4;

impl Fence {
    fn of(registry: &dyn Registry, timing: &LeaseSettings) -> Fence {
        if registry.expires() {
            return Fence {
                vouched_ms: Some(snowmint::whole_ms(
                    timing.ttl.saturating_sub(timing.safety_margin),
                )),
                renew_every: timing.renew_every,
            };
        }
        let confirms_for = registry.confirms_for();
        Fence {
            vouched_ms: confirms_for.map(snowmint::whole_ms),
            renew_every: confirms_for.map_or(timing.renew_every, |vouched| {
                (vouched / CONFIRMS_PER_FENCE).min(timing.renew_every)
            }),
        }
    }

    /// The fence of a renewal sent at `sent_ms` on the steady clock: ids may be issued
    /// while the clock reads before it.
    fn after(&self, sent_ms: u64) -> u64 {
        self.vouched_ms
            .map_or(u64::MAX, |vouched| sent_ms.saturating_add(vouched))
    }
}

/// The settings `lease` is kept with: `settings`, or, when the registry grants another
/// TTL, the same scaled to it, with a warning the first time that TTL is seen.
fn timing(
    registry: &dyn Registry,
    lease: &Lease,
    settings: &LeaseSettings,
    warned: &mut Option<Duration>,
) -> LeaseSettings {
    let granted = match registry.granted_ttl(lease) {
        Some(granted) if granted != settings.ttl => granted,
        _ => return *settings,
    };
    let timing = settings.scaled_to(granted);
    if *warned != Some(granted) {
        *warned = Some(granted);
        tracing::warn!(
            backend = registry.backend(),
            asked_ms = snowmint::whole_ms(settings.ttl),
            granted_ms = snowmint::whole_ms(granted),
            renew_ms = snowmint::whole_ms(timing.renew_every),
            margin_ms = snowmint::whole_ms(timing.safety_margin),
            "the registry granted another lease TTL than the one asked for; the lease lasts as granted, and the renewal interval and safety margin keep their share of it"
        );
    }
    timing
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use snowmint::ManualClock;

    use super::*;

    /// A registry whose answers the test sets: the keeper's logic, not a backend, is what
    /// these tests try (the backends run against real servers in `tests/`).
    #[derive(Debug, Default)]
    struct Scripted {
        renew: Mutex<Option<LeaseError>>,
        next_worker: AtomicU64,
        released: Mutex<Vec<(u64, u64)>>,
        /// The TTL it grants, if it grants its own.
        granted: Option<Duration>,
        /// The marks renewals asked for.
        marks: Mutex<Vec<u64>>,
        /// For a registry whose leases do not expire: how long a renewal vouches for one.
        lasting: Option<Option<Duration>>,
        /// How many releases from now on find the registry away.
        away_for_releases: AtomicU64,
    }

    #[async_trait::async_trait]
    impl Registry for Scripted {
        fn backend(&self) -> &'static str {
            "scripted"
        }

        async fn acquire(&self, claim: &Claim) -> Result<Lease, LeaseError> {
            Ok(Lease {
                datacenter: claim.datacenter,
                worker: self.next_worker.fetch_add(1, Ordering::SeqCst),
                high_water_ms: Some(42),
                token: 0,
            })
        }

        fn granted_ttl(&self, _: &Lease) -> Option<Duration> {
            self.granted
        }

        fn expires(&self) -> bool {
            self.lasting.is_none()
        }

        fn confirms_for(&self) -> Option<Duration> {
            self.lasting.flatten()
        }

        async fn renew(&self, _: &Claim, _: &Lease, mark: u64) -> Result<(), LeaseError> {
            self.marks.lock().unwrap().push(mark);
            let mut next = self.renew.lock().unwrap();
            match next.clone() {
                // A loss happens once; the next lease renews.
                Some(err @ LeaseError::Lost { .. }) => {
                    *next = None;
                    Err(err)
                }
                Some(err) => Err(err),
                None => Ok(()),
            }
        }

        async fn give_back(
            &self,
            _: &Claim,
            lease: &Lease,
            high_water_ms: u64,
        ) -> Result<(), LeaseError> {
            let away = self.away_for_releases.load(Ordering::SeqCst);
            if away > 0 {
                self.away_for_releases.store(away - 1, Ordering::SeqCst);
                return Err(LeaseError::unavailable_because(
                    "scripted",
                    "",
                    std::io::Error::from(std::io::ErrorKind::ConnectionRefused),
                ));
            }
            self.released
                .lock()
                .unwrap()
                .push((lease.worker, high_water_ms));
            Ok(())
        }
    }

    async fn next_held(status: &mut watch::Receiver<LeaseStatus>) -> Held {
        loop {
            status.changed().await.unwrap();
            if let LeaseStatus::Held(held) = status.borrow_and_update().clone() {
                return held;
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn renewals_move_the_fence_failures_freeze_it_and_loss_reacquires() {
        let registry = Arc::new(Scripted::default());
        let clock = Arc::new(ManualClock::new(1_000_000));
        let claim = Claim::new("ns", 0, 32, "host", Duration::from_secs(10));
        let keeper = Keeper::start(
            registry.clone(),
            claim,
            LeaseSettings::default(),
            clock.clone(),
        );
        let mut status = keeper.status();

        let held = next_held(&mut status).await;
        assert_eq!((held.lease.worker, held.acquisition), (0, 1));
        assert_eq!(held.valid_until_ms, 1_000_000 + 10_000 - 1_000);
        assert_eq!(held.confirmed_high_water_ms, 1_000_000 + 10_000);

        clock.advance(3_333);
        let held = next_held(&mut status).await;
        assert_eq!(held.valid_until_ms, 1_003_333 + 9_000);

        *registry.renew.lock().unwrap() = Some(LeaseError::unavailable_because(
            "scripted",
            "",
            std::io::Error::from(std::io::ErrorKind::ConnectionRefused),
        ));
        clock.advance(3_333);
        let held = next_held(&mut status).await;
        assert_eq!(
            held.valid_until_ms,
            1_003_333 + 9_000,
            "a failed renewal does not move the fence"
        );
        let last_error = held.last_error.expect("the renewal's error");
        assert_eq!(
            Chain(&last_error).to_string(),
            "scripted registry is unavailable: connection refused"
        );

        *registry.renew.lock().unwrap() = Some(LeaseError::Lost {
            datacenter: 0,
            worker: 0,
            reason: "taken over".into(),
        });
        let held = next_held(&mut status).await;
        assert_eq!(
            (held.lease.worker, held.acquisition),
            (1, 2),
            "a new lease after the loss"
        );
        assert!(keeper.counters().renew_failures.load(Ordering::SeqCst) >= 2);

        keeper.release(1_234).await.unwrap();
        assert_eq!(*registry.released.lock().unwrap(), [(1, 1_234)]);
    }

    /// A registry restarted beside its holders is away for the moment they give their
    /// worker ids back: a release tries again within its patience, so the worker id is
    /// free for the holder's successor; one attempt, or patience spent, is an error.
    #[tokio::test(start_paused = true)]
    async fn a_release_tries_again_while_the_registry_is_away_within_its_patience() {
        let held_keeper = |registry: &Arc<Scripted>| {
            let claim = Claim::new("ns", 0, 32, "host", Duration::from_secs(10));
            let clock = Arc::new(ManualClock::new(1_000_000));
            Keeper::start(registry.clone(), claim, LeaseSettings::default(), clock)
        };
        let cases = [
            // (releases that find it away, patience, released?, at least this long)
            (0, Duration::ZERO, true, Duration::ZERO),
            (1, Duration::ZERO, false, Duration::ZERO),
            (
                3,
                Duration::from_secs(5),
                true,
                Duration::from_millis(50 + 100 + 200),
            ),
            (
                100,
                Duration::from_millis(400),
                false,
                Duration::from_millis(50 + 100),
            ),
        ];
        for (away, patience, released, waited) in cases {
            let registry = Arc::new(Scripted::default());
            let keeper = held_keeper(&registry);
            next_held(&mut keeper.status()).await;
            registry.away_for_releases.store(away, Ordering::SeqCst);
            let started = tokio::time::Instant::now();
            let result = keeper.release_within(7_000, patience).await;
            let took = started.elapsed();
            let row = format!("away for {away}, patience {patience:?}: {result:?} after {took:?}");
            assert_eq!(result.is_ok(), released, "{row}");
            if released {
                assert_eq!(*registry.released.lock().unwrap(), [(0, 7_000)], "{row}");
            } else {
                assert!(
                    matches!(result, Err(LeaseError::Unavailable { .. })),
                    "{row}"
                );
                assert!(registry.released.lock().unwrap().is_empty(), "{row}");
            }
            assert!(took >= waited && took <= patience.max(waited), "{row}");
        }
    }

    /// Found by the fault-injection campaign: a `--clock wall` server whose clock was
    /// stepped forward past the TTL (or started behind and was set right) refused every id
    /// for as long as the step lasted, for good in the second case, because the marks were
    /// confirmed on the steady clock, behind the ids' time.
    #[tokio::test(start_paused = true)]
    async fn a_stepped_wall_clock_gets_marks_in_its_own_time_and_validity_in_real_time() {
        let registry = Arc::new(Scripted::default());
        // A wall clock that the test steps, beside the real time that only moves forward.
        let clock = Arc::new(ManualClock::new(1_000_000).stepping());
        let claim = Claim::new("ns", 0, 32, "host", Duration::from_secs(10))
            .with_clock(snowmint::ClockMode::Wall);
        let keeper = Keeper::start(
            registry.clone(),
            claim,
            LeaseSettings::default(),
            clock.clone(),
        );
        let mut status = keeper.status();
        let held = next_held(&mut status).await;
        assert_eq!(held.confirmed_high_water_ms, 1_010_000);

        // The wall clock is set 60 s ahead: the next renewal confirms marks in its time...
        clock.step_forward(60_000);
        clock.advance(3_333);
        let held = next_held(&mut status).await;
        assert_eq!(held.confirmed_high_water_ms, 1_003_333 + 60_000 + 10_000);
        // ... and the lease stays valid no longer in real time than before.
        assert_eq!(held.valid_until_ms, 1_003_333 + 9_000);

        // Set back again: a mark already confirmed is not lowered.
        clock.step_back(60_000);
        clock.advance(3_333);
        let held = next_held(&mut status).await;
        assert_eq!(held.confirmed_high_water_ms, 1_073_333);
        assert_eq!(held.valid_until_ms, 1_006_666 + 9_000);
        assert_eq!(
            *registry.marks.lock().unwrap(),
            [1_010_000, 1_073_333, 1_073_333]
        );
        keeper.release(1_006_700).await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_granted_ttl_sets_the_fence_the_marks_and_the_renewal_interval() {
        let registry = Arc::new(Scripted {
            granted: Some(Duration::from_secs(4)),
            ..Scripted::default()
        });
        let clock = Arc::new(ManualClock::new(1_000_000));
        let claim = Claim::new("ns", 0, 32, "host", Duration::from_secs(10));
        let keeper = Keeper::start(
            registry.clone(),
            claim,
            LeaseSettings::default(),
            clock.clone(),
        );
        let mut status = keeper.status();

        let held = next_held(&mut status).await;
        assert_eq!(held.ttl_ms, 4_000);
        // The margin keeps its tenth of the TTL: 400 ms of 4 s.
        assert_eq!(held.valid_until_ms, 1_000_000 + 4_000 - 400);
        assert_eq!(held.confirmed_high_water_ms, 1_004_000);

        // Renewed every third of the granted TTL, not of the 10 s asked for.
        let renewed = tokio::time::Instant::now();
        clock.advance(1_333);
        let held = next_held(&mut status).await;
        assert_eq!(renewed.elapsed(), Duration::from_millis(1_333));
        assert_eq!(held.valid_until_ms, 1_001_333 + 3_600);
        assert_eq!(*registry.marks.lock().unwrap(), [1_004_000, 1_005_333]);
        keeper.release(1_001_400).await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_ttl_granted_as_asked_changes_nothing() {
        let registry = Arc::new(Scripted {
            granted: Some(Duration::from_secs(10)),
            ..Scripted::default()
        });
        let clock = Arc::new(ManualClock::new(1_000_000));
        let claim = Claim::new("ns", 0, 32, "host", Duration::from_secs(10));
        let keeper = Keeper::start(registry, claim, LeaseSettings::default(), clock);
        let held = next_held(&mut keeper.status()).await;
        assert_eq!(held.ttl_ms, 10_000);
        assert_eq!(held.valid_until_ms, 1_000_000 + 9_000);
    }

    /// Found by pausing a `file:` holder (SIGSTOP) while its directory was restored: a lease
    /// that does not expire but can be lost behind its back is fenced at what a renewal
    /// vouches for past its sending, as an expiring one is at its TTL, and renewed every
    /// quarter of it; a failed renewal leaves the fence where it was. A lease nothing can
    /// take is never fenced.
    #[tokio::test(start_paused = true)]
    async fn a_lease_that_does_not_expire_is_fenced_at_what_a_renewal_vouches_for() {
        let registry = Arc::new(Scripted {
            lasting: Some(Some(Duration::from_secs(1))),
            ..Scripted::default()
        });
        let clock = Arc::new(ManualClock::new(1_000_000));
        let claim = Claim::new("ns", 0, 32, "host", Duration::from_secs(10));
        let keeper = Keeper::start(
            registry.clone(),
            claim.clone(),
            LeaseSettings::default(),
            clock.clone(),
        );
        let mut status = keeper.status();
        let held = next_held(&mut status).await;
        assert_eq!((held.ttl_ms, held.valid_until_ms), (0, 1_001_000));
        assert_eq!(held.confirmed_high_water_ms, u64::MAX);

        let renewed = tokio::time::Instant::now();
        clock.advance(250);
        let held = next_held(&mut status).await;
        assert_eq!(renewed.elapsed(), Duration::from_millis(250));
        assert_eq!(held.valid_until_ms, 1_001_250);

        *registry.renew.lock().unwrap() = Some(LeaseError::unavailable(
            "scripted",
            "cannot read the lock file",
        ));
        clock.advance(250);
        let held = next_held(&mut status).await;
        assert_eq!(
            held.valid_until_ms, 1_001_250,
            "a failed renewal does not move the fence"
        );
        keeper.release(1_000_500).await.unwrap();

        let never = Arc::new(Scripted {
            lasting: Some(None),
            ..Scripted::default()
        });
        let keeper = Keeper::start(never, claim, LeaseSettings::default(), clock);
        let held = next_held(&mut keeper.status()).await;
        assert_eq!(held.valid_until_ms, u64::MAX);
    }
}
