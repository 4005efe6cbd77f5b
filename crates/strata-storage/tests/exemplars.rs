//! Exemplars: kept in the head's bounded ring, logged, written to the store
//! with their bucket's seal, and read back from either, on the writer, after
//! a restart, after a crash, and on a reader node.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use object_store::memory::InMemory;
use object_store::{ObjectStore, ObjectStoreExt};
use strata_codec::{Exemplar, Label, MatchOp, Matcher};
use strata_storage::{
    Clock, Durability, IngestSeries, ManualClock, ReaderSettings, SeriesExemplars, Storage,
    StorageSettings, SystemClock, Writer,
};

const HOUR: i64 = 3_600_000;
const MINUTE: i64 = 60_000;

fn labels(job: &str) -> Vec<Label> {
    vec![
        Label::new("__name__", "http_requests_total"),
        Label::new("job", job),
    ]
}

fn exemplar(t: i64, v: f64, trace: &str) -> Exemplar {
    Exemplar {
        labels: vec![Label::new("trace_id", trace), Label::new("span_id", "s1")],
        t,
        v,
    }
}

fn series(job: &str, samples: Vec<(i64, f64)>, exemplars: Vec<Exemplar>) -> IngestSeries {
    IngestSeries {
        labels: labels(job),
        samples,
        exemplars,
        histograms: Vec::new(),
    }
}

fn job(j: &str) -> Vec<Matcher> {
    vec![Matcher::new(MatchOp::Equal, "job", j).unwrap()]
}

/// `(job, [(t, trace_id)])` of every series `db` returns for `sets`.
async fn read(
    db: &Storage,
    sets: &[Vec<Matcher>],
    start: i64,
    end: i64,
) -> Vec<(String, Vec<(i64, String)>)> {
    let got: Vec<SeriesExemplars> = db.exemplars(sets, start, end).await.unwrap();
    got.into_iter()
        .map(|s| {
            let job = s
                .labels
                .iter()
                .find(|l| l.name == "job")
                .unwrap()
                .value
                .clone();
            let list = s
                .exemplars
                .iter()
                .map(|e| (e.t, e.labels[0].value.clone()))
                .collect();
            (job, list)
        })
        .collect()
}

fn settings() -> StorageSettings {
    StorageSettings {
        seal_check_interval: Duration::from_secs(3600),
        ..StorageSettings::default()
    }
}

fn start() -> i64 {
    let now = SystemClock.now_ms();
    now - now % HOUR - 3 * HOUR
}

/// `api` has exemplars at t0+1m, t0+2m and (next bucket) t0+61m; `web` at
/// t0+3m; `db` none.
async fn write_all(w: &Writer, t0: i64) {
    let out = w
        .write(
            vec![
                series(
                    "api",
                    vec![(t0 + MINUTE, 1.0), (t0 + 2 * MINUTE, 2.0)],
                    vec![
                        exemplar(t0 + MINUTE, 1.0, "a1"),
                        exemplar(t0 + 2 * MINUTE, 2.0, "a2"),
                    ],
                ),
                series(
                    "web",
                    vec![(t0 + 3 * MINUTE, 5.0)],
                    vec![exemplar(t0 + 3 * MINUTE, 0.5, "w1")],
                ),
                series("db", vec![(t0 + 3 * MINUTE, 5.0)], Vec::new()),
            ],
            Durability::Applied,
        )
        .await
        .unwrap();
    assert_eq!(
        (out.appended, out.exemplars, out.exemplars_refused),
        (4, 3, 0)
    );
    // An exemplar alone, in the next bucket.
    let out = w
        .write(
            vec![series(
                "api",
                Vec::new(),
                vec![exemplar(t0 + 61 * MINUTE, 3.0, "a3")],
            )],
            Durability::Durable,
        )
        .await
        .unwrap();
    assert_eq!((out.appended, out.exemplars), (0, 1));
}

