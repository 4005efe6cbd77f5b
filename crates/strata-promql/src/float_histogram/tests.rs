use super::*;

/// A histogram of `schema` with positive buckets from index `offset`.
fn h(schema: i32, count: f64, sum: f64, offset: i32, buckets: &[f64]) -> FloatHistogram {
    FloatHistogram {
        schema,
        zero_threshold: 0.001,
        count,
        sum,
        positive_spans: vec![Span::new(offset, buckets.len() as u32)],
        positive_buckets: buckets.to_vec(),
        ..FloatHistogram::default()
    }
}

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

#[test]
fn spans_round_trip() {
    let spans = vec![Span::new(0, 2), Span::new(2, 1)];
    let pairs = sparse(&spans, &[1.0, 2.0, 3.0]);
    assert_eq!(pairs, vec![(0, 1.0), (1, 2.0), (4, 3.0)]);
    assert_eq!(layout(&pairs), (spans, vec![1.0, 2.0, 3.0]));
    let negative_start = sparse(&[Span::new(-3, 1), Span::new(1, 1)], &[1.0, 2.0]);
    assert_eq!(negative_start, vec![(-3, 1.0), (-1, 2.0)]);
}

#[test]
fn reducing_the_resolution_merges_buckets() {
    let mut x = h(1, 10.0, 1.0, 1, &[1.0, 2.0, 3.0, 4.0]);
    reduce_resolution(&mut x, 0);
    assert_eq!(x.schema, 0);
    assert_eq!(
        sparse(&x.positive_spans, &x.positive_buckets),
        vec![(1, 3.0), (2, 7.0)]
    );
    // Index 0 of schema 2 ((0.84, 1]) falls in index 0 of schema 0.
    let y = copy_to_schema(&h(2, 1.0, 1.0, -1, &[1.0, 1.0]), 0);
    assert_eq!(
        sparse(&y.positive_spans, &y.positive_buckets),
        vec![(0, 2.0)]
    );
}

#[test]
fn adding_reconciles_schemas() {
    let mut a = h(0, 10.0, 20.0, 0, &[1.0, 2.0, 3.0]);
    a.zero_count = 2.0;
    a.negative_spans = vec![Span::new(0, 1)];
    a.negative_buckets = vec![4.0];
    let mut b = h(1, 5.0, 10.0, 1, &[1.0, 1.0]);
    b.zero_count = 1.0;
    let got = add(&mut a, &b, false);
    assert_eq!(got, Ok(Combined::default()));
    assert_eq!(a.schema, 0);
    assert_eq!((a.count, a.sum, a.zero_count), (15.0, 30.0, 3.0));
    assert_eq!(
        sparse(&a.positive_spans, &a.positive_buckets),
        vec![(0, 1.0), (1, 4.0), (2, 3.0)]
    );
    assert_eq!(a.negative_buckets, vec![4.0]);

    // Subtracting it again leaves an empty bucket where b had its own.
    let mut c = h(0, 1.0, 1.0, 3, &[1.0]);
    add(&mut c, &h(0, 1.0, 1.0, 3, &[1.0]), true).unwrap();
    assert_eq!((c.count, c.sum), (0.0, 0.0));
    assert_eq!(c.positive_buckets, vec![0.0]);
    compact(&mut c);
    assert!(c.positive_buckets.is_empty() && c.positive_spans.is_empty());
}

#[test]
fn adding_widens_the_zero_bucket() {
    // a's bucket (0.5, 1] holds 2; b's zero bucket reaches 0.6, inside it:
    // the zero bucket grows to 1 and takes the bucket in.
    let mut a = h(0, 3.0, 1.0, 0, &[2.0]);
    a.zero_count = 1.0;
    let mut b = h(0, 5.0, 1.0, 0, &[]);
    b.positive_spans.clear();
    b.zero_threshold = 0.6;
    b.zero_count = 5.0;
    add(&mut a, &b, false).unwrap();
    assert_eq!((a.zero_threshold, a.zero_count, a.count), (1.0, 8.0, 8.0));
    assert!(a.positive_buckets.is_empty());
}

