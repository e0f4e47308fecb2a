//! Worker ids fixed for the life of the process: from configuration, or from the host name.

use crate::listing::{ListFilter, Listing};
use crate::registry::{Claim, Lease, LeaseError, Registry};

/// One worker id for the life of the process: given by configuration (`static:W`) or read
/// from the host name (`hostname`: `snowmint-7` is worker 7, as a Kubernetes StatefulSet
/// names its pods). Nothing coordinates it: the operator keeps it unique. Leases never
/// expire, and the high-water mark lives in the local state file.
#[derive(Debug, Clone)]
pub struct FixedRegistry {
    worker: u64,
    backend: &'static str,
    /// Where the number came from, for errors: empty, or `from host name "..." `.
    origin: String,
}

impl FixedRegistry {
    /// Always hands out `worker`.
    #[must_use]
    pub fn new(worker: u64) -> FixedRegistry {
        FixedRegistry {
            worker,
            backend: "static",
            origin: String::new(),
        }
    }

    /// Hands out the trailing number of `hostname`.
    ///
    /// # Errors
    ///
    /// The name does not end in a number.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint_lease::FixedRegistry;
    ///
    /// assert!(FixedRegistry::from_hostname("snowmint-7").is_ok());
    /// assert_eq!(
    ///     FixedRegistry::from_hostname("snowmint").unwrap_err().to_string(),
    ///     "host name \"snowmint\" does not end in a number to use as the worker id"
    /// );
    /// ```
    pub fn from_hostname(hostname: &str) -> Result<FixedRegistry, LeaseError> {
        let digits = hostname.len()
            - hostname
                .trim_end_matches(|c: char| c.is_ascii_digit())
                .len();
        let worker = hostname[hostname.len() - digits..].parse().map_err(|_| {
            LeaseError::Invalid(format!(
                "host name {hostname:?} does not end in a number to use as the worker id"
            ))
        })?;
        Ok(FixedRegistry {
            worker,
            backend: "hostname",
            origin: format!("from host name {hostname:?} "),
        })
    }

    /// Hands out the trailing number of this machine's host name.
    ///
    /// # Errors
    ///
    /// The host name does not end in a number.
    pub fn from_system_hostname() -> Result<FixedRegistry, LeaseError> {
        FixedRegistry::from_hostname(&crate::hostname())
    }
}

#[async_trait::async_trait]
impl Registry for FixedRegistry {
    fn backend(&self) -> &'static str {
        self.backend
    }

    fn expires(&self) -> bool {
        false
    }

    async fn acquire(&self, claim: &Claim) -> Result<Lease, LeaseError> {
        if self.worker >= claim.workers {
            return Err(LeaseError::Invalid(format!(
                "worker id {} {}is out of range 0..={}",
                self.worker,
                self.origin,
                claim.workers - 1
            )));
        }
        Ok(Lease {
            datacenter: claim.datacenter,
            worker: self.worker,
            high_water_ms: None,
            token: 0,
        })
    }

    async fn renew(
        &self,
        _claim: &Claim,
        _lease: &Lease,
        _high_water_ms: u64,
    ) -> Result<(), LeaseError> {
        Ok(())
    }

    async fn give_back(&self, _: &Claim, _: &Lease, _mark_ms: u64) -> Result<(), LeaseError> {
        Ok(())
    }

    async fn list(&self, _: &ListFilter) -> Result<Listing, LeaseError> {
        let lease = match self.backend {
            "static" => format!("static:{}", self.worker),
            backend => backend.to_string(),
        };
        Err(LeaseError::NothingToList { lease })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn claim() -> Claim {
        Claim::new("twitter-1", 0, 32, "host", Duration::from_secs(10))
    }

    #[tokio::test]
    async fn static_and_hostname_check_the_range() {
        let lease = FixedRegistry::new(7).acquire(&claim()).await.unwrap();
        assert_eq!((lease.datacenter, lease.worker), (0, 7));
        assert_eq!(
            FixedRegistry::new(40)
                .acquire(&claim())
                .await
                .unwrap_err()
                .to_string(),
            "worker id 40 is out of range 0..=31"
        );
        let lease = FixedRegistry::from_hostname("snowmint-12")
            .unwrap()
            .acquire(&claim())
            .await
            .unwrap();
        assert_eq!(lease.worker, 12);
        assert_eq!(
            FixedRegistry::from_hostname("web-40")
                .unwrap()
                .acquire(&claim())
                .await
                .unwrap_err()
                .to_string(),
            "worker id 40 from host name \"web-40\" is out of range 0..=31"
        );
    }
}
