//! What a registry holds, read without changing it: every worker id's record, the free
//! worker ids left in each pool, and the datacenters that several pools share.
//!
//! Running out of worker ids, and two fleets issuing in one datacenter of one registry, are
//! what operators of id systems meet most, and neither shows from one server. A listing
//! ([`Registry::list`](crate::Registry::list)) reads the registry as it stands: it takes,
//! renews and writes nothing, so a read-only user of the registry can run it. Each backend
//! turns its own keys, rows, nodes or files into [`Record`]s; [`Listing::new`] counts the
//! pools and the shared datacenters from them, the same way for every backend.

mod pools;

use serde::Serialize;

pub use pools::{Listing, Pool, Shared, preset_named};

/// Which records a listing keeps: `None` keeps all.
///
/// # Examples
///
/// ```
/// use snowmint_lease::ListFilter;
///
/// let filter = ListFilter { fleet: Some("payments".into()), datacenter: Some(0) };
/// assert!(filter.keeps("fleet.payments", 0));
/// assert!(!filter.keeps("fleet.default", 0));
/// assert!(ListFilter::default().keeps("twitter-1288834974657", 3));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListFilter {
    /// A fleet's name (`default`), or the namespace of an earlier release
    /// (`twitter-1288834974657`).
    pub fleet: Option<String>,
    /// A datacenter.
    pub datacenter: Option<u64>,
}

impl ListFilter {
    /// Whether a record of `namespace` in `datacenter` is kept.
    #[must_use]
    pub fn keeps(&self, namespace: &str, datacenter: u64) -> bool {
        let fleet = self.fleet.as_deref().is_none_or(|wanted| {
            namespace == wanted || namespace.strip_prefix("fleet.") == Some(wanted)
        });
        fleet && self.datacenter.is_none_or(|wanted| wanted == datacenter)
    }
}

/// Whether a worker id is held.
///
/// # Examples
///
/// ```
/// use snowmint_lease::State;
///
/// assert_eq!(serde_json::to_string(&State::Expired)?, r#""expired""#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// A live holder has it.
    Held,
    /// Its lease ran out without a release (the holder died or was cut off), and nobody
    /// has taken it since: the next acquisition may.
    Expired,
    /// Nobody holds it: released, or never taken; the record keeps its mark.
    Free,
}

/// How long a hold lasts.
///
/// # Examples
///
/// ```
/// use snowmint_lease::{Lasts, Record};
///
/// let record = Record::new("fleet.default", 0, 3, Lasts::Process);
/// assert_eq!(serde_json::to_value(&record)?["lasts"], "process");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Lasts {
    /// Until its TTL runs out unless renewed (Redis, etcd, PostgreSQL): see
    /// [`Record::expires_at_ms`].
    Ttl,
    /// As long as the session that took it (ZooKeeper): the ensemble ends the session one
    /// session timeout after the last heartbeat it heard.
    Session,
    /// As long as the process that locked the file (`file:`).
    Process,
}

/// One worker id's record in a registry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Record {
    /// Where the record lies: a fleet's namespace (`fleet.default`), or an earlier
    /// release's (`twitter-1288834974657`).
    pub namespace: String,
    /// The fleet's name; `None` for an earlier release's namespace, which named no fleet.
    pub fleet: Option<String>,
    /// Whether an earlier release wrote it: its namespace names a layout, not a fleet.
    pub earlier_release: bool,
    /// The layout recorded for the namespace, in canonical form; `None` when none is.
    pub layout: Option<String>,
    /// The datacenter.
    pub datacenter: u64,
    /// The worker id.
    pub worker: u64,
    /// The stable name of the instance that holds it or held it last (its host name, by
    /// default), when the registry keeps one.
    pub identity: Option<String>,
    /// The holder's name, `identity/pid/nonce`: one per acquisition, so two rows with one
    /// identity and two holders are two incarnations.
    pub holder: Option<String>,
    /// When the present (or last) holder took it, ms since the Unix epoch, where the
    /// registry records it (PostgreSQL, ZooKeeper).
    pub taken_at_ms: Option<u64>,
    /// The high-water mark: ids may have been issued with this worker id up to this
    /// instant (ms since the Unix epoch), and a successor starts after it.
    pub high_water_ms: Option<u64>,
    /// When the lease runs out unless renewed, or ran out (ms since the Unix epoch, on this
    /// machine's clock); `None` when it lasts otherwise ([`Record::lasts`]) or is free.
    pub expires_at_ms: Option<u64>,
    /// How long a hold lasts.
    pub lasts: Lasts,
    /// Whether it is held.
    pub state: State,
    /// What the record lacks because an earlier release wrote it: `fleet`, and `layout`
    /// and `taken_at` when they are missing. Empty for a fleet's record.
    pub lacks: Vec<&'static str>,
}

impl Record {
    /// A free record with nothing known but where it lies; a backend fills in the rest.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint_lease::{Lasts, Record, State};
    ///
    /// let record = Record::new("fleet.payments", 0, 3, Lasts::Ttl);
    /// assert_eq!(record.fleet.as_deref(), Some("payments"));
    /// assert_eq!(record.state, State::Free);
    /// assert!(Record::new("twitter-1288834974657", 0, 3, Lasts::Ttl).earlier_release);
    /// ```
    #[must_use]
    pub fn new(namespace: &str, datacenter: u64, worker: u64, lasts: Lasts) -> Record {
        let fleet = namespace.strip_prefix("fleet.").map(str::to_string);
        Record {
            namespace: namespace.to_string(),
            earlier_release: crate::legacy::earlier(namespace).is_some(),
            fleet,
            layout: None,
            datacenter,
            worker,
            identity: None,
            holder: None,
            taken_at_ms: None,
            high_water_ms: None,
            expires_at_ms: None,
            lasts,
            state: State::Free,
            lacks: Vec::new(),
        }
    }

    /// The same record held by `holder`, whose identity is the holder name's first part.
    #[must_use]
    pub fn held_by(self, holder: &str) -> Record {
        Record {
            identity: self.identity.or_else(|| identity_of(holder)),
            holder: Some(holder.to_string()),
            state: State::Held,
            ..self
        }
    }
}

/// The identity in a holder name `identity/pid/nonce` ([`Claim::new`](crate::Claim::new));
/// `None` for a name of another form. The identity may hold `/` itself.
///
/// # Examples
///
/// ```
/// assert_eq!(snowmint_lease::identity_of("web-7/4242/0a1b2c3d").as_deref(), Some("web-7"));
/// assert_eq!(snowmint_lease::identity_of("pod/a/17/0000abcd").as_deref(), Some("pod/a"));
/// assert_eq!(snowmint_lease::identity_of("someone"), None);
/// ```
#[must_use]
pub fn identity_of(holder: &str) -> Option<String> {
    let mut parts = holder.rsplitn(3, '/');
    let (_nonce, pid, identity) = (parts.next()?, parts.next()?, parts.next()?);
    pid.bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| identity.to_string())
}

/// This machine's clock, ms since the Unix epoch: when a listing was read, and what a
/// registry's "remaining" times are counted from.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, snowmint::whole_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_keeps_a_fleet_by_name_or_namespace() {
        let fleet = ListFilter {
            fleet: Some("default".into()),
            datacenter: None,
        };
        assert!(fleet.keeps("fleet.default", 9));
        assert!(!fleet.keeps("fleet.defaults", 9));
        assert!(!fleet.keeps("default-1", 9));
        let dc = ListFilter {
            fleet: None,
            datacenter: Some(1),
        };
        assert!(dc.keeps("custom-5", 1) && !dc.keeps("custom-5", 2));
    }
}
