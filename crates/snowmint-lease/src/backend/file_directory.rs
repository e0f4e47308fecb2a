//! Which directory a `file:` registry's files lie in, and since when.
//!
//! A restore that copies files into the registry's directory gives each a new change time,
//! which tells a newcomer since when the registry vouches for it. A directory swapped in
//! whole does not: a copy staged earlier and renamed over the registry's path (or a symbolic
//! link moved to it) keeps the change times it was staged with, so a newcomer would count
//! its floor from the staging, while holders of the old directory still issue. So the
//! directory's own identity (device and inode) is recorded in it, with the instant it was
//! first seen at work there: a newcomer that finds a record naming another directory, or
//! none, knows its files were put there by something else than this registry, and no
//! earlier than now.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use crate::StateError;

/// The record's name in the registry's directory: `<device> <inode> <since ms>`.
const RECORD: &str = "directory";

/// Since when, in ms since the Unix epoch, the registry's files have been in `dir` as far as
/// its record tells: the instant recorded beside the directory's identity; or, when the
/// record names another directory, cannot be read or is missing (a copy, a swap, a registry
/// of an earlier release), now, and the record is rewritten to say so, durably, so that
/// every later newcomer counts from this instant too.
///
/// # Errors
///
/// The directory cannot be looked at, or the record cannot be written.
pub(crate) fn in_place_since(dir: &Path) -> Result<u64, StateError> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(dir).map_err(|source| StateError::Read {
        path: dir.to_path_buf(),
        source,
    })?;
    let path = dir.join(RECORD);
    let identity = (meta.dev(), meta.ino());
    if let Some((recorded, since_ms)) = std::fs::read_to_string(&path)
        .ok()
        .as_deref()
        .and_then(parse)
        && recorded == identity
    {
        return Ok(since_ms);
    }
    let now_ms = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, snowmint::whole_ms);
    // Two newcomers may both find the record stale: each writes through a file of its own.
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let tmp = dir.join(format!(
        "{RECORD}.{}.{}.tmp",
        std::process::id(),
        WRITES.fetch_add(1, Ordering::Relaxed)
    ));
    let line = format!("{} {} {now_ms}\n", identity.0, identity.1);
    crate::state_file::disk::replace(&path, &tmp, line.as_bytes())?;
    tracing::info!(
        dir = %dir.display(),
        "the registry's directory is not the one its record names (a copy or a swap put it in place, or it is new): it vouches for its files only from now on"
    );
    Ok(now_ms)
}

/// `((device, inode), since ms)` from a record's text.
fn parse(text: &str) -> Option<((u64, u64), u64)> {
    let mut fields = text.split_whitespace().map(str::parse::<u64>);
    let (Some(Ok(dev)), Some(Ok(ino)), Some(Ok(since)), None) =
        (fields.next(), fields.next(), fields.next(), fields.next())
    else {
        return None;
    };
    Some(((dev, ino), since))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by restoring a registry as a copy staged 6 s earlier and renamed over its
    /// path: its lock files' change times were the staging's, and a newcomer issued at once
    /// beside holders of the old directory.
    #[test]
    fn a_directory_swapped_in_whole_vouches_only_from_when_it_is_first_seen() {
        let root = tempfile::tempdir().unwrap();
        let registry = root.path().join("registry");
        std::fs::create_dir(&registry).unwrap();
        let first = in_place_since(&registry).unwrap();
        assert_eq!(
            in_place_since(&registry).unwrap(),
            first,
            "the same directory"
        );

        // A copy staged now, swapped in later: the copy of the record names the old one.
        let staged = root.path().join("staged");
        std::fs::create_dir(&staged).unwrap();
        std::fs::copy(registry.join(RECORD), staged.join(RECORD)).unwrap();
        let copied = std::fs::read_to_string(staged.join(RECORD)).unwrap();
        std::fs::rename(&registry, root.path().join("old")).unwrap();
        std::fs::rename(&staged, &registry).unwrap();
        let swapped = in_place_since(&registry).unwrap();
        assert!(swapped >= first, "{swapped} {first}");
        let record = std::fs::read_to_string(registry.join(RECORD)).unwrap();
        assert_ne!(record, copied, "the swapped-in directory is recorded");
        assert_eq!(in_place_since(&registry).unwrap(), swapped, "recorded");

        // A record that cannot be read is rewritten, from now.
        std::fs::write(registry.join(RECORD), "garbage").unwrap();
        assert!(in_place_since(&registry).unwrap() >= swapped);
        let leftovers: Vec<_> = std::fs::read_dir(&registry)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(leftovers, [RECORD], "no temporary file is left");
    }

    #[test]
    fn only_a_whole_record_is_read() {
        assert_eq!(
            parse("64769 1234 1700000000000\n"),
            Some(((64769, 1234), 1_700_000_000_000))
        );
        for bad in ["", "1 2", "1 2 3 4", "a 2 3", "1 -2 3"] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }
}
