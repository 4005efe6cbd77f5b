//! Which label hashes the store's labels index (`H` keys) may hold: a
//! Bloom filter the writer fills from the store at open and as it writes
//! `H` keys. A label set the head does not hold whose hash the filter has
//! never seen is new, and the store need not be asked: the first scrape of
//! a large new cluster would otherwise pay a SlateDB read per series (tens
//! of microseconds each while its memtables are full). About 1.25 bytes
//! per hash, 1% false positives; it grows by adding a filter twice the
//! size of the last when that one is full.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use parking_lot::RwLock;

/// Bits per hash, and bits set per hash: about 1% false positives.
const BITS_PER_KEY: usize = 10;
const PROBES: u64 = 6;

/// Hashes the first filter holds before the next is added.
const FIRST_CAPACITY: usize = 1 << 18;

struct Part {
    bits: Box<[AtomicU64]>,
    len: AtomicUsize,
    capacity: usize,
}

impl Part {
    fn new(capacity: usize) -> Self {
        let words = (capacity * BITS_PER_KEY).div_ceil(64);
        Self {
            bits: (0..words).map(|_| AtomicU64::new(0)).collect(),
            len: AtomicUsize::new(0),
            capacity,
        }
    }

    /// The bit positions of `hash`: double hashing of two mixes of it.
    fn positions(&self, hash: u64) -> impl Iterator<Item = usize> + '_ {
        let n = (self.bits.len() * 64) as u64;
        let h1 = mix(hash);
        let h2 = mix(h1) | 1;
        (0..PROBES).map(move |i| (h1.wrapping_add(i.wrapping_mul(h2)) % n) as usize)
    }

    fn insert(&self, hash: u64) {
        for p in self.positions(hash) {
            if let Some(w) = self.bits.get(p / 64) {
                w.fetch_or(1 << (p % 64), Ordering::Relaxed);
            }
        }
        self.len.fetch_add(1, Ordering::Relaxed);
    }

    fn may_contain(&self, hash: u64) -> bool {
        self.positions(hash).all(|p| {
            self.bits
                .get(p / 64)
                .is_some_and(|w| w.load(Ordering::Relaxed) & (1 << (p % 64)) != 0)
        })
    }
}

/// SplitMix64's finalizer: the label hash (FxHash) spreads poorly over
/// its low bits.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

pub(crate) struct HashFilter {
    parts: RwLock<Vec<Part>>,
}

impl Default for HashFilter {
    fn default() -> Self {
        Self {
            parts: RwLock::new(vec![Part::new(FIRST_CAPACITY)]),
        }
    }
}

impl HashFilter {
    pub(crate) fn insert(&self, hash: u64) {
        {
            let parts = self.parts.read();
            if let Some(last) = parts.last() {
                if last.len.load(Ordering::Relaxed) < last.capacity {
                    last.insert(hash);
                    return;
                }
            }
        }
        let mut parts = self.parts.write();
        let full = parts
            .last()
            .is_none_or(|l| l.len.load(Ordering::Relaxed) >= l.capacity);
        if full {
            let capacity = parts.last().map_or(FIRST_CAPACITY, |l| l.capacity * 2);
            parts.push(Part::new(capacity));
        }
        if let Some(last) = parts.last() {
            last.insert(hash);
        }
    }

    /// False only if `hash` was never inserted.
    pub(crate) fn may_contain(&self, hash: u64) -> bool {
        self.parts.read().iter().any(|p| p.may_contain(hash))
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.parts.read().iter().map(|p| p.bits.len() * 8).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        let f = HashFilter::default();
        let n = 3 * FIRST_CAPACITY as u64;
        // Consecutive FxHash-like values: the filter mixes them itself.
        for i in 0..n {
            f.insert(i.wrapping_mul(0x517c_c1b7_2722_0a95));
        }
        assert!((0..n).all(|i| f.may_contain(i.wrapping_mul(0x517c_c1b7_2722_0a95))));
        assert!(f.parts.read().len() >= 2, "it grew");
        let false_positives = (n..2 * n)
            .filter(|i| f.may_contain(i.wrapping_mul(0x517c_c1b7_2722_0a95)))
            .count();
        // Two or three filters each at about 1%.
        assert!(
            false_positives < (n as usize) * 4 / 100,
            "{false_positives} of {n}"
        );
    }
}
