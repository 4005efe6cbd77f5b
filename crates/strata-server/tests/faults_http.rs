//! The server over a faulty object store, at the HTTP level: under upload
//! faults a Durable remote write answers 503 with `Retry-After` (never a
//! 2xx for data then lost), Applied writes answer 2xx or 503, the process
//! stays up, and once the store heals writes answer 204 again without a
//! restart; a restart then serves every acknowledged sample once. Queries
//! of sealed data under read faults answer 503 with Prometheus' error
//! envelope or the right data, and answer again after healing.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use strata_storage::{Fault, Faults, Op, When};

mod common;

use common::inproc::{self, Server};

const HOUR: i64 = 3_600_000;
const SERIES: u32 = 10;

/// A server on `dir`'s object store, seen through `faults`.
async fn start_server(dir: tempfile::TempDir, faults: &Faults) -> Server {
    let faults = faults.clone();
    Server::start_layered(
        dir,
        &[
            ("STRATA_STORAGE_WRITE_TIMEOUT", "1s"),
            ("STRATA_STORAGE_READ_TIMEOUT", "1s"),
            ("STRATA_STORAGE_SEAL_CHECK_INTERVAL", "1s"),
            ("STRATA_STORAGE_SEAL_SPREAD", "0s"),
        ],
        std::sync::Arc::new(move |store| faults.wrap(store)),
    )
    .await
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn value(stream: &str, i: u32, t: i64) -> f64 {
    (t / 1000 % 100_000) as f64 + f64::from(i) / 16.0 + if stream == "d" { 0.5 } else { 0.0 }
}

/// A remote-write body: `SERIES` series of `stream`, a sample at each of
/// `times`.
fn body(stream: &str, times: &[i64]) -> Vec<u8> {
    let series = (0..SERIES)
        .map(|i| {
            let samples: Vec<(i64, f64)> =
                times.iter().map(|&t| (t, value(stream, i, t))).collect();
            let i = format!("{i:02}");
            inproc::ts(
                &[("__name__", "fault_test"), ("i", &i), ("stream", stream)],
                &samples,
            )
        })
        .collect();
    inproc::body(series)
}

/// Posts a remote write; the status and the `Retry-After` header.
async fn post(url: &str, body: Vec<u8>, durability: &str) -> (u16, Option<String>) {
    let r = reqwest::Client::new()
        .post(format!("{url}/api/v1/write"))
        .header("Content-Type", "application/x-protobuf")
        .header("Content-Encoding", "snappy")
        .header("X-Prometheus-Remote-Write-Version", "0.1.0")
        .header("X-Strata-Durability", durability)
        .body(body)
        .send()
        .await
        .unwrap();
    let retry_after = r
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    (r.status().as_u16(), retry_after)
}

/// Points per (stream, i) of a matrix answer.
type Found = BTreeMap<(String, String), Vec<(i64, f64)>>;

/// A query answering a matrix: its points, or the error status and body.
async fn matrix(
    url: &str,
    path: &str,
    params: &[(&str, String)],
) -> Result<Found, (u16, serde_json::Value)> {
    let r = reqwest::Client::new()
        .get(format!("{url}{path}"))
        .query(params)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let json: serde_json::Value = r.json().await.unwrap();
    if status != 200 {
        return Err((status, json));
    }
    assert_eq!(json["status"], "success", "{json}");
    let mut out = Found::new();
    for s in json["data"]["result"].as_array().unwrap() {
        let m = &s["metric"];
        let key = (
            m["stream"].as_str().unwrap().to_owned(),
            m["i"].as_str().unwrap().to_owned(),
        );
        let points = s["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    (p[0].as_f64().unwrap() * 1000.0).round() as i64,
                    p[1].as_str().unwrap().parse().unwrap(),
                )
            })
            .collect();
        out.insert(key, points);
    }
    Ok(out)
}

fn secs(ms: i64) -> String {
    format!("{}", ms as f64 / 1000.0)
}

/// `fault_test` evaluated every `step_s` from `start` to `end` (ms).
async fn query_range(
    url: &str,
    start: i64,
    end: i64,
    step_s: u32,
) -> Result<Found, (u16, serde_json::Value)> {
    let params = [
        ("query", "fault_test".to_string()),
        ("start", secs(start)),
        ("end", secs(end)),
        ("step", step_s.to_string()),
    ];
    matrix(url, "/api/v1/query_range", &params).await
}

