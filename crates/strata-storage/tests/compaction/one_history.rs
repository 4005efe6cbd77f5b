//! One random history through compaction (`compaction_keeps_every_sample`):
//! sealed in two steps, late samples before, during and after compaction,
//! the buckets' keys deleted, late samples folded into blocks, then a
//! crash and a restart; every read the same on the writer and a reader
//! node.

use std::sync::Arc;

use object_store::memory::InMemory;
use object_store::ObjectStore;
use strata_storage::{Clock, Durability, IngestSeries, ManualClock, SystemClock, Writer};

use crate::history::{add, history, late, Rng};
use crate::reads::{all, check, difference, reader_sees};
use crate::samples::{read, Expected};
use crate::setup::{block_aligned, open_reader, settings, BLOCK_HOURS, HOUR};

pub(crate) async fn one_history(seed: u64) {
    let mut rng = Rng(seed | 1);
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let now = SystemClock.now_ms();
    // Four blocks of history, ending a few hours ago (sealed).
    let hours = 4 * BLOCK_HOURS;
    let first = block_aligned(now, hours + 3);
    let clock = Arc::new(ManualClock::new(now));
    let db = Writer::open(Arc::clone(&store), "db", settings(), clock.clone())
        .await
        .unwrap();
    let series = 12 + rng.below(20);
    let mut want = Expected::new();

    // In-order history, hour by hour, with spills and seals as it goes.
    let req = history(&mut rng, first, 0, hours, series);
    add(&mut want, &req);
    db.write(req, Durability::Applied).await.unwrap();
    db.freeze_and_spill_now().await.unwrap();
    // Sealed as time goes by: first a block and a half, compacted (the
    // second block not yet whole), then the rest.
    clock.set(first + (BLOCK_HOURS + 3) * HOUR + 600_000);
    db.seal_due_now().await.unwrap();
    let pass = db.compact_now(false).await.unwrap();
    assert_eq!(pass.blocks, 2, "{pass:?}");
    assert_eq!(db.compacted_through(), Some(first / HOUR + BLOCK_HOURS + 3));
    check(
        &db,
        &want,
        first,
        hours,
        &mut rng,
        "a block and a half compacted",
    )
    .await;
    clock.set(now);
    db.seal_due_now().await.unwrap();
    assert!(db.head().sealed_through().unwrap() >= first / HOUR + hours - 1);
    // Late samples into the sealed hours: written as late segments, some
    // buckets folded.
    let req = late(&mut rng, &want, first, hours, series);
    add(&mut want, &req);
    let out = db.write(req, Durability::Applied).await.unwrap();
    assert_eq!(out.rejected, 0, "{:?}", out.first_rejection);
    db.flush_late_now().await.unwrap();
    if rng.below(2) == 0 {
        db.fold_late_now().await.unwrap();
    }
    let reader = open_reader(&store, &clock).await;
    check(&db, &want, first, hours, &mut rng, "before compaction").await;
    reader_sees(&reader, &want, first, hours, "before compaction").await;
    // More late samples, left in the head: compaction runs beside them.
    // A reader node sees them once the late pass writes them.
    let written = want.clone();
    let req = late(&mut rng, &want, first, hours, series);
    add(&mut want, &req);
    db.write(req, Durability::Applied).await.unwrap();

    // Compaction, with reads on the writer and the reader node meanwhile:
    // every one sees every sample once.
    let writer = Arc::new(db);
    let compacting = {
        let w = Arc::clone(&writer);
        tokio::spawn(async move { w.compact_now(false).await.unwrap() })
    };
    let (mint, maxt) = (first - HOUR, first + (hours + 1) * HOUR);
    while !compacting.is_finished() {
        let got = read(&writer, &all(), mint, maxt).await;
        assert!(got == want, "while compacting: {}", difference(&got, &want));
        let got = read(&reader, &all(), mint, maxt).await;
        assert!(got == written || got == want, "reader, while compacting");
    }
    let pass = compacting.await.unwrap();
    // The second block extended, the two after it whole.
    assert_eq!(pass.blocks as i64, hours / BLOCK_HOURS - 1, "{pass:?}");
    assert_eq!(pass.keys_deleted, 0, "deleted before the delay: {pass:?}");
    assert_eq!(writer.compacted_through(), Some(first / HOUR + hours));
    check(&writer, &want, first, hours, &mut rng, "compacted").await;
    reader_sees(&reader, &want, first, hours, "compacted").await;

    // The late samples left in the head go to the blocks.
    writer.flush_late_now().await.unwrap();
    check(
        &writer,
        &want,
        first,
        hours,
        &mut rng,
        "late segments of blocks",
    )
    .await;
    // Re-sent samples of compacted hours are duplicates.
    let resend: Vec<IngestSeries> = want
        .iter()
        .take(3)
        .map(|(l, s)| IngestSeries {
            labels: l.clone(),
            samples: s.iter().map(|&(t, v)| (t, f64::from_bits(v))).collect(),
            exemplars: Vec::new(),
            histograms: Vec::new(),
        })
        .collect();
    let n: usize = resend.iter().map(|s| s.samples.len()).sum();
    let out = writer.write(resend, Durability::Applied).await.unwrap();
    assert_eq!((out.appended, out.duplicates), (0, n), "re-sent history");

    // The buckets' own keys go; reads stay the same.
    let pass = writer.compact_now(true).await.unwrap();
    assert!(pass.keys_deleted > 0, "{pass:?}");
    let layout = writer.bucket_layout(first / HOUR + 1).await.unwrap();
    assert_eq!(
        (layout.chunk_keys, layout.late_series),
        (0, 0),
        "{layout:?}"
    );
    check(&writer, &want, first, hours, &mut rng, "buckets deleted").await;
    reader_sees(&reader, &want, first, hours, "buckets deleted").await;

    // More late samples, into blocks, then the fold of the blocks.
    let req = late(&mut rng, &want, first, hours, series);
    add(&mut want, &req);
    writer.write(req, Durability::Applied).await.unwrap();
    writer.flush_late_now().await.unwrap();
    check(&writer, &want, first, hours, &mut rng, "late in blocks").await;
    let folded = writer.fold_late_now().await.unwrap();
    check(&writer, &want, first, hours, &mut rng, "blocks folded").await;
    reader_sees(&reader, &want, first, hours, "blocks folded").await;
    if folded.buckets > 0 {
        assert_eq!(writer.fold_late_now().await.unwrap().buckets, 0);
    }

    // A crash (dropped without closing), then a restart: the same.
    let req = late(&mut rng, &want, first, hours, series);
    add(&mut want, &req);
    writer.write(req, Durability::Durable).await.unwrap();
    reader.close().await.unwrap();
    drop(writer);
    let db = Writer::open(Arc::clone(&store), "db", settings(), clock.clone())
        .await
        .unwrap();
    assert_eq!(db.compacted_through(), Some(first / HOUR + hours));
    check(&db, &want, first, hours, &mut rng, "reopened").await;
    db.flush_late_now().await.unwrap();
    db.fold_late_now().await.unwrap();
    check(&db, &want, first, hours, &mut rng, "reopened and folded").await;
    db.close().await.unwrap();
}
