//! The faults, on a schedule drawn from a seed: the same seed, the same schedule.

mod cluster;
mod restore;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;

use super::checker::FaultRecord;
use super::fleet::{Fleet, LEASE_TTL};
use super::net::Netns;
use super::registry::{self, Registry};
use super::sys::{read_only, signal};
use super::{Epoch, Event};

/// Past the lease's TTL, so someone else may take the worker id meanwhile.
const PAST_TTL: Duration = Duration::from_millis(LEASE_TTL.as_millis() as u64 + 1_500);
/// How long a clock stays stepped, a link cut, a disk full.
const HOLD: Duration = Duration::from_secs(4);
/// How long a killed server (or registry) stays down.
const DOWN: Duration = Duration::from_secs(1);

/// Each kind of fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// SIGKILL, then a restart with the same state and identity.
    Kill,
    /// SIGSTOP past the lease TTL, then SIGCONT: the zombie holder.
    Stop,
    /// The wall clock of a running server stepped back 10 s, then forward again.
    StepBack10s,
    /// ... back an hour.
    StepBack1h,
    /// ... forward an hour, then back.
    StepForward1h,
    /// SIGKILL, then a restart with the clock 10 s behind.
    RestartClockBack,
    /// SIGKILL, then a successor on a new machine: empty state, new identity, clock 3 s
    /// behind.
    NewMachine,
    /// The registry killed with SIGKILL and restarted.
    RegistryKill,
    /// The registry stopped past the lease TTL.
    RegistryStop,
    /// The registry backed up; a server moved to a new machine, taking a worker id the
    /// backup does not record; the registry killed, the backup put back, started; another
    /// server moved to a new machine, a newcomer with an empty state directory.
    RegistryRestore,
    /// A Redis without persistence: killed, restarted from nothing; a server moved to a
    /// new machine, a newcomer with an empty state directory.
    RegistryRestartEmpty,
    /// The isolated server cut from the registry past the lease TTL.
    Partition,
    /// The isolated server's link to the registry throttled to a trickle.
    Throttle,
    /// A server's state directory remounted read-only.
    ReadOnly,
    /// A server's state directory filled to the last byte.
    DiskFull,
    /// A member of a clustered registry (a replica where replication is asynchronous; any
    /// member, the leader too, where the cluster agrees on every write) killed with
    /// SIGKILL and restarted.
    MemberKill,
    /// The cluster's primary cut off from the others' replication while it acknowledges
    /// writes for a second, killed, another member promoted; the old primary rejoins as a
    /// follower. Where replication is asynchronous the records go back to the cut.
    Failover,
    /// A member of the cluster (the primary, or another as the seed draws) cut off from
    /// its peers past the lease TTL, keeping its clients, then mended.
    MemberPartition,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 18] = [
        Kind::Kill,
        Kind::Stop,
        Kind::StepBack10s,
        Kind::StepBack1h,
        Kind::StepForward1h,
        Kind::RestartClockBack,
        Kind::NewMachine,
        Kind::RegistryKill,
        Kind::RegistryStop,
        Kind::RegistryRestore,
        Kind::RegistryRestartEmpty,
        Kind::Partition,
        Kind::Throttle,
        Kind::ReadOnly,
        Kind::DiskFull,
        Kind::MemberKill,
        Kind::Failover,
        Kind::MemberPartition,
    ];

    /// Its name in the report.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Kill => "kill-restart",
            Kind::Stop => "stop-past-ttl",
            Kind::StepBack10s => "clock-step-10s",
            Kind::StepBack1h => "clock-step-1h",
            Kind::StepForward1h => "clock-step+1h",
            Kind::RestartClockBack => "restart-clock-back",
            Kind::NewMachine => "new-machine-successor",
            Kind::RegistryKill => "registry-kill",
            Kind::RegistryStop => "registry-stop-past-ttl",
            Kind::RegistryRestore => "registry-restore",
            Kind::RegistryRestartEmpty => "registry-restart-empty",
            Kind::Partition => "partition",
            Kind::Throttle => "throttle",
            Kind::ReadOnly => "state-read-only",
            Kind::DiskFull => "disk-full",
            Kind::MemberKill => "member-kill",
            Kind::Failover => "failover",
            Kind::MemberPartition => "member-partition",
        }
    }

    /// Whether it needs a registry process (not the `file` registry's directory) and the
    /// namespace.
    fn needs_network(self) -> bool {
        matches!(
            self,
            Kind::RegistryKill | Kind::RegistryStop | Kind::Partition | Kind::Throttle
        )
    }

    /// Whether it rolls the registry's records back: a round has one such fault.
    fn is_restore(self) -> bool {
        matches!(self, Kind::RegistryRestore | Kind::RegistryRestartEmpty)
    }

    /// Whether it hits the members of a clustered registry.
    fn is_cluster(self) -> bool {
        matches!(
            self,
            Kind::MemberKill | Kind::Failover | Kind::MemberPartition
        )
    }

    /// Whether it can hit a fleet on `registry`, a cluster if `clustered`: a `file`
    /// registry has no process and no network; only Redis is run without persistence, as
    /// a cache. A cluster takes the servers' faults and its own, and its servers reach its
    /// members straight, with no namespace between.
    fn fits(self, registry: registry::Kind, clustered: bool) -> bool {
        if clustered {
            return self.is_cluster() || !(self.needs_network() || self.is_restore());
        }
        match self {
            _ if self.is_cluster() => false,
            Kind::RegistryRestartEmpty => registry == registry::Kind::Redis,
            _ => registry != registry::Kind::File || !self.needs_network(),
        }
    }
}

