//! Three real ZooKeeper servers in one ensemble, each in a network namespace of its own,
//! so that a test can kill the leader, or cut a member off from its peers while its
//! clients stay connected.

mod namespaces;

use std::fmt::Write as _;
use std::fs;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::RawFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use self::namespaces::Namespaces;
use crate::Cluster;
use crate::process::Daemon;
use crate::program;
use crate::zookeeper::{ROOT, TICK, server_jar, zookeeper_command};

/// How many members the ensemble has: the fewest that survive the loss of one.
const MEMBERS: usize = 3;
/// The ports every member uses in its own namespace, as a production ensemble would.
const CLIENT_PORT: u16 = 2181;
const QUORUM_PORT: u16 = 2888;
const ELECTION_PORT: u16 = 3888;
/// Ticks a follower may take to connect to and sync with a new leader (2 s).
const INIT_LIMIT: u32 = 10;
/// Ticks a follower and its leader may go without hearing each other before each gives
/// the other up (1 s): how soon a cut member stops serving, and a cut leader leads no more.
const SYNC_LIMIT: u32 = 5;
/// System properties of every member. A member's connection attempts to a peer the cut
/// silences end after half a second rather than five; and a member alone, which waits
/// twice as long between its election notifications each time nobody answers, waits at
/// most a second rather than a minute, so it rejoins soon after the cut mends.
const PROPERTIES: [&str; 2] = [
    "zookeeper.cnxTimeout=500",
    "zookeeper.fastleader.maxNotificationInterval=1000",
];
/// The server that runs as a member of an ensemble.
const MAIN_CLASS: &str = "org.apache.zookeeper.server.quorum.QuorumPeerMain";
/// How long the members may take to elect a leader and serve.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(50);
/// How long a status probe may wait to connect, write or read.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);
/// Lines of each member's log quoted when the ensemble does not settle.
const LOG_TAIL_LINES: usize = 15;

/// A ZooKeeper ensemble of three members, each in a network namespace of its own with its
/// own address on the host, all stopped and the namespaces removed when dropped.
///
/// Each member serves clients on `ADDRESS:2181` and talks to its peers on ports 2888
/// (quorum) and 3888 (election) of theirs, with a 200 ms `tickTime`: a leader that dies is
/// replaced in about a second. A test reaches every member from the host, and the host
/// forwards the members' traffic to one another, so [`Cluster::partition`] can drop the
/// latter alone: the cut member keeps its clients until ZooKeeper itself drops them (a
/// follower that hears no leader for a second stops serving, as does a leader that hears
/// no quorum). Every write is synced by a majority before it is acknowledged, so a
/// failover loses none, and [`Cluster::fail_over`] kills the leader outright.
///
/// The namespaces need root, as the campaign and CI have; a test that cannot make them
/// fails, naming the command that failed.
///
/// ```no_run
/// use snowmint_testkit::{Cluster, ZooKeeperEnsemble};
///
/// let mut ensemble = ZooKeeperEnsemble::start();
/// let leader = ensemble.primary().expect("start waits for a leader");
/// let (old, new) = ensemble.fail_over(std::time::Duration::ZERO);
/// assert_eq!(old, leader);
/// assert_eq!(ensemble.primary(), Some(new));
/// assert!(ensemble.url().starts_with("zookeeper://10."));
/// ```
pub struct ZooKeeperEnsemble {
    // Declared before `network`, so the servers stop before their namespaces go.
    members: Vec<Member>,
    network: Namespaces,
}

/// One member: its process, its data and log, and whether it is cut off.
struct Member {
    // Declared before `dir`, so the server stops before its directory is removed.
    daemon: Daemon,
    address: SocketAddr,
    dir: TempDir,
    cut: bool,
}

/// What a member says of itself (`srvr`), when it serves clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Leader { epoch: u64 },
    Follower,
}

