//! The pools a listing counts and the datacenters it finds shared, the same way for every
//! backend: from the records alone, and the layouts recorded for their namespaces.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::{ListFilter, Record, State};

/// The worker ids of one namespace's datacenter: how many there are, how many are held.
///
/// # Examples
///
/// ```
/// use std::collections::BTreeMap;
/// use snowmint_lease::{Lasts, ListFilter, Listing, Record};
///
/// // An earlier release's namespace names its preset: Twitter's 32 worker ids.
/// let held = Record::new("twitter-1288834974657", 0, 3, Lasts::Ttl).held_by("a/1/00000001");
/// let listing = Listing::new("redis", 0, vec![held], &BTreeMap::new(), &ListFilter::default());
/// let pool = &listing.pools[0];
/// assert_eq!((pool.workers, pool.held, pool.free), (Some(32), 1, Some(31)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pool {
    /// The namespace.
    pub namespace: String,
    /// The fleet's name; `None` for an earlier release's namespace.
    pub fleet: Option<String>,
    /// The datacenter.
    pub datacenter: u64,
    /// How many worker ids it has, `2^worker_bits` of the recorded layout (or, for an
    /// earlier release, of the preset its namespace names); `None` when no layout tells.
    pub workers: Option<u64>,
    /// How many live holders it has.
    pub held: u64,
    /// How many are left for newcomers: `workers - held`. Expired ones count as free.
    pub free: Option<u64>,
}

/// A datacenter in which several namespaces keep records: their generators issue in the
/// same datacenter from separate pools, so two of them may hold one worker id at once, and
/// if their layouts overlap, issue the same ids.
///
/// # Examples
///
/// ```
/// use std::collections::BTreeMap;
/// use snowmint_lease::{Lasts, ListFilter, Listing, Record};
///
/// let records = vec![
///     Record::new("fleet.a", 2, 0, Lasts::Ttl),
///     Record::new("fleet.b", 2, 0, Lasts::Ttl),
///     Record::new("fleet.b", 3, 0, Lasts::Ttl),
/// ];
/// let only_b = ListFilter { fleet: Some("b".into()), datacenter: None };
/// let listing = Listing::new("etcd", 0, records, &BTreeMap::new(), &only_b);
/// assert_eq!(listing.records.len(), 2);
/// assert_eq!((listing.shared.len(), listing.shared[0].datacenter), (1, 2));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Shared {
    /// The datacenter.
    pub datacenter: u64,
    /// The namespaces with records in it.
    pub namespaces: Vec<String>,
}

/// Everything a registry holds, as one listing read it: made by [`Listing::new`], which
/// has an example; [`Registry::list`](crate::Registry::list) answers it.
///
/// # Examples
///
/// ```
/// use std::collections::BTreeMap;
/// use snowmint_lease::{ListFilter, Listing};
///
/// let empty = Listing::new("file", 7, Vec::new(), &BTreeMap::new(), &ListFilter::default());
/// assert_eq!(serde_json::to_string(&empty)?, r#"{"backend":"file","read_at_ms":7,"records":[],"pools":[],"shared":[]}"#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Listing {
    /// The backend that was read.
    pub backend: &'static str,
    /// When it was read, ms since the Unix epoch on this machine's clock.
    pub read_at_ms: u64,
    /// The records kept by the filter, by namespace, datacenter and worker.
    pub records: Vec<Record>,
    /// The pools of those records.
    pub pools: Vec<Pool>,
    /// The datacenters that several namespaces share, among those the filter keeps, found
    /// among every record (a filter for one fleet still shows the others beside it).
    pub shared: Vec<Shared>,
}

impl Listing {
    /// The listing of `records` (every record the backend read) that `filter` keeps, with
    /// their pools and shared datacenters. `layouts` are the layouts recorded per
    /// namespace, for records that a backend read without theirs.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use snowmint::Layout;
    /// use snowmint_lease::{Lasts, ListFilter, Listing, Record};
    ///
    /// let twitter = Layout::TWITTER.canonical().to_string();
    /// let layouts = BTreeMap::from([("fleet.default".to_string(), twitter)]);
    /// let records = vec![
    ///     Record::new("fleet.default", 0, 0, Lasts::Ttl).held_by("web-1/10/0000beef"),
    ///     Record::new("fleet.payments", 0, 0, Lasts::Ttl).held_by("pay-1/11/0000cafe"),
    /// ];
    /// let listing = Listing::new("redis", 1_000, records, &layouts, &ListFilter::default());
    /// assert_eq!((listing.pools[0].workers, listing.pools[0].free), (Some(32), Some(31)));
    /// assert_eq!(listing.shared[0].namespaces, ["fleet.default", "fleet.payments"]);
    /// ```
    #[must_use]
    pub fn new(
        backend: &'static str,
        read_at_ms: u64,
        mut records: Vec<Record>,
        layouts: &BTreeMap<String, String>,
        filter: &ListFilter,
    ) -> Listing {
        for record in &mut records {
            if record.layout.is_none() {
                record.layout = layouts.get(&record.namespace).cloned();
            }
            record.lacks = lacks(record);
        }
        records.sort_by(|a, b| {
            (&a.namespace, a.datacenter, a.worker).cmp(&(&b.namespace, b.datacenter, b.worker))
        });
        let mut by_datacenter: BTreeMap<u64, BTreeSet<&str>> = BTreeMap::new();
        for record in &records {
            by_datacenter
                .entry(record.datacenter)
                .or_default()
                .insert(&record.namespace);
        }
        let shared = by_datacenter
            .into_iter()
            .filter(|(datacenter, namespaces)| {
                namespaces.len() > 1 && namespaces.iter().any(|ns| filter.keeps(ns, *datacenter))
            })
            .map(|(datacenter, namespaces)| Shared {
                datacenter,
                namespaces: namespaces.into_iter().map(str::to_string).collect(),
            })
            .collect();
        records.retain(|record| filter.keeps(&record.namespace, record.datacenter));
        let pools = pools(&records);
        Listing {
            backend,
            read_at_ms,
            records,
            pools,
            shared,
        }
    }
}