fn expected_all(t0: i64) -> Vec<(String, Vec<(i64, String)>)> {
    vec![
        (
            "api".into(),
            vec![
                (t0 + MINUTE, "a1".into()),
                (t0 + 2 * MINUTE, "a2".into()),
                (t0 + 61 * MINUTE, "a3".into()),
            ],
        ),
        ("web".into(), vec![(t0 + 3 * MINUTE, "w1".into())]),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exemplars_are_stored_selected_sealed_and_recovered() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let t0 = start();
    // Before the first bucket is due (its end and the seal grace).
    let clock = Arc::new(ManualClock::new(t0 + 63 * MINUTE));
    let w = Writer::open(Arc::clone(&store), "db", settings(), clock.clone())
        .await
        .unwrap();
    write_all(&w, t0).await;
    let both = [job("api"), job("web")];
    assert_eq!(read(&w, &both, t0, t0 + 2 * HOUR).await, expected_all(t0));
    // One set, a time range, a matcher no series with exemplars has.
    assert_eq!(
        read(&w, &[job("web")], t0, t0 + HOUR).await,
        expected_all(t0)[1..]
    );
    let first_api = read(&w, &[job("api")], t0 + 90_000, t0 + 2 * MINUTE).await;
    assert_eq!(
        first_api,
        vec![("api".into(), vec![(t0 + 2 * MINUTE, "a2".into())])]
    );
    assert!(read(&w, &[job("db")], t0, t0 + 2 * HOUR).await.is_empty());

    // A retry is written (held already) and not stored twice.
    let out = w
        .write(
            vec![series(
                "api",
                Vec::new(),
                vec![exemplar(t0 + 2 * MINUTE, 2.0, "a2")],
            )],
            Durability::Applied,
        )
        .await
        .unwrap();
    assert_eq!((out.exemplars, out.exemplars_refused), (1, 0));
    assert_eq!(w.head().exemplars().len(), 4);
    assert_eq!(read(&w, &both, t0, t0 + 2 * HOUR).await, expected_all(t0));

    // Sealed: the first bucket's exemplars are in the store. One that
    // comes for the sealed bucket (a sender's backlog) is written with its
    // log record.
    clock.set(t0 + HOUR + 10 * MINUTE);
    w.seal_due_now().await.unwrap();
    assert_eq!(w.head().sealed_through(), Some(t0 / HOUR));
    assert_eq!(read(&w, &both, t0, t0 + 2 * HOUR).await, expected_all(t0));
    let out = w
        .write(
            vec![series(
                "web",
                Vec::new(),
                vec![exemplar(t0 + 4 * MINUTE, 1.0, "late")],
            )],
            Durability::Applied,
        )
        .await
        .unwrap();
    assert_eq!((out.exemplars, out.exemplars_refused), (1, 0));
    let mut expected = expected_all(t0);
    expected[1].1.push((t0 + 4 * MINUTE, "late".into()));
    assert_eq!(read(&w, &both, t0, t0 + 2 * HOUR).await, expected);
    // Older than the out-of-order window (the retention by default).
    let out = w
        .write(
            vec![series(
                "web",
                Vec::new(),
                vec![exemplar(t0 - 20 * 24 * HOUR, 1.0, "old")],
            )],
            Durability::Applied,
        )
        .await
        .unwrap();
    assert_eq!((out.exemplars, out.exemplars_refused), (0, 1));
    w.close().await.unwrap();

    // After a restart the ring holds only the open bucket's (replayed from
    // the log); the sealed bucket's are read from the store.
    let w = Writer::open(Arc::clone(&store), "db", settings(), clock.clone())
        .await
        .unwrap();
    assert_eq!(w.head().exemplars().len(), 1);
    assert_eq!(read(&w, &both, t0, t0 + 2 * HOUR).await, expected);

    // A reader node follows: the store's and the log's.
    let reader = Storage::open_reader(
        Arc::clone(&store),
        "db",
        settings(),
        ReaderSettings {
            poll_interval: Duration::from_millis(50),
            ..ReaderSettings::default()
        },
        clock.clone(),
    )
    .await
    .unwrap();
    assert_eq!(read(&reader, &both, t0, t0 + 2 * HOUR).await, expected);
    w.write(
        vec![series(
            "web",
            vec![(t0 + 62 * MINUTE, 1.0)],
            vec![exemplar(t0 + 62 * MINUTE, 1.0, "w2")],
        )],
        Durability::Durable,
    )
    .await
    .unwrap();
    let started = Instant::now();
    loop {
        let got = read(&reader, &[job("web")], t0 + HOUR, t0 + 2 * HOUR).await;
        if got == vec![("web".into(), vec![(t0 + 62 * MINUTE, "w2".into())])] {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "reader never saw it: {got:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    reader.close().await.unwrap();
    w.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ring_is_bounded_and_a_crash_loses_no_durable_exemplar() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let t0 = start();
    let clock = Arc::new(ManualClock::new(t0 + 63 * MINUTE));
    let bounded = StorageSettings {
        max_exemplars: 2,
        ..settings()
    };
    let w = Writer::open(Arc::clone(&store), "db", bounded.clone(), clock.clone())
        .await
        .unwrap();
    write_all(&w, t0).await;
    // The two newest writes are kept: web's and api's last.
    assert_eq!(w.head().exemplars().len(), 2);
    let got = read(&w, &[job("api"), job("web")], t0, t0 + 2 * HOUR).await;
    assert_eq!(
        got,
        vec![
            ("api".into(), vec![(t0 + 61 * MINUTE, "a3".into())]),
            ("web".into(), vec![(t0 + 3 * MINUTE, "w1".into())]),
        ]
    );
    // A crash after the Durable write: the log brings back what the ring
    // can hold. Nothing is closed or flushed.
    let copy: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let metas: Vec<_> = store.list(None).try_collect().await.unwrap();
    for m in metas {
        let bytes = store.get(&m.location).await.unwrap().bytes().await.unwrap();
        copy.put(&m.location, bytes.into()).await.unwrap();
    }
    let w2 = Writer::open(copy, "db", settings(), clock.clone())
        .await
        .unwrap();
    assert_eq!(
        read(&w2, &[job("api"), job("web")], t0, t0 + 2 * HOUR).await,
        expected_all(t0)
    );
    w2.close().await.unwrap();
    w.close().await.unwrap();
}
