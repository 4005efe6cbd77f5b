//! What a selection reads, as comparable values: shared by the tests of
//! late samples and of compaction.

use std::collections::BTreeMap;

use strata_codec::{Label, Matcher};
use strata_storage::Storage;

/// Per series, its samples as (timestamp, value bits): NaNs compare.
pub type Expected = BTreeMap<Vec<Label>, Vec<(i64, u64)>>;

/// Every sample of the series matching `matchers` in `[mint, maxt]`.
pub async fn read(db: &Storage, matchers: &[Matcher], mint: i64, maxt: i64) -> Expected {
    db.select(matchers, mint, maxt)
        .await
        .expect("select")
        .into_iter()
        .map(|s| {
            let samples = s
                .timestamps
                .into_iter()
                .zip(s.values.iter().map(|v| v.to_bits()))
                .collect();
            (s.labels, samples)
        })
        .collect()
}
