//! Worker-id leases on ZooKeeper: a lease is a ZooKeeper session, and ends with it.
//!
//! # Nodes
//!
//! ```text
//! {root}/{namespace}/dc{D}/w{W}                ephemeral   holder; owned by the lease's session
//! {root}/{namespace}/dc{D}/w{W}.mark           persistent  high-water mark, ms (empty: none yet)
//! {root}/{namespace}/dc{D}/sticky/{identity}   persistent  W, the instance's last worker
//! ```
//!
//! A worker is held while its ephemeral node exists. The ensemble deletes it when the
//! session that made it ends: closed by the holder's release, or expired one session
//! timeout after the last heartbeat the ensemble heard from it (a killed holder's).
//!
//! # Sessions and the TTL
//!
//! Each acquisition opens a session of its own, asking for the claim's TTL as its timeout.
//! The ensemble clamps the timeout to 2-20 ticks of its `tickTime` (by default), and the
//! timeout it grants is the lease's TTL ([`Registry::granted_ttl`]): the keeper counts
//! the fence and the marks from it. Every renewal is a request the ensemble hears after the
//! renewal was sent, so the session cannot expire before `sent + timeout` on the server
//! that heard it (see docs/OPERATIONS.md for an ensemble's leader).
//!
//! The client sends heartbeats by itself while the session is open, so a holder that
//! stops calling (its keeper dropped) would keep its worker for good: the registry closes
//! a session nobody has called for the TTL asked (or the one granted, if longer), which
//! is past any fence the holder was given.
//!
//! # Operations
//!
//! - **acquire**: open a session; read the sticky node and list the datacenter's children;
//!   for the sticky worker and then free ones, one `multi` each: `create w{W} (ephemeral),
//!   check w{W}.mark at the version read (or create it empty), set sticky = W`. The mark
//!   comes back from the read the `multi` checked. On any failure the session is closed,
//!   which deletes whatever it took.
//! - **renew**: one `multi`: `check w{W} exists, set w{W}.mark = max(mark, asked) at the
//!   version this holder last wrote`. The conditional set fences out a stale holder: any
//!   other writer changed the version. A set whose answer was lost also changed it: the
//!   holder then finds its own session owning `w{W}`, reads the mark again and retries.
//! - **release**: one `multi`: `set w{W}.mark = the last id's ms (never below the mark
//!   the lease began with) at the version known, delete w{W}`; then the session closes.
//!   A lease already lost is not an error.
//!
//! # Cost
//!
//! An acquisition lists the datacenter's children once: one node per worker held and one
//! per worker ever used (its mark), which ZooKeeper answers in one packet (1 MB by
//! default: some 50,000 workers ever used). Renewals and releases write two nodes.
//! Nodes are made with the open ACL (`world:anyone`), as the other backends need no
//! credentials either.

mod nodes;
mod renew;
mod session;
mod take;
mod url;

use std::fmt;
use std::time::Duration;

use zookeeper_client as zk;

use self::session::{Session, Sessions};
use self::url::Target;
use crate::registry::{Claim, Lease, LeaseError, Registry};

/// Every call (acquire, renew, release) ends within this, opening a session included,
/// so a registry that is down or frozen is reported while the fence still stands.
const CALL_TIMEOUT: Duration = Duration::from_secs(2);
/// Attempts to raise a mark whose version moved under a lost answer.
const RAISE_TRIES: u32 = 3;

/// Leases worker ids through ZooKeeper: a session per lease, an ephemeral node per worker
/// held, the high-water mark in a persistent node beside it, raised by the `multi` that
/// confirms the lease. The lease's TTL is the session timeout the ensemble grants
/// ([`Registry::granted_ttl`]); docs/OPERATIONS.md says how it relates to the margin.
pub struct ZooKeeperRegistry {
    target: Target,
    sessions: Sessions,
}

