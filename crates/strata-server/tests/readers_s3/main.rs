//! A writer and two reader nodes as separate processes on one S3 bucket
//! (moto, behind a TCP proxy the test can pause): that the readers follow
//! the writer's live log, that they answer as the writer does, that a
//! restarted reader reuses its disk cache, and what an object-store outage
//! does to all of them.
//!
//! The scenario is here; beside it: the writer, readers and store it
//! starts (`cluster`), remote writes and requests that may get no answer
//! (`writes`), the queries the nodes must agree on (`queries`), what a
//! reader fetched as its `/metrics` say (`metrics`), and a reader started
//! while the store may be down (`bare_reader`).
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

mod bare_reader;
mod cluster;
#[path = "../common/mod.rs"]
mod common;
mod metrics;
mod queries;
mod writes;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bare_reader::BareReader;
use cluster::{reader_env, start_strata, writer_env, Cluster, HOUR_MS};
use common::{now_ms, wait_until, StrataProcess};
use metrics::{fetched, metrics};
use queries::{assert_agree, fresh_seqs, instant, query_set, run_queries};
use writes::{series, status_within, write, write_body, WRITE_HEADERS};

/// How long a write may take to reach a reader through the live log: many
/// poll intervals, far under the hour a seal would take.
const FRESH_WITHIN: Duration = Duration::from_secs(5);

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[test]
fn writer_and_two_readers_on_s3() {
    let started = Instant::now();
    let mut c = Cluster::start();
    eprintln!("cluster up in {:?}", started.elapsed());

    // History in buckets that are due for sealing at once: two full hours
    // ending at least an hour ago, 20 counters at 15 s.
    let now = now_ms();
    let hist_start = (now / HOUR_MS - 3) * HOUR_MS;
    let hist_end = hist_start + 2 * HOUR_MS - 15_000;
    // All in one request: the sealer may seal a bucket as soon as it has
    // samples, and then refuses later samples in it.
    let instances: Vec<String> = (0..20).map(|i| format!("i{i}")).collect();
    let history = instances
        .iter()
        .enumerate()
        .map(|(i, instance)| {
            let job = if i % 2 == 0 { "api" } else { "db" };
            let samples: Vec<(i64, f64)> = (0..)
                .map(|k| hist_start + k * 15_000)
                .take_while(|&t| t <= hist_end)
                .enumerate()
                .map(|(k, t)| (t, (k * (i + 1)) as f64))
                .collect();
            series(
                &[("__name__", "hist"), ("job", job), ("instance", instance)],
                &samples,
            )
        })
        .collect();
    let r = write(c.writer_port, history);
    assert_eq!(r.status, 204, "history write: {}", r.text());
    wait_until(
        Duration::from_secs(20),
        "the writer sealed the history",
        || {
            metrics(c.writer_port)
                .get("strata_buckets_sealed_total")
                .is_some_and(|&n| n >= 2.0)
        },
    );

    // Freshness: 50 Applied writes over 10 s, a new series each; two
    // pollers note when each reader first answers it.
    let seen: Arc<Mutex<Vec<HashMap<u32, Instant>>>> =
        Arc::new(Mutex::new(vec![HashMap::new(); 2]));
    let done = Arc::new(AtomicBool::new(false));
    let pollers: Vec<_> = c
        .reader_ports()
        .into_iter()
        .enumerate()
        .map(|(i, port)| {
            let (seen, done) = (Arc::clone(&seen), Arc::clone(&done));
            std::thread::spawn(move || {
                while !done.load(Ordering::Acquire) {
                    let seqs = fresh_seqs(port);
                    let at = Instant::now();
                    let mut seen = seen.lock().expect("lock");
                    for s in seqs {
                        seen[i].entry(s).or_insert(at);
                    }
                    drop(seen);
                    std::thread::sleep(Duration::from_millis(10));
                }
            })
        })
        .collect();
    const FRESH: u32 = 50;
    let mut acked = Vec::new();
    for seq in 0..FRESH {
        let r = write(
            c.writer_port,
            vec![series(
                &[("__name__", "fresh"), ("seq", &seq.to_string())],
                &[(now_ms(), f64::from(seq))],
            )],
        );
        assert_eq!(r.status, 204, "fresh write {seq}: {}", r.text());
        acked.push(Instant::now());
        std::thread::sleep(Duration::from_millis(200));
    }
    wait_until(
        Duration::from_secs(10),
        "both readers saw every write",
        || {
            let seen = seen.lock().expect("lock");
            seen.iter().all(|m| m.len() == FRESH as usize)
        },
    );
    done.store(true, Ordering::Release);
    for p in pollers {
        p.join().expect("poller");
    }
    let mut lags: Vec<Duration> = Vec::new();
    for m in seen.lock().expect("lock").iter() {
        for (seq, at) in m {
            lags.push(at.saturating_duration_since(acked[*seq as usize]));
        }
    }
    lags.sort();
    let (p50, p99) = (percentile(&lags, 0.5), percentile(&lags, 0.99));
    eprintln!(
        "freshness over {} (write, reader) pairs: p50 {p50:?}, p99 {p99:?}",
        lags.len(),
    );
    // How fresh is measured by `bench/readers`; here only that each write
    // reaches the readers from the live log, long before any seal. The bound
    // is loose so that a busy machine cannot fail it.
    let max = lags.last().copied().unwrap_or_default();
    assert!(
        max <= FRESH_WITHIN,
        "a write took {max:?} to reach a reader (p99 {p99:?}); readers should follow the log within {FRESH_WITHIN:?}"
    );

    // Agreement: the readers answer the query set exactly as the writer.
    let now = now_ms();
    let set = query_set(hist_start, hist_end, now);
    let want = run_queries(c.writer_port, &set);
    for port in c.reader_ports() {
        assert_agree("live", &set, &want, port);
    }

    // A reader refuses remote write and names the writer.
    let r = write(
        c.readers[0].port,
        vec![series(&[("__name__", "nope")], &[(now, 1.0)])],
    );
    assert!(
        (400..500).contains(&r.status) && r.text().contains("writer"),
        "remote write to a reader answered {}: {}",
        r.status,
        r.text()
    );

    // Cache reuse. A writer restart flushes its memtable into an SST, so
    // reads now go through the readers' block caches. Reader 0 then runs
    // cold (empty cache folder) and, restarted on the same folder, warm.
    let writer = c.writer.take().expect("writer");
    assert!(writer.stop().success(), "writer stopped uncleanly");
    c.writer = Some(start_strata(
        Some(c.writer_port),
        c.proxy.port,
        &writer_env(),
    ));
    std::thread::sleep(Duration::from_secs(1));
    let cold_dir = tempfile::tempdir().expect("cache dir");
    let rport = c.readers[0].port;
    let proxy_port = c.proxy.port;
    let restart = |p: StrataProcess| {
        assert!(p.stop().success(), "reader stopped uncleanly");
        start_strata(Some(rport), proxy_port, &reader_env(cold_dir.path()))
    };
    let r = c.readers.remove(0);
    c.readers.insert(0, restart(r));
    assert_agree("cold reader", &set, &want, rport);
    let cold = fetched(rport);
    let t = Instant::now();
    let r = c.readers.remove(0);
    c.readers.insert(0, restart(r));
    let warm_open = fetched(rport);
    eprintln!("warm restart ready in {:?}", t.elapsed());
    assert_agree("warm reader", &set, &want, rport);
    let warm = fetched(rport);
    eprintln!(
        "reader start + query set, object store: cold {} requests / {} bytes \
         (cache parts {} hit of {}); warm {} requests / {} bytes (cache parts {} hit of {}, \
         {} of them while opening)",
        cold.requests,
        cold.read_bytes,
        cold.part_hits,
        cold.part_accesses,
        warm.requests,
        warm.read_bytes,
        warm.part_hits,
        warm.part_accesses,
        warm_open.part_hits
    );
    assert!(
        warm.part_hits > 0.0,
        "the restarted reader hit no cached part"
    );
    assert!(
        warm.read_bytes < cold.read_bytes,
        "the restarted reader read as much from the store as a cold one"
    );
    c.cache_dirs.push(cold_dir);

    // Outage: the proxy cuts S3 off. What the readers hold keeps answering;
    // a reader that must reach the store is not ready and answers 503;
    // Durable writes are not acknowledged.
    c.proxy.pause();
    let outage = Instant::now();
    for port in c.reader_ports() {
        assert_agree("outage", &set, &want, port);
    }
    let late = BareReader::start(c.proxy.port);
    let applied = status_within(
        c.writer_port,
        "/api/v1/write",
        &WRITE_HEADERS,
        &write_body(vec![series(
            &[("__name__", "outage"), ("kind", "applied")],
            &[(now_ms(), 1.0)],
        )]),
        Duration::from_secs(5),
    );
    let mut durable_headers = WRITE_HEADERS.to_vec();
    durable_headers.push(("X-Strata-Durability", "durable"));
    let durable = status_within(
        c.writer_port,
        "/api/v1/write",
        &durable_headers,
        &write_body(vec![series(
            &[("__name__", "outage"), ("kind", "durable")],
            &[(now_ms(), 1.0)],
        )]),
        Duration::from_secs(5),
    );
    eprintln!("during the outage the writer answered: Applied {applied:?}, Durable {durable:?} (None: no answer in 5 s)");
    assert!(
        !durable.is_some_and(|s| (200..300).contains(&s)),
        "a Durable write was acknowledged while the store was down"
    );
    let late_query = status_within(
        late.port,
        &instant("hist", hist_end),
        &[],
        &[],
        Duration::from_secs(5),
    );
    let late_ready = status_within(late.port, "/-/ready", &[], &[], Duration::from_secs(5));
    eprintln!("a reader started during the outage: /-/ready {late_ready:?}, query {late_query:?}");
    assert_eq!(
        late_query,
        Some(503),
        "a reader that cannot reach the store must answer 503"
    );
    for port in c.reader_ports() {
        assert_agree("outage, later", &set, &want, port);
    }
    c.assert_all_running();
    eprintln!("outage lasted {:?}", outage.elapsed());

    // Recovery, unaided: writes succeed, readers catch up, the late reader
    // becomes ready, and everyone agrees again.
    c.proxy.resume();
    let resumed = Instant::now();
    wait_until(Duration::from_secs(60), "a Durable write succeeds", || {
        status_within(
            c.writer_port,
            "/api/v1/write",
            &durable_headers,
            &write_body(vec![series(
                &[("__name__", "fresh"), ("seq", "1000")],
                &[(now_ms(), 1000.0)],
            )]),
            Duration::from_secs(10),
        ) == Some(204)
    });
    eprintln!(
        "writes succeed {:?} after the store came back",
        resumed.elapsed()
    );
    let mut ports = c.reader_ports();
    ports.push(late.port);
    wait_until(Duration::from_secs(60), "every reader caught up", || {
        ports.iter().all(|&p| fresh_seqs(p).contains(&1000))
    });
    eprintln!(
        "readers caught up {:?} after the store came back",
        resumed.elapsed()
    );
    let now = now_ms();
    let set = query_set(hist_start, hist_end, now);
    let want = run_queries(c.writer_port, &set);
    for port in ports {
        assert_agree("after the outage", &set, &want, port);
    }
    c.assert_all_running();
    eprintln!("scenario took {:?}", started.elapsed());
}
