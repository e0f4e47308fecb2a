//! A high-water mark in a local file, and the lock that makes one store at a time its owner.
//!
//! # Files
//!
//! For a fleet whose namespace is `F` ([`Fleet::namespace`], `fleet.default` unless a
//! setting names another fleet), datacenter `D` and worker `W`, the state directory holds
//! ([`FileStore::path_in`]):
//!
//! | file                    | holds                                                         |
//! |-------------------------|---------------------------------------------------------------|
//! | `F-dcD-wW.mark`         | the mark: ms since the Unix epoch, in decimal, one line; then |
//! |                         | a space and the clock mode, unless it is `monotonic`          |
//! | `F-dcD-wW.mark.lock`    | nothing; its lock says who owns the worker id                 |
//! | `F-dcD-wW.mark.tmp`     | a new mark on its way in (only while one is being written)    |
//!
//! e.g. `fleet.default-dc0-w0.mark` holding `1763780112345`, or `1288835974657 counter` for
//! a [`ClockMode::Counter`] generator, whose marks count ticks from the epoch: a store
//! refuses a mark left by the other kind of clock ([`StateError::OtherClock`]). The name holds
//! the fleet, not the layout: two layouts that could issue the same ids (the same layout
//! spelled twice, or two that differ only in where a field starts) must take turns with a
//! worker id, and share its mark. Sharing a mark only ever makes a generator wait longer,
//! never issue a duplicate, since a mark is an instant, not a tick.
//!
//! Earlier releases named the files `<layout name>-<epoch ms>-dcD-wW.mark`, one set per
//! spelling of a layout. [`FileStore::for_generator`] also claims those of them that exist
//! for its layout ([`legacy_namespaces`](crate::legacy_namespaces)), so it never runs beside
//! a generator of an earlier release, and starts after the largest of their marks.
//!
//! # Protocol
//!
//! A generator reads the mark once, when it is built, and issues nothing at or before it;
//! then, before it issues past its reservation, it calls `reserve(until)` and waits for it.
//! That is safe across restarts. Across two live processes it is not, by itself: both may
//! read the same mark and then issue the same ticks. So ownership comes first:
//!
//! 1. **Claim.** [`FileStore::claim`] takes an exclusive lock ([`File::lock`], an `flock`)
//!    on the lock file and keeps it until the store is dropped, that is, for the life of the
//!    generator that holds it. A second claim, from another process or from this one (the
//!    lock belongs to the open file, not the process), waits until the first store is
//!    dropped, up to a bound ([`DEFAULT_LOCK_WAIT`]), then fails with [`StateError::Busy`]. The
//!    kernel drops the lock when the process dies, however it dies, so a crash never leaves
//!    a stale owner behind. The lock file is never renamed or removed, so every process
//!    locks the same inode.
//! 2. **Load.** The owner reads the mark `M` ([`Store::load`]). Nobody else writes while the
//!    owner lives, so `M` stays true and the generator's first tick is after `M`.
//! 3. **Reserve.** `reserve(U)` writes `max(M, U)`: never lower. The write is atomic and
//!    durable: the new mark goes into the `.tmp` file, which is fsynced, renamed over the
//!    mark, and then the directory is fsynced; only then does `reserve` return, so the
//!    generator never issues an id whose tick a crash could forget.
//! 4. **Release.** On a clean shutdown, `release(R, I)` lowers the mark from `R` to `I`, the
//!    end of the last tick actually issued, if the file still holds exactly `R`; so the next
//!    run starts at once instead of waiting out the reservation. After a crash the mark
//!    stays at the last reservation, and the next run waits until it has passed.
//!
//! Why it is enough: every id the owner issues lies after the `M` it loaded and at or
//! before a mark it has durably written. The next owner can only claim once this one is
//! gone, and then it loads either the released mark (the end of the last tick issued) or,
//! after a crash, the last reservation; both are at or after every id issued, so the next
//! owner's ids all come later. On one host, then, two generators with the same layout,
//! datacenter and worker take turns rather than interleave: two `snowmint gen` started at
//! once print disjoint ids, the second after the first has finished.
//!
//! Why not a provisional reservation at load instead of a lock held throughout: a process
//! that claims the ticks up to `P` when it loads will, if it runs long enough, reserve past
//! `P`, into the ticks the next process took when it loaded after `P`; and making that
//! reservation fail would have two live processes share one worker id by turns, each
//! failing and reclaiming. The lock says plainly that a worker id has one owner at a time.
//!
//! [`FileStore::open`] gives a shared store, which locks only around each read-modify-write
//! (and so waits while an owner lives). It is for tools that look at or adjust a mark, and
//! for callers who own the worker id some other way, such as a registry lease; a generator
//! that is not the only one with its worker id must use a claimed store.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use snowmint::{ClockMode, Layout, Store, StoreError};

