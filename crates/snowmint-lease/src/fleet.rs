//! Fleets: the pool of worker ids that generators share, named independently of the layout.
//!
//! Every generator that may issue the same ids as another must draw its worker id from the
//! same pool, or two of them may hold one worker id at once. Layouts do not name pools well:
//! `twitter` and `custom:41/5/5/12` are one layout spelled twice, and two different layouts
//! (`custom:41/5/5/12` and `custom:41/5/4/13`, or one epoch and the next millisecond) can
//! still issue the same ids. So the pool is the fleet's: one per registry by default
//! ([`Fleet::DEFAULT`]), another only when a setting names it. The registry records the
//! fleet's layout in canonical form ([`snowmint::Layout::canonical`]) when its first worker
//! id is taken, and refuses a claim whose layout differs ([`LeaseError::OtherLayout`]).
//!
//! # Keys
//!
//! A fleet named `N` keeps its keys, files and nodes under the namespace `fleet.N` (see
//! [`Fleet::namespace`]). Earlier releases kept them under `<layout name>-<epoch ms>`
//! (`twitter-1288834974657`), one pool per spelling. Such a namespace never contains a dot,
//! so the two never meet. A generator also reads the marks left under every old namespace
//! that a server of its layout could have used ([`legacy_namespaces`]), starts after the
//! largest, and passes over a worker id still held under one of them by a server of an
//! earlier release.

use std::fmt;

use snowmint::Layout;

use crate::LeaseError;

/// The longest fleet name: it goes into registry keys, ZooKeeper paths and file names.
const MAX_NAME: usize = 64;

/// A fleet: the pool of worker ids, and the one layout, that a group of generators shares.
///
/// # Examples
///
/// ```
/// use snowmint_lease::Fleet;
///
/// let fleet = Fleet::new("payments")?;
/// assert_eq!(fleet.namespace(), "fleet.payments");
/// assert_eq!(Fleet::default().namespace(), "fleet.default");
/// assert_eq!(
///     Fleet::new("a/b").unwrap_err().to_string(),
///     "fleet name \"a/b\" may hold only letters, digits, '-' and '_', 1 to 64 of them"
/// );
/// # Ok::<(), snowmint_lease::LeaseError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Fleet(String);

impl Fleet {
    /// The fleet of every generator that names none.
    pub const DEFAULT: &str = "default";

    /// A fleet named `name`: ASCII letters, digits, `-` and `_`, at most 64 of them, so the
    /// name is safe in every registry's keys and in file names.
    ///
    /// # Errors
    ///
    /// [`LeaseError::Invalid`] naming the name and what it may hold.
    pub fn new(name: &str) -> Result<Fleet, LeaseError> {
        let fits = !name.is_empty()
            && name.len() <= MAX_NAME
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if fits {
            Ok(Fleet(name.to_string()))
        } else {
            Err(LeaseError::Invalid(format!(
                "fleet name {name:?} may hold only letters, digits, '-' and '_', 1 to {MAX_NAME} of them"
            )))
        }
    }

    /// The fleet's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.0
    }

    /// Where the fleet's records live in a registry or a state directory: `fleet.<name>`.
    #[must_use]
    pub fn namespace(&self) -> String {
        format!("fleet.{}", self.0)
    }
}

impl Default for Fleet {
    fn default() -> Fleet {
        Fleet(Fleet::DEFAULT.to_string())
    }
}

impl fmt::Display for Fleet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The namespaces in which earlier releases may have kept the marks and leases of a server
/// with `layout`: `<name>-<epoch ms>` for its own name, for `custom` (every custom layout
/// shared it), and for every preset that is the same layout once given this epoch.
///
/// # Examples
///
/// ```
/// use snowmint::Layout;
///
/// assert_eq!(
///     snowmint_lease::legacy_namespaces(&Layout::TWITTER),
///     ["twitter-1288834974657", "custom-1288834974657"]
/// );
/// ```
#[must_use]
pub fn legacy_namespaces(layout: &Layout) -> Vec<String> {
    let epoch = layout.epoch_ms();
    let form = layout.canonical().to_string();
    let mut names = vec![layout.name(), "custom"];
    for preset in Layout::PRESETS {
        let same = preset
            .with_epoch_ms(epoch)
            .is_ok_and(|p| p.canonical().to_string() == form);
        if same {
            names.push(preset.name());
        }
    }
    let mut seen = std::collections::HashSet::new();
    names
        .into_iter()
        .filter(|name| seen.insert(*name))
        .map(|name| format!("{name}-{epoch}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use snowmint::{Bits, Layout};

    use super::*;

    #[test]
    fn a_custom_spelling_of_a_preset_inherits_the_presets_old_namespace() {
        let bits = Bits {
            timestamp: 41,
            datacenter: 5,
            worker: 5,
            sequence: 12,
        };
        let spelled = Layout::new(bits, 1, Layout::TWITTER.epoch_ms()).unwrap();
        assert_eq!(
            legacy_namespaces(&spelled),
            ["custom-1288834974657", "twitter-1288834974657"]
        );
        let moved = Layout::TWITTER.with_epoch_ms(5).unwrap();
        assert_eq!(legacy_namespaces(&moved), ["twitter-5", "custom-5"]);
    }

    #[test]
    fn old_namespaces_never_meet_a_fleets() {
        for layout in Layout::PRESETS {
            for name in legacy_namespaces(&layout) {
                assert!(!name.contains('.'), "{name}");
            }
        }
        for bad in ["", "a.b", "a b", &"x".repeat(65), "é"] {
            assert!(Fleet::new(bad).is_err(), "{bad:?}");
        }
        assert!(Fleet::new(&"x".repeat(64)).is_ok());
    }
}
