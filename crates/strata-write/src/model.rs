//! What a decoded write is made of: series with labels borrowed from the
//! body, the series refused and why, and metric metadata. Shared by the
//! decoders and the validation step.

use std::fmt;

use bytes::Bytes;
use strata_codec::histogram::HistogramSample;
use strata_codec::render::render_labels;
use strata_codec::{Exemplar, Label, LabelPairs};

/// The float samples of one valid series, `(timestamp ms, value)` in the
/// order the client sent them, its valid native histograms and its valid
/// exemplars.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesSamples {
    /// Sorted by name, unique, non-empty, with `__name__`.
    pub labels: Vec<Label>,
    /// May be empty when the series carries histograms or exemplars.
    pub samples: Vec<(i64, f64)>,
    /// Native histogram samples `(timestamp ms, histogram)` in the order
    /// sent, each passing [`HistogramSample::validate`]; usually empty.
    pub histograms: Vec<(i64, HistogramSample)>,
    /// In the order sent, each passing [`Exemplar::validate`], its labels
    /// in the order sent; usually empty.
    pub exemplars: Vec<Exemplar>,
}

/// A label whose name and value are slices of the decoded body, checked to
/// be UTF-8 when made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawLabel {
    name: Bytes,
    value: Bytes,
}

impl RawLabel {
    /// The label, if both parts are UTF-8.
    pub fn new(name: Bytes, value: Bytes) -> Option<Self> {
        (is_utf8(&name) && is_utf8(&value)).then_some(Self { name, value })
    }

    pub fn name(&self) -> &str {
        as_str(&self.name)
    }

    pub fn value(&self) -> &str {
        as_str(&self.value)
    }
}

/// Label names and values are nearly always ASCII, which a short loop
/// checks faster than the general validator's call.
fn is_utf8(b: &[u8]) -> bool {
    b.is_ascii() || std::str::from_utf8(b).is_ok()
}

#[allow(unsafe_code)]
fn as_str(b: &Bytes) -> &str {
    // SAFETY: `RawLabel::new` is the only constructor and checks that both
    // parts are UTF-8; `Bytes` is immutable. Re-checking on every access
    // showed up at 9 % of ingest CPU.
    unsafe { std::str::from_utf8_unchecked(b) }
}

/// The labels of a decoded series, borrowed from the body.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawLabels(pub Vec<RawLabel>);

impl LabelPairs for RawLabels {
    fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|l| (l.name(), l.value()))
    }
    fn len(&self) -> usize {
        self.0.len()
    }
}

/// The float samples, native histograms and exemplars of one valid series
/// with borrowed labels.
#[derive(Clone, Debug, PartialEq)]
pub struct RawSeries {
    pub labels: RawLabels,
    /// May be empty when the series carries histograms or exemplars.
    pub samples: Vec<(i64, f64)>,
    /// As [`SeriesSamples::histograms`].
    pub histograms: Vec<(i64, HistogramSample)>,
    /// As [`SeriesSamples::exemplars`]: owned, as they are rare.
    pub exemplars: Vec<Exemplar>,
}

impl From<RawSeries> for SeriesSamples {
    fn from(r: RawSeries) -> Self {
        Self {
            labels: r.labels.to_labels(),
            samples: r.samples,
            histograms: r.histograms,
            exemplars: r.exemplars,
        }
    }
}

/// A series (or part of one) that will not be written, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RejectedSeries {
    /// The series as Prometheus prints it, `{__name__="x", job="y"}` (only
    /// the labels that could be resolved, cut at about 1 KiB).
    pub labels: String,
    /// How many samples (floats and histograms) of it are not written.
    pub samples: usize,
    /// The exact problem.
    pub reason: String,
}

impl fmt::Display for RejectedSeries {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "series {}: {} ({} samples rejected)",
            self.labels, self.reason, self.samples
        )
    }
}

/// Rejected series a 400 body lists one by one; the rest are counted.
pub const MAX_REJECTION_LINES: usize = 10;

