//! Worker ids shared by processes on one host through a directory of locked files: no
//! server needed. A worker id is held while its file is locked; the kernel drops the lock
//! when the process dies, so a crash frees the id at once. The file holds the id's
//! high-water mark, kept across holders, and raised with every reservation of the generator
//! that holds it ([`Registry::reserve_now`]), so a successor that starts on another state
//! directory, even with its clock behind, issues nothing at or below an id already issued.
//!
//! A lock holds for as long as the process lives, but a restore of the directory can put a
//! new file in its place behind the holder's back. So a hold is confirmed by a check that
//! the path still names the file locked, and vouched for only [`FileRegistry::CONFIRMS_FOR`] past it: the
//! holder is fenced like the holder of an expiring lease ([`Registry::confirms_for`]).
//!
//! The fleet's layout is recorded beside them, in `<namespace>.layout`, by the first process
//! that takes one of its worker ids; a process of another layout is refused. The largest
//! reach of its processes is kept in `<namespace>.reach` (see [`Claim::reaching`]). Worker files
//! that earlier releases kept under the layout's name and epoch
//! (`twitter-1288834974657-dc0-w3.worker`) are claimed with the fleet's, so a process of
//! an earlier release that still holds one keeps its worker id, and the successor starts
//! after its mark.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::listing::{ListFilter, Listing};
use crate::registry::{Claim, Lease, LeaseError, Registry};
use crate::{FileStore, StateError, ensure_state_dir};

/// A directory of `<namespace>-dc<D>-w<W>.worker` files, one per worker id, and a
/// `<namespace>.layout` file per fleet.
#[derive(Debug)]
pub struct FileRegistry {
    dir: PathBuf,
    /// The files this process holds, by (datacenter, worker).
    held: Mutex<HashMap<(u64, u64), Arc<FileStore>>>,
}

impl FileRegistry {
    /// How long a check that the lock file is still the one locked (a renewal: a `stat` and a
    /// read, and a write only when its mark is behind) vouches for the hold: the holder is
    /// fenced this long past its last check, and checks every quarter of it. A holder whose
    /// file a restore replaced, running or paused, issues nothing past its last check before
    /// the restore and this, whatever it reserved: that bounds how far a newcomer's ids must
    /// start past the restore. Three checks in a row may come late before ids wait.
    pub const CONFIRMS_FOR: Duration = Duration::from_secs(1);

    /// A registry in `dir` (created on first use, mode 0700).
    #[must_use]
    pub fn new(dir: PathBuf) -> FileRegistry {
        FileRegistry {
            dir,
            held: Mutex::new(HashMap::new()),
        }
    }

    fn path(&self, namespace: &str, datacenter: u64, worker: u64) -> PathBuf {
        self.dir
            .join(format!("{namespace}-dc{datacenter}-w{worker}.worker"))
    }

