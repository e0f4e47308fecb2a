//! Three real Redis Sentinels watching a primary and its replicas, quick to fail over, so
//! that a test can kill the primary and see a replica promoted in a couple of seconds.

use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use crate::instance::{Instance, Kind};
use crate::program;
use crate::redis::{Redis, answers_ping, query};

/// What the guard needs to know to run a sentinel on a port of its own: `redis-server`
/// in sentinel mode, which Debian's `redis-server` package runs as well as
/// `redis-sentinel` would.
const KIND: Kind = Kind {
    name: "sentinel",
    program: "redis-server",
    stop_signal: libc::SIGTERM,
    ready: answers_ping,
};

/// The name the sentinels know the primary by.
pub const PRIMARY_NAME: &str = "snowmint";
/// How many sentinels there are, and how many must agree that the primary is down.
const SENTINELS: usize = 3;
const QUORUM: usize = 2;
/// How long the primary may be silent before a sentinel thinks it down: short, so that a
/// failover takes about two seconds.
const DOWN_AFTER_MS: u64 = 500;
/// How long a failover may take before another is tried (twice this).
const FAILOVER_TIMEOUT_MS: u64 = 2_000;
/// How long the sentinels may take to know one another and the replicas, or to fail over.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(50);

/// Three sentinels on free loopback ports watching a primary under [`PRIMARY_NAME`],
/// quorum two, a server down after 500 ms of silence; stopped when dropped.
///
/// ```no_run
/// use snowmint_testkit::{Redis, Sentinels, Server};
///
/// let mut primary = Redis::start();
/// let replica = Redis::start_replica(&primary);
/// let sentinels = Sentinels::start(&primary);
/// assert_eq!(sentinels.primary_port(), Some(primary.port()));
/// assert!(sentinels.url().starts_with("redis+sentinel://127.0.0.1:"));
///
/// primary.kill();
/// assert_eq!(sentinels.wait_for_failover(primary.port()), replica.port());
/// assert!(replica.info("replication").contains("role:master"));
/// ```
pub struct Sentinels {
    sentinels: Vec<Instance>,
}

impl Sentinels {
    /// Starts three sentinels watching `primary`, and waits until each knows the other two
    /// and every replica connected to the primary: from then on, killing the primary makes
    /// them promote a replica. Start the replicas first.
    ///
    /// # Panics
    ///
    /// If `redis-server` is not on `PATH`, a sentinel does not answer, or they do not know
    /// one another and the replicas within 30 seconds.
    #[must_use]
    #[track_caller]
    pub fn start(primary: &Redis) -> Sentinels {
        let program = program::find_on_path("redis-server", "redis-server");
        let mut sentinels: Vec<Instance> = Vec::new();
        for _ in 0..SENTINELS {
            // Each is told of those started before it; they tell it of themselves in turn
            // (every two seconds, over the primary).
            let known: Vec<u16> = sentinels.iter().map(|s| s.port).collect();
            let instance = Instance::start(&KIND, |port, dir| {
                let config = dir.join("sentinel.conf");
                fs::write(&config, config_text(port, dir, primary.port(), &known))
                    .unwrap_or_else(|err| panic!("cannot write {}: {err}", config.display()));
                let program = program.clone();
                move || {
                    let mut command = Command::new(&program);
                    command.arg(&config).arg("--sentinel");
                    command
                }
            });
            sentinels.push(instance);
        }
        let sentinels = Sentinels { sentinels };
        let replicas = replica_count(primary);
        sentinels.settle("know one another and the replicas", |master| {
            master.get("num-other-sentinels") == Some(&(SENTINELS - 1).to_string())
                && master.get("num-slaves") == Some(&replicas.to_string())
        });
        sentinels
    }

