//! OTLP metrics to Prometheus series, as Prometheus 3's OTLP receiver
//! translates them:
//!
//! - gauges and non-monotonic sums become gauges, cumulative monotonic
//!   sums counters (`_total`); explicit-bucket histograms classic
//!   `_bucket{le}`/`_sum`/`_count` series; exponential histograms native
//!   histograms (see [`crate::exponential`]); summaries `{quantile}`,
//!   `_sum` and `_count`;
//! - `job` is `service.namespace/service.name`, `instance` is
//!   `service.instance.id`; the other resource attributes go to
//!   `target_info`, and those named in `promote_resource_attributes` onto
//!   every series;
//! - a point flagged "no recorded value" is a stale marker;
//! - exemplars of sums, histograms (by bucket) and exponential histograms
//!   go with their series (`trace_id`, `span_id`, filtered attributes).
//!
//! A metric this store cannot take is refused alone, with its points
//! counted: delta temporality (Prometheus refuses it too unless told to
//! allow it), and exponential histograms with a scale under -4.

use std::collections::HashMap;

use bytes::Bytes;
use strata_codec::histogram::HistogramSample;
use strata_codec::render::render_labels;
use strata_codec::{Exemplar, Label};
use strata_write::{DecodedWrite, MetricMetadata, RawSeries, RejectedSeries};

use crate::attributes::{get, value_string, LabelBuilder, NameCache};
use crate::names::{metric_name, unit_name, LabelNamer, MetricType, TranslationStrategy};
use crate::proto::{
    exemplar, metric, number_data_point, ExponentialHistogramDataPoint,
    ExportMetricsServiceRequest, HistogramDataPoint, KeyValue, NumberDataPoint, SummaryDataPoint,
    FLAG_NO_RECORDED_VALUE, TEMPORALITY_CUMULATIVE, TEMPORALITY_DELTA,
};

/// Prometheus' stale marker.
const STALE_NAN: f64 = f64::from_bits(0x7ff0_0000_0000_0002);

const SERVICE_NAME: &str = "service.name";
const SERVICE_NAMESPACE: &str = "service.namespace";
const SERVICE_INSTANCE_ID: &str = "service.instance.id";

/// `target_info` gets a sample every half lookback (Prometheus' default
/// lookback of 5 minutes) between a resource's first and last point.
const TARGET_INFO_INTERVAL_MS: i64 = 150_000;

/// The `otlp` settings, with Prometheus 3's names and defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    pub translation_strategy: TranslationStrategy,
    /// Resource attributes copied onto every series of the resource.
    pub promote_resource_attributes: Vec<String>,
    /// Every resource attribute promoted but those in
    /// `ignore_resource_attributes`.
    pub promote_all_resource_attributes: bool,
    pub ignore_resource_attributes: Vec<String>,
    /// `service.*` kept in `target_info` too.
    pub keep_identifying_resource_attributes: bool,
    /// `otel_scope_name`, `otel_scope_version`, `otel_scope_schema_url` and
    /// `otel_scope_<attribute>` on every series.
    pub promote_scope_metadata: bool,
    pub label_name_underscore_sanitization: bool,
    pub label_name_preserve_multiple_underscores: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            translation_strategy: TranslationStrategy::default(),
            promote_resource_attributes: Vec::new(),
            promote_all_resource_attributes: false,
            ignore_resource_attributes: Vec::new(),
            keep_identifying_resource_attributes: false,
            promote_scope_metadata: false,
            label_name_underscore_sanitization: true,
            label_name_preserve_multiple_underscores: true,
        }
    }
}

/// A translated request: the write to make, and what the request held.
#[derive(Debug)]
pub struct Translated {
    /// Series to write (with the metadata of their metrics), and the
    /// metrics refused, each with the number of its points.
    pub write: DecodedWrite<RawSeries>,
    /// Data points in the request.
    pub data_points: usize,
    /// Data points of refused metrics.
    pub rejected_points: usize,
    /// What was taken with a caveat (colliding label names, empty metrics).
    pub warnings: Vec<String>,
}