impl ZooKeeperEnsemble {
    /// Starts three members, and waits until one of them leads and the other two follow
    /// it, which they do once the ensemble takes writes.
    ///
    /// # Panics
    ///
    /// If `java` or Debian's `zookeeper` package is missing, the namespaces cannot be made
    /// (not root), or the ensemble does not settle within 30 seconds; the message quotes
    /// the end of each member's log.
    #[must_use]
    #[track_caller]
    pub fn start() -> ZooKeeperEnsemble {
        let java = program::find_on_path("java", "default-jre-headless");
        if let Err(missing) = server_jar() {
            panic!("{missing}");
        }
        let network = Namespaces::create(MEMBERS);
        let addresses: Vec<SocketAddr> = (0..MEMBERS)
            .map(|i| SocketAddr::from((network.address(i), CLIENT_PORT)))
            .collect();
        let mut members: Vec<Member> = (0..MEMBERS)
            .map(|i| {
                let dir = tempfile::Builder::new()
                    .prefix("snowmint-zookeeper-ensemble-")
                    .tempdir()
                    .unwrap_or_else(|err| panic!("cannot create a temporary directory: {err}"));
                let config = configure(i, &addresses, dir.path());
                let (java, netns) = (java.clone(), network.handle(i));
                let address = addresses[i];
                let daemon = Daemon::new(
                    "zookeeper",
                    CLIENT_PORT,
                    dir.path().join("zookeeper.log"),
                    libc::SIGTERM,
                    Box::new(move || member_command(&java, &config, netns)),
                    // Up once it answers at all: it serves only once a quorum is up too.
                    Box::new(move || srvr(address).is_some()),
                )
                .at(address);
                Member {
                    daemon,
                    address,
                    dir,
                    cut: false,
                }
            })
            .collect();
        // Together: each one's JVM takes a second or so to start.
        thread::scope(|scope| {
            for member in &mut members {
                scope.spawn(|| member.daemon.start());
            }
        });
        let ensemble = ZooKeeperEnsemble { members, network };
        ensemble.wait_for_quorum();
        ensemble
    }

    /// The server's `tickTime`: it grants session timeouts from 2 to 20 of them.
    ///
    /// ```no_run
    /// let ensemble = snowmint_testkit::ZooKeeperEnsemble::start();
    /// assert_eq!(ensemble.tick() * 20, std::time::Duration::from_secs(4));
    /// ```
    #[must_use]
    pub fn tick(&self) -> Duration {
        TICK
    }

    /// Waits until, among the members that run and are not cut off, one leads and the
    /// others follow it; answers the leader. A cut leader that has not yet noticed it
    /// lost its followers is not counted.
    ///
    /// # Panics
    ///
    /// If that takes more than 30 seconds; the message quotes the end of each member's log.
    #[track_caller]
    pub fn wait_for_quorum(&self) -> usize {
        let deadline = Instant::now() + SETTLE_TIMEOUT;
        loop {
            let live = self
                .members
                .iter()
                .enumerate()
                .filter(|(_, m)| !m.cut && m.daemon.pid().is_some());
            let modes: Vec<(usize, Option<Mode>)> =
                live.map(|(i, m)| (i, status(m.address))).collect();
            let leaders: Vec<usize> = modes
                .iter()
                .filter(|(_, mode)| matches!(mode, Some(Mode::Leader { .. })))
                .map(|(i, _)| *i)
                .collect();
            let serving = modes.iter().all(|(_, mode)| mode.is_some());
            if let ([leader], true) = (leaders.as_slice(), serving) {
                return *leader;
            }
            if Instant::now() >= deadline {
                panic!(
                    "the ensemble elected no leader that its live members follow within \
                     {SETTLE_TIMEOUT:?} ({modes:?}); {}",
                    self.logs()
                );
            }
            thread::sleep(POLL);
        }
    }

    /// The end of each member's log.
    fn logs(&self) -> String {
        let mut logs = String::new();
        for (i, member) in self.members.iter().enumerate() {
            let path = member.dir.path().join("zookeeper.log");
            let log = fs::read_to_string(&path).unwrap_or_default();
            let lines: Vec<&str> = log.lines().collect();
            let tail = lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n");
            let _ = write!(
                logs,
                "\nthe end of member {i}'s {}:\n{tail}",
                path.display()
            );
        }
        logs
    }
}

impl Cluster for ZooKeeperEnsemble {
    fn url(&self) -> String {
        let hosts: Vec<String> = self.members.iter().map(|m| m.address.to_string()).collect();
        format!("zookeeper://{}{ROOT}", hosts.join(","))
    }

    fn members(&self) -> usize {
        self.members.len()
    }

    fn address(&self, i: usize) -> SocketAddr {
        self.members[i].address
    }

    fn member_url(&self, i: usize) -> String {
        format!("zookeeper://{}{ROOT}", self.members[i].address)
    }

