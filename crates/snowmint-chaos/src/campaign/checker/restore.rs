//! Restores of the registry, and the promise a restore puts to the test: a lease taken
//! from a registry that forgot a live holder starts after everything that holder could
//! have issued.
//!
//! The fault tells the checker which holders the records forgot (each worker id named with
//! a live process's pid just before the restore and not just after), and the **floor**:
//! the last instant such a holder could have reached the registry (its kill; for `file`,
//! the last file replaced) plus how long it could issue past that (to its fence, the TTL
//! less the margin; to its reservation for `file`), on the wall clock. Ids at or below it
//! may be ones the forgotten holder issued; above it, none can be. The servers' own floor
//! is higher (the registry's restart plus the TTL and the margin): the checker takes the
//! forgotten holder's, the one that uniqueness needs. Then:
//!
//! - **within-reach**: no process but the forgotten holder issues, in an answer asked after
//!   the restore began, an id of the forgotten holder's worker id whose time is at or below
//!   the floor. Duplicates need the two to issue in the same tick; this needs only that
//!   the newcomer started where the old holder could still have been issuing.

use super::{Checker, Micros};

/// A restore of the registry: its records went back to an older backup, or to nothing.
#[derive(Debug, Clone)]
pub struct Rollback {
    /// When the registry was killed, or its files began to be replaced.
    pub from: Micros,
    /// When every holder whose lease it forgot must have stopped: the reach past the last
    /// instant a holder could renew (the kill) or reserve (the last file replaced).
    pub until: Micros,
    /// `from` on the wall clock, in ms since the Unix epoch.
    pub from_unix_ms: u64,
    /// The last instant a forgotten holder could issue at, in ms since the Unix epoch: no
    /// other lease on its worker id may issue at or below it.
    pub floor_unix_ms: u64,
    /// Each (datacenter * 32 + worker, pid) whose live holder the records forgot.
    pub forgotten: Vec<(u16, u32)>,
}

/// What one restore did, for the report: the holders its records forgot, and which of
/// their worker ids another process held soon after (the attack bit: a newcomer took one).
#[derive(Debug, Clone)]
pub struct Forgotten {
    /// When the restore began.
    pub at: Micros,
    /// Each (datacenter * 32 + worker, pid) the records forgot.
    pub holders: Vec<(u16, u32)>,
    /// Their worker ids that another process held within [`RETAKEN_WITHIN`] of the reach.
    pub retaken: Vec<u16>,
    /// How far the earliest id another process issued on them lay past the restore's
    /// start, and past its floor (ms; negative: below it).
    pub earliest: Option<(i64, i64)>,
}

/// How long past a restore's reach the polls are searched for a forgotten holder's worker
/// id held by another process.
const RETAKEN_WITHIN: Micros = 5_000_000;

/// The time of a Twitter-layout id, in ms since the Unix epoch.
fn unix_ms(id: u64) -> u64 {
    snowmint::Layout::TWITTER
        .decode(snowmint::Id::from_u64(id))
        .map_or(0, |parts| parts.unix_ms)
}

impl Checker {
    /// What each restore forgot, and which of those worker ids the polls soon after name
    /// with another process.
    pub(super) fn forgotten(&self) -> Vec<Forgotten> {
        let mut seen = Vec::new();
        for r in &self.rollbacks {
            let after = self.leases.partition_point(|p| p.start < r.from);
            let soon = &self.leases[after..];
            let soon = &soon[..soon.partition_point(|p| p.start < r.until + RETAKEN_WITHIN)];
            let retaken = r
                .forgotten
                .iter()
                .filter(|(worker, pid)| {
                    soon.iter()
                        .any(|p| p.held.iter().any(|(w, other)| w == worker && other != pid))
                })
                .map(|(worker, _)| *worker)
                .collect();
            let earliest = self
                .batches
                .iter()
                .filter(|b| b.sent >= r.from)
                .filter(|b| {
                    r.forgotten.iter().any(|&(w, holder)| {
                        w == b.worker
                            && self
                                .incarnations
                                .get(b.incarnation as usize)
                                .is_some_and(|p| p.pid != holder)
                    })
                })
                .map(|b| unix_ms(b.min))
                .min()
                .map(|ms| {
                    (
                        ms as i64 - r.from_unix_ms as i64,
                        ms as i64 - r.floor_unix_ms as i64,
                    )
                });
            seen.push(Forgotten {
                at: r.from,
                holders: r.forgotten.clone(),
                retaken,
                earliest,
            });
        }
        seen
    }

    /// No id of a forgotten holder's worker id at or below its restore's floor, from
    /// another process, asked after the restore began.
    pub(super) fn check_floor(&mut self) {
        let mut found = Vec::new();
        for r in &self.rollbacks {
            for b in &self.batches {
                let Some(&(_, holder)) = r.forgotten.iter().find(|(w, _)| *w == b.worker) else {
                    continue;
                };
                let Some(process) = self.incarnations.get(b.incarnation as usize) else {
                    continue;
                };
                let issued_ms = unix_ms(b.min);
                if b.sent < r.from || process.pid == holder || issued_ms > r.floor_unix_ms {
                    continue;
                }
                found.push((
                    *b,
                    format!(
                        "worker {}, whose holder pid {holder} the rollback at {:.3} s forgot, issued by process #{} (pid {}) in {:?} asked at {:.3} s: id {} is at {} ms, {} ms at or below the floor {} ms (the last instant the forgotten holder could issue at)",
                        b.worker,
                        r.from as f64 / 1e6,
                        b.incarnation,
                        process.pid,
                        b.via,
                        b.sent as f64 / 1e6,
                        b.min,
                        issued_ms,
                        r.floor_unix_ms - issued_ms,
                        r.floor_unix_ms
                    ),
                ));
            }
        }
        for (b, detail) in found {
            self.broke("within-reach", b.received, vec![b.min, b.max], detail);
        }
    }
}
