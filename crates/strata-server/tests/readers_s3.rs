//! A writer and two reader nodes as separate processes on one S3 bucket
//! (moto, behind a TCP proxy the test can pause): that the readers follow
//! the writer's live log, that they answer as the writer does, that a
//! restarted reader reuses its disk cache, and what an object-store outage
//! does to all of them.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

mod common;

use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::s3::{s3_env, MotoServer, TcpProxy};
use common::{api_time, free_port, http_get, http_request, now_ms, query_string, wait_until};
use common::{HttpResponse, StrataProcess};
use strata_remote_write::encode_v1;
use strata_remote_write::proto::v1::{self, TimeSeries, WriteRequest};

const BUCKET: &str = "strata-readers";
const URL: &str = "s3://strata-readers/db";
const HOUR_MS: i64 = 3_600_000;

/// Writer, readers and the store they share.
struct Cluster {
    _moto: MotoServer,
    proxy: TcpProxy,
    writer_port: u16,
    writer: Option<StrataProcess>,
    readers: Vec<StrataProcess>,
    cache_dirs: Vec<tempfile::TempDir>,
}

impl Cluster {
    fn start() -> Self {
        let moto = MotoServer::start();
        moto.create_bucket(BUCKET);
        let proxy = TcpProxy::start(moto.port);
        let writer = start_strata(None, proxy.port, &writer_env());
        let cache_dirs: Vec<_> = (0..2)
            .map(|_| tempfile::tempdir().expect("cache dir"))
            .collect();
        let readers = cache_dirs
            .iter()
            .map(|d| start_strata(None, proxy.port, &reader_env(d.path())))
            .collect();
        Self {
            _moto: moto,
            proxy,
            writer_port: writer.port,
            writer: Some(writer),
            readers,
            cache_dirs,
        }
    }

    fn reader_ports(&self) -> Vec<u16> {
        self.readers.iter().map(|r| r.port).collect()
    }

    fn assert_all_running(&mut self) {
        for p in self.writer.iter_mut().chain(self.readers.iter_mut()) {
            let exited = p.child.try_wait().expect("wait for strata");
            assert!(exited.is_none(), "strata on :{} exited: {exited:?}", p.port);
        }
    }
}

fn writer_env() -> Vec<(String, String)> {
    vec![
        ("STRATA_SERVER_ROLE".into(), "writer".into()),
        // Seal the historical buckets soon after they are written, without
        // spreading the seal's writes.
        ("STRATA_STORAGE_SEAL_CHECK_INTERVAL".into(), "1s".into()),
        ("STRATA_STORAGE_SEAL_SPREAD".into(), "0s".into()),
    ]
}

fn reader_env(cache_dir: &Path) -> Vec<(String, String)> {
    vec![
        ("STRATA_SERVER_ROLE".into(), "reader".into()),
        (
            "STRATA_READER_CACHE_DIR".into(),
            cache_dir.display().to_string(),
        ),
    ]
}

/// Starts `strata serve` on the bucket through the S3 endpoint on
/// `s3_port`, on `port` or a free one, and waits until it is ready.
fn start_strata(port: Option<u16>, s3_port: u16, env: &[(String, String)]) -> StrataProcess {
    let mut all = s3_env(s3_port);
    all.extend_from_slice(env);
    let refs: Vec<(&str, &str)> = all.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    StrataProcess::start_on(port.unwrap_or_else(free_port), Path::new(URL), &refs)
}

// ---------------------------------------------------------------- writes

/// One series to write; labels are sent sorted by name, as remote write
/// requires.
fn series(pairs: &[(&str, &str)], samples: &[(i64, f64)]) -> TimeSeries {
    let mut pairs = pairs.to_vec();
    pairs.sort();
    TimeSeries {
        labels: pairs
            .iter()
            .map(|(n, v)| v1::Label {
                name: n.to_string(),
                value: v.to_string(),
            })
            .collect(),
        samples: samples
            .iter()
            .map(|&(t, v)| v1::Sample {
                value: v,
                timestamp: t,
            })
            .collect(),
        ..TimeSeries::default()
    }
}

fn write_body(ts: Vec<TimeSeries>) -> Vec<u8> {
    let mut out = Vec::new();
    encode_v1(
        &WriteRequest {
            timeseries: ts,
            ..WriteRequest::default()
        },
        &mut out,
    );
    out
}

const WRITE_HEADERS: [(&str, &str); 3] = [
    ("Content-Type", "application/x-protobuf"),
    ("Content-Encoding", "snappy"),
    ("X-Prometheus-Remote-Write-Version", "0.1.0"),
];

fn write(port: u16, ts: Vec<TimeSeries>) -> HttpResponse {
    http_request(
        port,
        "POST",
        "/api/v1/write",
        &WRITE_HEADERS,
        &write_body(ts),
    )
    .unwrap_or_else(|e| panic!("POST /api/v1/write to :{port}: {e}"))
}

/// The status of one request, or `None` when no answer came within
/// `timeout` (the shared client waits up to a minute).
fn status_within(
    port: u16,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    timeout: Duration,
) -> Option<u16> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(timeout)).ok()?;
    let method = if body.is_empty() { "GET" } else { "POST" };
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).ok()?;
    s.write_all(body).ok()?;
    let mut buf = [0u8; 64];
    let mut got = Vec::new();
    while !got.windows(2).any(|w| w == b"\r\n") {
        let n = s.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        got.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&got)
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
}

