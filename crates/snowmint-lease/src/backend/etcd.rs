//! Worker-id leases on Etcd.

use crate::registry::{Claim, Lease, LeaseError, Registry};

/// Leases worker ids through Etcd.
#[derive(Debug)]
pub struct EtcdRegistry {
    url: String,
}

impl EtcdRegistry {
    /// A registry for `url`; connects on first use.
    ///
    /// # Errors
    ///
    /// A malformed URL.
    pub fn from_url(url: &str) -> Result<EtcdRegistry, LeaseError> {
        Ok(EtcdRegistry {
            url: url.to_string(),
        })
    }

    fn unimplemented(&self) -> LeaseError {
        LeaseError::Unavailable {
            backend: "etcd",
            message: format!("{} is not supported yet", self.url),
        }
    }
}

#[async_trait::async_trait]
impl Registry for EtcdRegistry {
    fn backend(&self) -> &'static str {
        "etcd"
    }

    async fn acquire(&self, _claim: &Claim) -> Result<Lease, LeaseError> {
        Err(self.unimplemented())
    }

    async fn renew(
        &self,
        _claim: &Claim,
        _lease: &Lease,
        _high_water_ms: u64,
    ) -> Result<(), LeaseError> {
        Err(self.unimplemented())
    }

    async fn release(
        &self,
        _claim: &Claim,
        _lease: &Lease,
        _high_water_ms: u64,
    ) -> Result<(), LeaseError> {
        Err(self.unimplemented())
    }
}