/// Translates `req` under `settings`.
pub fn translate(req: &ExportMetricsServiceRequest, settings: &Settings) -> Translated {
    let mut t = Translator {
        settings,
        metrics: HashMap::new(),
        names: NameCache::new(LabelNamer {
            utf8: !settings.translation_strategy.escapes(),
            underscore_sanitization: settings.label_name_underscore_sanitization,
            preserve_multiple_underscores: settings.label_name_preserve_multiple_underscores,
        }),
        out: DecodedWrite {
            series: Vec::new(),
            rejected: Vec::new(),
            histograms: 0,
            exemplars: 0,
            exemplars_dropped: 0,
            exemplar_problem: None,
            metadata: Vec::new(),
        },
        data_points: 0,
        rejected_points: 0,
        warnings: Vec::new(),
        collisions: Vec::new(),
    };
    for rm in &req.resource_metrics {
        t.resource(rm);
    }
    if !t.collisions.is_empty() {
        t.warnings.push(format!(
            "attributes collide as labels {:?} after name sanitization; values are joined with ';'",
            t.collisions
        ));
    }
    Translated {
        write: t.out,
        data_points: t.data_points,
        rejected_points: t.rejected_points,
        warnings: t.warnings,
    }
}

/// What a resource gives each of its series.
struct ResourceLabels {
    job: Bytes,
    instance: Bytes,
    promoted: LabelBuilder,
}

const NAME: Bytes = Bytes::from_static(b"__name__");
const JOB: Bytes = Bytes::from_static(b"job");
const INSTANCE: Bytes = Bytes::from_static(b"instance");
const LE: Bytes = Bytes::from_static(b"le");
const QUANTILE: Bytes = Bytes::from_static(b"quantile");

struct Translator<'a> {
    settings: &'a Settings,
    names: NameCache,
    /// The series names of each metric the request names, built once: a
    /// request repeats a metric in every resource that reports it.
    metrics: HashMap<(&'a str, &'a str, MetricType), MetricNames>,
    out: DecodedWrite<RawSeries>,
    data_points: usize,
    rejected_points: usize,
    warnings: Vec<String>,
    collisions: Vec<String>,
}

fn point_count(data: Option<&metric::Data>) -> usize {
    match data {
        None => 0,
        Some(metric::Data::Gauge(g)) => g.data_points.len(),
        Some(metric::Data::Sum(s)) => s.data_points.len(),
        Some(metric::Data::Histogram(h)) => h.data_points.len(),
        Some(metric::Data::ExponentialHistogram(h)) => h.data_points.len(),
        Some(metric::Data::Summary(s)) => s.data_points.len(),
    }
}

/// The earliest and latest point of a metric, folded into `range`.
fn widen(range: &mut (u64, u64), data: Option<&metric::Data>) {
    let mut add = |t: u64| *range = (range.0.min(t), range.1.max(t));
    match data {
        None => {}
        Some(metric::Data::Gauge(g)) => g.data_points.iter().for_each(|p| add(p.time_unix_nano)),
        Some(metric::Data::Sum(s)) => s.data_points.iter().for_each(|p| add(p.time_unix_nano)),
        Some(metric::Data::Histogram(h)) => {
            h.data_points.iter().for_each(|p| add(p.time_unix_nano));
        }
        Some(metric::Data::ExponentialHistogram(h)) => {
            h.data_points.iter().for_each(|p| add(p.time_unix_nano));
        }
        Some(metric::Data::Summary(s)) => s.data_points.iter().for_each(|p| add(p.time_unix_nano)),
    }
}

fn millis(nanos: u64) -> i64 {
    i64::try_from(nanos / 1_000_000).unwrap_or(i64::MAX)
}

/// Go's `strconv.FormatFloat(f, 'f', -1, 64)`, for `le` and `quantile`.
fn float_label(f: f64) -> String {
    if f.is_infinite() {
        if f > 0.0 { "+Inf" } else { "-Inf" }.to_owned()
    } else if f.is_nan() {
        "NaN".to_owned()
    } else {
        format!("{f}")
    }
}

/// A metric's series names: its own and, for histograms and summaries,
/// those of their parts.
#[derive(Clone)]
struct MetricNames {
    name: Bytes,
    sum: Bytes,
    count: Bytes,
    bucket: Bytes,
}

impl MetricNames {
    fn new(name: String, kind: MetricType) -> Self {
        let part = |suffix: &str| match kind {
            MetricType::Histogram | MetricType::Summary => Bytes::from(format!("{name}{suffix}")),
            _ => Bytes::new(),
        };
        let (sum, count, bucket) = (part("_sum"), part("_count"), part("_bucket"));
        Self {
            name: Bytes::from(name),
            sum,
            count,
            bucket,
        }
    }
}

