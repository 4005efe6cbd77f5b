//! Data points as series: numbers, classic and native histograms,
//! summaries.

use bytes::Bytes;
use strata_codec::histogram::HistogramSample;
use strata_codec::render::render_labels;
use strata_codec::Exemplar;
use strata_write::RawSeries;

use super::{float_label, millis, Context, Translator, LE, NAME, QUANTILE, STALE_NAN};
use crate::attributes::LabelBuilder;
use crate::proto::{
    number_data_point, ExponentialHistogramDataPoint, HistogramDataPoint, NumberDataPoint,
    SummaryDataPoint, FLAG_NO_RECORDED_VALUE,
};

impl Translator<'_> {
    /// Gauges and sums; a sum's exemplars go with its series (a gauge's are
    /// not read, as Prometheus does not).
    pub(super) fn numbers(
        &mut self,
        ctx: &Context<'_>,
        points: &[NumberDataPoint],
        with_exemplars: bool,
    ) -> Result<(), String> {
        for p in points {
            let mut b = self.base_labels(ctx, &p.attributes)?;
            b.set(NAME, ctx.name.clone());
            #[allow(clippy::cast_precision_loss)]
            let mut v = match p.value {
                Some(number_data_point::Value::AsDouble(f)) => f,
                Some(number_data_point::Value::AsInt(i)) => i as f64,
                None => 0.0,
            };
            if p.flags & FLAG_NO_RECORDED_VALUE != 0 {
                v = STALE_NAN;
            }
            let exemplars = if with_exemplars {
                self.exemplars(&p.exemplars)
            } else {
                Vec::new()
            };
            self.push_with(b, millis(p.time_unix_nano), v, exemplars);
        }
        Ok(())
    }

    #[allow(clippy::cast_precision_loss)]
    pub(super) fn histograms(
        &mut self,
        ctx: &Context<'_>,
        points: &[HistogramDataPoint],
    ) -> Result<(), String> {
        for p in points {
            let base = self.base_labels(ctx, &p.attributes)?;
            let t = millis(p.time_unix_nano);
            let stale = p.flags & FLAG_NO_RECORDED_VALUE != 0;
            let value = |v: f64| if stale { STALE_NAN } else { v };
            if let Some(sum) = p.sum {
                let mut b = base.clone();
                b.set(NAME, ctx.sum.clone());
                self.push(b, t, value(sum));
            }
            let mut b = base.clone();
            b.set(NAME, ctx.count.clone());
            self.push(b, t, value(p.count as f64));
            // As Prometheus: exemplars, taken as sorted by value, go to the
            // first bucket whose bound is not below their value.
            let mut exemplars = self.exemplars(&p.exemplars).into_iter().peekable();
            let mut cumulative = 0u64;
            for (bound, count) in p.explicit_bounds.iter().zip(&p.bucket_counts) {
                cumulative = cumulative.wrapping_add(*count);
                let mut b = base.clone();
                b.set(LE, float_label(*bound));
                b.set(NAME, ctx.bucket.clone());
                let mut here = Vec::new();
                while let Some(e) = exemplars.next_if(|e| e.v <= *bound) {
                    here.push(e);
                }
                self.push_with(b, t, value(cumulative as f64), here);
            }
            let mut b = base;
            b.set(LE, Bytes::from_static(b"+Inf"));
            b.set(NAME, ctx.bucket.clone());
            self.push_with(b, t, value(p.count as f64), exemplars.collect());
        }
        Ok(())
    }

    /// Native histograms, one series per point. A scale under -4 refuses
    /// the metric (as Prometheus); a histogram failing validation (its
    /// count not its buckets' total, say) is refused alone.
    pub(super) fn exponential_histograms(
        &mut self,
        ctx: &Context<'_>,
        points: &[ExponentialHistogramDataPoint],
    ) -> Result<(), String> {
        for p in points {
            let mut b = self.base_labels(ctx, &p.attributes)?;
            b.set(NAME, ctx.name.clone());
            let h = HistogramSample::Int(crate::exponential::to_native(p)?);
            let labels = b.into_raw();
            if let Err(e) = h.validate() {
                self.refuse(
                    &render_labels(&labels),
                    1,
                    format!("invalid exponential histogram: {e}"),
                );
                continue;
            }
            let exemplars = self.exemplars(&p.exemplars);
            self.out.series.push(RawSeries {
                labels,
                samples: Vec::new(),
                histograms: vec![(millis(p.time_unix_nano), h)],
                exemplars,
            });
        }
        Ok(())
    }

    #[allow(clippy::cast_precision_loss)]
    pub(super) fn summaries(
        &mut self,
        ctx: &Context<'_>,
        points: &[SummaryDataPoint],
    ) -> Result<(), String> {
        for p in points {
            let base = self.base_labels(ctx, &p.attributes)?;
            let t = millis(p.time_unix_nano);
            let stale = p.flags & FLAG_NO_RECORDED_VALUE != 0;
            let value = |v: f64| if stale { STALE_NAN } else { v };
            let mut b = base.clone();
            b.set(NAME, ctx.sum.clone());
            self.push(b, t, value(p.sum));
            let mut b = base.clone();
            b.set(NAME, ctx.count.clone());
            self.push(b, t, value(p.count as f64));
            for q in &p.quantile_values {
                let mut b = base.clone();
                b.set(QUANTILE, float_label(q.quantile));
                b.set(NAME, ctx.name.clone());
                self.push(b, t, value(q.value));
            }
        }
        Ok(())
    }

    /// Adds a series of one sample. A series a request names twice is
    /// written twice, as a remote-write request may do.
    fn push(&mut self, labels: LabelBuilder, t: i64, v: f64) {
        self.push_with(labels, t, v, Vec::new());
    }

    /// [`Self::push`] with exemplars.
    fn push_with(&mut self, labels: LabelBuilder, t: i64, v: f64, exemplars: Vec<Exemplar>) {
        self.out.series.push(RawSeries {
            labels: labels.into_raw(),
            samples: vec![(t, v)],
            histograms: Vec::new(),
            exemplars,
        });
    }
}
