//! Reading a histogram out: every bucket with its bounds, and Prometheus'
//! string form.

use strata_codec::histogram::FloatHistogram;

use super::layout::sparse;
use super::{bound, Bucket};

/// One side's buckets with bounds, index order (ascending magnitude).
pub(super) fn side_buckets(h: &FloatHistogram, positive: bool) -> Vec<Bucket> {
    let (spans, buckets) = if positive {
        (&h.positive_spans, &h.positive_buckets)
    } else {
        (&h.negative_spans, &h.negative_buckets)
    };
    let custom: &[f64] = if positive { &h.custom_values } else { &[] };
    sparse(spans, buckets)
        .into_iter()
        .map(|(idx, count)| {
            let (up, low) = (
                bound(idx, h.schema, custom),
                bound(idx - 1, h.schema, custom),
            );
            let (lower, upper) = if positive { (low, up) } else { (-up, -low) };
            let (lower_inclusive, upper_inclusive) = if h.uses_custom_buckets() {
                (idx == 0, true)
            } else {
                (lower < 0.0, upper > 0.0)
            };
            Bucket {
                lower,
                upper,
                lower_inclusive,
                upper_inclusive,
                count,
                index: idx,
            }
        })
        .collect()
}

/// Go's `%g` of a float, as `strconv.FormatFloat(f, 'g', -1, 64)`:
/// shortest digits, in exponent form below 1e-4 and from 1e6 up.
pub(crate) fn go_g(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    format!("{f}")
}

/// Go's `%.{digits}g` of a float: `digits` significant digits (trailing
/// zeros dropped), in exponent form when the exponent is below -4 or not
/// below the digits shown.
pub(crate) fn go_g_precision(f: f64, digits: usize) -> String {
    if !f.is_finite() || f == 0.0 {
        return go_g(f);
    }
    let sci = format!("{:.*e}", digits.saturating_sub(1), f);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let mantissa = if mantissa.contains('.') {
        mantissa.trim_end_matches('0').trim_end_matches('.')
    } else {
        mantissa
    };
    let shown = mantissa.chars().filter(char::is_ascii_digit).count() as i32;
    let point = exp + 1;
    let mut limit = digits as i32;
    if limit > shown && shown >= point {
        limit = shown;
    }
    if exp < -4 || exp >= limit {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    let rounded: f64 = format!("{mantissa}e{exp}").parse().unwrap_or(f);
    format!("{rounded}")
}

/// Prometheus' `FloatHistogram.String()`: `{count:20, sum:10,
/// [-2,-1):2, [-0.001,0.001]:2, (0.5,1]:1}`, populated buckets lowest
/// first (what `count_values` labels a histogram with).
pub fn to_string(h: &FloatHistogram) -> String {
    let mut out = format!("{{count:{}, sum:{}", go_g(h.count), go_g(h.sum));
    let bucket = |out: &mut String, b: &Bucket| {
        out.push_str(", ");
        out.push(if b.lower_inclusive { '[' } else { '(' });
        out.push_str(&go_g(b.lower));
        out.push(',');
        out.push_str(&go_g(b.upper));
        out.push(if b.upper_inclusive { ']' } else { ')' });
        out.push(':');
        out.push_str(&go_g(b.count));
    };
    for b in side_buckets(h, false)
        .iter()
        .rev()
        .filter(|b| b.count != 0.0)
    {
        bucket(&mut out, b);
    }
    if h.zero_count != 0.0 {
        let zt = h.zero_threshold;
        bucket(
            &mut out,
            &Bucket {
                lower: -zt,
                upper: zt,
                lower_inclusive: true,
                upper_inclusive: true,
                count: h.zero_count,
                index: 0,
            },
        );
    }
    for b in side_buckets(h, true).iter().filter(|b| b.count != 0.0) {
        bucket(&mut out, b);
    }
    out.push('}');
    out
}

/// Every bucket, lowest first: negative ones, the zero bucket (when
/// populated), positive ones, bounds next to the zero bucket clipped to its
/// threshold, as Prometheus' `AllBucketIterator`.
pub fn all_buckets(h: &FloatHistogram) -> Vec<Bucket> {
    let zt = h.zero_threshold;
    let clip = |mut b: Bucket| {
        if b.upper < 0.0 && b.upper > -zt {
            b.upper = -zt;
        } else if b.lower > 0.0 && b.lower < zt {
            b.lower = zt;
        }
        b
    };
    let mut out: Vec<Bucket> = side_buckets(h, false).into_iter().rev().map(clip).collect();
    if h.zero_count > 0.0 {
        out.push(Bucket {
            lower: -zt,
            upper: zt,
            lower_inclusive: true,
            upper_inclusive: true,
            count: h.zero_count,
            index: 0,
        });
    }
    out.extend(side_buckets(h, true).into_iter().map(clip));
    out
}

#[cfg(test)]
mod tests {
    use strata_codec::histogram::Span;

    use super::super::h;
    use super::*;

    #[test]
    fn go_g_precision_as_go_prints_it() {
        // fmt.Sprintf("%.2g", …) in Go.
        let cases = [
            (1.0, "1"),
            (5.0, "5"),
            (0.5, "0.5"),
            (12.0, "12"),
            (123.0, "1.2e+02"),
            (0.123, "0.12"),
            (0.00001234, "1.2e-05"),
            (99.9, "1e+02"),
            (f64::INFINITY, "+Inf"),
        ];
        for (f, want) in cases {
            assert_eq!(go_g_precision(f, 2), want, "{f}");
        }
    }

    #[test]
    fn all_buckets_lowest_first() {
        let mut x = h(0, 6.0, 3.5, 0, &[3.0, 0.0]);
        x.zero_count = 1.0;
        x.negative_spans = vec![Span::new(1, 1)];
        x.negative_buckets = vec![2.0];
        let b = all_buckets(&x);
        let bounds: Vec<(f64, f64, bool, bool, f64)> = b
            .iter()
            .map(|b| {
                (
                    b.lower,
                    b.upper,
                    b.lower_inclusive,
                    b.upper_inclusive,
                    b.count,
                )
            })
            .collect();
        assert_eq!(
            bounds,
            vec![
                (-2.0, -1.0, true, false, 2.0),
                (-0.001, 0.001, true, true, 1.0),
                (0.5, 1.0, false, true, 3.0),
                (1.0, 2.0, false, true, 0.0),
            ]
        );
        // Bounds inside the zero bucket are moved to its edge.
        x.zero_threshold = 0.6;
        assert_eq!(all_buckets(&x).get(2).map(|b| b.lower), Some(0.6));
    }
}
