//! Worker-id leases: the one trait every coordination backend implements.
//!
//! A [`Registry`] hands a process one (datacenter, worker) pair at a time, keeps it while the
//! process renews it, and takes it back. Beside each pair it keeps the high-water mark: the
//! instant up to which ids may have been issued with that pair, raised ahead of issuing and
//! kept when the lease ends, so a successor starts after it.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::listing::{ListFilter, Listing};

/// What a process asks a registry for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// Where the claim's fleet keeps its records: [`Fleet::namespace`](crate::Fleet::namespace)
    /// (`fleet.default`), one pool of worker ids for every generator of the fleet.
    pub namespace: String,
    /// The fleet's layout in canonical form ([`snowmint::Layout::canonical`]): a registry
    /// records it with the fleet's first lease and refuses a claim with another
    /// ([`LeaseError::OtherLayout`]).
    pub layout: String,
    /// Namespaces in which servers of earlier releases kept this layout's leases and marks
    /// ([`legacy_namespaces`](crate::legacy_namespaces)): a worker id held under one of
    /// them is passed over, and a lease starts after the largest mark left under them.
    pub legacy: Vec<String>,
    /// The layout whose earlier releases' records the claim inherits, when it was made for
    /// one ([`Claim::with_layout`]): a registry then also reads every namespace it holds
    /// that an earlier release of a slightly different layout left
    /// ([`may_overlap`](crate::may_overlap)), as it reads [`legacy`](Claim::legacy) ones.
    /// `None`: only those.
    pub legacy_layout: Option<snowmint::Layout>,
    /// The datacenter whose worker ids are wanted.
    pub datacenter: u64,
    /// How many worker ids the datacenter has (`2^worker_bits`); ids are `0..workers`.
    pub workers: u64,
    /// A stable name for the instance (host name by default): it gets its old worker back
    /// when that worker is free.
    pub identity: String,
    /// Unique to this process and this acquisition; a lease is held by a holder.
    pub holder: String,
    /// How long a lease lasts without renewal.
    pub ttl: Duration,
    /// The clock mode of the generator that will issue with the lease: a counter's marks
    /// count ticks, so the keeper records no instant for it, and a registry that keeps
    /// marks with their mode (the `file` registry) refuses a worker whose mark the mode
    /// cannot follow.
    pub clock: snowmint::ClockMode,
    /// How far past the last instant a holder of this fleet reached the registry it may
    /// have issued ids: a lease's TTL and the safety margin for a registry whose leases
    /// expire (a holder reserves one TTL ahead, and the margin bounds how far its clock may
    /// be ahead of the registry's); how long a renewal vouches for the hold
    /// ([`Registry::confirms_for`]), the overflow lead and the margin for one whose leases
    /// last as long as the process (`file`): a holder is fenced that long past its last
    /// renewal, whatever it reserved. A registry that cannot vouch for
    /// its records before some instant (it restarted, was restored or failed over, and may
    /// have lost writes) starts the lease after that instant plus this
    /// ([`Claim::floor_after`]).
    pub reach: Duration,
}

impl Claim {
    /// A claim with a fresh holder name: `identity`, the process id and a random suffix.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use snowmint_lease::Claim;
    ///
    /// let claim = Claim::new("twitter-1288834974657", 0, 32, "web-7", Duration::from_secs(10));
    /// assert!(claim.holder.starts_with("web-7/"));
    /// ```
    #[must_use]
    pub fn new(
        namespace: &str,
        datacenter: u64,
        workers: u64,
        identity: &str,
        ttl: Duration,
    ) -> Claim {
        use std::hash::{BuildHasher, RandomState};
        let nonce = RandomState::new().hash_one(std::time::SystemTime::now()) & 0xffff_ffff;
        Claim {
            namespace: namespace.to_string(),
            datacenter,
            workers,
            identity: identity.to_string(),
            holder: format!("{identity}/{}/{nonce:08x}", std::process::id()),
            ttl,
            clock: snowmint::ClockMode::Monotonic,
            layout: snowmint::Layout::TWITTER.canonical().to_string(),
            legacy: Vec::new(),
            legacy_layout: None,
            reach: ttl + DEFAULT_SAFETY_MARGIN,
        }
    }

