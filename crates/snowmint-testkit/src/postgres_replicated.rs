//! A real PostgreSQL primary with an asynchronous streaming standby, for the tests and the
//! campaign that fail a registry over: the standby is made by `pg_basebackup -R`, a failover
//! cuts it off, lets the primary acknowledge writes it never gets, kills the primary and
//! promotes it, and the old primary comes back rebuilt as the new one's standby.
//!
//! **The cut.** Each member serves its clients on 127.0.0.1 and its peer on a loopback
//! address of its own (127.x.y.z, from the test process's id), on the same port; the
//! standby streams from the primary's peer address. A cut is iptables rules, in `INPUT`,
//! that drop every packet to or from the members' peer addresses and ports: the
//! replication link goes dark both ways as in a network partition (the walsender and the
//! walreceiver see silence, not an error), while clients on 127.0.0.1 are served as before.
//! Loopback addresses need no network namespace, veth or forwarding rule, and the rules
//! match nothing but the cluster's own traffic. The rules carry the comment
//! `snowmint-testkit-<pid>-<n>` and are removed when the guard drops.

mod cut;

use std::fs;
use std::net::{Ipv4Addr, SocketAddr};
use std::os::unix::fs::chown;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use self::cut::{Cut, peer_address};
use crate::cluster::Cluster;
use crate::instance::{Instance, Kind};
use crate::postgres::{self, Account, DATABASE, SUPERUSER};

/// What the guard needs to know to run one member.
const KIND: Kind = Kind {
    name: "postgres-member",
    program: "postgres",
    // The fast shutdown, as for the single server.
    stop_signal: libc::SIGINT,
    ready: postgres::accepts_sessions,
};

/// A primary and its standby.
const MEMBERS: usize = 2;
/// Who may connect: anyone on a member's socket directory or on a loopback address (clients
/// on 127.0.0.1, the standby and `pg_basebackup` on the primary's peer address), for
/// sessions and replication alike, without a password.
const PG_HBA: &str = "local all all trust\n\
                      host all all 127.0.0.0/8 trust\n\
                      host replication all 127.0.0.0/8 trust\n";
/// Settings on each member's command line, so that a member rebuilt from its peer's files
/// keeps them.
const SETTINGS: [&str; 4] = [
    // A link cut without a word (dropped packets) is given up after this on both ends,
    // and the standby connects again, so a mended cut streams again within seconds.
    "wal_receiver_timeout=3s",
    "wal_sender_timeout=3s",
    "wal_retrieve_retry_interval=200ms",
    // WAL the primary keeps for a standby cut off for a while: far more than a test writes.
    "wal_keep_size=128MB",
];
/// How long a standby may try to reach its primary before trying again (whole seconds,
/// as libpq takes it), and how long a query of the guard's own may try to connect.
const CONNECT_TIMEOUT_S: u32 = 2;
/// How long one `psql` of the guard's own may take, connecting included.
const SQL_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a promotion may take; `pg_promote` waits for it.
const PROMOTE_WAIT_S: u32 = 20;
/// How long `pg_basebackup` may take to copy a member: a test's cluster is some 40 MB.
const BACKUP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the cluster may take to settle: a standby to stream, a new primary to take
/// writes.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(20);
/// Whether a member is in recovery (a standby), and the timeline it writes on when not.
const ROLE: &str = "SELECT pg_is_in_recovery(), CASE WHEN pg_is_in_recovery() THEN 0 \
     ELSE ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int END";

