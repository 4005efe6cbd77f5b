//! Bucket bounds: exponential bounds per schema (correctly rounded),
//! custom bounds, and reconciling two lists of custom bounds.

use strata_codec::histogram::CUSTOM_BUCKETS_SCHEMA;

/// Whether `schema` names custom buckets.
pub fn is_custom(schema: i32) -> bool {
    schema == CUSTOM_BUCKETS_SCHEMA
}

/// The upper bound of exponential bucket `idx` in `schema`, as Prometheus'
/// `getBoundExponential`.
pub fn exponential_bound(idx: i32, schema: i32) -> f64 {
    if schema < 0 {
        let exp = i64::from(idx) << (-schema);
        if exp == 1024 {
            return f64::MAX;
        }
        return ldexp(1.0, exp);
    }
    let frac_idx = idx & ((1 << schema) - 1);
    let frac = exponential_frac(schema, frac_idx);
    let exp = i64::from(idx >> schema) + 1;
    if frac == 0.5 && exp == 1025 {
        return f64::MAX;
    }
    ldexp(frac, exp)
}

/// The bound in `[0.5, 1)` of fraction index `i` in `schema` (0..=8):
/// `2^(i / 2^schema) / 2`, correctly rounded, computed once per schema.
///
/// Prometheus' hard-coded `exponentialBounds` table is not correctly
/// rounded: 341 of its 511 entries differ from these (by -4 to +1 ulps), so
/// bounds printed here can differ from Prometheus' in the last digit.
fn exponential_frac(schema: i32, i: i32) -> f64 {
    static TABLES: [std::sync::OnceLock<Vec<f64>>; 9] = [const { std::sync::OnceLock::new() }; 9];
    let Some(table) = usize::try_from(schema).ok().and_then(|s| TABLES.get(s)) else {
        return f64::NAN;
    };
    let table = table.get_or_init(|| {
        let n = 1u32 << schema;
        (0..n).map(|i| correctly_rounded_frac(i, n)).collect()
    });
    usize::try_from(i)
        .ok()
        .and_then(|i| table.get(i).copied())
        .unwrap_or(f64::NAN)
}

/// The `f64` nearest to `2^(i/n - 1)` (`0 <= i < n`, `n` a power of two):
/// `exp2`'s answer, moved by an ulp while the midpoint to its neighbour,
/// raised to the `n`th power exactly, shows the neighbour is nearer.
fn correctly_rounded_frac(i: u32, n: u32) -> f64 {
    if i == 0 {
        return 0.5;
    }
    // y^n against 2^(i - n), for y in [0.5, 1): y = m * 2^-53.
    let target = i64::from(i) - i64::from(n);
    let mut y = (f64::from(i) / f64::from(n)).exp2() / 2.0;
    for _ in 0..4 {
        let m = (y * 2f64.powi(53)) as u64;
        // The midpoints below and above y: (2m -/+ 1) * 2^-54.
        if pow_cmp(2 * m - 1, -54, n, target) == std::cmp::Ordering::Greater {
            y = f64::from_bits(y.to_bits() - 1);
        } else if pow_cmp(2 * m + 1, -54, n, target) == std::cmp::Ordering::Less {
            y = f64::from_bits(y.to_bits() + 1);
        } else {
            break;
        }
    }
    y
}

/// `(m * 2^e)^n` against `2^target`, exactly (`m` odd).
fn pow_cmp(m: u64, e: i64, n: u32, target: i64) -> std::cmp::Ordering {
    // m^n as little-endian 64-bit limbs.
    let mut limbs: Vec<u64> = vec![1];
    for _ in 0..n {
        let mut carry = 0u128;
        for l in &mut limbs {
            let x = u128::from(*l) * u128::from(m) + carry;
            *l = x as u64;
            carry = x >> 64;
        }
        if carry > 0 {
            limbs.push(carry as u64);
        }
    }
    let top = limbs.last().copied().unwrap_or(0);
    let bits = (limbs.len() as i64 - 1) * 64 + (64 - i64::from(top.leading_zeros()));
    // m^n is odd, so it equals no power of two but 1 (m = 1).
    let k = target - e * i64::from(n);
    if m == 1 && k == 0 {
        return std::cmp::Ordering::Equal;
    }
    // 2^k has k + 1 bits; an odd number of as many bits is larger.
    (bits - 1).cmp(&k).then(std::cmp::Ordering::Greater)
}

/// `frac * 2^exp`, exact (as Go's `math.Ldexp`), with over- and underflow.
fn ldexp(frac: f64, exp: i64) -> f64 {
    let mut x = frac;
    let mut e = exp;
    // Steps of at most 2^1000 keep every intermediate representable.
    while e > 1000 {
        x *= 2f64.powi(1000);
        e -= 1000;
    }
    while e < -1000 {
        x *= 2f64.powi(-1000);
        e += 1000;
    }
    x * 2f64.powi(e as i32)
}

/// The upper bound of bucket `idx` (custom: `-1` is -Inf, `len` is +Inf).
pub fn bound(idx: i32, schema: i32, custom: &[f64]) -> f64 {
    if is_custom(schema) {
        if idx < 0 {
            return f64::NEG_INFINITY;
        }
        return usize::try_from(idx)
            .ok()
            .and_then(|i| custom.get(i).copied())
            .unwrap_or(f64::INFINITY);
    }
    exponential_bound(idx, schema)
}

/// The absolute bounds `(lower, upper)` of exponential bucket `idx`.
pub(super) fn abs_bounds(idx: i32, schema: i32) -> (f64, f64) {
    (
        exponential_bound(idx - 1, schema),
        exponential_bound(idx, schema),
    )
}