#[test]
fn custom_buckets_add_and_reconcile() {
    let custom = |values: &[f64], buckets: &[f64]| FloatHistogram {
        schema: CUSTOM_BUCKETS_SCHEMA,
        count: buckets.iter().sum(),
        positive_spans: vec![Span::new(0, buckets.len() as u32)],
        positive_buckets: buckets.to_vec(),
        custom_values: values.to_vec(),
        ..FloatHistogram::default()
    };
    let mut a = custom(&[1.0, 2.0], &[1.0, 2.0, 3.0]);
    assert_eq!(
        add(&mut a, &custom(&[1.0, 2.0], &[1.0, 1.0, 1.0]), false),
        Ok(Combined::default())
    );
    assert_eq!(a.positive_buckets, vec![2.0, 3.0, 4.0]);
    // Bounds [1, 2] and [2, 5]: only 2 is in both.
    let mut b = custom(&[1.0, 2.0], &[1.0, 2.0, 3.0]);
    let c = add(&mut b, &custom(&[2.0, 5.0], &[1.0, 1.0, 1.0]), false).unwrap();
    assert!(c.nhcb_bounds_reconciled);
    assert_eq!(b.custom_values, vec![2.0]);
    assert_eq!(b.positive_buckets, vec![4.0, 5.0]);
    // Exponential and custom do not mix.
    assert_eq!(
        add(&mut h(0, 1.0, 1.0, 0, &[1.0]), &b, false),
        Err(IncompatibleSchema)
    );
}

#[test]
fn counter_reset_hints_of_a_sum() {
    let mut a = h(0, 1.0, 1.0, 0, &[1.0]);
    a.counter_reset_hint = CounterResetHint::Reset;
    let mut b = a.clone();
    b.counter_reset_hint = CounterResetHint::NotReset;
    let c = add(&mut a, &b, false).unwrap();
    assert!(c.counter_reset_collision);
    assert_eq!(a.counter_reset_hint, CounterResetHint::Unknown);
    let mut g = h(0, 1.0, 1.0, 0, &[1.0]);
    g.counter_reset_hint = CounterResetHint::Gauge;
    let mut x = h(0, 1.0, 1.0, 0, &[1.0]);
    add(&mut x, &g, false).unwrap();
    assert_eq!(x.counter_reset_hint, CounterResetHint::Gauge);
}

#[test]
fn counter_resets_are_detected() {
    let prev = h(0, 10.0, 10.0, 0, &[5.0, 5.0]);
    // Count went down.
    assert!(detect_reset(&h(0, 9.0, 10.0, 0, &[5.0, 4.0]), &prev));
    // A bucket went down, the count up.
    assert!(detect_reset(&h(0, 12.0, 10.0, 0, &[6.0, 4.0]), &prev));
    assert!(!detect_reset(&h(0, 12.0, 10.0, 0, &[6.0, 6.0]), &prev));
    // A populated bucket disappeared.
    assert!(detect_reset(&h(0, 12.0, 10.0, 0, &[12.0]), &prev));
    // The hint decides when it says so.
    let mut hinted = h(0, 9.0, 10.0, 0, &[5.0, 4.0]);
    hinted.counter_reset_hint = CounterResetHint::NotReset;
    assert!(!detect_reset(&hinted, &prev));
    hinted.counter_reset_hint = CounterResetHint::Reset;
    assert!(detect_reset(&hinted.clone(), &hinted));
    // A finer schema than before is a reset; a coarser one is compared
    // after merging the previous buckets.
    assert!(detect_reset(&h(1, 12.0, 10.0, 0, &[6.0, 6.0]), &prev));
    let fine = h(1, 2.0, 1.0, 1, &[1.0, 1.0]);
    assert!(!detect_reset(&h(0, 2.0, 1.0, 1, &[2.0]), &fine));
    assert!(detect_reset(&h(0, 2.0, 1.0, 1, &[1.5]), &fine));
    // A narrower zero bucket is a reset.
    let mut narrow = prev.clone();
    narrow.zero_threshold = 0.0001;
    assert!(detect_reset(&narrow, &prev));
}

#[test]
fn equality_is_bitwise_on_the_layout() {
    let a = h(0, 1.0, 1.0, 0, &[1.0]);
    assert!(equals(&a, &a.clone()));
    let mut split = a.clone();
    split.positive_spans = vec![Span::new(0, 1), Span::new(0, 0)];
    assert!(equals(&a, &split));
    assert!(!equals(&a, &h(0, 1.0, 1.0, 1, &[1.0])));
    assert!(!equals(&a, &h(0, 1.0, 1.0, 0, &[1.0, 0.0])));
}

#[test]
fn scaling() {
    let mut a = h(0, 4.0, 8.0, 0, &[2.0, 2.0]);
    mul(&mut a, 0.5);
    assert_eq!(
        (a.count, a.sum, a.positive_buckets.clone()),
        (2.0, 4.0, vec![1.0, 1.0])
    );
    div(&mut a, -1.0);
    assert_eq!(a.counter_reset_hint, CounterResetHint::Gauge);
    div(&mut a, 0.0);
    assert!(a.positive_buckets.is_empty());
    assert_eq!(a.count, f64::NEG_INFINITY);
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
