//! `count_values`: a series per distinct value of each group.

use std::collections::HashMap;

use promql_parser::parser::{AggregateExpr, Expr};

use super::{next_histogram, next_value, total_points, unwrap_parens, Evaluator, Grouping, Result};
use crate::error::QueryError;
use crate::functions::format_go_float;
use crate::value::{set_label, Labels, Matrix, MatrixSeries, Point};

impl Evaluator<'_> {
    pub(super) fn eval_count_values(
        &mut self,
        a: &AggregateExpr,
        grouping: Grouping,
    ) -> Result<Matrix> {
        let label = match a.param.as_deref().map(unwrap_parens) {
            Some(Expr::StringLiteral(s)) => s.val.clone(),
            _ => return Err(QueryError::exec("count_values needs a string parameter")),
        };
        if label.is_empty() {
            return Err(QueryError::exec("invalid label name \"\""));
        }
        let mut grouping = grouping;
        if !grouping.without {
            grouping.labels.push(label.clone());
        }
        let original = self.current_samples;
        let input = self.eval_matrix(&a.expr)?;
        // A series' output group for a value is worked out once (labels set,
        // grouped, looked up) and then found by (series, value bits): each
        // step only counts.
        let mut key_of: HashMap<(usize, u64), usize> = HashMap::new();
        let mut keys: HashMap<Labels, usize> = HashMap::new();
        let mut out: Matrix = Vec::new();
        let mut counts: Vec<f64> = Vec::new();
        let mut touched: Vec<usize> = Vec::new();
        let mut cursors = vec![(0usize, 0usize); input.len()];
        let (first, interval) = (self.start, self.interval.max(1));
        let mut produced = 0usize;
        for step in 0..self.num_steps() {
            let ts = first + step as i64 * interval;
            self.check_deadline()?;
            for (i, (series, cursor)) in input.iter().zip(&mut cursors).enumerate() {
                let mut group_of = |value: &str| {
                    let metric = set_label(&series.labels, &label, value);
                    let labels = grouping.group_labels(&metric);
                    *keys.entry(labels.clone()).or_insert_with(|| {
                        out.push(MatrixSeries::floats(labels, Vec::new()));
                        counts.push(0.0);
                        out.len() - 1
                    })
                };
                let key = match next_value(ts, &series.points, &mut cursor.0) {
                    Some(v) => *key_of
                        .entry((i, v.to_bits()))
                        .or_insert_with(|| group_of(&format_go_float(v))),
                    // A histogram counts under its text form.
                    None => match next_histogram(ts, &series.histograms, &mut cursor.1) {
                        Some(h) => group_of(&crate::float_histogram::to_string(h)),
                        None => continue,
                    },
                };
                if let Some(c) = counts.get_mut(key) {
                    if *c == 0.0 {
                        touched.push(key);
                    }
                    *c += 1.0;
                }
            }
            produced += touched.len();
            if original.saturating_add(produced) > self.max_samples {
                return Err(QueryError::too_many_samples());
            }
            for key in touched.drain(..) {
                if let (Some(c), Some(series)) = (counts.get_mut(key), out.get_mut(key)) {
                    series.points.push(Point { t: ts, v: *c });
                    *c = 0.0;
                }
            }
        }
        self.hold_samples(original + total_points(&out));
        Ok(out)
    }
}
