//! SplitMix64: the one small seeded generator shared by tests, benches and
//! fault injection. Fixtures and bench data depend on its exact sequence,
//! so it must never change (the test below pins it).

use std::ops::Range;

/// SplitMix64 (Steele, Lea and Flood): tiny, fast, seedable; not for
/// anything that needs unpredictability.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator whose first output is SplitMix64's first for `seed`.
    pub const fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 uniform bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1), from the top 53 bits of one draw.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// In [0, n) (by remainder, so slightly biased); panics if `n` is 0.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// In `r` (by remainder); panics if `r` is empty.
    pub fn in_range(&mut self, r: Range<u64>) -> u64 {
        r.start + self.below(r.end - r.start)
    }

    /// In [lo, hi], both inclusive (by remainder); needs `lo <= hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next_u64() % ((hi - lo + 1) as u64)) as i64
    }
}

#[cfg(test)]
mod tests {
    use super::SplitMix64;

    #[test]
    fn sequence_is_pinned() {
        // The reference SplitMix64 outputs for seed 0: fixtures and bench
        // data are drawn from this sequence, so it must never change.
        let mut rng = SplitMix64::new(0);
        assert_eq!(rng.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(rng.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(rng.next_u64(), 0x06C4_5D18_8009_454F);
    }

    #[test]
    fn derived_draws_stay_in_bounds() {
        let mut rng = SplitMix64::new(42);
        for _ in 0..10_000 {
            let u = rng.unit();
            assert!((0.0..1.0).contains(&u));
            assert!(rng.below(7) < 7);
            assert!((10..13).contains(&rng.in_range(10..13)));
            assert!((-3..=3).contains(&rng.range(-3, 3)));
        }
    }
}
