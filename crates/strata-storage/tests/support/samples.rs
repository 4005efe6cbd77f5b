//! What a selection reads, as comparable values: shared by the tests of
//! late samples and of compaction.

use std::collections::BTreeMap;

use strata_codec::{Label, Matcher};
use strata_storage::Storage;

/// Per series, its samples as (timestamp, value bits): NaNs compare.
pub type Expected = BTreeMap<Vec<Label>, Vec<(i64, u64)>>;

/// Every sample of the series matching `matchers` in `[mint, maxt]`.
pub async fn read(db: &Storage, matchers: &[Matcher], mint: i64, maxt: i64) -> Expected {
    // Each series mapped as it is read (what a query's `rate` does) sees
    // the samples a whole select returns: here, reduced to their count
    // and their last value. A reader node may move on between two reads:
    // compared once two whole reads around the mapped one agree.
    let map: strata_codec::SeriesMap = std::sync::Arc::new(|s: strata_codec::Series| {
        Some(strata_codec::Series {
            labels: s.labels,
            timestamps: vec![s.timestamps.len() as i64],
            values: s.values.last().copied().into_iter().collect(),
            histograms: Vec::new(),
        })
    });
    let mut whole = db.select(matchers, mint, maxt).await.expect("select");
    for attempt in 0.. {
        let mapped = db
            .select_mapped(matchers, mint, maxt, Some(&map))
            .await
            .expect("select_mapped");
        let again = db.select(matchers, mint, maxt).await.expect("select");
        if again != whole && attempt < 5 {
            whole = again;
            continue;
        }
        let want: Vec<_> = whole.iter().filter_map(|s| map(s.clone())).collect();
        assert!(
            mapped.len() == want.len()
                && mapped.iter().zip(&want).all(|(a, b)| {
                    a.labels == b.labels
                        && a.timestamps == b.timestamps
                        && a.values.first().map(|v| v.to_bits())
                            == b.values.first().map(|v| v.to_bits())
                }),
            "select_mapped differs from select"
        );
        break;
    }
    whole
        .into_iter()
        .map(|s| {
            let samples = s
                .timestamps
                .into_iter()
                .zip(s.values.iter().map(|v| v.to_bits()))
                .collect();
            (s.labels.to_vec(), samples)
        })
        .collect()
}
