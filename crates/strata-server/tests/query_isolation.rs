//! Heavy queries do not starve the rest: while twenty heavy range queries
//! run, `/-/healthy` answers within 100 ms and remote writes about as fast
//! as without them; past the queue's bound queries are refused with 503
//! and `Retry-After`, counted on `/metrics`, and the server stays up.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::inproc::{body, now_ms, ts};
use common::StrataProcess;

const SERIES: usize = 2_000;
const POINTS: i64 = 240;
const STEP_MS: i64 = 15_000;

/// 2,000 series of an hour at 15 s, written in batches.
async fn load(url: &str, t0: i64) {
    for batch in 0..(SERIES / 100) {
        let series = (0..100)
            .map(|i| {
                let n = batch * 100 + i;
                let host = format!("host-{}", n % 200);
                let cpu = format!("{}", n / 200);
                let samples: Vec<(i64, f64)> = (0..POINTS)
                    .map(|k| (t0 + k * STEP_MS, (k * (n as i64 + 1)) as f64))
                    .collect();
                ts(
                    &[
                        ("__name__", "heavy_seconds_total"),
                        ("cpu", &cpu),
                        ("instance", &host),
                    ],
                    &samples,
                )
            })
            .collect();
        let (s, m, _) = common::inproc::post(url, body(series), &[]).await;
        assert_eq!(s, 204, "{m}");
    }
}

/// One remote write of 200 fresh samples; its latency.
async fn timed_write(url: &str, i: usize) -> Duration {
    let t = now_ms();
    let series = (0..200)
        .map(|k| {
            ts(
                &[("__name__", "probe_write"), ("k", &k.to_string())],
                &[(t, i as f64)],
            )
        })
        .collect();
    let began = Instant::now();
    let (s, m, _) = common::inproc::post(url, body(series), &[]).await;
    assert_eq!(s, 204, "{m}");
    began.elapsed()
}

async fn timed_health(client: &reqwest::Client, url: &str) -> Duration {
    let began = Instant::now();
    let r = client.get(format!("{url}/-/healthy")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    began.elapsed()
}

/// `n` clients sending heavy range queries until `stop`, on a runtime of
/// their own so that reading the answers does not slow the probes; counts
/// answers by status.
fn heavy_clients(
    url: String,
    n: usize,
    t0: i64,
    stop: Arc<AtomicBool>,
    ok: Arc<AtomicUsize>,
    refused: Arc<AtomicUsize>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let client = reqwest::Client::new();
            let tasks = (0..n).map(|i| {
                let (client, url, stop) = (client.clone(), url.clone(), Arc::clone(&stop));
                let (ok, refused) = (Arc::clone(&ok), Arc::clone(&refused));
                async move {
                    while !stop.load(Ordering::Relaxed) {
                        // Each client asks something a little different,
                        // as a dashboard's panels do.
                        let query = if i % 2 == 0 {
                            format!("sum by (instance) (rate(heavy_seconds_total[{}m]))", 1 + i)
                        } else {
                            format!("max_over_time(heavy_seconds_total[{}m])", 1 + i)
                        };
                        let r = client
                            .get(format!("{url}/api/v1/query_range"))
                            .query(&[
                                ("query", query),
                                ("start", format!("{}", t0 / 1000 + 600)),
                                ("end", format!("{}", (t0 + POINTS * STEP_MS) / 1000)),
                                ("step", "15".into()),
                            ])
                            .send()
                            .await
                            .unwrap();
                        let status = r.status().as_u16();
                        let retry_after = r.headers().get("retry-after").is_some();
                        let text = r.bytes().await.unwrap();
                        match status {
                            200 => {
                                ok.fetch_add(1, Ordering::Relaxed);
                            }
                            503 => {
                                assert!(
                                    retry_after,
                                    "503 without Retry-After: {}",
                                    String::from_utf8_lossy(&text)
                                );
                                let v: serde_json::Value = serde_json::from_slice(&text).unwrap();
                                assert_eq!(v["errorType"], "unavailable", "{v}");
                                refused.fetch_add(1, Ordering::Relaxed);
                                tokio::time::sleep(Duration::from_millis(100)).await;
                            }
                            other => panic!("query answered {other}"),
                        }
                    }
                }
            });
            futures::future::join_all(tasks).await;
        });
    })
}

