//! What every request handler shares: where ids come from, the limits, and the metrics.

use std::sync::Arc;

use snowmint::Layout;

use crate::IdSource;
use crate::metrics::Metrics;

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
    /// The bearer token every API request must carry, if set.
    pub auth_token: Option<String>,
}

impl AppState {
    /// State for a server issuing from `source`.
    #[must_use]
    pub fn new(source: Arc<IdSource>, max_batch: u64, auth_token: Option<String>) -> AppState {
        AppState(Arc::new(Inner {
            metrics: Metrics::new(Arc::clone(&source)),
            source,
            max_batch,
            auth_token,
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
