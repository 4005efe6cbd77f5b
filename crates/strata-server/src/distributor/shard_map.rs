//! Which shard owns a series: a stable hash of its labels, then jump
//! consistent hash onto the shard count.
//!
//! The hash is 64-bit FNV-1a over the series' labels in their sorted order,
//! each written as `name 0xFF value 0xFF` (0xFF never occurs in UTF-8, so
//! no two label sets give the same bytes). Jump consistent hash (Lamping and
//! Veach, 2014) then maps the hash to a shard in `0..count`: when the count
//! grows from N to N+1 only 1/(N+1) of the series move, all to the new
//! shard. Both are fixed here and must never change: every distributor
//! replica, whatever its version, must route a series to the same shard.

use strata_codec::Label;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// 64-bit FNV-1a of `name 0xFF value 0xFF` for each label in order.
pub fn series_hash(labels: &[Label]) -> u64 {
    let mut h = FNV_OFFSET;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(FNV_PRIME);
        }
    };
    for l in labels {
        eat(l.name.as_bytes());
        eat(&[0xFF]);
        eat(l.value.as_bytes());
        eat(&[0xFF]);
    }
    h
}

/// Jump consistent hash: the bucket in `0..buckets` of `key`.
pub fn jump_hash(mut key: u64, buckets: u32) -> u32 {
    let mut b: i64 = -1;
    let mut j: i64 = 0;
    while j < i64::from(buckets) {
        b = j;
        key = key.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(1);
        j = ((b + 1) as f64 * ((1u64 << 31) as f64 / ((key >> 33) + 1) as f64)) as i64;
    }
    // `b` is in 0..buckets by construction (buckets > 0).
    u32::try_from(b.max(0)).unwrap_or(0)
}

/// The shard of the series with these (sorted) labels among `count`.
pub fn shard_of(labels: &[Label], count: u32) -> u32 {
    if count <= 1 {
        return 0;
    }
    jump_hash(series_hash(labels), count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_known_values() {
        // FNV-1a 64 of "" and of "a" (published test vectors).
        assert_eq!(series_hash(&[]), 0xcbf2_9ce4_8422_2325);
        let mut h = FNV_OFFSET;
        h ^= u64::from(b'a');
        h = h.wrapping_mul(FNV_PRIME);
        assert_eq!(h, 0xaf63_dc4c_8601_ec8c);
        // A pinned series: changing the map would move data between shards.
        let labels = [Label::new("__name__", "up"), Label::new("job", "node")];
        assert_eq!(series_hash(&labels), 0x7bfe_d626_35f6_4858);
    }

    #[test]
    fn jump_hash_pinned() {
        // Computed with a port of the paper's reference code.
        assert_eq!(jump_hash(0, 1), 0);
        assert_eq!(jump_hash(1, 10), 6);
        assert_eq!(jump_hash(0xDEAD_10CC, 10), 5);
        assert_eq!(jump_hash(0xDEAD_10CC, 100), 94);
        assert_eq!(jump_hash(u64::MAX, 1000), 313);
    }

    #[test]
    fn growing_moves_only_to_the_new_shard() {
        let mut moved = 0;
        for i in 0..10_000u32 {
            let labels = [Label::new("__name__", "m"), Label::new("i", i.to_string())];
            let (a, b) = (shard_of(&labels, 4), shard_of(&labels, 5));
            if a != b {
                assert_eq!(b, 4, "a series moved between old shards");
                moved += 1;
            }
        }
        // About 1/5 of the series move.
        assert!((1_600..2_400).contains(&moved), "{moved}");
    }

    #[test]
    fn balanced() {
        let mut per = [0u32; 3];
        for i in 0..30_000u32 {
            let labels = [Label::new("__name__", "m"), Label::new("i", i.to_string())];
            per[shard_of(&labels, 3) as usize] += 1;
        }
        assert!(per.iter().all(|&n| (9_400..10_600).contains(&n)), "{per:?}");
    }
}
