//! What every clustered registry does, whichever registry it is: for the fault-injection
//! campaign's clustered profiles and for tests written once against each cluster.
//!
//! A cluster has **members**, the servers that hold its data, numbered from 0; one of them
//! at a time is the **primary**: the Redis primary the Sentinels name, the etcd or
//! ZooKeeper leader, the PostgreSQL server that takes writes. The guard owns every process
//! of the cluster (Sentinels included) and stops them all when it drops.
//!
//! The faults a cluster takes are those its operators meet:
//!
//! - [`Cluster::kill`] and [`Cluster::restart`]: one member crashes and comes back, as a
//!   follower of whoever is primary by then;
//! - [`Cluster::fail_over`]: the primary goes and another member takes over, losing what
//!   the primary acknowledged but did not replicate where replication is asynchronous
//!   (Redis, PostgreSQL): the fault that makes a registry forget;
//! - [`Cluster::partition`]: one member cut off from its peers while it keeps running.

use std::time::Duration;

/// A registry of several members, one of them the primary.
pub trait Cluster {
    /// The URL `snowmint serve --lease` takes for the whole cluster: every member, or the
    /// Sentinels, so that a server follows a failover.
    fn url(&self) -> String;

    /// How many members hold the cluster's data (Sentinels are not members).
    fn members(&self) -> usize;

    /// The address member `i` serves clients on (a loopback address, or a test host's in
    /// a network namespace); the same across restarts.
    fn address(&self, i: usize) -> std::net::SocketAddr;

    /// A URL naming member `i` alone, of the scheme [`Cluster::url`] has, for reading the
    /// records off that member.
    fn member_url(&self, i: usize) -> String;

    /// The member that is primary now, as the cluster itself says (the Sentinels, the
    /// members' own status); `None` while there is none, as during an election.
    fn primary(&self) -> Option<usize>;

    /// Member `i`'s process id, or `None` while it is down (for faults that send SIGSTOP).
    fn pid(&self, i: usize) -> Option<u32>;

    /// Kills member `i` with SIGKILL, as a crash would, and waits for it to exit.
    fn kill(&mut self, i: usize);

    /// Starts member `i` again with its data, as a member of the cluster as it is now (a
    /// follower of the primary of the day), and waits until it serves.
    fn restart(&mut self, i: usize);

    /// Fails over: the primary stops being one and another member takes over, and this
    /// waits until the new primary takes writes; answers `(old, new)`.
    ///
    /// Where replication is asynchronous the old primary is first cut off from the others'
    /// replication and goes on acknowledging writes for `lag`, which the new primary never
    /// gets: the failover loses them, as a failover to a replica that lags does. Where the
    /// cluster agrees on every write (etcd, ZooKeeper), the primary is killed and `lag` is
    /// not used. The old primary stays down until [`Cluster::restart`].
    fn fail_over(&mut self, lag: Duration) -> (usize, usize);

    /// Cuts member `i` off from its peers (`cut`), or mends the cut. It keeps running and
    /// keeps its clients; only the cluster's own traffic to and from it is dropped.
    fn partition(&mut self, i: usize, cut: bool);
}