/// One planned fault.
#[derive(Debug, Clone, Copy)]
pub struct Planned {
    /// When it begins, after the campaign's start.
    pub at: Duration,
    /// What it is.
    pub kind: Kind,
    /// The server slot it hits (for server faults).
    pub slot: usize,
}

/// A seeded generator (splitmix64): the schedule depends on the seed alone.
pub struct Rng(u64);

impl Rng {
    /// Seeded with `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next number.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// The schedule: `rounds` rounds, each with every kind that fits the registry once, but
/// one restore of a seeded kind, in a seeded order (the `ci` profile has one round), then
/// random kinds until `until`; a fault every 0.5 to 2 s after the one before it ends (as
/// planned).
pub fn schedule(
    seed: u64,
    servers: usize,
    (registry, clustered): (registry::Kind, bool),
    rounds: usize,
    until: Duration,
) -> Vec<Planned> {
    let mut rng = Rng::new(seed);
    let kinds: Vec<Kind> = Kind::ALL
        .into_iter()
        .filter(|k| k.fits(registry, clustered))
        .collect();
    let (restores, others): (Vec<Kind>, Vec<Kind>) = kinds.iter().partition(|k| k.is_restore());
    let mut order = Vec::new();
    for _ in 0..rounds {
        let mut round = others.clone();
        if !restores.is_empty() {
            round.push(restores[rng.below(restores.len() as u64) as usize]);
        }
        for i in (1..round.len()).rev() {
            round.swap(i, rng.below(i as u64 + 1) as usize);
        }
        order.extend(round);
    }
    let mut at = Duration::from_secs(3);
    let mut plan = Vec::new();
    let mut next = 0;
    loop {
        let kind = if next < order.len() {
            order[next]
        } else if at < until {
            kinds[rng.below(kinds.len() as u64) as usize]
        } else {
            break;
        };
        next += 1;
        // A Redis restarted from nothing also forgets the marks that keep later holders
        // above the ids a server issued while its clock was stepped an hour ahead: far past
        // the safety margin the lease assumes clocks keep to (OPERATIONS, "When the registry
        // loses writes"), so those ids would be issued again. Once such a step is planned,
        // a restore comes from a backup taken after it instead.
        let kind = if kind == Kind::RegistryRestartEmpty
            && plan.iter().any(|p: &Planned| p.kind == Kind::StepForward1h)
        {
            Kind::RegistryRestore
        } else {
            kind
        };
        let slot = match kind {
            Kind::Partition | Kind::Throttle => servers - 1,
            _ => rng.below(servers as u64) as usize,
        };
        plan.push(Planned { at, kind, slot });
        at += length(kind) + Duration::from_millis(500 + rng.below(1_500));
    }
    plan
}

/// About how long a fault lasts, for the schedule.
fn length(kind: Kind) -> Duration {
    match kind {
        Kind::Kill | Kind::RegistryKill => DOWN + Duration::from_secs(1),
        Kind::Stop | Kind::RegistryStop | Kind::Partition => PAST_TTL,
        Kind::RestartClockBack | Kind::NewMachine => DOWN + HOLD + Duration::from_secs(1),
        Kind::RegistryRestore => restore::LENGTH + HOLD + LEASE_TTL,
        Kind::RegistryRestartEmpty => restore::LENGTH,
        Kind::MemberKill => DOWN + Duration::from_secs(1),
        Kind::Failover => cluster::LENGTH,
        Kind::MemberPartition => PAST_TTL,
        _ => HOLD,
    }
}

/// What the faults act on.
pub struct Target<'a> {
    pub fleet: &'a mut Fleet,
    pub registry: &'a mut Registry,
    /// Where backups of the registry are kept.
    pub backups: &'a std::path::Path,
    /// The runtime the campaign's own leases run on.
    pub runtime: &'a tokio::runtime::Handle,
    pub netns: Option<&'a Netns>,
    pub events: &'a std::sync::mpsc::Sender<Event>,
    pub epoch: Epoch,
    pub stop: &'a Arc<AtomicBool>,
}