/// A decoded request: what to write and what was refused.
///
/// Valid series are kept even when others are rejected (the 2.0 partial
/// write); the caller writes `series` and answers 400 listing `rejected` if
/// it is not empty.
#[derive(Clone, Debug, PartialEq)]
pub struct DecodedWrite<S = SeriesSamples> {
    /// Valid series with at least one float sample, valid histogram or
    /// valid exemplar.
    pub series: Vec<S>,
    pub rejected: Vec<RejectedSeries>,
    /// Native-histogram samples received, valid or not (those to be
    /// written are in the series: [`DecodedWrite::histogram_count`]).
    pub histograms: usize,
    /// Exemplars received, valid or not.
    pub exemplars: usize,
    /// Exemplars received that no series in `series` carries: invalid ones
    /// (dropped without failing the request, as Prometheus does) and those
    /// of rejected series. `exemplars - exemplars_dropped` are to be
    /// written.
    pub exemplars_dropped: usize,
    /// Why the first exemplar of a valid series was dropped (invalid, or
    /// too far in the future once [`crate::apply_limits`] ran), as
    /// `series {labels}: ...` with the series rendered as in
    /// [`RejectedSeries::labels`]. For the log: dropped exemplars are not
    /// reported to the client.
    pub exemplar_problem: Option<String>,
    /// Metric metadata: 1.0's list, and 2.0's per-series metadata (one
    /// entry per metric name and distinct content).
    pub metadata: Vec<MetricMetadata>,
}

/// What a sender says about a metric: its type, help and unit.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MetricMetadata {
    /// The metric family name (`__name__`, without `_bucket` & co. for
    /// 1.0 senders, which send one entry per family).
    pub metric: String,
    /// `counter`, `gauge`, `histogram`, `gaugehistogram`, `summary`,
    /// `info`, `stateset` or `unknown`, as Prometheus' API writes it.
    pub kind: &'static str,
    pub help: String,
    pub unit: String,
}

/// Either version's enum number of a type named as [`metric_kind`] names it.
pub fn metric_kind_number(kind: &str) -> i32 {
    (1..=7).find(|&t| metric_kind(t) == kind).unwrap_or(0)
}

/// The API's name of a metric type, from either version's enum (the two
/// number their types alike; 0 is unknown or unspecified).
pub fn metric_kind(t: i32) -> &'static str {
    match t {
        1 => "counter",
        2 => "gauge",
        3 => "histogram",
        4 => "gaugehistogram",
        5 => "summary",
        6 => "info",
        7 => "stateset",
        _ => "unknown",
    }
}

impl DecodedWrite<RawSeries> {
    pub fn new(capacity: usize) -> Self {
        Self {
            series: Vec::with_capacity(capacity),
            rejected: Vec::new(),
            histograms: 0,
            exemplars: 0,
            exemplars_dropped: 0,
            exemplar_problem: None,
            metadata: Vec::new(),
        }
    }

    /// Counts `count` exemplars of the series `labels` as dropped, keeping
    /// `problem` if it is the first.
    pub fn drop_exemplars(
        &mut self,
        labels: &RawLabels,
        count: usize,
        problem: impl FnOnce() -> String,
    ) {
        self.exemplars_dropped += count;
        if self.exemplar_problem.is_none() {
            self.exemplar_problem =
                Some(format!("series {}: {}", render_labels(labels), problem()));
        }
    }

    /// The same with owned labels.
    pub fn into_owned(self) -> DecodedWrite {
        DecodedWrite {
            series: self.series.into_iter().map(SeriesSamples::from).collect(),
            rejected: self.rejected,
            histograms: self.histograms,
            exemplars: self.exemplars,
            exemplars_dropped: self.exemplars_dropped,
            exemplar_problem: self.exemplar_problem,
            metadata: self.metadata,
        }
    }

    /// The number of float samples to be written.
    pub fn sample_count(&self) -> usize {
        self.series.iter().map(|s| s.samples.len()).sum()
    }

    /// The number of native histogram samples to be written.
    pub fn histogram_count(&self) -> usize {
        self.series.iter().map(|s| s.histograms.len()).sum()
    }
}

impl DecodedWrite {
    /// The number of float samples to be written.
    pub fn sample_count(&self) -> usize {
        self.series.iter().map(|s| s.samples.len()).sum()
    }

    /// The number of native histogram samples to be written.
    pub fn histogram_count(&self) -> usize {
        self.series.iter().map(|s| s.histograms.len()).sum()
    }
}

