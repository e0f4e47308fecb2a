//! The checker: fed every answer any client received, every poll of the registry's leases
//! and every poll of each server's `/readyz`, it finds the broken invariants.
//!
//! Times are microseconds on this process's monotonic clock since the campaign began, so
//! every record, whichever thread made it, is on one time line:
//!
//! - **unique**: no id received twice, fleet-wide ([`IdStore`]);
//! - **ordered**: per worker id, across holders, an answer received before another request
//!   was sent holds smaller ids; within one answer (or one stream) ids increase;
//! - **held**: every id decodes to a worker id whose registry entry named the answering
//!   process at some poll between the last poll that ended before the request was sent and
//!   the first poll that began after the answer came; when those two are more than
//!   [`MAX_BRACKET`] apart (the registry could not be read), a whole lease could lie
//!   between them unseen, and the answer is counted as not placed instead; after a restore
//!   of the registry, the records it forgot are read as they were before it (`held`);
//! - **within-reach**: after a restore, no other process issues on a worker id whose
//!   live holder the restore forgot at or below the last instant that holder could issue
//!   at (see `restore`);
//! - **ready**: no answer whose request went out after a `/readyz` poll of that process said
//!   its lease was not confirmed, and came back before the next poll that did not say so.

use std::collections::BTreeMap;

use super::ids::{IdStore, Uniqueness};

mod held;
mod restore;

pub use restore::{Forgotten, Rollback};

/// Microseconds since the campaign began, on the monotonic clock.
pub type Micros = u64;

/// Bits of the Twitter layout below the worker field (the sequence).
const WORKER_SHIFT: u32 = 12;
/// Where an id's time field begins in the fleet's layout (Twitter's).
const TIME_SHIFT: u32 = 22;
/// Bits of the Twitter layout below the datacenter field.
const DATACENTER_SHIFT: u32 = 17;
/// The worker and datacenter fields are 5 bits each.
const FIELD_MASK: u64 = 0x1f;
/// The widest stretch between the registry polls that bracket an answer for the lease
/// check to judge it: below the 3 s TTL, so a lease taken between them is still there at
/// the second. Wider (the registry could not be read meanwhile), the answer is counted as
/// not placed.
const MAX_BRACKET: Micros = 2_000_000;
/// Breaks of one kind listed in full; the rest are counted.
const LISTED: usize = 20;

/// The (datacenter, worker) of a Twitter-layout id, as one number: `datacenter * 32 + worker`.
pub fn worker_of(id: u64) -> u16 {
    let worker = (id >> WORKER_SHIFT) & FIELD_MASK;
    let datacenter = (id >> DATACENTER_SHIFT) & FIELD_MASK;
    // Ten bits: fits.
    (datacenter * (FIELD_MASK + 1) + worker) as u16
}

/// How a client asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Via {
    /// `GET /v1/id`.
    HttpOne,
    /// `GET /v1/ids?count=K`.
    HttpMany,
    /// `GET /v1/serials/{biz}?count=K`, each serial parsed back to its id.
    Serials,
    /// gRPC `NextBatch`.
    GrpcBatch,
    /// gRPC `Stream`: one answer per message, sent at the stream's start.
    GrpcStream,
}

/// One answer: the ids of one response (or one stream message) from one process.
#[derive(Debug, Clone)]
pub struct Answer {
    /// Which process answered (an index into the incarnations).
    pub incarnation: u32,
    /// How it was asked.
    pub via: Via,
    /// When the request went out (for a stream message, when the stream was opened).
    pub sent: Micros,
    /// When the whole answer was in.
    pub received: Micros,
    /// For a stream message: the last id of the message before it on the same stream.
    pub after: Option<u64>,
    /// The ids, in the order received.
    pub ids: Vec<u64>,
}

/// A process the campaign started: one incarnation of one server slot.
#[derive(Debug, Clone)]
pub struct Incarnation {
    /// The server slot (`s0`, `s1`, ...).
    pub slot: usize,
    /// Its process id, which the registry's holder names carry.
    pub pid: u32,
    /// When it was started.
    pub started: Micros,
}

/// One reading of every lease in the registry.
#[derive(Debug, Clone)]
pub struct LeasePoll {
    /// When the reading began.
    pub start: Micros,
    /// When it ended.
    pub end: Micros,
    /// Each held (datacenter * 32 + worker) with the pid of its holder.
    pub held: Vec<(u16, u32)>,
}

