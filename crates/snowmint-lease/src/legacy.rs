//! Namespaces that earlier releases left in a registry, found by listing it.
//!
//! An earlier release kept each layout's records under `<layout name>-<epoch ms>`, and its
//! name is all that is left of the layout: `custom-E` does not record its bits. The
//! namespaces a new server's own layout could have used are known without asking the
//! registry ([`legacy_namespaces`](crate::legacy_namespaces)). Those of a layout that
//! differs slightly are not: the same bits with an epoch a millisecond away issue the same
//! ids, and an earlier release kept them apart. So a claim made for a layout
//! ([`Claim::with_layout`]) also reads every namespace the registry holds that
//! [may overlap](may_overlap) its ids, found once per process ([`Found`]): earlier
//! releases must be stopped before this one starts, so none appears later.
//!
//! An overlapping namespace whose epoch is earlier than the claim's runs ahead of it: at one
//! instant its ids are those the claim's layout issues that many ms later. Starting after
//! its mark would reissue them, so a lease starts that much further on ([`after_leads`]).

use std::future::Future;

use snowmint::Layout;

use crate::registry::{Claim, LeaseError};

/// The layout name and epoch of a namespace that an earlier release wrote:
/// `<preset name or custom>-<epoch ms>`; `None` for any other (a fleet's, `fleet.NAME`,
/// holds a dot).
#[must_use]
pub(crate) fn earlier(namespace: &str) -> Option<(&str, u64)> {
    let (name, epoch) = namespace.rsplit_once('-')?;
    let known = name == "custom" || Layout::PRESETS.iter().any(|p| p.name() == name);
    let epoch_ms: u64 = epoch.parse().ok()?;
    (known && epoch_ms.to_string() == epoch).then_some((name, epoch_ms))
}

/// Whether a server of an earlier release that kept its records under `namespace` may have
/// issued ids that `layout` issues too: the namespace is one an earlier release wrote, and
/// its layout is `layout`'s at another epoch, as far as its name tells. A custom layout's
/// bits were never recorded, so `custom-E` may overlap any layout; a namespace named as
/// `layout` is (a preset given another epoch kept its name); a preset's is when it has
/// `layout`'s bits and tick. A preset of other bits is another layout, which in this release
/// needs a fleet of its own: its ids are not this fleet's concern.
///
/// # Examples
///
/// ```
/// use snowmint::Layout;
/// use snowmint_lease::may_overlap;
///
/// assert!(may_overlap(&Layout::TWITTER, "twitter-1288834974658"));
/// assert!(may_overlap(&Layout::TWITTER, "custom-0"));
/// assert!(!may_overlap(&Layout::TWITTER, "sonyflake-1409529600000"));
/// assert!(!may_overlap(&Layout::TWITTER, "discord-1288834974657")); // 42 timestamp bits
/// assert!(!may_overlap(&Layout::TWITTER, "fleet.default"));
/// ```
#[must_use]
pub fn may_overlap(layout: &Layout, namespace: &str) -> bool {
    let Some((name, epoch_ms)) = earlier(namespace) else {
        return false;
    };
    if name == "custom" || name == layout.name() {
        return true;
    }
    let (Ok(ours), Some(Ok(theirs))) = (
        layout.with_epoch_ms(epoch_ms),
        Layout::PRESETS
            .iter()
            .find(|p| p.name() == name)
            .map(|p| p.with_epoch_ms(epoch_ms)),
    ) else {
        // An epoch one of the two layouts cannot take: be safe, read it.
        return true;
    };
    ours.canonical().to_string() == theirs.canonical().to_string()
}

/// How many ms the ids of an earlier release's `namespace` run ahead of `layout`'s at the
/// same instant: how much earlier its epoch is, or 0.
///
/// # Examples
///
/// ```
/// use snowmint::Layout;
///
/// assert_eq!(snowmint_lease::lead_ms(&Layout::TWITTER, "custom-1288834974650"), 7);
/// assert_eq!(snowmint_lease::lead_ms(&Layout::TWITTER, "twitter-1288834974658"), 0);
/// ```
#[must_use]
pub fn lead_ms(layout: &Layout, namespace: &str) -> u64 {
    earlier(namespace).map_or(0, |(_, epoch_ms)| {
        layout.epoch_ms().saturating_sub(epoch_ms)
    })
}

