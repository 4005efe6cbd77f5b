//! UTF-8 names from a real sender: Prometheus 3.16 scrapes a target that
//! exposes metrics and labels with dots and non-ASCII letters (quoted, as
//! the text format has them since Prometheus 3) and remote-writes them to
//! Strata, over 1.0 to one server and 2.0 to another. Series, label names
//! and values (by plain and `U__` escaped names) and quoted-name queries
//! must answer on each what Prometheus answers.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::time::Duration;

use common::promql_compare::same_answers;
use common::{free_port, http_get, prometheus3_bin, query_string, wait_until};
use common::{PrometheusProcess, StrataProcess};

/// What the target exposes, the same on every scrape.
const EXPOSITION: &str = r#"# TYPE "my.requests_total" counter
{"my.requests_total", "http.status"="200", "k8s.pod.name"="p-1"} 10
{"my.requests_total", "http.status"="500", "k8s.pod.name"="p-1"} 2
# TYPE "温度" gauge
{"温度", "場所"="東京"} 21.5
# TYPE plain_gauge gauge
plain_gauge{"équipe"="infra", a_b="x"} 1
"#;

/// Serves [`EXPOSITION`] in the text format to every scrape.
fn serve_target(listener: TcpListener) {
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            // The request line and headers; the body is empty.
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\n\
                 Content-Type: text/plain; version=0.0.4; charset=utf-8; escaping=allow-utf-8\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{EXPOSITION}",
                EXPOSITION.len()
            );
        }
    });
}

#[test]
fn prometheus_remote_writes_utf8_names_that_read_back_as_it_answers() {
    let (dir1, dir2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let v1 = StrataProcess::start(dir1.path(), &[]);
    let v2 = StrataProcess::start(dir2.path(), &[]);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let target = listener.local_addr().unwrap().port();
    serve_target(listener);
    let queue = "queue_config: {batch_send_deadline: 500ms, min_backoff: 100ms, max_backoff: 1s}";
    let config = format!(
        r#"global:
  scrape_interval: 1s
scrape_configs:
  - job_name: app
    scrape_protocols: [PrometheusText0.0.4]
    static_configs:
      - targets: ['127.0.0.1:{target}']
remote_write:
  - url: http://127.0.0.1:{}/api/v1/write
    {queue}
  - url: http://127.0.0.1:{}/api/v1/write
    protobuf_message: io.prometheus.write.v2.Request
    {queue}
"#,
        v1.port, v2.port
    );
    let prometheus = PrometheusProcess::start_binary_on(
        &prometheus3_bin("prometheus"),
        free_port(),
        &config,
        // Without it, remote write 2.0 carries no metadata.
        &["--enable-feature=metadata-wal-records"],
    );

    let app = r#"{job="app", __name__!~"up|scrape_.+"}"#;
    let series = format!("/api/v1/series?{}", query_string(&[("match[]", app)]));
    let count = |port: u16| {
        let r = http_get(port, &series).unwrap();
        r.json()["data"].as_array().map_or(0, Vec::len)
    };
    wait_until(Duration::from_secs(60), "Prometheus' scrapes", || {
        count(prometheus.port) == 4
    });
    for strata in [&v1, &v2] {
        wait_until(Duration::from_secs(30), "the remote-written series", || {
            count(strata.port) == 4
        });
    }

    let mut paths = vec![series.clone()];
    for selector in [app, r#"{"my.requests_total"}"#, r#"{"場所"="東京"}"#] {
        let m = query_string(&[("match[]", selector)]);
        paths.push(format!("/api/v1/series?{m}"));
        paths.push(format!("/api/v1/labels?{m}"));
        for name in [
            "__name__",
            "http.status",
            "U__http_2e_status",
            "U__k8s_2e_pod_2e_name",
            "U___5834__6240_",
            "U___e9_quipe",
            "U__a__b",
        ] {
            paths.push(format!("/api/v1/label/{name}/values?{m}"));
        }
    }
    // Values that do not change: the same at any moment both hold them.
    let time = format!("{}", common::now_ms() / 1000);
    for query in [
        r#"{"my.requests_total", "http.status"="500"}"#,
        r#"sum by ("http.status", "k8s.pod.name") ({"my.requests_total"})"#,
        r#"max_over_time({"温度"}[1m])"#,
        r#"plain_gauge * on ("équipe") group_left count by ("équipe") (plain_gauge)"#,
    ] {
        paths.push(format!(
            "/api/v1/query?{}",
            query_string(&[("query", query), ("time", &time)])
        ));
    }
    for strata in [&v1, &v2] {
        same_answers(strata.port, prometheus.port, &paths);
    }
    // Remote write 2.0 carries each series' metadata with it (1.0 sends it
    // apart, once a minute): the types the target gave, by UTF-8 name.
    let metadata: Vec<String> = ["my.requests_total", "温度", "plain_gauge"]
        .iter()
        .map(|m| format!("/api/v1/metadata?{}", query_string(&[("metric", m)])))
        .collect();
    same_answers(v2.port, prometheus.port, &metadata);
}
