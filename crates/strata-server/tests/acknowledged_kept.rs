//! A property of the write path as a whole: whatever is acknowledged is
//! readable until the retention removes it by policy. Random timestamps
//! (before the epoch, at it, older than the retention, late, out of order,
//! in the future) go through the server's one validation step and then
//! storage, between random seals, late passes, compactions, clock steps
//! and restarts; at the end the writer and a reader node read back every
//! acknowledged sample the retention still keeps, with its value.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use object_store::memory::InMemory;
use object_store::ObjectStore;
use proptest::prelude::*;
use strata_codec::{MatchOp, Matcher};
use strata_remote_write::proto::v1::{self, TimeSeries, WriteRequest};
use strata_remote_write::{decode_raw, encode_v1, DecodeLimits, Encoding, Version};
use strata_server::config::{Config, Overrides};
use strata_storage::{
    Clock, Durability, IngestSeries, ManualClock, ReaderSettings, Storage, SystemClock, Writer,
};
use strata_write::apply_limits;

const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;
const SERIES: usize = 3;

#[derive(Clone, Debug)]
enum Step {
    /// A sample of series `.0` at now plus `.1` ms.
    Write(usize, i64),
    /// A sample at a timestamp of its own (the epoch, before it, the ends
    /// of i64).
    WriteAt(usize, i64),
    Advance(i64),
    Seal,
    LatePass,
    Compact,
    Restart,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => (0..SERIES, -17 * DAY..3 * DAY).prop_map(|(s, d)| Step::Write(s, d)),
        4 => (0..SERIES, -2 * HOUR..HOUR).prop_map(|(s, d)| Step::Write(s, d)),
        2 => (
            0..SERIES,
            prop::sample::select(vec![0, -1, -1_000, -DAY, i64::MIN, i64::MIN + 1, i64::MAX])
        )
            .prop_map(|(s, t)| Step::WriteAt(s, t)),
        2 => (1..3 * HOUR).prop_map(Step::Advance),
        1 => Just(Step::Seal),
        1 => Just(Step::LatePass),
        1 => Just(Step::Compact),
        1 => Just(Step::Restart),
    ]
}

fn config() -> Config {
    let env = [
        ("STRATA_STORAGE_RETENTION", "15d"),
        ("STRATA_STORAGE_SEAL_CHECK_INTERVAL", "1h"),
        ("STRATA_STORAGE_SEAL_SPREAD", "0s"),
    ];
    Config::load(
        None,
        env.iter().map(|(k, v)| (k.to_string(), v.to_string())),
        &Overrides::default(),
    )
    .unwrap()
}

fn name(series: usize) -> String {
    format!("prop_series_{series}")
}

/// Writes one sample through the validation step and storage; whether it
/// was acknowledged (appended, or a duplicate of one that was).
async fn write(
    db: &Writer,
    config: &Config,
    series: usize,
    t: i64,
    v: f64,
) -> Result<bool, String> {
    let request = WriteRequest {
        timeseries: vec![TimeSeries {
            labels: vec![v1::Label {
                name: "__name__".into(),
                value: name(series),
            }],
            samples: vec![v1::Sample {
                value: v,
                timestamp: t,
            }],
            ..TimeSeries::default()
        }],
        ..WriteRequest::default()
    };
    let mut body = Vec::new();
    encode_v1(&request, &mut body);
    let limits = DecodeLimits {
        max_body_bytes: 1 << 20,
        max_decoded_bytes: 1 << 20,
    };
    let mut decoded = decode_raw(Version::V1, Encoding::Snappy, &body, &limits).unwrap();
    let series_limits = strata_server::ingest::series_limits(config);
    apply_limits(&mut decoded, &series_limits, None, db.now_ms());
    if !decoded.rejected.is_empty() {
        return Ok(false);
    }
    let series: Vec<IngestSeries<_>> = decoded
        .series
        .into_iter()
        .map(|s| IngestSeries {
            labels: s.labels,
            samples: s.samples,
            exemplars: s.exemplars,
            histograms: s.histograms,
        })
        .collect();
    let outcome = db
        .write(series, Durability::Applied)
        .await
        .map_err(|e| e.to_string())?;
    Ok(outcome.rejected == 0)
}

async fn read_back(db: &Storage) -> BTreeMap<(usize, i64), u64> {
    let mut out = BTreeMap::new();
    for s in 0..SERIES {
        let m = Matcher::new(MatchOp::Equal, "__name__", name(s)).unwrap();
        for got in db.select(&[m], i64::MIN / 2, i64::MAX / 2).await.unwrap() {
            for (t, v) in got.timestamps.iter().zip(&got.values) {
                out.insert((s, *t), v.to_bits());
            }
        }
    }
    out
}

async fn run(steps: Vec<Step>) -> Result<(), TestCaseError> {
    // SlateDB expires keys by the real clock: start at the real time.
    run_from(SystemClock.now_ms(), steps).await
}