/// A PostgreSQL primary (member 0 at first) and an asynchronous streaming standby, each on
/// a free port of 127.0.0.1 with its data in a temporary directory of its own; stopped,
/// and every cut mended, when dropped.
///
/// [`Cluster::url`] names both members with `target_session_attrs=read-write`, so a client
/// follows a failover to whichever member takes writes. There is no failover manager:
/// [`Cluster::fail_over`] is the operator's promotion. The members run as the `postgres`
/// user when the tests run as root, as [`Postgres`](crate::Postgres) does; cuts need root
/// (iptables).
///
/// ```no_run
/// use std::time::Duration;
/// use snowmint_testkit::{Cluster, PostgresReplicated};
///
/// let mut cluster = PostgresReplicated::start();
/// assert_eq!(cluster.primary(), Some(0));
/// assert!(cluster.url().ends_with("/postgres?target_session_attrs=read-write"));
///
/// assert_eq!(cluster.fail_over(Duration::from_millis(200)), (0, 1));
/// assert_eq!(cluster.primary(), Some(1));
/// cluster.restart(0); // rebuilt from member 1, and its standby
/// assert_eq!(cluster.primary(), Some(1));
/// ```
pub struct PostgresReplicated {
    // Declared before `cut`: the members stop before the rules go (see `Drop`).
    members: Vec<Member>,
    bin: PathBuf,
    account: Option<Account>,
    /// The member that takes writes, or took them last if it is down.
    leader: usize,
    /// The members [`Cluster::partition`] cut off.
    partitioned: [bool; MEMBERS],
    /// The old primary a failover cut off, until [`Cluster::restart`] rebuilds it.
    severed: Option<usize>,
    cut: Cut,
}

/// One member: its server, and the loopback address its peer reaches it on.
struct Member {
    server: Instance,
    /// Where it serves replication, on the same port as its clients.
    peer: Ipv4Addr,
    /// It was the primary when a failover killed it: its WAL has writes the new primary
    /// never got, so it cannot follow it as it is.
    diverged: bool,
}

impl PostgresReplicated {
    /// Makes a cluster with `initdb` for member 0, starts it, copies it with
    /// `pg_basebackup -R` for member 1, starts that as its standby, and waits until the
    /// standby streams.
    ///
    /// # Panics
    ///
    /// As [`Postgres::start`](crate::Postgres::start), if `pg_basebackup` fails, or if the
    /// standby does not stream within 30 seconds; the message quotes the end of its log.
    #[must_use]
    #[track_caller]
    pub fn start() -> PostgresReplicated {
        let bin = postgres::bin_dir().unwrap_or_else(|missing| panic!("{missing}"));
        let account = postgres::run_as();
        let primary = start_member(&bin, account, |data, dir| {
            postgres::initdb(&bin, data, dir, account);
            let hba = data.join("pg_hba.conf");
            fs::write(&hba, PG_HBA)
                .unwrap_or_else(|err| panic!("cannot write {}: {err}", hba.display()));
        });
        let source = (primary.peer, primary.server.port);
        let standby = start_member(&bin, account, |data, dir| {
            base_backup(&bin, account, data, dir, source);
        });
        let cluster = PostgresReplicated {
            members: vec![primary, standby],
            bin,
            account,
            leader: 0,
            partitioned: [false; MEMBERS],
            severed: None,
            cut: Cut::new(),
        };
        cluster.wait_streaming();
        cluster
    }

    /// Runs `statement` on member `i` with `psql`, within [`SQL_TIMEOUT`]; answers what it
    /// prints, unaligned and without headers, or why it failed.
    fn sql(&self, i: usize, statement: &str) -> Result<String, String> {
        let mut command = Command::new(self.bin.join("psql"));
        command
            .args(["-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-d"])
            .arg(self.member_url(i))
            .args(["-c", statement])
            .env("PGCONNECT_TIMEOUT", CONNECT_TIMEOUT_S.to_string());
        let output = run_within(command, SQL_TIMEOUT)?;
        if output.status.success() {
            Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
        } else {
            Err(String::from_utf8_lossy(&output.stderr).trim().to_string())
        }
    }

    fn running(&self, i: usize) -> bool {
        self.members[i].server.daemon.pid().is_some()
    }

