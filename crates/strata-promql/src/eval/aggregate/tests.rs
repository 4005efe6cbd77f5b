//! The two ways of folding groups, series by series and step by step, give
//! the same answers.

use proptest::prelude::*;
use strata_codec::Label;

use super::fold::FoldPart;
use super::*;
use crate::eval::SelectorData;

/// What both ways take (`quantile` is folded step by step only).
const OPS: [AggOp; 8] = [
    AggOp::Sum,
    AggOp::Avg,
    AggOp::Count,
    AggOp::Min,
    AggOp::Max,
    AggOp::Group,
    AggOp::Stddev,
    AggOp::Stdvar,
];

fn evaluator(data: &SelectorData, steps: usize) -> Evaluator<'_> {
    Evaluator {
        start: 0,
        end: (steps as i64 - 1) * 10,
        interval: 10,
        query_start: 0,
        query_end: (steps as i64 - 1) * 10,
        lookback: 300_000,
        data,
        deadline: None,
        max_samples: usize::MAX,
        current_samples: 0,
        peak_samples: 0,
        default_subquery_step: 60_000,
        annotations: Default::default(),
    }
}

/// Series with gaps, points off the step grid, NaNs and infinities, in a
/// few groups.
fn input_strategy(steps: usize) -> impl Strategy<Value = Matrix> {
    let point = (0u8..12, -1000.0f64..1000.0);
    let series = prop::collection::vec(point, steps);
    prop::collection::vec((0u8..4, series), 1..20).prop_map(|all| {
        all.into_iter()
            .enumerate()
            .map(|(i, (group, raw))| {
                let labels: Labels = vec![
                    Label::new("g", format!("{group}")),
                    Label::new("i", format!("{i}")),
                ]
                .into();
                let points = raw
                    .into_iter()
                    .enumerate()
                    .filter_map(|(step, (kind, v))| {
                        let t = step as i64 * 10;
                        match kind {
                            0 | 1 => None,
                            2 => Some(Point { t: t + 3, v }),
                            3 => Some(Point { t, v: f64::NAN }),
                            4 => Some(Point {
                                t,
                                v: f64::INFINITY,
                            }),
                            5 => Some(Point { t, v: -f64::MAX }),
                            _ => Some(Point { t, v }),
                        }
                    })
                    .collect();
                MatrixSeries::floats(labels, points)
            })
            .collect()
    })
}

fn same(a: &Matrix, b: &Matrix) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.labels == y.labels
                && x.points.len() == y.points.len()
                && x.points.iter().zip(&y.points).all(|(p, q)| {
                    p.t == q.t && (p.v.to_bits() == q.v.to_bits() || p.v.is_nan() && q.v.is_nan())
                })
        })
}

proptest! {
    #[test]
    fn by_series_and_by_step_agree(input in input_strategy(40), q in 0.0f64..1.0) {
        let data = SelectorData::new();
        let ev = evaluator(&data, 40);
        let grouping = Grouping { labels: vec!["g".into()], without: false };
        let (series_group, group_labels) = group_series(&grouping, &input);
        let params = vec![q; 40];
        for op in OPS {
            let by_series = ev
                .aggregate_by_series(op, &input, &series_group, group_labels.clone())
                .unwrap();
            let by_step = ev
                .aggregate_by_step(op, &input, &series_group, group_labels.clone(), &params)
                .unwrap();
            prop_assert!(same(&by_series, &by_step), "{op:?}: {by_series:?} != {by_step:?}");
        }
    }
}

/// Each group's value at each step (`None` where it has none), folded by
/// the parts `split` makes, one after another.
fn fold_parts(
    op: AggOp,
    input: &Matrix,
    series_group: &[usize],
    groups: usize,
    steps: usize,
    split: impl for<'c> FnOnce(&FoldRange, Vec<Option<&'c mut [Group]>>) -> Vec<FoldPart<'c>>,
) -> Vec<Vec<Option<u64>>> {
    let fold = FoldRange {
        op,
        first: 0,
        interval: 10,
        deadline: None,
    };
    let mut cells = vec![Group::default(); groups * steps];
    let rows = cells.chunks_mut(steps).map(Some).collect();
    for (fold, mut part) in split(&fold, rows) {
        fold.series(input, series_group, &mut part).unwrap();
    }
    cells
        .chunks(steps)
        .map(|row| {
            row.iter()
                .map(|g| {
                    let v = g.finish(op);
                    // Every NaN as one.
                    g.seen.then(|| if v.is_nan() { 1 } else { v.to_bits() })
                })
                .collect()
        })
        .collect()
}

proptest! {
    #[test]
    fn split_folds_agree_with_one(input in input_strategy(40), threads in 2usize..5) {
        let grouping = Grouping { labels: vec!["g".into()], without: false };
        let (series_group, group_labels) = group_series(&grouping, &input);
        let groups = group_labels.len();
        for op in OPS {
            let whole = fold_parts(op, &input, &series_group, groups, 40, |f, rows| vec![(*f, rows)]);
            let by_steps = fold_parts(op, &input, &series_group, groups, 40, |f, rows| {
                split_by_steps(f, rows, 40, threads)
            });
            let by_groups = fold_parts(op, &input, &series_group, groups, 40, |f, rows| {
                split_by_groups(f, rows, &series_group, threads)
            });
            prop_assert_eq!(&whole, &by_steps, "{:?}", op);
            prop_assert_eq!(&whole, &by_groups, "{:?}", op);
        }
    }
}
