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
//!   between them unseen, and the answer is counted as not placed instead;
//! - **ready**: no answer whose request went out after a `/readyz` poll of that process said
//!   its lease was not confirmed, and came back before the next poll that did not say so.

use std::collections::BTreeMap;

use super::ids::{IdStore, Uniqueness};

/// Microseconds since the campaign began, on the monotonic clock.
pub type Micros = u64;

/// Bits of the Twitter layout below the worker field (the sequence).
const WORKER_SHIFT: u32 = 12;
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
    /// `repeated`, `order`, `not-held`, `not-ready`.
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
    ready: Vec<ReadyPoll>,
    found: Findings,
}

impl Checker {
    /// A checker whose ids spill to `dir` past `budget` ids in memory.
    pub fn new(budget: usize, dir: &std::path::Path) -> Checker {
        Checker {
            ids: IdStore::new(budget, dir),
            batches: Vec::new(),
            incarnations: Vec::new(),
            leases: Vec::new(),
            ready: Vec::new(),
            found: Findings::default(),
        }
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
        self.check_ready();
        self.gaps(ended);
        self.found.polls = (self.leases.len(), self.ready.len());
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

    /// Every batch's worker id was held by the answering process, by the registry's word.
    fn check_held(&mut self) {
        if self.leases.is_empty() {
            self.found.unchecked_held = self.batches.len() as u64;
            return;
        }
        let mut found = Vec::new();
        for b in &self.batches {
            let Some(process) = self.incarnations.get(b.incarnation as usize) else {
                continue;
            };
            // The polls that bracket the answer: the last that ended before the request
            // went out, the first that began after the answer came.
            let before = self.leases.partition_point(|p| p.end <= b.sent);
            let after = self.leases.partition_point(|p| p.start < b.received);
            let first = before.saturating_sub(1);
            let last = after.min(self.leases.len() - 1).max(first);
            let polls = &self.leases[first..=last];
            if polls
                .iter()
                .any(|p| p.held.contains(&(b.worker, process.pid)))
            {
                self.found.placed_held += 1;
                continue;
            }
            // A whole lease could have come and gone unseen between polls that far apart
            // (a registry stopped, then resumed, ends the sessions it kept at once).
            if before == 0
                || after >= self.leases.len()
                || self.leases[after].start - self.leases[before - 1].end > MAX_BRACKET
            {
                self.found.unchecked_held += 1;
                continue;
            }
            self.found.placed_held += 1;
            let seen: Vec<String> = polls
                .iter()
                .map(|p| {
                    let holder = p
                        .held
                        .iter()
                        .find(|(w, _)| *w == b.worker)
                        .map_or("nobody".to_string(), |(_, pid)| format!("pid {pid}"));
                    format!("{:.3} s: {holder}", p.start as f64 / 1e6)
                })
                .collect();
            found.push((
                *b,
                format!(
                    "worker {} issued by process #{} (pid {}, started at {:.3} s) in {:?} asked at {:.3} s, answered at {:.3} s; the registry said {}",
                    b.worker,
                    b.incarnation,
                    process.pid,
                    process.started as f64 / 1e6,
                    b.via,
                    b.sent as f64 / 1e6,
                    b.received as f64 / 1e6,
                    seen.join(", ")
                ),
            ));
        }
        for (b, detail) in found {
            self.broke("not-held", b.received, vec![b.min, b.max], detail);
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
mod tests {
    use super::*;

    /// A Twitter-layout id at `ms` ticks, worker `worker`, sequence `seq`.
    fn id(ms: u64, worker: u64, seq: u64) -> u64 {
        (ms << 22) | (worker << WORKER_SHIFT) | seq
    }

    fn answer(incarnation: u32, sent: Micros, received: Micros, ids: Vec<u64>) -> Answer {
        Answer {
            incarnation,
            via: Via::HttpMany,
            sent,
            received,
            after: None,
            ids,
        }
    }

    /// Two processes, pids 100 and 200, holding workers 1 and 2 by the registry's polls
    /// every 100 µs from 0 to 10,000 µs, and ready all along.
    fn checker(dir: &std::path::Path) -> Checker {
        let mut checker = Checker::new(1_000, dir);
        for (i, pid) in [100, 200].into_iter().enumerate() {
            checker.incarnation(
                i as u32,
                Incarnation {
                    slot: i,
                    pid,
                    started: 0,
                },
            );
        }
        for t in (0..10_000).step_by(100) {
            checker.lease_poll(LeasePoll {
                start: t,
                end: t + 10,
                held: vec![(1, 100), (2, 200)],
            });
            for incarnation in 0..2 {
                checker.ready_poll(ReadyPoll {
                    incarnation,
                    sent: t,
                    received: t + 5,
                    state: Readiness::Ready,
                });
            }
        }
        checker
    }

    fn invariants(found: &Findings) -> Vec<&'static str> {
        found.breaks.iter().map(|b| b.invariant).collect()
    }

    #[test]
    fn the_layout_fields_are_read_as_the_core_decodes_them() {
        let made = snowmint::Layout::TWITTER
            .compose(
                12_345,
                snowmint::Fields {
                    datacenter: 3,
                    worker: 7,
                    sequence: 99,
                },
            )
            .unwrap();
        assert_eq!(worker_of(made.as_u64()), 3 * 32 + 7);
    }

    #[test]
    fn a_clean_run_breaks_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut checker = checker(dir.path());
        checker
            .answer(&answer(0, 1_000, 1_200, vec![id(5, 1, 0), id(5, 1, 1)]))
            .unwrap();
        checker
            .answer(&answer(0, 1_300, 1_500, vec![id(6, 1, 0)]))
            .unwrap();
        checker
            .answer(&answer(1, 1_000, 1_200, vec![id(5, 2, 0)]))
            .unwrap();
        let found = checker.finish(10_000).unwrap();
        assert!(found.breaks.is_empty(), "{:?}", found.breaks);
        assert_eq!(found.uniqueness.total, 4);
    }

    #[test]
    fn a_repeated_id_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let mut checker = checker(dir.path());
        checker
            .answer(&answer(0, 1_000, 1_200, vec![id(5, 1, 0)]))
            .unwrap();
        // Asked before the first answer came: no order between the two, but the same id.
        checker
            .answer(&answer(0, 1_100, 1_300, vec![id(5, 1, 0)]))
            .unwrap();
        let found = checker.finish(10_000).unwrap();
        assert_eq!(invariants(&found), ["repeated"], "{:?}", found.breaks);
        assert_eq!(found.breaks[0].ids, [id(5, 1, 0)]);
    }

    #[test]
    fn an_out_of_order_pair_is_reported_across_holders() {
        let dir = tempfile::tempdir().unwrap();
        let mut checker = checker(dir.path());
        // Worker 1 moves to process #1 (pid 200) at 5,000 µs, by the registry.
        for poll in &mut checker.leases {
            if poll.start >= 5_000 {
                poll.held = vec![(1, 200)];
            }
        }
        checker
            .answer(&answer(0, 1_000, 1_200, vec![id(9, 1, 0)]))
            .unwrap();
        checker
            .answer(&answer(1, 6_000, 6_200, vec![id(8, 1, 0)]))
            .unwrap();
        let found = checker.finish(10_000).unwrap();
        assert_eq!(invariants(&found), ["order"], "{:?}", found.breaks);
        assert_eq!(found.breaks[0].ids, [id(9, 1, 0), id(8, 1, 0)]);
    }

    #[test]
    fn ids_going_back_within_one_answer_or_one_stream_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let mut checker = checker(dir.path());
        checker
            .answer(&answer(0, 1_000, 1_200, vec![id(9, 1, 0), id(8, 1, 0)]))
            .unwrap();
        let mut message = answer(0, 1_000, 1_400, vec![id(3, 1, 0)]);
        message.via = Via::GrpcStream;
        message.after = Some(id(4, 1, 0));
        checker.answer(&message).unwrap();
        let found = checker.finish(10_000).unwrap();
        assert_eq!(invariants(&found), ["order", "order"], "{:?}", found.breaks);
    }

