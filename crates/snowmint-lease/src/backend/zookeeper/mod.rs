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
//!
//! # Users and ACLs
//!
//! Without a user in the URL, nodes are made with the open ACL (`world:anyone`), as
//! before. With one (`zookeeper://USER:PASSWORD@...`, or `password_file=FILE`), every
//! session authenticates with the `digest` scheme (`addauth digest USER:PASSWORD`, sent
//! once the session is open, and again by the client on every reconnection), and every node the registry makes carries
//! an ACL of two entries: all rights to that user (`digest:USER:DIGEST`, named rather
//! than `auth`, which would also grant them to the TLS client certificate's `x509`
//! identity, often shared), and reading to anyone (`world:anyone`), so that operators can
//! look at holders and marks, while no other user can change or delete them.
//! A wrong password is not refused by ZooKeeper (a digest is whatever the password makes
//! it); it shows as `NoAuth` on the first node another digest made.

mod list;
mod nodes;
mod renew;
mod session;
mod take;
mod tls;
mod url;

use std::fmt;
use std::time::Duration;

use zookeeper_client as zk;

use self::session::{Session, Sessions};
use self::url::Target;
use crate::listing::{ListFilter, Listing};
use crate::registry::{Claim, Lease, LeaseError, Registry};

/// Every call (acquire, renew, release) ends within this, opening a session included,
/// so a registry that is down or frozen is reported while the fence still stands.
const CALL_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a connection to one ZooKeeper server may take, handshake included, and how
/// long an open one may stay silent before the client leaves it for the next server.
///
/// The client also pings a session that has sent nothing for 3/8 of it, and a fleet's
/// pings were most of what its sessions cost the ensemble: at 1 s (plain connections, as
/// it was) a session pinged every 375 ms, some 6 pings between two renewals of a 10 s
/// lease, and 1,024 sessions cost ZooKeeper 50 % of a core (1.6 ms per renewal); at 3 s,
/// a ping every 1.1 s, 19 % (0.6 ms). A server that dies is left 3 s after it last
/// answered, well inside the fence (the TTL less the margin). Over TLS the Java server's
/// handshake alone can pass a second when it is busy.
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(3);
/// Attempts to raise a mark whose version moved under a lost answer.
const RAISE_TRIES: u32 = 3;

/// Leases worker ids through ZooKeeper: a session per lease, an ephemeral node per worker
/// held, the high-water mark in a persistent node beside it, raised by the `multi` that
/// confirms the lease. The lease's TTL is the session timeout the ensemble grants
/// ([`Registry::granted_ttl`]); docs/OPERATIONS.md says how it relates to the margin.
pub struct ZooKeeperRegistry {
    target: Target,
    /// The ACL of every node this registry makes.
    acl: Vec<zk::Acl>,
    /// The client library's TLS options, for `zookeepers://`.
    tls: Option<zk::TlsOptions>,
    sessions: Sessions,
    /// The namespaces of earlier releases, listed once.
    found: crate::legacy::Found,
}

impl ZooKeeperRegistry {
    /// A registry for `zookeeper://[USER[:PASSWORD]@]HOST[:PORT][,HOST[:PORT]...]/PATH`
    /// (port 2181 by default), keeping its nodes below `PATH`; `zookeepers://` speaks TLS
    /// with `?tls_ca=FILE[&tls_cert=FILE&tls_key=FILE]`, and either takes
    /// `password_file=FILE`. Checks the URL and reads its files; the first acquisition
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
    ///     r#"lease URL "zookeeper://zk1:2181": expected zookeeper[s]://[USER[:PASSWORD]@]HOST:PORT[,HOST:PORT...]/PATH[?PARAMETERS] (no path: name the registry's root, such as /snowmint)"#
    /// );
    /// # Ok::<(), snowmint_lease::LeaseError>(())
    /// ```
    pub fn from_url(url: &str) -> Result<ZooKeeperRegistry, LeaseError> {
        let target = url::parse(url)?;
        let tls = match &target.tls {
            Some(files) => Some(tls::options(files).map_err(|why| {
                LeaseError::Invalid(format!(
                    "lease URL {:?}: {why}",
                    crate::secured::redact(url)
                ))
            })?),
            None => None,
        };
        let acl = match &target.user {
            Some(user) => vec![
                zk::Acl::new(zk::Permission::ALL, url::digest_id(user)),
                zk::Acl::new(zk::Permission::READ, zk::AuthId::anyone()),
            ],
            None => zk::Acls::anyone_all().to_vec(),
        };
        Ok(ZooKeeperRegistry {
            target,
            acl,
            tls,
            sessions: Sessions::default(),
            found: crate::legacy::Found::default(),
        })
    }

