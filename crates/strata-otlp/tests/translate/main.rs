//! Translation of whole requests, in both formats, as Prometheus 3 does it.
//!
//! The tests are here; beside them: the requests they build (`requests`)
//! and the translated series rendered for comparison (`render`).
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod render;
mod requests;

use prost::Message as _;
use strata_codec::LabelPairs;
use strata_otlp::proto::*;
use strata_otlp::{decode, translate, Format, OtlpError, Settings, TranslationStrategy};

use render::rendered;
use requests::{exponential, kv, metric, number, request, service, LIMITS, T};

#[test]
fn counters_gauges_histograms_and_summaries_become_prometheus_series() {
    let req = request(
        service(),
        vec![
            metric(
                "http.requests",
                "1",
                metric::Data::Sum(Sum {
                    data_points: vec![number(vec![kv("http.method", "GET")], 7.0)],
                    aggregation_temporality: TEMPORALITY_CUMULATIVE,
                    is_monotonic: true,
                }),
            ),
            metric(
                "queue.depth",
                "{items}",
                metric::Data::Sum(Sum {
                    data_points: vec![number(vec![], -2.0)],
                    aggregation_temporality: TEMPORALITY_CUMULATIVE,
                    is_monotonic: false,
                }),
            ),
            metric(
                "cpu.utilization",
                "1",
                metric::Data::Gauge(Gauge {
                    data_points: vec![number(vec![], 0.25)],
                }),
            ),
            metric(
                "http.duration",
                "ms",
                metric::Data::Histogram(Histogram {
                    data_points: vec![HistogramDataPoint {
                        attributes: vec![],
                        start_time_unix_nano: 0,
                        time_unix_nano: T,
                        count: 6,
                        sum: Some(12.5),
                        bucket_counts: vec![1, 2, 3],
                        explicit_bounds: vec![0.5, 10.0],
                        flags: 0,
                        exemplars: Vec::new(),
                    }],
                    aggregation_temporality: TEMPORALITY_CUMULATIVE,
                }),
            ),
            metric(
                "rpc.latency",
                "s",
                metric::Data::Summary(Summary {
                    data_points: vec![SummaryDataPoint {
                        attributes: vec![],
                        start_time_unix_nano: 0,
                        time_unix_nano: T,
                        count: 4,
                        sum: 2.0,
                        quantile_values: vec![ValueAtQuantile {
                            quantile: 0.99,
                            value: 0.9,
                        }],
                        flags: 0,
                    }],
                }),
            ),
        ],
    );
    let t = translate(&req, &Settings::default());
    assert_eq!(t.data_points, 5);
    assert_eq!(t.rejected_points, 0);
    assert!(t.write.rejected.is_empty(), "{:?}", t.write.rejected);
    let ms = 1_700_000_000_123_i64;
    let id = "instance=pod-1,job=shop/api";
    let want = vec![
        format!("__name__=cpu_utilization_ratio,{id} [({ms}, 0.25)]"),
        format!("__name__=http_duration_milliseconds_bucket,{id},le=+Inf [({ms}, 6.0)]"),
        format!("__name__=http_duration_milliseconds_bucket,{id},le=0.5 [({ms}, 1.0)]"),
        format!("__name__=http_duration_milliseconds_bucket,{id},le=10 [({ms}, 3.0)]"),
        format!("__name__=http_duration_milliseconds_count,{id} [({ms}, 6.0)]"),
        format!("__name__=http_duration_milliseconds_sum,{id} [({ms}, 12.5)]"),
        format!("__name__=http_requests_total,http_method=GET,{id} [({ms}, 7.0)]"),
        format!("__name__=queue_depth,{id} [({ms}, -2.0)]"),
        format!("__name__=rpc_latency_seconds,{id},quantile=0.99 [({ms}, 0.9)]"),
        format!("__name__=rpc_latency_seconds_count,{id} [({ms}, 4.0)]"),
        format!("__name__=rpc_latency_seconds_sum,{id} [({ms}, 2.0)]"),
        format!(
            "__name__=target_info,deployment_environment=prod,{id},k8s_pod_name=api-7d9 [({ms}, 1.0)]"
        ),
    ];
    assert_eq!(rendered(&t), want);
    let kinds: Vec<(&str, &str, &str)> = t
        .write
        .metadata
        .iter()
        .map(|m| (m.metric.as_str(), m.kind, m.unit.as_str()))
        .collect();
    assert!(kinds.contains(&("http_requests_total", "counter", "")));
    assert!(kinds.contains(&("http_duration_milliseconds", "histogram", "milliseconds")));
    assert!(kinds.contains(&("queue_depth", "gauge", "")));
    assert!(kinds.contains(&("rpc_latency_seconds", "summary", "seconds")));
}

