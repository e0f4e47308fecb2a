//! The mark files that earlier releases kept under a layout's name and epoch, taken over by
//! a generator of the same layout under its fleet's name.

use std::path::PathBuf;
use std::time::Duration;

use super::FileStore;
use crate::StateError;

impl FileStore {
    /// Claims each of `paths`, waiting up to `wait` for each: a generator of an earlier
    /// release still running holds its lock. With `every` false, only the files that
    /// release left (the mark or the lock file exists) are claimed, and no file is created.
    ///
    /// # Errors
    ///
    /// As [`FileStore::claim_within`]: [`StateError::Busy`] while an older generator holds one.
    pub(crate) fn claim_left(
        paths: impl Iterator<Item = PathBuf>,
        wait: Duration,
        every: bool,
    ) -> Result<Vec<FileStore>, StateError> {
        let mut claimed = Vec::new();
        for path in paths {
            let lock = super::disk::sibling(&path, ".lock");
            if every || path.exists() || lock.exists() {
                claimed.push(FileStore::claim_within(path, wait)?);
            }
        }
        Ok(claimed)
    }

    /// The same store, with the marks of `inherited` counted in its load.
    pub(crate) fn inheriting(self, inherited: Vec<FileStore>) -> FileStore {
        FileStore { inherited, ..self }
    }

    /// The largest mark left in the inherited files, and how many of them hold one.
    ///
    /// # Errors
    ///
    /// As [`FileStore::mark`], for any of them.
    pub(crate) fn inherited_mark(&self) -> Result<(Option<u64>, usize), StateError> {
        let mut largest = None;
        let mut holding = 0;
        for store in &self.inherited {
            if let Some(mark) = store.mark()? {
                largest = largest.max(Some(mark));
                holding += 1;
            }
        }
        Ok((largest, holding))
    }
}
