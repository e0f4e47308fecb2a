//! The registry restored while the fleet runs, as in the attack that found registries
//! forgetting live holders: a backup is taken; the fleet runs on and a server moves to a
//! new machine, so it takes a worker id the backup does not record; the registry is killed,
//! the backup put back, and it starts again, forgetting that holder, which issues on until
//! its next renewal (or, on `file`, its next reservation) finds its lease gone; a newcomer
//! on an empty state directory, started while the registry is down (as servers that wait
//! for it are), acquires from the restored records as soon as they are back, where the
//! forgotten holder's worker id is free at an old mark. The campaign holds every other
//! free worker id meanwhile ([`Blockers`]), so the newcomer takes a forgotten one whichever
//! way its registry picks. A Redis without persistence is the same attack with an empty
//! backup.
//!
//! Every id the newcomer issues must lie above every id the forgotten holder issued (the
//! checker's order and uniqueness checks), which it does when its lease starts past the
//! restore and the registry's reach. The checker is told when the records went back
//! ([`Rollback`]), and reads the records from before the restore as superseded.

use std::time::{Duration, Instant};

use super::{HOLD, Planned, Target, hold};
use crate::campaign::Event;
use crate::campaign::checker::Rollback;
use crate::campaign::fleet::{Fleet, LEASE_TTL};
use crate::campaign::registry::{Backup, Blockers, Registry, holders, restart_empty};

/// How long the newcomer is watched past the reach of every holder the restore forgot.
const PAST_REACH: Duration = Duration::from_secs(2);
/// The longest wait for the newcomer's lease, while the blockers hold the rest.
const NEWCOMER_LIMIT: Duration = Duration::from_secs(10);

/// About how long a restore lasts after the backup, for the schedule: the registry back,
/// the newcomer started, the reach and the watch past it.
pub const LENGTH: Duration =
    Duration::from_millis(LEASE_TTL.as_millis() as u64 + PAST_REACH.as_millis() as u64 + 3_000);

/// The slot that moves to a new machine after the backup, and the newcomer's.
fn slots(target: &Target<'_>, fault: &Planned) -> (usize, usize) {
    (fault.slot, (fault.slot + 1) % target.fleet.slots.len())
}

/// What the report names as hit.
pub fn target(target: &Target<'_>, fault: &Planned) -> String {
    let (moved, newcomer) = slots(target, fault);
    let newcomer = &target.fleet.slots[newcomer].name;
    match fault.kind {
        super::Kind::RegistryRestore => format!(
            "registry; {} moves after the backup, {newcomer} after the restore",
            target.fleet.slots[moved].name
        ),
        _ => format!("registry; {newcomer} moves after the restart"),
    }
}

/// Backs the registry up while one server is down, starts it on a new machine, lets it
/// issue, restores the backup, and moves the next server to a new machine.
///
/// The records the newcomer acquires from are then those the moved server acquired from,
/// so whichever worker id a registry gives a new identity, the newcomer is given what the
/// moved server holds, unless the restore let other leases expire (then it is given one of
/// theirs, whose holders live on as well).
pub fn from_backup(target: &mut Target<'_>, fault: &Planned) -> anyhow::Result<()> {
    let (moved, newcomer) = slots(target, fault);
    let dir = target
        .backups
        .join(format!("at-{}ms", fault.at.as_millis()));
    target.fleet.kill(moved)?;
    target.fleet.new_machine(moved)?;
    let backup = Backup::take(target.registry, &dir);
    target.fleet.start(moved)?;
    let backup = backup?;
    hold(HOLD);
    let forgotten = roll_back(target, Source::Backup(&backup), newcomer)?;
    hold_all_but(target, newcomer, &forgotten)?;
    hold(target.registry.kind().reach() + PAST_REACH);
    Ok(())
}

/// Restarts the registry from nothing and moves one server to a new machine.
pub fn from_nothing(target: &mut Target<'_>, fault: &Planned) -> anyhow::Result<()> {
    let (_, newcomer) = slots(target, fault);
    let forgotten = roll_back(target, Source::Nothing, newcomer)?;
    hold_all_but(target, newcomer, &forgotten)?;
    hold(target.registry.kind().reach() + PAST_REACH);
    Ok(())
}

/// Holds every free worker id but the `forgotten` ones until the newcomer in slot `i`
/// holds one of those (or [`NEWCOMER_LIMIT`] passes).
fn hold_all_but(target: &mut Target<'_>, i: usize, forgotten: &[u16]) -> anyhow::Result<()> {
    let blockers = Blockers::hold_all_but(&target.registry.url(), forgotten, target.runtime)?;
    let pid = target.fleet.pid(i)?;
    let started = Instant::now();
    while started.elapsed() < NEWCOMER_LIMIT {
        if holders(target.registry).is_ok_and(|held| held.iter().any(|(_, p)| *p == pid)) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(blockers);
    Ok(())
}

/// Kills slot `i`, empties its state directory and gives it a new identity, and starts it.
fn move_to_new_machine(fleet: &mut Fleet, i: usize) -> anyhow::Result<()> {
    fleet.kill(i)?;
    fleet.new_machine(i)?;
    fleet.start(i)
}

/// What the registry's records go back to.
enum Source<'b> {
    Backup(&'b Backup),
    Nothing,
}

/// Rolls the registry's records back to `source`, moving slot `newcomer` to a new machine
/// meanwhile; tells the checker when and whom the records forgot, and answers those
/// holders' worker ids.
fn roll_back(
    target: &mut Target<'_>,
    source: Source<'_>,
    newcomer: usize,
) -> anyhow::Result<Vec<u16>> {
    // Unread, the records forgot nobody as far as the blockers know: they hold every worker
    // id free after the restore, and the newcomer waits for them to be given back.
    let before = holders(target.registry).unwrap_or_default();
    let from = target.epoch.now();
    let fleet = &mut *target.fleet;
    let meanwhile = || move_to_new_machine(fleet, newcomer);
    match source {
        Source::Backup(backup) => backup.restore(target.registry, meanwhile)?,
        Source::Nothing => restart_empty(target.registry, meanwhile)?,
    }
    let back = target.epoch.now();
    let after = holders(target.registry).unwrap_or_default();
    // A holder's last renewal reached a registry process before it was killed; a `file`
    // holder may have reserved until its own lock file was replaced, as late as `back`.
    let last_reached = match target.registry {
        Registry::Process(..) => from,
        Registry::Dir(_) => back,
    };
    let reach = target.registry.kind().reach();
    // A `file` holder locks two files of its worker id: each is one line of the locks.
    let mut forgotten: Vec<(u16, u32)> = before
        .into_iter()
        .filter(|held| !after.contains(held))
        .collect();
    forgotten.sort_unstable();
    forgotten.dedup();
    let workers = forgotten.iter().map(|(worker, _)| *worker).collect();
    let _ = target.events.send(Event::Rollback(Rollback {
        from,
        until: last_reached + reach.as_micros() as u64,
        from_unix_ms: target.epoch.unix_ms(from),
        floor_unix_ms: target.epoch.unix_ms(from) + reach.as_millis() as u64,
        forgotten,
    }));
    Ok(workers)
}