#[test]
fn delta_and_low_scale_exponential_histograms_are_refused_per_metric() {
    let req = request(
        service(),
        vec![
            metric(
                "jobs",
                "",
                metric::Data::Sum(Sum {
                    data_points: vec![number(vec![], 1.0), number(vec![kv("a", "b")], 2.0)],
                    aggregation_temporality: TEMPORALITY_DELTA,
                    is_monotonic: true,
                }),
            ),
            metric(
                "latency",
                "s",
                metric::Data::ExponentialHistogram(ExponentialHistogram {
                    data_points: vec![exponential(-5, vec![1], 0)],
                    aggregation_temporality: TEMPORALITY_CUMULATIVE,
                }),
            ),
            metric(
                "sizes",
                "By",
                metric::Data::ExponentialHistogram(ExponentialHistogram {
                    data_points: vec![exponential(2, vec![1], 0)],
                    aggregation_temporality: TEMPORALITY_DELTA,
                }),
            ),
            metric(
                "ok",
                "",
                metric::Data::Gauge(Gauge {
                    data_points: vec![number(vec![], 1.0)],
                }),
            ),
        ],
    );
    let t = translate(&req, &Settings::default());
    assert_eq!((t.data_points, t.rejected_points), (5, 4));
    let reasons: Vec<String> = t.write.rejected.iter().map(|r| r.to_string()).collect();
    assert!(
        reasons[0].contains("\"jobs\"") && reasons[0].contains("delta"),
        "{reasons:?}"
    );
    assert!(
        reasons[1].contains("\"latency\"") && reasons[1].contains("scale must be >= -4"),
        "{reasons:?}"
    );
    assert!(
        reasons[2].contains("\"sizes\"") && reasons[2].contains("delta"),
        "{reasons:?}"
    );
    let names: Vec<String> = rendered(&t);
    assert!(
        names.iter().any(|n| n.starts_with("__name__=ok,")),
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n.contains("jobs")), "{names:?}");
}

