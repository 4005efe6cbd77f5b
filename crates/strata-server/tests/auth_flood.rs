//! A flood of wrong bearer tokens against bcrypt cost-10 hashes does not
//! slow down health probes or a client whose token was already verified:
//! bcrypt runs on its own threads, wrong tokens are never remembered, and
//! an address that keeps failing is answered 429 without bcrypt.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::inproc::Server;

const TOKEN: &str = "the-right-token";
/// Flood clients, each sending fresh wrong tokens back to back.
const CLIENTS: usize = 32;
const FLOOD: Duration = Duration::from_secs(5);
/// The most a probe may take while the flood runs.
const BOUND: Duration = Duration::from_millis(100);

#[derive(Default)]
struct Counts {
    unauthorized: AtomicU64,
    rate_limited: AtomicU64,
    busy: AtomicU64,
    other: AtomicU64,
    /// 429 or 503 answers without `Retry-After`.
    no_retry_after: AtomicU64,
}

/// `CLIENTS` clients on a runtime of their own (as outside clients would
/// be) sending wrong tokens until `stop`.
fn flood(url: String, stop: Arc<AtomicBool>, counts: Arc<Counts>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let client = reqwest::Client::new();
            let mut tasks = Vec::new();
            for c in 0..CLIENTS {
                let (client, url, stop, counts) = (
                    client.clone(),
                    url.clone(),
                    Arc::clone(&stop),
                    Arc::clone(&counts),
                );
                tasks.push(tokio::spawn(async move {
                    let mut n = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        n += 1;
                        let Ok(r) = client
                            .get(format!("{url}/api/v1/query"))
                            .query(&[("query", "1")])
                            .bearer_auth(format!("wrong-{c}-{n}"))
                            .send()
                            .await
                        else {
                            counts.other.fetch_add(1, Ordering::Relaxed);
                            continue;
                        };
                        let counter = match r.status().as_u16() {
                            401 => &counts.unauthorized,
                            429 => &counts.rate_limited,
                            503 => &counts.busy,
                            _ => &counts.other,
                        };
                        counter.fetch_add(1, Ordering::Relaxed);
                        if matches!(r.status().as_u16(), 429 | 503)
                            && r.headers().get("retry-after").is_none()
                        {
                            counts.no_retry_after.fetch_add(1, Ordering::Relaxed);
                        }
                        let _ = r.bytes().await;
                    }
                }));
            }
            for t in tasks {
                t.await.unwrap();
            }
        });
    })
}

/// The time `req` takes to answer, and its status.
async fn timed(req: reqwest::RequestBuilder) -> (Duration, u16) {
    let started = Instant::now();
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    let _ = r.bytes().await.unwrap();
    (started.elapsed(), status)
}

fn summary(name: &str, mut d: Vec<Duration>) -> Duration {
    d.sort();
    let max = *d.last().unwrap();
    eprintln!(
        "{name}: {} probes, median {:?}, p100 {max:?}",
        d.len(),
        d[d.len() / 2]
    );
    max
}

fn metric(page: &str, name: &str) -> f64 {
    page.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("{name} not on /metrics"))
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_token_flood_leaves_probes_and_verified_clients_fast() {
    let hash = bcrypt::hash(TOKEN, 10).unwrap();
    let hashes = format!("[\"{hash}\"]");
    let srv = Server::start(&[
        ("STRATA_AUTH_READ_BEARER_TOKEN_HASHES", &hashes),
        ("STRATA_AUTH_WRITE_BEARER_TOKEN_HASHES", &hashes),
    ])
    .await;
    let url = srv.url.clone();
    let probe = reqwest::Client::new();
    let healthy = || probe.get(format!("{url}/-/healthy"));
    let authorised = || {
        probe
            .get(format!("{url}/api/v1/query"))
            .query(&[("query", "1")])
            .bearer_auth(TOKEN)
    };
    // The first use pays for bcrypt; from then on the token is remembered.
    let (first, status) = timed(authorised()).await;
    assert_eq!(status, 200);
    eprintln!("first authorised request (bcrypt cost 10): {first:?}");
    assert_eq!(timed(healthy()).await.1, 200);

    let stop = Arc::new(AtomicBool::new(false));
    let counts = Arc::new(Counts::default());
    let flooding = flood(url.clone(), Arc::clone(&stop), Arc::clone(&counts));
    // Let the flood use up its allowance first.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (mut health, mut query) = (Vec::new(), Vec::new());
    let started = Instant::now();
    while started.elapsed() < FLOOD - Duration::from_millis(500) {
        let (d, status) = timed(healthy()).await;
        assert_eq!(status, 200);
        health.push(d);
        // From 127.0.0.1 like the flood, whose address is limited: the
        // remembered token passes regardless.
        let (d, status) = timed(authorised()).await;
        assert_eq!(status, 200);
        query.push(d);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.store(true, Ordering::Relaxed);
    tokio::task::spawn_blocking(move || flooding.join().unwrap())
        .await
        .unwrap();

    let l = |c: &AtomicU64| c.load(Ordering::Relaxed);
    eprintln!(
        "flood: {} answered 401, {} 429, {} 503, {} other",
        l(&counts.unauthorized),
        l(&counts.rate_limited),
        l(&counts.busy),
        l(&counts.other)
    );
    let health_max = summary("/-/healthy during the flood", health);
    let query_max = summary("authorised query during the flood", query);
    assert!(health_max < BOUND, "/-/healthy took {health_max:?}");
    assert!(query_max < BOUND, "the authorised query took {query_max:?}");
    assert!(l(&counts.unauthorized) > 0, "no wrong token was verified");
    assert!(l(&counts.rate_limited) > 0, "the address was never limited");
    assert_eq!(l(&counts.other), 0);
    assert_eq!(l(&counts.no_retry_after), 0);

    let page = probe
        .get(format!("{url}/metrics"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let bcrypts = metric(&page, "strata_auth_bcrypt_verifications_total");
    let limited = metric(&page, "strata_auth_rate_limited_total");
    eprintln!("bcrypt verifications: {bcrypts}, rate limited: {limited}");
    assert_eq!(limited, l(&counts.rate_limited) as f64);
    // The burst (20) and 10 a second for the flood's ~5 s, the first
    // authorised request's: bcrypt never ran for most of the flood.
    assert!(bcrypts <= 20.0 + 10.0 * 6.0 + 1.0, "{bcrypts} bcrypt runs");
    assert_eq!(
        metric(&page, "strata_http_unauthorized_total"),
        l(&counts.unauthorized) as f64
    );
    srv.stop().await;
}
