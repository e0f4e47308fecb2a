//! A Redis primary, its replica and three Sentinels as one [`Cluster`]: the deployment a
//! failover loses writes on, since Redis replicates asynchronously.

use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use crate::cut::{Cuts, member_uid};
use crate::redis::{Redis, follows_its_primary};
use crate::{Cluster, Sentinels, Server};

/// How long a restarted member may take to follow the primary.
const FOLLOW_TIMEOUT: Duration = Duration::from_secs(30);

/// Two Redis servers, a primary and its replica, watched by three [`Sentinels`] that fail
/// over in about two seconds; every process stopped when dropped.
///
/// The members run as users of their own, so that [`Cluster::partition`] cuts their
/// replication with iptables (which needs root, as the campaign and CI have) while the
/// Sentinels and every client still reach both.
///
/// ```no_run
/// use std::time::Duration;
/// use snowmint_testkit::{Cluster, RedisReplicated};
///
/// let mut redis = RedisReplicated::start();
/// assert_eq!(redis.primary(), Some(0));
/// let (old, new) = redis.fail_over(Duration::from_millis(500));
/// assert_eq!((old, new), (0, 1));
/// redis.restart(old); // a replica of member 1 now
/// ```
pub struct RedisReplicated {
    // Declared first: the cuts go before the servers, the Sentinels before the members.
    cuts: Cuts,
    sentinels: Sentinels,
    members: Vec<Member>,
}

struct Member {
    redis: Redis,
    uid: u32,
    /// The primary's port its next start replicates from; 0 for none.
    replica_of: Arc<AtomicU16>,
}

impl RedisReplicated {
    /// Starts the primary (member 0), its replica (member 1) and the Sentinels, and waits
    /// until the replica follows and the Sentinels know them both.
    ///
    /// # Panics
    ///
    /// If a server does not start, or the replica does not follow within 30 seconds.
    #[must_use]
    #[track_caller]
    pub fn start() -> RedisReplicated {
        let start = |replica_of: u16| {
            let (uid, replica_of) = (member_uid(), Arc::new(AtomicU16::new(replica_of)));
            Member {
                redis: Redis::start_member(uid, replica_of.clone()),
                uid,
                replica_of,
            }
        };
        let primary = start(0);
        let replica = start(primary.redis.port());
        follow(replica.redis.port());
        let sentinels = Sentinels::start(&primary.redis);
        RedisReplicated {
            cuts: Cuts::default(),
            sentinels,
            members: vec![primary, replica],
        }
    }

    fn index_of(&self, port: u16) -> Option<usize> {
        self.members.iter().position(|m| m.redis.port() == port)
    }

    fn peers(&self, i: usize) -> Vec<(u32, u16)> {
        self.members
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, m)| (m.uid, m.redis.port()))
            .collect()
    }
}

impl Cluster for RedisReplicated {
    fn url(&self) -> String {
        self.sentinels.url()
    }

    fn members(&self) -> usize {
        self.members.len()
    }

    fn address(&self, i: usize) -> std::net::SocketAddr {
        std::net::SocketAddr::from(([127, 0, 0, 1], self.members[i].redis.port()))
    }

    fn member_url(&self, i: usize) -> String {
        self.members[i].redis.url()
    }

    fn primary(&self) -> Option<usize> {
        self.index_of(self.sentinels.primary_port()?)
    }

    fn pid(&self, i: usize) -> Option<u32> {
        self.members[i].redis.pid()
    }

    fn kill(&mut self, i: usize) {
        self.members[i].redis.kill();
    }

    /// Starts member `i` as a replica of the primary the Sentinels name (or as it was
    /// started, if they name it or none), and waits until it follows.
    #[track_caller]
    fn restart(&mut self, i: usize) {
        let primary = self.sentinels.primary_port();
        let member = &mut self.members[i];
        if let Some(port) = primary.filter(|&port| port != member.redis.port()) {
            member.replica_of.store(port, Ordering::SeqCst);
        }
        member.redis.restart();
        if member.replica_of.load(Ordering::SeqCst) != 0 {
            follow(member.redis.port());
        }
    }