impl<'a> Translator<'a> {
    fn resource(&mut self, rm: &'a crate::proto::ResourceMetrics) {
        let attrs: &[KeyValue] = rm.resource.as_ref().map_or(&[], |r| &r.attributes);
        let total: usize = rm
            .scope_metrics
            .iter()
            .flat_map(|sm| &sm.metrics)
            .map(|m| point_count(m.data.as_ref()))
            .sum();
        self.data_points += total;
        let resource = match self.resource_labels(attrs) {
            Ok(r) => r,
            Err(e) => {
                self.refuse("resource", total, format!("resource attributes: {e}"));
                return;
            }
        };
        let mut range = (u64::MAX, 0u64);
        for sm in &rm.scope_metrics {
            let scope = match self.scope_labels(sm) {
                Ok(s) => s,
                Err(e) => {
                    let n = sm
                        .metrics
                        .iter()
                        .map(|m| point_count(m.data.as_ref()))
                        .sum();
                    self.refuse("scope", n, format!("scope attributes: {e}"));
                    continue;
                }
            };
            for m in &sm.metrics {
                widen(&mut range, m.data.as_ref());
                self.metric(m, &resource, scope.as_ref());
            }
        }
        if range.0 != u64::MAX {
            self.target_info(attrs, &resource, millis(range.0), millis(range.1));
        }
    }

    fn resource_labels(&mut self, attrs: &[KeyValue]) -> Result<ResourceLabels, String> {
        let mut job = String::new();
        if let Some(name) = get(attrs, SERVICE_NAME) {
            job = value_string(name.value.as_ref());
            if let Some(ns) = get(attrs, SERVICE_NAMESPACE) {
                job = format!("{}/{job}", value_string(ns.value.as_ref()));
            }
        }
        let instance = get(attrs, SERVICE_INSTANCE_ID)
            .map(|kv| value_string(kv.value.as_ref()))
            .unwrap_or_default();
        let s = self.settings;
        let mut promoted = LabelBuilder::default();
        for kv in attrs {
            let listed = if s.promote_all_resource_attributes {
                !s.ignore_resource_attributes.contains(&kv.key)
            } else {
                s.promote_resource_attributes.contains(&kv.key)
            };
            if listed {
                promoted.set(self.names.build(&kv.key)?, value_string(kv.value.as_ref()));
            }
        }
        Ok(ResourceLabels {
            job: Bytes::from(job),
            instance: Bytes::from(instance),
            promoted,
        })
    }

    fn scope_labels(
        &mut self,
        sm: &crate::proto::ScopeMetrics,
    ) -> Result<Option<LabelBuilder>, String> {
        let Some(scope) = sm.scope.as_ref().filter(|s| !s.name.is_empty()) else {
            return Ok(None);
        };
        if !self.settings.promote_scope_metadata {
            return Ok(None);
        }
        let mut b = LabelBuilder::default();
        for kv in &scope.attributes {
            let name = self.names.build(&format!("otel_scope_{}", kv.key))?;
            b.set(name, value_string(kv.value.as_ref()));
        }
        b.set(Bytes::from_static(b"otel_scope_name"), scope.name.clone());
        b.set(
            Bytes::from_static(b"otel_scope_version"),
            scope.version.clone(),
        );
        b.set(
            Bytes::from_static(b"otel_scope_schema_url"),
            sm.schema_url.clone(),
        );
        Ok(Some(b))
    }

    fn refuse(&mut self, what: &str, points: usize, reason: String) {
        self.rejected_points += points;
        self.out.rejected.push(RejectedSeries {
            labels: what.to_owned(),
            samples: points,
            reason,
        });
    }

