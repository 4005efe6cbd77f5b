//! Special float values, a sender's retries and staleness markers, read
//! back as sent.

use std::sync::Arc;

use strata_codec::{MatchOp, Matcher};
use strata_storage::{open_object_store, S3Settings, StorageSettings, SystemClock, Writer};

use crate::common::inproc::{body, now_ms, raw, ts, Server};
use crate::send;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn special_values_retries_and_staleness() {
    let srv = Server::start(&[]).await;
    let url = srv.url.clone();
    let t = now_ms() - 60_000;
    let specials: [u64; 7] = [
        0x7ff8_0000_0000_0001,       // a NaN with a payload
        0x7ff0_0000_0000_0002,       // Prometheus' stale marker
        f64::INFINITY.to_bits(),     // +Inf
        f64::NEG_INFINITY.to_bits(), // -Inf
        (-0.0f64).to_bits(),
        1,                     // the smallest subnormal
        0x000f_ffff_ffff_ffff, // the largest subnormal
    ];
    for (i, bits) in specials.iter().enumerate() {
        let b = body(vec![ts(
            &[("__name__", "special"), ("case", &i.to_string())],
            &[(t, 1.0), (t + 1000, f64::from_bits(*bits))],
        )]);
        assert_eq!(send(&url, b.clone(), &[]).await.0, 204);
        // A retry of the same request (as after a 5xx whose write landed)
        // is accepted and adds nothing.
        assert_eq!(send(&url, b, &[]).await.0, 204, "retry accepted");
    }
    let got = raw(&url, "special").await;
    assert_eq!(got.len(), specials.len());
    for (metric, samples) in &got {
        // Range selectors leave stale markers out, as Prometheus does.
        let want = if metric["case"] == "1" { 1 } else { 2 };
        assert_eq!(
            samples.len(),
            want,
            "no duplicates after the retry: {metric} {samples:?}"
        );
    }

    // The stale marker ends its series for instant queries right away.
    let at = |ms: i64| format!("{:.3}", ms as f64 / 1000.0);
    let instant = |time: String| {
        let url = url.clone();
        async move {
            let r: serde_json::Value = reqwest::Client::new()
                .get(format!("{url}/api/v1/query"))
                .query(&[("query", "special"), ("time", &time)])
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            r["data"]["result"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["metric"]["case"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(instant(at(t + 500)).await.len(), specials.len());
    let after = instant(at(t + 2000)).await;
    assert!(
        !after.contains(&"1".to_owned()),
        "stale series gone: {after:?}"
    );
    assert_eq!(after.len(), specials.len() - 1, "{after:?}");

    // Stored bit for bit: read the folder back with the storage library.
    let dir = srv.stop().await;
    let loc = open_object_store(
        &format!("file://{}", dir.path().join("data").display()),
        &S3Settings::default(),
    )
    .unwrap();
    let db = Writer::open(
        loc.store,
        &loc.path,
        StorageSettings::default(),
        Arc::new(SystemClock),
    )
    .await
    .unwrap();
    let m = Matcher::new(MatchOp::Equal, "__name__", "special").unwrap();
    let series = db.select(&[m], t - 1, t + 2000).await.unwrap();
    assert_eq!(series.len(), specials.len());
    for s in &series {
        let case: usize = s
            .labels
            .iter()
            .find(|l| l.name == "case")
            .unwrap()
            .value
            .parse()
            .unwrap();
        let bits: Vec<u64> = s.values.iter().map(|v| v.to_bits()).collect();
        assert_eq!(bits, vec![1.0f64.to_bits(), specials[case]], "case {case}");
    }
    db.close().await.unwrap();
}
