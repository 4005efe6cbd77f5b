//! Whole-engine figures for the storage engine, printed as a table:
//! ingest rate through the write coordinator, head memory per series,
//! recovery replay rate, and sealed bytes per sample on a `file://` store.
//!
//! `cargo bench -p strata-storage --bench ingest`. Knobs (environment):
//! `STRATA_BENCH_SERIES` (100000), `STRATA_BENCH_MINUTES` of simulated 10 s
//! scrapes (65: one full 1 h bucket plus its 5 min grace),
//! `STRATA_BENCH_TASKS` writing concurrently (4).
//!
//! Data: node-exporter-like series, 100 per host, 8 labels each; per 100
//! series 30 constants, 15 rarely-moving counters, 20 CPU-seconds counters
//! (0.01 s resolution), 15 byte counters, 10 memory gauges (pages), 5 load
//! averages (two decimals) and 5 full-precision gauges. Scrapes are on
//! schedule (each host at its own offset in the 10 s interval), as
//! Prometheus writes them after its 2 ms timestamp alignment.
// Bench code may unwrap and index: a panic is a failed run.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The `strata` binary's allocator, so the figures are the server's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use strata_storage::{
    open_object_store, Clock, Durability, IngestSeries, ManualClock, Storage, StorageSettings,
    SystemClock, Writer,
};

const HOUR: i64 = 3_600_000;
const SCRAPE_MS: i64 = 10_000;
const SAMPLES_PER_REQUEST: usize = 2_000;
const SERIES_PER_HOST: usize = 100;

mod data;

use data::{scrape, Request, SimSeries, KINDS};

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|p| p.parse().ok()))
        .map_or(0, |pages: u64| pages * 4096)
}

fn folder_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => folder_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn mb(b: f64) -> f64 {
    b / 1e6
}

fn settings() -> StorageSettings {
    StorageSettings {
        // Sealing is driven by the bench, not the timer.
        seal_check_interval: Duration::from_secs(24 * 3600),
        ..StorageSettings::default()
    }
}

