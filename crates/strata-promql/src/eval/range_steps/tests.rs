//! The step walk against the plain computation: each window found with two
//! binary searches, each rate computed from its window alone.

use proptest::prelude::*;
use strata_codec::Label;

use super::*;
use crate::eval::selector::window;
use crate::functions::over_time;
use crate::source::Series;
use crate::value::STALE_NAN_BITS;

/// A series with irregular gaps, counter resets, NaNs and stale markers.
fn series_strategy() -> impl Strategy<Value = Series> {
    prop::collection::vec((1i64..40_000, 0u8..20, 0.0f64..1000.0), 0..300).prop_map(|raw| {
        let (mut t, mut v) = (1_000_000i64, 0.0f64);
        let mut s = Series {
            labels: vec![Label::new("__name__", "x")].into(),
            ..Series::default()
        };
        for (gap, kind, inc) in raw {
            t += gap;
            let value = match kind {
                0 => 0.0,
                1 => inc / 7.0,
                2 => f64::from_bits(STALE_NAN_BITS),
                3 => f64::NAN,
                _ => {
                    v += inc;
                    v
                }
            };
            if kind <= 1 {
                v = value;
            }
            s.timestamps.push(t);
            s.values.push(value);
        }
        s
    })
}

fn grid(first: i64, interval: i64, steps: usize, range: i64) -> StepGrid<'static> {
    StepGrid {
        first,
        interval,
        steps,
        range,
        offset: 0,
        at: None,
        param: &[],
        param2: &[],
        deadline: None,
        max_samples: usize::MAX,
        held_samples: 0,
    }
}

/// `rate` or `increase` at every step, each window searched and scanned
/// from scratch.
fn naive(grid: &StepGrid<'_>, s: Samples<'_>, is_rate: bool) -> Vec<Point> {
    (0..grid.steps)
        .filter_map(|i| {
            let ts = grid.first + i as i64 * grid.interval;
            let w = window(s, ts - grid.range, ts);
            let v = rate::extrapolated_rate(w, ts - grid.range, ts, grid.range, true, is_rate)?;
            Some(Point { t: ts, v })
        })
        .collect()
}

fn same_bits(a: &[Point], b: &[Point]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.t == y.t && x.v.to_bits() == y.v.to_bits())
}

proptest! {
    #[test]
    fn sliding_rate_equals_naive(
        s in series_strategy(),
        start in 900_000i64..2_000_000,
        interval in 1i64..120_000,
        steps in 1usize..200,
        range in 1i64..600_000,
        is_rate: bool,
    ) {
        let input = RangeSeries::without_stale_markers(&s);
        let samples = input.samples();
        prop_assert!(!samples.v.iter().any(|v| v.to_bits() == STALE_NAN_BITS));
        let g = grid(start, interval, steps, range);
        let got = eval_series(&g, RangeFn::Increase { is_rate }, samples).unwrap();
        prop_assert!(same_bits(&got, &naive(&g, samples, is_rate)));
    }

    #[test]
    fn skip_to_equals_a_search(
        gaps in proptest::collection::vec(1i64..100, 0..3000),
        from_frac in 0.0f64..1.0,
        bound in -10i64..200_000,
    ) {
        let t: Vec<i64> = gaps
            .iter()
            .scan(0i64, |acc, g| {
                *acc += g;
                Some(*acc)
            })
            .collect();
        let at_or_before = t.partition_point(|&x| x <= bound);
        let from = ((t.len() as f64 * from_frac) as usize).min(at_or_before);
        prop_assert_eq!(skip_to(&t, from, bound), at_or_before);
    }

    #[test]
    fn cursor_finds_the_same_windows(
        s in series_strategy(),
        start in 900_000i64..2_000_000,
        interval in 1i64..120_000,
        range in 0i64..600_000,
    ) {
        let samples = Samples::new(&s.timestamps, &s.values);
        let mut cursor = WindowCursor::default();
        for i in 0..100 {
            let maxt = start + i * interval;
            let (lo, hi) = cursor.advance(samples.t, maxt - range, maxt);
            let w = window(samples, maxt - range, maxt);
            prop_assert_eq!(samples.slice(lo, hi).t, w.t);
        }
    }
}

#[test]
fn parallel_split_keeps_series_order() {
    let series: Vec<Series> = (0..64)
        .map(|k| Series {
            labels: vec![Label::new("k", k.to_string())].into(),
            timestamps: (0..5_000).map(|i| i * 15_000).collect(),
            values: (0..5_000).map(|i| f64::from(i * (k + 1)) % 997.0).collect(),
            histograms: Vec::new(),
        })
        .collect();
    let input: Vec<RangeSeries<'_>> = series
        .iter()
        .map(RangeSeries::without_stale_markers)
        .collect();
    let g = grid(300_000, 60_000, 1_000, 300_000);
    let all = eval_series_all(&g, RangeFn::Increase { is_rate: true }, &input);
    assert_eq!(all.len(), input.len());
    for (s, got) in input.iter().zip(all) {
        assert!(same_bits(&got.unwrap(), &naive(&g, s.samples(), true)));
    }
    let avg = RangeFn::Window(|w, _| Some(over_time::avg(w.v)));
    let all = eval_series_all(&g, avg, &input);
    assert!(all
        .iter()
        .all(|r| r.as_ref().is_ok_and(|p| p.len() == 1_000)));
}

#[test]
fn too_many_samples_in_one_window_fails() {
    let t: Vec<i64> = (0..10).collect();
    let v = vec![1.0; 10];
    let mut g = grid(9, 1, 1, 100);
    g.max_samples = 5;
    let got = eval_series(
        &g,
        RangeFn::Increase { is_rate: true },
        Samples::new(&t, &v),
    );
    assert!(got.is_err());
}