async fn run_from(start_ms: i64, steps: Vec<Step>) -> Result<(), TestCaseError> {
    let config = config();
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let clock = Arc::new(ManualClock::new(start_ms));
    let open = |clock: Arc<ManualClock>| {
        let store = Arc::clone(&store);
        let settings = config.storage.clone();
        async move { Writer::open(store, "db", settings, clock).await.unwrap() }
    };
    let retention = i64::try_from(config.storage.retention.as_millis()).unwrap();
    let mut db = open(Arc::clone(&clock)).await;
    // Acknowledged samples: (series, t) -> value bits.
    let mut acked: BTreeMap<(usize, i64), u64> = BTreeMap::new();
    for (i, step) in steps.into_iter().enumerate() {
        match step {
            Step::Write(s, d) | Step::WriteAt(s, d) => {
                let t = match step {
                    Step::Write(..) => clock.now_ms().saturating_add(d),
                    _ => d,
                };
                let v = i as f64 + 0.25;
                let now = clock.now_ms();
                if write(&db, &config, s, t, v)
                    .await
                    .map_err(TestCaseError::fail)?
                {
                    // A 2xx is a promise to keep the sample for a while:
                    // never for one the retention drops at once, or one
                    // before the epoch.
                    prop_assert!(
                        t >= 0 && t >= now - retention,
                        "sample at {} acknowledged at {}, with a retention of {} ms",
                        t,
                        now,
                        retention
                    );
                    acked.entry((s, t)).or_insert(v.to_bits());
                }
            }
            Step::Advance(d) => clock.set(clock.now_ms() + d),
            Step::Seal => db.seal_due_now().await.unwrap(),
            Step::LatePass => {
                db.flush_late_now().await.unwrap();
            }
            Step::Compact => {
                db.compact_now(false).await.unwrap();
            }
            Step::Restart => {
                db.close().await.unwrap();
                db = open(Arc::clone(&clock)).await;
            }
        }
    }
    db.seal_due_now().await.unwrap();
    db.flush().await.unwrap();
    let now = clock.now_ms();
    // What the retention may have removed by now is not asked for; an
    // hour of margin keeps the bucket at its edge out of it.
    let kept_from = now - retention + HOUR;
    let expected: BTreeMap<(usize, i64), u64> = acked
        .into_iter()
        .filter(|((_, t), _)| *t >= kept_from)
        .collect();
    let check = |what: &str, got: &BTreeMap<(usize, i64), u64>| {
        for (k, v) in &expected {
            prop_assert_eq!(
                got.get(k),
                Some(v),
                "{}: acknowledged sample {:?} (now {}) is missing or changed",
                what,
                k,
                now
            );
        }
        Ok(())
    };
    check("writer", &read_back(db.storage()).await)?;
    let reader = Storage::open_reader(
        Arc::clone(&store),
        "db",
        config.storage.clone(),
        ReaderSettings::default(),
        Arc::clone(&clock) as Arc<dyn Clock>,
    )
    .await
    .unwrap();
    // A reader follows the writer's log and checkpoints by polling: it
    // sees what the writer wrote within a few polls.
    let mut tries = 0;
    loop {
        let got = read_back(&reader).await;
        let missing = expected.iter().any(|(k, v)| got.get(k) != Some(v));
        tries += 1;
        if !missing || tries == 50 {
            check("reader", &got)?;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    reader.close().await.unwrap();
    db.close().await.unwrap();
    // And once more after a last restart.
    let db = open(clock).await;
    check("restarted writer", &read_back(db.storage()).await)?;
    db.close().await.unwrap();
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 12,
        max_shrink_iters: 20,
        ..ProptestConfig::default()
    })]

    #[test]
    fn whatever_is_acknowledged_is_readable_until_the_retention_removes_it(
        steps in prop::collection::vec(step(), 10..40)
    ) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async { tokio::time::timeout(Duration::from_secs(120), run(steps)).await })
            .map_err(|_| TestCaseError::fail("timed out"))??;
    }
}

/// A case CI found: a seal's late pass wrote a late segment into a stretch
/// of buckets the compaction had just found empty and then stepped over,
/// so reads went to a block that never held it. Whether the seal and the
/// compaction meet so depends on the hour the run starts at and on timing:
/// it runs from several hours of a day, each a few times.
#[test]
fn a_late_sample_after_a_restart_a_compaction_and_a_late_pass_is_kept() {
    use Step::*;
    let steps = vec![
        Compact,
        Write(2, 1304633),
        LatePass,
        Write(1, -658876767),
        Write(1, -2962440),
        Write(1, -676701657),
        Advance(6735121),
        Write(0, -1407569940),
        Write(2, -1043710151),
        Advance(2005538),
        Write(0, -1166511746),
        Write(2, 1850249),
        Write(0, -6659891),
        Write(0, -710823464),
        Advance(5189081),
        Restart,
        Write(0, -1023950117),
        Write(1, -1056152784),
        Advance(2939566),
        Compact,
        LatePass,
        Write(2, -96092268),
        WriteAt(1, -1000),
        Write(1, 3045151),
        Write(1, -958217221),
    ];
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let today = SystemClock.now_ms() / DAY * DAY;
    let mut failed = Vec::new();
    for hour in [0, 0, 0, 1, 1, 1, 5, 11, 17, 23] {
        let start = today + hour * HOUR + 17 * 60_000;
        if let Err(e) = rt.block_on(run_from(start, steps.clone())) {
            failed.push(format!("from hour {hour}: {e}"));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
