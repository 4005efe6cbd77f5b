//! Two writer shards, a distributor and a reader as separate processes:
//! series written through the distributor spread over both shards, the
//! reader answers every series once with its samples, and a stopped shard
//! fails only the writes that carry its series, until it returns.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use common::{
    free_port, http_get, http_request, now_ms, query_matrix, query_string, wait_until, Labels,
    Matrix, StrataProcess,
};
use strata_codec::Label;
use strata_remote_write::proto::v1::{self, WriteRequest};
use strata_remote_write::{encode_v1, encode_v2, V2RequestBuilder, Version};
use strata_server::distributor::shard_map::shard_of;

const SHARDS: u32 = 2;
const SERIES: usize = 40;

/// Shard 0 runs in the `all` role (writer, and queries over every shard),
/// shard 1 as a plain writer.
fn writer(port: u16, dir: &Path, id: u32) -> StrataProcess {
    let role = if id == 0 { "all" } else { "writer" };
    let id = id.to_string();
    StrataProcess::start_on(
        port,
        dir,
        &[
            ("STRATA_SERVER_ROLE", role),
            ("STRATA_READER_POLL_INTERVAL", "100ms"),
            ("STRATA_SHARDS_COUNT", "2"),
            ("STRATA_SHARDS_ID", &id),
            ("STRATA_STORAGE_FLUSH_INTERVAL", "50ms"),
        ],
    )
}

fn labels(i: usize) -> Vec<Label> {
    vec![
        Label::new("__name__", "shard_test"),
        Label::new("i", format!("{i:02}")),
        Label::new("job", "shards"),
    ]
}

/// A series to write: labels and `(timestamp ms, value)` samples.
type SeriesToWrite = (Vec<Label>, Vec<(i64, f64)>);

fn v1_body(series: &[SeriesToWrite]) -> Vec<u8> {
    let req = WriteRequest {
        timeseries: series
            .iter()
            .map(|(labels, samples)| v1::TimeSeries {
                labels: labels
                    .iter()
                    .map(|l| v1::Label {
                        name: l.name.clone(),
                        value: l.value.clone(),
                    })
                    .collect(),
                samples: samples
                    .iter()
                    .map(|&(timestamp, value)| v1::Sample { value, timestamp })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let mut body = Vec::new();
    encode_v1(&req, &mut body);
    body
}

fn post(port: u16, version: Version, body: &[u8]) -> common::HttpResponse {
    http_request(
        port,
        "POST",
        "/api/v1/write",
        &[
            ("Content-Type", version.content_type()),
            ("Content-Encoding", "snappy"),
            (
                "X-Prometheus-Remote-Write-Version",
                version.version_header(),
            ),
        ],
        body,
    )
    .unwrap_or_else(|e| panic!("remote write to :{port}: {e}"))
}

/// An OTLP request with a gauge `otlp_shard_test` of `SERIES` series.
fn otlp_body(t: i64) -> Vec<u8> {
    use prost::Message as _;
    use strata_otlp::proto::*;
    let points = (0..SERIES)
        .map(|i| NumberDataPoint {
            attributes: vec![KeyValue {
                key: "i".into(),
                value: Some(AnyValue {
                    value: Some(any_value::Value::StringValue(format!("{i:02}"))),
                }),
            }],
            start_time_unix_nano: 0,
            time_unix_nano: u64::try_from(t).unwrap() * 1_000_000,
            value: Some(number_data_point::Value::AsDouble(i as f64)),
            flags: 0,
            exemplars: Vec::new(),
        })
        .collect();
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: None,
            scope_metrics: vec![ScopeMetrics {
                scope: None,
                metrics: vec![Metric {
                    name: "otlp.shard.test".into(),
                    description: String::new(),
                    unit: String::new(),
                    data: Some(metric::Data::Gauge(Gauge {
                        data_points: points,
                    })),
                }],
                schema_url: String::new(),
            }],
        }],
    }
    .encode_to_vec()
}

/// The `i` label of every `shard_test` series a server lists.
fn listed(port: u16) -> Vec<String> {
    let path = format!(
        "/api/v1/series?{}",
        query_string(&[("match[]", "shard_test"), ("start", "0")])
    );
    let resp = http_get(port, &path).unwrap_or_else(|e| panic!("GET :{port}{path}: {e}"));
    assert_eq!(resp.status, 200, "{}", resp.text());
    let mut out: Vec<String> = resp.json()["data"]
        .as_array()
        .expect("series list")
        .iter()
        .map(|s| s["i"].as_str().expect("label i").to_owned())
        .collect();
    out.sort();
    out
}

