//! The registries, and the `--lease` URL that picks one.

mod etcd;
mod file_directory;
mod file_list;
mod file_registry;
mod fixed;
mod postgres;
mod redis;
mod zookeeper;

use std::hash::{BuildHasher, RandomState};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use etcd::EtcdRegistry;
pub use file_registry::FileRegistry;
pub use fixed::FixedRegistry;
pub use postgres::PostgresRegistry;
pub use redis::RedisRegistry;
pub use zookeeper::ZooKeeperRegistry;

use crate::registry::{LeaseError, Registry};

/// How long a network registry may take to accept a connection: one that is up needs far
/// less, and one that is down must fail fast, so that the keeper retries and reports it.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// Free worker ids that an etcd or ZooKeeper acquisition draws its candidates from, in
/// listing order; it tries them in an order of its own ([`spread`]). A fleet that starts
/// together then spreads over the whole datacenter. Drawn from the first few free ids
/// only (16, as they were), 1,024 acquirers raced for the same 16 ids: each round let 16
/// win and sent the rest back after a backoff, so N acquirers cost O(N²) take attempts,
/// and a fleet of 1,024 on etcd did not hold its worker ids within a minute.
const SPREAD: usize = 4_096;

/// `free` in an order of this acquisition's own, so that concurrent acquirers, which
/// list the same free ids, seldom try the same one at once.
fn spread(mut free: Vec<u64>) -> Vec<u64> {
    let order = RandomState::new();
    free.sort_by_cached_key(|worker| order.hash_one(worker));
    free
}

/// Runs one call to a network registry within `deadline`, however many requests it sends,
/// so that a registry that is down or frozen is reported while the fence still stands. A
/// call cut short is dropped where it stands (each backend says why that leaves nothing
/// half done), and answers `late()`.
async fn within<T>(
    deadline: Duration,
    call: impl Future<Output = Result<T, LeaseError>>,
    late: impl FnOnce() -> LeaseError,
) -> Result<T, LeaseError> {
    tokio::time::timeout(deadline, call)
        .await
        .unwrap_or_else(|_| Err(late()))
}

/// Picks a registry from a lease URL: `static:W`, `hostname`, `file:DIR`, `redis://...`,
/// `rediss://...`, `redis+sentinel://...`, `rediss+sentinel://...`, `etcd[s]://host:port[,host:port...]`, `postgres://...` or
/// `zookeeper[s]://host:port,.../path`.
///
/// # Errors
///
/// An unknown scheme or a malformed URL, named in the message. Network backends do not
/// connect here; their first acquisition does.
///
/// # Examples
///
/// ```
/// let registry = snowmint_lease::registry_from_url("static:7")?;
/// assert_eq!(registry.backend(), "static");
/// let err = snowmint_lease::registry_from_url("consul://h:8500").unwrap_err();
/// assert!(err.to_string().starts_with("unknown lease URL \"consul://h:8500\""));
/// # Ok::<(), snowmint_lease::LeaseError>(())
/// ```
pub fn registry_from_url(url: &str) -> Result<Arc<dyn Registry>, LeaseError> {
    if let Some(worker) = url.strip_prefix("static:") {
        let worker = worker.parse().map_err(|_| {
            LeaseError::Invalid(format!(
                "lease URL {url:?}: the worker id after static: must be a whole number"
            ))
        })?;
        return Ok(Arc::new(FixedRegistry::new(worker)));
    }
    if url == "hostname" {
        return Ok(Arc::new(FixedRegistry::from_system_hostname()?));
    }
    if let Some(dir) = url.strip_prefix("file:") {
        if dir.is_empty() {
            return Err(LeaseError::Invalid(format!(
                "lease URL {url:?}: give a directory after file:"
            )));
        }
        return Ok(Arc::new(FileRegistry::new(PathBuf::from(dir))));
    }
    if [
        "redis://",
        "rediss://",
        "redis+sentinel://",
        "rediss+sentinel://",
    ]
    .iter()
    .any(|scheme| url.starts_with(scheme))
    {
        return Ok(Arc::new(RedisRegistry::from_url(url)?));
    }
    if url.starts_with("etcd://") || url.starts_with("etcds://") {
        return Ok(Arc::new(EtcdRegistry::from_url(url)?));
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Ok(Arc::new(PostgresRegistry::from_url(url)?));
    }
    if url.starts_with("zookeeper://") || url.starts_with("zookeepers://") {
        return Ok(Arc::new(ZooKeeperRegistry::from_url(url)?));
    }
    Err(LeaseError::Invalid(format!(
        "unknown lease URL {:?}: expected static:W, hostname, file:DIR, redis[s]://HOST:PORT, redis[s]+sentinel://HOST:PORT[,HOST:PORT...]/MASTER, etcd[s]://HOST:PORT[,HOST:PORT...], postgres://... or zookeeper[s]://HOST:PORT[,HOST:PORT...]/PATH",
        crate::secured::redact(url)
    )))
}