/// What one `/readyz` poll said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// 200.
    Ready,
    /// 503 because the lease is not confirmed (or not yet acquired).
    NotConfirmed,
    /// 503 for another reason (the clock, shutting down).
    OtherNotReady,
    /// No answer.
    Silent,
}

/// One `/readyz` poll of one process.
#[derive(Debug, Clone)]
pub struct ReadyPoll {
    /// The process polled.
    pub incarnation: u32,
    /// When the request went out.
    pub sent: Micros,
    /// When the answer came.
    pub received: Micros,
    /// What it said.
    pub state: Readiness,
}

/// One fault, for the report and for the faults around a break.
#[derive(Debug, Clone)]
pub struct FaultRecord {
    /// When it began.
    pub start: Micros,
    /// When it was undone.
    pub end: Micros,
    /// Its kind.
    pub kind: &'static str,
    /// What it hit.
    pub target: String,
}

/// A broken invariant.
#[derive(Debug, Clone)]
pub struct Break {
    /// `repeated`, `order`, `not-held`, `within-reach`, `not-ready`.
    pub invariant: &'static str,
    /// When, on the campaign's clock.
    pub at: Micros,
    /// The ids involved.
    pub ids: Vec<u64>,
    /// What happened, in words.
    pub detail: String,
}

/// The ids of one answer that share a worker id.
#[derive(Debug, Clone, Copy)]
struct Batch {
    sent: Micros,
    received: Micros,
    min: u64,
    max: u64,
    worker: u16,
    incarnation: u32,
    via: Via,
}

/// Everything checked, after the last answer.
#[derive(Debug, Default)]
pub struct Findings {
    /// Ids checked for uniqueness, and those seen twice.
    pub uniqueness: Uniqueness,
    /// Answers by how they were asked.
    pub answers: BTreeMap<String, u64>,
    /// Every break listed (the first [`LISTED`] of each kind).
    pub breaks: Vec<Break>,
    /// Breaks by invariant, all counted.
    pub break_counts: BTreeMap<&'static str, u64>,
    /// Batches the lease check could not place (no poll of the registry near them).
    pub unchecked_held: u64,
    /// Batches the lease check placed among the registry's polls.
    pub placed_held: u64,
    /// Batches placed by the records as they were before a restore rolled them back.
    pub held_before_restore: u64,
    /// Batches within a restore's reach that the records neither before nor after it
    /// place: the restore hid who held them.
    pub hidden_by_restore: u64,
    /// What each restore of the registry did to its records.
    pub restores: Vec<Forgotten>,
    /// Registry polls, `/readyz` polls.
    pub polls: (usize, usize),
    /// The longest time no answer came from any server, and when it began (µs).
    pub fleet_gap: (Micros, Micros),
    /// Per slot: the longest time that slot gave no answer, and when it began.
    pub slot_gaps: BTreeMap<usize, (Micros, Micros)>,
}

/// The checker's intake.
pub struct Checker {
    ids: IdStore,
    batches: Vec<Batch>,
    incarnations: Vec<Incarnation>,
    leases: Vec<LeasePoll>,
    rollbacks: Vec<Rollback>,
    ready: Vec<ReadyPoll>,
    found: Findings,
    /// The wall clock when the campaign began (ms since the Unix epoch), to place an id's
    /// time on the campaign's clock in what a break says.
    began_unix_ms: u64,
}

impl Checker {
    /// A checker whose ids spill to `dir` past `budget` ids in memory.
    pub fn new(budget: usize, dir: &std::path::Path) -> Checker {
        Checker {
            ids: IdStore::new(budget, dir),
            batches: Vec::new(),
            incarnations: Vec::new(),
            leases: Vec::new(),
            rollbacks: Vec::new(),
            ready: Vec::new(),
            found: Findings::default(),
            began_unix_ms: 0,
        }
    }

    /// The wall clock when the campaign began, so a break can say when, on the campaign's
    /// clock, its ids' time fields fall.
    pub fn began_at(&mut self, unix_ms: u64) {
        self.began_unix_ms = unix_ms;
    }

    /// Ids taken in so far.
    pub fn ids(&self) -> u64 {
        self.ids.total()
    }