#[test]
fn exponential_histograms_become_native_histograms() {
    use strata_codec::histogram::{HistogramSample, Span};
    let req = request(
        service(),
        vec![metric(
            "latency",
            "s",
            metric::Data::ExponentialHistogram(ExponentialHistogram {
                data_points: vec![
                    exponential(10, vec![1, 1, 1, 1, 2], 0),
                    exponential(1, vec![4], FLAG_NO_RECORDED_VALUE),
                    // Invalid: the count is not the buckets' total.
                    ExponentialHistogramDataPoint {
                        count: 99,
                        ..exponential(1, vec![4], 0)
                    },
                ],
                aggregation_temporality: TEMPORALITY_CUMULATIVE,
            }),
        )],
    );
    let t = translate(&req, &Settings::default());
    assert_eq!((t.data_points, t.rejected_points), (3, 1));
    assert_eq!(t.write.rejected.len(), 1);
    let r = &t.write.rejected[0];
    assert!(r.labels.contains(r#"__name__="latency_seconds""#), "{r}");
    assert!(
        r.reason.starts_with("invalid exponential histogram: "),
        "{r}"
    );
    let native: Vec<_> = t
        .write
        .series
        .iter()
        .filter(|s| {
            s.labels
                .pairs()
                .any(|(n, v)| n == "__name__" && v == "latency_seconds")
        })
        .collect();
    assert_eq!(native.len(), 2);
    for s in &native {
        assert!(s.samples.is_empty());
        assert_eq!(s.histograms.len(), 1);
        assert_eq!(s.histograms[0].0, (T / 1_000_000) as i64);
        assert!(s.labels.pairs().any(|(n, v)| n == "route" && v == "/a"));
        assert!(s.labels.pairs().any(|(n, v)| n == "job" && v == "shop/api"));
    }
    let HistogramSample::Int(h) = &native[0].histograms[0].1 else {
        panic!("an integer histogram")
    };
    // Scale 10 downscaled to 8: OTLP buckets 0..=3 are one, 4 the next.
    assert_eq!(h.schema, 8);
    assert_eq!((h.count, h.zero_count, h.sum), (7, 1, 3.5));
    assert_eq!(h.positive_spans, vec![Span::new(1, 2)]);
    assert_eq!(h.positive_buckets, vec![4, -2]);
    assert!(native[1].histograms[0].1.is_stale());
    let meta = t
        .write
        .metadata
        .iter()
        .find(|m| m.metric == "latency_seconds")
        .unwrap();
    assert_eq!(meta.kind, "histogram");
}

#[test]
fn exponential_histograms_decode_from_json() {
    let json = format!(
        r#"{{"resourceMetrics":[{{"resource":{{"attributes":[
            {{"key":"service.name","value":{{"stringValue":"api"}}}}]}},
          "scopeMetrics":[{{"metrics":[
            {{"name":"lat","unit":"s","exponentialHistogram":{{
              "aggregationTemporality":2,
              "dataPoints":[{{"timeUnixNano":"{T}","count":"4","sum":2.5,"scale":3,
                "zeroCount":"1","positive":{{"offset":-1,"bucketCounts":["2","0","1"]}},
                "negative":{{"offset":2,"bucketCounts":[]}},"zeroThreshold":0.001}}]}}}}]}}]}}]}}"#
    );
    let req = decode(json.as_bytes(), Format::Json, false, &LIMITS).unwrap();
    let t = translate(&req, &Settings::default());
    assert!(t.write.rejected.is_empty(), "{:?}", t.write.rejected);
    let s = t
        .write
        .series
        .iter()
        .find(|s| !s.histograms.is_empty())
        .unwrap();
    let h = s.histograms[0].1.to_float();
    assert_eq!(h.schema, 3);
    assert_eq!((h.count, h.zero_count, h.sum), (4.0, 1.0, 2.5));
    assert_eq!(h.positive_buckets, vec![2.0, 0.0, 1.0]);
    assert_eq!(h.positive_spans[0].offset, 0);
}

#[test]
fn promoted_attributes_scope_metadata_and_stale_points() {
    let mut stale = number(vec![], 5.0);
    stale.flags = FLAG_NO_RECORDED_VALUE;
    let req = request(
        vec![
            kv("service.name", "api"),
            kv("deployment.environment", "prod"),
        ],
        vec![metric(
            "g",
            "",
            metric::Data::Gauge(Gauge {
                data_points: vec![stale],
            }),
        )],
    );
    let settings = Settings {
        promote_resource_attributes: vec!["deployment.environment".into()],
        promote_scope_metadata: true,
        ..Settings::default()
    };
    let t = translate(&req, &settings);
    let g = t
        .write
        .series
        .iter()
        .find(|s| s.labels.pairs().any(|(n, v)| n == "__name__" && v == "g"))
        .expect("series g");
    let labels: Vec<(&str, &str)> = g.labels.pairs().collect();
    assert_eq!(
        labels,
        vec![
            ("__name__", "g"),
            ("deployment_environment", "prod"),
            ("job", "api"),
            ("otel_scope_name", "lib"),
            ("otel_scope_version", "1.2"),
        ]
    );
    assert_eq!(g.samples[0].1.to_bits(), 0x7ff0_0000_0000_0002);
}

#[test]
fn utf8_strategy_keeps_names() {
    let req = request(
        service(),
        vec![metric(
            "http.server.duration",
            "s",
            metric::Data::Gauge(Gauge {
                data_points: vec![number(vec![kv("http.method", "GET")], 1.0)],
            }),
        )],
    );
    let settings = Settings {
        translation_strategy: TranslationStrategy::NoUtf8EscapingWithSuffixes,
        ..Settings::default()
    };
    let t = translate(&req, &settings);
    let all = rendered(&t);
    assert!(
        all.iter().any(|s| s
            .starts_with("__name__=http.server.duration_seconds,http.method=GET,instance=pod-1")),
        "{all:?}"
    );
}

