//! The read trait the engine evaluates against, and an in-memory
//! implementation of it for tests and embedding.
//!
//! The server adapts Strata's storage to [`Queryable`]; the engine never sees
//! storage types.

use std::collections::BTreeSet;
use std::sync::RwLock;

use strata_codec::histogram::FloatHistogram;
use strata_codec::{Label, Matcher, SeriesExemplars, SeriesMap};

/// One series as returned by [`Queryable::select`]: its labels sorted by
/// name, and its samples in ascending timestamp order (milliseconds); the
/// same type storage reads into.
pub use strata_codec::Series;

/// A failure of the data source. `Unavailable` is retryable (HTTP 503);
/// `Internal` is not (HTTP 500).
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    #[error("{0}")]
    Internal(String),
}

/// What the engine and the HTTP API read through.
#[async_trait::async_trait]
pub trait Queryable: Send + Sync + 'static {
    /// Every series matching all matchers with at least one sample in [mint, maxt] (ms, inclusive), samples cut to that range.
    async fn select(
        &self,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<Series>, SourceError>;
    /// [`Self::select`], each series passed through `map`, sorted by
    /// labels after it. A source that reads series one by one maps each as
    /// soon as it is read, so that only what `map` keeps is held at once.
    async fn select_mapped(
        &self,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
        map: SeriesMap,
    ) -> Result<Vec<Series>, SourceError> {
        let mut out: Vec<Series> = self
            .select(matchers, mint, maxt)
            .await?
            .into_iter()
            .filter_map(|s| map(s))
            .collect();
        out.sort_by(|a, b| a.labels.cmp(&b.labels));
        Ok(out)
    }
    /// Label sets of matching series with samples in [mint, maxt] (no samples loaded).
    async fn series(
        &self,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<Vec<Label>>, SourceError>;
    /// Sorted unique label names (matchers empty = all series).
    async fn label_names(
        &self,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<String>, SourceError>;
    /// Sorted unique values of `name`.
    async fn label_values(
        &self,
        name: &str,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<String>, SourceError>;
    /// What senders reported about metrics (type, help, unit) for `tenant`
    /// (`""`: none; a source scoped to a tenant uses its own): one
    /// metric, or all, in name order. A source without metadata has none.
    async fn metadata(
        &self,
        _tenant: &str,
        _metric: Option<&str>,
    ) -> Result<Vec<(String, Vec<MetricMetadata>)>, SourceError> {
        Ok(Vec::new())
    }

    /// The exemplars in [start, end] (ms, inclusive) of every series that
    /// matches all matchers of at least one set, sorted by labels. A
    /// source without exemplars has none.
    async fn exemplars(
        &self,
        _matcher_sets: &[Vec<Matcher>],
        _start: i64,
        _end: i64,
    ) -> Result<Vec<SeriesExemplars>, SourceError> {
        Ok(Vec::new())
    }

    /// The series of `tenant` (`""`: none; a source scoped to a tenant
    /// uses its own) counted by metric name, label name and label pair,
    /// the top `limit` of each; `None` for a source that cannot say.
    async fn tsdb_status(
        &self,
        _tenant: &str,
        _limit: usize,
    ) -> Result<Option<crate::TsdbStatus>, SourceError> {
        Ok(None)
    }
}

/// One description of a metric, as `/api/v1/metadata` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetricMetadata {
    /// `counter`, `gauge`, `histogram`, … or `unknown`.
    pub kind: String,
    pub help: String,
    pub unit: String,
}

/// An in-memory [`Queryable`]: a list of series, kept sorted by labels.
///
/// Appending keeps each series' samples in timestamp order; a sample older
/// than the series' last one is inserted in place (tests load data in any
/// order).
#[derive(Debug, Default)]
pub struct MemSource {
    series: RwLock<Vec<Series>>,
}

impl MemSource {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one sample to the series with exactly these labels (sorted here),
    /// creating the series if needed; a histogram at the same time is
    /// replaced.
    pub fn append(&self, labels: &[Label], t: i64, v: f64) {
        self.with_series(labels, |s| {
            // A float replaces a histogram at the same time.
            s.histograms.retain(|(x, _)| *x != t);
            let pos = s.timestamps.partition_point(|&x| x <= t);
            if pos > 0 && s.timestamps.get(pos - 1) == Some(&t) {
                if let Some(slot) = s.values.get_mut(pos - 1) {
                    *slot = v;
                }
            } else {
                s.timestamps.insert(pos, t);
                s.values.insert(pos, v);
            }
        });
    }

    /// Adds one native histogram sample to the series with exactly these
    /// labels (sorted here), creating the series if needed; a float sample
    /// at the same time is replaced.
    pub fn append_histogram(&self, labels: &[Label], t: i64, h: FloatHistogram) {
        self.with_series(labels, |s| {
            if let Ok(i) = s.timestamps.binary_search(&t) {
                s.timestamps.remove(i);
                if i < s.values.len() {
                    s.values.remove(i);
                }
            }
            let pos = s.histograms.partition_point(|(x, _)| *x <= t);
            if pos > 0 && s.histograms.get(pos - 1).is_some_and(|(x, _)| *x == t) {
                if let Some(slot) = s.histograms.get_mut(pos - 1) {
                    slot.1 = h;
                }
            } else {
                s.histograms.insert(pos, (t, h));
            }
        });
    }

    /// Runs `f` on the series with exactly these labels (sorted here),
    /// created if needed.
    fn with_series(&self, labels: &[Label], f: impl FnOnce(&mut Series)) {
        let mut labels = labels.to_vec();
        labels.sort();
        let mut all = self.series.write().unwrap_or_else(|e| e.into_inner());
        let idx = match all.binary_search_by(|s| (*s.labels).cmp(labels.as_slice())) {
            Ok(i) => i,
            Err(i) => {
                all.insert(
                    i,
                    Series {
                        labels: labels.into(),
                        ..Series::default()
                    },
                );
                i
            }
        };
        if let Some(s) = all.get_mut(idx) {
            f(s);
        }
    }

    /// Adds a whole series (labels sorted here, samples sorted by time).
    pub fn add_series(&self, labels: &[Label], samples: &[(i64, f64)]) {
        for &(t, v) in samples {
            self.append(labels, t, v);
        }
    }

    /// Removes every series.
    pub fn clear(&self) {
        self.series
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    fn matching(&self, matchers: &[Matcher], mint: i64, maxt: i64) -> Vec<Series> {
        let all = self.series.read().unwrap_or_else(|e| e.into_inner());
        all.iter()
            .filter(|s| matchers.iter().all(|m| m.matches_labels(&s.labels)))
            .filter_map(|s| {
                let lo = s.timestamps.partition_point(|&t| t < mint);
                let hi = s.timestamps.partition_point(|&t| t <= maxt).max(lo);
                let hlo = s.histograms.partition_point(|(t, _)| *t < mint);
                let hhi = s.histograms.partition_point(|(t, _)| *t <= maxt).max(hlo);
                if lo >= hi && hlo >= hhi {
                    return None;
                }
                Some(Series {
                    labels: s.labels.clone(),
                    timestamps: s.timestamps.get(lo..hi)?.to_vec(),
                    values: s.values.get(lo..hi)?.to_vec(),
                    histograms: s.histograms.get(hlo..hhi)?.to_vec(),
                })
            })
            .collect()
    }
}

#[async_trait::async_trait]
impl Queryable for MemSource {
    async fn select(
        &self,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<Series>, SourceError> {
        Ok(self.matching(matchers, mint, maxt))
    }

    async fn series(
        &self,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<Vec<Label>>, SourceError> {
        Ok(self
            .matching(matchers, mint, maxt)
            .into_iter()
            .map(|s| s.labels.to_vec())
            .collect())
    }

    async fn label_names(
        &self,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<String>, SourceError> {
        let names: BTreeSet<String> = self
            .matching(matchers, mint, maxt)
            .into_iter()
            .flat_map(|s| s.labels.iter().map(|l| l.name.clone()).collect::<Vec<_>>())
            .collect();
        Ok(names.into_iter().collect())
    }

    async fn tsdb_status(
        &self,
        _tenant: &str,
        limit: usize,
    ) -> Result<Option<crate::TsdbStatus>, SourceError> {
        let mut counter = crate::CardinalityCounter::default();
        for s in self.series.read().unwrap_or_else(|e| e.into_inner()).iter() {
            counter.add(&s.labels);
        }
        Ok(Some(counter.status(limit)))
    }

    async fn label_values(
        &self,
        name: &str,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<String>, SourceError> {
        let values: BTreeSet<String> = self
            .matching(matchers, mint, maxt)
            .into_iter()
            .filter_map(|s| {
                s.labels
                    .iter()
                    .find(|l| l.name == name)
                    .map(|l| l.value.clone())
            })
            .collect();
        Ok(values.into_iter().collect())
    }
}
