//! The fleet: `snowmint serve` processes on one registry, each with a state directory on a
//! tmpfs of its own (so it can be made read-only or full), and a wall clock of its own that
//! the campaign steps through libfaketime.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock, mpsc};
use std::time::Duration;

use anyhow::{Context, bail};
use snowmint_testkit::{LeaseTimes, ServeCommand, Serving};
use tokio::task::AbortHandle;

use super::checker::Incarnation;
use super::net::{Netns, relay_in};
use super::sys::{Cleanup, mount_tmpfs, signal};
use super::{Epoch, Event};

/// Lease settings short enough that a stop past the TTL is cheap: a 3 s TTL renewed every
/// 500 ms, issuing stopped 300 ms before it could end (the tests' short lease).
const LEASE_TIMES: LeaseTimes = LeaseTimes::SHORT;
/// How long a lease lasts.
pub const LEASE_TTL: Duration = Duration::from_millis(LEASE_TIMES.ttl_ms);
/// The safety margin: issuing stops this long before a lease could end.
pub const LEASE_MARGIN: Duration = Duration::from_millis(LEASE_TIMES.margin_ms);
/// How far ahead a server reserves its high-water mark (the server's default, passed so
/// that the campaign's figures cannot drift from it): a `file` registry's holder issues up
/// to this far past its last reservation.
pub const RESERVE_AHEAD: Duration = Duration::from_millis(1_000);
/// The largest batch a server gives.
pub const MAX_BATCH: u64 = 100_000;
/// Each state directory's tmpfs: room for the state files, small enough to fill at once.
const STATE_TMPFS_KB: u64 = 1_024;
/// How long a server may take to log its address.
const START_LIMIT: Duration = Duration::from_secs(30);

/// Where clients find one process.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// HTTP, on this namespace's loopback.
    pub http: SocketAddr,
    /// gRPC, on this namespace's loopback.
    pub grpc: SocketAddr,
    /// Which process it is.
    pub incarnation: u32,
}

/// Each slot's current process, if one runs.
pub type Targets = Arc<Vec<RwLock<Option<Target>>>>;

/// One server slot and its current process.
pub struct Slot {
    /// `s0`, `s1`, ...
    pub name: String,
    identity: String,
    machines: u32,
    /// Whether it runs `--clock wall`.
    pub wall: bool,
    /// Whether it runs in the namespace (the one partitioned).
    pub isolated: bool,
    /// Its state directory, a tmpfs.
    pub state: PathBuf,
    clock_dir: PathBuf,
    log: PathBuf,
    child: Option<Serving>,
    relays: Vec<AbortHandle>,
}

/// The servers, and what they need to start again.
pub struct Fleet {
    /// The slots.
    pub slots: Vec<Slot>,
    program: PathBuf,
    lease: String,
    isolated_lease: Option<String>,
    netns: Option<Arc<Netns>>,
    /// What clients read.
    pub targets: Targets,
    events: mpsc::Sender<Event>,
    epoch: Epoch,
    runtime: tokio::runtime::Handle,
    incarnations: u32,
}

/// libfaketime's thread-safe preload library (`scripts/setup` installs it): a campaign
/// without it fails.
fn libfaketime_mt() -> anyhow::Result<PathBuf> {
    [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib",
    ]
    .iter()
    .map(|dir| Path::new(dir).join("faketime").join("libfaketimeMT.so.1"))
    .find(|path| path.exists())
    .context("libfaketime is not installed: run scripts/setup")
}

/// What [`Fleet::new`] takes.
pub struct Plan<'a> {
    pub program: PathBuf,
    pub servers: usize,
    pub work: &'a Path,
    pub lease: String,
    pub isolated_lease: Option<String>,
    pub netns: Option<Arc<Netns>>,
    pub events: mpsc::Sender<Event>,
    pub epoch: Epoch,
    pub runtime: tokio::runtime::Handle,
}

impl Fleet {
    /// Prepares the slots (mounts their state directories) without starting them. Odd
    /// slots run `--clock wall`; the last runs in the namespace, if there is one.
    pub fn new(plan: Plan<'_>, cleanup: &Cleanup) -> anyhow::Result<Fleet> {
        libfaketime_mt()?;
        let mut slots = Vec::new();
        for i in 0..plan.servers {
            let name = format!("s{i}");
            let root = plan.work.join(&name);
            let state = root.join("state");
            mount_tmpfs(cleanup, &state, STATE_TMPFS_KB)?;
            let clock_dir = root.join("clock");
            std::fs::create_dir_all(&clock_dir)?;
            let slot = Slot {
                identity: format!("chaos-{name}"),
                name,
                machines: 0,
                wall: i % 2 == 1,
                isolated: plan.netns.is_some() && i + 1 == plan.servers,
                state,
                clock_dir,
                log: root.join("serve.log"),
                child: None,
                relays: Vec::new(),
            };
            slot.step_clock("+0")?;
            slots.push(slot);
        }
        let targets = Arc::new((0..plan.servers).map(|_| RwLock::new(None)).collect());
        Ok(Fleet {
            slots,
            program: plan.program,
            lease: plan.lease,
            isolated_lease: plan.isolated_lease,
            netns: plan.netns,
            targets,
            events: plan.events,
            epoch: plan.epoch,
            runtime: plan.runtime,
            incarnations: 0,
        })
    }

