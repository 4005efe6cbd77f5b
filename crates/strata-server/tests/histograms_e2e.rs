//! Native histograms from a real sender, against the real Prometheus 3:
//! Prometheus scrapes targets that expose native histograms (its own
//! metrics over the protobuf format, and a target of ours with exponential
//! buckets, a float gauge histogram, and a classic histogram it converts to
//! custom buckets), and remote-writes them with `send_native_histograms`
//! to two Strata writers, over 1.0 and 2.0. Every histogram query, instant
//! and range, must answer on Strata what Prometheus answers: on fresh data
//! (the head) and on sealed data (the 2.0 writer seals 20-second buckets),
//! on the writers and on a reader node.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{api_time, http_get, now_ms, prometheus3_bin, query_string, PrometheusProcess};
use common::{free_port, wait_until, StrataProcess};
use prost::Message;

// The exposition format's messages (`io.prometheus.client`), the fields a
// native histogram needs.

#[derive(Clone, PartialEq, Message)]
struct MetricFamily {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(int32, optional, tag = "3")]
    kind: Option<i32>,
    #[prost(message, repeated, tag = "4")]
    metric: Vec<Metric>,
}

#[derive(Clone, PartialEq, Message)]
struct Metric {
    #[prost(message, repeated, tag = "1")]
    label: Vec<LabelPair>,
    #[prost(message, optional, tag = "7")]
    histogram: Option<Histogram>,
}

#[derive(Clone, PartialEq, Message)]
struct LabelPair {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(string, optional, tag = "2")]
    value: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct Histogram {
    #[prost(uint64, optional, tag = "1")]
    sample_count: Option<u64>,
    #[prost(double, optional, tag = "4")]
    sample_count_float: Option<f64>,
    #[prost(double, optional, tag = "2")]
    sample_sum: Option<f64>,
    #[prost(message, repeated, tag = "3")]
    bucket: Vec<Bucket>,
    #[prost(sint32, optional, tag = "5")]
    schema: Option<i32>,
    #[prost(double, optional, tag = "6")]
    zero_threshold: Option<f64>,
    #[prost(uint64, optional, tag = "7")]
    zero_count: Option<u64>,
    #[prost(double, optional, tag = "8")]
    zero_count_float: Option<f64>,
    #[prost(message, repeated, tag = "9")]
    negative_span: Vec<BucketSpan>,
    #[prost(sint64, repeated, tag = "10")]
    negative_delta: Vec<i64>,
    #[prost(double, repeated, tag = "11")]
    negative_count: Vec<f64>,
    #[prost(message, repeated, tag = "12")]
    positive_span: Vec<BucketSpan>,
    #[prost(sint64, repeated, tag = "13")]
    positive_delta: Vec<i64>,
    #[prost(double, repeated, tag = "14")]
    positive_count: Vec<f64>,
}

#[derive(Clone, PartialEq, Message)]
struct Bucket {
    #[prost(uint64, optional, tag = "1")]
    cumulative_count: Option<u64>,
    #[prost(double, optional, tag = "2")]
    upper_bound: Option<f64>,
}

#[derive(Clone, PartialEq, Message)]
struct BucketSpan {
    #[prost(sint32, optional, tag = "1")]
    offset: Option<i32>,
    #[prost(uint32, optional, tag = "2")]
    length: Option<u32>,
}

const HISTOGRAM: i32 = 4;
const GAUGE_HISTOGRAM: i32 = 5;

fn span(offset: i32, length: u32) -> BucketSpan {
    BucketSpan {
        offset: Some(offset),
        length: Some(length),
    }
}

fn label(name: &str, value: &str) -> LabelPair {
    LabelPair {
        name: Some(name.into()),
        value: Some(value.into()),
    }
}

/// Deltas of absolute counts.
fn deltas(counts: &[u64]) -> Vec<i64> {
    let mut prev = 0i64;
    counts
        .iter()
        .map(|&c| {
            let c = i64::try_from(c).unwrap();
            let d = c - prev;
            prev = c;
            d
        })
        .collect()
}

