//! Write limits: the per-tenant active-series limit and samples too far in
//! the future.

use std::sync::Arc;
use std::time::Duration;

use object_store::memory::InMemory;
use strata_codec::Label;
use strata_storage::{
    Durability, IngestSeries, ManualClock, Rejection, StorageSettings, WriteLimits, Writer,
    TENANT_LABEL,
};

const HOUR: i64 = 3_600_000;

fn settings() -> StorageSettings {
    StorageSettings {
        seal_check_interval: Duration::from_secs(3600),
        ..StorageSettings::default()
    }
}

fn series(tenant: Option<&str>, i: usize, samples: Vec<(i64, f64)>) -> IngestSeries {
    let mut labels = vec![
        Label::new("__name__", "up"),
        Label::new("instance", format!("host-{i}")),
    ];
    if let Some(t) = tenant {
        labels.insert(1, Label::new(TENANT_LABEL, t));
    }
    IngestSeries {
        labels,
        samples,
        exemplars: Vec::new(),
        histograms: Vec::new(),
    }
}

#[tokio::test]
async fn active_series_limit_per_tenant() {
    let t0 = 10 * HOUR;
    let clock = Arc::new(ManualClock::new(t0));
    let db = Writer::open(Arc::new(InMemory::new()), "db", settings(), clock.clone())
        .await
        .unwrap();
    let limits = WriteLimits {
        max_active_series: 3,
    };
    let batch = |tenant, range: std::ops::Range<usize>, t| {
        range
            .map(|i| series(tenant, i, vec![(t, i as f64)]))
            .collect::<Vec<_>>()
    };

    // Five new series of tenant "a": three fit, two are refused.
    let out = db
        .write_with(batch(Some("a"), 0..5, t0), Durability::Applied, limits)
        .await
        .unwrap();
    assert_eq!((out.appended, out.rejected), (3, 2), "{out:?}");
    let (series, why) = out.first_rejection.unwrap();
    assert!(series.contains("host-3"), "{series}");
    assert_eq!(why, Rejection::ActiveSeriesLimit { limit: 3 });
    assert_eq!(db.head().active_series("a"), 3);

    // The three active series keep ingesting; the refused ones still can't.
    let out = db
        .write_with(
            batch(Some("a"), 0..5, t0 + 15_000),
            Durability::Applied,
            limits,
        )
        .await
        .unwrap();
    assert_eq!((out.appended, out.rejected), (3, 2), "{out:?}");

    // Another tenant and the default tenant have limits of their own.
    let out = db
        .write_with(batch(Some("b"), 0..3, t0), Durability::Applied, limits)
        .await
        .unwrap();
    assert_eq!((out.appended, out.rejected), (3, 0), "{out:?}");
    let out = db
        .write_with(batch(None, 0..4, t0), Durability::Applied, limits)
        .await
        .unwrap();
    assert_eq!((out.appended, out.rejected), (3, 1), "{out:?}");
    assert_eq!(db.head().active_series(""), 3);

    // Once their bucket is sealed the series are no longer active, and the
    // tenant may start others.
    clock.set(t0 + 2 * HOUR);
    db.seal_due_now().await.unwrap();
    assert_eq!(db.head().active_series("a"), 0);
    let out = db
        .write_with(
            batch(Some("a"), 3..6, t0 + 2 * HOUR),
            Durability::Applied,
            limits,
        )
        .await
        .unwrap();
    assert_eq!((out.appended, out.rejected), (3, 0), "{out:?}");

    // Recovery counts the series the log brings back. They are written to
    // the clock's own bucket: one already due for its seal might be sealed
    // before the close, and its series would rightly not be active after.
    db.close().await.unwrap();
    drop(db);
    let store = Arc::new(InMemory::new());
    let db = Writer::open(Arc::clone(&store) as _, "db", settings(), clock.clone())
        .await
        .unwrap();
    let now = t0 + 2 * HOUR;
    db.write_with(batch(Some("a"), 0..2, now), Durability::Applied, limits)
        .await
        .unwrap();
    db.close().await.unwrap();
    drop(db);
    let db = Writer::open(store, "db", settings(), clock).await.unwrap();
    assert_eq!(db.head().active_series("a"), 2);
    let out = db
        .write_with(
            batch(Some("a"), 0..5, now + 1000),
            Durability::Applied,
            limits,
        )
        .await
        .unwrap();
    assert_eq!((out.appended, out.rejected), (3, 2), "{out:?}");
}