    /// The same claim for generators of `layout` (default: Twitter's), inheriting the
    /// leases and marks that earlier releases kept for it, or for a layout that differs
    /// from it only by its epoch ([`Claim::legacy_layout`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use snowmint::Layout;
    /// use snowmint_lease::{Claim, Fleet};
    ///
    /// let claim = Claim::new(&Fleet::default().namespace(), 0, 256, "web-7", Duration::from_secs(10))
    ///     .with_layout(&Layout::SONYFLAKE);
    /// assert_eq!(claim.layout, Layout::SONYFLAKE.canonical().to_string());
    /// assert_eq!(claim.legacy, ["sonyflake-1409529600000", "custom-1409529600000"]);
    /// ```
    #[must_use]
    pub fn with_layout(self, layout: &snowmint::Layout) -> Claim {
        Claim {
            layout: layout.canonical().to_string(),
            legacy: crate::legacy_namespaces(layout),
            legacy_layout: Some(*layout),
            ..self
        }
    }

    /// The fleet's name, for messages: the namespace without its `fleet.` prefix.
    #[must_use]
    pub fn fleet_name(&self) -> &str {
        self.namespace
            .strip_prefix("fleet.")
            .unwrap_or(&self.namespace)
    }

    /// [`LeaseError::OtherLayout`] for a registry that recorded `recorded` as the fleet's
    /// layout; `None` when it is this claim's.
    #[must_use]
    pub fn other_layout(&self, recorded: &str) -> Option<LeaseError> {
        (recorded != self.layout).then(|| LeaseError::OtherLayout {
            fleet: self.fleet_name().to_string(),
            recorded: recorded.to_string(),
            ours: self.layout.clone(),
        })
    }

    /// The same claim for a generator in clock mode `clock` (default: `monotonic`).
    #[must_use]
    pub fn with_clock(self, clock: snowmint::ClockMode) -> Claim {
        Claim { clock, ..self }
    }

    /// The same claim with another [`reach`](Claim::reach) (default: the TTL and 1 s).
    #[must_use]
    pub fn with_reach(self, reach: Duration) -> Claim {
        Claim { reach, ..self }
    }

    /// The same claim, reaching as far as `recorded_ms` if that is further than its own
    /// [`reach`](Claim::reach): the largest reach any server of the fleet recorded with the
    /// registry before it issued. A fleet's servers may differ in it (a rollout that raises
    /// the TTL or the reservation), and a holder the registry forgets may be one that
    /// reaches further than the newcomer.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use snowmint_lease::Claim;
    ///
    /// let claim = Claim::new("fleet.default", 0, 32, "web-7", Duration::from_secs(10));
    /// assert_eq!(claim.clone().reaching(30_000).reach, Duration::from_secs(30));
    /// assert_eq!(claim.reaching(5_000).reach, Duration::from_secs(11));
    /// ```
    #[must_use]
    pub fn reaching(self, recorded_ms: u64) -> Claim {
        let reach = self.reach.max(Duration::from_millis(recorded_ms));
        Claim { reach, ..self }
    }

    /// The claim's own reach in whole ms, as registries record it.
    #[must_use]
    pub fn reach_ms(&self) -> u64 {
        snowmint::whole_ms(self.reach)
    }

    /// The mark a lease starts after when the registry vouches for its records only from
    /// `since_ms` on (ms since the Unix epoch, on the registry's clock): a holder it may
    /// have forgotten reached it last before then, so it issued nothing past `since_ms` and
    /// the [`reach`](Claim::reach), and its fence stopped it by then. `None` for a counter,
    /// whose marks count ticks: no instant bounds them.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use snowmint_lease::Claim;
    ///
    /// let claim = Claim::new("fleet.default", 0, 32, "web-7", Duration::from_secs(10));
    /// assert_eq!(claim.floor_after(1_000_000), Some(1_011_000));
    /// ```
    #[must_use]
    pub fn floor_after(&self, since_ms: u64) -> Option<u64> {
        self.clock
            .tells_time()
            .then(|| since_ms.saturating_add(snowmint::whole_ms(self.reach)))
    }

