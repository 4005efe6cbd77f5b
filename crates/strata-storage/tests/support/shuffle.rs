//! A deterministic shuffle shared by the late-samples test and bench.

/// `0..n` in a deterministic shuffled order (xorshift), so a failure
/// replays.
pub fn shuffled(n: i64) -> Vec<i64> {
    let mut v: Vec<i64> = (0..n).collect();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in (1..v.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.swap(i, (x % (i as u64 + 1)) as usize);
    }
    v
}
