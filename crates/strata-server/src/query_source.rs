//! Storage seen through the query engine's read trait: one database, or
//! every writer shard's at once with the answers merged.

use std::sync::Arc;

use strata_codec::merge::merge_newer;
use strata_codec::LabelPairs;
use strata_codec::{Label, Matcher, SeriesExemplars, SeriesMap};
use strata_promql::{
    CardinalityCounter, MetricMetadata, Queryable, Series, SourceError, TsdbStatus,
};
use strata_storage::{Storage, StorageError, TENANT_LABEL};

use crate::state::AppState;

pub struct StorageSource {
    state: Arc<AppState>,
}

impl StorageSource {
    pub fn new(state: Arc<AppState>) -> Self {
        Self { state }
    }

    /// The databases to read: a writer's own, or every shard a reader
    /// follows.
    fn storages(&self) -> Result<Vec<Arc<Storage>>, SourceError> {
        self.state
            .query_storages()
            .map_err(SourceError::Unavailable)
    }
}

/// Runs `f` on every database at once; the first failure fails the whole
/// read, since a shard left out would silently drop its series.
async fn fan_out<'a, T, F, Fut>(storages: &'a [Arc<Storage>], f: F) -> Result<Vec<T>, SourceError>
where
    F: Fn(&'a Storage) -> Fut,
    Fut: std::future::Future<Output = Result<T, StorageError>>,
{
    if let [only] = storages {
        return Ok(vec![f(only).await.map_err(source_error)?]);
    }
    futures::future::try_join_all(storages.iter().map(|s| f(s)))
        .await
        .map_err(source_error)
}

/// Merges per-shard selections (each sorted by labels) into one list sorted
/// by labels with each label set once. A series lives on one shard unless
/// the shard count changed while it was written; then its samples from all
/// shards are merged by timestamp, and of equal timestamps the first
/// shard's is kept.
pub fn merge_series(parts: Vec<Vec<Series>>) -> Vec<Series> {
    let mut parts = parts.into_iter().filter(|p| !p.is_empty());
    let Some(first) = parts.next() else {
        return Vec::new();
    };
    let mut all = first;
    let mut more = false;
    for p in parts {
        all.extend(p);
        more = true;
    }
    if !more {
        return all;
    }
    // Stable: equal label sets stay in shard order.
    all.sort_by(|a, b| a.labels.cmp(&b.labels));
    let mut out: Vec<Series> = Vec::with_capacity(all.len());
    for s in all {
        match out.last_mut() {
            Some(last) if last.labels == s.labels => merge_samples(last, s),
            _ => out.push(s),
        }
    }
    out
}

/// `other`'s samples merged into `into`'s; of equal timestamps `into`'s
/// are kept.
fn merge_samples(into: &mut Series, other: Series) {
    let kept = (
        std::mem::take(&mut into.timestamps),
        std::mem::take(&mut into.values),
    );
    (into.timestamps, into.values) = merge_newer((other.timestamps, other.values), kept);
    if !other.histograms.is_empty() {
        // Stable: at an equal timestamp `into`'s comes first and stays.
        into.histograms.extend(other.histograms);
        into.histograms.sort_by_key(|(t, _)| *t);
        into.histograms.dedup_by_key(|(t, _)| *t);
    }
}

/// Sorted, deduplicated union of sorted lists.
fn union_sorted<T: Ord>(parts: Vec<Vec<T>>) -> Vec<T> {
    if parts.len() == 1 {
        return parts.into_iter().flatten().collect();
    }
    let mut all: Vec<T> = parts.into_iter().flatten().collect();
    all.sort_unstable();
    all.dedup();
    all
}

fn source_error(e: StorageError) -> SourceError {
    match e {
        StorageError::Unavailable(_) | StorageError::Closed | StorageError::Fenced(_) => {
            SourceError::Unavailable(e.to_string())
        }
        StorageError::Corrupt(_) | StorageError::Invalid(_) | StorageError::ReadOnly => {
            SourceError::Internal(e.to_string())
        }
    }
}

#[async_trait::async_trait]
impl Queryable for StorageSource {
    async fn metadata(
        &self,
        tenant: &str,
        metric: Option<&str>,
    ) -> Result<Vec<(String, Vec<MetricMetadata>)>, SourceError> {
        let parts = fan_out(&self.storages()?, |s| s.metadata(tenant, metric)).await?;
        // Shards (a metric may be described on several): merged by name,
        // each distinct entry once.
        let mut merged: std::collections::BTreeMap<String, Vec<MetricMetadata>> =
            std::collections::BTreeMap::new();
        for (name, entries) in parts.into_iter().flatten() {
            let list = merged.entry(name).or_default();
            for e in entries {
                let e = MetricMetadata {
                    kind: e.kind,
                    help: e.help,
                    unit: e.unit,
                };
                if !list.contains(&e) {
                    list.push(e);
                }
            }
        }
        Ok(merged.into_iter().collect())
    }

    async fn tsdb_status(
        &self,
        tenant: &str,
        limit: usize,
    ) -> Result<Option<TsdbStatus>, SourceError> {
        // Every database's head in one count, so a label value found on
        // several shards is counted once.
        let mut counter = CardinalityCounter::default();
        for storage in self.storages()? {
            for s in storage.head().all_series() {
                if strata_storage::tenant_of(&s.labels) != tenant {
                    continue;
                }
                counter.add_pairs(s.labels.pairs().filter(|(n, _)| *n != TENANT_LABEL));
            }
        }
        Ok(Some(counter.status(limit)))
    }

    async fn select(
        &self,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<Series>, SourceError> {
        let parts = fan_out(&self.storages()?, |s| s.select(matchers, mint, maxt)).await?;
        Ok(merge_series(parts))
    }

    async fn exemplars(
        &self,
        matcher_sets: &[Vec<Matcher>],
        start: i64,
        end: i64,
    ) -> Result<Vec<SeriesExemplars>, SourceError> {
        let parts = fan_out(&self.storages()?, |s| s.exemplars(matcher_sets, start, end)).await?;
        // A series lives on one shard; sorted by labels once merged.
        let mut all: Vec<SeriesExemplars> = parts.into_iter().flatten().collect();
        all.sort_by(|a, b| a.labels.cmp(&b.labels));
        Ok(all)
    }

    async fn select_mapped(
        &self,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
        map: SeriesMap,
    ) -> Result<Vec<Series>, SourceError> {
        let storages = self.storages()?;
        if let [only] = storages.as_slice() {
            return only
                .select_mapped(matchers, mint, maxt, Some(&map))
                .await
                .map_err(source_error);
        }
        // Shards: a series on several (the shard count changed) is merged
        // whole before it is mapped.
        let parts = fan_out(&storages, |s| s.select(matchers, mint, maxt)).await?;
        let mut out: Vec<Series> = merge_series(parts)
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
        let parts = fan_out(&self.storages()?, |s| s.series(matchers, mint, maxt)).await?;
        Ok(union_sorted(parts))
    }

    async fn label_names(
        &self,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<String>, SourceError> {
        let parts = fan_out(&self.storages()?, |s| s.label_names(matchers, mint, maxt)).await?;
        Ok(union_sorted(parts))
    }

    async fn label_values(
        &self,
        name: &str,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<String>, SourceError> {
        let parts = fan_out(&self.storages()?, |s| {
            s.label_values(name, matchers, mint, maxt)
        })
        .await?;
        Ok(union_sorted(parts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(name: &str, samples: &[(i64, f64)]) -> Series {
        Series {
            labels: vec![Label::new("__name__", name)].into(),
            timestamps: samples.iter().map(|s| s.0).collect(),
            values: samples.iter().map(|s| s.1).collect(),
            histograms: Vec::new(),
        }
    }

    #[test]
    fn disjoint_shards_interleave_by_labels() {
        let merged = merge_series(vec![
            vec![series("a", &[(1, 1.0)]), series("c", &[(1, 3.0)])],
            vec![],
            vec![series("b", &[(1, 2.0)])],
        ]);
        let names: Vec<&str> = merged.iter().map(|s| s.labels[0].value.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
    }

    #[test]
    fn a_series_on_two_shards_is_merged_once() {
        let merged = merge_series(vec![
            vec![series("a", &[(1, 1.0), (3, 3.0)])],
            vec![series("a", &[(2, 2.0), (3, 30.0), (4, 4.0)])],
        ]);
        assert_eq!(merged.len(), 1);
        assert_eq!(merged[0].timestamps, [1, 2, 3, 4]);
        assert_eq!(merged[0].values, [1.0, 2.0, 3.0, 4.0]);
    }

    #[test]
    fn histograms_on_two_shards_merge_the_first_shard_winning() {
        use strata_codec::histogram::FloatHistogram;
        let h = |count: f64| FloatHistogram {
            count,
            ..FloatHistogram::default()
        };
        let mut a = series("a", &[]);
        a.histograms = vec![(1, h(1.0)), (3, h(3.0))];
        let mut b = series("a", &[(5, 5.0)]);
        b.histograms = vec![(2, h(2.0)), (3, h(30.0))];
        let merged = merge_series(vec![vec![a], vec![b]]);
        assert_eq!(merged.len(), 1);
        let got: Vec<(i64, f64)> = merged[0]
            .histograms
            .iter()
            .map(|(t, h)| (*t, h.count))
            .collect();
        assert_eq!(got, [(1, 1.0), (2, 2.0), (3, 3.0)]);
        assert_eq!(merged[0].timestamps, [5]);
    }

    #[test]
    fn unions() {
        let u = union_sorted(vec![vec!["a", "c"], vec!["b", "c"], vec![]]);
        assert_eq!(u, ["a", "b", "c"]);
    }
}
