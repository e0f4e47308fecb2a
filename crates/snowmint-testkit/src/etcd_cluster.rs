//! A real three-member etcd cluster whose members can be killed, failed over and cut from
//! their peers at the network level, for the clustered registry tests and the campaign.

mod lan;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use self::lan::Lan;
use crate::Cluster;
use crate::process::Daemon;
use crate::program;

/// How many members the cluster has: the smallest that survives losing one.
const MEMBERS: usize = 3;
/// Every member's client and peer ports; each member has addresses of its own.
const CLIENT_PORT: u16 = 2379;
const PEER_PORT: u16 = 2380;
/// Milliseconds between the leader's heartbeats.
const HEARTBEAT_MS: u32 = 50;
/// Milliseconds a follower waits for the leader before it stands: ten heartbeats, so that
/// a failover takes about a second, and a machine busy with other tests does not make the
/// members stand for nothing. etcd's shortest lease is 1.5 of these (750 ms).
const ELECTION_TIMEOUT_MS: u32 = 500;
/// How long the cluster may take to form, elect a leader or take a write.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one question to a member may take: a member that runs answers in
/// milliseconds, even cut from its peers (its status says it has no leader).
const ASK_TIMEOUT: Duration = Duration::from_millis(500);
const POLL: Duration = Duration::from_millis(20);

/// Three `etcd` members, each in a network namespace of its own on a private lan, stopped
/// when dropped (and their namespaces deleted).
///
/// Clients reach member `i` on [`Cluster::address`]`(i)`, a 10.x address the host routes to
/// the member over a link of its own; the members talk to one another over a bridge that
/// the host is not on. [`Cluster::partition`] takes a member's bridge port down: its raft
/// traffic to and from its peers is lost on the wire, and its clients still reach it. The
/// members run with `--pre-vote`, so that a member coming back (restarted, or its cut
/// mended) rejoins as a follower instead of forcing an election.
///
/// Needs root (namespaces and links), as CI has.
///
/// ```no_run
/// use std::time::Duration;
/// use snowmint_testkit::{Cluster, EtcdCluster};
///
/// let mut cluster = EtcdCluster::start();
/// assert_eq!(cluster.members(), 3);
/// assert!(cluster.url().starts_with("etcd://10."));
/// let (old, new) = cluster.fail_over(Duration::ZERO);
/// assert_ne!(old, new);
/// assert_eq!(cluster.pid(old), None);
/// cluster.restart(old);
/// assert_eq!(cluster.primary(), Some(new));
/// ```
pub struct EtcdCluster {
    // Declared before `lan`, so the members stop before their namespaces go.
    members: Vec<Member>,
    lan: Lan,
}

/// One member: its process, its data and log, and the id etcd gave it.
struct Member {
    // Declared before `dir`, so the member stops before its directory is removed.
    daemon: Daemon,
    dir: TempDir,
    id: u64,
}

