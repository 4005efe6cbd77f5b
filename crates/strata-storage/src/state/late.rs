//! The late pass's state: its lock, its wake-up, the sequence of late
//! segments and when each span last had one written (`late.rs` does the
//! work).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::keys::Span;

/// Late samples in the head that wake the late pass at once.
pub(crate) const LATE_WAKE_SAMPLES: usize = 1 << 20;

/// The late pass's shared state.
pub(crate) struct LateState {
    /// Held while late segments are written and while a bucket is folded,
    /// so a fold never misses a segment written during it.
    pub(crate) lock: tokio::sync::Mutex<()>,
    /// Orders late segments by when they were written.
    pub(crate) seq: AtomicU64,
    /// Set when the head holds many late samples.
    pub(crate) wake: Mutex<bool>,
    pub(crate) woken: Condvar,
    /// When a late segment was last written to each bucket or block (ms).
    pub(crate) written: Mutex<BTreeMap<Span, i64>>,
}

impl LateState {
    pub(crate) fn new(now_ms: i64) -> Self {
        Self {
            lock: tokio::sync::Mutex::new(()),
            // Later than any seq an earlier process used, unless the clock
            // went back: a thousand writes per millisecond of room.
            seq: AtomicU64::new(u64::try_from(now_ms).unwrap_or(0).saturating_mul(1024)),
            wake: Mutex::new(false),
            woken: Condvar::new(),
            written: Mutex::new(BTreeMap::new()),
        }
    }

    pub(crate) fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::Relaxed)
    }

    /// The coordinator added extra samples: wakes the late pass when the
    /// head holds many.
    pub(crate) fn note_added(&self, held: usize) {
        if held >= LATE_WAKE_SAMPLES {
            *self.wake.lock() = true;
            self.woken.notify_all();
        }
    }

    /// Waits until woken or `timeout` passes.
    pub(crate) fn wait(&self, timeout: Duration) {
        let mut wake = self.wake.lock();
        if !*wake {
            self.woken.wait_for(&mut wake, timeout);
        }
        *wake = false;
    }
}
