//! Background threads call the idle hook (`set_idle_hook`) when a piece of
//! their work is done: the server gives the allocator's free room of that
//! thread back there. A seal's encoding runs on a worker thread, which
//! must call it after each seal.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::memory::InMemory;
use strata_codec::Label;
use strata_storage::{
    Clock, Durability, IngestSeries, ManualClock, StorageSettings, SystemClock, Writer,
};

const HOUR: i64 = 3_600_000;
const MINUTE: i64 = 60_000;

/// Names of the threads that called the hook, in order.
static CALLERS: parking_lot::Mutex<Vec<String>> = parking_lot::Mutex::new(Vec::new());

fn note_caller() {
    let name = std::thread::current().name().unwrap_or("").to_owned();
    CALLERS.lock().push(name);
}

fn calls_from(thread: &str) -> usize {
    CALLERS.lock().iter().filter(|n| *n == thread).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seal_worker_calls_the_idle_hook_after_each_seal() {
    strata_storage::set_idle_hook(note_caller);
    let now = SystemClock.now_ms();
    let t0 = now - now % HOUR - 3 * HOUR;
    let clock = Arc::new(ManualClock::new(t0 + 30 * MINUTE));
    let settings = StorageSettings {
        seal_check_interval: Duration::from_secs(3600),
        ..StorageSettings::default()
    };
    let writer = Writer::open(Arc::new(InMemory::new()), "db", settings, clock.clone())
        .await
        .unwrap();
    for bucket in 0..2 {
        let from = t0 + bucket * HOUR;
        clock.set(from + 30 * MINUTE);
        let series = (0..10)
            .map(|i| IngestSeries {
                labels: vec![
                    Label::new("__name__", "m"),
                    Label::new("pod", format!("pod-{i}")),
                ],
                samples: (0..30).map(|k| (from + k * MINUTE, k as f64)).collect(),
                exemplars: Vec::new(),
                histograms: Vec::new(),
            })
            .collect();
        writer.write(series, Durability::Applied).await.unwrap();
        let before = calls_from("strata-worker");
        clock.set(from + HOUR + 6 * MINUTE);
        writer.seal_due_now().await.unwrap();
        // The worker calls the hook once its job has sent its result,
        // which may be after the seal has answered.
        let deadline = Instant::now() + Duration::from_secs(10);
        while calls_from("strata-worker") == before && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(
            calls_from("strata-worker") > before,
            "seal {bucket}: no call from the seal's worker; callers: {:?}",
            CALLERS.lock()
        );
    }
    writer.close().await.unwrap();
}