impl EtcdCluster {
    /// Starts three members, and waits until each is healthy (it has a leader and answers
    /// a linearizable read) and a majority of them name the same leader.
    ///
    /// # Panics
    ///
    /// If `etcd` (Debian's `etcd-server` package) or `ip` (`iproute2`) is missing, the
    /// namespaces cannot be made (not root), or the cluster does not settle within 30
    /// seconds; the message quotes the end of a member's log.
    #[must_use]
    #[track_caller]
    pub fn start() -> EtcdCluster {
        let program = program::find_on_path("etcd", "etcd-server");
        let lan = Lan::create(MEMBERS);
        let initial: Vec<String> = (0..MEMBERS)
            .map(|i| format!("m{i}=http://{}:{PEER_PORT}", lan.peer_ip(i)))
            .collect();
        let initial = initial.join(",");
        // Until the cluster forms, a member's client port accepts connections but answers
        // nothing (etcd serves clients once it has joined), so the first start of each
        // only waits for the port; later starts wait until it is healthy.
        let formed = Arc::new(AtomicBool::new(false));
        let mut members = Vec::with_capacity(MEMBERS);
        for i in 0..MEMBERS {
            let dir = scratch_dir();
            let client = SocketAddr::from((lan.client_ip(i), CLIENT_PORT));
            let command = {
                let (ip, etcd) = (lan.ip_program().to_path_buf(), program.clone());
                let namespace = lan.namespace(i);
                let args = MemberArgs {
                    name: format!("m{i}"),
                    data: dir.path().join("data"),
                    client: lan.client_ip(i),
                    peer: lan.peer_ip(i),
                    initial: initial.clone(),
                    token: lan.name().to_string(),
                };
                move || member_command(&ip, &namespace, &etcd, &args)
            };
            let ready = {
                let formed = Arc::clone(&formed);
                move || {
                    if formed.load(Ordering::Relaxed) {
                        healthy(client)
                    } else {
                        TcpStream::connect_timeout(&client, ASK_TIMEOUT).is_ok()
                    }
                }
            };
            let daemon = Daemon::new(
                "etcd",
                CLIENT_PORT,
                dir.path().join("etcd.log"),
                libc::SIGTERM,
                Box::new(command),
                Box::new(ready),
            )
            .at(client.to_string());
            members.push(Member { daemon, dir, id: 0 });
            members[i].daemon.start();
        }
        let mut cluster = EtcdCluster { members, lan };
        cluster.settle("form, elect a leader and serve", |cluster| {
            (0..MEMBERS).all(|i| healthy(cluster.address(i)))
        });
        for i in 0..MEMBERS {
            let address = cluster.address(i);
            cluster.settle("say who its members are", |_| status(address).is_some());
            cluster.members[i].id = status(address).map_or(0, |status| status.member);
        }
        cluster.settle("agree on a leader", |cluster| cluster.primary().is_some());
        formed.store(true, Ordering::Relaxed);
        cluster
    }

    /// Whether member `i` is healthy: it runs, has a leader, and answers a linearizable
    /// read (etcd's `/health`).
    #[must_use]
    pub fn healthy(&self, i: usize) -> bool {
        healthy(self.address(i))
    }

    /// The temporary directory of member `i`'s data (`data/`) and log (`etcd.log`).
    #[must_use]
    pub fn dir(&self, i: usize) -> &Path {
        self.members[i].dir.path()
    }

    /// Waits until `done` holds, for at most [`SETTLE_TIMEOUT`].
    #[track_caller]
    fn settle(&self, what: &str, mut done: impl FnMut(&EtcdCluster) -> bool) {
        let deadline = Instant::now() + SETTLE_TIMEOUT;
        while !done(self) {
            if Instant::now() >= deadline {
                panic!(
                    "the etcd cluster did not {what} within {SETTLE_TIMEOUT:?}; {}",
                    self.log_tail(0)
                );
            }
            thread::sleep(POLL);
        }
    }

    /// The end of member `i`'s log, for messages.
    fn log_tail(&self, i: usize) -> String {
        let path = self.dir(i).join("etcd.log");
        let log = std::fs::read_to_string(&path).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        let tail = lines[lines.len().saturating_sub(20)..].join("\n");
        format!("the end of {}:\n{tail}", path.display())
    }

    /// Whether member `i` takes a write now.
    fn takes_writes(&self, i: usize) -> bool {
        // `{"key": "snowmint-testkit", "value": "failover"}`, in base64 as the gateway wants.
        let body = r#"{"key":"c25vd21pbnQtdGVzdGtpdA==","value":"ZmFpbG92ZXI="}"#;
        post(self.address(i), "/v3/kv/put", body).is_some_and(|(status, _)| status == 200)
    }
}

impl Cluster for EtcdCluster {
    /// `etcd://A0:2379,A1:2379,A2:2379`: every member's client address.
    fn url(&self) -> String {
        let hosts: Vec<String> = (0..MEMBERS).map(|i| self.address(i).to_string()).collect();
        format!("etcd://{}", hosts.join(","))
    }