/// The longest [lead](lead_ms) a lease waits out: as long as the longest reservation a
/// restart waits out (`--reserve-ahead-ms` is at most 60 s). An upgrade that moved the
/// epoch by a few ms costs that wait once; an epoch further back names another layout,
/// whose ids this one would meet only after a wait of days or years, so the lease is
/// refused with the namespace named rather than left waiting.
pub const MAX_LEAD_MS: u64 = 60_000;

/// `claim` reading every namespace in `found` that may overlap its layout, beside its own
/// [`legacy`](Claim::legacy) ones; `claim` itself when it inherits from no layout.
///
/// # Errors
///
/// [`LeaseError::Invalid`] naming a namespace whose epoch is more than [`MAX_LEAD_MS`]
/// before the claim's layout's.
pub(crate) fn widened(claim: &Claim, found: &[String]) -> Result<Claim, LeaseError> {
    let Some(layout) = &claim.legacy_layout else {
        return Ok(claim.clone());
    };
    let mut claim = claim.clone();
    for namespace in found {
        if may_overlap(layout, namespace)
            && *namespace != claim.namespace
            && !claim.legacy.contains(namespace)
        {
            let lead = lead_ms(layout, namespace);
            if lead > MAX_LEAD_MS {
                return Err(LeaseError::Invalid(format!(
                    "the registry holds {namespace}, records of an earlier release whose epoch is {lead} ms before this layout's: its ids may be the ones this layout issues up to {lead} ms from now, longer than the {MAX_LEAD_MS} ms a lease waits out; if no server of it runs and its ids cannot meet this fleet's, delete its records with the fleet stopped"
                )));
            }
            claim.legacy.push(namespace.clone());
        }
    }
    Ok(claim)
}

/// The mark a lease of `claim` (as [widened](widened)) starts after, for the `mark` its
/// registry found: moved ahead by the largest [lead](lead_ms) of the old namespaces it
/// reads. The lead is counted on the largest mark, the fleet's own included: more than
/// needed when that mark is the fleet's, which costs a wait of the lead past the last id
/// issued and never an id issued twice.
#[must_use]
pub(crate) fn after_leads(claim: &Claim, mark: Option<u64>) -> Option<u64> {
    let (Some(layout), Some(mark)) = (&claim.legacy_layout, mark) else {
        return mark;
    };
    let lead = claim
        .legacy
        .iter()
        .map(|namespace| lead_ms(layout, namespace))
        .max()
        .unwrap_or(0);
    if lead > 0 {
        tracing::warn!(
            namespaces = ?claim.legacy,
            lead_ms = lead,
            "a namespace of an earlier release has an earlier epoch: its ids run ahead of this layout's, so this lease starts that much after the largest mark"
        );
    }
    Some(mark.saturating_add(lead))
}

/// The namespaces of earlier releases a registry holds, listed once per process: the first
/// acquisition of a claim that inherits ([`Claim::legacy_layout`]) lists them, every later
/// one reuses the list. A listing that fails is tried again by the next acquisition.
#[derive(Debug, Default)]
pub(crate) struct Found(tokio::sync::OnceCell<Vec<String>>);

impl Found {
    /// `claim` [widened](widened) with the namespaces `list` finds (any namespace names;
    /// those no earlier release wrote are dropped), listed only for a claim that inherits.
    ///
    /// # Errors
    ///
    /// The listing's error.
    pub(crate) async fn widen<F, Fut>(&self, claim: &Claim, list: F) -> Result<Claim, LeaseError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Vec<String>, LeaseError>>,
    {
        if claim.legacy_layout.is_none() {
            return Ok(claim.clone());
        }
        let found = self
            .0
            .get_or_try_init(async || {
                let mut found: Vec<String> = list()
                    .await?
                    .into_iter()
                    .filter(|namespace| earlier(namespace).is_some())
                    .collect();
                found.sort();
                found.dedup();
                if !found.is_empty() {
                    tracing::info!(namespaces = ?found, "the registry holds namespaces of earlier releases");
                }
                Ok::<_, LeaseError>(found)
            })
            .await?;
        widened(claim, found)
    }
}

