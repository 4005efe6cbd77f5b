//! Compaction of sealed buckets into blocks keeps every sample: random
//! histories (gaps, spilled and late samples, series that join a bucket
//! late, duplicates, another value at a stored timestamp) read back the
//! same from the writer and a reader node before compaction, while it
//! runs, after the switch, after the buckets' keys are deleted, after
//! late samples land in compacted blocks and are folded, and after a
//! restart. A writer killed with SIGKILL during compaction loses nothing
//! (`killed_during_compaction`). Retention drops whole blocks.
//!
//! The tests are here; beside them: the settings and stores they open
//! (`setup`), random histories and the samples they add (`history`),
//! the reads that compare them (`reads`), one whole history through
//! compaction (`one_history`), and a block's keys as SlateDB holds them
//! (`block_keys`).
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod block_keys;
mod history;
mod one_history;
#[path = "../support/raw.rs"]
mod raw;
mod reads;
#[path = "../support/samples.rs"]
mod samples;
mod setup;

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::memory::InMemory;
use object_store::ObjectStore;
use proptest::prelude::*;

use block_keys::{block_keys, parts_apart};
use history::{add, history, hourly, labels, late, Rng};
use one_history::one_history;
use reads::{all, check, difference};
use samples::{read, Expected};
use setup::{block_aligned, open_folder, settings, store_url, BLOCK_HOURS, CHILD_ENV, HOUR};
use strata_storage::{
    open_object_store, Clock, Durability, IngestSeries, ManualClock, ReclaimStep, StorageSettings,
    SystemClock, Writer,
};

proptest! {
    #![proptest_config(ProptestConfig { cases: 4, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn compaction_keeps_every_sample(seed in any::<u64>()) {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
            .block_on(one_history(seed));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_drops_whole_blocks() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let now = SystemClock.now_ms();
    let first = block_aligned(now, 2 * BLOCK_HOURS + 3);
    let block_end = first + BLOCK_HOURS * HOUR;
    // The first block expires 8 s from now (SlateDB's clock is the wall
    // clock); its last bucket's own keys would expire then too.
    let retention = now + 8_000 - block_end;
    let settings = StorageSettings {
        retention: Duration::from_millis(retention as u64),
        ..settings()
    };
    let db = Writer::open(Arc::clone(&store), "db", settings, Arc::new(SystemClock))
        .await
        .unwrap();
    let req: Vec<IngestSeries> = (0..10)
        .map(|i| IngestSeries {
            labels: labels(i),
            samples: (0..2 * BLOCK_HOURS)
                .map(|h| (first + h * HOUR + 60_000, h as f64))
                .collect(),
            exemplars: Vec::new(),
            histograms: Vec::new(),
        })
        .collect();
    db.write(req, Durability::Applied).await.unwrap();
    db.seal_due_now().await.unwrap();
    let pass = db.compact_now(true).await.unwrap();
    assert_eq!(pass.blocks, 2, "{pass:?}");
    let range = (first, first + 2 * BLOCK_HOURS * HOUR);
    let count = |got: Expected| got.values().map(Vec::len).sum::<usize>();
    let before = count(read(&db, &all(), range.0, range.1).await);
    assert!(before > 10 * BLOCK_HOURS as usize, "{before}");
    tokio::time::sleep(Duration::from_millis(
        (block_end + retention - SystemClock.now_ms()).max(0) as u64 + 1500,
    ))
    .await;
    let after = read(&db, &all(), range.0, range.1).await;
    // The first block is gone whole; the second is all there.
    assert_eq!(count(after.clone()), 10 * BLOCK_HOURS as usize);
    assert!(after.values().flatten().all(|&(t, _)| t >= block_end));
    db.close().await.unwrap();
}

