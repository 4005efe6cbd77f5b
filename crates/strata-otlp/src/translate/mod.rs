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
//!
//! By seam: this file holds the entry, the settings and what the
//! translation carries; `resource` (a resource and its scopes: `job`,
//! `instance`, promoted attributes, `target_info`), `metrics` (one metric's
//! type, temporality and names), `points` (each kind of data point as
//! series), `exemplars`.

use std::collections::HashMap;

use bytes::Bytes;
use strata_write::{DecodedWrite, RawSeries};

use crate::attributes::{LabelBuilder, NameCache};
use crate::names::{LabelNamer, MetricType, TranslationStrategy};
use crate::proto::{metric, ExportMetricsServiceRequest};

mod exemplars;
mod metrics;
mod points;
mod resource;

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

struct Context<'a> {
    resource: &'a ResourceLabels,
    scope: Option<&'a LabelBuilder>,
    /// The metric's name, and its series' for histograms and summaries.
    name: Bytes,
    sum: Bytes,
    count: Bytes,
    bucket: Bytes,
}