    /// The member that says it leads; when two do (a cut leader that has not noticed yet,
    /// and the one the others elected), the one of the later epoch.
    fn primary(&self) -> Option<usize> {
        let mut leaders: Vec<(u64, usize)> = self
            .members
            .iter()
            .enumerate()
            .filter(|(_, m)| m.daemon.pid().is_some())
            .filter_map(|(i, m)| match status(m.address) {
                Some(Mode::Leader { epoch }) => Some((epoch, i)),
                _ => None,
            })
            .collect();
        leaders.sort_unstable();
        match leaders.as_slice() {
            [.., (first, _), (second, _)] if first == second => None,
            [.., (_, last)] => Some(*last),
            [] => None,
        }
    }

    fn pid(&self, i: usize) -> Option<u32> {
        self.members[i].daemon.pid()
    }

    fn kill(&mut self, i: usize) {
        self.members[i].daemon.kill();
    }

    /// Starts member `i` again with its data; it syncs with the leader of the day and
    /// follows it. Returns once it does, or, while it is cut off, once it runs.
    #[track_caller]
    fn restart(&mut self, i: usize) {
        self.members[i].daemon.restart();
        if !self.members[i].cut {
            self.wait_for_quorum();
        }
    }

    /// Kills the leader with SIGKILL and waits until the other two have elected one of
    /// themselves, which then takes writes. `lag` is not used: a write is acknowledged
    /// only once a majority has it, and the new leader is one of that majority.
    #[track_caller]
    fn fail_over(&mut self, _lag: Duration) -> (usize, usize) {
        let old = self.wait_for_quorum();
        self.kill(old);
        let new = self.wait_for_quorum();
        (old, new)
    }

    /// Cuts member `i` off: the host forwards nothing to or from it, so its peers no
    /// longer hear it, while its clients (on the host) stay connected. Returns at once;
    /// the members notice within a second ([`SYNC_LIMIT`] ticks). Mending waits until the
    /// member follows a leader again, unless it is down.
    #[track_caller]
    fn partition(&mut self, i: usize, cut: bool) {
        self.network.cut(i, cut);
        self.members[i].cut = cut;
        if !cut && self.members[i].daemon.pid().is_some() {
            self.wait_for_quorum();
        }
    }
}

/// Writes member `i`'s `zoo.cfg` and `myid` into `dir`, and returns the configuration's path.
fn configure(i: usize, addresses: &[SocketAddr], dir: &Path) -> std::path::PathBuf {
    let data = dir.join("data");
    fs::create_dir(&data).unwrap_or_else(|err| panic!("cannot create {}: {err}", data.display()));
    let myid = data.join("myid");
    fs::write(&myid, format!("{}\n", i + 1))
        .unwrap_or_else(|err| panic!("cannot write {}: {err}", myid.display()));
    let mut text = format!(
        "tickTime={tick}\n\
         initLimit={INIT_LIMIT}\n\
         syncLimit={SYNC_LIMIT}\n\
         dataDir={data}\n\
         clientPort={CLIENT_PORT}\n\
         clientPortAddress={address}\n\
         maxClientCnxns=0\n\
         admin.enableServer=false\n\
         4lw.commands.whitelist=srvr,stat\n",
        tick = TICK.as_millis(),
        data = data.display(),
        address = addresses[i].ip(),
    );
    for (n, address) in addresses.iter().enumerate() {
        let ip = address.ip();
        let _ = writeln!(text, "server.{}={ip}:{QUORUM_PORT}:{ELECTION_PORT}", n + 1);
    }
    let config = dir.join("zoo.cfg");
    fs::write(&config, text)
        .unwrap_or_else(|err| panic!("cannot write {}: {err}", config.display()));
    config
}

