//! The registry restored while the fleet runs, as in the attack that found registries
//! forgetting live holders: a backup is taken; the fleet runs on and a server moves to a
//! new machine, so it takes a worker id the backup does not record; the registry is killed,
//! the backup put back, and it starts again, forgetting that holder, which issues on until
//! its next renewal (or, on `file`, its next reservation) finds its lease gone; a newcomer
//! on an empty state directory then acquires from the restored records, where the
//! forgotten holder's worker id is free at an old mark. A Redis without persistence is the
//! same attack with an empty backup.
//!
//! Every id the newcomer issues must lie above every id the forgotten holder issued (the
//! checker's order and uniqueness checks), which it does when its lease starts past the
//! restore and the registry's reach. The checker is told when the records went back
//! ([`Rollback`]), and reads the records from before the restore as superseded.

use std::time::Duration;

use super::{HOLD, Planned, Target, hold};
use crate::campaign::Event;
use crate::campaign::checker::Rollback;
use crate::campaign::fleet::LEASE_TTL;
use crate::campaign::registry::{Backup, Registry, restart_empty};

/// How long the newcomer is watched past the reach of every holder the restore forgot.
const PAST_REACH: Duration = Duration::from_secs(2);

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

/// Backs the registry up, moves one server to a new machine, lets it issue, restores the
/// backup, and moves the next server to a new machine.
pub fn from_backup(target: &mut Target<'_>, fault: &Planned) -> anyhow::Result<()> {
    let (moved, newcomer) = slots(target, fault);
    let dir = target
        .backups
        .join(format!("at-{}ms", fault.at.as_millis()));
    let backup = Backup::take(target.registry, &dir)?;
    move_to_new_machine(target, moved)?;
    hold(HOLD);
    roll_back(target, |registry| backup.restore(registry))?;
    move_to_new_machine(target, newcomer)?;
    hold(target.registry.kind().reach() + PAST_REACH);
    Ok(())
}

/// Restarts the registry from nothing and moves one server to a new machine.
pub fn from_nothing(target: &mut Target<'_>, fault: &Planned) -> anyhow::Result<()> {
    let (_, newcomer) = slots(target, fault);
    roll_back(target, restart_empty)?;
    move_to_new_machine(target, newcomer)?;
    hold(target.registry.kind().reach() + PAST_REACH);
    Ok(())
}

/// Kills slot `i`, empties its state directory and gives it a new identity, and starts it.
fn move_to_new_machine(target: &mut Target<'_>, i: usize) -> anyhow::Result<()> {
    target.fleet.kill(i)?;
    target.fleet.new_machine(i)?;
    target.fleet.start(i)
}

/// Rolls the registry's records back with `restore`, and tells the checker when.
fn roll_back(
    target: &mut Target<'_>,
    restore: impl FnOnce(&mut Registry) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let from = target.epoch.now();
    restore(target.registry)?;
    let back = target.epoch.now();
    // A holder's last renewal reached a registry process before it was killed; a `file`
    // holder may have reserved until its own lock file was replaced, as late as `back`.
    let last_reached = match target.registry {
        Registry::Process(..) => from,
        Registry::Dir(_) => back,
    };
    let until = last_reached + target.registry.kind().reach().as_micros() as u64;
    let _ = target
        .events
        .send(Event::Rollback(Rollback { from, until }));
    Ok(())
}