/// What an earlier release's record lacks.
fn lacks(record: &Record) -> Vec<&'static str> {
    if !record.earlier_release {
        return Vec::new();
    }
    let mut lacks = vec!["fleet"];
    if record.layout.is_none() {
        lacks.push("layout");
    }
    if record.taken_at_ms.is_none() {
        lacks.push("taken_at");
    }
    lacks
}

/// The pools of `records`, sorted as they are.
fn pools(records: &[Record]) -> Vec<Pool> {
    let mut pools: Vec<Pool> = Vec::new();
    for record in records {
        let same = pools.last().is_some_and(|pool| {
            pool.namespace == record.namespace && pool.datacenter == record.datacenter
        });
        if !same {
            pools.push(Pool {
                namespace: record.namespace.clone(),
                fleet: record.fleet.clone(),
                datacenter: record.datacenter,
                workers: workers_of(&record.namespace, record.layout.as_deref()),
                held: 0,
                free: None,
            });
        }
        if record.state == State::Held
            && let Some(pool) = pools.last_mut()
        {
            pool.held += 1;
        }
    }
    for pool in &mut pools {
        pool.free = pool.workers.map(|n| n.saturating_sub(pool.held));
    }
    pools
}

/// How many worker ids a namespace's datacenter has: `2^worker_bits` of its recorded
/// layout, or of the preset an earlier release's namespace names (`custom-E` names no
/// bits).
fn workers_of(namespace: &str, layout: Option<&str>) -> Option<u64> {
    let bits = match layout {
        Some(canonical) => worker_bits(canonical)?,
        None => {
            let (name, _) = crate::legacy::earlier(namespace)?;
            snowmint::Layout::PRESETS
                .iter()
                .find(|preset| preset.name() == name)?
                .bits()
                .worker
        }
    };
    1u64.checked_shl(u32::from(bits))
}

/// The worker field's width in a canonical layout (`...,worker@12:5,...`); 0 when the
/// layout has no worker field, `None` when the text is not a canonical layout.
fn worker_bits(canonical: &str) -> Option<u8> {
    let fields = canonical.strip_prefix("timestamp@")?.split(';').next()?;
    match fields.split(',').find_map(|f| f.strip_prefix("worker@")) {
        Some(field) => field.split_once(':')?.1.parse().ok(),
        None => Some(0),
    }
}

/// The name of the preset whose canonical form `canonical` is, if one is: what a table
/// shows in place of the whole form.
///
/// # Examples
///
/// ```
/// use snowmint::Layout;
///
/// let twitter = Layout::TWITTER.canonical().to_string();
/// assert_eq!(snowmint_lease::preset_named(&twitter), Some("twitter"));
/// assert_eq!(snowmint_lease::preset_named("timestamp@0:63;tick=1ms;epoch=0"), None);
/// ```
#[must_use]
pub fn preset_named(canonical: &str) -> Option<&'static str> {
    snowmint::Layout::PRESETS
        .iter()
        .find(|preset| preset.canonical().to_string() == canonical)
        .map(|preset| preset.name())
}

#[cfg(test)]
mod tests {
    use snowmint::Layout;

    use super::super::Lasts;
    use super::*;

    #[test]
    fn the_worker_field_gives_the_pools_size() {
        let form = |layout: Layout| layout.canonical().to_string();
        assert_eq!(worker_bits(&form(Layout::TWITTER)), Some(5));
        assert_eq!(worker_bits(&form(Layout::SONYFLAKE)), Some(16));
        assert_eq!(worker_bits("garbage"), None);
        assert_eq!(workers_of("twitter-1288834974657", None), Some(32));
        assert_eq!(workers_of("custom-5", None), None);
        assert_eq!(workers_of("fleet.default", None), None);
    }

    #[test]
    fn an_earlier_releases_record_says_what_it_lacks_and_pools_count_live_holders() {
        let mut expired = Record::new("twitter-1288834974657", 1, 4, Lasts::Ttl);
        expired.state = State::Expired;
        let records = vec![
            Record::new("twitter-1288834974657", 1, 3, Lasts::Ttl).held_by("a/1/00000001"),
            expired,
            Record::new("fleet.default", 2, 0, Lasts::Ttl),
        ];
        let listing = Listing::new(
            "redis",
            0,
            records,
            &BTreeMap::new(),
            &ListFilter::default(),
        );
        // By namespace: `fleet.default` first.
        assert_eq!(listing.records[0].lacks, Vec::<&str>::new());
        assert_eq!(listing.records[1].lacks, ["fleet", "layout", "taken_at"]);
        let pool = &listing.pools[1];
        assert_eq!((pool.held, pool.free), (1, Some(31)));
        assert!(listing.shared.is_empty(), "different datacenters");

        let only = ListFilter {
            fleet: Some("twitter-1288834974657".into()),
            datacenter: None,
        };
        let records = listing.records.clone();
        let filtered = Listing::new("redis", 0, records, &BTreeMap::new(), &only);
        assert_eq!(filtered.records.len(), 2);
    }
}