impl ZooKeeperRegistry {
    /// A registry for `zookeeper://HOST[:PORT][,HOST[:PORT]...]/PATH` (port 2181 by
    /// default), keeping its nodes below `PATH`. Checks the URL; the first acquisition
    /// connects, and makes the nodes above the workers if they are missing.
    ///
    /// # Errors
    ///
    /// [`LeaseError::Invalid`] for a URL of another form, naming what is wrong.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint_lease::{Registry, ZooKeeperRegistry};
    ///
    /// let registry = ZooKeeperRegistry::from_url("zookeeper://zk1:2181,zk2:2181/snowmint")?;
    /// assert_eq!(registry.backend(), "zookeeper");
    /// let err = ZooKeeperRegistry::from_url("zookeeper://zk1:2181").unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     r#"lease URL "zookeeper://zk1:2181": expected zookeeper://HOST:PORT[,HOST:PORT...]/PATH (no path: name the registry's root, such as /snowmint)"#
    /// );
    /// # Ok::<(), snowmint_lease::LeaseError>(())
    /// ```
    pub fn from_url(url: &str) -> Result<ZooKeeperRegistry, LeaseError> {
        Ok(ZooKeeperRegistry {
            target: url::parse(url)?,
            sessions: Sessions::default(),
        })
    }

    /// Runs one call with its deadline. Cut short, it leaves nothing half done: each
    /// `multi` is atomic, and a session opened for an acquisition that did not finish is
    /// closed, or expires.
    async fn within<T>(
        &self,
        call: &str,
        work: impl Future<Output = Result<T, LeaseError>>,
    ) -> Result<T, LeaseError> {
        super::within(CALL_TIMEOUT, work, || {
            self.unavailable(&format!("{call} took over {} ms", CALL_TIMEOUT.as_millis()))
        })
        .await
    }

    fn unavailable(&self, problem: &str) -> LeaseError {
        LeaseError::unavailable("zookeeper", format!("{}: {problem}", self.target.shown()))
    }

    /// Unavailable while `session`'s client reconnects.
    fn disconnected(&self, session: &Session) -> LeaseError {
        self.unavailable(&format!(
            "zookeeper session {:#x} is disconnected; its client is reconnecting",
            session.id()
        ))
    }

    /// Unavailable because of `err`, which says what the client met.
    fn failed(&self, what: &str, err: zk::Error) -> LeaseError {
        LeaseError::unavailable_because(
            "zookeeper",
            format!("{}: {what}", self.target.shown()),
            err,
        )
    }

    /// Opens a session asking for `ttl` as its timeout.
    async fn connect(&self, ttl: Duration) -> Result<zk::Client, LeaseError> {
        let asked = i32::try_from(ttl.as_millis())
            .ok()
            .filter(|ms| *ms > 0)
            .ok_or_else(|| {
                LeaseError::Invalid(format!(
                    "lease TTL {ttl:?} is out of range for a zookeeper session timeout: 1 ms to {} ms",
                    i32::MAX
                ))
            })?;
        zk::Client::connector()
            .with_session_timeout(Duration::from_millis(asked.unsigned_abs().into()))
            // Fails at once when no server accepts a connection, rather than trying again
            // until the session timeout.
            .with_fail_eagerly()
            .connect(&self.target.hosts)
            .await
            .map_err(|err| self.failed("cannot open a session", err))
    }
}

#[async_trait::async_trait]
impl Registry for ZooKeeperRegistry {
    fn backend(&self) -> &'static str {
        "zookeeper"
    }

    fn granted_ttl(&self, lease: &Lease) -> Option<Duration> {
        session::find(&self.sessions, lease).map(|session| session.granted)
    }

    async fn acquire(&self, claim: &Claim) -> Result<Lease, LeaseError> {
        self.within("acquire", self.acquire_within(claim)).await
    }

    async fn renew(
        &self,
        claim: &Claim,
        lease: &Lease,
        high_water_ms: u64,
    ) -> Result<(), LeaseError> {
        self.within("renew", self.renew_within(claim, lease, high_water_ms))
            .await
    }

    async fn give_back(
        &self,
        claim: &Claim,
        lease: &Lease,
        mark_ms: u64,
    ) -> Result<(), LeaseError> {
        self.within("release", self.release_within(claim, lease, mark_ms))
            .await
    }
}

impl fmt::Debug for ZooKeeperRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZooKeeperRegistry")
            .field("url", &self.target.shown())
            .finish_non_exhaustive()
    }
}
