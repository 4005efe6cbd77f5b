//! Selecting series in the head and reading their samples.

use std::sync::Arc;

use strata_codec::Matcher;

use super::{Head, MemSeries};
use crate::postings::{combine, union, MatcherSet};

impl Head {
    /// Ids of the series matching every matcher, ascending.
    pub fn select_ids(&self, matchers: &[Matcher]) -> Vec<u64> {
        let idx = self.index.read();
        let sets = matchers
            .iter()
            .map(|m| {
                let values = idx.postings.get(m.name.as_str());
                let pick = |want: bool| -> Vec<u64> {
                    let Some(values) = values else {
                        return Vec::new();
                    };
                    if want && m.op == strata_codec::MatchOp::Equal {
                        return values.get(m.value.as_str()).cloned().unwrap_or_default();
                    }
                    union(
                        values
                            .iter()
                            .filter(|(v, _)| m.matches(v) == want)
                            .map(|(_, ids)| ids.clone())
                            .collect(),
                    )
                };
                if m.matches_empty() {
                    MatcherSet::Exclude(pick(false))
                } else {
                    MatcherSet::Include(pick(true))
                }
            })
            .collect();
        combine(sets, || idx.by_id.keys().copied().collect())
    }

    /// The series for ids, skipping unknown ones.
    pub fn series_for(&self, ids: &[u64]) -> Vec<Arc<MemSeries>> {
        let idx = self.index.read();
        ids.iter()
            .filter_map(|id| idx.by_id.get(id).cloned())
            .collect()
    }
}

impl MemSeries {
    /// Appends this series' head samples in [mint, maxt] from buckets after
    /// `sealed_through` to `ts`/`vs`. Returns whether any bucket overlapped.
    pub fn read_range(
        &self,
        sealed_through: i64,
        bucket_ms: i64,
        mint: i64,
        maxt: i64,
        ts: &mut Vec<i64>,
        vs: &mut Vec<f64>,
    ) -> bool {
        let st = self.state.lock();
        let in_range = |b: i64| {
            let start = b.saturating_mul(bucket_ms);
            let end = start.saturating_add(bucket_ms - 1);
            b > sealed_through && end >= mint && start <= maxt
        };
        // Sized once for every chunk read: growing chunk by chunk would move
        // the samples already decoded each time.
        let total: usize = st
            .chunks
            .iter()
            .filter(|(b, _)| in_range(*b))
            .map(|(_, c)| c.len() as usize)
            .sum();
        ts.reserve(total);
        vs.reserve(total);
        let mut any = false;
        for (b, chunk) in &st.chunks {
            if !in_range(*b) {
                continue;
            }
            any = true;
            // A head chunk is only ever written by us; a decode error here
            // would be a bug, and the samples before it are still right.
            let _ = chunk.decode_range_into(mint, maxt, ts, vs);
        }
        any
    }

    /// Whether the head holds samples of this series in [mint, maxt].
    pub fn overlaps(&self, sealed_through: i64, bucket_ms: i64, mint: i64, maxt: i64) -> bool {
        let st = self.state.lock();
        st.chunks.iter().any(|(b, c)| {
            *b > sealed_through
                && c.first_t().is_some_and(|f| f <= maxt)
                && c.last_t().is_some_and(|l| l >= mint)
                && b.saturating_mul(bucket_ms) <= maxt
        })
    }
}
