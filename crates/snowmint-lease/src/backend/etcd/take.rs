//! Taking a worker for a new lease: the sticky one first, then free ones found in the
//! gaps of the key listing.

use std::collections::HashSet;

use serde_json::json;

use super::gateway::{compare, list, put, range, unavailable};
use super::keys::{KeyOrder, Keys};
use super::{EtcdRegistry, MAX_TAKES, parse_mark};
use crate::registry::{Claim, Lease, LeaseError};

impl EtcdRegistry {
    /// Records the claim's layout as its fleet's unless one is recorded, in one txn; then
    /// refuses a claim of another layout.
    pub(super) async fn check_layout(&self, claim: &Claim, keys: &Keys) -> Result<(), LeaseError> {
        let answer = self
            .txn_else(
                vec![compare(&keys.layout, "CREATE", "create_revision", "0")],
                vec![put(&keys.layout, &claim.layout, 0)],
                vec![range(&keys.layout)],
            )
            .await?;
        if answer.succeeded {
            return Ok(());
        }
        let recorded = answer
            .range(0)?
            .kvs
            .first()
            .map(|kv| String::from_utf8_lossy(&kv.value).into_owned())
            .unwrap_or_default();
        match claim.other_layout(&recorded) {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }

    /// The largest reach of the fleet's servers, raised to the claim's before it issues.
    pub(super) async fn fleet_reach(&self, claim: &Claim, keys: &Keys) -> Result<u64, LeaseError> {
        let own = claim.reach_ms();
        for _ in 0..super::RAISE_TRIES {
            let read = self.txn(vec![], vec![range(&keys.reach)]).await?;
            let (recorded, revision) = match read.range(0)?.kvs.first() {
                Some(kv) => (
                    std::str::from_utf8(&kv.value)
                        .ok()
                        .and_then(|v| v.parse::<u64>().ok())
                        .unwrap_or(0),
                    kv.mod_revision,
                ),
                None => (0, 0),
            };
            if recorded >= own {
                return Ok(recorded);
            }
            // 0 matches an absent key.
            let guard = compare(&keys.reach, "MOD", "mod_revision", &revision.to_string());
            let raised = self
                .txn(vec![guard], vec![put(&keys.reach, &own.to_string(), 0)])
                .await?;
            if raised.succeeded {
                return Ok(own);
            }
        }
        Err(super::gateway::unavailable(format!(
            "{} changed under each of {} attempts to raise it",
            keys.reach,
            super::RAISE_TRIES
        )))
    }

    /// Tries to take `worker` with one txn; `None` if someone holds it, in the fleet's
    /// namespace or in an earlier release's.
    async fn take(
        &self,
        claim: &Claim,
        keys: &Keys,
        worker: u64,
        lease: i64,
    ) -> Result<Option<Lease>, LeaseError> {
        let key = keys.worker(worker);
        let hwm = keys.mark(worker);
        let left: Vec<(String, String)> = keys.left(worker).collect();
        let mut compares = vec![compare(&key, "CREATE", "create_revision", "0")];
        let mut success = vec![
            put(&key, &claim.holder, lease),
            range(&hwm),
            put(&keys.sticky, &worker.to_string(), 0),
        ];
        for (old, old_hwm) in &left {
            compares.push(compare(old, "CREATE", "create_revision", "0"));
            success.push(range(old_hwm));
        }
        let answer = self.txn(compares, success).await?;
        if !answer.succeeded {
            return Ok(None);
        }
        let mut high_water_ms = match answer.range(1)?.kvs.first() {
            Some(kv) => Some(parse_mark(&hwm, kv)?),
            None => None,
        };
        let mut holding = 0;
        for (i, (_, old_hwm)) in left.iter().enumerate() {
            if let Some(kv) = answer.range(3 + i)?.kvs.first() {
                holding += 1;
                high_water_ms = high_water_ms.max(Some(parse_mark(old_hwm, kv)?));
            }
        }
        if holding > 1 {
            tracing::warn!(
                worker,
                namespaces = ?claim.legacy,
                "marks of this worker id were left under {holding} namespaces of earlier releases; starting after the largest"
            );
        }
        Ok(Some(Lease {
            datacenter: claim.datacenter,
            worker,
            high_water_ms,
            token: lease,
        }))
    }

    /// Finds and takes a free worker for `lease`: the sticky one, then free ones found in
    /// the gaps of the key listing, in an order of this acquisition's own.
    pub(super) async fn take_free(
        &self,
        claim: &Claim,
        keys: &Keys,
        lease: i64,
    ) -> Result<Lease, LeaseError> {
        let exhausted = LeaseError::exhausted(claim);
        let first = self
            .txn(
                vec![],
                vec![
                    range(&keys.sticky),
                    json!({ "request_range": list(keys, &keys.workers) }),
                ],
            )
            .await?;
        let mut page = first.range(1)?.clone();
        let sticky = first.range(0)?.kvs.first().and_then(|kv| {
            let worker = std::str::from_utf8(&kv.value).ok()?.parse().ok()?;
            (worker < claim.workers).then_some(worker)
        });
        if let Some(worker) = sticky
            && !page
                .kvs
                .iter()
                .any(|kv| keys.worker_of(&kv.key) == Some(worker))
            && let Some(lease) = self.take(claim, keys, worker, lease).await?
        {
            return Ok(lease);
        }
        let mut order = KeyOrder::new(claim.workers).peekable();
        let mut takes = 0;
        loop {
            let held: HashSet<u64> = page
                .kvs
                .iter()
                .filter_map(|kv| keys.worker_of(&kv.key))
                .collect();
            // The page vouches for the worker keys up to its last key; the last page, for all.
            let last = page.kvs.last().map(|kv| kv.key.as_slice());
            let listed = |worker: &u64| match last {
                Some(last) if page.more => keys.worker(*worker).as_bytes() <= last,
                _ => true,
            };
            let mut batch = Vec::new();
            while batch.len() < crate::backend::SPREAD
                && let Some(worker) = order.next_if(listed)
            {
                if !held.contains(&worker) && Some(worker) != sticky {
                    batch.push(worker);
                }
            }
            if batch.is_empty() {
                let Some(last) = last.filter(|_| page.more) else {
                    return Err(exhausted);
                };
                page = self.page(keys, &[last, b"\0"].concat()).await?;
                continue;
            }
            for worker in crate::backend::spread(batch) {
                if takes == MAX_TAKES {
                    return Err(unavailable(format!(
                        "{MAX_TAKES} free worker ids of datacenter {} were taken by other processes first",
                        claim.datacenter
                    )));
                }
                takes += 1;
                if let Some(lease) = self.take(claim, keys, worker, lease).await? {
                    return Ok(lease);
                }
            }
        }
    }
}
