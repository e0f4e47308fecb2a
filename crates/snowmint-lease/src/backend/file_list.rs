//! Listing a `file:` registry: which lock files are locked, found without taking a lock.
//!
//! A worker id is held while a process holds the `flock` on its `.worker.lock` file. Trying
//! the lock would tell, but would also take it for an instant, and a newcomer trying at
//! that instant would pass the worker id over. `fcntl(F_GETLK)` takes nothing, but sees
//! only POSIX locks, never an `flock`. The kernel's table of every lock held, `/proc/locks`,
//! names each locked file by device and inode, and the process that locked it: a listing
//! reads it and matches the lock files' own. So it sees the locks of this host only (a
//! directory on a network file system shows the holders of other hosts as free), and a
//! holder is named by its process id: the registry keeps no holder name.

use std::collections::{BTreeMap, HashMap};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::listing::{Lasts, ListFilter, Listing, Record, now_ms};
use crate::registry::LeaseError;

/// Where the kernel lists the file locks held on this host.
const PROC_LOCKS: &str = "/proc/locks";

/// A file by device (major, minor) and inode, as `/proc/locks` names it.
type FileId = (u32, u32, u64);

/// The registry in `dir`, as `filter` keeps it.
pub(super) fn list_dir(dir: &Path, filter: &ListFilter) -> Result<Listing, LeaseError> {
    let cannot = |what: &str, path: &Path, err| {
        LeaseError::unavailable_because("file", format!("cannot {what} {}", path.display()), err)
    };
    let locks = std::fs::read_to_string(PROC_LOCKS)
        .map_err(|err| cannot("read", Path::new(PROC_LOCKS), err))?;
    let locks = locked(&locks);
    let read_at_ms = now_ms();
    let mut records = Vec::new();
    let mut layouts = BTreeMap::new();
    for entry in std::fs::read_dir(dir).map_err(|err| cannot("list", dir, err))? {
        let entry = entry.map_err(|err| cannot("list", dir, err))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(namespace) = name.strip_suffix(".layout") {
            let path = entry.path();
            let layout =
                std::fs::read_to_string(&path).map_err(|err| cannot("read", &path, err))?;
            layouts.insert(namespace.to_string(), layout.trim_end().to_string());
            continue;
        }
        // Every worker id ever claimed has its lock file; its mark file only once a mark
        // was written.
        let Some((namespace, dc, worker)) = name.strip_suffix(".worker.lock").and_then(worker_file)
        else {
            continue;
        };
        let lock = entry.path();
        let meta = std::fs::metadata(&lock).map_err(|err| cannot("read", &lock, err))?;
        let mark_path = lock.with_extension("");
        let mark = crate::state_file::disk::read_mark(&mark_path)
            .map_err(|err| LeaseError::unavailable_because("file", "", err))?;
        let mut record = Record {
            high_water_ms: mark.map(|(ms, _)| ms),
            ..Record::new(namespace, dc, worker, Lasts::Process)
        };
        if let Some(pid) = locks.get(&file_id(&meta)) {
            record = record.held_by(&format!("pid {pid}"));
        }
        records.push(record);
    }
    Ok(Listing::new("file", read_at_ms, records, &layouts, filter))
}

/// The namespace, datacenter and worker of a file named `<namespace>-dc<D>-w<W>`.
fn worker_file(stem: &str) -> Option<(&str, u64, u64)> {
    let (namespace, rest) = stem.rsplit_once("-dc")?;
    let (dc, worker) = rest.split_once("-w")?;
    Some((namespace, dc.parse().ok()?, worker.parse().ok()?))
}

/// The device and inode of a file, as `/proc/locks` writes them: the device's major and
/// minor numbers (glibc's encoding of `st_dev`), and the inode.
fn file_id(meta: &std::fs::Metadata) -> FileId {
    let dev = meta.dev();
    // The major number is bits 8..20 and 32..44, the minor bits 0..8 and 20..44 (glibc's
    // `gnu_dev_major` and `gnu_dev_minor`); each fits in 32 bits.
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    (
        u32::try_from(major).unwrap_or(u32::MAX),
        u32::try_from(minor).unwrap_or(u32::MAX),
        meta.ino(),
    )
}

/// The files `/proc/locks` says are locked, with the process that holds each lock
/// (`-1` for a lock that belongs to an open file, not a process). Lines of processes
/// waiting for a lock (`1: -> FLOCK ...`) hold nothing.
///
/// A line: `1: FLOCK  ADVISORY  WRITE 1462 fe:00:753938 0 EOF`.
fn locked(table: &str) -> HashMap<FileId, i64> {
    let mut locked = HashMap::new();
    for line in table.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.get(1) == Some(&"->") {
            continue;
        }
        let (Some(pid), Some(file)) = (fields.get(4), fields.get(5)) else {
            continue;
        };
        let mut parts = file.split(':');
        let (Some(major), Some(minor), Some(inode), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let (Ok(major), Ok(minor), Ok(inode), Ok(pid)) = (
            u32::from_str_radix(major, 16),
            u32::from_str_radix(minor, 16),
            inode.parse::<u64>(),
            pid.parse::<i64>(),
        ) else {
            continue;
        };
        locked.insert((major, minor, inode), pid);
    }
    locked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernels_table_names_locked_files_and_their_holders() {
        let table = "1: FLOCK  ADVISORY  WRITE 1462 fe:00:753938 0 EOF\n\
                     1: -> FLOCK  ADVISORY  WRITE 1500 fe:00:753938 0 EOF\n\
                     2: OFDLCK ADVISORY  READ -1 00:06:3 0 EOF\n\
                     3: garbage\n";
        let locked = locked(table);
        assert_eq!(locked.len(), 2);
        assert_eq!(locked[&(0xfe, 0, 753_938)], 1462);
        assert_eq!(locked[&(0, 6, 3)], -1);
    }

    #[test]
    fn a_worker_files_name_says_where_it_lies() {
        assert_eq!(
            worker_file("fleet.default-dc0-w3"),
            Some(("fleet.default", 0, 3))
        );
        assert_eq!(
            worker_file("twitter-1288834974657-dc2-w31"),
            Some(("twitter-1288834974657", 2, 31))
        );
        assert_eq!(worker_file("fleet.default"), None);
    }

    /// A file this test locks shows in the kernel's table under the identity computed from
    /// its metadata: the two encodings of the device agree.
    #[test]
    fn a_file_locked_here_is_found_locked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fleet.default-dc0-w0.worker.lock");
        let file = std::fs::File::create(&path).unwrap();
        let id = file_id(&std::fs::metadata(&path).unwrap());
        let read = || locked(&std::fs::read_to_string(PROC_LOCKS).unwrap());
        assert!(!read().contains_key(&id));
        file.lock().unwrap();
        assert_eq!(read().get(&id), Some(&i64::from(std::process::id())));
    }
}