/// An exponential histogram after `n` rounds of observations: schema 3,
/// two positive spans, a negative bucket and the zero bucket.
///
/// No bucket is empty once `n > 0`. Prometheus drops empty buckets at the
/// scrape, and a chunk lays out every bucket any of its samples has; so an
/// empty bucket reads back as present or absent by where chunks are cut,
/// and `histogram_fraction` over the zero bucket depends on it (see
/// `docs/promql.md`, known differences). Strata cuts at its buckets' ends,
/// Prometheus elsewhere.
fn latency(n: u64) -> Histogram {
    let positive: Vec<u64> = (1..=5).map(|i| n * i + n / 3).collect();
    let negative = [n.div_ceil(2)];
    let zero = n;
    let count = positive.iter().sum::<u64>() + negative.iter().sum::<u64>() + zero;
    Histogram {
        sample_count: Some(count),
        sample_sum: Some(0.37 * n as f64 + 0.001 * (n * n) as f64),
        schema: Some(3),
        zero_threshold: Some(2f64.powi(-128)),
        zero_count: Some(zero),
        positive_span: vec![span(-2, 3), span(4, 2)],
        positive_delta: deltas(&positive),
        negative_span: vec![span(1, 1)],
        negative_delta: deltas(&negative),
        ..Histogram::default()
    }
}

/// A float gauge histogram whose counts go up and down.
fn ratio(n: u64) -> Histogram {
    let wave = |k: u64| ((n + k) % 7) as f64 * 0.5 + 0.25;
    let positive: Vec<f64> = (0..3).map(wave).collect();
    let count: f64 = positive.iter().sum::<f64>() + 0.5;
    Histogram {
        sample_count_float: Some(count),
        sample_sum: Some(count * 0.8),
        schema: Some(0),
        zero_threshold: Some(0.001),
        zero_count_float: Some(0.5),
        positive_span: vec![span(-1, 3)],
        positive_count: positive,
        ..Histogram::default()
    }
}

/// A classic histogram (Prometheus converts it to custom buckets).
fn size(n: u64) -> Histogram {
    let bounds = [100.0, 1_000.0, 10_000.0, f64::INFINITY];
    let cumulative = [n, 3 * n, 4 * n + 1, 5 * n + 1];
    Histogram {
        sample_count: Some(5 * n + 1),
        sample_sum: Some(1_234.5 * n as f64),
        bucket: bounds
            .iter()
            .zip(cumulative)
            .map(|(&b, c)| Bucket {
                cumulative_count: Some(c),
                upper_bound: Some(b),
            })
            .collect(),
        ..Histogram::default()
    }
}

/// Scrape `n`'s exposition, delimited protobuf.
fn exposition(n: u64) -> Vec<u8> {
    // `/b` restarts after 30 scrapes: a counter reset.
    let b = if n < 30 { n } else { n - 30 };
    let families = [
        MetricFamily {
            name: Some("app_latency_seconds".into()),
            kind: Some(HISTOGRAM),
            metric: vec![
                Metric {
                    label: vec![label("path", "/a")],
                    histogram: Some(latency(n)),
                },
                Metric {
                    label: vec![label("path", "/b")],
                    histogram: Some(latency(b)),
                },
            ],
        },
        MetricFamily {
            name: Some("app_ratio".into()),
            kind: Some(GAUGE_HISTOGRAM),
            metric: vec![Metric {
                label: vec![],
                histogram: Some(ratio(n)),
            }],
        },
        MetricFamily {
            name: Some("app_size_bytes".into()),
            kind: Some(HISTOGRAM),
            metric: vec![Metric {
                label: vec![],
                histogram: Some(size(n)),
            }],
        },
    ];
    let mut out = Vec::new();
    for f in &families {
        f.encode_length_delimited(&mut out).unwrap();
    }
    out
}

