//! The registry restored while the fleet runs, as in the attack that found registries
//! forgetting live holders. From a backup:
//!
//! 1. Two servers go down (the one to move and the newcomer's), and once their leases have
//!    lapsed the campaign takes every free worker id itself but one ([`Blockers`]), as the
//!    attack did. The registry is backed up; the server comes back
//!    on a new machine (empty state, new identity) and takes the one worker id left, which
//!    the backup does not record, and issues for a while. (A `file` registry's blockers
//!    are given back then: their locks would not survive the restore.)
//! 2. That server is frozen (SIGSTOP), so that it takes nothing back before the newcomer.
//!    The registry is killed, the backup put back, and it starts again (for `file`, its
//!    files are replaced as it runs). Its records forget that holder, and on Redis, whose
//!    keys expire as they load, every holder whose lease the backup outlived.
//! 3. Meanwhile a newcomer starts on an empty state directory (another server moved to a
//!    new machine), waiting for the registry as servers do; when the records are back it
//!    takes the forgotten holder's worker id, free again at an old mark, since the
//!    blockers' leases, in the backup, hold the rest.
//! 4. The frozen server resumes and the blockers are given back.
//!
//! A Redis without persistence is the same attack from nothing: every server but the
//! newcomer frozen, the registry killed and restarted empty, then the campaign takes every
//! free worker id but the forgotten holders' while the newcomer starts.
//!
//! The checker is told when the records went back and whom they forgot ([`Rollback`]); the
//! newcomer must issue above anything a forgotten holder could have issued, which on a
//! registry that vouches for its records only since the restore means past the restore and
//! the reach (the checker's `within-reach`).

use std::time::{Duration, Instant};

use anyhow::Context;

use super::{HOLD, Planned, Target, hold};
use crate::campaign::Event;
use crate::campaign::checker::Rollback;
use crate::campaign::fleet::{Fleet, LEASE_TTL};
use crate::campaign::registry::{Backup, Blockers, Registry, holders, restart_empty};

/// How long the newcomer is watched past the reach of every holder the restore forgot.
const PAST_REACH: Duration = Duration::from_secs(2);
/// The longest wait for the newcomer's lease, while the blockers and the freeze hold.
const NEWCOMER_LIMIT: Duration = Duration::from_secs(5);

/// About how long a restore lasts after the backup, for the schedule: the registry back,
/// the newcomer started, the reach and the watch past it.
pub const LENGTH: Duration =
    Duration::from_millis(LEASE_TTL.as_millis() as u64 + PAST_REACH.as_millis() as u64 + 3_000);

/// The slot that moves to a new machine at the backup, and the newcomer's.
fn slots(target: &Target<'_>, fault: &Planned) -> (usize, usize) {
    (fault.slot, (fault.slot + 1) % target.fleet.slots.len())
}

/// What the report names as hit.
pub fn target(target: &Target<'_>, fault: &Planned) -> String {
    let (moved, newcomer) = slots(target, fault);
    let newcomer = &target.fleet.slots[newcomer].name;
    match fault.kind {
        super::Kind::RegistryRestore => format!(
            "registry; {} moves at the backup, {newcomer} at the restore",
            target.fleet.slots[moved].name
        ),
        _ => format!("registry; {newcomer} moves after the restart"),
    }
}

/// Steps 1 to 4, from a backup.
pub fn from_backup(target: &mut Target<'_>, fault: &Planned) -> anyhow::Result<()> {
    let (moved, newcomer) = slots(target, fault);
    let dir = target
        .backups
        .join(format!("at-{}ms", fault.at.as_millis()));
    // The newcomer's slot goes down too: its process would hold a worker id through the
    // backup that the restore then frees, for the newcomer to take instead.
    let gone = [
        target.fleet.pid(moved).ok(),
        target.fleet.pid(newcomer).ok(),
    ];
    target.fleet.kill(newcomer)?;
    target.fleet.kill(moved)?;
    target.fleet.new_machine(moved)?;
    // A lease outlives its holder by up to a TTL: once free, the blockers hold those
    // worker ids too, or the newcomer might take one whose holder is dead instead.
    let started = Instant::now();
    while started.elapsed() < LEASE_TTL + NEWCOMER_LIMIT
        && holders(target.registry)
            .is_ok_and(|held| held.iter().any(|(_, p)| gone.contains(&Some(*p))))
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut blockers = Blockers::hold_free(&target.registry.url(), target.runtime)?;
    blockers.give_back_one()?;
    let backup = Backup::take(target.registry, &dir);
    target.fleet.start(moved)?;
    let backup = backup?;
    wait_for_lease(target, moved, "the moved server")?;
    // A `file` blocker's locks do not survive the restore (its files are new), and giving
    // one back after it would write the mark of a file another holder may have locked
    // since: the lowest free worker id, which the newcomer takes, is a forgotten one anyway.
    let blockers = match target.registry {
        Registry::Dir(_) => {
            drop(blockers);
            None
        }
        Registry::Process(..) | Registry::Cluster(..) => Some(blockers),
    };
    hold(HOLD);

    target.fleet.freeze(moved, true)?;
    let rolled = roll_back(target, newcomer, |registry, meanwhile| {
        backup.restore(registry, meanwhile)
    })
    .and_then(|_| wait_for_lease(target, newcomer, "the newcomer"));
    target.fleet.freeze(moved, false)?;
    drop(blockers);
    rolled?;
    hold(target.registry.kind().reach() + PAST_REACH);
    Ok(())
}

