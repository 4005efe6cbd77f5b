//! Compaction of sealed buckets into blocks keeps every sample: random
//! histories (gaps, spilled and late samples, series that join a bucket
//! late, duplicates, another value at a stored timestamp) read back the
//! same from the writer and a reader node before compaction, while it
//! runs, after the switch, after the buckets' keys are deleted, after
//! late samples land in compacted blocks and are folded, and after a
//! restart. A writer killed with SIGKILL during compaction loses nothing
//! (`killed_during_compaction`). Retention drops whole blocks.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::memory::InMemory;
use object_store::ObjectStore;
use proptest::prelude::*;
use strata_codec::{Label, MatchOp, Matcher};

#[path = "support/raw.rs"]
mod raw;
#[path = "support/samples.rs"]
mod samples;
use samples::{read, Expected};
use strata_storage::{
    open_object_store, Clock, Durability, IngestSeries, ManualClock, ReaderSettings, ReclaimStep,
    Storage, StorageSettings, SystemClock, Writer,
};

const HOUR: i64 = 3_600_000;
/// Buckets per block in these tests: blocks of six hours.
const BLOCK_HOURS: i64 = 6;

fn settings() -> StorageSettings {
    StorageSettings {
        seal_check_interval: Duration::from_secs(3600),
        flush_interval: Duration::from_millis(10),
        block_duration: Duration::from_secs(BLOCK_HOURS as u64 * 3600),
        // Small spill threshold: some series spill segments before the seal.
        spill_min_samples: 8,
        ..StorageSettings::default()
    }
}

/// The start (ms) of the block holding the hour `hours_back` hours before
/// `now_ms`: where a test's history begins.
fn block_aligned(now_ms: i64, hours_back: i64) -> i64 {
    (now_ms / HOUR - hours_back) / BLOCK_HOURS * BLOCK_HOURS * HOUR
}

/// xorshift64*: a history replays from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn labels(i: u64) -> Vec<Label> {
    vec![
        Label::new("__name__", "m"),
        Label::new("host", format!("h{}", i % 5)),
        Label::new("i", i.to_string()),
    ]
}

fn add(want: &mut Expected, req: &[IngestSeries]) {
    for s in req {
        let e = want.entry(s.labels.clone()).or_default();
        for &(t, v) in &s.samples {
            match e.binary_search_by_key(&t, |&(t, _)| t) {
                Ok(_) => {}
                Err(at) => e.insert(at, (t, v.to_bits())),
            }
        }
    }
}

fn all() -> Vec<Matcher> {
    vec![Matcher::new(MatchOp::Equal, "__name__", "m").unwrap()]
}

/// The part of `want` a selection of `host` over `[mint, maxt]` reads.
fn expected(want: &Expected, host: Option<&str>, mint: i64, maxt: i64) -> Expected {
    want.iter()
        .filter(|(l, _)| host.is_none_or(|h| l.iter().any(|l| l.name == "host" && l.value == h)))
        .map(|(l, s)| {
            let s: Vec<_> = s
                .iter()
                .copied()
                .filter(|&(t, _)| t >= mint && t <= maxt)
                .collect();
            (l.clone(), s)
        })
        .filter(|(_, s)| !s.is_empty())
        .collect()
}

/// The first series whose samples differ, and how.
fn difference(got: &Expected, want: &Expected) -> String {
    for (l, w) in want {
        let g = got.get(l).cloned().unwrap_or_default();
        if &g != w {
            let extra: Vec<_> = g.iter().filter(|x| !w.contains(x)).take(3).collect();
            let missing: Vec<_> = w.iter().filter(|x| !g.contains(x)).take(3).collect();
            return format!(
                "{l:?}: {} samples, want {}; extra {extra:?}, missing {missing:?}",
                g.len(),
                w.len()
            );
        }
    }
    format!("{} series, want {}", got.len(), want.len())
}