    /// The mark to start after: the larger of the `recorded` one and the floor of a
    /// registry that vouches only from `since_ms` on ([`Claim::floor_after`]). Says so in
    /// the log when the floor is the larger and still ahead, since the lease then waits for
    /// it.
    #[must_use]
    pub fn start_after(&self, recorded: Option<u64>, since_ms: u64, worker: u64) -> Option<u64> {
        let Some(floor) = self.floor_after(since_ms) else {
            return recorded;
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, snowmint::whole_ms);
        if floor > now && recorded.is_none_or(|mark| mark < floor) {
            tracing::info!(
                worker,
                since = %snowmint::UnixMs(since_ms),
                floor = %snowmint::UnixMs(floor),
                "the registry vouches for its records only since it last started, was restored or failed over: this lease starts after anything a holder it may have forgotten could have issued"
            );
        }
        Some(recorded.map_or(floor, |mark| mark.max(floor)))
    }
}

/// The safety margin a [`Claim`] counts in its [`reach`](Claim::reach) unless told
/// otherwise: [`LeaseSettings`](crate::LeaseSettings)'s default.
const DEFAULT_SAFETY_MARGIN: Duration = Duration::from_secs(1);

/// A worker id held by this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The datacenter id.
    pub datacenter: u64,
    /// The worker id.
    pub worker: u64,
    /// The high-water mark recorded for the pair when it was acquired, in ms since the Unix
    /// epoch: issue nothing at or before it.
    pub high_water_ms: Option<u64>,
    /// A backend's own handle on the lease (etcd's lease id); 0 when it has none.
    pub token: i64,
}

impl Lease {
    /// The high-water mark a release writes when the last id was issued up to
    /// `issued_until_ms`: that instant, so a successor need not wait out this holder's
    /// reservation, but never below the mark the lease was acquired with. That mark covers
    /// every holder before this one; a holder that issued nothing (stopped while it waited
    /// for its clock to pass the mark, say) must not hand its successor a lower one.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint_lease::Lease;
    ///
    /// let lease = Lease { datacenter: 0, worker: 3, high_water_ms: Some(5_000), token: 0 };
    /// assert_eq!(lease.release_mark(7_000), 7_000); // issued past the acquired mark
    /// assert_eq!(lease.release_mark(1_000), 5_000); // a clock behind never lowers it
    /// ```
    #[must_use]
    pub fn release_mark(&self, issued_until_ms: u64) -> u64 {
        issued_until_ms.max(self.high_water_ms.unwrap_or(0))
    }
}

/// Why a registry could not give, keep or take back a lease.
///
/// Clone (a cause is shared), so the keeper can publish the last one with its status.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum LeaseError {
    /// Every worker id of the datacenter is held. The message names the command that
    /// lists their holders, since the operator's next question is who they are.
    #[error(
        "all {workers} worker ids of datacenter {datacenter} of fleet {fleet:?} are held; retrying (see who holds them: snowmint fleet --lease URL --fleet {fleet} --datacenter {datacenter})"
    )]
    Exhausted {
        /// The fleet's name ([`Claim::fleet_name`]): an earlier release's namespace is
        /// its own name.
        fleet: String,
        /// The datacenter.
        datacenter: u64,
        /// How many worker ids it has.
        workers: u64,
    },
    /// The lease ended (expired, or taken over after expiring): stop issuing with it.
    #[error("lease on datacenter {datacenter} worker {worker} is lost: {reason}")]
    Lost {
        /// The datacenter.
        datacenter: u64,
        /// The worker.
        worker: u64,
        /// What the registry said.
        reason: String,
    },
    /// The fleet issues ids of another layout: a generator of this one could issue the
    /// same ids as its members, so it must not share their worker ids.
    #[error(
        "fleet {fleet:?} issues ids of layout {recorded}, and this generator's layout is {ours}: a generator of another layout needs a fleet of its own (--fleet NAME)"
    )]
    OtherLayout {
        /// The fleet's name.
        fleet: String,
        /// The layout the registry recorded for the fleet, in canonical form.
        recorded: String,
        /// The claim's layout, in canonical form.
        ours: String,
    },
    /// The registry could not be reached or answered with an error.
    #[error("{backend} registry is unavailable{}", Detail(.message))]
    Unavailable {
        /// Which backend.
        backend: &'static str,
        /// What the backend says at its own layer: where the registry is, what it
        /// answered; empty when the cause says it all.
        message: String,
        /// The error behind it (a connection's, a file's), if there is one.
        source: Option<Arc<dyn std::error::Error + Send + Sync>>,
    },
    /// The lease URL or settings are wrong.
    #[error("{0}")]
    Invalid(String),
    /// The lease URL hands out worker ids without a registry (`static:W`, `hostname`):
    /// nothing records who holds what, so there is nothing to list.
    #[error("lease URL {lease} names no registry: there is nothing to list")]
    NothingToList {
        /// The lease URL.
        lease: String,
    },
}

