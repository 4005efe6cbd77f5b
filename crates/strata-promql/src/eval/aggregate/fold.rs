//! The fold of [`Evaluator::aggregate_by_series`] split over threads: by
//! whole groups, or by steps when the groups are few.

use std::time::Instant;

use super::{AggOp, Group, Result, DEADLINE_CHECK_SERIES};
use crate::error::QueryError;
use crate::functions::kahan_inc;
use crate::value::{Matrix, Point};

/// Below this many input points an aggregation runs on one thread: a
/// thread costs tens of microseconds to start.
pub(super) const PARALLEL_MIN_POINTS: usize = 200_000;

/// One thread's share of [`Evaluator::aggregate_by_series`]: how it folds,
/// and the groups' rows of states it folds into (`None` for another
/// thread's).
pub(super) type FoldPart<'c> = (FoldRange, Vec<Option<&'c mut [Group]>>);

/// Whole groups to each of `threads`, about as many series each.
pub(super) fn split_by_groups<'c>(
    fold: &FoldRange,
    mut rows: Vec<Option<&'c mut [Group]>>,
    series_group: &[usize],
    threads: usize,
) -> Vec<FoldPart<'c>> {
    let mut per_group = vec![0usize; rows.len()];
    for &g in series_group {
        if let Some(n) = per_group.get_mut(g) {
            *n += 1;
        }
    }
    let mut load = vec![0usize; threads];
    let mut parts: Vec<FoldPart<'c>> = (0..threads)
        .map(|_| (*fold, Vec::with_capacity(rows.len())))
        .collect();
    for (row, n) in rows.iter_mut().zip(per_group) {
        let Some((t, least)) = load.iter_mut().enumerate().min_by_key(|(_, l)| **l) else {
            continue;
        };
        *least += n;
        for (i, (_, part)) in parts.iter_mut().enumerate() {
            part.push(if i == t { row.take() } else { None });
        }
    }
    parts
}

/// A run of every group's `steps` to each of `threads`: each state still
/// takes its values in input order, from the one thread that owns it.
pub(super) fn split_by_steps<'c>(
    fold: &FoldRange,
    rows: Vec<Option<&'c mut [Group]>>,
    steps: usize,
    threads: usize,
) -> Vec<FoldPart<'c>> {
    let per = steps.div_ceil(threads).max(1);
    let mut parts: Vec<FoldPart<'c>> = (0..threads)
        .map(|k| {
            let first = fold.first + (k * per) as i64 * fold.interval;
            (FoldRange { first, ..*fold }, Vec::with_capacity(rows.len()))
        })
        .collect();
    for row in rows {
        let mut rest = row;
        for (_, part) in parts.iter_mut() {
            part.push(rest.take().map(|r| {
                let (mine, later) = r.split_at_mut(per.min(r.len()));
                rest = Some(later);
                mine
            }));
        }
    }
    parts
}

/// How [`Evaluator::aggregate_by_series`] folds series into their groups'
/// states: `first` is the time of each row's first state.
#[derive(Clone, Copy)]
pub(super) struct FoldRange {
    pub(super) op: AggOp,
    pub(super) first: i64,
    pub(super) interval: i64,
    pub(super) deadline: Option<Instant>,
}

impl FoldRange {
    /// Folds every series whose group has a row in `rows` (one per group,
    /// one state per step) into it, in input order.
    pub(super) fn series(
        &self,
        input: &Matrix,
        series_group: &[usize],
        rows: &mut [Option<&mut [Group]>],
    ) -> Result<()> {
        for (i, (s, &g)) in input.iter().zip(series_group).enumerate() {
            if i % DEADLINE_CHECK_SERIES == 0 && self.deadline.is_some_and(|d| Instant::now() >= d)
            {
                return Err(QueryError::timeout());
            }
            if let Some(Some(row)) = rows.get_mut(g) {
                self.points(&s.points, row);
            }
        }
        Ok(())
    }

    /// Adds one series' points to its group's states, one per step (`row`);
    /// points off the step grid are not any step's value.
    fn points(&self, points: &[Point], row: &mut [Group]) {
        // The operator is chosen once per series, not once per point.
        match self.op {
            AggOp::Sum => self.fold(points, row, |g, f| {
                (g.value, g.kahan_c) = kahan_inc(f, g.value, g.kahan_c);
            }),
            AggOp::Max => self.fold(points, row, |g, f| {
                if g.value < f || g.value.is_nan() {
                    g.value = f;
                }
            }),
            AggOp::Min => self.fold(points, row, |g, f| {
                if g.value > f || g.value.is_nan() {
                    g.value = f;
                }
            }),
            AggOp::Count => self.fold(points, row, |g, _| g.count += 1.0),
            op => self.fold(points, row, |g, f| g.add(op, f)),
        }
    }

    /// [`Self::points`] with `add` folding a value into a state already
    /// started.
    #[inline(always)]
    fn fold(&self, points: &[Point], row: &mut [Group], add: impl Fn(&mut Group, f64)) {
        let (op, first, interval) = (self.op, self.first, self.interval);
        let mut next = 0;
        // A series mostly starts at or after the first step; its points
        // are cold here, and a search would miss the cache at every probe.
        let from = if points.first().is_none_or(|p| p.t >= first) {
            0
        } else {
            points.partition_point(|p| p.t < first)
        };
        for p in points.get(from..).unwrap_or(&[]) {
            // A point is almost always at the next step: checking that first
            // spares two integer divisions per point.
            let step = if next < row.len() && p.t == first + next as i64 * interval {
                next
            } else {
                let offset = p.t - first;
                if offset < 0 || offset % interval != 0 {
                    continue;
                }
                let Ok(step) = usize::try_from(offset / interval) else {
                    continue;
                };
                step
            };
            if step >= row.len() {
                // Points come in time order: the rest are past the row.
                break;
            }
            let Some(g) = row.get_mut(step).filter(|_| step >= next) else {
                continue;
            };
            next = step + 1;
            if g.seen {
                add(g, p.v);
            } else {
                *g = Group::start(op, p.v);
            }
        }
    }
}