    fn metric(
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
    fn base_labels(
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

    /// Gauges and sums; a sum's exemplars go with its series (a gauge's are
    /// not read, as Prometheus does not).
    fn numbers(
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
    fn histograms(
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
    fn exponential_histograms(
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
    fn summaries(&mut self, ctx: &Context<'_>, points: &[SummaryDataPoint]) -> Result<(), String> {
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

    /// `target_info` for a resource with attributes beyond its identity,
    /// from its first to its last point.
    fn target_info(
        &mut self,
        attrs: &[KeyValue],
        resource: &ResourceLabels,
        first: i64,
        last: i64,
    ) {
        let identifying = [SERVICE_NAMESPACE, SERVICE_NAME, SERVICE_INSTANCE_ID];
        let others = attrs
            .iter()
            .filter(|kv| !identifying.contains(&kv.key.as_str()))
            .count();
        if others == 0 {
            return;
        }
        let ignore: &[&str] = if self.settings.keep_identifying_resource_attributes {
            &["__name__"]
        } else {
            &[
                "__name__",
                SERVICE_NAMESPACE,
                SERVICE_NAME,
                SERVICE_INSTANCE_ID,
            ]
        };
        let mut b = match LabelBuilder::from_attributes(
            attrs,
            ignore,
            &mut self.names,
            &mut self.collisions,
        ) {
            Ok(b) => b,
            Err(e) => {
                self.warnings.push(format!("target_info not written: {e}"));
                return;
            }
        };
        b.set(JOB, resource.job.clone());
        b.set(INSTANCE, resource.instance.clone());
        if b.get("job").is_none() && b.get("instance").is_none() {
            return;
        }
        b.set(NAME, Bytes::from_static(b"target_info"));
        self.out.metadata.push(MetricMetadata {
            metric: "target_info".into(),
            kind: "gauge",
            help: "Target metadata".into(),
            unit: String::new(),
        });
        let mut samples = Vec::new();
        let mut t = first;
        while t < last {
            samples.push((t, 1.0));
            t += TARGET_INFO_INTERVAL_MS;
        }
        samples.push((last, 1.0));
        self.out.series.push(RawSeries {
            labels: b.into_raw(),
            samples,
            histograms: Vec::new(),
            exemplars: Vec::new(),
        });
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

    /// A point's exemplars as Prometheus' receiver makes them: `trace_id`
    /// and `span_id` in hex when set, then the filtered attributes unless
    /// they would take the labels over 128 characters, sorted by name. One
    /// without a value, or failing [`Exemplar::validate`] (a duplicate
    /// name), is dropped and counted, never an error.
    #[allow(clippy::cast_precision_loss)]
    fn exemplars(&mut self, list: &[crate::proto::Exemplar]) -> Vec<Exemplar> {
        self.out.exemplars += list.len();
        let mut out = Vec::with_capacity(list.len());
        for e in list {
            let v = match e.value {
                Some(exemplar::Value::AsDouble(f)) => f,
                Some(exemplar::Value::AsInt(i)) => i as f64,
                None => {
                    self.drop_exemplar("an exemplar has no value".into());
                    continue;
                }
            };
            let mut labels = Vec::new();
            let mut chars = 0;
            for (name, id) in [("trace_id", &e.trace_id), ("span_id", &e.span_id)] {
                if id.iter().any(|&b| b != 0) {
                    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
                    chars += name.len() + hex.len();
                    labels.push(Label::new(name, hex));
                }
            }
            let attrs: Vec<Label> = e
                .filtered_attributes
                .iter()
                .map(|kv| Label::new(kv.key.as_str(), value_string(kv.value.as_ref())))
                .collect();
            chars += attrs
                .iter()
                .map(|l| l.name.chars().count() + l.value.chars().count())
                .sum::<usize>();
            if chars <= strata_codec::exemplar::EXEMPLAR_MAX_LABEL_CHARS {
                labels.extend(attrs);
            }
            labels.sort_by(|a, b| a.name.cmp(&b.name));
            let ex = Exemplar {
                labels,
                t: millis(e.time_unix_nano),
                v,
            };
            match ex.validate() {
                Ok(()) => out.push(ex),
                Err(problem) => self.drop_exemplar(format!("exemplar dropped: {problem}")),
            }
        }
        out
    }

    fn drop_exemplar(&mut self, problem: String) {
        self.out.exemplars_dropped += 1;
        if self.out.exemplar_problem.is_none() {
            self.out.exemplar_problem = Some(problem);
        }
    }
}

struct Context<'a> {
    resource: &'a ResourceLabels,
    scope: Option<&'a LabelBuilder>,
    /// The metric's name, and its series' for histograms and summaries.
    name: Bytes,
    sum: Bytes,
    count: Bytes,
    bucket: Bytes,
}