    /// How persistent nodes are made.
    pub(super) fn persistent(&self) -> zk::CreateOptions<'_> {
        zk::CreateMode::Persistent.with_acls(zk::Acls::new(&self.acl))
    }

    /// How the worker nodes are made, which end with the session that made them.
    pub(super) fn ephemeral(&self) -> zk::CreateOptions<'_> {
        zk::CreateMode::Ephemeral.with_acls(zk::Acls::new(&self.acl))
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

    /// Unavailable while `session`'s client reconnects; over TLS, with the check that a
    /// server's handshake fails, if one does (a certificate that expired while the
    /// session lived shows first here).
    async fn disconnected(&self, session: &Session) -> LeaseError {
        let problem = format!(
            "zookeeper session {:#x} is disconnected; its client is reconnecting",
            session.id()
        );
        let why = match &self.target.tls {
            Some(_) => tls::diagnose(&self.target).await,
            None => None,
        };
        match why {
            Some(why) => self.unavailable(&format!("{problem}: {why}")),
            None => self.unavailable(&problem),
        }
    }

    /// Unavailable because of `err`, which says what the client met; a node whose ACL
    /// refuses the user is said in plain words.
    fn failed(&self, what: &str, err: zk::Error) -> LeaseError {
        let what = match (&err, &self.target.user) {
            (zk::Error::NoAuth, Some(user)) => format!(
                "{what}: not allowed by its ACL (NoAuth): digest user {} has no right to it, or its password is wrong",
                user.name
            ),
            (zk::Error::NoAuth, None) => format!(
                "{what}: not allowed by its ACL (NoAuth): name the digest user the nodes belong to (USER@HOST with password_file=FILE)"
            ),
            _ => what.to_string(),
        };
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
        let session_timeout = Duration::from_millis(asked.unsigned_abs().into());
        let connector = zk::Client::connector()
            .with_session_timeout(session_timeout)
            // Fails at once when no server accepts a connection, rather than trying again
            // until the session timeout.
            .with_fail_eagerly()
            .with_connection_timeout(connection_timeout(session_timeout));
        let opened = match &self.tls {
            Some(options) => {
                connector
                    .with_tls(options.clone())
                    .secure_connect(&self.target.hosts)
                    .await
            }
            None => connector.connect(&self.target.hosts).await,
        };
        let client = match opened {
            Ok(client) => client,
            Err(err) => {
                return match tls::diagnose(&self.target).await {
                    Some(why) => Err(self.failed(&format!("cannot open a session: {why}"), err)),
                    None => Err(self.failed("cannot open a session", err)),
                };
            }
        };
        if let Some(user) = &self.target.user {
            // Only once the session is open: sent with the connect request, as the
            // connector's `with_auth` does, a busy server can answer the auth before the
            // session (its creation waits for a commit), and the client then takes that
            // answer for the connect response and drops the connection ("insufficient
            // buf", then `NoHosts`). The client sends it again on every reconnection.
            client
                .auth("digest", &url::digest_auth(user))
                .await
                .map_err(|err| self.failed("cannot authenticate the session", err))?;
        }
        Ok(client)
    }
}

/// How long a connection to one server may take, handshake and connect response included,
/// for a session that asks for `session_timeout`: [`CONNECTION_TIMEOUT`], at most 3/5 of
/// the session timeout. The client honours no more than that, and above it would use 2/5
/// instead: 0.8 s for a 2 s TTL, which a busy server's TLS handshake and session creation
/// passed.
fn connection_timeout(session_timeout: Duration) -> Duration {
    CONNECTION_TIMEOUT.min(session_timeout * 3 / 5)
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

    async fn list(&self, filter: &ListFilter) -> Result<Listing, LeaseError> {
        self.list_nodes(filter).await
    }
}

impl fmt::Debug for ZooKeeperRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZooKeeperRegistry")
            .field("url", &self.target.shown())
            .finish_non_exhaustive()
    }
}
