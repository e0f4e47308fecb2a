//! The faults of a clustered registry: a member killed, the primary failed over, a member
//! cut off from its peers.
//!
//! A failover where replication is asynchronous (Redis, PostgreSQL) loses what the old
//! primary acknowledged after the cut: the records go back to the cut, as a restore takes
//! them back to a backup. The checker is told so ([`Rollback`]), with the holders whose
//! leases the new primary does not have, and the floor: the instant the old primary was
//! gone, past which no forgotten holder reached it, plus how long a holder may issue past
//! its last renewal. etcd and ZooKeeper lose no acknowledged write: their failovers roll
//! nothing back, and the checker judges every answer by the polls around it.
//!
//! To put the floor to the test, a failover that forgot live holders is followed by a
//! newcomer, as after a restore: the campaign holds every free worker id but the forgotten
//! holders' ([`Blockers`]), and another server moves to a new machine (empty state, new
//! identity) and takes one of those, unless its holder took it back first.

use std::time::Duration;

use anyhow::Context;

use super::{DOWN, HOLD, PAST_TTL, Planned, Target, hold};
use crate::campaign::Event;
use crate::campaign::checker::Rollback;
use crate::campaign::fleet::LEASE_TTL;
use crate::campaign::registry::{Blockers, Kind, holders};

/// How long the cut-off primary acknowledges writes alone before it is killed: a TTL, so
/// that by the promotion the new primary's records of every lease the lag renewed have run
/// out, and the holders those renewals kept issuing are forgotten.
const LAG: Duration = LEASE_TTL;

/// About how long a failover lasts, for the schedule: the lag, the promotion (about two
/// seconds), the old primary down, its rejoining.
pub const LENGTH: Duration =
    Duration::from_millis(LAG.as_millis() as u64 + 2_000 + 2 * HOLD.as_millis() as u64 + 1_000);

/// Freezes the forgotten holders (so that none takes its worker id back first), holds
/// every free worker id but theirs, moves another server to a new machine (or one of them,
/// if every server is one), and waits for its lease; then thaws them and gives the rest
/// back.
fn newcomer_on(target: &mut Target<'_>, forgotten: &[(u16, u32)]) -> anyhow::Result<()> {
    let slots = target.fleet.slots.len();
    let holder_of = |pid: u32| forgotten.iter().any(|&(_, held)| held == pid);
    let mut frozen: Vec<usize> = (0..slots)
        .filter(|&i| target.fleet.pid(i).is_ok_and(holder_of))
        .collect();
    // Another server moves if there is one; if every server is a forgotten holder, one of
    // them moves, and the others' worker ids are there for it to take.
    let newcomer = match (0..slots).find(|i| !frozen.contains(i)) {
        Some(other) => other,
        None if frozen.len() > 1 => frozen.pop().unwrap_or_default(),
        None => return Ok(()),
    };
    for &i in &frozen {
        target.fleet.freeze(i, true)?;
    }
    let moved = (|| {
        let mut blockers = Blockers::hold_free(&target.registry.url(), target.runtime)?;
        blockers.give_back(&forgotten.iter().map(|&(w, _)| w).collect::<Vec<_>>())?;
        target.fleet.kill(newcomer)?;
        target.fleet.new_machine(newcomer)?;
        target.fleet.start(newcomer)?;
        super::restore::wait_for_lease(target, newcomer, "the newcomer")?;
        Ok::<_, anyhow::Error>(blockers)
    })();
    for &i in &frozen {
        target.fleet.freeze(i, false)?;
    }
    let blockers = moved?;
    hold(HOLD);
    drop(blockers);
    Ok(())
}

/// Whether a failover can lose acknowledged writes on `kind`.
fn loses_writes(kind: Kind) -> bool {
    matches!(kind, Kind::Redis | Kind::Postgres)
}

/// The member a fault on `slot` hits: for a kill where replication is asynchronous, a
/// member that is not the primary (the failover is the fault that loses the primary);
/// otherwise the primary on even slots and another member on odd ones.
fn member(target: &Target<'_>, fault: &Planned) -> anyhow::Result<usize> {
    let kind = target.registry.kind();
    let cluster = target.registry.as_cluster().context("no cluster")?;
    let members = cluster.members();
    let primary = cluster.primary().unwrap_or(0);
    let other = (primary + 1 + fault.slot % (members - 1)) % members;
    Ok(match fault.kind {
        super::Kind::MemberKill if loses_writes(kind) => other,
        _ if fault.slot.is_multiple_of(2) => primary,
        _ => other,
    })
}

/// What the report names as hit.
pub fn target(target: &Target<'_>, fault: &Planned) -> String {
    let primary = target.registry.as_cluster().and_then(|c| c.primary());
    match fault.kind {
        super::Kind::Failover => format!("registry; primary member {primary:?}"),
        _ => match member(target, fault) {
            Ok(i) if Some(i) == primary => format!("registry; member {i} (primary)"),
            Ok(i) => format!("registry; member {i}"),
            Err(err) => format!("registry; {err}"),
        },
    }
}

/// A member killed, and restarted after [`DOWN`].
pub fn kill(target: &mut Target<'_>, fault: &Planned) -> anyhow::Result<()> {
    let i = member(target, fault)?;
    let cluster = target.registry.cluster().context("no cluster")?;
    cluster.kill(i);
    hold(DOWN);
    cluster.restart(i);
    Ok(())
}

/// A member cut off from its peers past the lease TTL, then mended.
pub fn partition(target: &mut Target<'_>, fault: &Planned) -> anyhow::Result<()> {
    let i = member(target, fault)?;
    let cluster = target.registry.cluster().context("no cluster")?;
    cluster.partition(i, true);
    hold(PAST_TTL);
    cluster.partition(i, false);
    Ok(())
}

/// The primary failed over after [`LAG`]; the checker told what the records forgot where
/// they go back, and a newcomer started on the forgotten worker ids; the old primary
/// rejoins after [`HOLD`].
pub fn fail_over(target: &mut Target<'_>) -> anyhow::Result<()> {
    let kind = target.registry.kind();
    // Unread, the records forgot nobody as far as the campaign knows.
    let before = holders(target.registry).unwrap_or_default();
    let from = target.epoch.now();
    let cluster = target.registry.cluster().context("no cluster")?;
    let (old, new) = cluster.fail_over(LAG);
    // No holder reached the old primary after this: it was killed before the promotion.
    let gone = target.epoch.now();
    println!(
        "          member {new} took over from member {old} after {:.3} s",
        (gone - from) as f64 / 1e6
    );
    if loses_writes(kind) {
        let after = holders(target.registry).unwrap_or_default();
        let live: Vec<u32> = (0..target.fleet.slots.len())
            .filter_map(|i| target.fleet.pid(i).ok())
            .collect();
        let mut forgotten: Vec<(u16, u32)> = before
            .into_iter()
            .filter(|held| !after.contains(held) && live.contains(&held.1))
            .collect();
        forgotten.sort_unstable();
        forgotten.dedup();
        println!("          the new primary forgot {forgotten:?} (worker, pid)");
        let _ = target.events.send(Event::Rollback(Rollback {
            from,
            until: gone + kind.reach().as_micros() as u64,
            from_unix_ms: target.epoch.unix_ms(from),
            floor_unix_ms: target.epoch.unix_ms(gone) + kind.issues_for().as_millis() as u64,
            forgotten: forgotten.clone(),
        }));
        if !forgotten.is_empty() {
            newcomer_on(target, &forgotten)?;
        }
    }
    hold(HOLD);
    let cluster = target.registry.cluster().context("no cluster")?;
    cluster.restart(old);
    Ok(())
}