    /// Starts slot `i` and publishes its addresses once it has logged them.
    pub fn start(&mut self, i: usize) -> anyhow::Result<()> {
        let slot = &mut self.slots[i];
        let lease = match (&self.isolated_lease, slot.isolated) {
            (Some(url), true) => url.as_str(),
            _ => self.lease.as_str(),
        };
        let mut serve = ServeCommand::new(&self.program, &slot.state)
            .grpc_addr("127.0.0.1:0")
            .lease(lease, &slot.identity, LEASE_TIMES)
            .arg("--max-batch")
            .arg(MAX_BATCH.to_string())
            .arg("--reserve-ahead-ms")
            .arg(RESERVE_AHEAD.as_millis().to_string());
        if slot.wall {
            serve = serve.args(["--clock", "wall"]);
        }
        if let (Some(netns), true) = (&self.netns, slot.isolated) {
            serve = serve.launcher(["ip", "netns", "exec", &netns.name]);
        }
        let mut cmd = serve.command();
        // `FAKETIME` in the environment would win over the file.
        cmd.env_remove("FAKETIME")
            .env("LD_PRELOAD", libfaketime_mt()?)
            .env("FAKETIME_TIMESTAMP_FILE", slot.clock_dir.join("faketime"))
            .env("FAKETIME_NO_CACHE", "1")
            .env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
        let child = Serving::spawn(cmd)
            .with_context(|| format!("cannot start {}", self.program.display()))?;
        let pid = child.pid();
        let child = slot.child.insert(child);
        let started = self.epoch.now();
        let mut log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&slot.log)?;
        writeln!(log, "--- pid {pid} at {:.3} s", started as f64 / 1e6)?;
        let logged = child
            .addresses(START_LIMIT, move |line| {
                let _ = writeln!(log, "{line}");
            })
            .with_context(|| format!("{}: see {}", slot.name, slot.log.display()))?;
        let mut http = logged.http;
        let mut grpc = logged
            .grpc
            .with_context(|| format!("{} logged no grpc address", slot.name))?;
        for relay in slot.relays.drain(..) {
            relay.abort();
        }
        if let (Some(netns), true) = (&self.netns, slot.isolated) {
            let (near_http, a) = self.runtime.block_on(relay_in(netns.clone(), http))?;
            let (near_grpc, b) = self.runtime.block_on(relay_in(netns.clone(), grpc))?;
            slot.relays = vec![a, b];
            (http, grpc) = (near_http, near_grpc);
        }
        let incarnation = self.incarnations;
        self.incarnations += 1;
        let _ = self.events.send(Event::Incarnation(
            incarnation,
            Incarnation {
                slot: i,
                pid,
                started,
            },
        ));
        *self.targets[i].write().unwrap_or_else(|e| e.into_inner()) = Some(Target {
            http,
            grpc,
            incarnation,
        });
        Ok(())
    }

    /// Kills slot `i` with SIGKILL, as a crash would, and waits for it.
    pub fn kill(&mut self, i: usize) -> anyhow::Result<()> {
        *self.targets[i].write().unwrap_or_else(|e| e.into_inner()) = None;
        let slot = &mut self.slots[i];
        if let Some(mut child) = slot.child.take() {
            child.kill().context("SIGKILL")?;
        }
        Ok(())
    }

    /// The pid of slot `i`'s process.
    pub fn pid(&self, i: usize) -> anyhow::Result<u32> {
        match &self.slots[i].child {
            Some(child) => Ok(child.pid()),
            None => bail!("{} is not running", self.slots[i].name),
        }
    }

    /// Sends SIGSTOP (`true`) or SIGCONT to slot `i`.
    pub fn freeze(&self, i: usize, stop: bool) -> anyhow::Result<()> {
        signal(
            self.pid(i)?,
            if stop { libc::SIGSTOP } else { libc::SIGCONT },
        )
    }

    /// Empties slot `i`'s state directory and gives it a new identity: the same slot on a
    /// new machine. It must not be running.
    pub fn new_machine(&mut self, i: usize) -> anyhow::Result<()> {
        let slot = &mut self.slots[i];
        for entry in std::fs::read_dir(&slot.state)? {
            let path = entry?.path();
            if path.is_dir() {
                std::fs::remove_dir_all(&path)?;
            } else {
                std::fs::remove_file(&path)?;
            }
        }
        slot.machines += 1;
        slot.identity = format!("chaos-{}-m{}", slot.name, slot.machines);
        Ok(())
    }
}

impl Slot {
    /// Steps this slot's wall clock to `offset` from the real one (`"-10s"`, `"+1h"`,
    /// `"+0"`): written beside the file and renamed over it, so that no reading meets half
    /// an offset.
    pub fn step_clock(&self, offset: &str) -> anyhow::Result<()> {
        let next = self.clock_dir.join("faketime.next");
        std::fs::write(&next, format!("{offset}\n"))?;
        std::fs::rename(&next, self.clock_dir.join("faketime"))?;
        Ok(())
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for slot in &mut self.slots {
            // A stopped process dies of SIGKILL too.
            drop(slot.child.take());
            for relay in slot.relays.drain(..) {
                relay.abort();
            }
        }
    }
}