    fn members(&self) -> usize {
        MEMBERS
    }

    fn address(&self, i: usize) -> SocketAddr {
        SocketAddr::from((self.lan.client_ip(i), CLIENT_PORT))
    }

    fn member_url(&self, i: usize) -> String {
        format!("etcd://{}", self.address(i))
    }

    /// The member a majority of the members name as their leader, each in its own status:
    /// a leader cut from its peers still names itself until it steps down, but only its
    /// own vote is then for it.
    fn primary(&self) -> Option<usize> {
        let leaders: Vec<u64> = (0..MEMBERS)
            .filter(|&i| self.members[i].daemon.pid().is_some())
            .filter_map(|i| status(self.address(i)))
            .filter_map(|status| status.leader)
            .collect();
        (0..MEMBERS).find(|&i| {
            let id = self.members[i].id;
            id != 0 && leaders.iter().filter(|&&leader| leader == id).count() > MEMBERS / 2
        })
    }

    fn pid(&self, i: usize) -> Option<u32> {
        self.members[i].daemon.pid()
    }

    fn kill(&mut self, i: usize) {
        self.members[i].daemon.kill();
    }

    /// Starts member `i` again with its data, and waits until it is healthy: it has
    /// caught up with the leader of the day and serves linearizable reads.
    #[track_caller]
    fn restart(&mut self, i: usize) {
        self.members[i].daemon.restart();
    }

    /// Kills the leader with SIGKILL, and waits until the two others elect one of them
    /// and it takes a write; `lag` is not used, since etcd acknowledges a write only once
    /// a majority has it.
    #[track_caller]
    fn fail_over(&mut self, lag: Duration) -> (usize, usize) {
        let _ = lag;
        let mut old = None;
        self.settle("name a leader", |cluster| {
            old = cluster.primary();
            old.is_some()
        });
        let old = old.expect("settled on a leader");
        self.kill(old);
        let mut new = None;
        self.settle("elect a new leader that takes writes", |cluster| {
            new = cluster.primary().filter(|&i| i != old);
            new.is_some_and(|i| cluster.takes_writes(i))
        });
        (old, new.expect("settled on a new leader"))
    }

    /// Takes member `i`'s port on the members' bridge down (`cut`) or up. Its clients
    /// still reach it; a mended member catches up by itself (see
    /// [`EtcdCluster::healthy`]).
    #[track_caller]
    fn partition(&mut self, i: usize, cut: bool) {
        self.lan.cut(i, cut);
    }
}

/// What a member is started with; the same on every start (etcd reads the `initial`
/// settings only when its data directory is empty).
struct MemberArgs {
    name: String,
    data: PathBuf,
    client: Ipv4Addr,
    peer: Ipv4Addr,
    initial: String,
    /// Names the cluster, so that a member never joins another test's.
    token: String,
}

/// `ip netns exec NAMESPACE etcd ...`: `ip` enters the namespace and executes etcd in
/// its own place, so the process the testkit spawned, signals and reaps is etcd.
fn member_command(ip: &Path, namespace: &str, etcd: &Path, args: &MemberArgs) -> Command {
    let client = format!("http://{}:{CLIENT_PORT}", args.client);
    let peer = format!("http://{}:{PEER_PORT}", args.peer);
    let mut command = Command::new(ip);
    command
        .args(["netns", "exec", namespace])
        .arg(etcd)
        .args(["--name", &args.name])
        .arg("--data-dir")
        .arg(&args.data)
        .args(["--listen-client-urls", &client])
        .args(["--advertise-client-urls", &client])
        .args(["--listen-peer-urls", &peer])
        .args(["--initial-advertise-peer-urls", &peer])
        .args(["--initial-cluster", &args.initial])
        .args(["--initial-cluster-state", "new"])
        .args(["--initial-cluster-token", &args.token])
        .args(["--heartbeat-interval", &HEARTBEAT_MS.to_string()])
        .args(["--election-timeout", &ELECTION_TIMEOUT_MS.to_string()])
        .arg("--pre-vote")
        .args(["--logger", "zap", "--log-outputs", "stderr"]);
    if let Some(arch) = crate::etcd::unsupported_arch() {
        command.env("ETCD_UNSUPPORTED_ARCH", arch);
    }
    command
}

