//! One metric: its type and temporality checked, its series names built
//! once per request, its points handed to their kind's translation.

use strata_write::{MetricMetadata, RejectedSeries};

use super::{point_count, Context, MetricNames, ResourceLabels, Translator, INSTANCE, JOB};
use crate::attributes::LabelBuilder;
use crate::names::{metric_name, unit_name, MetricType};
use crate::proto::{metric, KeyValue, TEMPORALITY_CUMULATIVE, TEMPORALITY_DELTA};

impl<'a> Translator<'a> {
    pub(super) fn refuse(&mut self, what: &str, points: usize, reason: String) {
        self.rejected_points += points;
        self.out.rejected.push(RejectedSeries {
            labels: what.to_owned(),
            samples: points,
            reason,
        });
    }

    pub(super) fn metric(
        &mut self,
        m: &'a crate::proto::Metric,
        resource: &ResourceLabels,
        scope: Option<&LabelBuilder>,
    ) {
        let points = point_count(m.data.as_ref());
        let shown = || format!("metric {:?}", m.name);
        let (kind, temporality) = match &m.data {
            None => {
                self.refuse(
                    &shown(),
                    0,
                    "no data: not a gauge, sum, histogram, exponential histogram or summary".into(),
                );
                return;
            }
            Some(metric::Data::Gauge(_)) => (MetricType::Gauge, None),
            Some(metric::Data::Sum(s)) if s.is_monotonic => (
                MetricType::MonotonicCounter,
                Some(s.aggregation_temporality),
            ),
            Some(metric::Data::Sum(s)) => (
                MetricType::NonMonotonicCounter,
                Some(s.aggregation_temporality),
            ),
            Some(metric::Data::Histogram(h)) => {
                (MetricType::Histogram, Some(h.aggregation_temporality))
            }
            Some(metric::Data::ExponentialHistogram(h)) => (
                MetricType::ExponentialHistogram,
                Some(h.aggregation_temporality),
            ),
            Some(metric::Data::Summary(_)) => (MetricType::Summary, None),
        };
        match temporality {
            Some(TEMPORALITY_CUMULATIVE) | None => {}
            Some(t) => {
                let which = if t == TEMPORALITY_DELTA {
                    "delta"
                } else {
                    "unspecified"
                };
                self.refuse(
                    &shown(),
                    points,
                    format!(
                        "{which} aggregation temporality: only cumulative sums and histograms \
                         are taken; configure the exporter's temporality preference as cumulative"
                    ),
                );
                return;
            }
        }
        if points == 0 {
            self.warnings
                .push(format!("empty data points: {} is dropped", m.name));
            return;
        }
        let key = (m.name.as_str(), m.unit.as_str(), kind);
        let names = match self.metrics.get(&key) {
            Some(n) => n.clone(),
            None => {
                let strategy = self.settings.translation_strategy;
                let name = match metric_name(&m.name, &m.unit, kind, strategy) {
                    Ok(n) => n,
                    Err(e) => {
                        self.refuse(&shown(), points, e);
                        return;
                    }
                };
                self.out.metadata.push(MetricMetadata {
                    metric: name.clone(),
                    kind: match kind {
                        MetricType::MonotonicCounter => "counter",
                        MetricType::Gauge | MetricType::NonMonotonicCounter => "gauge",
                        MetricType::Histogram | MetricType::ExponentialHistogram => "histogram",
                        MetricType::Summary => "summary",
                    },
                    help: m.description.clone(),
                    unit: unit_name(&m.unit),
                });
                let names = MetricNames::new(name, kind);
                self.metrics.insert(key, names.clone());
                names
            }
        };
        let ctx = Context {
            resource,
            scope,
            name: names.name,
            sum: names.sum,
            count: names.count,
            bucket: names.bucket,
        };
        let result = match &m.data {
            Some(metric::Data::Gauge(g)) => self.numbers(&ctx, &g.data_points, false),
            Some(metric::Data::Sum(s)) => self.numbers(&ctx, &s.data_points, true),
            Some(metric::Data::Histogram(h)) => self.histograms(&ctx, &h.data_points),
            Some(metric::Data::ExponentialHistogram(h)) => {
                self.exponential_histograms(&ctx, &h.data_points)
            }
            Some(metric::Data::Summary(s)) => self.summaries(&ctx, &s.data_points),
            _ => Ok(()),
        };
        if let Err(e) = result {
            self.refuse(&shown(), points, e);
        }
    }

    /// A data point's labels before its name: attributes, promoted
    /// resource attributes, `job`, `instance`, scope labels.
    pub(super) fn base_labels(
        &mut self,
        ctx: &Context<'_>,
        attrs: &[KeyValue],
    ) -> Result<LabelBuilder, String> {
        let mut b = LabelBuilder::from_attributes(
            attrs,
            &["__name__"],
            &mut self.names,
            &mut self.collisions,
        )?;
        for (n, v) in ctx.resource.promoted.iter() {
            b.set_if_absent(n, v);
        }
        b.set(JOB, ctx.resource.job.clone());
        b.set(INSTANCE, ctx.resource.instance.clone());
        if let Some(scope) = ctx.scope {
            for (n, v) in scope.iter() {
                b.set(n.clone(), v.clone());
            }
        }
        Ok(b)
    }
}
