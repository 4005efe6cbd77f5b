//! The types a write is made of: the samples of one series, the limits a
//! write is held to, and when it is answered.

use strata_codec::Label;

/// When a write is answered; in configuration `"applied"` or `"durable"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// Once applied to the head and appended to SlateDB's WAL buffer; a
    /// crash loses at most one flush interval.
    #[default]
    Applied,
    /// Once SlateDB reports the WAL flushed to the object store.
    Durable,
}

/// Limits on what one write may add; the defaults limit nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteLimits {
    /// Most active series (with samples in a bucket not yet sealed) the
    /// tenant of a series may have before a new series of it is rejected;
    /// 0 = no limit. Series already active keep ingesting.
    pub max_active_series: usize,
}

/// The samples of one series to write; labels sorted with unique names,
/// owned or borrowed from a decoded request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IngestSeries<L = Vec<Label>> {
    pub labels: L,
    pub samples: Vec<(i64, f64)>,
    /// Exemplars of the series (any order): kept in the head's bounded
    /// ring, logged, and written to the store with their bucket.
    pub exemplars: Vec<strata_codec::Exemplar>,
    /// Native histogram samples (any order), integer or float.
    pub histograms: Vec<(i64, strata_codec::histogram::HistogramSample)>,
}