#[test]
fn protobuf_gzip_and_json_bodies_decode_alike() {
    let req = request(
        service(),
        vec![metric(
            "c",
            "",
            metric::Data::Sum(Sum {
                data_points: vec![NumberDataPoint {
                    value: Some(number_data_point::Value::AsInt(42)),
                    // OTLP/JSON writes the trace id in hex.
                    exemplars: vec![Exemplar {
                        trace_id: vec![
                            0x5b, 0x8e, 0xff, 0xf7, 0x98, 0x03, 0x81, 0x03, 0xd2, 0x69, 0xb6, 0x33,
                            0x81, 0x3f, 0xc6, 0x0c,
                        ],
                        value: Some(exemplar::Value::AsDouble(1.0)),
                        ..Default::default()
                    }],
                    ..number(vec![kv("x", "y")], 0.0)
                }],
                aggregation_temporality: TEMPORALITY_CUMULATIVE,
                is_monotonic: true,
            }),
        )],
    );
    let pb = req.encode_to_vec();
    assert_eq!(decode(&pb, Format::Protobuf, false, &LIMITS).unwrap(), req);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &pb).unwrap();
    let gz = gz.finish().unwrap();
    assert_eq!(decode(&gz, Format::Protobuf, true, &LIMITS).unwrap(), req);

    // As an OTLP/JSON exporter writes it: 64-bit integers as strings.
    let json = format!(
        r#"{{"resourceMetrics":[{{"resource":{{"attributes":[
            {{"key":"service.name","value":{{"stringValue":"api"}}}},
            {{"key":"service.namespace","value":{{"stringValue":"shop"}}}},
            {{"key":"service.instance.id","value":{{"stringValue":"pod-1"}}}},
            {{"key":"k8s.pod.name","value":{{"stringValue":"api-7d9"}}}},
            {{"key":"deployment.environment","value":{{"stringValue":"prod"}}}}]}},
          "scopeMetrics":[{{"scope":{{"name":"lib","version":"1.2"}},"metrics":[
            {{"name":"c","description":"c help","unit":"","sum":{{
              "aggregationTemporality":2,"isMonotonic":true,
              "dataPoints":[{{"attributes":[{{"key":"x","value":{{"stringValue":"y"}}}}],
                "startTimeUnixNano":"{}","timeUnixNano":"{T}","asInt":"42",
                "exemplars":[{{"traceId":"5b8efff798038103d269b633813fc60c","asDouble":1}}]}}]}}}}]}}]}}]}}"#,
        T - 60_000_000_000
    );
    let from_json = decode(json.as_bytes(), Format::Json, false, &LIMITS).unwrap();
    assert_eq!(from_json, req);
}

#[test]
fn bad_bodies_are_refused_with_the_reason() {
    let e = decode(b"\xff\xff\xff", Format::Protobuf, false, &LIMITS).unwrap_err();
    assert!(
        matches!(e, OtlpError::Protobuf(_)) && e.status() == 400,
        "{e}"
    );
    let e = decode(b"{\"resourceMetrics\": 3}", Format::Json, false, &LIMITS).unwrap_err();
    assert!(matches!(e, OtlpError::Json(_)) && e.status() == 400, "{e}");
    let e = decode(b"not gzip", Format::Protobuf, true, &LIMITS).unwrap_err();
    assert!(matches!(e, OtlpError::CorruptGzip(_)), "{e}");
    let big = vec![0u8; (LIMITS.max_body_bytes) + 1];
    assert_eq!(
        decode(&big, Format::Protobuf, false, &LIMITS)
            .unwrap_err()
            .status(),
        413
    );
    // A gzip bomb stops at the limit.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    std::io::Write::write_all(&mut gz, &vec![0u8; LIMITS.max_decoded_bytes + 10]).unwrap();
    let gz = gz.finish().unwrap();
    let e = decode(&gz, Format::Protobuf, true, &LIMITS).unwrap_err();
    assert!(matches!(e, OtlpError::DecodedTooLarge { .. }), "{e}");
    assert!(matches!(
        Format::negotiate(Some("text/plain"), None),
        Err(OtlpError::UnsupportedContentType(_))
    ));
    assert!(matches!(
        Format::negotiate(Some("application/json"), Some("br")),
        Err(OtlpError::UnsupportedEncoding(_))
    ));
    assert_eq!(
        Format::negotiate(Some("application/x-protobuf"), Some("gzip")).unwrap(),
        (Format::Protobuf, true)
    );
}

