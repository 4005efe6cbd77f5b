//! Every answer of `POST /api/v1/write`, at the HTTP level against a real
//! server: status, message, and that data written before a bad request is
//! still intact after it.

mod common;

use std::time::Duration;

use common::inproc::{body, now_ms, post, raw, ts, Server};
use strata_codec::Label;
use strata_remote_write::{encode_v2, V2RequestBuilder};

/// A bad request: name, body, extra headers, expected status, a word the
/// message must contain.
type Case = (
    &'static str,
    Vec<u8>,
    Vec<(&'static str, &'static str)>,
    u16,
    &'static str,
);

const GOOD: &[(&str, &str)] = &[("__name__", "good_total"), ("job", "test")];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answer() {
    let srv = Server::start(&[
        ("STRATA_LIMITS_MAX_BODY_BYTES", "65536"),
        ("STRATA_LIMITS_MAX_DECODED_BYTES", "1048576"),
    ])
    .await;
    let url = srv.url.clone();
    let t = now_ms();

    // 204, and the data reads back.
    let (s, _, _) = post(
        &url,
        body(vec![ts(GOOD, &[(t, 1.0), (t + 1000, 2.0)])]),
        &[],
    )
    .await;
    assert_eq!(s, 204);
    let before = raw(&url, "good_total").await;
    assert_eq!(before.len(), 1);
    assert_eq!(before[0].1.len(), 2);

    // Durable per request, and a bad durability header.
    let (s, _, _) = post(
        &url,
        body(vec![ts(GOOD, &[(t + 2000, 3.0)])]),
        &[("X-Strata-Durability", "durable")],
    )
    .await;
    assert_eq!(s, 204);
    let (s, m, _) = post(
        &url,
        body(vec![ts(GOOD, &[(t + 3000, 4.0)])]),
        &[("X-Strata-Durability", "eventually")],
    )
    .await;
    assert_eq!(s, 400);
    assert!(m.contains("X-Strata-Durability"), "{m}");
    let before = raw(&url, "good_total").await;
    assert_eq!(before[0].1.len(), 3);

    let cases: Vec<Case> = vec![
        (
            "unparsable protobuf",
            snap::raw::Encoder::new()
                .compress_vec(b"\xff\xff\xff\xff garbage")
                .unwrap(),
            vec![],
            400,
            "protobuf",
        ),
        (
            "corrupt snappy",
            b"\x10this is not snappy".to_vec(),
            vec![],
            400,
            "snappy",
        ),
        (
            "duplicate label",
            body(vec![ts(
                &[("__name__", "x"), ("a", "1"), ("a", "2")],
                &[(t, 1.0)],
            )]),
            vec![],
            400,
            "duplicate label name",
        ),
        (
            "empty label name",
            body(vec![ts(&[("", "v"), ("__name__", "x")], &[(t, 1.0)])]),
            vec![],
            400,
            "empty",
        ),
        (
            "empty label value",
            body(vec![ts(&[("__name__", "x"), ("a", "")], &[(t, 1.0)])]),
            vec![],
            400,
            "empty",
        ),
        (
            "no metric name",
            body(vec![ts(&[("a", "1")], &[(t, 1.0)])]),
            vec![],
            400,
            "__name__",
        ),
        (
            "wrong content type",
            body(vec![ts(GOOD, &[(t + 5000, 1.0)])]),
            vec![("Content-Type", "application/json")],
            415,
            "application/json",
        ),
        (
            "wrong encoding",
            body(vec![ts(GOOD, &[(t + 5000, 1.0)])]),
            vec![("Content-Encoding", "gzip")],
            415,
            "gzip",
        ),
        (
            "corrupt zstd",
            b"\x28\xb5\x2f\xfd this is not zstd".to_vec(),
            vec![("Content-Encoding", "zstd")],
            400,
            "zstd",
        ),
        // 8 MiB of zeros in a few hundred bytes, over the 1 MiB decoded limit.
        (
            "zstd bomb",
            zstd::stream::encode_all(&vec![0u8; 8 << 20][..], 3).unwrap(),
            vec![("Content-Encoding", "zstd")],
            413,
            "zstd body decodes to more than",
        ),
        ("body too large", vec![0u8; 70_000], vec![], 413, "body"),
        // A snappy header declaring a 1 GiB decoded length.
        (
            "declared length too large",
            vec![0x80, 0x80, 0x80, 0x80, 0x04, 0, 0, 0],
            vec![],
            413,
            "decoded",
        ),
    ];
    for (name, b, headers, want, needle) in cases {
        let (s, m, _) = post(&url, b, &headers).await;
        assert_eq!(s, want, "{name}: {m}");
        assert!(
            m.to_lowercase().contains(&needle.to_lowercase()),
            "{name}: message {m:?} lacks {needle:?}"
        );
        assert_eq!(
            raw(&url, "good_total").await,
            before,
            "{name}: earlier data changed"
        );
    }

    // Labels in any order are sorted on receipt (vmagent sends them in
    // scrape order), in snappy and zstd bodies alike.
    let unsorted = |name: &str| {
        ts(
            &[
                ("__name__", name),
                ("mode", "idle"),
                ("cpu", "0"),
                ("instance", "h:9100"),
            ],
            &[(t, 4.0)],
        )
    };
    let (s, m, _) = post(&url, body(vec![unsorted("scrape_order")]), &[]).await;
    assert_eq!(s, 204, "{m}");
    let zstd_body = {
        let snappy = body(vec![unsorted("scrape_order_zstd")]);
        let raw = snap::raw::Decoder::new().decompress_vec(&snappy).unwrap();
        zstd::bulk::compress(&raw, 1).unwrap()
    };
    let (s, m, _) = post(&url, zstd_body, &[("Content-Encoding", "zstd")]).await;
    assert_eq!(s, 204, "{m}");
    for name in ["scrape_order", "scrape_order_zstd"] {
        let got = raw(&url, name).await;
        assert_eq!(got.len(), 1, "{name}: {got:?}");
        assert_eq!(
            got[0].0,
            serde_json::json!({"__name__": name, "cpu": "0", "instance": "h:9100", "mode": "idle"})
        );
        assert_eq!(got[0].1.len(), 1);
    }
    // vmagent's handshake (1.88 to 1.115) is answered "1": it then sends zstd.
    for req in [
        reqwest::Client::new().get(format!("{url}/api/v1/write?get_vm_proto_version=1")),
        reqwest::Client::new().post(format!("{url}/api/v1/write?get_vm_proto_version=1")),
    ] {
        let r = req.send().await.unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.text().await.unwrap(), "1");
    }
    let r = reqwest::get(format!("{url}/api/v1/write")).await.unwrap();
    assert_eq!(r.status(), 405);

    // Invalid series are named; valid series of the same request are written.
    let (s, m, _) = post(
        &url,
        body(vec![
            ts(&[("__name__", "x"), ("b", "1"), ("b", "2")], &[(t, 1.0)]),
            ts(&[("__name__", "partial_ok")], &[(t, 7.0)]),
        ]),
        &[],
    )
    .await;
    assert_eq!(s, 400);
    assert!(m.contains("1 of 2 samples rejected"), "{m}");
    assert!(
        m.contains("b=") || m.contains("\"b\""),
        "names the series: {m}"
    );
    assert_eq!(raw(&url, "partial_ok").await.len(), 1);

    // An out-of-order sample is kept (within storage.out_of_order_window);
    // a conflicting duplicate is refused; valid samples still land.
    let (s, m, _) = post(
        &url,
        body(vec![ts(
            GOOD,
            &[
                (t - 10_000, 9.0),
                (t + 2000, 3.0),
                (t + 2000, 99.0),
                (t + 4000, 5.0),
            ],
        )]),
        &[],
    )
    .await;
    assert_eq!(s, 400, "{m}");
    assert!(m.contains("1 of 4 samples rejected"), "{m}");
    assert!(m.contains("duplicate sample for timestamp"), "{m}");
    assert!(m.contains("good_total"), "{m}");
    let after = raw(&url, "good_total").await;
    assert_eq!(
        after[0].1.len(),
        5,
        "the out-of-order and the in-order sample were written: {after:?}"
    );
    assert_eq!(after[0].1[1..4], before[0].1[..]);

    // Remote write 2.0 answers with the written counts.
    let mut b2 = V2RequestBuilder::new();
    b2.add_series(
        &[Label::new("__name__", "v2_metric"), Label::new("job", "v2")],
        &[(t, 1.5), (t + 1000, 2.5)],
    );
    let mut enc = Vec::new();
    encode_v2(&b2.build(), &mut enc);
    let (s, m, h) = post(
        &url,
        enc,
        &[
            (
                "Content-Type",
                "application/x-protobuf;proto=io.prometheus.write.v2.Request",
            ),
            ("X-Prometheus-Remote-Write-Version", "2.0.0"),
        ],
    )
    .await;
    assert_eq!(s, 204, "{m}");
    assert_eq!(h["x-prometheus-remote-write-samples-written"], "2");
    assert_eq!(h["x-prometheus-remote-write-histograms-written"], "0");
    assert_eq!(raw(&url, "v2_metric").await[0].1.len(), 2);

    // The server is still up and reports what happened.
    let metrics = reqwest::get(format!("{url}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("strata_samples_rejected_total 1"),
        "{metrics}"
    );
    assert!(metrics.contains("code=\"413\""), "{metrics}");
    assert!(
        metrics.contains("strata_remote_write_requests_total{encoding=\"zstd\"} 3"),
        "the zstd body, the corrupt one and the bomb: {metrics}"
    );
    // The coordinator timed its groups: each applied to the head, and each
    // that added samples written to SlateDB.
    let count = |name: &str| -> u64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}_count ")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("{name}_count missing: {metrics}"))
    };
    let (applied, logged) = (
        count("strata_coordinator_apply_seconds"),
        count("strata_log_write_seconds"),
    );
    assert!(logged >= 3, "log writes timed: {logged}");
    assert!(
        applied >= logged,
        "groups applied {applied}, logged {logged}"
    );
    // SlateDB's block cache is reported, at its configured size.
    assert!(
        metrics.contains("strata_memory_cache_capacity_bytes 268435456")
            && metrics.contains("strata_memory_cache_bytes{part=\"meta\"}"),
        "{metrics}"
    );
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limit_answers_429() {
    let srv = Server::start(&[
        ("STRATA_LIMITS_INGEST_RATE_LIMIT", "100"),
        ("STRATA_LIMITS_INGEST_BURST", "150"),
    ])
    .await;
    let t = now_ms();
    let samples: Vec<(i64, f64)> = (0..120).map(|i| (t + i, i as f64)).collect();
    let (s, _, _) = post(&srv.url, body(vec![ts(GOOD, &samples)]), &[]).await;
    assert_eq!(s, 204);
    let more: Vec<(i64, f64)> = (120..240).map(|i| (t + i, i as f64)).collect();
    let (s, m, h) = post(&srv.url, body(vec![ts(GOOD, &more)]), &[]).await;
    assert_eq!(s, 429, "{m}");
    assert!(m.contains("rate limit"), "{m}");
    assert!(h.get("retry-after").is_some());
    assert_eq!(
        raw(&srv.url, "good_total").await[0].1.len(),
        120,
        "accepted data intact"
    );
    srv.stop().await;
}

