//! Request, label and query limits: each refused with the status and a
//! message naming the limit, the memory a refused request takes bounded,
//! and what was accepted before still readable.

use crate::common::inproc::{body, now_ms, raw, ts, Server};
use crate::{expect, send, GOOD};

/// Resident memory of this process (the in-process server's), in bytes.
fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb * 1024
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_and_label_limits() {
    let srv = Server::start(&[
        ("STRATA_LIMITS_MAX_LABELS_PER_SERIES", "4"),
        ("STRATA_LIMITS_MAX_LABEL_NAME_LENGTH", "20"),
        ("STRATA_LIMITS_MAX_LABEL_VALUE_LENGTH", "30"),
        ("STRATA_LIMITS_MAX_SERIES_PER_REQUEST", "50"),
        ("STRATA_LIMITS_MAX_SAMPLES_PER_REQUEST", "200"),
    ])
    .await;
    let url = srv.url.clone();
    let t = now_ms();
    assert_eq!(
        send(&url, body(vec![ts(GOOD, &[(t, 1.0)])]), &[]).await.0,
        204
    );
    let before = raw(&url, "good_total").await;
    assert_eq!(before.len(), 1);

    let long_value = "v".repeat(31);
    let long_name = "n".repeat(21);
    /// A series case: name, labels, a word the message must contain.
    type SeriesCase<'a> = (&'a str, Vec<(&'a str, &'a str)>, &'a str);
    let series_cases: Vec<SeriesCase> = vec![
        (
            "too many labels",
            vec![
                ("__name__", "x"),
                ("a", "1"),
                ("b", "2"),
                ("c", "3"),
                ("d", "4"),
            ],
            "max_labels_per_series",
        ),
        (
            "long label name",
            vec![("__name__", "x"), (&long_name, "1")],
            "max_label_name_length",
        ),
        (
            "long label value",
            vec![("__name__", "x"), ("a", &long_value)],
            "max_label_value_length",
        ),
        (
            "reserved tenant label",
            vec![("__name__", "x"), ("__tenant__", "other")],
            "reserved",
        ),
    ];
    for (name, labels, needle) in series_cases {
        // The bad series is named; the good one of the same request lands.
        let (s, m) = send(
            &url,
            body(vec![
                ts(&labels, &[(t, 1.0)]),
                ts(&[("__name__", "ok_total"), ("case", name)], &[(t, 1.0)]),
            ]),
            &[],
        )
        .await;
        expect(name, (s, m.clone()), 400, needle);
        assert!(m.contains("1 of 2 samples rejected"), "{name}: {m}");
        let ok = raw(&url, &format!("ok_total{{case=\"{name}\"}}")).await;
        assert_eq!(ok.len(), 1, "{name}: the valid series was written");
    }

    let many_series: Vec<_> = (0..51)
        .map(|i| ts(&[("__name__", "m"), ("i", &i.to_string())], &[(t, 1.0)]))
        .collect();
    expect(
        "too many series",
        send(&url, body(many_series), &[]).await,
        413,
        "max_series_per_request",
    );
    let many_samples: Vec<(i64, f64)> = (0..201).map(|i| (t + i, 1.0)).collect();
    expect(
        "too many samples",
        send(&url, body(vec![ts(GOOD, &many_samples)]), &[]).await,
        413,
        "max_samples_per_request",
    );

    // More than 10 minutes ahead: refused; 5 minutes ahead: taken.
    expect(
        "future sample",
        send(
            &url,
            body(vec![ts(
                &[("__name__", "future")],
                &[(t + 11 * 60_000, 1.0)],
            )]),
            &[],
        )
        .await,
        400,
        "future",
    );
    assert_eq!(
        send(
            &url,
            body(vec![ts(&[("__name__", "soon")], &[(t + 5 * 60_000, 1.0)])]),
            &[],
        )
        .await
        .0,
        204
    );

    // Framed snappy (the stream format) is not the block format.
    let mut framed = Vec::new();
    {
        use std::io::Write;
        let mut w = snap::write::FrameEncoder::new(&mut framed);
        w.write_all(
            &snap::raw::Decoder::new()
                .decompress_vec(&body(vec![ts(GOOD, &[(t + 1, 2.0)])]))
                .unwrap(),
        )
        .unwrap();
    }
    expect(
        "framed snappy",
        send(&url, framed, &[]).await,
        400,
        "snappy",
    );
    expect(
        "deflate",
        send(
            &url,
            body(vec![ts(GOOD, &[(t + 1, 2.0)])]),
            &[("Content-Encoding", "deflate")],
        )
        .await,
        415,
        "deflate",
    );

    // A snappy header declaring 4 GiB: refused before allocating, again and
    // again, with memory flat.
    let rss_before = rss_bytes();
    for _ in 0..50 {
        expect(
            "4 GiB declared",
            send(&url, vec![0x80, 0x80, 0x80, 0x80, 0x10, 0, 0, 0], &[]).await,
            413,
            "decoded",
        );
    }
    let grown = rss_bytes().saturating_sub(rss_before);
    assert!(grown < 64 << 20, "memory grew by {grown} bytes");

    assert_eq!(raw(&url, "good_total").await, before, "earlier data intact");
    let healthy = reqwest::get(format!("{url}/-/healthy")).await.unwrap();
    assert_eq!(healthy.status(), 200);
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_limits() {
    let srv = Server::start(&[
        ("STRATA_QUERY_MAX_SAMPLES", "100"),
        ("STRATA_QUERY_MAX_REGEX_BYTES", "1000"),
    ])
    .await;
    let url = srv.url.clone();
    let t = now_ms() - 600_000;
    let samples: Vec<(i64, f64)> = (0..500).map(|i| (t + i * 1000, i as f64)).collect();
    assert_eq!(send(&url, body(vec![ts(GOOD, &samples)]), &[]).await.0, 204);
    let get = |params: Vec<(&'static str, String)>, path: &'static str| {
        let url = url.clone();
        async move {
            let r = reqwest::Client::new()
                .get(format!("{url}{path}"))
                .query(&params)
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            let j: serde_json::Value = r.json().await.unwrap();
            (status, j)
        }
    };
    let secs = |ms: i64| format!("{:.3}", ms as f64 / 1000.0);
    let range = |step: &str, end: i64| {
        vec![
            ("query", "good_total".to_owned()),
            ("start", secs(t)),
            ("end", secs(end)),
            ("step", step.to_owned()),
        ]
    };
    for (name, params, want, error_type, needle) in [
        (
            "11,001 steps",
            range("1", t + 11_001_000),
            400,
            "bad_data",
            "11,000",
        ),
        ("step 0", range("0", t + 10_000), 400, "bad_data", "step"),
        (
            "negative step",
            range("-5", t + 10_000),
            400,
            "bad_data",
            "step",
        ),
        (
            "too many samples",
            vec![
                ("query", "sum_over_time(good_total[10m])".to_owned()),
                ("time", secs(t + 500_000)),
            ],
            422,
            "execution",
            "samples",
        ),
    ] {
        let path = if params.iter().any(|(k, _)| *k == "step") {
            "/api/v1/query_range"
        } else {
            "/api/v1/query"
        };
        let (s, j) = get(params, path).await;
        assert_eq!(s, want, "{name}: {j}");
        assert_eq!(j["errorType"], error_type, "{name}: {j}");
        let msg = j["error"].as_str().unwrap_or_default().to_lowercase();
        assert!(msg.contains(needle), "{name}: {msg}");
    }
    // A huge regular expression, in a query and in match[]; a long one
    // under the limit still works.
    let huge = format!("good_total{{job=~\"{}\"}}", "a|".repeat(600));
    let (s, j) = get(vec![("query", huge.clone())], "/api/v1/query").await;
    assert_eq!(s, 400, "{j}");
    assert!(
        j["error"].as_str().unwrap().contains("max_regex_bytes"),
        "{j}"
    );
    let (s, j) = get(vec![("match[]", huge)], "/api/v1/series").await;
    assert_eq!(s, 400, "{j}");
    let fits = format!("good_total{{job=~\"test|{}\"}}", "b|".repeat(400));
    let (s, j) = get(
        vec![("query", fits), ("time", secs(t + 1000))],
        "/api/v1/query",
    )
    .await;
    assert_eq!(s, 200, "{j}");
    assert_eq!(j["data"]["result"].as_array().unwrap().len(), 1, "{j}");

    // Under the sample budget the same data answers.
    let (s, _) = get(
        vec![
            ("query", "sum_over_time(good_total[50s])".to_owned()),
            ("time", secs(t + 100_000)),
        ],
        "/api/v1/query",
    )
    .await;
    assert_eq!(s, 200);
    assert_eq!(
        reqwest::get(format!("{url}/-/healthy"))
            .await
            .unwrap()
            .status(),
        200
    );
    srv.stop().await;
}