impl LeaseError {
    /// [`LeaseError::Exhausted`] for `claim`'s fleet and datacenter.
    pub(crate) fn exhausted(claim: &Claim) -> LeaseError {
        LeaseError::Exhausted {
            fleet: claim.fleet_name().to_string(),
            datacenter: claim.datacenter,
            workers: claim.workers,
        }
    }

    /// [`LeaseError::Lost`] for `lease`, with the registry's `reason`.
    pub(crate) fn lost(lease: &Lease, reason: impl Into<String>) -> LeaseError {
        LeaseError::Lost {
            datacenter: lease.datacenter,
            worker: lease.worker,
            reason: reason.into(),
        }
    }

    /// [`LeaseError::Unavailable`] with `message` and no cause.
    pub(crate) fn unavailable(backend: &'static str, message: impl Into<String>) -> LeaseError {
        LeaseError::Unavailable {
            backend,
            message: message.into(),
            source: None,
        }
    }

    /// [`LeaseError::Unavailable`] with `message`, because of `source`.
    pub(crate) fn unavailable_because(
        backend: &'static str,
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> LeaseError {
        LeaseError::Unavailable {
            backend,
            message: message.into(),
            source: Some(Arc::new(source)),
        }
    }
}

/// `: message`, or nothing for an empty one.
struct Detail<'a>(&'a str);

impl fmt::Display for Detail<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            "" => Ok(()),
            message => write!(f, ": {message}"),
        }
    }
}

/// A coordination system that leases worker ids. Every call is one atomic step in the
/// backend: no read-then-write outside a transaction or script.
#[async_trait::async_trait]
pub trait Registry: Send + Sync + fmt::Debug {
    /// The backend's name: `static`, `hostname`, `file`, `redis`, `etcd`, `postgres` or
    /// `zookeeper`.
    fn backend(&self) -> &'static str;

    /// Whether leases expire unless renewed. Backends that hold a worker id for the life of
    /// the process (static, hostname, file) say `false`: their holders are fenced only by
    /// how long a renewal vouches for the hold ([`Registry::confirms_for`]).
    fn expires(&self) -> bool {
        true
    }

    /// How long `lease` lasts without renewal, when the registry decides it rather than
    /// the claim: ZooKeeper grants a session timeout within bounds of its own, and a lease
    /// lasts as long as its session. The keeper then counts marks and the fence from it,
    /// and scales the renewal interval and the safety margin to it.
    ///
    /// `None` (the default): the claim's TTL, as asked.
    fn granted_ttl(&self, lease: &Lease) -> Option<Duration> {
        let _ = lease;
        None
    }

    /// How long a renewal vouches for a lease that does not expire but can be lost behind its
    /// holder's back: a restore can replace the `file` registry's lock file, and only a
    /// renewal (a check that the file is still the one locked) says it did not. The keeper
    /// fences the holder this long past each renewal it sent, as it fences an expiring
    /// lease at its TTL less the margin, and renews every quarter of it. A holder paused
    /// past it (SIGSTOP, a VM pause, starvation) then issues nothing, on any thread and
    /// whatever it reserved, until a renewal confirms its hold again.
    ///
    /// `None` (the default): the lease expires, and its TTL is its fence; or nothing can
    /// take it behind the holder's back (`static`, `hostname`), and it is never fenced.
    fn confirms_for(&self) -> Option<Duration> {
        None
    }