/// The raw samples of `fault_test` in [start, end] (ms).
async fn raw(url: &str, start: i64, end: i64) -> Result<Found, (u16, serde_json::Value)> {
    let params = [
        ("query", format!("fault_test[{}ms]", end - start + 1)),
        ("time", secs(end)),
    ];
    matrix(url, "/api/v1/query", &params).await
}

/// Every sample of `must` is found; every point found has the value
/// written at its time (raw samples, or steps that land on samples).
fn check(found: &Found, must: &[(&str, i64)], what: &str) {
    for ((stream, i), points) in found {
        let n: u32 = i.parse().unwrap();
        for w in points.windows(2) {
            assert!(w[0].0 < w[1].0, "{what}: {stream}/{i}: {w:?}");
        }
        for &(t, v) in points {
            assert_eq!(v, value(stream, n, t), "{what}: {stream}/{i}@{t}");
        }
    }
    for &(stream, t) in must {
        for i in 0..SERIES {
            let has = found
                .get(&(stream.to_owned(), format!("{i:02}")))
                .is_some_and(|p| p.iter().any(|&(ft, _)| ft == t));
            assert!(has, "{what}: acknowledged sample {stream}/{i}@{t} missing");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_under_upload_faults() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Faults::new();
    let srv = start_server(dir, &faults).await;
    let url = srv.url.clone();
    // Whole seconds, so query_range steps land on the samples.
    let t0 = now_ms() / 1000 * 1000 - 120_000;
    let mut acked: Vec<(&str, i64)> = Vec::new();
    assert_eq!(post(&url, body("d", &[t0]), "durable").await.0, 204);
    acked.push(("d", t0));

    let cases = [
        Fault::Status(503),
        Fault::Status(500),
        Fault::Reset,
        Fault::Stall,
    ];
    for (k, fault) in cases.into_iter().enumerate() {
        let t = t0 + (k as i64 + 1) * 10_000;
        faults.set_all(&Op::WRITES, fault, When::Always);
        let before = faults.injected(Op::Put);
        let asked = Instant::now();
        let (status, retry_after) = post(&url, body("d", &[t]), "durable").await;
        let answered_in = asked.elapsed();
        assert_eq!(status, 503, "{fault:?}: a Durable write answered {status}");
        assert!(retry_after.is_some(), "{fault:?}: 503 without Retry-After");
        let (status, _) = post(&url, body("a", &[t]), "applied").await;
        assert!(
            status == 204 || status == 503,
            "{fault:?}: an Applied write answered {status}"
        );
        if status == 204 {
            acked.push(("a", t));
        }
        assert!(srv.healthy().await, "{fault:?}: not healthy");
        assert!(faults.injected(Op::Put) > before, "{fault:?} never fired");

        // Healed, the sender's retry of the same request is answered 204.
        faults.heal();
        let started = Instant::now();
        loop {
            let (status, _) = post(&url, body("d", &[t]), "durable").await;
            if status == 204 {
                break;
            }
            assert_eq!(status, 503, "{fault:?}: retry answered {status}");
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "{fault:?}: writes still fail {:?} after healing",
                started.elapsed()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        eprintln!(
            "{fault:?} on uploads: Durable write answered 503 in {answered_in:?}; \
             after healing, its retry answered 204 in {:?}",
            started.elapsed()
        );
        acked.push(("d", t));
        assert_eq!(post(&url, body("a", &[t + 1000]), "applied").await.0, 204);
        acked.push(("a", t + 1000));
    }
    let found = raw(&url, t0, t0 + 60_000).await.unwrap();
    check(&found, &acked, "before restart");
    let dir = srv.stop().await;

    let srv = start_server(dir, &Faults::new()).await;
    let found = raw(&srv.url, t0, t0 + 60_000).await.unwrap();
    check(&found, &acked, "after restart");
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queries_under_read_faults() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Faults::new();
    let srv = start_server(dir, &faults).await;
    // One sample a minute through a bucket that ended over an hour ago: the
    // writer seals it at its next check.
    let start = (now_ms() / HOUR - 2) * HOUR;
    let times: Vec<i64> = (0..60).map(|k| start + k * 60_000).collect();
    let end = times[times.len() - 1];
    assert_eq!(post(&srv.url, body("a", &times), "durable").await.0, 204);
    // Later series, so the bucket's chunks fill many of SlateDB's 64 KiB
    // blocks and those of stream "a" are not in the blocks recovery's log
    // scan reads (and caches) after the restart.
    for p in 0..200 {
        let pad = body(&format!("pad{p:03}"), &times);
        assert_eq!(post(&srv.url, pad, "applied").await.0, 204);
    }
    let started = Instant::now();
    loop {
        let metrics = reqwest::get(format!("{}/metrics", srv.url))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if metrics.contains("strata_buckets_sealed_total 1") {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "never sealed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let must: Vec<(&str, i64)> = times.iter().map(|&t| ("a", t)).collect();
    let dir = srv.stop().await;

    // Restarted, the sealed bucket is read from the store.
    let srv = start_server(dir, &faults).await;
    let fresh = now_ms() / 1000 * 1000 - 10_000;
    assert_eq!(post(&srv.url, body("d", &[fresh]), "durable").await.0, 204);
    let mut errors = 0;
    for fault in [
        Fault::Status(503),
        Fault::Status(500),
        Fault::Reset,
        Fault::Stall,
    ] {
        faults.set_all(&[Op::Get, Op::Head], fault, When::Always);
        let asked = Instant::now();
        let answer = query_range(&srv.url, start, end, 60).await;
        eprintln!(
            "{fault:?} on reads: query_range over sealed data answered {} in {:?}",
            answer.as_ref().map_or_else(|e| e.0, |_| 200),
            asked.elapsed()
        );
        match answer {
            Ok(found) => check(&found, &must, &format!("{fault:?}")),
            Err((status, json)) => {
                errors += 1;
                assert_eq!(status, 503, "{fault:?}: {json}");
                assert_eq!(json["status"], "error", "{json}");
                assert_eq!(json["errorType"], "unavailable", "{json}");
                assert!(json["error"].as_str().is_some(), "{json}");
            }
        }
        // Head data is served from memory meanwhile.
        let found = raw(&srv.url, fresh, fresh).await.unwrap();
        check(&found, &[("d", fresh)], &format!("head under {fault:?}"));
        assert!(srv.healthy().await);
    }
    assert!(errors > 0, "no query needed the faulty store");
    assert!(faults.injected(Op::Get) + faults.injected(Op::Head) > 0);

    faults.heal();
    let started = Instant::now();
    let found = loop {
        match query_range(&srv.url, start, end, 60).await {
            Ok(found) => break found,
            Err(e) => assert!(
                started.elapsed() < Duration::from_secs(10),
                "queries still fail after healing: {e:?}"
            ),
        }
    };
    check(&found, &must, "after healing");
    srv.stop().await;
}

/// `/-/healthy` turns 503, naming the failure, once every object-store
/// request has failed for `server.store_unhealthy_after`, while data
/// already accepted stays readable; it is 200 again once the store heals.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthy_reports_a_store_that_keeps_failing() {
    let faults = Faults::new();
    let layer_faults = faults.clone();
    let srv = Server::start_layered(
        tempfile::tempdir().unwrap(),
        &[
            ("STRATA_SERVER_STORE_UNHEALTHY_AFTER", "2s"),
            ("STRATA_STORAGE_WRITE_TIMEOUT", "1s"),
        ],
        std::sync::Arc::new(move |store| layer_faults.wrap(store)),
    )
    .await;
    let url = srv.url.clone();
    let t0 = now_ms() / 1000 * 1000 - 60_000;
    assert_eq!(post(&url, body("h", &[t0]), "durable").await.0, 204);
    assert!(srv.healthy().await);

    faults.set_all(&Op::ALL, Fault::Status(503), When::Always);
    // An Applied write makes the writer flush, and fail.
    let (status, _) = post(&url, body("h", &[t0 + 1_000]), "applied").await;
    assert!(status == 204 || status == 503, "applied write: {status}");
    let started = Instant::now();
    let answer = loop {
        let r = reqwest::get(format!("{url}/-/healthy")).await.unwrap();
        if r.status() == 503 {
            break r.text().await.unwrap();
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "/-/healthy still 200 after 30 s of failures"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "503 before the store had failed for long: {:?}",
        started.elapsed()
    );
    assert!(
        answer.contains("object-store") && answer.contains("503"),
        "{answer}"
    );
    // What was accepted before is still served from memory.
    let found = raw(&url, t0 - 1_000, t0 + 2_000).await.expect("query");
    check(&found, &[("h", t0)], "while the store fails");

    faults.heal();
    let started = Instant::now();
    while !srv.healthy().await {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "/-/healthy not 200 within 30 s of the store healing"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    srv.stop().await;
}

/// A Durable remote write sent every 100 ms, each with its own client
/// timeout, until one answers 204: how long after `since` that took.
/// Panics past `give_up`.
async fn first_durable_204(url: &str, body: &[u8], since: Instant, give_up: Duration) -> Duration {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(3))
        .build()
        .unwrap();
    let mut tries = tokio::task::JoinSet::new();
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    loop {
        tokio::select! {
            _ = tick.tick() => {
                assert!(
                    since.elapsed() < give_up,
                    "no Durable 204 within {give_up:?}"
                );
                let request = client
                    .post(format!("{url}/api/v1/write"))
                    .header("Content-Type", "application/x-protobuf")
                    .header("Content-Encoding", "snappy")
                    .header("X-Prometheus-Remote-Write-Version", "0.1.0")
                    .header("X-Strata-Durability", "durable")
                    .body(body.to_vec());
                tries.spawn(async move {
                    let status = request.send().await.map(|r| r.status().as_u16());
                    (status, since.elapsed())
                });
            }
            Some(done) = tries.join_next() => {
                match done.unwrap() {
                    (Ok(204), at) => return at,
                    (Ok(503) | Err(_), _) => {}
                    (Ok(status), _) => panic!("a Durable write answered {status}"),
                }
            }
        }
    }
}

/// A store that black-holes every request (a network partition: requests
/// neither answer nor fail, and those sent then never answer) for 10 s,
/// then heals. Durable writes answer 503 meanwhile, and 204 again within
/// 2 s of the heal: no request is left waiting on a dead connection and no
/// long backoff is left over. Every acknowledged sample is there after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn durable_writes_recover_soon_after_a_black_hole() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Faults::new();
    let srv = start_server(dir, &faults).await;
    let url = srv.url.clone();
    let t0 = now_ms() / 1000 * 1000 - 120_000;
    let mut acked: Vec<(&str, i64)> = Vec::new();
    let mut t = t0;
    // Durable writes flowing.
    for _ in 0..5 {
        assert_eq!(post(&url, body("d", &[t]), "durable").await.0, 204);
        acked.push(("d", t));
        t += 1_000;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    faults.set_all(&Op::ALL, Fault::BlackHole, When::Always);
    let holed = Instant::now();
    while holed.elapsed() < Duration::from_secs(10) {
        let (status, retry_after) = post(&url, body("d", &[t]), "durable").await;
        assert_eq!(
            status, 503,
            "a Durable write answered {status} in the black hole"
        );
        assert!(retry_after.is_some(), "503 without Retry-After");
        let (status, _) = post(&url, body("a", &[t]), "applied").await;
        assert!(
            status == 204 || status == 503,
            "an Applied write answered {status}"
        );
        if status == 204 {
            acked.push(("a", t));
        }
        t += 1_000;
    }
    assert!(
        faults.injected(Op::Put) > 0,
        "no upload reached the black hole"
    );

    faults.heal();
    let recovered = first_durable_204(
        &url,
        &body("d", &[t]),
        Instant::now(),
        Duration::from_secs(60),
    )
    .await;
    eprintln!("a black hole of 10 s healed: the first Durable 204 came {recovered:?} after");
    acked.push(("d", t));
    assert!(
        recovered < Duration::from_secs(2),
        "Durable writes answered 204 only {recovered:?} after the store healed"
    );

    let found = raw(&url, t0, t).await.unwrap();
    check(&found, &acked, "after the black hole");
    let dir = srv.stop().await;
    let srv = start_server(dir, &Faults::new()).await;
    let found = raw(&srv.url, t0, t).await.unwrap();
    check(&found, &acked, "after a restart");
    srv.stop().await;
}