// ---------------------------------------------------------------- queries

/// One query of the agreement set: the path and query string.
fn instant(q: &str, t: i64) -> String {
    format!(
        "/api/v1/query?{}",
        query_string(&[("query", q), ("time", &api_time(t))])
    )
}

fn range(q: &str, start: i64, end: i64, step: &str) -> String {
    format!(
        "/api/v1/query_range?{}",
        query_string(&[
            ("query", q),
            ("start", &api_time(start)),
            ("end", &api_time(end)),
            ("step", step),
        ])
    )
}

/// Instant and range queries over the sealed history (read from the
/// store) and the fresh series (in the head): raw selectors, `sum by`,
/// `rate`.
fn query_set(hist_start: i64, hist_end: i64, now: i64) -> Vec<String> {
    vec![
        instant("hist", hist_end),
        instant("hist[10m]", hist_end - 30 * 60_000),
        instant("sum by (job) (rate(hist[5m]))", hist_end - HOUR_MS),
        instant("fresh", now),
        instant("count(fresh)", now),
        instant("fresh[1m]", now),
        range("hist", hist_start, hist_end, "60"),
        range("sum by (job) (hist)", hist_start, hist_end, "120"),
        range("rate(hist[5m])", hist_start, hist_end, "300"),
        range("sum by (job) (rate(hist[5m]))", hist_start, hist_end, "60"),
        range("fresh", now - 60_000, now, "1"),
    ]
}

/// The `data` of every query in `set` on `port`; each must succeed with a
/// non-empty result.
fn run_queries(port: u16, set: &[String]) -> Vec<serde_json::Value> {
    set.iter()
        .map(|path| {
            let r = http_get(port, path).unwrap_or_else(|e| panic!("GET :{port}{path}: {e}"));
            assert_eq!(r.status, 200, "GET :{port}{path}: {}", r.text());
            let json = r.json();
            let data = json["data"].clone();
            assert!(
                data["result"].as_array().is_some_and(|a| !a.is_empty()),
                "GET :{port}{path}: empty result: {json}"
            );
            data
        })
        .collect()
}

fn assert_agree(what: &str, set: &[String], want: &[serde_json::Value], port: u16) {
    let got = run_queries(port, set);
    for ((path, w), g) in set.iter().zip(want).zip(&got) {
        assert!(
            w == g,
            "{what}: :{port} disagrees with the writer on {path}\nwriter: {w}\nreader: {g}"
        );
    }
}

/// Series `fresh{seq=...}` a reader answers right now.
fn fresh_seqs(port: u16) -> Vec<u32> {
    let Ok(r) = http_get(
        port,
        &format!("/api/v1/query?{}", query_string(&[("query", "fresh")])),
    ) else {
        return Vec::new();
    };
    if r.status != 200 {
        return Vec::new();
    }
    r.json()["data"]["result"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s["metric"]["seq"].as_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

// ---------------------------------------------------------------- metrics

/// `/metrics` of `port`, each metric name summed over its label sets.
fn metrics(port: u16) -> BTreeMap<String, f64> {
    let r = http_get(port, "/metrics").expect("GET /metrics");
    let mut out = BTreeMap::new();
    for line in r.text().lines().filter(|l| !l.starts_with('#')) {
        let Some((name, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let name = name.split('{').next().unwrap_or(name).to_owned();
        if let Ok(v) = value.parse::<f64>() {
            *out.entry(name).or_insert(0.0) += v;
        }
    }
    out
}

/// What a reader fetched and where from, as its `/metrics` say.
#[derive(Clone, Copy, Debug, Default)]
struct Fetched {
    requests: f64,
    read_bytes: f64,
    part_hits: f64,
    part_accesses: f64,
}

fn fetched(port: u16) -> Fetched {
    let m = metrics(port);
    let get = |name: &str| m.get(name).copied().unwrap_or(0.0);
    Fetched {
        requests: get("strata_object_store_requests_total"),
        read_bytes: get("strata_object_store_read_bytes_total"),
        part_hits: get("slatedb_object_store_cache_part_hits_total"),
        part_accesses: get("slatedb_object_store_cache_part_accesses_total"),
    }
}

// ---------------------------------------------------------------- a bare reader

/// A reader started without waiting for it to be ready (the object store
/// may be down), killed on drop.
struct BareReader {
    port: u16,
    child: Child,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl BareReader {
    fn start(s3_port: u16) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = dir.path().join("strata.log");
        let port = free_port();
        let out = std::fs::File::create(&log).expect("log file");
        let err = out.try_clone().expect("log file");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
        cmd.args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .args(["--object-store", URL])
            .arg("--cache-dir")
            .arg(dir.path().join("cache"))
            .args(["--role", "reader"])
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err));
        for (k, v) in s3_env(s3_port) {
            cmd.env(k, v);
        }
        let child = cmd.spawn().expect("start strata");
        Self {
            port,
            child,
            log,
            _dir: dir,
        }
    }
}

impl Drop for BareReader {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            let from = text.len().saturating_sub(10_000);
            eprintln!("----- late reader log -----\n{}", &text[from..]);
        }
    }
}

// ---------------------------------------------------------------- the scenario

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
