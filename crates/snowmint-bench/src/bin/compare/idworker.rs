//! The seed's baseline, written here: Twitter's IdWorker. One mutex around the last
//! millisecond and the sequence; the wall clock read under the lock; on sequence overflow,
//! spin until the next millisecond.

use std::hint::spin_loop;
use std::sync::{Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

/// Twitter's IdWorker with a configurable sequence width; the node id is always 0 here.
#[derive(Debug)]
pub struct IdWorker {
    state: Mutex<State>,
    epoch_ms: u64,
    sequence_bits: u32,
    sequence_mask: u64,
}

#[derive(Debug)]
struct State {
    last_ms: u64,
    sequence: u64,
}

/// The wall clock went back (IdWorker throws `InvalidSystemClock`).
#[derive(Debug)]
pub struct ClockBehind {
    /// How far back, in ms.
    pub by_ms: u64,
}

impl IdWorker {
    /// A worker whose ids count ms since `epoch_ms` above `22` low bits, of which the lowest
    /// `sequence_bits` hold the sequence (the rest, the node id, stay 0).
    pub fn new(sequence_bits: u32, epoch_ms: u64) -> IdWorker {
        IdWorker {
            state: Mutex::new(State {
                last_ms: 0,
                sequence: 0,
            }),
            epoch_ms,
            sequence_bits,
            sequence_mask: (1 << sequence_bits) - 1,
        }
    }

    /// The next id, as IdWorker's `nextId`.
    ///
    /// # Errors
    ///
    /// The wall clock reads earlier than the last id's millisecond.
    pub fn next_id(&self) -> Result<u64, ClockBehind> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let mut now = wall_ms();
        if now < state.last_ms {
            return Err(ClockBehind {
                by_ms: state.last_ms - now,
            });
        }
        if now == state.last_ms {
            state.sequence = (state.sequence + 1) & self.sequence_mask;
            if state.sequence == 0 {
                now = til_next_ms(state.last_ms);
            }
        } else {
            state.sequence = 0;
        }
        state.last_ms = now;
        // Twitter's split keeps the timestamp above 22 bits whatever the sequence width.
        const TIMESTAMP_SHIFT: u32 = 22;
        debug_assert!(self.sequence_bits <= TIMESTAMP_SHIFT);
        Ok((now - self.epoch_ms) << TIMESTAMP_SHIFT | state.sequence)
    }
}

fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, snowmint::whole_ms)
}

/// IdWorker's `tilNextMillis`: a busy loop on the wall clock.
fn til_next_ms(last_ms: u64) -> u64 {
    loop {
        let now = wall_ms();
        if now > last_ms {
            return now;
        }
        spin_loop();
    }
}