fn quantile(mut v: Vec<Duration>, q: f64) -> Duration {
    v.sort();
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} not on /metrics"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heavy_queries_starve_neither_probes_nor_writes() {
    let dir = tempfile::tempdir().unwrap();
    let srv = StrataProcess::start(dir.path(), &[]);
    let url = format!("http://127.0.0.1:{}", srv.port);
    let t0 = now_ms() - POINTS * STEP_MS;
    load(&url, t0).await;
    let client = reqwest::Client::new();

    // Without queries.
    let mut quiet_writes = Vec::new();
    let mut quiet_health = Vec::new();
    for i in 0..30 {
        quiet_writes.push(timed_write(&url, i).await);
        quiet_health.push(timed_health(&client, &url).await);
        tokio::time::sleep(Duration::from_millis(30)).await;
    }

    // With twenty heavy queries running all the time.
    let stop = Arc::new(AtomicBool::new(false));
    let (ok, refused) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let clients = heavy_clients(
        url.clone(),
        20,
        t0,
        Arc::clone(&stop),
        Arc::clone(&ok),
        Arc::clone(&refused),
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    let running = metric(
        &client
            .get(format!("{url}/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
        "strata_query_running",
    );
    let mut busy_writes = Vec::new();
    let mut busy_health = Vec::new();
    let began = Instant::now();
    let mut i = 100;
    while began.elapsed() < Duration::from_secs(8) {
        busy_health.push(timed_health(&client, &url).await);
        if i % 2 == 0 {
            busy_writes.push(timed_write(&url, i).await);
        }
        i += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.store(true, Ordering::Relaxed);
    // The queries under way finish.
    tokio::task::spawn_blocking(move || clients.join().unwrap())
        .await
        .unwrap();
    let answered = ok.load(Ordering::Relaxed);

    let (qw, qh) = (
        quantile(quiet_writes.clone(), 0.99),
        quantile(quiet_health, 0.99),
    );
    let (bw50, bw99) = (
        quantile(busy_writes.clone(), 0.5),
        quantile(busy_writes.clone(), 0.99),
    );
    let (bh50, bh_max) = (
        quantile(busy_health.clone(), 0.5),
        quantile(busy_health.clone(), 1.0),
    );
    println!(
        "quiet: write p99 {qw:?}, health p99 {qh:?}; with 20 heavy queries ({running} running, \
         {answered} answered): write p50 {bw50:?} p99 {bw99:?}, health p50 {bh50:?} max {bh_max:?} \
         over {} probes",
        busy_health.len()
    );
    assert!(running >= 10.0, "the queries were running: {running}");
    assert!(answered > 0, "heavy queries were answered");
    assert!(
        bh_max < Duration::from_millis(100),
        "health: {busy_health:?}"
    );
    // Generous: the figures go to the benchmark.
    let bound = (qw * 5).max(Duration::from_millis(500));
    assert!(
        bw99 < bound,
        "writes p99 {bw99:?} against {qw:?} quiet: {busy_writes:?}"
    );
    srv.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_queue_queries_are_refused_with_retry_after() {
    let dir = tempfile::tempdir().unwrap();
    let srv = StrataProcess::start(
        dir.path(),
        &[
            ("STRATA_QUERY_MAX_CONCURRENT", "2"),
            ("STRATA_QUERY_MAX_QUEUED", "4"),
            ("STRATA_QUERY_QUEUE_TIMEOUT", "1s"),
        ],
    );
    let url = format!("http://127.0.0.1:{}", srv.port);
    let t0 = now_ms() - POINTS * STEP_MS;
    load(&url, t0).await;
    let stop = Arc::new(AtomicBool::new(false));
    let (ok, refused) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let clients = heavy_clients(
        url.clone(),
        16,
        t0,
        Arc::clone(&stop),
        Arc::clone(&ok),
        Arc::clone(&refused),
    );
    tokio::time::sleep(Duration::from_secs(5)).await;
    stop.store(true, Ordering::Relaxed);
    tokio::task::spawn_blocking(move || clients.join().unwrap())
        .await
        .unwrap();
    let text = reqwest::get(format!("{url}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let full = metric(&text, "strata_query_refused_total{reason=\"queue_full\"}");
    let timed_out = metric(
        &text,
        "strata_query_refused_total{reason=\"queue_timeout\"}",
    );
    let admitted = metric(&text, "strata_query_admitted_total");
    println!(
        "answered {}, refused {} (queue full {full}, timed out {timed_out}), admitted {admitted}",
        ok.load(Ordering::Relaxed),
        refused.load(Ordering::Relaxed)
    );
    assert!(ok.load(Ordering::Relaxed) > 0);
    assert!(refused.load(Ordering::Relaxed) > 0);
    assert_eq!(
        full + timed_out,
        refused.load(Ordering::Relaxed) as f64,
        "every refusal counted"
    );
    // The server is up and answers a query once the burst is over.
    let r = reqwest::get(format!("{url}/api/v1/query?query=up"))
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(srv.stop().success());
}
