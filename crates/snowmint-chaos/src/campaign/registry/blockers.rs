//! Leases the campaign takes itself, through the product's lease code as any holder does,
//! so that a newcomer after a restore can take only a worker id the restore forgot: the
//! attack that found registries forgetting live holders held every other worker id the
//! same way. Without them, a registry that gives a new identity a random free worker id
//! (etcd, ZooKeeper) would rarely hand the newcomer a forgotten holder's.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use snowmint_lease::{Claim, Fleet, Lease, LeaseError, Registry};

/// The fleet's datacenter and the size of its pool of worker ids (the Twitter layout's).
const DATACENTER: u64 = 0;
const WORKERS: u64 = 32;
/// Long enough that no blocker lease ends before it is given back, so none is renewed.
const BLOCKER_TTL: Duration = Duration::from_secs(120);
/// A blocker issues nothing, so its lease starts after nothing a registry that restarted
/// could have forgotten: given back, it leaves the worker id's mark where it found it
/// (below the instant the registry vouches from), not a reach past it.
const BLOCKER_REACH: Duration = Duration::ZERO;

/// How long a blocker retries a registry that is unavailable for a moment.
const RETRY_FOR: Duration = Duration::from_secs(8);

/// Worker ids of datacenter 0 held by this process, each given back when asked or when
/// dropped, at the mark it was taken with.
pub struct Blockers {
    registry: Arc<dyn Registry>,
    runtime: tokio::runtime::Handle,
    held: Vec<(Claim, Lease)>,
}

impl Blockers {
    /// Takes every free worker id of the registry at `url`.
    pub fn hold_free(url: &str, runtime: &tokio::runtime::Handle) -> anyhow::Result<Blockers> {
        let registry = snowmint_lease::registry_from_url(url).context("a blocker's registry")?;
        let namespace = Fleet::default().namespace();
        let mut blockers = Blockers {
            registry,
            runtime: runtime.clone(),
            held: Vec::new(),
        };
        for i in 0..WORKERS {
            let claim = Claim::new(
                &namespace,
                DATACENTER,
                WORKERS,
                &format!("chaos-blocker-{i}"),
                BLOCKER_TTL,
            )
            .with_reach(BLOCKER_REACH);
            let retry_until = std::time::Instant::now() + RETRY_FOR;
            loop {
                match runtime.block_on(blockers.registry.acquire(&claim)) {
                    Ok(lease) => blockers.held.push((claim, lease)),
                    Err(LeaseError::Exhausted { .. }) => return Ok(blockers),
                    // A server frozen in the middle of a transaction holds its locks until
                    // the registry ends its session (PostgreSQL: 5 s idle in a transaction).
                    Err(LeaseError::Unavailable { .. })
                        if std::time::Instant::now() < retry_until =>
                    {
                        std::thread::sleep(Duration::from_millis(200));
                        continue;
                    }
                    Err(err) => return Err(err).context("a blocker lease"),
                }
                break;
            }
        }
        Ok(blockers)
    }

    /// Gives back the worker id taken last, and answers it (as `datacenter * 32 + worker`).
    pub fn give_back_one(&mut self) -> anyhow::Result<Option<u16>> {
        let Some((claim, lease)) = self.held.pop() else {
            return Ok(None);
        };
        self.runtime
            .block_on(self.registry.release(&claim, &lease, 0))
            .context("giving a blocker lease back")?;
        Ok(Some(worker_of(&lease)))
    }

    /// Gives back the worker ids in `workers` (as `datacenter * 32 + worker`), at the mark
    /// each was taken with: the registry's own.
    pub fn give_back(&mut self, workers: &[u16]) -> anyhow::Result<()> {
        let (back, kept) = std::mem::take(&mut self.held)
            .into_iter()
            .partition(|(_, lease)| workers.contains(&worker_of(lease)));
        self.held = kept;
        for (claim, lease) in back {
            self.runtime
                .block_on(self.registry.release(&claim, &lease, 0))
                .context("giving a blocker lease back")?;
        }
        Ok(())
    }
}

/// `datacenter * 32 + worker`, as the checker names worker ids.
fn worker_of(lease: &Lease) -> u16 {
    (lease.datacenter * WORKERS + lease.worker) as u16
}

impl Drop for Blockers {
    /// Gives every worker id back; one the registry lost meanwhile (a fault) is no longer
    /// held, which is no error.
    fn drop(&mut self) {
        for (claim, lease) in &self.held {
            let _ = self
                .runtime
                .block_on(self.registry.release(claim, lease, 0));
        }
    }
}