    /// Cuts the primary's replication, lets it acknowledge writes alone for `lag`, kills
    /// it, and waits until the Sentinels have promoted the replica; the writes of the lag
    /// are lost.
    #[track_caller]
    fn fail_over(&mut self, lag: Duration) -> (usize, usize) {
        let old = self.primary().expect("the Sentinels name no primary");
        self.partition(old, true);
        thread::sleep(lag);
        self.members[old].redis.kill();
        self.partition(old, false);
        let new = self
            .index_of(
                self.sentinels
                    .wait_for_failover(self.members[old].redis.port()),
            )
            .expect("the Sentinels promoted a server that is not a member");
        self.members[new].replica_of.store(0, Ordering::SeqCst);
        (old, new)
    }

    /// The rules refuse every new connection between the members, and reset one at the
    /// next packet the replica sends; but the primary's stream reaches the replica until
    /// then, so the replication links are also closed at once on both sides (`CLIENT
    /// KILL`), and nothing sent after the cut arrives.
    fn partition(&mut self, i: usize, cut: bool) {
        if cut {
            let peers = self.peers(i);
            let member = &self.members[i];
            self.cuts.cut((member.uid, member.redis.port()), &peers);
            for member in &self.members {
                for kind in ["replica", "master"] {
                    // A member that is down has no link to close.
                    let _ = crate::redis::query::<redis::Value>(
                        member.redis.port(),
                        redis::cmd("CLIENT").arg("KILL").arg("TYPE").arg(kind),
                    );
                }
            }
        } else {
            self.cuts.mend(self.members[i].uid);
        }
    }
}

/// Waits until the replica on `port` follows its primary.
#[track_caller]
fn follow(port: u16) {
    let deadline = Instant::now() + FOLLOW_TIMEOUT;
    while !follows_its_primary(port) {
        assert!(
            Instant::now() < deadline,
            "the Redis replica on port {port} did not follow its primary within {FOLLOW_TIMEOUT:?}"
        );
        thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query<T: redis::FromRedisValue>(port: u16, command: &redis::Cmd) -> redis::RedisResult<T> {
        crate::redis::query(port, command)
    }

    /// Sets `key` on `port` and waits up to `ms` for the replica to acknowledge it, on one
    /// connection (`WAIT` counts from the connection's own last write); answers how many
    /// did.
    fn set_and_wait(port: u16, key: &str, ms: u64) -> u32 {
        let client = redis::Client::open(("127.0.0.1", port)).unwrap();
        let mut connection = client.get_connection().unwrap();
        let ((), acked): ((), u32) = redis::pipe()
            .cmd("SET")
            .arg(key)
            .arg(1)
            .cmd("WAIT")
            .arg(1)
            .arg(ms)
            .query(&mut connection)
            .unwrap();
        acked
    }

    #[test]
    fn a_failover_loses_the_lag_and_the_old_primary_comes_back_a_replica() {
        let mut cluster = RedisReplicated::start();
        assert_eq!(cluster.primary(), Some(0));
        let port = |i: usize| cluster.address(i).port();
        let (p0, p1) = (port(0), port(1));
        assert_eq!(set_and_wait(p0, "before", 5_000), 1);

        // The cut lets the primary take a write its replica never gets.
        cluster.partition(0, true);
        assert_eq!(
            set_and_wait(p0, "during", 300),
            0,
            "the cut replica acknowledged"
        );
        thread::sleep(Duration::from_millis(300));
        let during: bool = query(p1, redis::cmd("EXISTS").arg("during")).unwrap();
        assert!(!during, "a write made after the cut reached the replica");
        cluster.partition(0, false);
        assert_eq!(
            set_and_wait(p0, "after", 10_000),
            1,
            "the mended replica follows"
        );
        let during: bool = query(p1, redis::cmd("EXISTS").arg("during")).unwrap();
        assert!(during, "the mended replica caught up");

        let started = Instant::now();
        let (old, new) = cluster.fail_over(Duration::from_millis(300));
        eprintln!("failed over in {:?}", started.elapsed());
        assert_eq!((old, new), (0, 1));
        assert_eq!(cluster.primary(), Some(1));
        let lost: bool = query(p1, redis::cmd("EXISTS").arg("before")).unwrap();
        assert!(lost, "the promoted replica has what it had");

        cluster.restart(old);
        let role: String = query(p0, redis::cmd("INFO").arg("replication")).unwrap();
        assert!(role.contains("role:slave"), "{role}");
        assert!(role.contains(&format!("master_port:{p1}")), "{role}");

        // And back again: a second failover promotes member 0.
        let (old, new) = cluster.fail_over(Duration::from_millis(300));
        assert_eq!((old, new), (1, 0));
        cluster.restart(old);
        assert_eq!(cluster.primary(), Some(0));
    }
}
