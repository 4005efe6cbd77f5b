//! What a read takes beside the head's chunks: histograms the store holds
//! for sealed buckets, segments the head spilled, and chunks a seal in
//! progress has written and let go.

use std::collections::BTreeMap;

use strata_codec::histogram::FloatHistogram;
use strata_codec::{decode_chunk_range_into, Matcher};

use super::decode::{insert_stored, Samples};
use crate::backend::ScanKind;
use crate::error::StorageError;
use crate::head::NONE_SEALED;
use crate::keys::{self, Span};
use crate::storage::Storage;

impl Storage {
    /// The native histogram samples in [mint, maxt] the store holds for
    /// buckets `first` to `last` (both sealed), of every series matching
    /// all matchers, by id. `N` keys are few (only series with histograms
    /// have them): the buckets' keys are scanned and each series' labels
    /// checked once.
    pub(super) async fn stored_histograms(
        &self,
        matchers: &[Matcher],
        first: i64,
        last: i64,
        sealed: i64,
        mint: i64,
        maxt: i64,
    ) -> Result<BTreeMap<u64, Vec<(i64, FloatHistogram)>>, StorageError> {
        let mut out: BTreeMap<u64, Vec<(i64, FloatHistogram)>> = BTreeMap::new();
        if sealed == NONE_SEALED || first > last {
            return Ok(out);
        }
        let from = keys::histogram_prefix(first);
        let to = keys::prefix_end(&keys::histogram_prefix(last));
        let mut wanted: BTreeMap<u64, bool> = BTreeMap::new();
        let mut it = self.shared.backend.scan(from..to).await?;
        while let Some(kv) = it.next().await? {
            let Some((_, id)) = keys::histogram_key_parts(&kv.key) else {
                continue;
            };
            let matches = match wanted.get(&id) {
                Some(&m) => m,
                None => {
                    let m = self
                        .labels_of(id)
                        .await?
                        .is_some_and(|l| matchers.iter().all(|m| m.matches_labels(&l)));
                    wanted.insert(id, m);
                    m
                }
            };
            if matches {
                let list = out.entry(id).or_default();
                strata_codec::histogram::decode_chunk_list_into(&kv.value, mint, maxt, list)?;
            }
        }
        Ok(out)
    }

    /// Reads the head's spilled segments `(bucket, series, first_t,
    /// last_t)` and merges their samples in [mint, maxt] into each
    /// series' head samples.
    pub(super) async fn add_spilled(
        &self,
        spilled: &mut [(Span, u64, i64, i64)],
        head_parts: &mut BTreeMap<u64, (Vec<i64>, Vec<f64>)>,
        mint: i64,
        maxt: i64,
    ) -> Result<(), StorageError> {
        if spilled.is_empty() {
            return Ok(());
        }
        spilled.sort_unstable();
        let segments = self.segments(spilled, ScanKind::Long).await?;
        let mut from_store: BTreeMap<u64, (Vec<i64>, Vec<f64>)> = BTreeMap::new();
        for (&(_, id, _, _), segment) in spilled.iter().zip(&segments) {
            let (ts, vs) = from_store.entry(id).or_default();
            decode_chunk_range_into(segment, mint, maxt, ts, vs)?;
        }
        for (id, samples) in from_store {
            insert_stored(head_parts.entry(id).or_default(), samples);
        }
        Ok(())
    }

    /// The samples in [mint, maxt] of the series each bucket lists (ids
    /// ascending): chunks a seal under way has written and the head let
    /// go, read as the seal wrote them.
    pub(super) async fn released_samples(
        &self,
        released: BTreeMap<i64, Vec<u64>>,
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<(u64, Samples)>, StorageError> {
        let mut out = Vec::new();
        for (bucket, ids) in released {
            for sb in self
                .series_buckets(Span::Bucket(bucket), &ids, ScanKind::Long)
                .await?
            {
                out.push((sb.id, sb.samples(mint, maxt)?));
            }
        }
        Ok(out)
    }
}
