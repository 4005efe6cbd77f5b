//! What a ruler wrote lately, seen by its own queries at once.
//!
//! A ruler reads the bucket as a reader node does, a moment behind the
//! writer; a rule that reads what a rule before it in the same group
//! wrote at the same evaluation must see it now. So the ruler keeps the
//! samples it wrote for a few minutes and merges them into every
//! selection, as Prometheus' rules see their own appends at once.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;
use strata_codec::{Label, Matcher, SeriesMap};
use strata_promql::{MetricMetadata, Queryable, Series, SourceError};

use crate::query_source::merge_series;

/// How long written samples are kept: far longer than a reader node
/// takes to see the writer's (well under a second to a few seconds).
pub const KEEP_MS: i64 = 5 * 60 * 1000;

/// Each series' samples, by labels.
type SamplesBySeries = BTreeMap<Vec<Label>, Vec<(i64, f64)>>;

/// The samples one tenant's rules wrote lately, by series.
#[derive(Default)]
pub struct RecentWrites {
    series: Mutex<SamplesBySeries>,
}

impl RecentWrites {
    /// Keeps `samples` (labels sorted by name) and forgets what is older
    /// than [`KEEP_MS`] before the newest.
    pub fn add(&self, samples: &[(Vec<Label>, i64, f64)]) {
        let Some(newest) = samples.iter().map(|(_, t, _)| *t).max() else {
            return;
        };
        let mut all = self.series.lock();
        for (labels, t, v) in samples {
            let points = all.entry(labels.clone()).or_default();
            match points.binary_search_by_key(t, |(x, _)| *x) {
                Ok(i) => {
                    if let Some(p) = points.get_mut(i) {
                        p.1 = *v;
                    }
                }
                Err(i) => points.insert(i, (*t, *v)),
            }
        }
        let horizon = newest - KEEP_MS;
        all.retain(|_, points| {
            points.retain(|(t, _)| *t >= horizon);
            !points.is_empty()
        });
    }

    /// The kept series that match every matcher, with their samples in
    /// [mint, maxt], sorted by labels.
    fn select(&self, matchers: &[Matcher], mint: i64, maxt: i64) -> Vec<Series> {
        let all = self.series.lock();
        all.iter()
            .filter(|(labels, _)| {
                matchers.iter().all(|m| {
                    let value = labels
                        .iter()
                        .find(|l| l.name == m.name)
                        .map_or("", |l| l.value.as_str());
                    m.matches(value)
                })
            })
            .filter_map(|(labels, points)| {
                let (timestamps, values): (Vec<i64>, Vec<f64>) = points
                    .iter()
                    .filter(|(t, _)| (mint..=maxt).contains(t))
                    .copied()
                    .unzip();
                (!timestamps.is_empty()).then(|| Series {
                    labels: labels.as_slice().into(),
                    timestamps,
                    values,
                    histograms: Vec::new(),
                })
            })
            .collect()
    }
}

/// A source with the ruler's own recent writes merged into its
/// selections; everything else is the inner source's.
pub struct OverlaySource {
    pub inner: Arc<dyn Queryable>,
    pub recent: Arc<RecentWrites>,
}

#[async_trait::async_trait]
impl Queryable for OverlaySource {
    async fn select(
        &self,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<Series>, SourceError> {
        let own = self.recent.select(matchers, mint, maxt);
        let stored = self.inner.select(matchers, mint, maxt).await?;
        if own.is_empty() {
            return Ok(stored);
        }
        // The store's samples first: of equal timestamps, what the writer
        // stored wins.
        Ok(merge_series(vec![stored, own]))
    }

    async fn select_mapped(
        &self,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
        map: SeriesMap,
    ) -> Result<Vec<Series>, SourceError> {
        let own = self.recent.select(matchers, mint, maxt);
        if own.is_empty() {
            return self.inner.select_mapped(matchers, mint, maxt, map).await;
        }
        // A series may be in both: merged first, mapped after.
        let stored = self.inner.select(matchers, mint, maxt).await?;
        let mut out: Vec<Series> = merge_series(vec![stored, own])
            .into_iter()
            .filter_map(|s| map(s))
            .collect();
        out.sort_unstable_by(|a, b| a.labels.cmp(&b.labels));
        Ok(out)
    }

    async fn series(
        &self,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<Vec<Label>>, SourceError> {
        self.inner.series(matchers, mint, maxt).await
    }

    async fn label_names(
        &self,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<String>, SourceError> {
        self.inner.label_names(matchers, mint, maxt).await
    }

    async fn label_values(
        &self,
        name: &str,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<String>, SourceError> {
        self.inner.label_values(name, matchers, mint, maxt).await
    }

    async fn metadata(
        &self,
        tenant: &str,
        metric: Option<&str>,
    ) -> Result<Vec<(String, Vec<MetricMetadata>)>, SourceError> {
        self.inner.metadata(tenant, metric).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_codec::MatchOp;
    use strata_promql::MemSource;

    fn labels(name: &str) -> Vec<Label> {
        vec![Label::new("__name__", name), Label::new("job", "a")]
    }

    #[tokio::test]
    async fn own_writes_are_seen_before_the_store_has_them() {
        let stored = Arc::new(MemSource::new());
        stored.append(&labels("x"), 1_000, 1.0);
        let recent = Arc::new(RecentWrites::default());
        recent.add(&[(labels("x"), 2_000, 2.0), (labels("y"), 2_000, 5.0)]);
        let source = OverlaySource {
            inner: stored,
            recent: Arc::clone(&recent),
        };
        let m = [Matcher::new(MatchOp::Equal, "job", "a").unwrap()];
        let got = source.select(&m, 0, 10_000).await.unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].timestamps, [1_000, 2_000]);
        assert_eq!(got[1].values, [5.0]);
        let only_y = [Matcher::new(MatchOp::Equal, "__name__", "y").unwrap()];
        assert_eq!(source.select(&only_y, 0, 1_999).await.unwrap().len(), 0);
        // Forgotten once far behind the newest write.
        recent.add(&[(labels("z"), 2_000 + KEEP_MS + 1, 1.0)]);
        assert!(source
            .select(&only_y, 0, i64::MAX)
            .await
            .unwrap()
            .is_empty());
    }
}
