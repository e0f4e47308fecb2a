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

/// Every worker id of datacenter 0 but some, held until dropped.
pub struct Blockers {
    registry: Arc<dyn Registry>,
    runtime: tokio::runtime::Handle,
    held: Vec<(Claim, Lease)>,
}

impl Blockers {
    /// Takes every free worker id of the registry at `url`, and gives back at once those
    /// in `left` (as `datacenter * 32 + worker`), at the mark they were taken with: the
    /// restored one.
    pub fn hold_all_but(
        url: &str,
        left: &[u16],
        runtime: &tokio::runtime::Handle,
    ) -> anyhow::Result<Blockers> {
        let registry = snowmint_lease::registry_from_url(url).context("a blocker's registry")?;
        let namespace = Fleet::default().namespace();
        let mut blockers = Blockers {
            registry,
            runtime: runtime.clone(),
            held: Vec::new(),
        };
        let mut given_back = Vec::new();
        for i in 0..WORKERS {
            let claim = Claim::new(
                &namespace,
                DATACENTER,
                WORKERS,
                &format!("chaos-blocker-{i}"),
                BLOCKER_TTL,
            );
            match runtime.block_on(blockers.registry.acquire(&claim)) {
                Ok(lease) => {
                    let worker = (lease.datacenter * WORKERS + lease.worker) as u16;
                    if left.contains(&worker) {
                        given_back.push((claim, lease));
                    } else {
                        blockers.held.push((claim, lease));
                    }
                }
                Err(LeaseError::Exhausted { .. }) => break,
                Err(err) => return Err(err).context("a blocker lease"),
            }
        }
        for (claim, lease) in &given_back {
            runtime
                .block_on(blockers.registry.release(claim, lease, 0))
                .context("giving a blocker lease back")?;
        }
        Ok(blockers)
    }
}

impl Drop for Blockers {
    /// Gives every worker id back, at the mark it was taken with; one the registry lost
    /// meanwhile (a fault) is no longer held, which is no error.
    fn drop(&mut self) {
        for (claim, lease) in &self.held {
            let _ = self
                .runtime
                .block_on(self.registry.release(claim, lease, 0));
        }
    }
}