    /// Records a process the campaign started; its index is its incarnation number.
    pub fn incarnation(&mut self, index: u32, incarnation: Incarnation) {
        let index = index as usize;
        if self.incarnations.len() <= index {
            self.incarnations.resize(
                index + 1,
                Incarnation {
                    slot: usize::MAX,
                    pid: 0,
                    started: 0,
                },
            );
        }
        self.incarnations[index] = incarnation;
    }

    /// Takes in one reading of the registry's leases.
    pub fn lease_poll(&mut self, poll: LeasePoll) {
        self.leases.push(poll);
    }

    /// Takes in a restore of the registry.
    pub fn rollback(&mut self, rollback: Rollback) {
        self.rollbacks.push(rollback);
    }

    /// Takes in one `/readyz` poll.
    pub fn ready_poll(&mut self, poll: ReadyPoll) {
        self.ready.push(poll);
    }

    fn broke(&mut self, invariant: &'static str, at: Micros, ids: Vec<u64>, detail: String) {
        let count = self.found.break_counts.entry(invariant).or_default();
        *count += 1;
        if *count <= LISTED as u64 {
            self.found.breaks.push(Break {
                invariant,
                at,
                ids,
                detail,
            });
        }
    }

    /// Takes in one answer.
    pub fn answer(&mut self, answer: &Answer) -> std::io::Result<()> {
        *self
            .found
            .answers
            .entry(format!("{:?}", answer.via))
            .or_default() += 1;
        if answer.ids.is_empty() {
            return Ok(());
        }
        self.ids.extend(&answer.ids)?;
        let mut previous = answer.after;
        let mut start = 0;
        for (i, &id) in answer.ids.iter().enumerate() {
            if let Some(before) = previous
                && id <= before
            {
                self.broke(
                    "order",
                    answer.received,
                    vec![before, id],
                    format!(
                        "{:?} answer of process #{} holds {id} after {before}",
                        answer.via, answer.incarnation
                    ),
                );
            }
            previous = Some(id);
            let last = i + 1 == answer.ids.len();
            if last || worker_of(answer.ids[i + 1]) != worker_of(id) {
                let run = &answer.ids[start..=i];
                self.batches.push(Batch {
                    sent: answer.sent,
                    received: answer.received,
                    min: *run.iter().min().expect("a run holds an id"),
                    max: *run.iter().max().expect("a run holds an id"),
                    worker: worker_of(id),
                    incarnation: answer.incarnation,
                    via: answer.via,
                });
                start = i + 1;
            }
        }
        Ok(())
    }

    /// Runs the checks that need every record, and reports.
    pub fn finish(mut self, ended: Micros) -> std::io::Result<Findings> {
        self.check_order();
        self.check_held();
        self.check_floor();
        self.check_ready();
        self.gaps(ended);
        self.found.polls = (self.leases.len(), self.ready.len());
        self.found.restores = self.forgotten();
        let uniqueness = self.ids.finish(LISTED)?;
        for &id in &uniqueness.repeated {
            let who: Vec<String> = self
                .batches
                .iter()
                .filter(|b| b.worker == worker_of(id) && b.min <= id && id <= b.max)
                .map(|b| {
                    format!(
                        "{:?} from process #{} at {:.3} s",
                        b.via,
                        b.incarnation,
                        b.received as f64 / 1e6
                    )
                })
                .collect();
            let at = self
                .batches
                .iter()
                .filter(|b| b.worker == worker_of(id) && b.min <= id && id <= b.max)
                .map(|b| b.received)
                .max()
                .unwrap_or(0);
            self.found.breaks.push(Break {
                invariant: "repeated",
                at,
                ids: vec![id],
                detail: format!("id {id} received {} times: {}", who.len(), who.join("; ")),
            });
        }
        if uniqueness.repeated_count > 0 {
            self.found
                .break_counts
                .insert("repeated", uniqueness.repeated_count);
        }
        self.found.uniqueness = uniqueness;
        Ok(self.found)
    }

