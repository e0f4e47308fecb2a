//! Worker ids fixed for the life of the process: from configuration, or from the host name.

use crate::registry::{Claim, Lease, LeaseError, Registry};

/// One worker id, given by configuration. Nothing coordinates it: the operator keeps it
/// unique. Leases never expire.
#[derive(Debug, Clone)]
pub struct StaticRegistry {
    worker: u64,
}

impl StaticRegistry {
    /// Always hands out `worker`.
    #[must_use]
    pub fn new(worker: u64) -> StaticRegistry {
        StaticRegistry { worker }
    }
}

fn fixed_lease(claim: &Claim, worker: u64, source: &str) -> Result<Lease, LeaseError> {
    if worker >= claim.workers {
        return Err(LeaseError::Invalid(format!(
            "worker id {worker} {source}is out of range 0..={}",
            claim.workers - 1
        )));
    }
    Ok(Lease {
        datacenter: claim.datacenter,
        worker,
        high_water_ms: None,
        token: 0,
    })
}

#[async_trait::async_trait]
impl Registry for StaticRegistry {
    fn backend(&self) -> &'static str {
        "static"
    }

    fn expires(&self) -> bool {
        false
    }

    async fn acquire(&self, claim: &Claim) -> Result<Lease, LeaseError> {
        fixed_lease(claim, self.worker, "")
    }

    async fn renew(
        &self,
        _claim: &Claim,
        _lease: &Lease,
        _high_water_ms: u64,
    ) -> Result<(), LeaseError> {
        Ok(())
    }

    async fn release(
        &self,
        _claim: &Claim,
        _lease: &Lease,
        _high_water_ms: u64,
    ) -> Result<(), LeaseError> {
        Ok(())
    }
}

/// The trailing number of the host name: `snowmint-7` is worker 7, as a Kubernetes
/// StatefulSet names its pods. Leases never expire.
#[derive(Debug, Clone)]
pub struct HostnameRegistry {
    hostname: String,
    worker: u64,
}

impl HostnameRegistry {
    /// Reads the worker id from `hostname`.
    ///
    /// # Errors
    ///
    /// The name does not end in a number.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint_lease::HostnameRegistry;
    ///
    /// assert!(HostnameRegistry::new("snowmint-7").is_ok());
    /// assert_eq!(
    ///     HostnameRegistry::new("snowmint").unwrap_err().to_string(),
    ///     "host name \"snowmint\" does not end in a number to use as the worker id"
    /// );
    /// ```
    pub fn new(hostname: &str) -> Result<HostnameRegistry, LeaseError> {
        let digits: String = hostname
            .chars()
            .rev()
            .take_while(char::is_ascii_digit)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let worker = digits.parse().map_err(|_| {
            LeaseError::Invalid(format!(
                "host name {hostname:?} does not end in a number to use as the worker id"
            ))
        })?;
        Ok(HostnameRegistry {
            hostname: hostname.to_string(),
            worker,
        })
    }

    /// Reads the worker id from this machine's host name.
    ///
    /// # Errors
    ///
    /// The host name cannot be read or does not end in a number.
    pub fn from_system() -> Result<HostnameRegistry, LeaseError> {
        HostnameRegistry::new(&crate::hostname())
    }
}

#[async_trait::async_trait]
impl Registry for HostnameRegistry {
    fn backend(&self) -> &'static str {
        "hostname"
    }

    fn expires(&self) -> bool {
        false
    }

    async fn acquire(&self, claim: &Claim) -> Result<Lease, LeaseError> {
        fixed_lease(
            claim,
            self.worker,
            &format!("from host name {:?} ", self.hostname),
        )
    }

    async fn renew(
        &self,
        _claim: &Claim,
        _lease: &Lease,
        _high_water_ms: u64,
    ) -> Result<(), LeaseError> {
        Ok(())
    }

    async fn release(
        &self,
        _claim: &Claim,
        _lease: &Lease,
        _high_water_ms: u64,
    ) -> Result<(), LeaseError> {
        Ok(())
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
        let lease = StaticRegistry::new(7).acquire(&claim()).await.unwrap();
        assert_eq!((lease.datacenter, lease.worker), (0, 7));
        assert_eq!(
            StaticRegistry::new(40)
                .acquire(&claim())
                .await
                .unwrap_err()
                .to_string(),
            "worker id 40 is out of range 0..=31"
        );
        let lease = HostnameRegistry::new("snowmint-12")
            .unwrap()
            .acquire(&claim())
            .await
            .unwrap();
        assert_eq!(lease.worker, 12);
        assert_eq!(
            HostnameRegistry::new("web-40")
                .unwrap()
                .acquire(&claim())
                .await
                .unwrap_err()
                .to_string(),
            "worker id 40 from host name \"web-40\" is out of range 0..=31"
        );
    }
}
