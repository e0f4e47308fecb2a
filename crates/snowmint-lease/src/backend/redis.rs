//! Worker-id leases on Redis.

use crate::registry::{Claim, Lease, LeaseError, Registry};

/// Leases worker ids through Redis.
#[derive(Debug)]
pub struct RedisRegistry {
    url: String,
}

impl RedisRegistry {
    /// A registry for `url`; connects on first use.
    ///
    /// # Errors
    ///
    /// A malformed URL.
    pub fn from_url(url: &str) -> Result<RedisRegistry, LeaseError> {
        Ok(RedisRegistry {
            url: url.to_string(),
        })
    }

    fn unimplemented(&self) -> LeaseError {
        LeaseError::Unavailable {
            backend: "redis",
            message: format!("{} is not supported yet", self.url),
        }
    }
}

#[async_trait::async_trait]
impl Registry for RedisRegistry {
    fn backend(&self) -> &'static str {
        "redis"
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
