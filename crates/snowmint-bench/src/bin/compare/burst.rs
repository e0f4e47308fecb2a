//! snowmint's bounded drift: a burst far above the per-ms cap, taken with `next_batch`
//! under `OverflowPolicy::Borrow`, checking each batch's lead over the wall clock.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use snowmint::{Generator, Layout, OverflowPolicy};

/// One burst of `ids` ids, asked for `batch` at a time, with at most `lead` of drift.
#[derive(Debug, Clone, Copy)]
pub struct Burst {
    pub ids: u64,
    pub batch: u64,
    pub lead: Duration,
}

/// What one burst did.
#[derive(Debug, Clone, Copy)]
pub struct BurstRun {
    pub ids_per_sec: f64,
    pub wall: Duration,
    /// The largest lead of a batch's last id over the wall clock, read right after the
    /// batch was taken, in ms (negative: behind).
    pub max_lead_ms: i64,
    /// Times the generator parked because the lead was used up.
    pub tick_waits: u64,
}

impl Burst {
    /// Runs the burst on a fresh generator with Twitter's layout.
    pub fn run(self) -> BurstRun {
        let layout = Layout::TWITTER;
        let g = Generator::builder(layout)
            .overflow(OverflowPolicy::Borrow { lead: self.lead })
            .build()
            .expect("snowmint builds");
        let mut left = self.ids;
        let mut max_lead_ms = i64::MIN;
        let t0 = Instant::now();
        while left > 0 {
            let range = g.next_batch(self.batch.min(left)).expect("snowmint mints");
            let wall_ms = wall_ms();
            let id_ms = layout.decode(range.last()).expect("own id decodes").unix_ms;
            max_lead_ms = max_lead_ms.max(id_ms as i64 - wall_ms as i64);
            left -= range.len();
        }
        let wall = t0.elapsed();
        BurstRun {
            ids_per_sec: self.ids as f64 / wall.as_secs_f64(),
            wall,
            max_lead_ms,
            tick_waits: g.stats().tick_waits,
        }
    }
}

fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, snowmint::whole_ms)
}