fn serve_target(listener: TcpListener, scrapes: Arc<AtomicU64>) {
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let body = exposition(scrapes.fetch_add(1, Ordering::Relaxed));
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.google.protobuf; \
                 proto=io.prometheus.client.MetricFamily; encoding=delimited\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
    });
}

/// The instant queries, each also run as a range query.
const QUERIES: &[&str] = &[
    "app_latency_seconds",
    "app_ratio",
    "app_size_bytes",
    "histogram_quantile(0.9, app_latency_seconds)",
    "histogram_quantile(0.5, rate(app_latency_seconds[10s]))",
    "histogram_quantile(0.99, sum(rate(app_latency_seconds[10s])))",
    "histogram_quantile(0.5, app_size_bytes)",
    "histogram_quantile(0.75, rate(app_size_bytes[10s]))",
    "histogram_count(rate(app_latency_seconds[10s]))",
    "histogram_sum(app_latency_seconds)",
    "histogram_avg(rate(app_latency_seconds[10s]))",
    "histogram_fraction(0, 0.5, app_latency_seconds)",
    "histogram_fraction(100, 5000, app_size_bytes)",
    "histogram_stddev(app_latency_seconds)",
    "histogram_stdvar(app_ratio)",
    "rate(app_latency_seconds[10s])",
    "increase(app_latency_seconds[15s])",
    "irate(app_latency_seconds[10s])",
    "delta(app_ratio[10s])",
    "idelta(app_ratio[10s])",
    "resets(app_latency_seconds[40s])",
    "sum(app_latency_seconds)",
    "sum by (path) (rate(app_latency_seconds[10s]))",
    "avg(app_latency_seconds)",
    "count(app_latency_seconds)",
    "app_latency_seconds * 2",
    "app_latency_seconds / 4",
    "app_latency_seconds{path=\"/a\"} - ignoring(path) app_latency_seconds{path=\"/b\"}",
    "last_over_time(app_ratio[5s])",
    "count_over_time(app_latency_seconds[10s])",
    "histogram_count(prometheus_http_request_duration_seconds)",
    "histogram_quantile(0.99, sum(rate(prometheus_http_request_duration_seconds[10s])))",
];

/// The answer for `path`, its numbers cut to 10 significant digits (see
/// `common::round_numbers`).
fn answer(port: u16, path: &str) -> serde_json::Value {
    let r = http_get(port, path).unwrap();
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    let mut json = r.json();
    common::round_numbers(&mut json);
    json
}