use crate::Fleet;

use self::disk::{file_options, lock_within, sibling};
use crate::StateError;

/// How long a store waits for another holder of the lock: longer than a `snowmint gen` of
/// a million ids takes, shorter than a person waits before suspecting a hang.
pub const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(10);

/// How long a mark's write may take between writing the new file and renaming it into
/// place (fsyncs included) before its times tell of a restore.
const RENAME_SLACK_MS: u64 = 1_000;
/// How far a file's times may lag the clock: the kernel stamps them from a clock read at
/// the last timer tick (up to 10 ms old at 100 Hz), so a change time is added this much to
/// stay at or after the change.
const COARSE_CLOCK_MS: u64 = 20;

/// A high-water mark in a file, implementing [`Store`]. See the [module](self) for the
/// files and the protocol.
///
/// # Examples
///
/// ```
/// use snowmint::Store;
/// use snowmint_lease::FileStore;
///
/// let dir = tempfile::tempdir()?;
/// let store = FileStore::claim(dir.path().join("w0.mark"))?;
/// assert_eq!(store.load()?, None);
/// store.reserve(1_000)?;
/// store.reserve(500)?; // never lowers
/// assert_eq!(store.load()?, Some(1_000));
/// store.release(1_000, 900)?;
/// assert_eq!(store.load()?, Some(900));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct FileStore {
    mark: PathBuf,
    tmp: PathBuf,
    lock_path: PathBuf,
    lock: File,
    /// Holds the lock for its whole life (a claimed store), or only around each write.
    owner: bool,
    wait: Duration,
    /// Serializes this store's own writes: an `flock` does not exclude the threads that
    /// share one open file.
    writing: Mutex<()>,
    /// The clock mode of the generator whose marks this store keeps.
    clock: ClockMode,
    /// The files earlier releases kept for this worker id, claimed with this one: their
    /// marks count in [`Store::load`], and their locks keep an older generator out.
    inherited: Vec<FileStore>,
}

impl FileStore {
    /// The name of the mark file for a fleet, datacenter and worker:
    /// `<fleet namespace>-dc<datacenter>-w<worker>.mark`.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint_lease::{FileStore, Fleet};
    ///
    /// assert_eq!(FileStore::file_name(&Fleet::default(), 0, 3), "fleet.default-dc0-w3.mark");
    /// ```
    #[must_use]
    pub fn file_name(fleet: &Fleet, datacenter: u64, worker: u64) -> String {
        Self::name_in(&fleet.namespace(), datacenter, worker)
    }

    /// The mark file's name in a namespace, a fleet's or an earlier release's.
    fn name_in(namespace: &str, datacenter: u64, worker: u64) -> String {
        format!("{namespace}-dc{datacenter}-w{worker}.mark")
    }

    /// The mark file for a fleet, datacenter and worker in `dir`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::path::Path;
    /// use snowmint_lease::{FileStore, Fleet};
    ///
    /// let path = FileStore::path_in(Path::new("/var/lib/snowmint"), &Fleet::default(), 0, 7);
    /// assert_eq!(path, Path::new("/var/lib/snowmint/fleet.default-dc0-w7.mark"));
    /// ```
    #[must_use]
    pub fn path_in(dir: &Path, fleet: &Fleet, datacenter: u64, worker: u64) -> PathBuf {
        dir.join(Self::file_name(fleet, datacenter, worker))
    }