/// A request larger than the burst is not refused for good: it passes from
/// a full bucket, and the requests after it wait out its cost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_over_the_burst_passes_and_later_ones_wait() {
    // 5 samples/s, burst 5 (one second of the rate).
    let srv = Server::start(&[("STRATA_LIMITS_INGEST_RATE_LIMIT", "5")]).await;
    let t = now_ms();
    let twenty: Vec<(i64, f64)> = (0..20).map(|i| (t + i, i as f64)).collect();
    let (s, m, _) = post(&srv.url, body(vec![ts(GOOD, &twenty)]), &[]).await;
    assert_eq!(s, 204, "{m}");
    let (s, m, h) = post(&srv.url, body(vec![ts(GOOD, &[(t + 100, 1.0)])]), &[]).await;
    assert_eq!(s, 429, "{m}");
    let wait: u64 = h["retry-after"].to_str().unwrap().parse().unwrap();
    // The debt of 15 and this sample at 5 a second.
    assert!((3..=4).contains(&wait), "Retry-After {wait}");
    assert_eq!(raw(&srv.url, "good_total").await[0].1.len(), 20);
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fenced_writer_answers_503() {
    let srv = Server::start(&[]).await;
    let t = now_ms();
    let (s, _, _) = post(
        &srv.url,
        body(vec![ts(GOOD, &[(t, 1.0)])]),
        &[("X-Strata-Durability", "durable")],
    )
    .await;
    assert_eq!(s, 204);
    // A newer writer opens the same path and fences this server.
    let data = srv.dir.path().join("data");
    let loc = strata_storage::open_object_store(
        &format!("file://{}", data.display()),
        &Default::default(),
    )
    .unwrap();
    let newer = strata_storage::Writer::open(
        loc.store,
        &loc.path,
        Default::default(),
        std::sync::Arc::new(strata_storage::SystemClock),
    )
    .await
    .unwrap();
    let mut last = (0, String::new());
    for i in 1..200 {
        let (s, m, h) = post(
            &srv.url,
            body(vec![ts(GOOD, &[(t + i * 1000, 1.0)])]),
            &[("X-Strata-Durability", "durable")],
        )
        .await;
        if s == 503 {
            assert!(h.get("retry-after").is_some());
            last = (s, m);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(last.0, 503, "the fenced writer must refuse writes");
    assert!(last.1.contains("fenced"), "{}", last.1);
    let ready = reqwest::get(format!("{}/-/ready", srv.url)).await.unwrap();
    assert_eq!(ready.status(), 503);
    // The newer writer has the acknowledged sample.
    let got = newer
        .select(
            &[
                strata_codec::Matcher::new(strata_codec::MatchOp::Equal, "__name__", "good_total")
                    .unwrap(),
            ],
            t - 1,
            t + 1,
        )
        .await
        .unwrap();
    assert_eq!(got.len(), 1);
    newer.close().await.unwrap();
    srv.stop().await;
}
