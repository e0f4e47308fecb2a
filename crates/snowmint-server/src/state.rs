//! What every request handler shares: where ids come from, the limits, and the metrics.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use snowmint::{Generator, Id, Layout, SystemClock};

use crate::ApiError;
use crate::metrics::Metrics;

/// The generator, and whether it may issue ids now.
#[derive(Debug)]
pub struct IdSource {
    generator: Generator<SystemClock>,
    draining: AtomicBool,
}

impl IdSource {
    /// A source issuing from `generator`.
    #[must_use]
    pub fn new(generator: Generator<SystemClock>) -> IdSource {
        IdSource {
            generator,
            draining: AtomicBool::new(false),
        }
    }

    /// The generator.
    #[must_use]
    pub fn generator(&self) -> &Generator<SystemClock> {
        &self.generator
    }

    /// `Ok` while ids may be issued; otherwise the reason, for `/readyz` and 503 answers.
    ///
    /// # Errors
    ///
    /// The server is shutting down, or its clock is behind the high-water mark.
    pub fn readiness(&self) -> Result<(), String> {
        if self.draining.load(Ordering::Acquire) {
            return Err("shutting down".into());
        }
        let lag = self.generator.clock_lag_ms();
        // A lag of one tick is a spent sequence, not a clock behind its mark.
        if lag > self.generator.layout().tick_ms() {
            return Err(format!(
                "clock is {lag} ms behind the high-water mark left by an earlier run; ids resume when it passes"
            ));
        }
        Ok(())
    }

    /// Marks the source as shutting down: `/readyz` turns 503 so balancers move away.
    pub fn drain(&self) {
        self.draining.store(true, Ordering::Release);
    }

    /// One id, or 503 with the reason.
    ///
    /// # Errors
    ///
    /// Not ready, or the generator refused (see [`ApiError`]).
    pub fn next_id(&self) -> Result<Id, ApiError> {
        self.readiness().map_err(ApiError::Unavailable)?;
        Ok(self.generator.next_id()?)
    }

    /// Fills `out` with exactly `n` ids, batch by batch. Readiness is checked once, at the
    /// start: a request that began before shutdown is finished, not cut off.
    ///
    /// # Errors
    ///
    /// As [`IdSource::next_batch`]; ids already taken are dropped, never reissued.
    pub fn fill(&self, n: u64, out: &mut Vec<Id>) -> Result<(), ApiError> {
        self.readiness().map_err(ApiError::Unavailable)?;
        let mut left = n;
        while left > 0 {
            let batch = self.generator.next_batch(left)?;
            out.extend(batch.iter());
            left -= batch.len();
        }
        Ok(())
    }
}

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
        self.0.source.generator().layout()
    }
}

impl std::ops::Deref for AppState {
    type Target = Inner;

    fn deref(&self) -> &Inner {
        &self.0
    }
}
