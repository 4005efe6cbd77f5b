//! Where a residual source's integers lie, and which of them occurs most
//! often: what the encoder sizes each shape from.

use super::BLOCK;

/// Where a residual source's integers lie.
#[derive(Clone, Copy, Debug)]
pub(super) struct Spread {
    pub(super) min: i64,
    max: i64,
    /// The trailing zero bits all offsets from the base share (63 if all
    /// are zero).
    ///
    /// Any base that is one of the integers gives the same shift: every
    /// offset is a difference of two integers, and every such difference is
    /// a difference of two offsets. So it is taken from the first integer,
    /// once per order, for both the minimum and the most frequent value.
    pub(super) shift: u32,
}

impl Spread {
    /// The spread of `ys`, in one pass that also leaves each block's
    /// smallest and largest integer in `ranges`.
    pub(super) fn of(ys: &[i64], ranges: &mut Vec<(i64, i64)>) -> Self {
        ranges.clear();
        let first = ys.first().copied().unwrap_or(0) as u64;
        let mut or = 0u64;
        for block in ys.chunks(BLOCK) {
            let (mut lo, mut hi) = (i64::MAX, i64::MIN);
            for &y in block {
                lo = lo.min(y);
                hi = hi.max(y);
                or |= (y as u64).wrapping_sub(first);
            }
            ranges.push((lo, hi));
        }
        let min = ranges.iter().map(|r| r.0).min().unwrap_or(0);
        let max = ranges.iter().map(|r| r.1).max().unwrap_or(0);
        let shift = or.trailing_zeros().min(63);
        Self { min, max, shift }
    }

    /// Whether zig-zagging around `mode` is sure to be no smaller than
    /// offsets from the minimum: when it is the minimum and no offset
    /// overflows an `i64`, every residual merely doubles.
    pub(super) fn zigzag_is_wider(&self, mode: i64) -> bool {
        mode == self.min && self.max.checked_sub(self.min).is_some()
    }

    /// How many distinct residuals the integers could have.
    fn span(&self) -> u64 {
        ((self.max as u64).wrapping_sub(self.min as u64) >> self.shift).saturating_add(1)
    }

    /// The value of `ys` (of this spread) that occurs most often, the
    /// smallest among ties, 0 if none.
    ///
    /// Narrow streams (intervals, deltas of most gauges and counters) are
    /// counted in a table indexed by residual, wide ones by coarser bucket.
    pub(super) fn most_frequent(&self, ys: &[i64], tally: &mut Tally) -> i64 {
        match self.span() {
            _ if ys.is_empty() => 0,
            1 => self.min,
            span if span <= COUNTED_SPAN => tally.most_frequent_narrow(ys, self.min, self.shift),
            span => tally.most_frequent_wide(ys, self.min, self.shift, span),
        }
    }
}

/// Tables for counting how often each integer of a stream occurs.
#[derive(Debug, Default)]
pub struct Tally {
    /// Occurrences per residual of a narrow stream; all zero between uses.
    narrow: Vec<u32>,
    /// The values of a wide stream that share a bucket, sorted.
    sorted: Vec<i64>,
}

impl Tally {
    /// Counts residuals `(y - min) >> shift` below [`COUNTED_SPAN`].
    fn most_frequent_narrow(&mut self, ys: &[i64], min: i64, shift: u32) -> i64 {
        let counts = &mut self.narrow;
        counts.resize(COUNTED_SPAN as usize, 0);
        let slot = |y: i64| ((y as u64).wrapping_sub(min as u64) >> shift) as usize;
        for &y in ys {
            if let Some(c) = counts.get_mut(slot(y)) {
                *c += 1;
            }
        }
        // Reading each count back also resets it (later copies of a value
        // read 0), leaving the table clean for the next stream. Counts are
        // ranked, then lower slots, in one integer, so no branch is taken.
        let mut best = 0u64;
        for &y in ys {
            let at = slot(y);
            if let Some(c) = counts.get_mut(at) {
                best = best.max((u64::from(*c) << 32) | (COUNTED_SPAN - at as u64));
                *c = 0;
            }
        }
        let at = COUNTED_SPAN - (best & 0xFFFF_FFFF);
        (min as u64).wrapping_add(at << shift) as i64
    }

    /// Counts residuals by bucket, `span` of them spread over
    /// [`COUNTED_SPAN`] buckets. A value that occurs twice lies in a bucket
    /// counted twice, so only those buckets' values (few, in a wide stream)
    /// are sorted to find the most frequent; if no value repeats, it is the
    /// smallest.
    fn most_frequent_wide(&mut self, ys: &[i64], min: i64, shift: u32, span: u64) -> i64 {
        let counts = &mut self.narrow;
        counts.resize(COUNTED_SPAN as usize, 0);
        let coarse = shift + (64 - ((span - 1) / COUNTED_SPAN).leading_zeros());
        let bucket = |y: i64| {
            let off = (y as u64).wrapping_sub(min as u64);
            off.checked_shr(coarse).unwrap_or(0) as usize
        };
        for &y in ys {
            if let Some(c) = counts.get_mut(bucket(y)) {
                *c += 1;
            }
        }
        let shared = &mut self.sorted;
        shared.clear();
        shared.extend(
            ys.iter()
                .copied()
                .filter(|&y| counts.get(bucket(y)).is_some_and(|&c| c > 1)),
        );
        for &y in ys {
            if let Some(c) = counts.get_mut(bucket(y)) {
                *c = 0;
            }
        }
        shared.sort_unstable();
        let mut best = (1usize, min);
        for run in shared.chunk_by(|a, b| a == b) {
            if let Some(&v) = run.first() {
                if run.len() > best.0 {
                    best = (run.len(), v);
                }
            }
        }
        best.1
    }
}

/// Entries of the counting table: the widest residual range counted
/// exactly, and the number of buckets of a wider one.
const COUNTED_SPAN: u64 = 4096;