    /// Records the claim's layout as its fleet's, unless one is recorded; then refuses a
    /// claim of another layout. The file appears whole or not at all: it is written under
    /// a name of its own and linked into place, which fails if another process was first.
    fn check_layout(&self, claim: &Claim) -> Result<(), LeaseError> {
        let path = self.dir.join(format!("{}.layout", claim.namespace));
        let failed = |what: &str, err: std::io::Error| {
            LeaseError::unavailable_because(
                "file",
                format!("cannot {what} {}", path.display()),
                err,
            )
        };
        if !path.exists() {
            let tmp = self
                .dir
                .join(format!("{}.layout.{}", claim.namespace, std::process::id()));
            std::fs::write(&tmp, format!("{}\n", claim.layout)).map_err(|e| failed("write", e))?;
            let linked = std::fs::hard_link(&tmp, &path);
            let _ = std::fs::remove_file(&tmp);
            match linked {
                Ok(()) => return Ok(()),
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(err) => return Err(failed("write", err)),
            }
        }
        let recorded = std::fs::read_to_string(&path).map_err(|e| failed("read", e))?;
        match claim.other_layout(recorded.trim_end()) {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }

    /// Claims `worker`'s file and those an earlier release kept for it; `None` when any of
    /// them is held by a live process.
    fn claim_worker(&self, claim: &Claim, worker: u64) -> Result<Option<FileStore>, StateError> {
        let store = match FileStore::claim_within(
            self.path(&claim.namespace, claim.datacenter, worker),
            Duration::ZERO,
        ) {
            Ok(store) => store,
            Err(StateError::Busy { .. }) => return Ok(None),
            Err(err) => return Err(err),
        };
        let left = claim
            .legacy
            .iter()
            .map(|namespace| self.path(namespace, claim.datacenter, worker));
        // Every one, created if need be: a process of an earlier release started during an
        // upgrade then finds the worker id held under its own name too.
        match FileStore::claim_left(left, Duration::ZERO, true) {
            Ok(left) => Ok(Some(store.inheriting(left).with_clock(claim.clock))),
            Err(StateError::Busy { .. }) => Ok(None),
            Err(err) => Err(err),
        }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<(u64, u64), Arc<FileStore>>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The file of a lease this process holds; the map's lock is not kept while it is
    /// written, so one worker's fsync never waits for another's. A file whose path now
    /// names another file (the directory was restored) is let go, and the lease is lost.
    fn file(&self, lease: &Lease) -> Result<Arc<FileStore>, LeaseError> {
        let file = self
            .held()
            .get(&(lease.datacenter, lease.worker))
            .cloned()
            .ok_or_else(|| LeaseError::lost(lease, "this process no longer holds its file"))?;
        match file.check_lock_path() {
            Ok(()) => Ok(file),
            // A lock file that cannot be looked at may have been replaced as well: the
            // hold cannot be confirmed, so it stops now rather than at its fence.
            Err(err) => {
                self.held().remove(&(lease.datacenter, lease.worker));
                tracing::error!(worker = lease.worker, error = %err, "stopped issuing with this worker id");
                Err(LeaseError::lost(lease, err.to_string()))
            }
        }
    }
}

/// The file's error names the path and what failed: the registry adds nothing to it.
fn unavailable(err: StateError) -> LeaseError {
    LeaseError::unavailable_because("file", "", err)
}

#[async_trait::async_trait]
impl Registry for FileRegistry {
    fn backend(&self) -> &'static str {
        "file"
    }

    fn expires(&self) -> bool {
        false
    }

    fn confirms_for(&self) -> Option<Duration> {
        Some(FileRegistry::CONFIRMS_FOR)
    }

    async fn acquire(&self, claim: &Claim) -> Result<Lease, LeaseError> {
        ensure_state_dir(&self.dir).map_err(unavailable)?;
        self.check_layout(claim)?;
        // The largest reach of the fleet's servers, raised to this one's before it issues:
        // `<namespace>.reach`, kept as a mark is (never lowered, written durably).
        let reach = FileStore::open(self.dir.join(format!("{}.reach", claim.namespace)))
            .and_then(|file| file.raise(claim.reach_ms()))
            .map_err(unavailable)?;
        let claim = &claim.clone().reaching(reach);
        let claim = &crate::legacy::widened(
            claim,
            &crate::legacy::in_dir(&self.dir).map_err(unavailable)?,
        )?;
        // A directory swapped in whole keeps the change times of its staging: it vouches
        // for its files only since it was first seen here.
        let placed = super::file_directory::in_place_since(&self.dir).map_err(unavailable)?;
        // A free worker whose mark this claim's clock cannot follow is passed over; if no
        // other is free, that refusal, naming both clocks, is the answer.
        let mut other_clock = None;
        for worker in 0..claim.workers {
            let Some(store) = self.claim_worker(claim, worker).map_err(unavailable)? else {
                continue;
            };
            let high_water_ms = match store.mark().and_then(|own| {
                let (left, holding) = store.inherited_mark()?;
                if holding > 1 {
                    tracing::warn!(
                        worker,
                        namespaces = ?claim.legacy,
                        "marks of this worker id were left under {holding} namespaces of earlier releases; starting after the largest"
                    );
                }
                Ok(own.max(left))
            }) {
                Ok(mark) => mark,
                Err(err @ StateError::OtherClock { .. }) => {
                    other_clock.get_or_insert(err);
                    continue;
                }
                Err(err) => return Err(unavailable(err)),
            };
            // A holder of the file that a restore replaced checked it last before the new
            // one was put in place, and issued nothing past that and its reach. A restore
            // in place shows in the lock file's change time too (it is truncated or
            // replaced), or, when a tool skipped the empty lock file, in a mark file whose
            // change time is far past its modification time. A directory swapped in whole
            // shows in neither, but in its own record (`placed`).
            let since = store
                .lock_changed_ms()
                .and_then(|lock| Ok(lock.max(store.mark_restored_ms()?.unwrap_or(0))))
                .map_err(unavailable)?
                .max(placed);
            self.held()
                .insert((claim.datacenter, worker), Arc::new(store));
            return Ok(Lease {
                datacenter: claim.datacenter,
                worker,
                high_water_ms: claim.start_after(
                    crate::legacy::after_leads(claim, high_water_ms),
                    since,
                    worker,
                ),
                token: 0,
            });
        }
        if let Some(err) = other_clock {
            return Err(unavailable(err));
        }
        Err(LeaseError::exhausted(claim))
    }

    fn reserve_now(&self, lease: &Lease, until_ms: u64) -> Option<Result<(), LeaseError>> {
        Some(
            self.file(lease)
                .and_then(|file| file.raise(until_ms).map_err(unavailable))
                .map(drop),
        )
    }

    async fn renew(
        &self,
        _claim: &Claim,
        lease: &Lease,
        high_water_ms: u64,
    ) -> Result<(), LeaseError> {
        let file = self.file(lease)?;
        file.raise(high_water_ms).map_err(unavailable)?;
        Ok(())
    }

    async fn give_back(
        &self,
        _claim: &Claim,
        lease: &Lease,
        high_water_ms: u64,
    ) -> Result<(), LeaseError> {
        let Some(store) = self.held().remove(&(lease.datacenter, lease.worker)) else {
            return Ok(());
        };
        // A file a restore put in place is another holder's now: this one writes nothing
        // to it (its mark could lower the newcomer's).
        if let Err(err) = store.check_lock_path() {
            tracing::warn!(worker = lease.worker, error = %err, "gave the worker id back without a mark");
            return Ok(());
        }
        // Set the mark to the one `Registry::release` chose: the last id issued (nothing
        // past it was, so a successor need not wait out the reservation), never below the
        // mark the lease was acquired with.
        if let Some(mark) = store.mark().map_err(unavailable)? {
            if mark > high_water_ms {
                store.lower(mark, high_water_ms).map_err(unavailable)?;
            } else {
                store.raise(high_water_ms).map_err(unavailable)?;
            }
        } else {
            store.raise(high_water_ms).map_err(unavailable)?;
        }
        Ok(())
    }

    async fn list(&self, filter: &ListFilter) -> Result<Listing, LeaseError> {
        super::file_list::list_dir(&self.dir, filter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn distinct_workers_then_exhaustion_then_reuse_with_the_mark() {
        let dir = tempfile::tempdir().unwrap();
        let registry = FileRegistry::new(dir.path().to_path_buf());
        let claim = Claim::new("twitter-1", 3, 8, "host", Duration::from_secs(10));
        let mut leases = Vec::new();
        for _ in 0..8 {
            leases.push(registry.acquire(&claim).await.unwrap());
        }
        let mut workers: Vec<u64> = leases.iter().map(|l| l.worker).collect();
        workers.dedup();
        assert_eq!(workers, (0..8).collect::<Vec<_>>());
        assert_eq!(
            registry.acquire(&claim).await.unwrap_err().to_string(),
            "all 8 worker ids of datacenter 3 of fleet \"twitter-1\" are held; retrying (see who holds them: snowmint fleet --lease URL --fleet twitter-1 --datacenter 3)"
        );
        // Marks an hour ahead: past the floor of the new lock files.
        let later = now_ms() + 3_600_000;
        registry
            .renew(&claim, &leases[5], later + 1_000)
            .await
            .unwrap();
        registry.release(&claim, &leases[5], later).await.unwrap();
        let again = registry.acquire(&claim).await.unwrap();
        assert_eq!((again.worker, again.high_water_ms), (5, Some(later)));
    }

    fn now_ms() -> u64 {
        snowmint::whole_ms(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap(),
        )
    }

    /// Copies every file of `from` into `to`, as a backup or a restore does: new files.
    fn copy_files(from: &std::path::Path, to: &std::path::Path) {
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }

    /// A holder stopped before it noticed the restore gives its worker id back without
    /// writing to the restored file, which is a newcomer's now.
    #[tokio::test]
    async fn a_release_after_a_restore_leaves_the_newcomers_mark_alone() {
        let dir = tempfile::tempdir().unwrap();
        let backup = tempfile::tempdir().unwrap();
        let claim = |identity| Claim::new("fleet.default", 0, 1, identity, Duration::from_secs(10));
        let holder = FileRegistry::new(dir.path().to_path_buf());
        let held = holder.acquire(&claim("a")).await.unwrap();
        copy_files(dir.path(), backup.path());
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            std::fs::remove_file(entry.unwrap().path()).unwrap();
        }
        copy_files(backup.path(), dir.path());
        let newcomer = FileRegistry::new(dir.path().to_path_buf());
        let taken = newcomer.acquire(&claim("b")).await.unwrap();
        let far = now_ms() + 3_600_000;
        newcomer.reserve_now(&taken, far).unwrap().unwrap();

        holder.release(&claim("a"), &held, 1).await.unwrap();
        let mark = dir.path().join("fleet.default-dc0-w0.worker");
        assert_eq!(
            FileStore::open(&mark).unwrap().mark().unwrap(),
            Some(far),
            "the old holder's release lowered the newcomer's mark"
        );
    }

    /// A restore in place that skips the empty lock file and keeps the backup's times
    /// (`rsync -t`): the successor of a holder that died since starts past the restore.
    #[tokio::test]
    async fn a_mark_restored_in_place_floors_the_successor() {
        let dir = tempfile::tempdir().unwrap();
        let reach = Duration::from_secs(2);
        let claim = |identity| {
            Claim::new("fleet.default", 0, 1, identity, Duration::from_secs(10)).with_reach(reach)
        };
        let mark = dir.path().join("fleet.default-dc0-w0.worker");
        let (old_mark, old_time) = {
            let holder = FileRegistry::new(dir.path().to_path_buf());
            let held = holder.acquire(&claim("a")).await.unwrap();
            holder
                .reserve_now(&held, now_ms() + 1_000)
                .unwrap()
                .unwrap();
            let backup = (
                std::fs::read(&mark).unwrap(),
                std::fs::metadata(&mark).unwrap(),
            );
            std::thread::sleep(Duration::from_millis(1_100));
            holder
                .reserve_now(&held, now_ms() + 5_000)
                .unwrap()
                .unwrap();
            (backup.0, backup.1.modified().unwrap())
            // Dies: the lock goes with the registry.
        };
        std::thread::sleep(Duration::from_millis(1_100));
        let restored = now_ms();
        let tmp = dir.path().join("restoring");
        std::fs::write(&tmp, old_mark).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&tmp)
            .unwrap()
            .set_modified(old_time)
            .unwrap();
        std::fs::rename(&tmp, &mark).unwrap();

        let successor = FileRegistry::new(dir.path().to_path_buf());
        let taken = successor.acquire(&claim("b")).await.unwrap();
        let start = taken.high_water_ms.unwrap();
        assert!(start >= restored + 2_000, "{start} {restored}");
    }

    /// A directory restored from a backup gives every lock file a new inode: a newcomer
    /// locks the new file while the holder still holds the old. The holder stops at its
    /// next reservation, and the newcomer starts after anything the holder could have
    /// reserved before then.
    #[tokio::test]
    async fn a_restored_directory_stops_its_holder_and_a_newcomer_starts_past_its_reach() {
        let dir = tempfile::tempdir().unwrap();
        let backup = tempfile::tempdir().unwrap();
        let reach = Duration::from_secs(2);
        let claim = |identity| {
            Claim::new("fleet.default", 0, 1, identity, Duration::from_secs(10)).with_reach(reach)
        };
        let holder = FileRegistry::new(dir.path().to_path_buf());
        let held = holder.acquire(&claim("a")).await.unwrap();
        let reserved = now_ms() + 1_000;
        holder.reserve_now(&held, reserved).unwrap().unwrap();
        copy_files(dir.path(), backup.path());
        // A reservation the backup lacks.
        holder.reserve_now(&held, reserved + 500).unwrap().unwrap();

        for entry in std::fs::read_dir(dir.path()).unwrap() {
            std::fs::remove_file(entry.unwrap().path()).unwrap();
        }
        let restored = now_ms();
        copy_files(backup.path(), dir.path());

        let newcomer = FileRegistry::new(dir.path().to_path_buf());
        let taken = newcomer.acquire(&claim("b")).await.unwrap();
        assert_eq!(taken.worker, 0, "the restored file is not locked");
        let start = taken.high_water_ms.unwrap();
        assert!(start >= restored + 2_000, "{start} {restored}");
        assert!(start > reserved + 500);

        let err = holder
            .reserve_now(&held, reserved + 1_000)
            .unwrap()
            .unwrap_err();
        assert!(matches!(err, LeaseError::Lost { .. }), "{err}");
        assert!(
            err.to_string()
                .contains("is no longer the file this process locked"),
            "{err}"
        );
        // Let go: the holder acquires again, and finds the worker held by the newcomer.
        assert!(matches!(
            holder
                .renew(&claim("a"), &held, reserved)
                .await
                .unwrap_err(),
            LeaseError::Lost { .. }
        ));
        assert!(matches!(
            holder.acquire(&claim("a")).await.unwrap_err(),
            LeaseError::Exhausted { .. }
        ));
    }
}
