//! The keys of a claim's datacenter, and the order etcd lists them in.

use crate::registry::Claim;

/// The keys of one claim's datacenter.
pub(super) struct Keys {
    /// `/snowmint/{namespace}/dc{D}/w`: worker keys start with it, and their marks.
    pub(super) workers: String,
    /// `/snowmint/{namespace}/dc{D}/x`: the first key after all of those.
    pub(super) workers_end: String,
    /// The claim's sticky key.
    pub(super) sticky: String,
    /// `/snowmint/{namespace}/layout`: the fleet's layout in canonical form.
    pub(super) layout: String,
    /// `/snowmint/{namespace}/reach`: the largest reach (ms) of the fleet's servers.
    pub(super) reach: String,
    /// `/snowmint/{old}/dc{D}/w` for each namespace of an earlier release whose worker
    /// keys and marks the claim respects and inherits.
    legacy: Vec<String>,
}

impl Keys {
    pub(super) fn new(claim: &Claim) -> Keys {
        let dc = format!("/snowmint/{}/dc{}", claim.namespace, claim.datacenter);
        Keys {
            workers: format!("{dc}/w"),
            workers_end: format!("{dc}/x"),
            sticky: format!("{dc}/sticky/{}", claim.identity),
            layout: format!("/snowmint/{}/layout", claim.namespace),
            reach: format!("/snowmint/{}/reach", claim.namespace),
            legacy: claim
                .legacy
                .iter()
                .map(|old| format!("/snowmint/{old}/dc{}/w", claim.datacenter))
                .collect(),
        }
    }

    /// The worker key and the mark of `worker` in each earlier release's namespace.
    pub(super) fn left(&self, worker: u64) -> impl Iterator<Item = (String, String)> + '_ {
        self.legacy
            .iter()
            .map(move |w| (format!("{w}{worker}"), format!("{w}{worker}/hwm")))
    }

    pub(super) fn worker(&self, worker: u64) -> String {
        format!("{}{worker}", self.workers)
    }

    pub(super) fn mark(&self, worker: u64) -> String {
        format!("{}{worker}/hwm", self.workers)
    }

    /// The worker a listed key holds, if it is a worker key (not a mark) in canonical form.
    pub(super) fn worker_of(&self, key: &[u8]) -> Option<u64> {
        let digits = std::str::from_utf8(key.strip_prefix(self.workers.as_bytes())?).ok()?;
        let worker: u64 = digits.parse().ok()?;
        (worker.to_string() == digits).then_some(worker)
    }
}

/// Worker ids `0..n` in the order etcd lists their keys (byte order of the decimal digits:
/// 0, 1, 10, 100, 11, 2, ...), so free ones are found in the gaps of a listing page.
pub(super) struct KeyOrder {
    next: Option<u64>,
    n: u64,
}

impl KeyOrder {
    pub(super) fn new(n: u64) -> KeyOrder {
        KeyOrder {
            next: (n > 0).then_some(0),
            n,
        }
    }
}

impl Iterator for KeyOrder {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        let current = self.next?;
        self.next = if current == 0 {
            (self.n > 1).then_some(1)
        } else if let Some(child) = current.checked_mul(10).filter(|c| *c < self.n) {
            Some(child) // "12" is followed by "120"
        } else {
            // Climb while the id is the last of its siblings ("129", or the last below n).
            let mut id = current;
            while id % 10 == 9 || id + 1 >= self.n {
                id /= 10;
                if id == 0 {
                    break;
                }
            }
            (id != 0).then_some(id + 1)
        };
        Some(current)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn key_order_is_the_byte_order_of_the_keys() {
        for n in (0..=1_200).chain([9_999, 10_000, 10_001]) {
            let mut sorted: Vec<u64> = (0..n).collect();
            sorted.sort_by_key(u64::to_string);
            assert_eq!(KeyOrder::new(n).collect::<Vec<_>>(), sorted, "n = {n}");
        }
        let huge: Vec<u64> = KeyOrder::new(u64::MAX).take(4).collect();
        assert_eq!(huge, [0, 1, 10, 100]);
    }

    #[test]
    fn only_canonical_worker_keys_name_a_worker() {
        let claim = Claim::new("ns", 3, 32, "web-7", Duration::from_secs(2));
        let keys = Keys::new(&claim);
        assert_eq!(keys.worker(12), "/snowmint/ns/dc3/w12");
        assert_eq!(keys.mark(12), "/snowmint/ns/dc3/w12/hwm");
        assert_eq!(keys.sticky, "/snowmint/ns/dc3/sticky/web-7");
        assert_eq!(keys.worker_of(b"/snowmint/ns/dc3/w12"), Some(12));
        for other in [
            "/snowmint/ns/dc3/w12/hwm",
            "/snowmint/ns/dc3/w012",
            "/snowmint/ns/dc3/w",
        ] {
            assert_eq!(keys.worker_of(other.as_bytes()), None, "{other}");
        }
    }
}
