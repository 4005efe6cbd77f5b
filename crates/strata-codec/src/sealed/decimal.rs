//! Finding the decimal form of values: `v == m / 10^e` exactly, with an
//! integer mantissa `m`.

/// Powers of ten that sealed chunks scale by; all exact in an `f64`.
pub const POW10: [f64; 16] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

/// Largest exponent a chunk may use.
pub const MAX_EXP: u8 = 15;

/// Mantissas must be exact in an `f64`.
const MAX_MANTISSA: f64 = 9_007_199_254_740_992.0; // 2^53

/// The value a mantissa stands for at exponent `e`; the decoder's one
/// conversion, shared so that encoder and decoder agree bit for bit.
#[inline(always)]
pub fn value(m: i64, scale: f64) -> f64 {
    m as f64 / scale
}

/// The mantissa of `v` at exponent `e`, if `v` is exactly `m / 10^e`.
/// `-0.0`, NaNs and infinities have none.
#[inline]
pub fn mantissa(v: f64, e: u8) -> Option<i64> {
    let scale = *POW10.get(usize::from(e))?;
    let x = v * scale;
    // Also refuses NaNs. Below 2^53, rounding cannot reach 2^53: such `x`
    // are already integers.
    if x.is_nan() || x.abs() >= MAX_MANTISSA {
        return None;
    }
    let m = round_half_away(x);
    (value(m, scale).to_bits() == v.to_bits()).then_some(m)
}

/// `x.round()` for `|x| < 2^53`, without the library call `f64::round`
/// compiles to on baseline x86-64: the fraction `x - trunc(x)` is exact.
#[inline(always)]
fn round_half_away(x: f64) -> i64 {
    let t = x as i64;
    let frac = x - t as f64;
    t + i64::from(frac >= 0.5) - i64::from(frac <= -0.5)
}

/// The smallest exponent at which `v` has a mantissa.
pub fn min_exponent(v: f64) -> Option<u8> {
    (0..=MAX_EXP).find(|&e| mantissa(v, e).is_some())
}

/// Values sampled for [`sampled_exponent`].
const SAMPLES: usize = 8;

/// The largest smallest exponent among a few values spread over `vs` (0 if
/// none is a decimal): a first guess at a chunk's exponent that is never
/// above the true one, as it is some value's smallest exponent.
pub fn sampled_exponent(vs: &[f64]) -> u8 {
    let step = (vs.len() / SAMPLES).max(1);
    vs.iter()
        .step_by(step)
        .take(SAMPLES)
        .filter_map(|&v| min_exponent(v))
        .max()
        .unwrap_or(0)
}

/// The exponent a decimal chunk of `len` values uses, the largest of their
/// smallest exponents, given a `guess` no larger than it and the values
/// that have no mantissa at `guess` (all others have one at or below it);
/// `None` when fewer than half of the values are decimals.
pub fn shared_exponent(len: usize, guess: u8, misses: impl Iterator<Item = f64>) -> Option<u8> {
    let mut e = guess;
    let mut others = 0usize;
    for v in misses {
        match min_exponent(v) {
            Some(k) => e = e.max(k),
            None => {
                others += 1;
                if others * 2 > len {
                    return None;
                }
            }
        }
    }
    Some(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_and_exceptions() {
        assert_eq!(min_exponent(0.0), Some(0));
        assert_eq!(min_exponent(-0.0), None);
        assert_eq!(min_exponent(f64::NAN), None);
        assert_eq!(min_exponent(f64::INFINITY), None);
        assert_eq!(min_exponent(f64::from_bits(0x7ff0_0000_0000_0002)), None);
        assert_eq!(min_exponent(1.0), Some(0));
        assert_eq!(min_exponent(12345.67), Some(2));
        assert_eq!(min_exponent(-0.001), Some(3));
        assert_eq!(min_exponent(0.1 + 0.2), None);
        assert_eq!(min_exponent(9_007_199_254_740_992.0), None);
        assert_eq!(mantissa(12345.67, 4), Some(123_456_700));
        assert_eq!(min_exponent(f64::from_bits(1)), None);
        assert_eq!(min_exponent(2.5), Some(1));
        assert_eq!(mantissa(-2.5, 0), None);
        assert_eq!(mantissa(-0.25, 2), Some(-25));
        assert_eq!(
            mantissa(4_503_599_627_370_497.0, 0),
            Some(4_503_599_627_370_497)
        );
    }

    #[test]
    fn shared_exponent_is_the_largest() {
        let vs = [1.5, 2.25, 3.0, f64::NAN];
        let guess = sampled_exponent(&vs[..1]);
        assert_eq!(guess, 1);
        let misses = vs.iter().copied().filter(|&v| mantissa(v, guess).is_none());
        assert_eq!(shared_exponent(vs.len(), guess, misses), Some(2));
        let noisy = [0.1 + 0.2, f64::NAN, 1.0];
        let misses = noisy.iter().copied().filter(|&v| mantissa(v, 0).is_none());
        assert_eq!(shared_exponent(noisy.len(), 0, misses), None);
    }
}