#[test]
fn exemplars_go_with_sums_bucket_by_bucket_and_with_native_histograms() {
    let ex = |v: f64, attrs: Vec<KeyValue>| Exemplar {
        filtered_attributes: attrs,
        time_unix_nano: T,
        value: Some(exemplar::Value::AsDouble(v)),
        span_id: vec![0, 0, 0, 0, 0, 0, 0, 0x2a],
        trace_id: vec![0xab; 16],
    };
    let long = kv("note", &"x".repeat(100));
    let req = request(
        service(),
        vec![
            metric(
                "jobs",
                "",
                metric::Data::Sum(Sum {
                    data_points: vec![NumberDataPoint {
                        exemplars: vec![ex(3.0, vec![kv("user", "u1")]), ex(4.0, vec![long])],
                        ..number(vec![], 7.0)
                    }],
                    aggregation_temporality: TEMPORALITY_CUMULATIVE,
                    is_monotonic: true,
                }),
            ),
            metric(
                "level",
                "",
                metric::Data::Gauge(Gauge {
                    data_points: vec![NumberDataPoint {
                        exemplars: vec![ex(1.0, vec![])],
                        ..number(vec![], 1.0)
                    }],
                }),
            ),
            metric(
                "dur",
                "",
                metric::Data::Histogram(Histogram {
                    data_points: vec![HistogramDataPoint {
                        attributes: vec![],
                        start_time_unix_nano: 0,
                        time_unix_nano: T,
                        count: 6,
                        sum: Some(12.5),
                        bucket_counts: vec![1, 2, 3],
                        explicit_bounds: vec![0.5, 10.0],
                        exemplars: vec![ex(0.1, vec![]), ex(0.5, vec![]), ex(20.0, vec![])],
                        flags: 0,
                    }],
                    aggregation_temporality: TEMPORALITY_CUMULATIVE,
                }),
            ),
            metric(
                "lat",
                "",
                metric::Data::ExponentialHistogram(ExponentialHistogram {
                    data_points: vec![ExponentialHistogramDataPoint {
                        exemplars: vec![ex(2.0, vec![])],
                        ..exponential(0, vec![1], 0)
                    }],
                    aggregation_temporality: TEMPORALITY_CUMULATIVE,
                }),
            ),
        ],
    );
    let t = translate(&req, &Settings::default());
    assert!(t.write.rejected.is_empty(), "{:?}", t.write.rejected);
    // The gauge's exemplar is not read.
    assert_eq!((t.write.exemplars, t.write.exemplars_dropped), (6, 0));
    let of = |name: &str, le: Option<&str>| {
        let s = t
            .write
            .series
            .iter()
            .find(|s| {
                s.labels.pairs().any(|(n, v)| n == "__name__" && v == name)
                    && le.is_none_or(|le| s.labels.pairs().any(|(n, v)| n == "le" && v == le))
            })
            .unwrap();
        s.exemplars
            .iter()
            .map(|e| {
                let labels: Vec<String> = e
                    .labels
                    .iter()
                    .map(|l| format!("{}={}", l.name, l.value))
                    .collect();
                (e.v, e.t, labels.join(","))
            })
            .collect::<Vec<_>>()
    };
    let ids = format!("span_id=000000000000002a,trace_id={}", "ab".repeat(16));
    let t_ms = (T / 1_000_000) as i64;
    assert_eq!(
        of("jobs_total", None),
        vec![
            (3.0, t_ms, format!("{ids},user=u1")),
            // Attributes that would take the labels over 128 characters
            // are left out.
            (4.0, t_ms, ids.clone()),
        ]
    );
    assert!(of("level", None).is_empty());
    let values = |le| {
        of("dur_bucket", Some(le))
            .iter()
            .map(|e| e.0)
            .collect::<Vec<_>>()
    };
    assert_eq!(values("0.5"), vec![0.1, 0.5]);
    assert!(values("10").is_empty());
    assert_eq!(values("+Inf"), vec![20.0]);
    assert!(of("dur_sum", None).is_empty());
    assert_eq!(of("lat", None), vec![(2.0, t_ms, ids)]);
}
