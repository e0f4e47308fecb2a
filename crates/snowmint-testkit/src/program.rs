//! Finding the servers' programs, and saying which Debian package to install when one is
//! missing.

use std::env;
use std::fmt;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// A program the registry tests need that is not installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Missing {
    pub(crate) program: &'static str,
    pub(crate) package: &'static str,
}

impl fmt::Display for Missing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Missing { program, package } = self;
        write!(
            f,
            "{program} is not installed; the registry tests need Debian's {package} package \
             (scripts/setup installs it)"
        )
    }
}

/// The path of `program` on `PATH`.
///
/// # Panics
///
/// With a message naming `package` when it is not there: a registry test must fail, not
/// skip, when its server is missing.
#[track_caller]
pub(crate) fn find_on_path(program: &'static str, package: &'static str) -> PathBuf {
    match search_path(program) {
        Some(path) => path,
        None => panic!("{}", Missing { program, package }),
    }
}

/// The path of `program` on `PATH`, if it is there and executable.
pub(crate) fn search_path(program: &str) -> Option<PathBuf> {
    let path = env::var_os("PATH")?;
    env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

/// Whether `path` is a file someone may execute.
pub(crate) fn is_executable(path: &Path) -> bool {
    const ANY_EXECUTE_BIT: u32 = 0o111;
    fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & ANY_EXECUTE_BIT != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_program_names_its_package() {
        assert_eq!(search_path("snowmint-testkit-no-such-program"), None);
        assert!(search_path("sh").is_some());
        let missing = Missing {
            program: "etcd",
            package: "etcd-server",
        };
        assert_eq!(
            missing.to_string(),
            "etcd is not installed; the registry tests need Debian's etcd-server package \
             (scripts/setup installs it)"
        );
    }
}