    /// Creates `dir` if need be ([`ensure_state_dir`](crate::ensure_state_dir)) and claims
    /// the mark for a fleet, datacenter and worker in it: what a generator of `layout`
    /// should use. The marks that earlier releases left for the layout in `dir` are claimed
    /// too, and count in [`Store::load`].
    ///
    /// # Errors
    ///
    /// As [`ensure_state_dir`](crate::ensure_state_dir) and [`FileStore::claim`], for the
    /// fleet's file or an earlier release's.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::{Layout, Store};
    /// use snowmint_lease::{FileStore, Fleet};
    ///
    /// let dir = tempfile::tempdir()?;
    /// // A mark that an earlier release left for the Twitter layout.
    /// std::fs::write(dir.path().join("twitter-1288834974657-dc1-w2.mark"), "1763780112345\n")?;
    /// let store = FileStore::for_generator(dir.path(), &Fleet::default(), &Layout::TWITTER, 1, 2)?;
    /// assert!(store.path().ends_with("fleet.default-dc1-w2.mark"));
    /// assert_eq!(store.load()?, Some(1_763_780_112_345));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn for_generator(
        dir: &Path,
        fleet: &Fleet,
        layout: &Layout,
        datacenter: u64,
        worker: u64,
    ) -> Result<FileStore, StateError> {
        crate::ensure_state_dir(dir)?;
        let store = Self::claim(Self::path_in(dir, fleet, datacenter, worker))?;
        let left = crate::legacy_namespaces(layout)
            .into_iter()
            .map(|namespace| dir.join(Self::name_in(&namespace, datacenter, worker)));
        Ok(store.inheriting(Self::claim_left(left, DEFAULT_LOCK_WAIT, false)?))
    }

    /// Claims the mark at `path`: locks its lock file until the store is dropped, waiting
    /// up to [`DEFAULT_LOCK_WAIT`] for another owner to finish. The directory must exist.
    ///
    /// # Errors
    ///
    /// The lock file cannot be opened or locked, or another owner kept it past the wait.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint_lease::FileStore;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let store = FileStore::claim(dir.path().join("w0.mark"))?;
    /// assert!(store.is_owner());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn claim(path: impl Into<PathBuf>) -> Result<FileStore, StateError> {
        Self::claim_within(path, DEFAULT_LOCK_WAIT)
    }

    /// [`FileStore::claim`], waiting at most `wait` for another owner.
    ///
    /// # Errors
    ///
    /// As [`FileStore::claim`]; [`StateError::Busy`] when the wait ran out.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use snowmint_lease::{StateError, FileStore};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("w0.mark");
    /// let first = FileStore::claim(&path)?;
    /// let second = FileStore::claim_within(&path, Duration::from_millis(10));
    /// assert!(matches!(second, Err(StateError::Busy { .. })));
    /// drop(first);
    /// assert!(FileStore::claim_within(&path, Duration::ZERO).is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn claim_within(path: impl Into<PathBuf>, wait: Duration) -> Result<FileStore, StateError> {
        let store = Self::new(path.into(), true, wait)?;
        lock_within(&store.lock, &store.lock_path, wait)?;
        Ok(store)
    }

    /// A shared store for the mark at `path`: it locks only around each write, waiting up to
    /// [`DEFAULT_LOCK_WAIT`] (so a live owner holds its writes off). For tools, and for
    /// callers who own the worker id by other means.
    ///
    /// # Errors
    ///
    /// The lock file cannot be opened (its directory must exist).
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint_lease::FileStore;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let store = FileStore::open(dir.path().join("w0.mark"))?;
    /// assert!(!store.is_owner());
    /// assert_eq!(store.raise(42)?, 42);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(path: impl Into<PathBuf>) -> Result<FileStore, StateError> {
        Self::open_within(path, DEFAULT_LOCK_WAIT)
    }

    /// [`FileStore::open`], whose writes wait at most `wait` for the lock.
    ///
    /// # Errors
    ///
    /// As [`FileStore::open`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use snowmint_lease::FileStore;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("w0.mark");
    /// let _owner = FileStore::claim(&path)?;
    /// let shared = FileStore::open_within(&path, Duration::from_millis(10))?;
    /// assert!(shared.raise(42).unwrap_err().to_string().contains("is locked by another snowmint generator"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_within(path: impl Into<PathBuf>, wait: Duration) -> Result<FileStore, StateError> {
        Self::new(path.into(), false, wait)
    }

    fn new(mark: PathBuf, owner: bool, wait: Duration) -> Result<FileStore, StateError> {
        let lock_path = sibling(&mark, ".lock");
        let lock = file_options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
            .map_err(|source| {
                disk::other_user(&lock_path, source, |path, source| StateError::Open {
                    path,
                    source,
                })
            })?;
        Ok(FileStore {
            tmp: sibling(&mark, ".tmp"),
            mark,
            lock_path,
            lock,
            owner,
            wait,
            writing: Mutex::new(()),
            clock: ClockMode::Monotonic,
            inherited: Vec::new(),
        })
    }

    /// The same store for a generator in clock mode `clock` (default: `monotonic`): it
    /// records the mode with each mark, and refuses a mark left by a clock it cannot follow
    /// ([`ClockMode::follows`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::ClockMode;
    /// use snowmint_lease::FileStore;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("w0.mark");
    /// let counter = FileStore::claim(&path)?.with_clock(ClockMode::Counter);
    /// counter.raise(1_288_834_975_657)?;
    /// assert_eq!(std::fs::read_to_string(&path)?, "1288834975657 counter\n");
    /// drop(counter);
    /// let err = FileStore::claim(&path)?.with_clock(ClockMode::Wall).mark().unwrap_err();
    /// assert!(err.to_string().contains("was left by a generator with clock counter, which this one's clock wall cannot follow"), "{err}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_clock(self, clock: ClockMode) -> FileStore {
        let inherited = self
            .inherited
            .into_iter()
            .map(|store| FileStore { clock, ..store })
            .collect();
        FileStore {
            clock,
            inherited,
            ..self
        }
    }
    /// The mark file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.mark
    }

    /// Whether this store holds the lock for its whole life ([`FileStore::claim`]).
    #[must_use]
    pub fn is_owner(&self) -> bool {
        self.owner
    }

    /// The mark, or `None` if no mark file exists yet. Needs no lock: a mark is replaced by
    /// a rename, so a reader sees the old file or the new one, whole.
    ///
    /// # Errors
    ///
    /// The file cannot be read, or holds anything but a millisecond count
    /// ([`StateError::Corrupt`]): an unreadable mark is never taken for zero.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint_lease::FileStore;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("w0.mark");
    /// std::fs::write(&path, "1763780112345\n")?;
    /// assert_eq!(FileStore::open(&path)?.mark()?, Some(1_763_780_112_345));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn mark(&self) -> Result<Option<u64>, StateError> {
        match disk::read_mark(&self.mark)? {
            Some((_, recorded)) if !self.clock.follows(recorded) => Err(StateError::OtherClock {
                path: self.mark.clone(),
                recorded,
                mode: self.clock,
            }),
            read => Ok(read.map(|(ms, _)| ms)),
        }
    }

    /// Raises the mark to `until_ms` unless it is already there or higher, durably, and
    /// returns the mark now recorded.
    ///
    /// # Errors
    ///
    /// The lock, the read or the write failed; the mark is then unchanged.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint_lease::FileStore;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let store = FileStore::claim(dir.path().join("w0.mark"))?;
    /// assert_eq!(store.raise(2_000)?, 2_000);
    /// assert_eq!(store.raise(1_000)?, 2_000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn raise(&self, until_ms: u64) -> Result<u64, StateError> {
        let _exclusive = self.exclusive()?;
        match self.mark()? {
            Some(mark) if mark >= until_ms => Ok(mark),
            _ => {
                self.write(until_ms)?;
                Ok(until_ms)
            }
        }
    }

    /// Lowers the mark from `reserved_ms` to `issued_ms` if the file still holds exactly
    /// `reserved_ms` (nobody reserved after it) and `issued_ms` is lower; returns whether it
    /// did.
    ///
    /// # Errors
    ///
    /// The lock, the read or the write failed; the mark is then unchanged, which is safe.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint_lease::FileStore;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let store = FileStore::claim(dir.path().join("w0.mark"))?;
    /// store.raise(2_000)?;
    /// assert!(!store.lower(1_999, 1_500)?); // the file holds 2000, not 1999
    /// assert!(store.lower(2_000, 1_500)?);
    /// assert_eq!(store.mark()?, Some(1_500));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lower(&self, reserved_ms: u64, issued_ms: u64) -> Result<bool, StateError> {
        let _exclusive = self.exclusive()?;
        if issued_ms >= reserved_ms || self.mark()? != Some(reserved_ms) {
            return Ok(false);
        }
        self.write(issued_ms)?;
        Ok(true)
    }

    /// Checks that the lock path still names the file this store locked. A directory
    /// restored from a backup, or a lock file replaced or removed by hand, gives the path
    /// a new file, which another process can lock while this one holds the old: the
    /// holder must stop issuing.
    ///
    /// # Errors
    ///
    /// [`StateError::Replaced`] when the path names another file or none; [`StateError::Read`] when
    /// neither can be looked at.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint_lease::FileStore;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let store = FileStore::claim(dir.path().join("w0.mark"))?;
    /// store.check_lock_path()?;
    /// // Restored from a backup: the same name, another file.
    /// let lock = dir.path().join("w0.mark.lock");
    /// std::fs::remove_file(&lock)?;
    /// std::fs::write(&lock, "")?;
    /// assert!(store.check_lock_path().unwrap_err().to_string().contains("is no longer the file this process locked"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check_lock_path(&self) -> Result<(), StateError> {
        use std::os::unix::fs::MetadataExt;
        let unreadable = |source| StateError::Read {
            path: self.lock_path.clone(),
            source,
        };
        let held = self.lock.metadata().map_err(unreadable)?;
        let same = match std::fs::metadata(&self.lock_path) {
            Ok(named) => (named.dev(), named.ino()) == (held.dev(), held.ino()),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => false,
            Err(err) => return Err(unreadable(err)),
        };
        if same {
            Ok(())
        } else {
            Err(StateError::Replaced {
                path: self.lock_path.clone(),
            })
        }
    }

    /// When the lock file this store holds was created, or last put in place or
    /// truncated (its change time: a restore sets it, and no tool can set it back), in ms
    /// since the Unix epoch, rounded up to what the clock read then. A lock file is never
    /// written, so a holder of a file that a restore replaced last checked it
    /// ([`FileStore::check_lock_path`]) before then.
    ///
    /// # Errors
    ///
    /// The file cannot be looked at.
    pub fn lock_changed_ms(&self) -> Result<u64, StateError> {
        use std::os::unix::fs::MetadataExt;
        let held = self.lock.metadata().map_err(|source| StateError::Read {
            path: self.lock_path.clone(),
            source,
        })?;
        let secs = u64::try_from(held.ctime()).unwrap_or(0);
        let nanos = u64::try_from(held.ctime_nsec()).unwrap_or(0);
        Ok(secs * 1_000 + nanos.div_ceil(1_000_000) + COARSE_CLOCK_MS)
    }

    /// When the mark file was put in place by something other than this crate, if it was:
    /// its change time (ms since the Unix epoch, rounded up) when that is more than a
    /// second past its modification time. A mark is written to a new file and renamed into
    /// place within moments; a restore that keeps the backup's modification time (`tar`,
    /// `rsync -t`, `cp -p`) leaves the two far apart. `None` when they agree, or there is no
    /// mark file.
    ///
    /// # Errors
    ///
    /// The file exists but cannot be looked at.
    pub fn mark_restored_ms(&self) -> Result<Option<u64>, StateError> {
        use std::os::unix::fs::MetadataExt;
        let meta = match std::fs::metadata(&self.mark) {
            Ok(meta) => meta,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(StateError::Read {
                    path: self.mark.clone(),
                    source,
                });
            }
        };
        let ms = |secs: i64, nanos: i64| {
            u64::try_from(secs).unwrap_or(0) * 1_000
                + u64::try_from(nanos).unwrap_or(0).div_ceil(1_000_000)
        };
        let (changed, modified) = (
            ms(meta.ctime(), meta.ctime_nsec()),
            ms(meta.mtime(), meta.mtime_nsec()),
        );
        Ok((changed > modified + RENAME_SLACK_MS).then_some(changed + COARSE_CLOCK_MS))
    }

    /// Excludes every other writer until the guard drops.
    fn exclusive(&self) -> Result<Exclusive<'_>, StateError> {
        let serial = self.writing.lock().unwrap_or_else(PoisonError::into_inner);
        if !self.owner {
            lock_within(&self.lock, &self.lock_path, self.wait)?;
        }
        Ok(Exclusive {
            store: self,
            _serial: serial,
        })
    }

    fn write(&self, mark_ms: u64) -> Result<(), StateError> {
        let line = crate::mark::encode_line(mark_ms, self.clock);
        disk::replace(&self.mark, &self.tmp, line.as_bytes())
    }
}

/// A held write lock: the store's mutex, and for a shared store its file lock too.
struct Exclusive<'a> {
    store: &'a FileStore,
    _serial: MutexGuard<'a, ()>,
}

impl Drop for Exclusive<'_> {
    fn drop(&mut self) {
        if !self.store.owner {
            // Closing the file would drop the lock anyway; failing here only delays that.
            let _ = self.store.lock.unlock();
        }
    }
}

impl Store for FileStore {
    /// The mark, or the largest of the marks an earlier release left for this worker id
    /// if that is larger.
    fn load(&self) -> Result<Option<u64>, StoreError> {
        let (left, _) = self.inherited_mark()?;
        Ok(self.mark()?.max(left))
    }

    fn reserve(&self, until_ms: u64) -> Result<u64, StoreError> {
        self.raise(until_ms)?;
        Ok(until_ms)
    }

    fn release(&self, reserved_ms: u64, issued_ms: u64) -> Result<(), StoreError> {
        self.lower(reserved_ms, issued_ms)?;
        Ok(())
    }
}

pub(crate) mod disk;
mod left;
#[cfg(test)]
mod tests;
