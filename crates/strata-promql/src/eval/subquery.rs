//! Subqueries: the inner expression evaluated over its own step grid, once
//! for the whole query, then read like a range selector.

use promql_parser::parser::SubqueryExpr;

use super::{duration_ms, offset_ms, selector::RangeInput, Evaluator, Result};

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

    pub fn eval_subquery(&mut self, sq: &SubqueryExpr) -> Result<RangeInput> {
        let (start, end, step) = self.subquery_range(sq);
        let mut child = self.child(start, end, step);
        let series = child.eval_matrix(&sq.expr)?;
        // The child started from this evaluator's count and added its result.
        self.current_samples = child.current_samples;
        Ok(RangeInput {
            series,
            range: duration_ms(&sq.range),
            offset: offset_ms(&sq.offset),
            at: self.at_ms(&sq.at),
            selector: None,
        })
    }
}