    /// The sentinels' URL for the primary, as `snowmint serve --lease` takes it:
    /// `redis+sentinel://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3/snowmint`.
    #[must_use]
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .ports()
            .iter()
            .map(|port| format!("127.0.0.1:{port}"))
            .collect();
        format!("redis+sentinel://{}/{PRIMARY_NAME}", hosts.join(","))
    }

    /// The sentinels' ports.
    #[must_use]
    pub fn ports(&self) -> Vec<u16> {
        self.sentinels.iter().map(|s| s.port).collect()
    }

    /// Stops the sentinel at `index` (0, 1 or 2) cleanly, as a lost sentinel; the others
    /// go on without it.
    ///
    /// # Panics
    ///
    /// If there is no sentinel at `index`.
    pub fn stop(&mut self, index: usize) {
        self.sentinels[index].daemon.stop();
    }

    /// The port of the primary, when every running sentinel names the same one.
    #[must_use]
    pub fn primary_port(&self) -> Option<u16> {
        let running = self.sentinels.iter().filter(|s| s.daemon.pid().is_some());
        let mut named = running.map(|s| named_primary(s.port));
        let first = named.next()??;
        named.all(|port| port == Some(first)).then_some(first)
    }

    /// Waits until every sentinel names a primary other than the one on `old` and that
    /// server says it is a primary; answers its port.
    ///
    /// # Panics
    ///
    /// If that takes more than 30 seconds; the message quotes the first sentinel's log.
    #[track_caller]
    #[must_use]
    pub fn wait_for_failover(&self, old: u16) -> u16 {
        let deadline = Instant::now() + SETTLE_TIMEOUT;
        loop {
            if let Some(port) = self.primary_port()
                && port != old
                && query::<String>(port, redis::cmd("INFO").arg("replication"))
                    .is_ok_and(|info| info.contains("role:master"))
            {
                return port;
            }
            if Instant::now() >= deadline {
                panic!(
                    "the sentinels promoted no replica of port {old} within {SETTLE_TIMEOUT:?}; {}",
                    self.first_log()
                );
            }
            thread::sleep(POLL);
        }
    }

    /// Waits until what every sentinel says of the primary (`SENTINEL MASTER`) satisfies
    /// `settled`.
    #[track_caller]
    fn settle(&self, what: &str, settled: impl Fn(&HashMap<String, String>) -> bool) {
        let deadline = Instant::now() + SETTLE_TIMEOUT;
        loop {
            let all = self.ports().into_iter().all(|port| {
                let master = query::<HashMap<String, String>>(
                    port,
                    redis::cmd("SENTINEL").arg("MASTER").arg(PRIMARY_NAME),
                );
                master.is_ok_and(|master| settled(&master))
            });
            if all {
                return;
            }
            if Instant::now() >= deadline {
                panic!(
                    "the sentinels did not {what} within {SETTLE_TIMEOUT:?}; {}",
                    self.first_log()
                );
            }
            thread::sleep(POLL);
        }
    }

    fn first_log(&self) -> String {
        let path = self.sentinels[0].dir.path().join("sentinel.log");
        let log = fs::read_to_string(&path).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        let tail = lines[lines.len().saturating_sub(20)..].join("\n");
        format!("the end of {}:\n{tail}", path.display())
    }
}

/// The configuration of the sentinel on `port`, which keeps its state in `dir`: it watches
/// the primary on `primary`, and knows the sentinels on `known`. A sentinel's id is its
/// port, in 40 hex digits, so that others can be told of it before it starts.
fn config_text(port: u16, dir: &Path, primary: u16, known: &[u16]) -> String {
    let mut text = format!(
        "port {port}\nbind 127.0.0.1\ndir \"{}\"\nsentinel myid {port:040x}\n\
         sentinel monitor {PRIMARY_NAME} 127.0.0.1 {primary} {QUORUM}\n\
         sentinel down-after-milliseconds {PRIMARY_NAME} {DOWN_AFTER_MS}\n\
         sentinel failover-timeout {PRIMARY_NAME} {FAILOVER_TIMEOUT_MS}\n",
        dir.display()
    );
    for other in known {
        text.push_str(&format!(
            "sentinel known-sentinel {PRIMARY_NAME} 127.0.0.1 {other} {other:040x}\n"
        ));
    }
    text
}

/// The port of the primary the sentinel on `port` names, if it answers.
fn named_primary(port: u16) -> Option<u16> {
    let address: Vec<String> = query(
        port,
        redis::cmd("SENTINEL")
            .arg("GET-MASTER-ADDR-BY-NAME")
            .arg(PRIMARY_NAME),
    )
    .ok()?;
    address.get(1)?.parse().ok()
}

/// How many replicas are connected to `primary`.
#[track_caller]
fn replica_count(primary: &Redis) -> usize {
    primary
        .info("replication")
        .lines()
        .find_map(|line| line.strip_prefix("connected_slaves:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}
