//! Every id received, kept compactly: a `Vec<u64>` sorted at the end, spilled to disk as
//! sorted runs when it passes a budget, and merged to find the ids received twice.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// Bytes of one id in a run file (little-endian `u64`).
const ID_BYTES: usize = 8;
/// The buffer of each run file while runs are written and merged.
const RUN_BUFFER: usize = 1 << 20;

/// The ids received so far, and the sorted runs already on disk.
pub struct IdStore {
    held: Vec<u64>,
    budget: usize,
    dir: PathBuf,
    runs: Vec<PathBuf>,
    total: u64,
}

/// What the store found once every id was in.
#[derive(Debug, Default)]
pub struct Uniqueness {
    /// Ids checked in all.
    pub total: u64,
    /// Runs spilled to disk before the merge.
    pub runs: usize,
    /// The ids received more than once (each once), the first `limit` of them.
    pub repeated: Vec<u64>,
    /// How many ids were received more than once in all.
    pub repeated_count: u64,
}

impl IdStore {
    /// A store that keeps at most `budget` ids in memory, spilling sorted runs into `dir`.
    pub fn new(budget: usize, dir: &Path) -> IdStore {
        IdStore {
            held: Vec::with_capacity(budget.min(1 << 24)),
            budget: budget.max(1),
            dir: dir.to_path_buf(),
            runs: Vec::new(),
            total: 0,
        }
    }

    /// Adds `ids`, spilling a sorted run to disk when the budget is reached.
    pub fn extend(&mut self, ids: &[u64]) -> std::io::Result<()> {
        self.total += ids.len() as u64;
        self.held.extend_from_slice(ids);
        if self.held.len() >= self.budget {
            self.spill()?;
        }
        Ok(())
    }

    /// Ids added so far.
    pub fn total(&self) -> u64 {
        self.total
    }

    fn spill(&mut self) -> std::io::Result<()> {
        self.held.sort_unstable();
        let path = self.dir.join(format!("run-{}.ids", self.runs.len()));
        let mut out = BufWriter::with_capacity(RUN_BUFFER, File::create(&path)?);
        for id in &self.held {
            out.write_all(&id.to_le_bytes())?;
        }
        out.flush()?;
        self.runs.push(path);
        self.held.clear();
        Ok(())
    }

    /// Sorts (and merges the runs) and reports every id seen more than once, the first
    /// `limit` of them by value.
    pub fn finish(mut self, limit: usize) -> std::io::Result<Uniqueness> {
        let mut found = Uniqueness {
            total: self.total,
            ..Uniqueness::default()
        };
        let mut last: Option<u64> = None;
        let mut counted_last = false;
        let mut note = |id: u64, found: &mut Uniqueness| {
            if last == Some(id) {
                if !counted_last {
                    found.repeated_count += 1;
                    if found.repeated.len() < limit {
                        found.repeated.push(id);
                    }
                    counted_last = true;
                }
            } else {
                last = Some(id);
                counted_last = false;
            }
        };
        if self.runs.is_empty() {
            self.held.sort_unstable();
            for &id in &self.held {
                note(id, &mut found);
            }
            return Ok(found);
        }
        if !self.held.is_empty() {
            self.spill()?;
        }
        found.runs = self.runs.len();
        let mut readers = self
            .runs
            .iter()
            .map(|path| Ok(BufReader::with_capacity(RUN_BUFFER, File::open(path)?)))
            .collect::<std::io::Result<Vec<_>>>()?;
        let mut heap = BinaryHeap::new();
        for (i, reader) in readers.iter_mut().enumerate() {
            if let Some(id) = read_id(reader)? {
                heap.push(Reverse((id, i)));
            }
        }
        while let Some(Reverse((id, i))) = heap.pop() {
            note(id, &mut found);
            if let Some(next) = read_id(&mut readers[i])? {
                heap.push(Reverse((next, i)));
            }
        }
        for path in &self.runs {
            let _ = std::fs::remove_file(path);
        }
        Ok(found)
    }
}

fn read_id(reader: &mut impl Read) -> std::io::Result<Option<u64>> {
    let mut bytes = [0u8; ID_BYTES];
    match reader.read_exact(&mut bytes) {
        Ok(()) => Ok(Some(u64::from_le_bytes(bytes))),
        Err(err) if err.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
        Err(err) => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_are_found_in_memory_and_across_spilled_runs() {
        for budget in [1_000_000, 3] {
            let dir = tempfile::tempdir().unwrap();
            let mut store = IdStore::new(budget, dir.path());
            store.extend(&[5, 1, 9]).unwrap();
            store.extend(&[2, 9, 7]).unwrap();
            store.extend(&[1, 1, 8]).unwrap();
            let found = store.finish(10).unwrap();
            assert_eq!(found.total, 9);
            assert_eq!(found.repeated, vec![1, 9], "budget {budget}");
            assert_eq!(found.repeated_count, 2);
            assert_eq!(found.runs > 0, budget == 3);
        }
    }
}