/// Every read the test makes: everything, one host, and random windows.
async fn check(db: &Storage, want: &Expected, first: i64, hours: i64, rng: &mut Rng, what: &str) {
    let (mint, maxt) = (first - HOUR, first + (hours + 1) * HOUR);
    let got = read(db, &all(), mint, maxt).await;
    assert!(
        got == *want,
        "{what}: everything: {}",
        difference(&got, want)
    );
    let host = vec![
        Matcher::new(MatchOp::Equal, "__name__", "m").unwrap(),
        Matcher::new(MatchOp::Equal, "host", "h2").unwrap(),
    ];
    assert_eq!(
        read(db, &host, mint, maxt).await,
        expected(want, Some("h2"), mint, maxt),
        "{what}: host h2"
    );
    for _ in 0..3 {
        let a = first + rng.below((hours * HOUR) as u64) as i64;
        let b = a + rng.below((10 * HOUR) as u64) as i64;
        assert_eq!(
            read(db, &all(), a, b).await,
            expected(want, None, a, b),
            "{what}: window {a}..{b}"
        );
    }
    // The series API finds the same series over the whole range.
    let series = db.series(&all(), mint, maxt).await.unwrap();
    assert_eq!(series.len(), want.len(), "{what}: series");
}

/// Random samples of `series` series over hours `[from, to)`, ascending
/// per series, some hours skipped; one series in four goes away for good
/// at a random hour (churn).
fn history(rng: &mut Rng, first: i64, from: i64, to: i64, series: u64) -> Vec<IngestSeries> {
    (0..series)
        .filter_map(|i| {
            let mut samples = Vec::new();
            let gone = if i % 4 == 1 {
                from + rng.below((to - from) as u64 + 1) as i64
            } else {
                to
            };
            for h in from..gone {
                if rng.below(6) == 0 {
                    continue;
                }
                let per_hour = 1 + rng.below(14) as i64;
                for k in 0..per_hour {
                    let t = first + h * HOUR + k * (HOUR / per_hour) + rng.below(1000) as i64;
                    let v = match rng.below(4) {
                        0 => (rng.below(1000) as f64) * 0.5,
                        1 => f64::from_bits(rng.next() >> 2),
                        _ => (t / 1000) as f64,
                    };
                    samples.push((t, v));
                }
            }
            (!samples.is_empty()).then(|| IngestSeries {
                labels: labels(i),
                samples,
                exemplars: Vec::new(),
                histograms: Vec::new(),
            })
        })
        .collect()
}

/// Late samples: new timestamps of known series in sealed hours, a few new
/// series, and some samples already stored (duplicates).
fn late(rng: &mut Rng, want: &Expected, first: i64, hours: i64, series: u64) -> Vec<IngestSeries> {
    let mut out = Vec::new();
    for i in 0..series + 3 {
        if rng.below(3) != 0 {
            continue;
        }
        let mut samples: Vec<(i64, f64)> = (0..1 + rng.below(6))
            .map(|_| {
                let t = first + rng.below((hours * HOUR) as u64) as i64;
                (t, rng.below(100) as f64)
            })
            .collect();
        // A sample already stored, sent again with its value.
        if let Some(held) = want.get(&labels(i)) {
            let (t, v) = held[rng.below(held.len() as u64) as usize];
            samples.push((t, f64::from_bits(v)));
        }
        // Another value at a stored timestamp is refused; keep to new ones.
        let held = want.get(&labels(i));
        samples.retain(|&(t, v)| {
            held.is_none_or(|h| match h.binary_search_by_key(&t, |&(t, _)| t) {
                Ok(at) => h[at].1 == v.to_bits(),
                Err(_) => true,
            })
        });
        samples.sort_by_key(|&(t, _)| t);
        samples.dedup_by_key(|&mut (t, _)| t);
        if !samples.is_empty() {
            out.push(IngestSeries {
                labels: labels(i),
                samples,
                exemplars: Vec::new(),
                histograms: Vec::new(),
            });
        }
    }
    out
}

async fn open_reader(store: &Arc<dyn ObjectStore>, clock: &Arc<ManualClock>) -> Storage {
    let reader = ReaderSettings {
        poll_interval: Duration::from_millis(20),
        ..ReaderSettings::default()
    };
    Storage::open_reader(Arc::clone(store), "db", settings(), reader, clock.clone())
        .await
        .unwrap()
}

