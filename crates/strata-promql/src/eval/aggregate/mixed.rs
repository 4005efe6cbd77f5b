//! Aggregation over an input with native histograms, step by step.

use super::{next_histogram, next_value, AggOp, Evaluator, Group, Result};
use crate::functions::quantile;
use crate::value::{Labels, Matrix, MatrixSeries, Point};

impl Evaluator<'_> {
    /// Aggregates an input with histograms step by step, as Prometheus'
    /// `aggregation`: `sum` and `avg` of histograms, `count` and `group` of
    /// both kinds, the others ignoring histograms (with an info); a group
    /// of floats and histograms under `sum` or `avg` gives nothing (with a
    /// warning).
    pub(super) fn aggregate_mixed(
        &self,
        op: AggOp,
        input: &Matrix,
        series_group: &[usize],
        group_labels: Vec<Labels>,
        params: &[f64],
    ) -> Result<Matrix> {
        use crate::annotations as anno;
        use crate::float_histogram as fh;
        use strata_codec::histogram::CounterResetHint;

        #[derive(Clone)]
        enum Acc {
            Sum(fh::KahanSum),
            Mean(fh::KahanMean),
        }
        #[derive(Default, Clone)]
        struct HistState {
            value: Option<Acc>,
            has_float: bool,
            has_histogram: bool,
            incompatible: bool,
            reset: bool,
            not_reset: bool,
        }
        let annos = &self.annotations;
        let op_name = match op {
            AggOp::Min => "min",
            AggOp::Max => "max",
            AggOp::Stddev => "stddev",
            AggOp::Stdvar => "stdvar",
            AggOp::Quantile => "quantile",
            _ => "",
        };
        let mut out: Matrix = group_labels
            .into_iter()
            .map(|labels| MatrixSeries::floats(labels, Vec::new()))
            .collect();
        let mut cursors = vec![(0usize, 0usize); input.len()];
        let mut groups: Vec<Group> = vec![Group::default(); out.len()];
        let mut hists: Vec<HistState> = vec![HistState::default(); out.len()];
        let mut values: Vec<Vec<f64>> = vec![Vec::new(); out.len()];
        let (first, interval) = (self.start, self.interval.max(1));
        for step in 0..self.num_steps() {
            let ts = first + step as i64 * interval;
            self.check_deadline()?;
            let param = params.get(step).copied().unwrap_or(0.0);
            groups.iter_mut().for_each(|g| g.seen = false);
            for ((s, cursor), &gi) in input.iter().zip(&mut cursors).zip(series_group) {
                let float = next_value(ts, &s.points, &mut cursor.0);
                let hist = if float.is_none() {
                    next_histogram(ts, &s.histograms, &mut cursor.1)
                } else {
                    None
                };
                if float.is_none() && hist.is_none() {
                    continue;
                }
                let (Some(g), Some(hs), Some(vs)) =
                    (groups.get_mut(gi), hists.get_mut(gi), values.get_mut(gi))
                else {
                    continue;
                };
                let f = float.unwrap_or(0.0);
                if let Some(h) = hist {
                    if matches!(
                        op,
                        AggOp::Min | AggOp::Max | AggOp::Stddev | AggOp::Stdvar | AggOp::Quantile
                    ) {
                        annos.add(anno::histogram_ignored_in_aggregation(op_name));
                        continue;
                    }
                    if matches!(op, AggOp::Sum | AggOp::Avg) {
                        if !g.seen {
                            *g = Group::start(op, 0.0);
                            *hs = HistState::default();
                            vs.clear();
                        } else {
                            g.count += 1.0;
                        }
                        hs.has_histogram = true;
                        match h.counter_reset_hint {
                            CounterResetHint::Reset => hs.reset = true,
                            CounterResetHint::NotReset => hs.not_reset = true,
                            _ => {}
                        }
                        if hs.incompatible {
                            continue;
                        }
                        let added = match &mut hs.value {
                            None if !hs.has_float => {
                                hs.value = Some(if op == AggOp::Avg {
                                    Acc::Mean(fh::KahanMean::new(h.clone()))
                                } else {
                                    Acc::Sum(fh::KahanSum::new(h.clone()))
                                });
                                None
                            }
                            None => None,
                            Some(Acc::Sum(sum)) => Some(sum.add(h)),
                            Some(Acc::Mean(mean)) => Some(mean.add(h)),
                        };
                        match added {
                            None => {}
                            Some(result) => match result {
                                Ok(c) => {
                                    if c.nhcb_bounds_reconciled {
                                        annos.add(anno::mismatched_custom_buckets("aggregation"));
                                    }
                                }
                                Err(_) => {
                                    annos.add(anno::mixed_exponential_custom(
                                        crate::value::get_label(&s.labels, "__name__"),
                                    ));
                                    hs.incompatible = true;
                                }
                            },
                        }
                        continue;
                    }
                }
                // A float, or a histogram under count or group.
                if g.seen {
                    if matches!(op, AggOp::Sum | AggOp::Avg) {
                        hs.has_float = true;
                    }
                    g.add(op, f);
                } else {
                    *g = Group::start(op, f);
                    *hs = HistState {
                        has_float: true,
                        ..HistState::default()
                    };
                    vs.clear();
                }
                if op == AggOp::Quantile {
                    vs.push(f);
                }
            }
            for ((g, hs), (series, vs)) in groups
                .iter_mut()
                .zip(&mut hists)
                .zip(out.iter_mut().zip(&mut values))
            {
                if !g.seen {
                    continue;
                }
                if matches!(op, AggOp::Sum | AggOp::Avg) && hs.has_histogram {
                    if hs.has_float {
                        annos.add(anno::mixed_floats_histograms_agg());
                        continue;
                    }
                    if hs.reset && hs.not_reset {
                        annos.add(anno::counter_reset_collision("aggregation"));
                    }
                    if hs.incompatible {
                        continue;
                    }
                    if let Some(acc) = hs.value.take() {
                        let mut h = match acc {
                            Acc::Sum(sum) => sum.finish(),
                            Acc::Mean(mean) => mean.finish(),
                        };
                        fh::compact(&mut h);
                        series.histograms.push((ts, h));
                    }
                    continue;
                }
                let v = if op == AggOp::Quantile {
                    let q = quantile(param, vs);
                    vs.clear();
                    q
                } else {
                    g.finish(op)
                };
                series.points.push(Point { t: ts, v });
            }
        }
        out.retain(|s| !s.is_empty());
        Ok(out)
    }
}