/// Restarts the registry from nothing with every server but the newcomer frozen, then
/// holds every free worker id but the forgotten holders' while the newcomer starts.
pub fn from_nothing(target: &mut Target<'_>, fault: &Planned) -> anyhow::Result<()> {
    let (_, newcomer) = slots(target, fault);
    let frozen: Vec<usize> = (0..target.fleet.slots.len())
        .filter(|&i| i != newcomer && target.fleet.pid(i).is_ok())
        .collect();
    let moved = freeze_all(target.fleet, &frozen, true).and_then(|()| {
        let forgotten = roll_back(target, newcomer, |registry, _| restart_empty(registry))?;
        let mut blockers = Blockers::hold_free(&target.registry.url(), target.runtime)?;
        blockers.give_back(&forgotten.iter().map(|(w, _)| *w).collect::<Vec<_>>())?;
        move_to_new_machine(target.fleet, newcomer)?;
        wait_for_lease(target, newcomer, "the newcomer")
    });
    let thawed = freeze_all(target.fleet, &frozen, false);
    moved.and(thawed)?;
    hold(target.registry.kind().reach() + PAST_REACH);
    Ok(())
}

/// Sends SIGSTOP (`stop`) or SIGCONT to the processes of `slots`.
fn freeze_all(fleet: &Fleet, slots: &[usize], stop: bool) -> anyhow::Result<()> {
    slots.iter().try_for_each(|&slot| fleet.freeze(slot, stop))
}

/// Kills slot `i`, empties its state directory and gives it a new identity, and starts it.
fn move_to_new_machine(fleet: &mut Fleet, i: usize) -> anyhow::Result<()> {
    fleet.kill(i)?;
    fleet.new_machine(i)?;
    fleet.start(i)
}

/// Rolls the registry's records back with `restore`, which is handed what to run while the
/// registry is down: slot `newcomer` moved to a new machine (unless `restore` drops it).
/// Tells the checker when the records went back and whom they forgot, and answers those
/// (worker, pid).
fn roll_back(
    target: &mut Target<'_>,
    newcomer: usize,
    restore: impl FnOnce(&mut Registry, &mut dyn FnMut() -> anyhow::Result<()>) -> anyhow::Result<()>,
) -> anyhow::Result<Vec<(u16, u32)>> {
    // Unread, the records forgot nobody as far as the campaign knows.
    let before = holders(target.registry).unwrap_or_default();
    // The newcomer's slot is moved: its process is no forgotten live holder.
    let leaving = target.fleet.pid(newcomer).ok();
    let from = target.epoch.now();
    let fleet = &mut *target.fleet;
    let mut meanwhile = || move_to_new_machine(fleet, newcomer);
    restore(target.registry, &mut meanwhile)?;
    let back = target.epoch.now();
    let blocker = std::process::id();
    let after = holders(target.registry).unwrap_or_default();
    // A `file` holder locks two files of its worker id: each is one line of the locks.
    let mut forgotten: Vec<(u16, u32)> = before
        .into_iter()
        .filter(|held| !after.contains(held) && Some(held.1) != leaving && held.1 != blocker)
        .collect();
    forgotten.sort_unstable();
    forgotten.dedup();
    println!("          the records forgot {forgotten:?} (worker, pid)");
    // A holder's last renewal reached a registry process before it was killed; a `file`
    // holder may have reserved until its own lock file was replaced, as late as `back`.
    let last_reached = match target.registry {
        Registry::Process(..) | Registry::Cluster(..) => from,
        Registry::Dir(_) => back,
    };
    let reach = target.registry.kind().reach();
    let _ = target.events.send(Event::Rollback(Rollback {
        from,
        until: last_reached + reach.as_micros() as u64,
        from_unix_ms: target.epoch.unix_ms(from),
        floor_unix_ms: target.epoch.unix_ms(last_reached)
            + target.registry.kind().issues_for().as_millis() as u64,
        forgotten: forgotten.clone(),
    }));
    Ok(forgotten)
}

/// Waits until the registry names slot `i`'s process as a holder, at most
/// [`NEWCOMER_LIMIT`], and says which worker id `who` holds.
pub(super) fn wait_for_lease(target: &Target<'_>, i: usize, who: &str) -> anyhow::Result<()> {
    let pid = target.fleet.pid(i).context("the newcomer")?;
    let name = &target.fleet.slots[i].name;
    let started = Instant::now();
    while started.elapsed() < NEWCOMER_LIMIT {
        let held = holders(target.registry).unwrap_or_default();
        if let Some((worker, _)) = held.iter().find(|(_, p)| *p == pid) {
            println!("          {who} {name} (pid {pid}) holds worker {worker}");
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    println!("          {who} {name} (pid {pid}) holds no worker id after {NEWCOMER_LIMIT:?}");
    Ok(())
}
