//! SlateDB's in-memory block cache is sized by `memory_cache_bytes`, is
//! reported by part, and takes what reads of sealed data bring in, not
//! the samples a writer writes nor those compaction rewrites.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::sync::Arc;
use std::time::Duration;

use object_store::memory::InMemory;
use object_store::ObjectStore;
use strata_codec::{Label, MatchOp, Matcher};
use strata_storage::{Clock, Durability, IngestSeries, ManualClock, StorageSettings, Writer};

const HOUR: i64 = 3_600_000;
const CACHE: u64 = 1 << 20;
const SERIES: u32 = 2_000;

fn settings() -> StorageSettings {
    StorageSettings {
        seal_check_interval: Duration::from_secs(3600),
        memory_cache_bytes: CACHE,
        ..StorageSettings::default()
    }
}

/// `SERIES` random-walk gauges, two hours of 15 s samples from `t0`.
fn data(t0: i64) -> Vec<IngestSeries> {
    (0..SERIES)
        .map(|i| IngestSeries {
            labels: vec![
                Label::new("__name__", "node_memory_free_bytes"),
                Label::new("instance", format!("host-{i}")),
            ],
            samples: (0..480)
                .map(|k| {
                    let v = (f64::from(k) * 0.37 + f64::from(i)).sin() * 1e9;
                    (t0 + i64::from(k) * 15_000, v.round())
                })
                .collect(),
            exemplars: Vec::new(),
            histograms: Vec::new(),
        })
        .collect()
}

/// A writer on `store` holding `data(t0)`, both hours sealed; its clock
/// and `t0`.
async fn sealed_writer(
    store: &Arc<dyn ObjectStore>,
    settings: StorageSettings,
) -> (Writer, Arc<ManualClock>, i64) {
    // SlateDB expires keys by the real clock, so the data must be recent.
    let now = strata_storage::SystemClock.now_ms();
    let t0 = now - now % HOUR - 3 * HOUR;
    let clock = Arc::new(ManualClock::new(t0));
    let db = Writer::open(Arc::clone(store), "db", settings, clock.clone())
        .await
        .unwrap();
    db.write(data(t0), Durability::Applied).await.unwrap();
    clock.set(t0 + 2 * HOUR + 6 * 60_000);
    db.seal_due_now().await.unwrap();
    (db, clock, t0)
}

/// Every series of `data(t0)`, read over its two hours.
async fn read_all(db: &Writer, t0: i64) -> Vec<strata_storage::Series> {
    db.select(
        &[Matcher::new(MatchOp::Equal, "__name__", "node_memory_free_bytes").unwrap()],
        t0,
        t0 + 2 * HOUR,
    )
    .await
    .unwrap()
}

/// Samples of every series of `data(t0)`, read over its two hours.
async fn samples_read(db: &Writer, t0: i64) -> usize {
    let all = read_all(db, t0).await;
    all.iter().map(|s| s.timestamps.len()).sum()
}

#[tokio::test]
async fn sealed_reads_go_through_the_sized_cache() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let (db, clock, t0) = sealed_writer(&store, settings()).await;
    assert_eq!(db.head().sealed_through(), Some(t0 / HOUR + 1));
    db.close().await.unwrap();

    // Reopened, the sealed chunks are in SlateDB's tables, not its
    // memtable: reading them goes through the cache.
    let db = Writer::open(Arc::clone(&store), "db", settings(), clock.clone())
        .await
        .unwrap();
    let before = db.cache_usage();
    assert_eq!(before.capacity_bytes, CACHE);
    let all = read_all(&db, t0).await;
    assert_eq!(all.len(), SERIES as usize);
    let samples: usize = all.iter().map(|s| s.timestamps.len()).sum();
    assert_eq!(samples, SERIES as usize * 480);

    let after = db.cache_usage();
    eprintln!("cache after the read: {after:?}");
    assert!(
        after.blocks_bytes > before.blocks_bytes && after.meta_bytes > 0,
        "reading sealed chunks put nothing in the cache: {before:?} -> {after:?}"
    );
    // A quarter for indexes and filters, the rest for blocks; each part
    // evicts to stay within its share (foyer's bound; the soak in
    // docs/benchmarks.md shows the writer's cache full at its size).
    assert!(
        after.blocks_bytes <= CACHE - CACHE / 4 && after.meta_bytes <= CACHE / 4,
        "cache over its size {CACHE}: {after:?}"
    );
    db.close().await.unwrap();
}

