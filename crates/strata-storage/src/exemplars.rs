//! The read of exemplars for `/api/v1/query_exemplars`: the head's ring,
//! and the `E` keys the seals wrote for sealed buckets.

use rustc_hash::FxHashMap;
use strata_codec::{decode_exemplars, Exemplar, Matcher, SeriesExemplars};

use crate::error::StorageError;
use crate::head::NONE_SEALED;
use crate::keys;
use crate::storage::Storage;

impl Storage {
    /// The exemplars in [start, end] (ms, inclusive) of every series that
    /// matches all matchers of at least one set, sorted by labels.
    pub async fn exemplars(
        &self,
        matcher_sets: &[Vec<Matcher>],
        start: i64,
        end: i64,
    ) -> Result<Vec<SeriesExemplars>, StorageError> {
        if start > end || matcher_sets.is_empty() {
            return Ok(Vec::new());
        }
        let mut by_series = self.shared.head.exemplars().select(start, end, |_| true);
        let sealed = self.shared.head.sealed_through().unwrap_or(NONE_SEALED);
        let bucket_ms = self.shared.settings.bucket_ms();
        let (first, last) = (start.div_euclid(bucket_ms), end.div_euclid(bucket_ms));
        if sealed != NONE_SEALED && first <= sealed {
            self.sealed_exemplars(first, last.min(sealed), start, end, &mut by_series)
                .await?;
        }
        let mut out = Vec::new();
        for (id, mut list) in by_series {
            let Some(labels) = self.labels_of(id).await? else {
                continue;
            };
            let wanted = matcher_sets
                .iter()
                .any(|set| set.iter().all(|m| m.matches_labels(&labels)));
            if !wanted {
                continue;
            }
            // The ring still holds a sealed bucket's exemplars for a while.
            list.sort_by_key(|e| e.t);
            list.dedup_by(|a, b| a.same_as(b));
            out.push(SeriesExemplars {
                labels,
                exemplars: list,
            });
        }
        out.sort_by(|a, b| a.labels.cmp(&b.labels));
        Ok(out)
    }

    /// Adds the stored exemplars in [start, end] of buckets `first` to
    /// `last` to `by_series`.
    async fn sealed_exemplars(
        &self,
        first: i64,
        last: i64,
        start: i64,
        end: i64,
        by_series: &mut FxHashMap<u64, Vec<Exemplar>>,
    ) -> Result<(), StorageError> {
        let from = keys::exemplar_prefix(first);
        let to = keys::prefix_end(&keys::exemplar_prefix(last));
        let mut it = self.shared.backend.scan(from..to).await?;
        while let Some(kv) = it.next().await? {
            let Some((_, id)) = keys::exemplar_key_parts(&kv.key) else {
                continue;
            };
            let list = decode_exemplars(&kv.value)?;
            let kept = list.into_iter().filter(|e| e.t >= start && e.t <= end);
            by_series.entry(id).or_default().extend(kept);
        }
        Ok(())
    }
}
