//! A cleanly closed writer leaves no WAL files beside the tables holding
//! the same data, and everything reads back after reopening.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::path::Path;
use std::sync::Arc;

use strata_codec::{Label, MatchOp, Matcher};
use strata_storage::{
    open_object_store, Durability, IngestSeries, ObjectStoreLocation, StorageSettings, SystemClock,
    Writer,
};

/// Files and bytes under `dir`, recursively.
fn files_in(dir: &Path) -> (usize, u64) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (0, 0);
    };
    entries.flatten().fold((0, 0), |(n, bytes), e| {
        let path = e.path();
        if path.is_dir() {
            let (n2, b2) = files_in(&path);
            (n + n2, bytes + b2)
        } else {
            (n + 1, bytes + e.metadata().map_or(0, |m| m.len()))
        }
    })
}

async fn open(loc: &ObjectStoreLocation) -> Writer {
    Writer::open(
        Arc::clone(&loc.store),
        &loc.path,
        StorageSettings::default(),
        Arc::new(SystemClock),
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn close_deletes_the_wal_its_final_flush_made_obsolete() {
    let dir = tempfile::tempdir().unwrap();
    let loc = open_object_store(
        &format!("file://{}", dir.path().display()),
        &Default::default(),
    )
    .unwrap();
    let now = {
        use strata_storage::Clock;
        SystemClock.now_ms()
    };
    let db = open(&loc).await;
    // Twenty Durable writes: twenty WAL files at least.
    for i in 0..20i64 {
        let req = (0..50)
            .map(|s| IngestSeries {
                labels: vec![
                    Label::new("__name__", "close_test"),
                    Label::new("s", s.to_string()),
                ],
                samples: vec![(now - 60_000 + i * 1000, (i * s) as f64)],
                exemplars: Vec::new(),
                histograms: Vec::new(),
            })
            .collect();
        db.write(req, Durability::Durable).await.unwrap();
    }
    let wal = dir.path().join(&loc.path).join("wal");
    let (wal_files_open, _) = files_in(&wal);
    assert!(wal_files_open >= 20, "{wal_files_open} WAL files");
    db.close().await.unwrap();
    let (wal_files, wal_bytes) = files_in(&wal);
    assert!(
        wal_files <= 2,
        "{wal_files} WAL files ({wal_bytes} bytes) left of {wal_files_open}"
    );

    let db = open(&loc).await;
    let got = db
        .select(
            &[Matcher::new(MatchOp::Equal, "__name__", "close_test").unwrap()],
            0,
            i64::MAX / 2,
        )
        .await
        .unwrap();
    assert_eq!(got.len(), 50);
    assert!(got.iter().all(|s| s.timestamps.len() == 20));
    db.close().await.unwrap();
}
