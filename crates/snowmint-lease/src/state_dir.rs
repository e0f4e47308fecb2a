//! Where the marks live when nobody says: the XDG state directory, as a per-user, private
//! place that survives reboots (a mark in a tmpfs that a reboot wipes protects nothing).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::StateError;

/// The environment variable that names the state directory, first in
/// [`default_state_dir`]'s order.
pub const STATE_DIR_ENV: &str = "SNOWMINT_STATE_DIR";

/// The directory the marks live in when none is given: `$SNOWMINT_STATE_DIR` if set, else
/// `$XDG_STATE_HOME/snowmint` (when absolute, as the XDG spec asks), else
/// `$HOME/.local/state/snowmint`, else `snowmint-<uid>` in the temporary directory. Empty
/// variables count as unset. Only decides; [`ensure_state_dir`] creates it.
///
/// # Examples
///
/// ```
/// let dir = snowmint_lease::default_state_dir();
/// assert!(dir.ends_with("snowmint") || std::env::var_os("SNOWMINT_STATE_DIR").is_some()
///     || dir.file_name().unwrap().to_string_lossy().starts_with("snowmint-"));
/// ```
#[must_use]
pub fn default_state_dir() -> PathBuf {
    choose(|name| std::env::var_os(name), &std::env::temp_dir(), uid())
}

fn choose(var: impl Fn(&str) -> Option<OsString>, temp: &Path, uid: u32) -> PathBuf {
    let set = |name: &str| {
        var(name)
            .filter(|value| !value.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = set(STATE_DIR_ENV) {
        return dir;
    }
    if let Some(state) = set("XDG_STATE_HOME").filter(|p| p.is_absolute()) {
        return state.join("snowmint");
    }
    if let Some(home) = set("HOME") {
        return home.join(".local").join("state").join("snowmint");
    }
    temp.join(format!("snowmint-{uid}"))
}

/// Creates `dir` and any missing parents with mode 0700 (the marks are nobody else's
/// business, and nobody else may rewrite them). A directory that already exists keeps its
/// mode; one directly in the shared temporary directory must belong to this user.
///
/// # Errors
///
/// The directory cannot be created, or it sits in the temporary directory and belongs to
/// another user.
///
/// # Examples
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let state = dir.path().join("a/b/snowmint");
/// snowmint_lease::ensure_state_dir(&state)?;
/// assert!(state.is_dir());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn ensure_state_dir(dir: &Path) -> Result<(), StateError> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .map_err(|source| StateError::CreateDir {
            path: dir.to_path_buf(),
            source,
        })?;
    #[cfg(unix)]
    if dir.parent() == Some(std::env::temp_dir().as_path()) {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(dir).map_err(|source| StateError::CreateDir {
            path: dir.to_path_buf(),
            source,
        })?;
        if meta.uid() != uid() {
            return Err(StateError::NotOwned {
                path: dir.to_path_buf(),
                owner: meta.uid(),
                uid: uid(),
            });
        }
    }
    Ok(())
}

/// The user this process runs as.
#[cfg(unix)]
pub(crate) fn uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

#[cfg(not(unix))]
pub(crate) fn uid() -> u32 {
    0
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn pick(vars: &[(&str, &str)]) -> PathBuf {
        let vars: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| ((*k).to_string(), OsString::from(v)))
            .collect();
        choose(|name| vars.get(name).cloned(), Path::new("/tmp"), 1000)
    }

    #[test]
    fn the_first_set_variable_wins() {
        let all = [
            ("SNOWMINT_STATE_DIR", "/srv/marks"),
            ("XDG_STATE_HOME", "/home/a/.state"),
            ("HOME", "/home/a"),
        ];
        assert_eq!(pick(&all), Path::new("/srv/marks"));
        assert_eq!(pick(&all[1..]), Path::new("/home/a/.state/snowmint"));
        assert_eq!(pick(&all[2..]), Path::new("/home/a/.local/state/snowmint"));
        assert_eq!(pick(&[]), Path::new("/tmp/snowmint-1000"));
    }

    #[test]
    fn empty_and_relative_values_are_skipped() {
        let vars = [
            ("SNOWMINT_STATE_DIR", ""),
            ("XDG_STATE_HOME", "relative/state"),
            ("HOME", "/home/b"),
        ];
        assert_eq!(pick(&vars), Path::new("/home/b/.local/state/snowmint"));
    }

    #[cfg(unix)]
    #[test]
    fn created_directories_are_private() {
        use std::os::unix::fs::PermissionsExt;

        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state/snowmint");
        ensure_state_dir(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        ensure_state_dir(&dir).unwrap(); // again: already there is fine
    }

    #[test]
    fn an_uncreatable_directory_names_its_path() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("plain-file");
        std::fs::write(&file, "").unwrap();
        let err = ensure_state_dir(&file.join("snowmint")).unwrap_err();
        let message = err.to_string();
        assert!(
            message.starts_with("cannot create state directory "),
            "{message}"
        );
        assert!(message.ends_with("plain-file/snowmint"), "{message}");
        // What the system said is the cause, not part of the message.
        let cause = std::error::Error::source(&err).expect("the system's error");
        assert_eq!(cause.to_string(), "Not a directory (os error 20)");
    }
}
