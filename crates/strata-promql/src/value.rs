//! The values the evaluator passes between nodes, and the query result.

use std::sync::Arc;

use strata_codec::histogram::FloatHistogram;
use strata_codec::Label;

/// A label set, sorted by name. Shared, because the same set is handed to
/// every step of a range evaluation.
pub type Labels = Arc<[Label]>;

/// The empty label set (scalars, `vector()`, aggregations without grouping).
pub fn empty_labels() -> Labels {
    Arc::from(Vec::new())
}

/// The value of `name` in `labels`, "" when absent.
pub fn get_label<'a>(labels: &'a [Label], name: &str) -> &'a str {
    strata_codec::labels::get(labels, name)
}

/// `labels` without the labels for which `drop` is true.
pub fn labels_without(labels: &[Label], drop: impl Fn(&str) -> bool) -> Labels {
    labels.iter().filter(|l| !drop(&l.name)).cloned().collect()
}

/// `labels` without `__name__` (and the other reserved metadata labels
/// Prometheus drops together with it).
pub fn drop_metric_name(labels: &Labels) -> Labels {
    if labels.iter().any(|l| is_metadata_label(&l.name)) {
        labels_without(labels, is_metadata_label)
    } else {
        labels.clone()
    }
}

/// Labels Prometheus 3 removes when an operation changes a metric's meaning.
pub fn is_metadata_label(name: &str) -> bool {
    matches!(name, "__name__" | "__type__" | "__unit__")
}

/// `labels` with `name` set to `value` (removed when `value` is empty), kept
/// sorted.
pub fn set_label(labels: &[Label], name: &str, value: &str) -> Labels {
    let mut out: Vec<Label> = labels.iter().filter(|l| l.name != name).cloned().collect();
    if !value.is_empty() {
        let pos = out.partition_point(|l| l.name.as_str() < name);
        out.insert(pos, Label::new(name, value));
    }
    Arc::from(out)
}

/// Prometheus' `Labels.String()`: `{a="1", b="2"}`.
pub fn labels_to_string(labels: &[Label]) -> String {
    let inner: Vec<String> = labels
        .iter()
        .map(|l| format!("{}={:?}", l.name, l.value))
        .collect();
    format!("{{{}}}", inner.join(", "))
}

/// One point of a series produced by evaluation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    pub t: i64,
    pub v: f64,
}

/// One histogram point: its time and value (Prometheus' `HPoint`), as
/// storage hands them over in [`crate::Series::histograms`].
pub type HPoint = (i64, FloatHistogram);

/// A series over the evaluation range: at most one point per step for
/// instant-vector expressions, raw samples for range-vector expressions.
/// Float points and histogram points are kept apart (Prometheus' `Series`
/// with `Floats` and `Histograms`); no time is in both.
#[derive(Clone, Debug)]
pub struct MatrixSeries {
    pub labels: Labels,
    pub points: Vec<Point>,
    /// Histogram points in time order; empty for a float series.
    pub histograms: Vec<HPoint>,
}

impl MatrixSeries {
    /// A series of float points only.
    pub fn floats(labels: Labels, points: Vec<Point>) -> Self {
        Self {
            labels,
            points,
            histograms: Vec::new(),
        }
    }

    /// How many points (float and histogram) it has.
    pub fn len(&self) -> usize {
        self.points.len() + self.histograms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty() && self.histograms.is_empty()
    }
}

/// A list of series; what every instant-vector and scalar node evaluates to
/// (a scalar is one series with no labels and one point per step).
pub type Matrix = Vec<MatrixSeries>;

/// One element of an instant vector at one step: a float `v`, or, when
/// `h` is set, a histogram (`v` is then unused).
#[derive(Clone, Debug)]
pub struct Sample {
    pub labels: Labels,
    pub v: f64,
    pub h: Option<Box<FloatHistogram>>,
}

impl Sample {
    /// A float sample.
    pub fn float(labels: Labels, v: f64) -> Self {
        Self { labels, v, h: None }
    }

    /// A histogram sample.
    pub fn histogram(labels: Labels, h: FloatHistogram) -> Self {
        Self {
            labels,
            v: 0.0,
            h: Some(Box::new(h)),
        }
    }
}

/// The samples of an instant vector at one step.
pub type Vector = Vec<Sample>;

/// What a node evaluates to.
#[derive(Clone, Debug)]
pub(crate) enum Value {
    Matrix(Matrix),
    /// A string literal (its text is read from the AST when needed).
    String,
}

/// One sample of an instant-query vector result: a float `v`, or, when
/// `h` is set, a histogram (written as `"histogram"`, `v` unused).
#[derive(Clone, Debug, PartialEq)]
pub struct InstantSample {
    pub labels: Labels,
    pub t: i64,
    pub v: f64,
    pub h: Option<Box<FloatHistogram>>,
}

/// The result of a query, shaped as the Prometheus API returns it.
#[derive(Clone, Debug)]
pub enum QueryValue {
    Scalar { t: i64, v: f64 },
    String { t: i64, v: String },
    Vector(Vec<InstantSample>),
    Matrix(Matrix),
}

impl QueryValue {
    /// The API's `resultType`.
    pub fn result_type(&self) -> &'static str {
        match self {
            Self::Scalar { .. } => "scalar",
            Self::String { .. } => "string",
            Self::Vector(_) => "vector",
            Self::Matrix(_) => "matrix",
        }
    }
}

/// The stale-marker NaN Prometheus writes when a series disappears.
pub const STALE_NAN_BITS: u64 = 0x7ff0_0000_0000_0002;

/// Whether `v` is the stale marker (compared bit for bit).
pub fn is_stale_nan(v: f64) -> bool {
    v.to_bits() == STALE_NAN_BITS
}

/// The samples of one series in one window, timestamps and values side by
/// side (as storage returns them, so a window borrows the loaded data
/// rather than a copy of it).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Samples<'a> {
    pub t: &'a [i64],
    pub v: &'a [f64],
}

impl<'a> Samples<'a> {
    /// The pairs of equal-length slices `t` and `v` (the longer one is cut).
    pub fn new(t: &'a [i64], v: &'a [f64]) -> Self {
        let n = t.len().min(v.len());
        Self {
            t: t.get(..n).unwrap_or(&[]),
            v: v.get(..n).unwrap_or(&[]),
        }
    }

    pub fn len(&self) -> usize {
        self.t.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t.is_empty()
    }

    pub fn first(&self) -> Option<Point> {
        Some(Point {
            t: *self.t.first()?,
            v: *self.v.first()?,
        })
    }

    pub fn last(&self) -> Option<Point> {
        Some(Point {
            t: *self.t.last()?,
            v: *self.v.last()?,
        })
    }

    /// The sample at `i`.
    pub fn get(&self, i: usize) -> Option<Point> {
        Some(Point {
            t: *self.t.get(i)?,
            v: *self.v.get(i)?,
        })
    }

    /// The samples at indexes `lo..hi`.
    pub fn slice(&self, lo: usize, hi: usize) -> Samples<'a> {
        Samples {
            t: self.t.get(lo..hi).unwrap_or(&[]),
            v: self.v.get(lo..hi).unwrap_or(&[]),
        }
    }

    /// The samples as points.
    pub fn points(&self) -> impl Iterator<Item = Point> + 'a {
        self.t.iter().zip(self.v).map(|(&t, &v)| Point { t, v })
    }
}