#[tokio::test]
async fn a_writer_caches_the_samples_it_reads_not_those_it_writes() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let settings = StorageSettings {
        memory_cache_bytes: StorageSettings::default().memory_cache_bytes,
        ..settings()
    };
    let (db, _clock, t0) = sealed_writer(&store, settings).await;
    // The seal's chunks go from the memtable to a level-0 table: its
    // postings, metadata, index and filters are cached, its chunks not.
    db.flush_memtable_now().await.unwrap();
    let written = db.cache_usage();
    assert_eq!(samples_read(&db, t0).await, SERIES as usize * 480);
    let read = db.cache_usage();
    eprintln!("cache after the flush: {written:?}, after the read: {read:?}");
    // The read brings in about 4 MB of blocks (the chunks of 960,000
    // samples); the flush's postings and metadata blocks are about 200 KB.
    assert!(
        read.blocks_bytes > 4 * written.blocks_bytes.max(4096),
        "the flush cached the chunks, or the read did not: {written:?} -> {read:?}"
    );
    db.close().await.unwrap();
}

#[tokio::test]
async fn compaction_leaves_the_cache_to_queries() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let settings = StorageSettings {
        memory_cache_bytes: StorageSettings::default().memory_cache_bytes,
        // Blocks of two buckets, extended a bucket at a time: the two
        // sealed hours are compacted at once.
        block_duration: Duration::from_secs(2 * 3600),
        ..settings()
    };
    let (db, _clock, t0) = sealed_writer(&store, settings).await;
    db.flush_memtable_now().await.unwrap();
    let sealed = db.cache_usage();
    // Compaction reads every chunk of the sealed buckets and writes it
    // anew into its block, then deletes the buckets' keys.
    let pass = db.compact_now(true).await.unwrap();
    assert!(
        pass.blocks >= 1 && pass.samples == SERIES as usize * 480,
        "{pass:?}"
    );
    db.flush_memtable_now().await.unwrap();
    let compacted = db.cache_usage();
    assert_eq!(samples_read(&db, t0).await, SERIES as usize * 480);
    let read = db.cache_usage();
    eprintln!("cache after the seal: {sealed:?}, the compaction: {compacted:?}, a read: {read:?}");
    // The read of the blocks brings in their chunks (about 4 MB). The
    // compaction read them all too, but brings in only the blocks'
    // postings (about 0.5 MB: the flush caches them, as it does a
    // seal's); with its chunk reads cached it brought in 4 MB as well.
    let by_read = read.blocks_bytes.saturating_sub(compacted.blocks_bytes);
    let by_compaction = compacted.blocks_bytes.saturating_sub(sealed.blocks_bytes);
    assert!(
        by_read > 1 << 20 && by_compaction * 4 < by_read,
        "compaction cached {by_compaction} bytes of blocks, the read {by_read}"
    );
    db.close().await.unwrap();
}

#[tokio::test]
async fn a_zero_cache_is_refused_by_name() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let settings = StorageSettings {
        memory_cache_bytes: 0,
        ..StorageSettings::default()
    };
    let err = Writer::open(store, "db", settings, Arc::new(ManualClock::new(0)))
        .await
        .err()
        .expect("a zero cache must be refused");
    assert!(err.to_string().contains("memory_cache_bytes"), "{err}");
}