    /// Records the pair's high-water mark at once, before the generator issues ids up to
    /// `until_ms`, for a registry that can do so on the issuing thread without the network
    /// (`file`): its mark then moves with every reservation, exactly as a state file's
    /// does, and a successor on another state directory starts after every id issued.
    ///
    /// `None` (the default) from a registry that records marks only when it
    /// [renews](Registry::renew) a lease: a generator under such a lease is capped by the
    /// mark the last renewal confirmed (see [`Held::confirmed_high_water_ms`]).
    ///
    /// [`Held::confirmed_high_water_ms`]: crate::Held::confirmed_high_water_ms
    ///
    /// # Errors
    ///
    /// `Some(Err(_))` when the mark could not be recorded: nothing may be issued past the
    /// old one.
    fn reserve_now(&self, lease: &Lease, until_ms: u64) -> Option<Result<(), LeaseError>> {
        let _ = (lease, until_ms);
        None
    }

    /// Takes a free worker id: the claim's old one if it is free, otherwise any free or
    /// expired one, and never one outside `0..workers`.
    ///
    /// # Errors
    ///
    /// [`LeaseError::Exhausted`] when all are held; [`LeaseError::Unavailable`] when the
    /// registry cannot be reached.
    async fn acquire(&self, claim: &Claim) -> Result<Lease, LeaseError>;

    /// Extends the lease by the claim's TTL and raises the pair's high-water mark to at least
    /// `high_water_ms`, in one step, only if the claim still holds the lease.
    ///
    /// # Errors
    ///
    /// [`LeaseError::Lost`] if the lease is no longer held; [`LeaseError::Unavailable`].
    async fn renew(
        &self,
        claim: &Claim,
        lease: &Lease,
        high_water_ms: u64,
    ) -> Result<(), LeaseError>;

    /// Gives the worker id back at once, so a successor need not wait out its TTL, with
    /// its high-water mark set to [`Lease::release_mark`]: the last id issued, never below
    /// the mark the lease was acquired with. Every backend is held to that rule here, in
    /// one place; a backend writes the mark it is given ([`Registry::give_back`]).
    ///
    /// # Errors
    ///
    /// [`LeaseError::Unavailable`]; a lease already lost is not an error.
    async fn release(
        &self,
        claim: &Claim,
        lease: &Lease,
        issued_until_ms: u64,
    ) -> Result<(), LeaseError> {
        self.give_back(claim, lease, lease.release_mark(issued_until_ms))
            .await
    }

    /// Gives the worker id back at once, setting its high-water mark to exactly `mark_ms`
    /// (which may lower this holder's own reservation: nothing past it was issued), if the
    /// claim still holds the lease. Called by [`Registry::release`], which has already
    /// raised `mark_ms` to the mark the lease was acquired with.
    ///
    /// # Errors
    ///
    /// [`LeaseError::Unavailable`]; a lease already lost is not an error.
    async fn give_back(&self, claim: &Claim, lease: &Lease, mark_ms: u64)
    -> Result<(), LeaseError>;

    /// Every record the registry holds that `filter` keeps: each worker id held, expired or
    /// left with a mark, in every fleet and in the namespaces of earlier releases, with the
    /// free worker ids left per pool ([`Listing`]). It only reads: it takes, renews and
    /// writes nothing, so a read-only user of the registry can run it
    /// (docs/OPERATIONS.md, "Seeing the fleet").
    ///
    /// The default answers [`LeaseError::NothingToList`], for the backends that hand out
    /// worker ids without a registry (`static`, `hostname`).
    ///
    /// # Errors
    ///
    /// [`LeaseError::NothingToList`]; [`LeaseError::Unavailable`] when the registry cannot
    /// be read.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint_lease::{ListFilter, registry_from_url};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
    /// let dir = tempfile::tempdir()?;
    /// let registry = registry_from_url(&format!("file:{}", dir.path().display()))?;
    /// let listing = registry.list(&ListFilter::default()).await?;
    /// assert!(listing.records.is_empty());
    /// let err = registry_from_url("static:3")?.list(&ListFilter::default()).await.unwrap_err();
    /// assert_eq!(err.to_string(), "lease URL static:3 names no registry: there is nothing to list");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })
    /// # }
    /// ```
    async fn list(&self, filter: &ListFilter) -> Result<Listing, LeaseError> {
        let _ = filter;
        Err(LeaseError::NothingToList {
            lease: self.backend().to_string(),
        })
    }
}
