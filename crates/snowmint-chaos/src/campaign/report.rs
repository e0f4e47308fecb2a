//! The report: what was checked, what was injected, what the clients saw, what broke.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::Tally;
use super::checker::{Break, FaultRecord};

/// Faults this close to a break (µs) are listed beside it.
const AROUND: u64 = 5_000_000;

/// One campaign's figures.
pub struct Summary {
    pub registry: String,
    pub profile: String,
    pub seed: u64,
    pub servers: usize,
    pub seconds: f64,
    pub lease_checked: bool,
    pub tally: Tally,
    /// Why the campaign itself failed (a fault that could not be made, too few ids).
    pub failure: Option<String>,
}

fn secs(us: u64) -> f64 {
    us as f64 / 1e6
}

impl Summary {
    /// Whether every invariant held, the lease check ran, and the campaign did what it set
    /// out to.
    pub fn passed(&self) -> bool {
        self.tally.findings.break_counts.is_empty() && self.failure.is_none() && self.lease_checked
    }

    /// The share of answers' worker ids the lease check could not place.
    fn unplaced_share(&self) -> f64 {
        let f = &self.tally.findings;
        let unplaced = f.unchecked_held + f.hidden_by_restore;
        let all = unplaced + f.placed_held + f.held_before_restore;
        if all == 0 {
            0.0
        } else {
            unplaced as f64 / all as f64
        }
    }

    fn faults_by_kind(&self) -> BTreeMap<&'static str, u64> {
        let mut by = BTreeMap::new();
        for fault in &self.tally.faults {
            *by.entry(fault.kind).or_default() += 1;
        }
        by
    }

    fn around(&self, b: &Break) -> Vec<&FaultRecord> {
        self.tally
            .faults
            .iter()
            .filter(|f| f.start <= b.at + AROUND && b.at <= f.end + AROUND)
            .collect()
    }

    /// The report as text.
    pub fn text(&self) -> String {
        let f = &self.tally.findings;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "\n== snowmint-chaos: registry {}, profile {}, seed {}, {} servers, {:.1} s",
            self.registry, self.profile, self.seed, self.servers, self.seconds
        );
        let _ = writeln!(
            out,
            "ids checked: {} (unique fleet-wide; {} sorted runs spilled to disk)",
            f.uniqueness.total, f.uniqueness.runs
        );
        let _ = writeln!(out, "answers: {:?}", f.answers);
        let _ = writeln!(
            out,
            "registry polls: {} ({} failed), /readyz polls: {}",
            f.polls.0, self.tally.poll_errors, f.polls.1
        );
        let _ = writeln!(
            out,
            "lease check: {} answers' worker ids placed among the registry's polls, {} placed by the records as they were before a rollback (a restore, or a failover that lost writes), {} not placed ({} with the registry unreadable around them for over 2 s, {} whose holder a rollback hid): {:.4} % not placed",
            f.placed_held,
            f.held_before_restore,
            f.unchecked_held + f.hidden_by_restore,
            f.unchecked_held,
            f.hidden_by_restore,
            self.unplaced_share() * 100.0
        );
        if !f.restores.is_empty() {
            let _ = writeln!(
                out,
                "  after a rollback, records written before it count as superseded: an answer asked within the reach of a rollback, by a process started before it, is held when the polls before the rollback named its process"
            );
        }
        for restore in &f.restores {
            let earliest = restore.earliest.map_or_else(
                || "none issued on them".to_string(),
                |(past_start, past_floor)| {
                    format!("the earliest id on them is {past_start} ms past the rollback, {past_floor} ms past its floor")
                },
            );
            let _ = writeln!(
                out,
                "rollback at {:.3} s: the records forgot {} live holders (worker, pid) {:?}; another process held {} of their worker ids soon after {:?}; {earliest}",
                secs(restore.at),
                restore.holders.len(),
                restore.holders,
                restore.retaken.len(),
                restore.retaken
            );
        }
        if !self.lease_checked {
            let _ = writeln!(
                out,
                "LEASE CHECK NOT DONE: no reader of this registry's leases; the campaign fails"
            );
        }
        let _ = writeln!(out, "faults injected:");
        for (kind, n) in self.faults_by_kind() {
            let _ = writeln!(out, "  {kind:<24} {n}");
        }
        let _ = writeln!(out, "client errors by kind:");
        for (kind, n) in &self.tally.errors {
            let _ = writeln!(out, "  {n:>8}  {kind}");
        }
        let _ = writeln!(
            out,
            "longest unavailability: fleet {:.3} s (from {:.3} s); per server: {}",
            secs(f.fleet_gap.0),
            secs(f.fleet_gap.1),
            f.slot_gaps
                .iter()
                .map(|(slot, (gap, from))| format!(
                    "s{slot} {:.3} s from {:.3} s",
                    secs(*gap),
                    secs(*from)
                ))
                .collect::<Vec<_>>()
                .join(", ")
        );
        if f.breaks.is_empty() {
            let _ = writeln!(out, "breaks: none");
        } else {
            let _ = writeln!(out, "BREAKS: {:?}", f.break_counts);
            for b in &f.breaks {
                let _ = writeln!(
                    out,
                    "  [{}] at {:.3} s, ids {:?}: {}",
                    b.invariant,
                    secs(b.at),
                    b.ids,
                    b.detail
                );
                for fault in self.around(b) {
                    let _ = writeln!(
                        out,
                        "      fault {} on {} from {:.3} s to {:.3} s",
                        fault.kind,
                        fault.target,
                        secs(fault.start),
                        secs(fault.end)
                    );
                }
            }
        }
        if let Some(failure) = &self.failure {
            let _ = writeln!(out, "CAMPAIGN FAILED: {failure}");
        }
        let _ = writeln!(
            out,
            "result: {}",
            if self.passed() { "pass" } else { "FAIL" }
        );
        out
    }

    /// The report as JSON.
    pub fn json(&self) -> String {
        let f = &self.tally.findings;
        let value = serde_json::json!({
            "registry": self.registry,
            "profile": self.profile,
            "seed": self.seed,
            "servers": self.servers,
            "seconds": self.seconds,
            "ids_checked": f.uniqueness.total,
            "answers": f.answers,
            "faults": self.faults_by_kind(),
            "fault_log": self.tally.faults.iter().map(|x| serde_json::json!({
                "kind": x.kind, "target": x.target, "start_s": secs(x.start), "end_s": secs(x.end),
            })).collect::<Vec<_>>(),
            "client_errors": self.tally.errors,
            "longest_unavailability_s": secs(f.fleet_gap.0),
            "lease_checked": self.lease_checked,
            "lease_check": {
                "placed": f.placed_held,
                "held_before_restore": f.held_before_restore,
                "not_placed_unreadable": f.unchecked_held,
                "not_placed_hidden_by_restore": f.hidden_by_restore,
                "not_placed_share": self.unplaced_share(),
                "restores": f.restores.iter().map(|r| serde_json::json!({
                    "at_s": secs(r.at), "forgotten": r.holders, "retaken": r.retaken,
                    "earliest_past_start_ms": r.earliest.map(|e| e.0),
                    "earliest_past_floor_ms": r.earliest.map(|e| e.1),
                })).collect::<Vec<_>>(),
            },
            "breaks": f.break_counts,
            "break_list": f.breaks.iter().map(|b| serde_json::json!({
                "invariant": b.invariant, "at_s": secs(b.at), "ids": b.ids, "detail": b.detail,
            })).collect::<Vec<_>>(),
            "failure": self.failure,
            "passed": self.passed(),
        });
        serde_json::to_string_pretty(&value).unwrap_or_default()
    }
}