fn to_matrix(data: &BTreeMap<usize, Vec<(i64, f64)>>) -> Matrix {
    data.iter()
        .map(|(&i, samples)| {
            let l: Labels = labels(i).into_iter().map(|l| (l.name, l.value)).collect();
            let s = samples.iter().map(|&(t, v)| (t, v.to_string())).collect();
            (l, s)
        })
        .collect()
}

#[test]
fn two_shards_distributor_and_reader() {
    let data_dir = tempfile::tempdir().expect("temp dir");
    let dir = data_dir.path().join("data");
    let ports = [free_port(), free_port()];
    let mut writers: Vec<Option<StrataProcess>> = (0..SHARDS)
        .map(|i| Some(writer(ports[i as usize], &dir, i)))
        .collect();
    let writer_urls: Vec<String> = ports
        .iter()
        .map(|p| format!("http://127.0.0.1:{p}"))
        .collect();
    let distributor = StrataProcess::start(
        &dir,
        &[
            ("STRATA_SERVER_ROLE", "distributor"),
            ("STRATA_SHARDS_WRITERS", &writer_urls.join(",")),
            ("STRATA_SHARDS_FORWARD_TIMEOUT", "5s"),
        ],
    );
    let owner = |i: usize| shard_of(&labels(i), SHARDS) as usize;

    // Three samples per series, 1.0 for half of them and 2.0 for the rest.
    let t0 = now_ms() - 120_000;
    let mut expected: BTreeMap<usize, Vec<(i64, f64)>> = BTreeMap::new();
    let mut v1_series = Vec::new();
    let mut v2 = V2RequestBuilder::new();
    for i in 0..SERIES {
        let samples: Vec<(i64, f64)> = (0..3)
            .map(|k| (t0 + k * 15_000, (i * 10 + k as usize) as f64))
            .collect();
        if i < SERIES / 2 {
            v1_series.push((labels(i), samples.clone()));
        } else {
            v2.add_series(&labels(i), &samples);
        }
        expected.insert(i, samples);
    }
    let resp = post(distributor.port, Version::V1, &v1_body(&v1_series));
    assert_eq!(resp.status, 204, "1.0 write: {}", resp.text());
    let mut body = Vec::new();
    encode_v2(&v2.build(), &mut body);
    let resp = post(distributor.port, Version::V2, &body);
    assert_eq!(resp.status, 204, "2.0 write: {}", resp.text());
    assert_eq!(
        resp.header("x-prometheus-remote-write-samples-written"),
        Some(&*(3 * (SERIES - SERIES / 2)).to_string()),
        "2.0 written count summed over the shards"
    );

    // Each shard holds exactly the series the map gives it, and both get a
    // share.
    for (shard, port) in ports.iter().enumerate() {
        let want: Vec<String> = (0..SERIES)
            .filter(|&i| owner(i) == shard)
            .map(|i| format!("{i:02}"))
            .collect();
        assert!(
            want.len() >= SERIES / 5,
            "shard {shard} owns only {} of {SERIES} series",
            want.len()
        );
        if shard == 0 {
            // The `all` process answers queries over every shard; its own
            // head counts only its shard's series.
            let metrics = http_get(*port, "/metrics").expect("metrics").text();
            assert!(
                metrics.contains(&format!("\nstrata_head_series {}\n", want.len())),
                "series on shard 0: {metrics}"
            );
        } else {
            assert_eq!(listed(*port), want, "series on shard {shard}");
        }
    }

    // OTLP through the distributor: translated there, each series sent to
    // the shard its labels choose.
    let otlp = otlp_body(t0);
    let resp = http_request(
        distributor.port,
        "POST",
        "/v1/metrics",
        &[("Content-Type", "application/x-protobuf")],
        &otlp,
    )
    .unwrap();
    assert_eq!(resp.status, 200, "OTLP write: {}", resp.text());
    assert_eq!(resp.body, Vec::<u8>::new(), "no partial success");

    // The reader opens both shards and sees every series once.
    let reader = StrataProcess::start(
        &dir,
        &[
            ("STRATA_SERVER_ROLE", "reader"),
            ("STRATA_SHARDS_COUNT", "2"),
            ("STRATA_READER_POLL_INTERVAL", "100ms"),
        ],
    );
    let at = t0 + 60_000;
    let mut last = Matrix::new();
    wait_until(
        Duration::from_secs(30),
        "the reader sees every series",
        || {
            last = query_matrix(reader.port, "shard_test[5m]", at);
            last == to_matrix(&expected)
        },
    );
    assert_eq!(listed(reader.port).len(), SERIES);
    // The OTLP write was answered at Applied durability: the reader sees it
    // once each shard's log has flushed it, a moment later.
    wait_until(
        Duration::from_secs(30),
        "the reader sees every OTLP series over both shards",
        || query_matrix(reader.port, "otlp_shard_test[5m]", at).len() == SERIES,
    );
    // So does shard 0's `all` process, which opens shard 1 read-only once
    // it exists.
    let all_port = ports[0];
    wait_until(
        Duration::from_secs(30),
        "the sharded `all` process has opened shard 1",
        || http_get(all_port, "/api/v1/labels").is_ok_and(|r| r.status == 200),
    );
    wait_until(
        Duration::from_secs(30),
        "the sharded `all` process sees every series",
        || query_matrix(all_port, "shard_test[5m]", at) == to_matrix(&expected),
    );
    let values = http_get(reader.port, "/api/v1/label/i/values").expect("label values");
    assert_eq!(
        values.json()["data"].as_array().map(Vec::len),
        Some(SERIES),
        "{}",
        values.text()
    );

    // Stop shard 1: writes that carry its series fail with 503 naming it;
    // shard 0's series still land.
    let down = 1usize;
    let stopped_port = ports[down];
    writers[down].take().expect("running").stop();
    let t1 = t0 + 45_000;
    let both: Vec<SeriesToWrite> = (0..SERIES)
        .map(|i| (labels(i), vec![(t1, (i * 10 + 3) as f64)]))
        .collect();
    let resp = post(distributor.port, Version::V1, &v1_body(&both));
    assert_eq!(resp.status, 503, "{}", resp.text());
    let msg = resp.text();
    assert!(
        msg.contains(&format!("shard {down} ({})", writer_urls[down])),
        "the answer names the failing shard: {msg}"
    );
    let healthy: Vec<_> = both
        .iter()
        .enumerate()
        .filter(|(i, _)| owner(*i) != down)
        .map(|(_, s)| s.clone())
        .collect();
    let resp = post(distributor.port, Version::V1, &v1_body(&healthy));
    assert_eq!(resp.status, 204, "healthy shard only: {}", resp.text());
    for i in (0..SERIES).filter(|&i| owner(i) != down) {
        if let Some(s) = expected.get_mut(&i) {
            s.push((t1, (i * 10 + 3) as f64));
            s.sort_by_key(|p| p.0);
        }
    }

    // Shard 1 returns on the same address: the retried request succeeds
    // (shard 0's samples again are exact duplicates, accepted silently).
    writers[down] = Some(writer(stopped_port, &dir, down as u32));
    let resp = post(distributor.port, Version::V1, &v1_body(&both));
    assert_eq!(
        resp.status,
        204,
        "after the shard returned: {}",
        resp.text()
    );
    for (i, s) in expected.iter_mut() {
        if !s.iter().any(|p| p.0 == t1) {
            s.push((t1, (i * 10 + 3) as f64));
            s.sort_by_key(|p| p.0);
        }
    }
    let at = t0 + 120_000;
    let expected = to_matrix(&expected);
    wait_until(
        Duration::from_secs(30),
        "the reader sees the writes of both shards",
        || {
            last = query_matrix(reader.port, "shard_test[5m]", at);
            last == expected
        },
    );

    // The distributor counted the parts per shard, including the failure.
    let metrics = http_get(distributor.port, "/metrics")
        .expect("metrics")
        .text();
    assert!(
        metrics.contains(&format!(
            "strata_distributor_shard_requests_total{{shard=\"{down}\",writer=\"{}\",code=\"503\"}} 1",
            writer_urls[down]
        )),
        "{metrics}"
    );
    drop(writers);
}