    #[test]
    fn a_worker_the_registry_never_gave_the_process_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let mut checker = checker(dir.path());
        // Process #0 holds worker 1, not 2.
        checker
            .answer(&answer(0, 3_000, 3_200, vec![id(5, 2, 7)]))
            .unwrap();
        let found = checker.finish(10_000).unwrap();
        assert_eq!(invariants(&found), ["not-held"], "{:?}", found.breaks);
        assert!(
            found.breaks[0].detail.contains("pid 200"),
            "{:?}",
            found.breaks
        );
    }

    #[test]
    fn a_lease_lost_before_the_request_is_reported_and_one_lost_during_it_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let mut checker = checker(dir.path());
        for poll in &mut checker.leases {
            if poll.start >= 5_000 {
                poll.held = vec![(2, 200)];
            }
        }
        // Lost at 5,000 µs: an answer asked at 4,950 may have been issued before.
        checker
            .answer(&answer(0, 4_950, 5_150, vec![id(5, 1, 0)]))
            .unwrap();
        checker
            .answer(&answer(0, 5_300, 5_350, vec![id(6, 1, 0)]))
            .unwrap();
        let found = checker.finish(10_000).unwrap();
        assert_eq!(invariants(&found), ["not-held"], "{:?}", found.breaks);
        assert_eq!(found.breaks[0].ids, [id(6, 1, 0), id(6, 1, 0)]);
    }

    #[test]
    fn an_answer_between_polls_too_far_apart_is_not_placed_rather_than_broken() {
        let dir = tempfile::tempdir().unwrap();
        let mut checker = checker(dir.path());
        // The registry could not be read from 3,000 µs until past MAX_BRACKET later, and
        // said nobody held worker 1 on either side.
        checker.leases.retain(|p| p.start < 3_000);
        checker.leases.push(LeasePoll {
            start: 3_000 + MAX_BRACKET,
            end: 3_010 + MAX_BRACKET,
            held: Vec::new(),
        });
        for poll in &mut checker.leases {
            poll.held = vec![(2, 200)];
        }
        checker
            .answer(&answer(0, 3_500, 3_600, vec![id(5, 1, 0)]))
            .unwrap();
        let found = checker.finish(10_000_000).unwrap();
        assert!(found.breaks.is_empty(), "{:?}", found.breaks);
        assert_eq!((found.placed_held, found.unchecked_held), (0, 1));
    }

    #[test]
    fn an_answer_while_readyz_said_not_confirmed_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let mut checker = checker(dir.path());
        for poll in &mut checker.ready {
            if poll.incarnation == 0 && (3_000..=4_000).contains(&poll.sent) {
                poll.state = Readiness::NotConfirmed;
            }
        }
        // Inside the stretch: broken. Straddling its end: the lease may have come back.
        checker
            .answer(&answer(0, 3_220, 3_280, vec![id(5, 1, 0)]))
            .unwrap();
        checker
            .answer(&answer(0, 3_950, 4_050, vec![id(6, 1, 0)]))
            .unwrap();
        let found = checker.finish(10_000).unwrap();
        assert_eq!(invariants(&found), ["not-ready"], "{:?}", found.breaks);
    }

    #[test]
    fn the_longest_silence_is_measured() {
        assert_eq!(longest_gap(&[10, 20, 70, 80], 100), (50, 20));
        assert_eq!(longest_gap(&[10], 100), (90, 10));
    }
}