    /// Puts the iptables rules in place while any cut is wanted, and takes them away when
    /// none is. With two members there is one link: cutting either member cuts it.
    fn sync_cut(&mut self) {
        let wanted = self.severed.is_some() || self.partitioned.iter().any(|cut| *cut);
        let links: Vec<(Ipv4Addr, u16)> = self
            .members
            .iter()
            .map(|m| (m.peer, m.server.port))
            .collect();
        self.cut.set(wanted, &links);
    }

    /// Waits until the leader streams to its standby, unless the link is cut.
    #[track_caller]
    fn wait_streaming(&self) {
        let streaming = "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'";
        self.settle("stream to its standby", self.leader, |cluster| {
            cluster.sql(cluster.leader, streaming).as_deref() == Ok("1")
        });
    }

    /// Waits until `done`, for at most [`SETTLE_TIMEOUT`].
    ///
    /// # Panics
    ///
    /// When that passes; the message says that member `i` did not `what`, with the end of
    /// its log.
    #[track_caller]
    fn settle(&self, what: &str, i: usize, done: impl Fn(&Self) -> bool) {
        let deadline = Instant::now() + SETTLE_TIMEOUT;
        while !done(self) {
            assert!(
                Instant::now() < deadline,
                "postgres member {i} did not {what} within {SETTLE_TIMEOUT:?}; {}",
                self.log_tail(i)
            );
            thread::sleep(POLL);
        }
    }

    /// The end of member `i`'s log, for messages.
    fn log_tail(&self, i: usize) -> String {
        /// Lines quoted.
        const LINES: usize = 20;
        let path = self.members[i]
            .server
            .dir
            .path()
            .join("postgres-member.log");
        let log = fs::read_to_string(&path).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        let tail = lines[lines.len().saturating_sub(LINES)..].join("\n");
        format!("the end of its log {}:\n{tail}", path.display())
    }

    /// Replaces member `i`'s data with a fresh copy of the leader's, as its standby.
    #[track_caller]
    fn rebuild(&mut self, i: usize) {
        let dir = self.members[i].server.dir.path().to_path_buf();
        let data = dir.join("data");
        forget_shared_memory(&data);
        fs::remove_dir_all(&data)
            .unwrap_or_else(|err| panic!("cannot remove {}: {err}", data.display()));
        let leader = &self.members[self.leader];
        let source = (leader.peer, leader.server.port);
        base_backup(&self.bin, self.account, &data, &dir, source);
        self.members[i].diverged = false;
    }
}

impl Cluster for PostgresReplicated {
    fn url(&self) -> String {
        let hosts: Vec<String> = self
            .members
            .iter()
            .map(|m| format!("127.0.0.1:{}", m.server.port))
            .collect();
        format!(
            "postgres://{SUPERUSER}@{}/{DATABASE}?target_session_attrs=read-write",
            hosts.join(",")
        )
    }

    fn members(&self) -> usize {
        MEMBERS
    }

