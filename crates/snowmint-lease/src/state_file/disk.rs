//! The file-system steps of a [`FileStore`](super::FileStore): a lock taken within a bound,
//! a mark read strictly, and a file replaced atomically and durably.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use snowmint::ClockMode;

use crate::StateError;

/// The longest pause between two attempts at a busy lock: short enough to notice a release
/// promptly, long enough not to keep a core busy.
const MAX_LOCK_PAUSE: Duration = Duration::from_millis(20);

/// Takes `file`'s exclusive lock, retrying with growing pauses (never spinning) for up to
/// `wait`.
pub(super) fn lock_within(file: &File, path: &Path, wait: Duration) -> Result<(), StateError> {
    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(()),
            Err(TryLockError::WouldBlock) => {}
            Err(TryLockError::Error(source)) => {
                return Err(StateError::Lock {
                    path: path.to_path_buf(),
                    source,
                });
            }
        }
        let waited = start.elapsed();
        if waited >= wait {
            return Err(StateError::Busy {
                path: path.to_path_buf(),
                waited,
            });
        }
        std::thread::sleep(pause.min(wait - waited));
        pause = (pause * 2).min(MAX_LOCK_PAUSE);
    }
}

/// The mark at `path` and the clock mode it records, `None` if there is no file; its line is
/// read by [`mark::decode_line`](crate::mark::decode_line).
pub(crate) fn read_mark(path: &Path) -> Result<Option<(u64, ClockMode)>, StateError> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(other_user(path, source, |path, source| StateError::Read {
                path,
                source,
            }));
        }
    };
    crate::mark::decode_line(&bytes)
        .map(Some)
        .map_err(|corrupt| StateError::Corrupt {
            path: path.to_path_buf(),
            found: corrupt.found,
        })
}

/// Replaces `path` with `content` atomically and durably: write `tmp`, fsync it, rename it
/// over `path`, fsync the directory (without which the rename itself may not survive a
/// crash). Callers hold the lock, so one fixed `tmp` name is enough.
pub(crate) fn replace(path: &Path, tmp: &Path, content: &[u8]) -> Result<(), StateError> {
    let failed = |path: &Path| {
        let path = path.to_path_buf();
        move |source| StateError::Write { path, source }
    };
    let mut file = file_options()
        .write(true)
        .create(true)
        .truncate(true)
        .open(tmp)
        .map_err(failed(tmp))?;
    keep_owner(&file, path).map_err(failed(tmp))?;
    file.write_all(content)
        .and_then(|()| file.sync_all())
        .map_err(failed(tmp))?;
    drop(file);
    fs::rename(tmp, path).map_err(failed(path))?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(failed(dir))
}

/// Gives `file`, which is to replace `path`, the owner of `path`, when this process runs as
/// root and `path` belongs to someone else: root tending a state directory (a container run
/// once with `--user 0`) leaves its files to their user, who would be locked out of them.
fn keep_owner(file: &File, path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    if crate::state_dir::uid() == 0 {
        use std::os::unix::fs::MetadataExt;
        match fs::metadata(path) {
            Ok(meta) if meta.uid() != 0 => {
                std::os::unix::fs::fchown(file, Some(meta.uid()), Some(meta.gid()))?;
            }
            _ => {}
        }
    }
    let _ = (file, path);
    Ok(())
}

/// What the system's `source` about `path` means: [`StateError::OtherUser`] when it refused a
/// file that another user owns (both users named, and the way out), else `otherwise`.
pub(super) fn other_user(
    path: &Path,
    source: io::Error,
    otherwise: impl FnOnce(PathBuf, io::Error) -> StateError,
) -> StateError {
    #[cfg(unix)]
    if source.kind() == io::ErrorKind::PermissionDenied {
        use std::os::unix::fs::MetadataExt;
        let user = crate::state_dir::uid();
        if let Ok(owner) = fs::metadata(path).map(|meta| meta.uid())
            && owner != user
        {
            return StateError::OtherUser {
                path: path.to_path_buf(),
                owner,
                user,
                source,
            };
        }
    }
    otherwise(path.to_path_buf(), source)
}

/// `path` with `suffix` appended to its file name: `w0.mark` and `.lock` give `w0.mark.lock`.
pub(super) fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Options for the files a store creates: readable and writable by the owner only.
pub(super) fn file_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
}
