//! Subqueries: the inner expression evaluated over its own step grid, once
//! for the whole query, then read like a range selector.

use promql_parser::parser::SubqueryExpr;
use strata_codec::histogram::CounterResetHint;

use super::selector::{RangeInput, RangeSeries};
use super::{duration_ms, offset_ms, Evaluator, Result};
use crate::value::Matrix;

impl Evaluator<'_> {
    /// The step range `[start, end]` and step of a subquery's evaluation,
    /// as Prometheus' `subqueryTimeRange` computes it: steps are multiples
    /// of the subquery step since the epoch.
    pub fn subquery_range(&self, sq: &SubqueryExpr) -> (i64, i64, i64) {
        let offset = offset_ms(&sq.offset);
        let range = duration_ms(&sq.range);
        let (start, end) = match self.at_ms(&sq.at) {
            Some(t) => (t, t),
            None => {
                let interval = self.interval.max(1);
                (
                    self.start,
                    self.start + ((self.end - self.start) / interval) * interval,
                )
            }
        };
        let step = sq
            .step
            .as_ref()
            .map(duration_ms)
            .filter(|s| *s > 0)
            .unwrap_or(self.default_subquery_step);
        let lower = start.saturating_sub(offset).saturating_sub(range);
        // Go's integer division truncates toward zero, as Rust's does.
        let mut first = step.saturating_mul(lower / step);
        if first <= lower {
            first = first.saturating_add(step);
        }
        (first, end.saturating_sub(offset), step)
    }

    /// A subquery as the range vector a function reads.
    pub fn eval_subquery(&mut self, sq: &SubqueryExpr) -> Result<RangeInput<'static>> {
        let mut series = self.subquery_series(sq)?;
        // Explicit counter reset hints say nothing about a subquery's
        // points, which can skip or repeat samples: they are made unknown,
        // as Prometheus does.
        for s in &mut series {
            for (_, h) in &mut s.histograms {
                if matches!(
                    h.counter_reset_hint,
                    CounterResetHint::Reset | CounterResetHint::NotReset
                ) {
                    h.counter_reset_hint = CounterResetHint::Unknown;
                }
            }
        }
        Ok(RangeInput {
            series: series.into_iter().map(RangeSeries::from_points).collect(),
            range: duration_ms(&sq.range),
            offset: offset_ms(&sq.offset),
            at: self.at_ms(&sq.at),
            selector: None,
        })
    }

    /// The inner expression's series over the subquery's steps.
    pub fn subquery_series(&mut self, sq: &SubqueryExpr) -> Result<Matrix> {
        let (start, end, step) = self.subquery_range(sq);
        let mut child = self.child(start, end, step);
        let series = child.eval_matrix(&sq.expr)?;
        // The child started from this evaluator's count and added its result.
        self.peak_samples = self.peak_samples.max(child.peak_samples);
        self.hold_samples(child.current_samples);
        Ok(series)
    }
}