    /// Per worker id: a batch received before another batch's request went out holds only
    /// smaller ids.
    fn check_order(&mut self) {
        let mut by_sent: Vec<usize> = (0..self.batches.len()).collect();
        by_sent.sort_by_key(|&i| (self.batches[i].worker, self.batches[i].sent));
        let mut by_received = by_sent.clone();
        by_received.sort_by_key(|&i| (self.batches[i].worker, self.batches[i].received));
        let mut found = Vec::new();
        let (mut s, mut r) = (0, 0);
        while s < by_sent.len() {
            let worker = self.batches[by_sent[s]].worker;
            while r < by_received.len() && self.batches[by_received[r]].worker < worker {
                r += 1;
            }
            let mut highest: Option<usize> = None;
            while s < by_sent.len() && self.batches[by_sent[s]].worker == worker {
                let later = self.batches[by_sent[s]];
                while r < by_received.len()
                    && self.batches[by_received[r]].worker == worker
                    && self.batches[by_received[r]].received < later.sent
                {
                    let candidate = by_received[r];
                    if highest.is_none_or(|h| self.batches[candidate].max > self.batches[h].max) {
                        highest = Some(candidate);
                    }
                    r += 1;
                }
                if let Some(h) = highest
                    && self.batches[h].max >= later.min
                {
                    found.push((self.batches[h], later));
                }
                s += 1;
            }
            while r < by_received.len() && self.batches[by_received[r]].worker == worker {
                r += 1;
            }
        }
        for (earlier, later) in found {
            self.broke(
                "order",
                later.received,
                vec![earlier.max, later.min],
                format!(
                    "worker {}: {:?} from process #{} received at {:.3} s held {}, but {:?} from process #{} asked at {:.3} s got {}",
                    earlier.worker,
                    earlier.via,
                    earlier.incarnation,
                    earlier.received as f64 / 1e6,
                    earlier.max,
                    later.via,
                    later.incarnation,
                    later.sent as f64 / 1e6,
                    later.min
                ),
            );
        }
    }

    /// No answer came in a stretch when every `/readyz` poll of its process said the lease
    /// was not confirmed.
    fn check_ready(&mut self) {
        let mut by_process: BTreeMap<u32, Vec<&ReadyPoll>> = BTreeMap::new();
        for poll in &self.ready {
            by_process.entry(poll.incarnation).or_default().push(poll);
        }
        for polls in by_process.values_mut() {
            polls.sort_by_key(|p| p.sent);
        }
        let mut found = Vec::new();
        for b in &self.batches {
            let Some(polls) = by_process.get(&b.incarnation) else {
                continue;
            };
            let before = polls.partition_point(|p| p.received <= b.sent);
            if before == 0 {
                continue;
            }
            let after = polls.partition_point(|p| p.sent < b.received);
            if after >= polls.len() {
                continue;
            }
            let around = &polls[before - 1..=after];
            if around.iter().all(|p| p.state == Readiness::NotConfirmed) {
                found.push((
                    *b,
                    format!(
                        "process #{} answered {:?} with worker {} (asked at {:.3} s, answered at {:.3} s) while /readyz said the lease was not confirmed from {:.3} s to {:.3} s",
                        b.incarnation,
                        b.via,
                        b.worker,
                        b.sent as f64 / 1e6,
                        b.received as f64 / 1e6,
                        around[0].received as f64 / 1e6,
                        around[around.len() - 1].sent as f64 / 1e6
                    ),
                ));
            }
        }
        for (b, detail) in found {
            self.broke("not-ready", b.received, vec![b.min, b.max], detail);
        }
    }

    fn gaps(&mut self, ended: Micros) {
        let mut all: Vec<Micros> = self.batches.iter().map(|b| b.received).collect();
        all.sort_unstable();
        self.found.fleet_gap = longest_gap(&all, ended);
        let mut by_slot: BTreeMap<usize, Vec<Micros>> = BTreeMap::new();
        for b in &self.batches {
            if let Some(process) = self.incarnations.get(b.incarnation as usize) {
                by_slot.entry(process.slot).or_default().push(b.received);
            }
        }
        for (slot, mut times) in by_slot {
            times.sort_unstable();
            self.found
                .slot_gaps
                .insert(slot, longest_gap(&times, ended));
        }
    }
}

/// The longest stretch between consecutive times (and from the last one to `ended`), with
/// its start.
fn longest_gap(times: &[Micros], ended: Micros) -> (Micros, Micros) {
    let mut best = (0, 0);
    for pair in times.windows(2) {
        if pair[1] - pair[0] > best.0 {
            best = (pair[1] - pair[0], pair[0]);
        }
    }
    if let Some(&last) = times.last()
        && ended.saturating_sub(last) > best.0
    {
        best = (ended - last, last);
    }
    best
}

#[cfg(test)]
mod tests;
