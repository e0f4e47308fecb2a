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
mod session;
mod take;
mod url;

use std::fmt;
use std::time::Duration;

use zookeeper_client as zk;

use self::nodes::Nodes;
use self::session::{Mark, Session, Sessions};
use self::url::Target;
use crate::registry::{Claim, Lease, LeaseError, Registry};

/// Every call (acquire, renew, release) ends within this, opening a session included,
/// so a registry that is down or frozen is reported while the fence still stands.
const CALL_TIMEOUT: Duration = Duration::from_secs(2);
/// Attempts to raise a mark whose version moved under a lost answer.
const RAISE_TRIES: u32 = 3;

/// Leases worker ids through ZooKeeper: a session per lease, an ephemeral node per worker
/// held, the high-water mark in a persistent node beside it. See the
/// [module](self) for the nodes and the transactions.
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

/// The three calls, each run within [`CALL_TIMEOUT`] by the [`Registry`] impl below.
impl ZooKeeperRegistry {
    async fn renew_within(
        &self,
        claim: &Claim,
        lease: &Lease,
        high_water_ms: u64,
    ) -> Result<(), LeaseError> {
        let lost = |reason: String| LeaseError::Lost {
            datacenter: lease.datacenter,
            worker: lease.worker,
            reason,
        };
        let Some(session) = session::find(&self.sessions, lease) else {
            return Err(lost(format!(
                "zookeeper session {:#x} is closed",
                lease.token
            )));
        };
        let session = session.call();
        let nodes = Nodes::new(&self.target.root, claim);
        let worker = nodes.worker(lease.worker);
        match self
            .write_mark(&session, &nodes, lease.worker, Write::Raise(high_water_ms))
            .await
        {
            Ok(true) => Ok(()),
            Ok(false) => {
                session::close(&self.sessions, session.id());
                Err(lost(format!(
                    "{worker} is not held by zookeeper session {:#x}",
                    session.id()
                )))
            }
            Err(Written::Expired) => {
                session::close(&self.sessions, session.id());
                Err(lost(format!(
                    "zookeeper session {:#x} has expired",
                    session.id()
                )))
            }
            Err(Written::Disconnected) => Err(self.disconnected(&session)),
            Err(Written::Corrupt(problem)) => Err(self.unavailable(&problem)),
            Err(Written::Failed(err)) => Err(self.failed(&format!("cannot renew {worker}"), err)),
        }
    }

    async fn release_within(
        &self,
        claim: &Claim,
        lease: &Lease,
        high_water_ms: u64,
    ) -> Result<(), LeaseError> {
        let Some(session) = session::find(&self.sessions, lease) else {
            return Ok(());
        };
        let session = session.call();
        let nodes = Nodes::new(&self.target.root, claim);
        // The mark becomes the last id's instant, lower than the reservation: nothing past
        // it was issued, so a successor need not wait out the reservation. It never goes
        // below the mark the lease began with, which covers the holders before.
        let mark_ms = high_water_ms.max(lease.high_water_ms.unwrap_or(0));
        match self
            .write_mark(&session, &nodes, lease.worker, Write::Release(mark_ms))
            .await
        {
            // Released, or held no longer: the session has nothing more to do either way.
            Ok(_) | Err(Written::Expired) => {
                session::close(&self.sessions, session.id());
                Ok(())
            }
            Err(Written::Disconnected) => Err(self.disconnected(&session)),
            Err(Written::Corrupt(problem)) => Err(self.unavailable(&problem)),
            Err(Written::Failed(err)) => Err(self.failed(
                &format!("cannot release {}", nodes.worker(lease.worker)),
                err,
            )),
        }
    }