/// The child: opens the store and compacts it until done (or killed). Not
/// a test of its own; it returns at once unless the parent set
/// `STRATA_COMPACTION_CHILD_DIR`.
#[test]
fn child_compact() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let dir = Path::new(&dir).to_path_buf();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let loc = open_object_store(&store_url(&dir), &Default::default()).unwrap();
        let db = Writer::open(loc.store, &loc.path, settings(), Arc::new(SystemClock))
            .await
            .unwrap();
        std::fs::write(dir.join("compacting"), b"").unwrap();
        db.compact_now(true).await.unwrap();
        db.close().await.unwrap();
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_during_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x5EED);
    let now = SystemClock.now_ms();
    let hours = 4 * BLOCK_HOURS;
    let first = block_aligned(now, hours + 3);
    let open = || open_folder(dir.path());
    let mut want = Expected::new();
    {
        // Half of the third block compacted before: the child extends it
        // first, batch by batch, and may be killed before that switch.
        let db = open().await;
        let half = 2 * BLOCK_HOURS + BLOCK_HOURS / 2;
        let req = history(&mut rng, first, 0, half, 3000);
        add(&mut want, &req);
        db.write(req, Durability::Applied).await.unwrap();
        db.seal_due_now().await.unwrap();
        db.compact_now(true).await.unwrap();
        assert_eq!(db.compacted_through(), Some(first / HOUR + half));
        let req = history(&mut rng, first, half, hours, 3000);
        add(&mut want, &req);
        db.write(req, Durability::Applied).await.unwrap();
        db.seal_due_now().await.unwrap();
        let req = late(&mut rng, &want, first, hours, 3000);
        add(&mut want, &req);
        db.write(req, Durability::Applied).await.unwrap();
        db.close().await.unwrap();
    }
    let exe = std::env::current_exe().unwrap();
    let mut kills = 0;
    for round in 0..6 {
        let _ = std::fs::remove_file(dir.path().join("compacting"));
        let mut child = Command::new(&exe)
            .args(["--exact", "child_compact", "--nocapture"])
            .env(CHILD_ENV, dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while !dir.path().join("compacting").exists() {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "child did not start"
            );
            if child.try_wait().unwrap().is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Short, growing delays: each round kills the child further into
        // the blocks (it resumes where the last one switched), and well
        // before the whole history is compacted (seconds here).
        tokio::time::sleep(Duration::from_millis(rng.below(40 * (round + 1)))).await;
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap();
            kills += 1;
        }
        child.wait().unwrap();
        let db = open().await;
        let got = read(&db, &all(), first - HOUR, first + (hours + 1) * HOUR).await;
        assert!(got == want, "round {round}: samples differ after the kill");
        let done = db.compacted_through() == Some(first / HOUR + hours);
        db.close().await.unwrap();
        if done && round > 0 {
            break;
        }
    }
    assert!(kills > 0, "no child was killed during compaction");
    let db = open().await;
    db.compact_now(true).await.unwrap();
    assert_eq!(db.compacted_through(), Some(first / HOUR + hours));
    check(&db, &want, first, hours, &mut rng, "after the kills").await;
    db.close().await.unwrap();
}

/// The hourly chunks blocks replaced take no space once deleted: the
/// merge compaction asks SlateDB for drops them with their tombstones, and
/// every sample reads back the same before, during and after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_chunks_give_their_space_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0xB10C);
    let now = SystemClock.now_ms();
    let hours = 2 * BLOCK_HOURS;
    let first = block_aligned(now, hours + 3);
    let open = || open_folder(dir.path());
    let db = open().await;
    let mut want = Expected::new();
    let req = history(&mut rng, first, 0, hours, 3000);
    add(&mut want, &req);
    db.write(req, Durability::Applied).await.unwrap();
    db.seal_due_now().await.unwrap();
    // Nothing deleted yet: no merge, but the sealed chunks go to a table
    // of their own, as hours of writes would put them.
    assert_eq!(db.reclaim_now().await.unwrap(), ReclaimStep::Idle);
    let sealed = db.table_bytes().unwrap();
    let pass = db.compact_now(true).await.unwrap();
    assert_eq!(pass.blocks, 2, "{pass:?}");
    assert!(pass.keys_deleted > 0, "{pass:?}");
    assert!(
        matches!(pass.reclaim, ReclaimStep::Asked(n) if n >= 2),
        "{pass:?}"
    );
    let before = db.table_bytes().unwrap();
    assert!(
        before > sealed,
        "blocks written beside the chunks: {before} {sealed}"
    );
    let started = Instant::now();
    loop {
        let got = read(&db, &all(), first - HOUR, first + (hours + 1) * HOUR).await;
        assert!(got == want, "samples differ while SlateDB merges");
        let step = db.reclaim_now().await.unwrap();
        if step != ReclaimStep::Waiting && db.table_bytes().unwrap() < before * 3 / 4 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "not merged in 2 minutes: {step:?}, {} of {before} bytes",
            db.table_bytes().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let after = db.table_bytes().unwrap();
    // The blocks hold what the chunks held: about half of what both took.
    assert!(after < before * 3 / 4, "{after} of {before} bytes");
    assert_eq!(
        db.stats()
            .reclaim_merges_done
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
    check(&db, &want, first, hours, &mut rng, "after the merge").await;
    db.close().await.unwrap();
    let db = open().await;
    check(
        &db,
        &want,
        first,
        hours,
        &mut rng,
        "reopened after the merge",
    )
    .await;
    db.close().await.unwrap();
}

/// A block extended with samples of new series only: the series it held
/// (more than one write batch of them) have nothing to add, and the
/// extension still switches, every sample there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extension_with_only_new_series() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let now = SystemClock.now_ms();
    let first = block_aligned(now, 3 * BLOCK_HOURS);
    let clock = Arc::new(ManualClock::new(first + 3 * HOUR + 600_000));
    let db = Writer::open(Arc::clone(&store), "db", settings(), clock.clone())
        .await
        .unwrap();
    let mut want = Expected::new();
    let series = |ids, hours| hourly(first, ids, hours, 1);
    let req = series(0..700, 0..3);
    add(&mut want, &req);
    db.write(req, Durability::Applied).await.unwrap();
    db.seal_due_now().await.unwrap();
    db.compact_now(true).await.unwrap();
    assert_eq!(db.compacted_through(), Some(first / HOUR + 3));
    let req = series(700..705, 3..4);
    add(&mut want, &req);
    db.write(req, Durability::Applied).await.unwrap();
    clock.set(first + 4 * HOUR + 600_000);
    db.seal_due_now().await.unwrap();
    let pass = db.compact_now(true).await.unwrap();
    assert_eq!(pass.series, 5, "{pass:?}");
    assert_eq!(db.compacted_through(), Some(first / HOUR + 4));
    let got = read(&db, &all(), first, first + BLOCK_HOURS * HOUR).await;
    assert!(got == want, "{}", difference(&got, &want));
    db.close().await.unwrap();
}

