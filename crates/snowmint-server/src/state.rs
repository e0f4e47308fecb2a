//! What every request handler shares: where ids come from, the limits, and the metrics.

use std::sync::Arc;

use snowmint::Layout;

use crate::metrics::Metrics;
use crate::service::{Budget, Tokens};
use crate::{Config, IdSource, Limits, TrustedProxies};

/// Shared by every handler; cheap to clone.
#[derive(Debug, Clone)]
pub struct AppState(Arc<Inner>);

/// The contents of [`AppState`].
#[derive(Debug)]
pub struct Inner {
    /// Where ids come from.
    pub source: Arc<IdSource>,
    /// The metrics.
    pub metrics: Metrics,
    /// The largest batch a request may ask for.
    pub max_batch: u64,
    /// The most bytes one response of ids or serials may carry.
    pub max_response_bytes: u64,
    /// The bearer tokens an API request may carry, one of which it must, if set.
    pub auth: Option<Arc<Tokens>>,
    /// What one client may take from the server.
    pub limits: Limits,
    /// Room for ids in flight.
    pub(crate) budget: Budget,
}

impl AppState {
    /// State for a server issuing from `source` with the limits and token of `config`.
    #[must_use]
    pub fn for_config(source: Arc<IdSource>, config: &Config) -> AppState {
        AppState::build(
            source,
            config.max_batch,
            config.max_response_bytes,
            config.auth.clone(),
            config.limits,
            config.trusted_proxies.clone(),
        )
    }

    fn build(
        source: Arc<IdSource>,
        max_batch: u64,
        max_response_bytes: u64,
        auth: Option<Arc<Tokens>>,
        limits: Limits,
        trusted_proxies: TrustedProxies,
    ) -> AppState {
        let metrics = Metrics::new(Arc::clone(&source));
        AppState(Arc::new(Inner {
            budget: Budget::new(
                &limits,
                trusted_proxies,
                metrics.ids_in_flight.clone(),
                metrics.ids_abandoned.clone(),
            ),
            metrics,
            source,
            max_batch,
            max_response_bytes,
            auth,
            limits,
        }))
    }

    /// The server's layout.
    #[must_use]
    pub fn layout(&self) -> &Layout {
        self.0.source.layout()
    }
}

impl std::ops::Deref for AppState {
    type Target = Inner;

    fn deref(&self) -> &Inner {
        &self.0
    }
}