    /// Writes `worker`'s mark at the version the holder knows, if the worker node still
    /// exists, and deletes the worker node too for a release: one `multi`. `Ok(false)`
    /// when the worker is no longer this session's.
    async fn write_mark(
        &self,
        session: &Session,
        nodes: &Nodes,
        worker: u64,
        write: Write,
    ) -> Result<bool, Written> {
        let (client, worker, node) = (&session.client, nodes.worker(worker), nodes.mark(worker));
        match client.state() {
            // A request would wait for the client to reconnect, past the fence perhaps: say
            // so now, and let the keeper try again while the client reconnects.
            zk::SessionState::Disconnected => return Err(Written::Disconnected),
            state if state.is_terminated() => return Err(Written::Expired),
            _ => {}
        }
        let mut mark = session.mark.lock().await;
        for _ in 0..RAISE_TRIES {
            let ms = match write {
                Write::Raise(ms) => mark.value.map_or(ms, |known| known.max(ms)),
                Write::Release(ms) => ms,
            };
            let mut multi = client.new_multi_writer();
            // The ephemeral node is never written: version 0 while it exists.
            multi.add_check_version(&worker, 0)?;
            multi.add_set_data(&node, ms.to_string().as_bytes(), Some(mark.version))?;
            if matches!(write, Write::Release(_)) {
                multi.add_delete(&worker, None)?;
            }
            match multi.commit().await {
                Ok(results) => {
                    if let Some(zk::MultiWriteResult::SetData { stat }) = results.get(1) {
                        *mark = Mark {
                            value: Some(ms),
                            version: stat.version,
                        };
                    }
                    return Ok(true);
                }
                Err(zk::MultiWriteError::OperationFailed {
                    index: 0,
                    source: zk::Error::NoNode | zk::Error::BadVersion,
                }) => return Ok(false),
                Err(zk::MultiWriteError::OperationFailed {
                    index: 1,
                    source: zk::Error::BadVersion,
                }) => {
                    // Someone wrote the mark: this holder, if a write's answer was lost
                    // and the session still owns the worker; then read it and go on.
                    match client.check_stat(&worker).await? {
                        Some(stat) if stat.ephemeral_owner == session.id() => {}
                        _ => return Ok(false),
                    }
                    *mark = read_mark(client, &node).await?.unwrap_or(Mark::NONE);
                }
                Err(err) => return Err(zk::Error::from(err).into()),
            }
        }
        Err(Written::Corrupt(format!(
            "{node} changed under each of {RAISE_TRIES} attempts to set it"
        )))
    }
}

/// What a call writes to a worker's mark.
#[derive(Debug, Clone, Copy)]
enum Write {
    /// A renewal: at least this, never lower than the mark.
    Raise(u64),
    /// A release: exactly this, and the worker node goes.
    Release(u64),
}

/// Why a mark could not be written.
enum Written {
    /// The session has ended: its worker is free, or soon will be.
    Expired,
    /// The session's client is away from the ensemble, and reconnecting.
    Disconnected,
    /// The mark node holds something else than a mark, or keeps changing.
    Corrupt(String),
    /// The client or the ensemble failed; the lease may still be held.
    Failed(zk::Error),
}

impl From<zk::Error> for Written {
    fn from(err: zk::Error) -> Written {
        match err {
            zk::Error::SessionExpired | zk::Error::ClientClosed => Written::Expired,
            err => Written::Failed(err),
        }
    }
}

/// The mark node's value and version, or `None` if there is no mark node.
async fn read_mark(client: &zk::Client, node: &str) -> Result<Option<Mark>, Written> {
    match client.get_data(node).await {
        Ok((data, stat)) => Ok(Some(Mark {
            value: parse_mark(node, &data)?,
            version: stat.version,
        })),
        Err(zk::Error::NoNode) => Ok(None),
        Err(err) => Err(err.into()),
    }
}

/// A mark as stored: decimal ms, or nothing. Anything else is an error, never read as zero.
fn parse_mark(node: &str, data: &[u8]) -> Result<Option<u64>, Written> {
    if data.is_empty() {
        return Ok(None);
    }
    std::str::from_utf8(data)
        .ok()
        .and_then(|v| v.parse().ok())
        .map(Some)
        .ok_or_else(|| {
            let shown: String = String::from_utf8_lossy(data).chars().take(40).collect();
            Written::Corrupt(format!(
                "{node} holds {shown:?}, not milliseconds since the Unix epoch"
            ))
        })
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

    async fn release(
        &self,
        claim: &Claim,
        lease: &Lease,
        high_water_ms: u64,
    ) -> Result<(), LeaseError> {
        self.within("release", self.release_within(claim, lease, high_water_ms))
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