    fn address(&self, i: usize) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.members[i].server.port))
    }

    fn member_url(&self, i: usize) -> String {
        let port = self.members[i].server.port;
        format!("postgres://{SUPERUSER}@127.0.0.1:{port}/{DATABASE}")
    }

    /// The member that answers `pg_is_in_recovery()` with false; of two, the one on the
    /// newer timeline (an old primary started as it was, after a failover).
    fn primary(&self) -> Option<usize> {
        let timeline = |i: usize| {
            let answer = self.sql(i, ROLE).ok()?;
            let (recovering, timeline) = answer.split_once('|')?;
            let timeline: u32 = timeline.parse().ok()?;
            (recovering == "f").then_some((timeline, i))
        };
        (0..MEMBERS)
            .filter(|i| self.running(*i))
            .filter_map(timeline)
            .max()
            .map(|(_, i)| i)
    }

    fn pid(&self, i: usize) -> Option<u32> {
        self.members[i].server.daemon.pid()
    }

    fn kill(&mut self, i: usize) {
        self.members[i].server.daemon.kill();
    }

    /// Starts member `i` again: with its data, unless a failover left it diverged, in which
    /// case the failover's cut is mended and it is rebuilt with `pg_basebackup -R` from the
    /// primary (half a second). A standby is waited for until it streams, unless cut off.
    #[track_caller]
    fn restart(&mut self, i: usize) {
        self.members[i].server.daemon.stop();
        if self.members[i].diverged {
            if self.severed == Some(i) {
                self.severed = None;
                self.sync_cut();
            }
            self.rebuild(i);
        }
        self.members[i].server.daemon.start();
        if i != self.leader && !self.cut.is_on() {
            self.wait_streaming();
        }
    }

    /// Cuts the link (see the module's documentation), waits `lag` while the primary
    /// acknowledges writes alone, kills it with SIGKILL, promotes the standby with
    /// `pg_promote()` and waits until it takes writes (a transaction id is assigned). The
    /// link stays cut until [`Cluster::restart`] rebuilds the old primary. A primary that
    /// is down already is not waited for.
    ///
    /// # Panics
    ///
    /// When the standby is down, or is not promoted and taking writes within 30 seconds.
    #[track_caller]
    fn fail_over(&mut self, lag: Duration) -> (usize, usize) {
        let old = self.leader;
        let new = (old + 1) % MEMBERS;
        assert!(
            self.running(new),
            "postgres member {new} is down: no standby to fail over to"
        );
        if self.running(old) {
            self.severed = Some(old);
            self.sync_cut();
            thread::sleep(lag);
            self.members[old].server.daemon.kill();
        }
        self.members[old].diverged = true;
        let promoted = self.sql(new, &format!("SELECT pg_promote(true, {PROMOTE_WAIT_S})"));
        assert_eq!(
            promoted.as_deref(),
            Ok("t"),
            "postgres member {new} was not promoted; {}",
            self.log_tail(new)
        );
        self.leader = new;
        self.settle("take writes after its promotion", new, |cluster| {
            cluster.sql(new, "SELECT pg_current_xact_id()").is_ok()
        });
        (old, new)
    }

    fn partition(&mut self, i: usize, cut: bool) {
        self.partitioned[i] = cut;
        self.sync_cut();
    }
}

impl Drop for PostgresReplicated {
    /// Mends the cut and stops the standby before the primary: a primary shutting down
    /// waits for its walsender to pass the last WAL on, which a cut link would hold up to
    /// `wal_sender_timeout`. A member killed and never restarted leaves its shared memory
    /// segment, removed here before its directory goes.
    fn drop(&mut self) {
        self.cut.clear();
        let leader = self.leader;
        let standbys_first = (0..MEMBERS).filter(|i| *i != leader).chain([leader]);
        for i in standbys_first {
            let member = &mut self.members[i];
            member.server.daemon.stop();
            forget_shared_memory(&member.server.dir.path().join("data"));
        }
    }
}

/// Starts a member on a free port: `prepare` fills its data directory (the first
/// argument) in its own temporary directory (the second).
#[track_caller]
fn start_member(bin: &Path, account: Option<Account>, prepare: impl Fn(&Path, &Path)) -> Member {
    let peer = peer_address();
    let server = Instance::start(&KIND, |port, dir| {
        if let Some(Account { uid, gid }) = account {
            chown(dir, Some(uid), Some(gid)).unwrap_or_else(|err| {
                panic!("cannot give {} to the postgres user: {err}", dir.display())
            });
        }
        prepare(&dir.join("data"), dir);
        let program = bin.join("postgres");
        let dir = dir.to_path_buf();
        move || {
            let mut command = Command::new(&program);
            command
                .arg("-D")
                .arg(dir.join("data"))
                .args(["-p", &port.to_string()])
                .args(["-c", &format!("listen_addresses=127.0.0.1,{peer}")])
                .arg("-k")
                .arg(&dir)
                // No fsync, as for the single server: a SIGKILL loses nothing committed.
                .arg("-F");
            for setting in SETTINGS {
                command.args(["-c", setting]);
            }
            postgres::as_account(&mut command, account, &dir);
            command
        }
    });
    Member {
        server,
        peer,
        diverged: false,
    }
}

