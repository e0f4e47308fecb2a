//! Worker-id leases on Postgres.

use crate::registry::{Claim, Lease, LeaseError, Registry};

/// Leases worker ids through Postgres.
#[derive(Debug)]
pub struct PostgresRegistry {
    url: String,
}

impl PostgresRegistry {
    /// A registry for `url`; connects on first use.
    ///
    /// # Errors
    ///
    /// A malformed URL.
    pub fn from_url(url: &str) -> Result<PostgresRegistry, LeaseError> {
        Ok(PostgresRegistry {
            url: url.to_string(),
        })
    }

    fn unimplemented(&self) -> LeaseError {
        LeaseError::Unavailable {
            backend: "postgres",
            message: format!("{} is not supported yet", self.url),
        }
    }
}

#[async_trait::async_trait]
impl Registry for PostgresRegistry {
    fn backend(&self) -> &'static str {
        "postgres"
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