/// The custom bounds both lists have.
pub(super) fn intersect_bounds(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().copied().filter(|x| b.contains(x)).collect()
}

/// Custom buckets laid out for `bounds`, a subset of `from`: each bucket
/// goes to the first new bucket whose upper bound is at or above its own.
pub(super) fn map_custom(pairs: &[(i32, f64)], from: &[f64], bounds: &[f64]) -> Vec<(i32, f64)> {
    let mut out: Vec<(i32, f64)> = Vec::new();
    for &(idx, c) in pairs {
        let upper = bound(idx, CUSTOM_BUCKETS_SCHEMA, from);
        let t = bounds.partition_point(|&x| x < upper) as i32;
        match out.last_mut() {
            Some(last) if last.0 == t => last.1 += c,
            _ => out.push((t, c)),
        }
    }
    out
}

/// Whether two lists of custom bounds are the same.
pub(super) fn bits_match(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_bounds() {
        assert_eq!(exponential_bound(0, 0), 1.0);
        assert_eq!(exponential_bound(1, 0), 2.0);
        assert_eq!(exponential_bound(-1, 0), 0.5);
        assert_eq!(exponential_bound(1, -1), 4.0);
        assert_eq!(exponential_bound(1, -4), 65536.0);
        // The last finite bucket ends at the largest float.
        assert_eq!(exponential_bound(64, -4), f64::MAX);
        assert_eq!(exponential_bound(1024, 0), f64::MAX);
        assert_eq!(exponential_bound(1025, 0), f64::INFINITY);
        // 2^(1/2) and 2^(3/8), correctly rounded.
        assert_eq!(exponential_bound(1, 1), std::f64::consts::SQRT_2);
        assert!((exponential_bound(3, 3) - 2f64.powf(3.0 / 8.0)).abs() < 1e-15);
        // Every bound of every schema is within an ulp of 2^(i/2^s).
        for schema in 0..=8 {
            let n = 1 << schema;
            for i in 0..n {
                let b = exponential_bound(i + 1, schema);
                let want = 2f64.powf(f64::from(i + 1) / f64::from(n));
                assert!((b - want).abs() <= 2.0 * f64::EPSILON, "{schema} {i}");
            }
        }
        assert_eq!(bound(-1, CUSTOM_BUCKETS_SCHEMA, &[1.0]), f64::NEG_INFINITY);
        assert_eq!(bound(0, CUSTOM_BUCKETS_SCHEMA, &[1.0]), 1.0);
        assert_eq!(bound(1, CUSTOM_BUCKETS_SCHEMA, &[1.0]), f64::INFINITY);
    }

    /// `x^(2^s)` by squaring `s` times, `x` as little-endian 32-bit limbs.
    fn square_times(x: u64, s: u32) -> Vec<u32> {
        let mut v = vec![x as u32, (x >> 32) as u32];
        for _ in 0..s {
            let mut out = vec![0u32; 2 * v.len()];
            for (i, &a) in v.iter().enumerate() {
                let mut carry = 0u64;
                for (j, &b) in v.iter().enumerate() {
                    let t = u64::from(a) * u64::from(b) + u64::from(out[i + j]) + carry;
                    out[i + j] = t as u32;
                    carry = t >> 32;
                }
                let mut k = i + v.len();
                while carry > 0 {
                    let t = u64::from(out[k]) + carry;
                    out[k] = t as u32;
                    carry = t >> 32;
                    k += 1;
                }
            }
            while out.len() > 1 && out.last() == Some(&0) {
                out.pop();
            }
            v = out;
        }
        v
    }

    /// The number of bits of `v` (little-endian 32-bit limbs, no leading zero limb).
    fn bit_len(v: &[u32]) -> i64 {
        let top = *v.last().unwrap();
        (v.len() as i64 - 1) * 32 + 32 - i64::from(top.leading_zeros())
    }

    #[test]
    fn exponential_fracs_are_correctly_rounded() {
        // 2^(1/2) / 2, correctly rounded, is the standard library's constant.
        assert_eq!(exponential_frac(1, 1), std::f64::consts::FRAC_1_SQRT_2);
        assert_eq!(exponential_frac(0, 0), 0.5);
        for s in 1..=8u32 {
            let n = 1i64 << s;
            let mut last = 0.0;
            for k in 0..n {
                let v = exponential_frac(s as i32, k as i32);
                // In [0.5, 1) and strictly increasing.
                assert!((0.5..1.0).contains(&v) && v > last, "{s} {k} {v}");
                last = v;
                // Each schema's bounds are every other one of the next's.
                if s < 8 {
                    assert_eq!(v, exponential_frac(s as i32 + 1, 2 * k as i32), "{s} {k}");
                }
                if k == 0 {
                    assert_eq!(v, 0.5);
                    continue;
                }
                // v = m * 2^-53 is nearest to 2^(k/n - 1) iff the midpoints
                // (2m -/+ 1) * 2^-54 bracket it: raised to the nth power,
                // (2m - 1)^n < 2^(k - n + 54n) < (2m + 1)^n. Both sides are odd
                // and > 1, so neither equals the power of two, and an odd number
                // of b bits is above 2^e iff b > e.
                let m = v * 2f64.powi(53);
                assert_eq!(m.fract(), 0.0);
                let m = m as u64;
                assert!((1 << 52..1 << 53).contains(&m));
                let e = k - n + 54 * n;
                let below = square_times(2 * m - 1, s);
                let above = square_times(2 * m + 1, s);
                assert!(bit_len(&below) <= e, "{s} {k}: {v} rounds too high");
                assert!(bit_len(&above) > e, "{s} {k}: {v} rounds too low");
            }
        }
    }
}