/// Every query at `t` (instant) and over [t - 40 s, t] (range) on each
/// Strata equals Prometheus', waiting a while for remote write and readers
/// to catch up.
fn compare_all(prom: u16, stratas: &[(&str, u16)], t: i64) {
    let mut paths = Vec::new();
    for q in QUERIES {
        paths.push(format!(
            "/api/v1/query?{}",
            query_string(&[("query", q), ("time", &api_time(t))])
        ));
        paths.push(format!(
            "/api/v1/query_range?{}",
            query_string(&[
                ("query", q),
                ("start", &api_time(t - 40_000)),
                ("end", &api_time(t)),
                ("step", "2"),
            ])
        ));
    }
    let mut failures = Vec::new();
    for path in &paths {
        let want = answer(prom, path);
        let result = &want["data"]["result"];
        assert!(
            result.as_array().is_some_and(|r| !r.is_empty()),
            "Prometheus answers nothing for {path}: {want}"
        );
        for (name, port) in stratas {
            if *name == "1.0" && path.contains("app_size_bytes") {
                // Prometheus does not send custom buckets over 1.0 ("remote
                // write v1 does not support it").
                continue;
            }
            let mut got = serde_json::Value::Null;
            let same = (0..50).any(|_| {
                got = answer(*port, path);
                let same = got["data"] == want["data"];
                if !same {
                    std::thread::sleep(Duration::from_millis(200));
                }
                same
            });
            if !same {
                failures.push(format!(
                    "{name} {path}:\n  Strata:     {}\n  Prometheus: {}",
                    got["data"], want["data"]
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} answers differ:\n{}",
        failures.len(),
        paths.len() * stratas.len(),
        failures.join("\n")
    );
}

#[test]
fn native_histogram_queries_answer_as_prometheus() {
    let prometheus = prometheus3_bin("prometheus");
    let (dir1, dir2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let cache = tempfile::tempdir().unwrap();
    let v1 = StrataProcess::start(dir1.path(), &[]);
    let sealing = [
        ("STRATA_SERVER_ROLE", "writer"),
        ("STRATA_STORAGE_BUCKET_DURATION", "20s"),
        ("STRATA_STORAGE_SEAL_GRACE", "5s"),
        ("STRATA_STORAGE_SEAL_SPREAD", "0s"),
        ("STRATA_STORAGE_SEAL_CHECK_INTERVAL", "1s"),
    ];
    let v2 = StrataProcess::start(dir2.path(), &sealing);
    let cache_dir = cache.path().display().to_string();
    let reader = StrataProcess::start(
        dir2.path(),
        &[
            ("STRATA_SERVER_ROLE", "reader"),
            ("STRATA_STORAGE_BUCKET_DURATION", "20s"),
            ("STRATA_STORAGE_SEAL_GRACE", "5s"),
            ("STRATA_READER_CACHE_DIR", &cache_dir),
        ],
    );
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let target = listener.local_addr().unwrap().port();
    let scrapes = Arc::new(AtomicU64::new(0));
    serve_target(listener, Arc::clone(&scrapes));
    let port = free_port();
    let config = format!(
        r#"global:
  scrape_interval: 1s
scrape_configs:
  - job_name: app
    scrape_native_histograms: true
    convert_classic_histograms_to_nhcb: true
    static_configs:
      - targets: ['127.0.0.1:{target}']
  - job_name: prometheus
    scrape_native_histograms: true
    static_configs:
      - targets: ['127.0.0.1:{port}']
remote_write:
  - url: http://127.0.0.1:{}/api/v1/write
    send_native_histograms: true
    queue_config: {{batch_send_deadline: 500ms, min_backoff: 100ms, max_backoff: 1s}}
  - url: http://127.0.0.1:{}/api/v1/write
    protobuf_message: io.prometheus.write.v2.Request
    send_native_histograms: true
    queue_config: {{batch_send_deadline: 500ms, min_backoff: 100ms, max_backoff: 1s}}
"#,
        v1.port, v2.port
    );
    let prom = PrometheusProcess::start_binary_on(&prometheus, port, &config, &[]);
    let started = now_ms();
    // Enough scrapes for /b's reset and two sealed buckets behind them.
    wait_until(Duration::from_secs(120), "70 scrapes", || {
        scrapes.load(Ordering::Relaxed) >= 70
    });
    let stratas = [("1.0", v1.port), ("2.0", v2.port), ("reader", reader.port)];
    // Fresh: the newest samples, in the head.
    let fresh = (now_ms() - 3_000) / 1000 * 1000;
    compare_all(prom.port, &stratas, fresh);
    // Sealed: a window the 2.0 writer has sealed (20 s buckets, 5 s grace).
    let sealed = (started + 45_000) / 1000 * 1000;
    let sealed_bucket = metric(v2.port, "strata_buckets_sealed_total");
    assert!(sealed_bucket >= 2.0, "buckets sealed: {sealed_bucket}");
    // Three of ours and Prometheus' own per scrape, counted.
    let ingested = metric(v2.port, "strata_histogram_samples_ingested_total");
    assert!(
        ingested >= 3.0 * 60.0,
        "histogram samples ingested: {ingested}"
    );
    compare_all(prom.port, &stratas, sealed);
    drop(prom);
}

/// A metric of Strata's `/metrics`, summed over its series.
fn metric(port: u16, name: &str) -> f64 {
    common::metrics_sum(port, name).unwrap_or(0.0)
}