/// The namespaces of earlier releases with files in a `file:` registry or state directory:
/// `<namespace>-dc<D>-w<W>.<kind>` names.
///
/// # Errors
///
/// [`StateError::Open`](crate::StateError::Open) naming the directory, which cannot be
/// listed.
pub(crate) fn in_dir(dir: &std::path::Path) -> Result<Vec<String>, crate::StateError> {
    let cannot = |source| crate::StateError::Open {
        path: dir.to_path_buf(),
        source,
    };
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(cannot)? {
        let name = entry.map_err(cannot)?.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some((namespace, _)) = name.rsplit_once("-dc")
            && earlier(namespace).is_some()
        {
            found.push(namespace.to_string());
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use snowmint::{Bits, Layout};

    use super::*;

    #[test]
    fn only_names_an_earlier_release_wrote_are_read() {
        assert_eq!(
            earlier("twitter-1288834974658"),
            Some(("twitter", 1_288_834_974_658))
        );
        assert_eq!(earlier("custom-0"), Some(("custom", 0)));
        for other in [
            "fleet.default",
            "fleet.a-1",
            "upgrade_twitter-1",
            "twitter-01",
            "twitter-",
            "twitter",
            "snowmint.incarnation",
        ] {
            assert_eq!(earlier(other), None, "{other}");
        }
    }

    #[test]
    fn a_layout_at_another_epoch_overlaps_and_another_layout_does_not() {
        let bits = Bits {
            timestamp: 41,
            datacenter: 5,
            worker: 4,
            sequence: 13,
        };
        let custom = Layout::new(bits, 1, 5).unwrap();
        assert!(may_overlap(&custom, "custom-7"));
        assert!(!may_overlap(&custom, "twitter-5"), "other bits");
        let ten_ms = Layout::TWITTER.with_tick_ms(10).unwrap();
        assert!(may_overlap(&ten_ms, "twitter-1"), "its own name");
        let spelled = Layout::new(Layout::TWITTER.bits(), 1, 5).unwrap();
        assert!(
            may_overlap(&spelled, "twitter-9"),
            "Twitter's bits and tick"
        );
        assert!(may_overlap(&Layout::DISCORD, "discord-1"));
    }

    #[test]
    fn a_claim_reads_what_may_overlap_and_starts_past_the_lead() {
        let found = [
            "twitter-1288834974658",
            "custom-1288834974650",
            "sonyflake-1409529600000",
            "fleet.default",
        ]
        .map(String::from);
        let plain = Claim::new("fleet.default", 0, 32, "web-7", Duration::from_secs(10));
        assert_eq!(widened(&plain, &found).unwrap(), plain, "inherits nothing");
        assert_eq!(after_leads(&plain, Some(100)), Some(100));
        let claim = widened(&plain.clone().with_layout(&Layout::TWITTER), &found).unwrap();
        assert_eq!(
            claim.legacy,
            [
                "twitter-1288834974657",
                "custom-1288834974657",
                "twitter-1288834974658",
                "custom-1288834974650"
            ]
        );
        assert_eq!(after_leads(&claim, Some(100)), Some(107));
        assert_eq!(after_leads(&claim, None), None);

        // A lead of 60 s is waited out; one of 60,001 ms is refused, naming the namespace.
        let far = ["custom-1", "custom-0"].map(String::from);
        let moved = plain.with_layout(&Layout::TWITTER.with_epoch_ms(60_001).unwrap());
        assert_eq!(widened(&moved, &far[..1]).unwrap().legacy.len(), 3);
        assert_eq!(
            widened(&moved, &far).unwrap_err().to_string(),
            "the registry holds custom-0, records of an earlier release whose epoch is 60001 ms before this layout's: its ids may be the ones this layout issues up to 60001 ms from now, longer than the 60000 ms a lease waits out; if no server of it runs and its ids cannot meet this fleet's, delete its records with the fleet stopped"
        );
    }

    #[test]
    fn a_directory_names_its_namespaces() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "twitter-1288834974658-dc0-w3.mark",
            "twitter-1288834974658-dc0-w3.worker",
            "custom-5-dc1-w0.mark",
            "fleet.default-dc0-w3.mark",
            "fleet.default.layout",
        ] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        let mut found = in_dir(dir.path()).unwrap();
        found.sort();
        found.dedup();
        assert_eq!(found, ["custom-5", "twitter-1288834974658"]);
    }
}