/// Each extension of a block writes one key a series, its parts in one
/// value; a block whose parts an earlier build kept under keys of their
/// own reads the same, and its next extension takes them into the value
/// and deletes their keys.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_block_holds_one_key_a_series_as_it_fills() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let now = SystemClock.now_ms();
    let first = block_aligned(now, 3 * BLOCK_HOURS);
    let block_hour = first / HOUR;
    let clock = Arc::new(ManualClock::new(first + 2 * HOUR + 600_000));
    let mut want = Expected::new();
    let series = |ids, hours| hourly(first, ids, hours, 4);
    // Two hours, one quarter each (blocks of six hours are filled an hour
    // at a time), then a third.
    let db = Writer::open(Arc::clone(&store), "db", settings(), clock.clone())
        .await
        .unwrap();
    let req = series(0..40, 0..2);
    add(&mut want, &req);
    db.write(req, Durability::Applied).await.unwrap();
    db.seal_due_now().await.unwrap();
    db.compact_now(true).await.unwrap();
    assert_eq!(db.compacted_through(), Some(block_hour + 2));
    let req = series(0..40, 2..3);
    add(&mut want, &req);
    db.write(req, Durability::Applied).await.unwrap();
    clock.set(first + 3 * HOUR + 600_000);
    db.seal_due_now().await.unwrap();
    db.compact_now(true).await.unwrap();
    assert_eq!(db.compacted_through(), Some(block_hour + 3));
    db.close().await.unwrap();

    let held = block_keys(&store, block_hour).await;
    assert_eq!(held.len(), 40);
    for (id, (parts, apart)) in &held {
        let ranges = parts
            .as_ref()
            .unwrap_or_else(|| panic!("series {id}: not one value"));
        assert_eq!(ranges.len(), 3, "series {id}: {ranges:?}");
        assert_eq!(*apart, 0, "series {id}: part keys of its own");
    }

    // As an earlier build left it: parts apart, the value their list.
    parts_apart(&store, block_hour).await;
    assert!(block_keys(&store, block_hour)
        .await
        .values()
        .all(|(parts, apart)| parts.is_none() && *apart == 3));
    let db = Writer::open(Arc::clone(&store), "db", settings(), clock.clone())
        .await
        .unwrap();
    let got = read(&db, &all(), first, first + BLOCK_HOURS * HOUR).await;
    assert!(got == want, "parts apart: {}", difference(&got, &want));
    // The next extension, with a series new to the block.
    let req = series(0..41, 3..4);
    add(&mut want, &req);
    db.write(req, Durability::Applied).await.unwrap();
    clock.set(first + 4 * HOUR + 600_000);
    db.seal_due_now().await.unwrap();
    let pass = db.compact_now(true).await.unwrap();
    assert_eq!(pass.series, 41, "{pass:?}");
    assert_eq!(db.compacted_through(), Some(block_hour + 4));
    let got = read(&db, &all(), first, first + BLOCK_HOURS * HOUR).await;
    assert!(got == want, "extended: {}", difference(&got, &want));
    db.close().await.unwrap();

    let held = block_keys(&store, block_hour).await;
    assert_eq!(held.len(), 41);
    let mut by_parts = std::collections::BTreeMap::new();
    for (id, (parts, apart)) in &held {
        let ranges = parts
            .as_ref()
            .unwrap_or_else(|| panic!("series {id}: not one value"));
        *by_parts.entry(ranges.len()).or_insert(0) += 1;
        assert_eq!(*apart, 0, "series {id}: part keys left");
    }
    // The series new to the block has its one part.
    assert_eq!(by_parts, [(1, 1), (4, 40)].into_iter().collect());
}