/// Waits `span`, or less if the campaign is told to stop: a fault still undoes itself.
fn hold(span: Duration) {
    std::thread::sleep(span);
}

/// Injects `planned` faults at their times, each undone before the next.
pub fn inject(target: &mut Target<'_>, planned: &[Planned]) -> anyhow::Result<()> {
    for fault in planned {
        while target.epoch.now() < fault.at.as_micros() as u64 {
            if target.stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let start = target.epoch.now();
        let name = fault_target(target, fault);
        println!(
            "{:8.3} s  {:<24} {name}",
            start as f64 / 1e6,
            fault.kind.name()
        );
        apply(target, fault).with_context(|| format!("fault {} on {name}", fault.kind.name()))?;
        let _ = target.events.send(Event::Fault(FaultRecord {
            start,
            end: target.epoch.now(),
            kind: fault.kind.name(),
            target: name,
        }));
    }
    Ok(())
}

fn fault_target(target: &Target<'_>, fault: &Planned) -> String {
    match fault.kind {
        Kind::RegistryKill | Kind::RegistryStop => "registry".into(),
        Kind::RegistryRestore | Kind::RegistryRestartEmpty => restore::target(target, fault),
        Kind::MemberKill | Kind::Failover | Kind::MemberPartition => cluster::target(target, fault),
        _ => {
            let slot = &target.fleet.slots[fault.slot];
            format!(
                "{} ({} clock{})",
                slot.name,
                if slot.wall { "wall" } else { "default" },
                if slot.isolated { ", isolated" } else { "" }
            )
        }
    }
}

fn apply(target: &mut Target<'_>, fault: &Planned) -> anyhow::Result<()> {
    let i = fault.slot;
    let fleet = &mut *target.fleet;
    match fault.kind {
        Kind::Kill => {
            fleet.kill(i)?;
            hold(DOWN);
            fleet.start(i)?;
        }
        Kind::Stop => {
            fleet.freeze(i, true)?;
            hold(PAST_TTL);
            fleet.freeze(i, false)?;
        }
        Kind::StepBack10s | Kind::StepBack1h | Kind::StepForward1h => {
            let offset = match fault.kind {
                Kind::StepBack10s => "-10s",
                Kind::StepBack1h => "-3600s",
                _ => "+3600s",
            };
            fleet.slots[i].step_clock(offset)?;
            hold(HOLD);
            fleet.slots[i].step_clock("+0")?;
        }
        Kind::RestartClockBack | Kind::NewMachine => {
            fleet.kill(i)?;
            let offset = if fault.kind == Kind::NewMachine {
                fleet.new_machine(i)?;
                "-3s"
            } else {
                "-10s"
            };
            fleet.slots[i].step_clock(offset)?;
            hold(DOWN);
            fleet.start(i)?;
            hold(HOLD);
            fleet.slots[i].step_clock("+0")?;
        }
        Kind::RegistryKill => {
            let registry = target.registry.process().context("no registry process")?;
            registry.kill();
            hold(DOWN);
            registry.restart();
        }
        Kind::RegistryStop => {
            let registry = target.registry.process().context("no registry process")?;
            let pid = registry.pid().context("the registry is not running")?;
            signal(pid, libc::SIGSTOP)?;
            hold(PAST_TTL);
            signal(pid, libc::SIGCONT)?;
        }
        Kind::RegistryRestore => restore::from_backup(target, fault)?,
        Kind::RegistryRestartEmpty => restore::from_nothing(target, fault)?,
        Kind::MemberKill => cluster::kill(target, fault)?,
        Kind::Failover => cluster::fail_over(target)?,
        Kind::MemberPartition => cluster::partition(target, fault)?,
        Kind::Partition => {
            let netns = target.netns.context("no namespace")?;
            netns.link(false)?;
            hold(PAST_TTL);
            netns.link(true)?;
        }
        Kind::Throttle => {
            let netns = target.netns.context("no namespace")?;
            netns.throttle(true)?;
            hold(HOLD);
            netns.throttle(false)?;
        }
        Kind::ReadOnly => {
            read_only(&fleet.slots[i].state, true)?;
            hold(HOLD);
            read_only(&fleet.slots[i].state, false)?;
        }
        Kind::DiskFull => {
            let filler = fleet.slots[i].state.join("filler");
            fill(&filler)?;
            hold(HOLD);
            std::fs::remove_file(&filler)?;
        }
    }
    Ok(())
}

/// Writes `path` until the file system has no room left.
fn fill(path: &std::path::Path) -> anyhow::Result<()> {
    use std::io::Write;
    let mut file = std::fs::File::create(path)?;
    let block = vec![0u8; 64 * 1024];
    loop {
        match file.write_all(&block) {
            Ok(()) => {}
            Err(err) if err.raw_os_error() == Some(libc::ENOSPC) => break,
            Err(err) => return Err(err).context("filling the disk"),
        }
    }
    // Tail of the last block: the last bytes too.
    while let Ok(1) = file.write(&block[..1]) {}
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_one_schedule_and_ci_hits_every_kind_and_one_restore() {
        use registry::Kind::{File, Redis};
        let a = schedule(7, 4, (Redis, false), 1, Duration::ZERO);
        let b = schedule(7, 4, (Redis, false), 1, Duration::ZERO);
        let c = schedule(8, 4, (Redis, false), 1, Duration::ZERO);
        let kinds = |p: &[Planned]| p.iter().map(|f| (f.kind, f.slot)).collect::<Vec<_>>();
        assert_eq!(kinds(&a), kinds(&b));
        assert_ne!(kinds(&a), kinds(&c));
        let mut seen: Vec<Kind> = a.iter().map(|f| f.kind).collect();
        seen.sort();
        seen.dedup();
        let others: Vec<Kind> = Kind::ALL
            .into_iter()
            .filter(|k| !k.is_restore() && !k.is_cluster())
            .collect();
        assert_eq!(
            seen.iter().filter(|k| !k.is_restore()).count(),
            others.len()
        );
        assert_eq!(a.len(), others.len() + 1, "{:?}", kinds(&a));
        assert_eq!(a.iter().filter(|f| f.kind.is_restore()).count(), 1);
        let file = schedule(7, 4, (File, false), 1, Duration::ZERO);
        assert!(file.iter().all(|f| !f.kind.needs_network()));
        let restores: Vec<Kind> = file
            .iter()
            .map(|f| f.kind)
            .filter(|k| k.is_restore())
            .collect();
        assert_eq!(restores, [Kind::RegistryRestore]);
    }

    #[test]
    fn a_cluster_takes_the_servers_faults_and_its_own_and_no_restore() {
        let plan = schedule(7, 4, (registry::Kind::Redis, true), 5, Duration::ZERO);
        for kind in [
            Kind::MemberKill,
            Kind::Failover,
            Kind::MemberPartition,
            Kind::Kill,
        ] {
            assert_eq!(
                plan.iter().filter(|f| f.kind == kind).count(),
                5,
                "{kind:?}"
            );
        }
        assert!(
            plan.iter()
                .all(|f| !f.kind.is_restore() && !f.kind.needs_network())
        );
        let single = schedule(7, 4, (registry::Kind::Redis, false), 2, Duration::ZERO);
        assert!(single.iter().all(|f| !f.kind.is_cluster()));
    }

    #[test]
    fn redis_is_restored_from_a_backup_or_from_nothing_as_the_seed_draws() {
        let drawn: Vec<Kind> = (0..32)
            .filter_map(|seed| {
                schedule(seed, 4, (registry::Kind::Redis, false), 1, Duration::ZERO)
                    .into_iter()
                    .find(|f| f.kind.is_restore())
                    .map(|f| f.kind)
            })
            .collect();
        assert!(drawn.contains(&Kind::RegistryRestore));
        assert!(drawn.contains(&Kind::RegistryRestartEmpty));
        let etcd = schedule(7, 4, (registry::Kind::Etcd, false), 2, Duration::ZERO);
        assert!(etcd.iter().all(|f| f.kind != Kind::RegistryRestartEmpty));
    }

    #[test]
    fn redis_is_never_restarted_from_nothing_after_a_clock_ran_an_hour_ahead() {
        for seed in 0..64 {
            let long = schedule(
                seed,
                4,
                (registry::Kind::Redis, false),
                2,
                Duration::from_secs(600),
            );
            let stepped = long.iter().position(|f| f.kind == Kind::StepForward1h);
            let emptied = long
                .iter()
                .rposition(|f| f.kind == Kind::RegistryRestartEmpty);
            if let (Some(stepped), Some(emptied)) = (stepped, emptied) {
                assert!(emptied < stepped, "seed {seed}");
            }
            let ci = schedule(seed, 4, (registry::Kind::Redis, false), 1, Duration::ZERO);
            assert_eq!(ci.iter().filter(|f| f.kind.is_restore()).count(), 1);
        }
    }
}