/// The member with the configuration `config`, run in the network namespace `netns`.
fn member_command(java: &Path, config: &Path, netns: RawFd) -> std::process::Command {
    let properties: Vec<String> = PROPERTIES.iter().map(ToString::to_string).collect();
    let mut command = zookeeper_command(java, &properties, MAIN_CLASS, config);
    // SAFETY: the hook runs in the forked child before exec and only calls setns(2),
    // which is async-signal-safe, on a descriptor the guard keeps open while it lives.
    unsafe {
        command.pre_exec(move || {
            if libc::setns(netns, libc::CLONE_NEWNET) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command
}

/// What the member on `address` answers to `srvr`, if it answers.
fn srvr(address: SocketAddr) -> Option<String> {
    let mut stream = TcpStream::connect_timeout(&address, PROBE_TIMEOUT).ok()?;
    stream.set_read_timeout(Some(PROBE_TIMEOUT)).ok()?;
    stream.set_write_timeout(Some(PROBE_TIMEOUT)).ok()?;
    stream.write_all(b"srvr").ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    Some(answer)
}

/// What the member on `address` says of itself, if it serves clients: `srvr` answers
/// "not currently serving" while it looks for a leader or syncs with one.
fn status(address: SocketAddr) -> Option<Mode> {
    let answer = srvr(address)?;
    let field = |name: &str| {
        answer
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .map(str::trim)
    };
    match field("Mode:")? {
        "leader" => {
            // The zxid's high 32 bits are the leader's epoch.
            let zxid = field("Zxid:")?.trim_start_matches("0x");
            let epoch = u64::from_str_radix(zxid, 16).ok()? >> 32;
            Some(Mode::Leader { epoch })
        }
        "follower" => Some(Mode::Follower),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The whole life of an ensemble under the campaign's faults, timed.
    #[test]
    fn fails_over_takes_the_old_leader_back_and_mends_cuts() {
        let started = Instant::now();
        let mut ensemble = ZooKeeperEnsemble::start();
        eprintln!("started in {:?}", started.elapsed());
        let leader = ensemble.primary().expect("a leader once started");
        let url = ensemble.url();
        for i in 0..MEMBERS {
            assert!(url.contains(&ensemble.address(i).to_string()), "{url}");
            assert!(ensemble.pid(i).is_some());
        }

        // As often as a campaign does: the old leader comes back as a follower each time.
        let mut new = leader;
        for _ in 0..5 {
            let failing = Instant::now();
            let (old, next) = ensemble.fail_over(Duration::ZERO);
            eprintln!("failed over in {:?}", failing.elapsed());
            assert_eq!(old, new);
            assert_ne!(next, old);
            assert_eq!(ensemble.pid(old), None);
            assert_eq!(ensemble.primary(), Some(next));

            let restarting = Instant::now();
            ensemble.restart(old);
            eprintln!("the old leader followed in {:?}", restarting.elapsed());
            assert_eq!(status(ensemble.address(old)), Some(Mode::Follower));
            assert_eq!(ensemble.primary(), Some(next));
            new = next;
        }

        // The leader cut off: the others elect another, its clients still reach it.
        let cutting = Instant::now();
        ensemble.partition(new, true);
        let next = ensemble.wait_for_quorum();
        eprintln!("the cut leader was replaced in {:?}", cutting.elapsed());
        assert_ne!(next, new);
        assert_eq!(ensemble.primary(), Some(next));
        assert!(srvr(ensemble.address(new)).is_some(), "clients reach it");
        // It stops serving once it hears no quorum.
        let deadline = Instant::now() + Duration::from_secs(10);
        while status(ensemble.address(new)).is_some() {
            assert!(Instant::now() < deadline, "the cut leader still serves");
            thread::sleep(POLL);
        }
        eprintln!(
            "the cut leader stopped serving {:?} after the cut",
            cutting.elapsed()
        );

        let mending = Instant::now();
        ensemble.partition(new, false);
        eprintln!("mended in {:?}", mending.elapsed());
        assert_eq!(status(ensemble.address(new)), Some(Mode::Follower));
        assert_eq!(ensemble.primary(), Some(next));

        // A follower cut off stops serving too; the other two go on as they were.
        let follower = new;
        let cutting = Instant::now();
        ensemble.partition(follower, true);
        let deadline = Instant::now() + Duration::from_secs(10);
        while status(ensemble.address(follower)).is_some() {
            assert!(Instant::now() < deadline, "the cut follower still serves");
            thread::sleep(POLL);
        }
        eprintln!(
            "the cut follower stopped serving {:?} after the cut",
            cutting.elapsed()
        );
        assert!(
            srvr(ensemble.address(follower)).is_some(),
            "clients reach it"
        );
        assert_eq!(ensemble.wait_for_quorum(), next);
        ensemble.partition(follower, false);
        assert_eq!(status(ensemble.address(follower)), Some(Mode::Follower));
        eprintln!("all in {:?}", started.elapsed());
    }
}