fn main() {
    let n_series = env_or("STRATA_BENCH_SERIES", 100_000).max(SERIES_PER_HOST);
    let minutes = env_or("STRATA_BENCH_MINUTES", 65);
    let tasks = env_or("STRATA_BENCH_TASKS", 4).max(1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(run(n_series, minutes, tasks));
}

async fn run(n_series: usize, minutes: usize, tasks: usize) {
    let hosts = n_series / SERIES_PER_HOST;
    let n_series = hosts * SERIES_PER_HOST;
    let rounds = minutes * 60_000 / SCRAPE_MS as usize;
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("file://{}", dir.path().display());
    // SlateDB expires keys by the real clock: simulate the hours just past.
    let now = SystemClock.now_ms();
    let bucket_start = now - now.rem_euclid(HOUR) - 2 * HOUR;
    let clock = Arc::new(ManualClock::new(bucket_start));

    let mut sim: Vec<SimSeries> = (0..hosts)
        .flat_map(|h| (0..SERIES_PER_HOST).map(move |s| (h, s)))
        .map(|(h, s)| SimSeries::new(h, s))
        .collect();
    let rss_before = rss_bytes();
    let loc = open_object_store(&url, &Default::default()).expect("store");
    let db = Arc::new(
        Writer::open(Arc::clone(&loc.store), &loc.path, settings(), clock.clone())
            .await
            .expect("open"),
    );

    println!(
        "ingest: {n_series} series ({hosts} hosts), {rounds} scrapes of 10 s ({minutes} min \
         simulated), requests of {SAMPLES_PER_REQUEST} samples, {tasks} writer tasks, \
         2 runtime workers"
    );
    let mut round_rates = Vec::with_capacity(rounds);
    let mut first_round_rate = 0.0;
    let mut timed = Duration::ZERO;
    let mut build_time = Duration::ZERO;
    let mut bucket0_samples = [0usize; KINDS.len()];
    let wall = Instant::now();
    for round in 0..rounds {
        let scrape = bucket_start + round as i64 * SCRAPE_MS;
        clock.set(scrape + SCRAPE_MS);
        // Build this scrape's requests (what a remote-write decoder hands
        // over: owned labels per series), untimed.
        let built = Instant::now();
        let mut requests: Vec<Request> = Vec::new();
        let mut current = Vec::with_capacity(SAMPLES_PER_REQUEST);
        for (i, s) in sim.iter_mut().enumerate() {
            let slot = i % SERIES_PER_HOST;
            let t = scrape + s.offset_ms;
            let v = s.next_value(slot);
            if t < bucket_start + HOUR {
                if let Some(k) = KINDS.iter().position(|(kind, _, _)| *kind == s.kind) {
                    bucket0_samples[k] += 1;
                }
            }
            current.push(IngestSeries {
                labels: Arc::clone(&s.labels),
                samples: vec![(t, v)],
                exemplars: Vec::new(),
                histograms: Vec::new(),
            });
            if current.len() == SAMPLES_PER_REQUEST {
                requests.push(std::mem::replace(
                    &mut current,
                    Vec::with_capacity(SAMPLES_PER_REQUEST),
                ));
            }
        }
        if !current.is_empty() {
            requests.push(current);
        }
        build_time += built.elapsed();

        let (appended, elapsed) = write_all(&db, requests, tasks).await;
        assert_eq!(appended, n_series, "every sample appended");
        timed += elapsed;
        let rate = n_series as f64 / elapsed.as_secs_f64();
        if round == 0 {
            first_round_rate = rate;
        } else {
            round_rates.push(rate);
        }
    }
    let wall = wall.elapsed();
    let total = (rounds * n_series) as f64;
    let median_rate = median(round_rates.clone());
    let mut sorted = round_rates;
    sorted.sort_by(f64::total_cmp);
    let p10 = sorted.get(sorted.len() / 10).copied().unwrap_or(0.0);
    let p90 = sorted.get(sorted.len() * 9 / 10).copied().unwrap_or(0.0);

    let head_bytes = db.head().memory_bytes();
    let head_series = db.head().num_series();
    let rss_after = rss_bytes();
    let samples_in_head = total;

    println!();
    println!("| measure | value |");
    println!("| --- | --- |");
    println!(
        "| ingest, steady state (median of {} scrapes; p10 / p90) | {:.2} M samples/s ({:.2} / {:.2}) |",
        rounds.saturating_sub(1),
        median_rate / 1e6,
        p10 / 1e6,
        p90 / 1e6
    );
    println!(
        "| ingest, first scrape (creates every series) | {:.2} M samples/s |",
        first_round_rate / 1e6
    );
    println!(
        "| ingest, all scrapes: samples / time in `write` | {:.2} M samples/s ({:.1} s) |",
        total / timed.as_secs_f64() / 1e6,
        timed.as_secs_f64()
    );
    println!(
        "| ingest incl. building requests (labels shared per series) | {:.2} M samples/s ({:.1} s, of which building {:.1} s) |",
        total / wall.as_secs_f64() / 1e6,
        wall.as_secs_f64(),
        build_time.as_secs_f64()
    );
    println!(
        "| head memory (`Head::memory_bytes`) | {:.1} MB, {:.0} B/series ({:.0} samples/series) |",
        mb(head_bytes as f64),
        head_bytes as f64 / head_series as f64,
        samples_in_head / head_series as f64
    );
    let parts = db.head().memory();
    let per = |b: usize| b as f64 / head_series as f64;
    println!(
        "| head by part, B/series: series / labels / chunks / extras / index | {:.0} / {:.0} / {:.0} / {:.0} / {:.0} |",
        per(parts.series),
        per(parts.labels),
        per(parts.chunks),
        per(parts.extras),
        per(parts.index)
    );
    println!(
        "| process RSS delta, open + ingest | {:.1} MB, {:.0} B/series |",
        mb(rss_after.saturating_sub(rss_before) as f64),
        rss_after.saturating_sub(rss_before) as f64 / head_series as f64
    );
    let st = db.stats();
    let log_bytes = st.log_bytes.load(std::sync::atomic::Ordering::Relaxed);
    println!(
        "| log records written | {} records, {:.2} B/sample |",
        st.log_records.load(std::sync::atomic::Ordering::Relaxed),
        log_bytes as f64 / total
    );

    // Recovery: close, reopen, replay the whole log.
    let closed = Instant::now();
    db.close().await.expect("close");
    let close_time = closed.elapsed();
    drop(db);
    let folder_unsealed = folder_bytes(dir.path());
    let opened = Instant::now();
    let db = Arc::new(
        Writer::open(Arc::clone(&loc.store), &loc.path, settings(), clock.clone())
            .await
            .expect("reopen"),
    );
    let open_time = opened.elapsed();
    let replayed = db
        .stats()
        .samples_replayed
        .load(std::sync::atomic::Ordering::Relaxed);
    println!("| close (flush) | {:.2} s |", close_time.as_secs_f64());
    println!(
        "| recovery: open + replay {:.1} M samples of {} series | {:.2} s, {:.2} M samples/s |",
        replayed as f64 / 1e6,
        db.head().num_series(),
        open_time.as_secs_f64(),
        replayed as f64 / open_time.as_secs_f64() / 1e6
    );

    // Seal the first bucket.
    clock.set(bucket_start + HOUR + db.settings().seal_grace.as_millis() as i64 + 1);
    let sealed = Instant::now();
    db.seal_due_now().await.expect("seal");
    let seal_time = sealed.elapsed();
    db.flush().await.expect("flush");
    let st = db.stats();
    let chunk_bytes = st
        .sealed_chunk_bytes
        .load(std::sync::atomic::Ordering::Relaxed);
    let index_bytes = st
        .sealed_index_bytes
        .load(std::sync::atomic::Ordering::Relaxed);
    let bucket0: usize = bucket0_samples.iter().sum();
    println!(
        "| seal of one 1 h bucket | {:.2} s |",
        seal_time.as_secs_f64()
    );
    println!(
        "| sealed chunk bytes / sample (`sealed_chunk_bytes`, {:.1} M samples) | {:.3} B |",
        bucket0 as f64 / 1e6,
        chunk_bytes as f64 / bucket0 as f64
    );
    println!(
        "| sealed index bytes (postings + refreshed `S`), apart | {:.2} MB, {:.3} B/sample, {:.0} B/series |",
        mb(index_bytes as f64),
        index_bytes as f64 / bucket0 as f64,
        index_bytes as f64 / n_series as f64
    );
    let (checked, mismatched) = check_host0(&db, bucket_start).await;
    println!(
        "| read-back of host 0's sealed bucket (samples checked / not as written) | {checked} / {mismatched} |"
    );
    new_series_after_drops(&db, &mut sim, hosts, bucket_start + HOUR, tasks).await;
    db.close().await.expect("close");
    let folder_sealed = folder_bytes(dir.path());
    println!(
        "| store folder: after ingest+close / after seal+close (delta / sample) | {:.1} MB / {:.1} MB ({:.3} B) |",
        mb(folder_unsealed as f64),
        mb(folder_sealed as f64),
        (folder_sealed as f64 - folder_unsealed as f64) / bucket0 as f64
    );

    // Per kind, encode one host's bucket again with both encoders.
    println!();
    println!("chunk bytes per sample by kind (host 0's series, same data):");
    println!("| kind | sealed chunk | head tail chunk |");
    println!("| --- | --- | --- |");
    for ((_, _, name), (sealed, tail)) in KINDS.iter().zip(per_kind_bytes(bucket_start)) {
        println!("| {name} | {sealed:.3} | {tail:.3} |");
    }
}

/// Writes `requests` from `tasks` tasks at once; returns the samples
/// appended and the time taken.
async fn write_all(db: &Arc<Writer>, requests: Vec<Request>, tasks: usize) -> (usize, Duration) {
    let started = Instant::now();
    let mut per_task: Vec<Vec<Request>> = (0..tasks).map(|_| Vec::new()).collect();
    for (i, r) in requests.into_iter().enumerate() {
        per_task[i % tasks].push(r);
    }
    let handles: Vec<_> = per_task
        .into_iter()
        .map(|reqs| {
            let db = Arc::clone(db);
            tokio::spawn(async move {
                let mut n = 0;
                for r in reqs {
                    n += db
                        .write(r, Durability::Applied)
                        .await
                        .expect("write")
                        .appended;
                }
                n
            })
        })
        .collect();
    let mut appended = 0;
    for h in handles {
        appended += h.await.expect("task");
    }
    (appended, started.elapsed())
}

/// Once the seal has dropped every series from the head (a run within one
/// bucket): a first scrape of as many new series, each looked up in the
/// store's labels index before it gets an id, then one of the dropped
/// series coming back, each found there with its old id.
async fn new_series_after_drops(
    db: &Arc<Writer>,
    sim: &mut [SimSeries],
    hosts: usize,
    t: i64,
    tasks: usize,
) {
    if db.head().num_series() > 0 {
        println!(
            "| new series after a seal | skipped: the run's series still have unsealed samples |"
        );
        return;
    }
    let n = sim.len();
    let mut fresh: Vec<SimSeries> = (hosts..2 * hosts)
        .flat_map(|h| (0..SERIES_PER_HOST).map(move |s| (h, s)))
        .map(|(h, s)| SimSeries::new(h, s))
        .collect();
    let (appended, took) = write_all(db, scrape(&mut fresh, t), tasks).await;
    assert_eq!(appended, n);
    println!(
        "| first scrape of {n} new series after the seal dropped the others (labels index looked up for each) | {:.2} M samples/s |",
        n as f64 / took.as_secs_f64() / 1e6
    );
    let returned_before = db
        .stats()
        .series_returned
        .load(std::sync::atomic::Ordering::Relaxed);
    let (appended, took) = write_all(db, scrape(sim, t + 1), tasks).await;
    assert_eq!(appended, n);
    let returned = db
        .stats()
        .series_returned
        .load(std::sync::atomic::Ordering::Relaxed)
        - returned_before;
    assert_eq!(
        returned as usize, n,
        "every dropped series came back with its id"
    );
    println!(
        "| the {n} dropped series coming back (found in the labels index, old ids) | {:.2} M samples/s |",
        n as f64 / took.as_secs_f64() / 1e6
    );
}

/// Reads host 0's sealed bucket back and compares it, bit for bit, with
/// the samples the models generate again.
async fn check_host0(db: &Storage, bucket_start: i64) -> (usize, usize) {
    let instance = SimSeries::new(0, 0).labels.to_vec();
    let instance = &instance
        .iter()
        .find(|l| l.name == "instance")
        .expect("instance")
        .value;
    let m = strata_codec::Matcher::new(strata_codec::MatchOp::Equal, "instance", instance)
        .expect("matcher");
    let found = db
        .select(&[m], bucket_start, bucket_start + HOUR - 1)
        .await
        .expect("select");
    let (mut checked, mut mismatched) = (0, 0);
    for slot in 0..SERIES_PER_HOST {
        let mut s = SimSeries::new(0, slot);
        let got = found.iter().find(|f| *f.labels == *s.labels);
        for round in 0.. {
            let t = bucket_start + round * SCRAPE_MS + s.offset_ms;
            if t >= bucket_start + HOUR {
                break;
            }
            let v = s.next_value(slot);
            checked += 1;
            let ok = got.is_some_and(|g| {
                let i = g.timestamps.binary_search(&t);
                i.is_ok_and(|i| g.values.get(i).map(|x| x.to_bits()) == Some(v.to_bits()))
            });
            mismatched += usize::from(!ok);
        }
    }
    (checked, mismatched)
}

/// Encodes host 0's bucket with the same models, one chunk per series, and
/// gives (sealed, head tail) chunk bytes per sample per kind: what the head
/// appends to, before a freeze moves its samples into the sealed format.
fn per_kind_bytes(bucket_start: i64) -> Vec<(f64, f64)> {
    let mut bytes = vec![(0usize, 0usize); KINDS.len()];
    let mut samples = vec![0usize; KINDS.len()];
    for slot in 0..SERIES_PER_HOST {
        let mut s = SimSeries::new(0, slot);
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        let mut chunk = strata_codec::TailChunk::new();
        for round in 0.. {
            let t = bucket_start + round * SCRAPE_MS + s.offset_ms;
            if t >= bucket_start + HOUR {
                break;
            }
            let v = s.next_value(slot);
            chunk.append(t, v);
            ts.push(t);
            vs.push(v);
        }
        let mut sealed = Vec::new();
        strata_codec::encode_sealed(&ts, &vs, &mut sealed);
        let k = KINDS
            .iter()
            .position(|(kind, _, _)| *kind == s.kind)
            .unwrap_or(0);
        bytes[k].0 += sealed.len();
        bytes[k].1 += chunk.bytes().len();
        samples[k] += ts.len();
    }
    bytes
        .iter()
        .zip(&samples)
        .map(|(&(s, g), &n)| (s as f64 / n.max(1) as f64, g as f64 / n.max(1) as f64))
        .collect()
}