/// Polls until the reader node reads what the writer wrote.
async fn reader_sees(reader: &Storage, want: &Expected, first: i64, hours: i64, what: &str) {
    let (mint, maxt) = (first - HOUR, first + (hours + 1) * HOUR);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = read(reader, &all(), mint, maxt).await;
        if &got == want {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: the reader node differs");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn one_history(seed: u64) {
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

const CHILD_ENV: &str = "STRATA_COMPACTION_CHILD_DIR";

fn store_url(dir: &Path) -> String {
    format!("file://{}", dir.join("store").display())
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

/// A writer on the store in folder `dir`, on the wall clock.
async fn open_folder(dir: &Path) -> Writer {
    let loc = open_object_store(&store_url(dir), &Default::default()).unwrap();
    Writer::open(loc.store, &loc.path, settings(), Arc::new(SystemClock))
        .await
        .unwrap()
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

/// Series `ids`, each with `per_hour` samples ten minutes apart in each of
/// `hours` (counted from `first`).
fn hourly(
    first: i64,
    ids: std::ops::Range<u64>,
    hours: std::ops::Range<i64>,
    per_hour: i64,
) -> Vec<IngestSeries> {
    ids.map(|i| IngestSeries {
        labels: labels(i),
        samples: hours
            .clone()
            .flat_map(|h| {
                (0..per_hour).map(move |k| {
                    let t = first + h * HOUR + 1_000 + k * 600_000;
                    (t, (i as i64 * 1_000 + h * per_hour + k) as f64)
                })
            })
            .collect(),
        exemplars: Vec::new(),
        histograms: Vec::new(),
    })
    .collect()
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

/// Every chunk and part key of the block starting at hour `block_hour`.
fn block_chunk_keys(block_hour: i64) -> std::ops::Range<Vec<u8>> {
    use strata_storage::keys;
    let prefix = keys::chunk_prefix(keys::Span::Block(block_hour));
    let end = keys::prefix_end(&prefix);
    prefix..end
}

/// The `B` keys of the block starting at hour `block_hour`: per series its
/// value's part ranges (`None` for a value of another form), and how many
/// part keys of their own it has.
async fn block_keys(
    store: &Arc<dyn ObjectStore>,
    block_hour: i64,
) -> std::collections::BTreeMap<u64, (Option<Vec<(i64, i64)>>, usize)> {
    use strata_storage::keys;
    let reader = raw::reader(store).await;
    let mut it = reader.scan(block_chunk_keys(block_hour)).await.unwrap();
    let mut out = std::collections::BTreeMap::new();
    while let Some(kv) = it.next().await.unwrap() {
        let id = keys::chunk_series(&kv.key).unwrap();
        let entry = out.entry(id).or_insert((None, 0));
        match kv.key.len() {
            keys::CHUNK_KEY_LEN => {
                entry.0 = strata_storage::values::decode_parts(&kv.value)
                    .unwrap()
                    .map(|parts| parts.into_iter().map(|(range, _)| range).collect());
            }
            keys::SEGMENT_KEY_LEN => entry.1 += 1,
            _ => {}
        }
    }
    reader.close().await.unwrap();
    out
}

/// Rewrites every series' value of the block starting at hour
/// `block_hour` as a build that kept a block's parts apart while it filled
/// wrote it: each part under a key of its own, the value their list.
async fn parts_apart(store: &Arc<dyn ObjectStore>, block_hour: i64) {
    use strata_storage::{keys, values};
    let db = raw::writer(store).await;
    let mut values_of = Vec::new();
    let mut it = db.scan(block_chunk_keys(block_hour)).await.unwrap();
    while let Some(kv) = it.next().await.unwrap() {
        if kv.key.len() == keys::CHUNK_KEY_LEN {
            values_of.push((keys::chunk_series(&kv.key).unwrap(), kv.value));
        }
    }
    drop(it);
    for (id, value) in values_of {
        let parts = values::decode_parts(&value).unwrap().unwrap();
        let mut batch = slatedb::WriteBatch::new();
        let mut listed = Vec::new();
        for ((first, last), at) in parts {
            let key = keys::segment_key(keys::Span::Block(block_hour), id, first, last);
            batch.put(key, &value[at]);
            listed.push((first, last));
        }
        batch.put(
            keys::chunk_key(keys::Span::Block(block_hour), id),
            values::encode_segmented(&listed, &[]),
        );
        db.write(batch).await.unwrap();
    }
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
