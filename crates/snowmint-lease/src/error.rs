//! Why a state file or its directory could not be used; a registry's errors are
//! [`LeaseError`](crate::LeaseError).

use std::io;
use std::path::PathBuf;
use std::time::Duration;

/// Why a high-water-mark file or its directory could not be used. Every message names the
/// path and what could not be done with it; what the system said is the
/// [`source`](std::error::Error::source).
///
/// # Examples
///
/// ```
/// use snowmint_lease::FileStore;
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("w0.mark");
/// std::fs::write(&path, "soon")?;
/// let err = FileStore::open(&path)?.mark().unwrap_err();
/// assert!(err.to_string().ends_with(r#"w0.mark is corrupt: found "soon", expected milliseconds since the Unix epoch"#));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// A file could not be opened or created.
    #[error("cannot open {}", .path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// A file was refused to this process because another user owns it: the state
    /// directory was last used by a process running as someone else (a container run with
    /// another `--user`, a unit with another `User=`).
    #[error(
        "cannot open {}: it belongs to uid {owner} and this process runs as uid {user}; run as uid {owner}, or give the state directory to uid {user} (chown -R {user} {})",
        .path.display(),
        .path.parent().unwrap_or(std::path::Path::new(".")).display()
    )]
    OtherUser {
        /// The file.
        path: PathBuf,
        /// The user id that owns it.
        owner: u32,
        /// The user id this process runs as.
        user: u32,
        /// What the system said.
        source: io::Error,
    },
    /// The lock could not be taken for a reason other than another holder.
    #[error("cannot lock {}", .path.display())]
    Lock {
        /// The lock file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// Another process (or another store in this one) held the lock for longer than the
    /// store waits: it is issuing ids for this worker id.
    #[error(
        "{} is locked by another snowmint generator with this layout, datacenter and worker; gave up after {} ms",
        .path.display(),
        .waited.as_millis()
    )]
    Busy {
        /// The lock file.
        path: PathBuf,
        /// How long the store waited.
        waited: Duration,
    },
    /// The mark file could not be read.
    #[error("cannot read {}", .path.display())]
    Read {
        /// The mark file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// A new mark could not be written durably.
    #[error("cannot write {}", .path.display())]
    Write {
        /// The file being written: the temporary file, the mark or its directory.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// The mark was left by a generator whose ids count something else: a counter's marks
    /// are counts of ticks, a clock's are instants, and neither may follow the other.
    #[error(
        "high-water mark {} was left by a generator with clock {recorded}, which this one's clock {mode} cannot follow: give it another worker id, or run it with clock {recorded}",
        .path.display()
    )]
    OtherClock {
        /// The mark file.
        path: PathBuf,
        /// The clock mode the mark records.
        recorded: snowmint::ClockMode,
        /// This generator's clock mode.
        mode: snowmint::ClockMode,
    },
    /// The mark file holds something other than a millisecond count. It is never read as
    /// zero: ids up to an unknown instant may have been issued.
    #[error(
        "mark file {} is corrupt: found {found}, expected milliseconds since the Unix epoch",
        .path.display()
    )]
    Corrupt {
        /// The mark file.
        path: PathBuf,
        /// What it holds, quoted and cut short, or "an empty file".
        found: String,
    },
    /// The lock path no longer names the file this store locked: the directory was
    /// restored from a backup, or the file replaced or removed by hand. Another process
    /// can lock the new file while this one holds the old, so this one stops issuing.
    #[error(
        "{} is no longer the file this process locked (its directory was restored from a backup, or the file was replaced or removed): another process may hold the worker id now",
        .path.display()
    )]
    Replaced {
        /// The lock file.
        path: PathBuf,
    },
    /// The state directory could not be created.
    #[error("cannot create state directory {}", .path.display())]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// A state directory in the shared temporary directory belongs to another user, who
    /// could then tamper with the marks.
    #[error(
        "state directory {} belongs to uid {owner}, not to uid {uid}; set SNOWMINT_STATE_DIR",
        .path.display()
    )]
    NotOwned {
        /// The directory.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// The user running this process.
        uid: u32,
    },
}

impl From<StateError> for snowmint::StoreError {
    fn from(err: StateError) -> snowmint::StoreError {
        snowmint::StoreError::new(err)
    }
}