/// Copies the member at `source` (its peer address and port) into `data` with
/// `pg_basebackup -R`, which makes the copy its standby.
#[track_caller]
fn base_backup(
    bin: &Path,
    account: Option<Account>,
    data: &Path,
    dir: &Path,
    source: (Ipv4Addr, u16),
) {
    let (host, port) = source;
    let mut command = Command::new(bin.join("pg_basebackup"));
    command
        .arg("-D")
        .arg(data)
        .args(["-R", "-X", "stream", "-c", "fast", "--no-sync", "-d"])
        .arg(format!(
            "host={host} port={port} user={SUPERUSER} connect_timeout={CONNECT_TIMEOUT_S}"
        ));
    postgres::as_account(&mut command, account, dir);
    let output = run_within(command, BACKUP_TIMEOUT).unwrap_or_else(|err| panic!("{err}"));
    assert!(
        output.status.success(),
        "pg_basebackup from {host}:{port} failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Runs `command` to its end, or kills it after `limit`; a frozen server (SIGSTOP) must
/// not hang the guard.
fn run_within(mut command: Command, limit: Duration) -> Result<Output, String> {
    let program = command.get_program().to_string_lossy().into_owned();
    // Their output is a few lines, far less than a pipe holds: waiting before reading
    // cannot block them.
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command
        .spawn()
        .map_err(|err| format!("cannot run {program}: {err}"))?;
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => {
                return child
                    .wait_with_output()
                    .map_err(|err| format!("cannot read what {program} printed: {err}"));
            }
            Ok(None) if Instant::now() < deadline => thread::sleep(POLL),
            outcome => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(match outcome {
                    Err(err) => format!("cannot wait for {program}: {err}"),
                    _ => format!("{program} did not finish within {limit:?}"),
                });
            }
        }
    }
}

