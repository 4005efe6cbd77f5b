//! What the tests read: every sample of the written series as bits, and
//! the sequence numbers of the log records left in the store.

use std::sync::Arc;

use object_store::ObjectStore;
use strata_codec::{Label, MatchOp, Matcher};
use strata_storage::Storage;

use crate::raw;

pub(crate) fn eq(m: &str, v: &str) -> Matcher {
    Matcher::new(MatchOp::Equal, m, v).unwrap()
}

pub(crate) async fn read_all(db: &Storage) -> Vec<(Vec<Label>, Vec<i64>, Vec<u64>)> {
    db.select(
        &[eq("__name__", "node_cpu_seconds_total")],
        i64::MIN / 2,
        i64::MAX / 2,
    )
    .await
    .unwrap()
    .into_iter()
    .map(|s| {
        (
            s.labels.to_vec(),
            s.timestamps,
            s.values.iter().map(|v| v.to_bits()).collect(),
        )
    })
    .collect()
}

/// The sequence numbers of the log records in the database at `db`.
pub(crate) async fn log_seqs(store: &Arc<dyn ObjectStore>) -> Vec<u64> {
    let reader = raw::reader(store).await;
    let mut it = reader
        .scan(vec![strata_storage::keys::LOG]..vec![strata_storage::keys::LOG + 1])
        .await
        .unwrap();
    let mut seqs = Vec::new();
    while let Some(kv) = it.next().await.unwrap() {
        seqs.push(strata_storage::keys::log_seq(&kv.key).unwrap());
    }
    reader.close().await.unwrap();
    seqs
}