impl<S> DecodedWrite<S> {
    /// One line per rejected series, for a 400 response body: the first
    /// [`MAX_REJECTION_LINES`], then how many more.
    pub fn rejection_message(&self) -> String {
        let mut out = String::new();
        for (i, r) in self.rejected.iter().take(MAX_REJECTION_LINES).enumerate() {
            if i > 0 {
                out.push('\n');
            }
            out.push_str(&r.to_string());
        }
        if let Some(more) = self.rejected.len().checked_sub(MAX_REJECTION_LINES) {
            if more > 0 {
                let samples: usize = self
                    .rejected
                    .iter()
                    .skip(MAX_REJECTION_LINES)
                    .map(|r| r.samples)
                    .sum();
                out.push_str(&format!(
                    "\nand {more} more series ({samples} samples) rejected"
                ));
            }
        }
        out
    }
}

impl DecodedWrite<RawSeries> {
    /// Files one decoded series under `series` or `rejected`: `checked`
    /// is the verdict on its labels ([`crate::check_labels`]); its
    /// histograms are held to Prometheus' checks and its exemplars to
    /// [`Exemplar::validate`], each invalid one refused or dropped alone.
    /// `exemplars` are read only if the series is kept.
    pub fn push_series(
        &mut self,
        labels: RawLabels,
        checked: Result<(), String>,
        samples: Vec<(i64, f64)>,
        histograms: Vec<(i64, HistogramSample)>,
        exemplars: impl ExactSizeIterator<Item = Result<Exemplar, String>>,
    ) {
        self.histograms += histograms.len();
        if let Err(reason) = checked {
            // The rejection says why; the exemplars go with the series.
            self.exemplars_dropped += exemplars.len();
            self.rejected.push(RejectedSeries {
                labels: render_labels(&labels),
                samples: samples.len() + histograms.len(),
                reason,
            });
            return;
        }
        let sent = histograms.len();
        let histograms = self.valid_histograms(&labels, histograms);
        if sent > histograms.len() && samples.is_empty() && histograms.is_empty() {
            // Nothing of the series is written: its exemplars would
            // describe data not stored.
            self.exemplars_dropped += exemplars.len();
            return;
        }
        let exemplars = self.valid_exemplars(&labels, exemplars);
        if samples.is_empty() && histograms.is_empty() && exemplars.is_empty() {
            return;
        }
        self.series.push(RawSeries {
            labels,
            samples,
            histograms,
            exemplars,
        });
    }

    /// The histograms that pass [`HistogramSample::validate`]. Invalid ones
    /// are refused alone, as Prometheus' 2.0 receiver does: one rejection
    /// entry for the series, naming the first problem and counting all.
    fn valid_histograms(
        &mut self,
        labels: &RawLabels,
        mut histograms: Vec<(i64, HistogramSample)>,
    ) -> Vec<(i64, HistogramSample)> {
        let mut first: Option<String> = None;
        let before = histograms.len();
        histograms.retain(|(t, h)| match h.validate() {
            Ok(()) => true,
            Err(e) => {
                if first.is_none() {
                    first = Some(format!("invalid native histogram at timestamp {t}: {e}"));
                }
                false
            }
        });
        if let Some(mut reason) = first {
            let invalid = before - histograms.len();
            if invalid > 1 {
                reason.push_str(&format!(" (and {} more invalid histograms)", invalid - 1));
            }
            self.rejected.push(RejectedSeries {
                labels: render_labels(labels),
                samples: invalid,
                reason,
            });
        }
        histograms
    }

    /// The exemplars of the valid series `labels` that read and pass
    /// [`Exemplar::validate`], in the order sent; each other one is counted
    /// as dropped.
    fn valid_exemplars(
        &mut self,
        labels: &RawLabels,
        exemplars: impl ExactSizeIterator<Item = Result<Exemplar, String>>,
    ) -> Vec<Exemplar> {
        let mut kept = Vec::with_capacity(exemplars.len());
        for (i, e) in exemplars.enumerate() {
            let checked = e.and_then(|e| match e.validate() {
                Ok(()) => Ok(e),
                Err(problem) => Err(problem.to_string()),
            });
            match checked {
                Ok(e) => kept.push(e),
                Err(problem) => {
                    self.drop_exemplars(labels, 1, || format!("exemplar {i} dropped: {problem}"))
                }
            }
        }
        kept
    }
}