/// Removes the System V shared memory segment that a killed server left, named in its
/// `postmaster.pid`, before its data directory goes: a server started on that directory
/// would remove it, but a rebuilt one never sees it. Nothing is removed that a process
/// still attaches.
fn forget_shared_memory(data: &Path) {
    let Ok(pid_file) = fs::read_to_string(data.join("postmaster.pid")) else {
        return;
    };
    // The seventh line holds the segment's key and id.
    let Some(id) = pid_file
        .lines()
        .nth(6)
        .and_then(|line| line.split_whitespace().nth(1)?.parse::<libc::c_int>().ok())
    else {
        return;
    };
    // SAFETY: shmid_ds is plain old data, for which all zeroes is a valid value; shmctl
    // writes into it and has no other memory-safety preconditions.
    unsafe {
        let mut status: libc::shmid_ds = std::mem::zeroed();
        if libc::shmctl(id, libc::IPC_STAT, &raw mut status) == 0 && status.shm_nattch == 0 {
            libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program;

    /// How many rows `t` has on member `i`, if it has the table yet.
    fn try_rows(cluster: &PostgresReplicated, i: usize) -> Option<usize> {
        cluster.sql(i, "SELECT count(*) FROM t").ok()?.parse().ok()
    }

    fn rows(cluster: &PostgresReplicated, i: usize) -> usize {
        try_rows(cluster, i).expect("a count of the rows")
    }

    /// Waits until member `i` has `n` rows.
    fn wait_rows(cluster: &PostgresReplicated, i: usize, n: usize) {
        cluster.settle(&format!("replay row {n}"), i, |c| try_rows(c, i) == Some(n));
    }

    /// How many rules in `INPUT` carry `comment`.
    fn our_rules(comment: &str) -> usize {
        let output = Command::new(program::find_on_path("iptables", "iptables"))
            .args(["-w", "5", "-S", "INPUT"])
            .output()
            .expect("iptables runs");
        let listed = String::from_utf8_lossy(&output.stdout).into_owned();
        listed.matches(&format!("--comment {comment} ")).count()
    }

    #[test]
    fn a_cut_loses_writes_a_failover_forgets_them_and_the_old_primary_follows() {
        let started = Instant::now();
        let mut cluster = PostgresReplicated::start();
        eprintln!("started in {:?}", started.elapsed());
        assert_eq!(cluster.primary(), Some(0));
        cluster.sql(0, "CREATE TABLE t (x int)").unwrap();
        cluster.sql(0, "INSERT INTO t VALUES (1)").unwrap();
        wait_rows(&cluster, 1, 1);

        // Partitioned, the primary keeps its clients; mended, the standby catches up.
        cluster.partition(0, true);
        let comment = cluster.cut.comment.clone();
        assert_eq!(our_rules(&comment), 4);
        cluster.sql(0, "INSERT INTO t VALUES (2)").unwrap();
        thread::sleep(Duration::from_millis(500));
        assert_eq!(rows(&cluster, 1), 1, "the standby streamed through the cut");
        cluster.partition(0, false);
        assert_eq!(our_rules(&comment), 0);
        let mended = Instant::now();
        wait_rows(&cluster, 1, 2);
        eprintln!("caught up {:?} after the mend", mended.elapsed());

        // Writes acknowledged during the lag are lost by the failover.
        let writer = {
            let url = cluster.member_url(0);
            let psql = cluster.bin.join("psql");
            thread::spawn(move || {
                let mut acknowledged = 0;
                let deadline = Instant::now() + Duration::from_secs(10);
                while Instant::now() < deadline {
                    let insert = Command::new(&psql)
                        .args(["-X", "-q", "-d", &url, "-c", "INSERT INTO t VALUES (3)"])
                        .env("PGCONNECT_TIMEOUT", "1")
                        .output();
                    if !insert.is_ok_and(|out| out.status.success()) {
                        break;
                    }
                    acknowledged += 1;
                }
                acknowledged
            })
        };
        thread::sleep(Duration::from_millis(100));
        let failing = Instant::now();
        assert_eq!(cluster.fail_over(Duration::from_millis(500)), (0, 1));
        eprintln!("failed over in {:?}", failing.elapsed());
        let acknowledged = writer.join().unwrap();
        assert!(acknowledged > 0);
        let kept = rows(&cluster, 1);
        eprintln!(
            "{acknowledged} writes acknowledged after the first two; the new primary has {kept} rows"
        );
        assert!(
            kept < 2 + acknowledged,
            "the promoted standby has every one of the {acknowledged} writes"
        );
        assert_eq!(cluster.primary(), Some(1));
        assert_eq!(cluster.pid(0), None);

        let restarting = Instant::now();
        cluster.restart(0);
        eprintln!("rebuilt the old primary in {:?}", restarting.elapsed());
        assert_eq!(our_rules(&comment), 0);
        assert_eq!(cluster.sql(0, ROLE).as_deref(), Ok("t|0"));
        cluster.sql(1, "INSERT INTO t VALUES (4)").unwrap();
        wait_rows(&cluster, 0, kept + 1);

        // And back, with no lag; then the standby crashes and comes back.
        assert_eq!(cluster.fail_over(Duration::ZERO), (1, 0));
        cluster.restart(1);
        assert_eq!(cluster.primary(), Some(0));
        cluster.kill(1);
        assert_eq!(cluster.pid(1), None);
        cluster.restart(1);
        cluster.sql(0, "INSERT INTO t VALUES (5)").unwrap();
        wait_rows(&cluster, 1, kept + 2);
        cluster.partition(1, true);
        drop(cluster);
        assert_eq!(our_rules(&comment), 0);
        eprintln!("the whole test took {:?}", started.elapsed());
    }
}
