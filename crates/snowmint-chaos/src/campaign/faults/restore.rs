//! The registry restored while the fleet runs, as in the attack that found registries
//! forgetting live holders:
//!
//! 1. A server goes down, the registry is backed up, and the server comes back on a new
//!    machine (empty state, new identity): it takes a worker id the backup does not record,
//!    and issues for a while.
//! 2. The registry is killed, the backup put back, and it starts again (for `file`, its
//!    files are replaced as it runs). Its records forget that holder, and on Redis, whose
//!    keys expire as they load, every holder whose lease the backup outlived.
//! 3. The campaign takes every free worker id itself ([`Blockers`]), reads whom the records
//!    forgot, and gives their worker ids back. Those holders are frozen (SIGSTOP) from
//!    before the restore (the server moved at the backup, or for a restart from nothing
//!    every server) or from when they are found forgotten, so that none takes a worker id
//!    back before the newcomer.
//! 4. A newcomer on an empty state directory, another server moved to a new machine, takes
//!    one of them from the restored records: free, at an old mark. The forgotten holders
//!    resume, and the blockers are given back.
//!
//! A Redis without persistence is the same attack from nothing: every holder is forgotten.
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

/// What the registry's records go back to.
enum Source<'b> {
    Backup(&'b Backup),
    Nothing,
}

/// The slot that moves to a new machine before the backup, and the newcomer's.
fn slots(target: &Target<'_>, fault: &Planned) -> (usize, usize) {
    (fault.slot, (fault.slot + 1) % target.fleet.slots.len())
}

/// What the report names as hit.
pub fn target(target: &Target<'_>, fault: &Planned) -> String {
    let (moved, newcomer) = slots(target, fault);
    let newcomer = &target.fleet.slots[newcomer].name;
    match fault.kind {
        super::Kind::RegistryRestore => format!(
            "registry; {} moves at the backup, {newcomer} after the restore",
            target.fleet.slots[moved].name
        ),
        _ => format!("registry; {newcomer} moves after the restart"),
    }
}

/// Steps 1 to 4 from a backup.
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
    roll_back(target, Source::Backup(&backup), &[moved], newcomer)?;
    hold(target.registry.kind().reach() + PAST_REACH);
    Ok(())
}

/// Steps 2 to 4 from nothing.
pub fn from_nothing(target: &mut Target<'_>, fault: &Planned) -> anyhow::Result<()> {
    let (_, newcomer) = slots(target, fault);
    let everyone: Vec<usize> = (0..target.fleet.slots.len())
        .filter(|&i| i != newcomer)
        .collect();
    roll_back(target, Source::Nothing, &everyone, newcomer)?;
    hold(target.registry.kind().reach() + PAST_REACH);
    Ok(())
}

/// Steps 2 to 4: rolls the registry's records back to `source` with the slots `expected`
/// to be forgotten frozen, tells the checker when and whom the records forgot, and moves
/// slot `newcomer` to a new machine where it can take only a forgotten holder's worker id.
fn roll_back(
    target: &mut Target<'_>,
    source: Source<'_>,
    expected: &[usize],
    newcomer: usize,
) -> anyhow::Result<()> {
    let mut frozen = Vec::new();
    let rolled = restore_and_move(target, source, expected, &mut frozen, newcomer);
    for &slot in &frozen {
        target.fleet.freeze(slot, false)?;
    }
    rolled
}

/// Steps 2 to 4: freezes the `expected` slots, and then the other forgotten ones, each
/// recorded in `frozen` for the caller to thaw.
fn restore_and_move(
    target: &mut Target<'_>,
    source: Source<'_>,
    expected: &[usize],
    frozen: &mut Vec<usize>,
    newcomer: usize,
) -> anyhow::Result<()> {
    for &slot in expected {
        target.fleet.freeze(slot, true)?;
        frozen.push(slot);
    }
    // Unread, the records forgot nobody as far as the campaign knows: the newcomer then
    // takes what the blockers give back at the end.
    let before = holders(target.registry).unwrap_or_default();
    let from = target.epoch.now();
    match source {
        Source::Backup(backup) => backup.restore(target.registry)?,
        Source::Nothing => restart_empty(target.registry)?,
    }
    let back = target.epoch.now();
    let mut blockers = Blockers::hold_free(&target.registry.url(), target.runtime)?;
    let blocker = std::process::id();
    let after: Vec<(u16, u32)> = holders(target.registry)
        .unwrap_or_default()
        .into_iter()
        .filter(|(_, pid)| *pid != blocker)
        .collect();
    // The newcomer's slot is moved: its process is no forgotten live holder.
    let leaving = target.fleet.pid(newcomer).ok();
    // A `file` holder locks two files of its worker id: each is one line of the locks.
    let mut forgotten: Vec<(u16, u32)> = before
        .into_iter()
        .filter(|held| !after.contains(held) && Some(held.1) != leaving)
        .collect();
    forgotten.sort_unstable();
    forgotten.dedup();
    // A holder's last renewal reached a registry process before it was killed; a `file`
    // holder may have reserved until its own lock file was replaced, as late as `back`.
    let last_reached = match target.registry {
        Registry::Process(..) => from,
        Registry::Dir(_) => back,
    };
    let reach = target.registry.kind().reach();
    let _ = target.events.send(Event::Rollback(Rollback {
        from,
        until: last_reached + reach.as_micros() as u64,
        from_unix_ms: target.epoch.unix_ms(from),
        floor_unix_ms: target.epoch.unix_ms(from) + reach.as_millis() as u64,
        forgotten: forgotten.clone(),
    }));

    if forgotten.is_empty() {
        // Nothing to take from the restored records but what anyone could.
        drop(blockers);
        return move_to_new_machine(target.fleet, newcomer);
    }
    for slot in slots_of(target.fleet, &forgotten) {
        if !frozen.contains(&slot) {
            target.fleet.freeze(slot, true)?;
            frozen.push(slot);
        }
    }
    blockers.give_back(&forgotten.iter().map(|(w, _)| *w).collect::<Vec<_>>())?;
    move_to_new_machine(target.fleet, newcomer)?;
    wait_for_lease(target, newcomer)
}

/// The slots whose processes are the `forgotten` holders.
fn slots_of(fleet: &Fleet, forgotten: &[(u16, u32)]) -> Vec<usize> {
    (0..fleet.slots.len())
        .filter(|&i| {
            fleet
                .pid(i)
                .is_ok_and(|pid| forgotten.iter().any(|(_, p)| *p == pid))
        })
        .collect()
}

/// Kills slot `i`, empties its state directory and gives it a new identity, and starts it.
fn move_to_new_machine(fleet: &mut Fleet, i: usize) -> anyhow::Result<()> {
    fleet.kill(i)?;
    fleet.new_machine(i)?;
    fleet.start(i)
}

/// Waits until the registry names slot `i`'s process as a holder, at most
/// [`NEWCOMER_LIMIT`]; says so when it does not.
fn wait_for_lease(target: &Target<'_>, i: usize) -> anyhow::Result<()> {
    let pid = target.fleet.pid(i).context("the newcomer")?;
    let started = Instant::now();
    while started.elapsed() < NEWCOMER_LIMIT {
        if holders(target.registry).is_ok_and(|held| held.iter().any(|(_, p)| *p == pid)) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    println!(
        "          the newcomer {} (pid {pid}) held no worker id {NEWCOMER_LIMIT:?} after it started",
        target.fleet.slots[i].name
    );
    Ok(())
}