/// A fresh temporary directory for one member.
fn scratch_dir() -> TempDir {
    tempfile::Builder::new()
        .prefix("snowmint-etcd-member-")
        .tempdir()
        .unwrap_or_else(|err| panic!("cannot create a temporary directory for etcd: {err}"))
}

/// Whether etcd's `/health` on `address` says it is healthy.
fn healthy(address: SocketAddr) -> bool {
    request(address, "GET", "/health", "")
        .is_some_and(|(status, body)| status == 200 && body.contains(r#""health":"true""#))
}

/// What a member says of itself in `/v3/maintenance/status`.
struct Status {
    member: u64,
    /// The leader it follows (or is); `None` while it has none.
    leader: Option<u64>,
}

fn status(address: SocketAddr) -> Option<Status> {
    let (code, body) = post(address, "/v3/maintenance/status", "{}")?;
    if code != 200 {
        return None;
    }
    let json: serde_json::Value = serde_json::from_str(&body).ok()?;
    // The gateway writes 64-bit integers as strings, and leaves out those that are 0.
    let id = |value: &serde_json::Value| value.as_str()?.parse::<u64>().ok();
    Some(Status {
        member: id(&json["header"]["member_id"])?,
        leader: id(&json["leader"]).filter(|&leader| leader != 0),
    })
}

fn post(address: SocketAddr, path: &str, body: &str) -> Option<(u16, String)> {
    request(address, "POST", path, body)
}

/// One HTTP/1.1 request on a connection of its own, every step bounded by
/// [`ASK_TIMEOUT`]; `None` if the member does not answer in time.
fn request(address: SocketAddr, method: &str, path: &str, body: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect_timeout(&address, ASK_TIMEOUT).ok()?;
    stream.set_read_timeout(Some(ASK_TIMEOUT)).ok()?;
    stream.set_write_timeout(Some(ASK_TIMEOUT)).ok()?;
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.get(9..12)?.parse().ok()?;
    let (_, body) = response.split_once("\r\n\r\n")?;
    Some((status, body.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The faults the campaign deals, each seen from the members' own status: a failover
    /// and the old leader back as a follower, then the new leader cut from its peers (its
    /// clients still reach it) and mended.
    #[test]
    fn fails_over_restarts_and_partitions() {
        let mut cluster = EtcdCluster::start();
        let started = Instant::now();
        let (old, new) = cluster.fail_over(Duration::ZERO);
        eprintln!("failed over from {old} to {new} in {:?}", started.elapsed());
        cluster.restart(old);
        assert!(cluster.healthy(old));
        assert_eq!(cluster.primary(), Some(new));

        let cut = Instant::now();
        cluster.partition(new, true);
        cluster.settle("elect a leader on the majority side", |cluster| {
            cluster
                .primary()
                .is_some_and(|i| i != new && cluster.takes_writes(i))
        });
        eprintln!(
            "a leader on the majority side {:?} after the cut",
            cut.elapsed()
        );
        // Cut off, it steps down (etcd's check-quorum) but still answers its clients.
        cluster.settle("let the cut member find it has no leader", |cluster| {
            status(cluster.address(new)).is_some_and(|status| status.leader.is_none())
        });
        assert!(!cluster.healthy(new));
        assert!(!cluster.takes_writes(new));

        cluster.partition(new, false);
        cluster.settle("take the mended member back", |cluster| {
            cluster.healthy(new)
        });
        assert_ne!(cluster.primary(), Some(new));
    }
}
