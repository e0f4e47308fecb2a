//! Taking a worker for a new lease: the sticky one first, then free ones found in the
//! gaps of the key listing.

use std::collections::HashSet;
use std::hash::{BuildHasher, RandomState};

use serde_json::json;

use super::gateway::{compare, list, put, range, unavailable};
use super::keys::{KeyOrder, Keys};
use super::{BATCH, EtcdRegistry, MAX_TAKES, parse_mark};
use crate::registry::{Claim, Lease, LeaseError};

impl EtcdRegistry {
    /// Tries to take `worker` with one txn; `None` if someone holds it.
    async fn take(
        &self,
        claim: &Claim,
        keys: &Keys,
        worker: u64,
        lease: i64,
    ) -> Result<Option<Lease>, LeaseError> {
        let key = keys.worker(worker);
        let hwm = keys.mark(worker);
        let answer = self
            .txn(
                vec![compare(&key, "CREATE", "create_revision", "0")],
                vec![
                    put(&key, &claim.holder, lease),
                    range(&hwm),
                    put(&keys.sticky, &worker.to_string(), 0),
                ],
            )
            .await?;
        if !answer.succeeded {
            return Ok(None);
        }
        let high_water_ms = match answer.range(1)?.kvs.first() {
            Some(kv) => Some(parse_mark(&hwm, kv)?),
            None => None,
        };
        Ok(Some(Lease {
            datacenter: claim.datacenter,
            worker,
            high_water_ms,
            token: lease,
        }))
    }

    /// Finds and takes a free worker for `lease`: the sticky one, then free ones found in
    /// the gaps of the key listing.
    pub(super) async fn take_free(
        &self,
        claim: &Claim,
        keys: &Keys,
        lease: i64,
    ) -> Result<Lease, LeaseError> {
        let exhausted = LeaseError::Exhausted {
            datacenter: claim.datacenter,
            workers: claim.workers,
        };
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
            while batch.len() < BATCH
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
            let start = RandomState::new().hash_one(&claim.holder) as usize % batch.len();
            batch.rotate_left(start);
            for worker in batch {
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
