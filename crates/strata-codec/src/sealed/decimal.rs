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
pub fn mantissa(v: f64, e: u8) -> Option<i64> {
    let scale = *POW10.get(usize::from(e))?;
    let m = (v * scale).round();
    if m.is_nan() || m.abs() >= MAX_MANTISSA {
        return None;
    }
    let m = m as i64;
    (value(m, scale).to_bits() == v.to_bits()).then_some(m)
}

/// The smallest exponent at which `v` has a mantissa.
pub fn min_exponent(v: f64) -> Option<u8> {
    (0..=MAX_EXP).find(|&e| mantissa(v, e).is_some())
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
    }
}
