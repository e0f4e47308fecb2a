//! The held check: every batch's worker id was held by the answering process, by the
//! registry's word, read in the polls around the answer.
//!
//! A restore rolls the registry's records back: from the instant it is killed (or its files
//! begin to be replaced), the records are those of an older backup. A failover to a replica
//! that lagged does too: from the instant the primary was cut off, the records are the
//! replica's. Either way they may not name a holder whose lease they forgot, although that
//! holder may go on issuing until its next renewal or reservation finds the lease gone. So
//! the checker keeps every poll, and reads the records written before a restore as
//! superseded, not as wrong: a batch that
//!
//! - came back after the restore began, and was asked before the restore's instant plus
//!   the registry's reach (TTL and margin where leases expire; for `file`, the
//!   reservation and margin), by a process started before it,
//!
//! is placed when the polls from before the request up to the restore named that process
//! for the worker id (**held before the restore**). When they did not (the lease may have
//! been taken in the last poll's gap before the restore, which no record shows any more),
//! the batch is counted as **not placed** rather than judged. A batch asked later than the
//! reach, or by a process started after the restore began, is judged by the polls around
//! it alone: a forgotten holder must have stopped by then, and a newcomer's lease is in the
//! restored registry's records.

use super::{Batch, Checker, MAX_BRACKET, Micros, TIME_SHIFT};

/// What the polls say of one batch.
enum Placement {
    /// The polls around it named its process for its worker id.
    Held,
    /// The polls before a restore did.
    HeldBeforeRestore,
    /// A restore hid who held it.
    HiddenByRestore,
    /// The registry could not be read around it.
    Unreadable,
    /// The polls around it named another holder, or none, and nothing hid a lease.
    NotHeld,
}

impl Checker {
    /// Every batch's worker id was held by the answering process, by the registry's word.
    pub(super) fn check_held(&mut self) {
        if self.leases.is_empty() {
            self.found.unchecked_held = self.batches.len() as u64;
            return;
        }
        let mut found = Vec::new();
        for b in &self.batches {
            let Some(process) = self.incarnations.get(b.incarnation as usize) else {
                continue;
            };
            let placed = self.place(b, process.pid, process.started);
            match placed {
                Placement::Held => self.found.placed_held += 1,
                Placement::HeldBeforeRestore => self.found.held_before_restore += 1,
                Placement::HiddenByRestore => self.found.hidden_by_restore += 1,
                Placement::Unreadable => self.found.unchecked_held += 1,
                Placement::NotHeld => {
                    self.found.placed_held += 1;
                    found.push((*b, self.not_held(b)));
                }
            }
        }
        for (b, detail) in found {
            self.broke("not-held", b.received, vec![b.min, b.max], detail);
        }
    }

    fn place(&self, b: &Batch, pid: u32, started: Micros) -> Placement {
        let named = |first: usize, last: usize| {
            self.leases[first..=last]
                .iter()
                .any(|p| p.held.contains(&(b.worker, pid)))
        };
        // The polls that bracket the answer: the last that ended before the request went
        // out, the first that began after the answer came.
        let (before, after, first, last) = self.bracket(b);
        if named(first, last) {
            return Placement::Held;
        }
        if let Some(restore) = self
            .rollbacks
            .iter()
            .find(|r| r.from < b.received && b.sent < r.until && started < r.from)
        {
            // The polls from the request (or the restore, if sooner) up to the restore.
            let upto = self.leases.partition_point(|p| p.end <= restore.from);
            let since = self
                .leases
                .partition_point(|p| p.end <= b.sent.min(restore.from));
            if upto > 0 && named(since.saturating_sub(1), upto - 1) {
                return Placement::HeldBeforeRestore;
            }
            return Placement::HiddenByRestore;
        }
        // A whole lease could have come and gone unseen between polls that far apart
        // (a registry stopped, then resumed, ends the sessions it kept at once).
        if before == 0
            || after >= self.leases.len()
            || self.leases[after].start - self.leases[before - 1].end > MAX_BRACKET
        {
            return Placement::Unreadable;
        }
        Placement::NotHeld
    }

    /// The polls around `b`: how many ended before it was asked, how many began before it
    /// came, and the first and last of those that bracket it.
    fn bracket(&self, b: &Batch) -> (usize, usize, usize, usize) {
        let before = self.leases.partition_point(|p| p.end <= b.sent);
        let after = self.leases.partition_point(|p| p.start < b.received);
        let first = before.saturating_sub(1);
        let last = after.min(self.leases.len() - 1).max(first);
        (before, after, first, last)
    }

    fn not_held(&self, b: &Batch) -> String {
        let process = &self.incarnations[b.incarnation as usize];
        let (_, _, first, last) = self.bracket(b);
        let seen: Vec<String> = self.leases[first..=last]
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
        // Where the ids' time fields fall on the campaign's clock: a time from before the
        // request tells a server that minted on a stale reading from one that took the
        // worker id again between the polls.
        let stamped = |id: u64| {
            let unix_ms = snowmint::Layout::TWITTER.unix_ms_at(id >> TIME_SHIFT);
            (unix_ms as f64 - self.began_unix_ms as f64) / 1e3
        };
        format!(
            "worker {} issued by process #{} (pid {}, started at {:.3} s) in {:?} asked at {:.3} s, answered at {:.3} s, its ids stamped {:.3} s to {:.3} s; the registry said {}",
            b.worker,
            b.incarnation,
            process.pid,
            process.started as f64 / 1e6,
            b.via,
            b.sent as f64 / 1e6,
            b.received as f64 / 1e6,
            stamped(b.min),
            stamped(b.max),
            seen.join(", ")
        )
    }
}
