//! Rulers apart from the writer, as separate processes: a writer, a
//! distributor in front of it, and two rulers reading the bucket. The
//! rulers share the groups of a rule file (each group on one ruler at a
//! time, both rulers busy), their output reaches the writer through the
//! distributor, a ruler killed with SIGKILL has its groups taken over
//! within two intervals (no gap longer than that in any recorded series),
//! and a tenant's groups managed over Mimir's ruler configuration API are
//! evaluated on that tenant's series only, until deleted.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{
    free_port, http_get, http_request, now_ms, query_matrix, query_string, wait_until,
    StrataProcess,
};
use strata_remote_write::encode_v1;
use strata_remote_write::proto::v1::{self, WriteRequest};

const GROUPS: usize = 12;
const INTERVAL_MS: i64 = 1_000;

fn rule_file() -> String {
    let mut out = String::from("groups:\n");
    for i in 0..GROUPS {
        out.push_str(&format!(
            "  - name: g{i:02}\n    interval: 1s\n    rules:\n      - record: g{i:02}:demo:sum\n        expr: sum(demo) + {i}\n"
        ));
    }
    out.push_str(
        "  - name: alerts\n    interval: 1s\n    rules:\n      - alert: DemoPresent\n        expr: sum(demo) > 0\n        for: 2s\n        labels:\n          severity: info\n",
    );
    out
}

fn write_demo(port: u16, tenant: Option<&str>, t: i64) -> u16 {
    let req = WriteRequest {
        timeseries: vec![v1::TimeSeries {
            labels: vec![
                v1::Label {
                    name: "__name__".into(),
                    value: "demo".into(),
                },
                v1::Label {
                    name: "job".into(),
                    value: "ruler-test".into(),
                },
            ],
            samples: vec![v1::Sample {
                value: 5.0,
                timestamp: t,
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let mut body = Vec::new();
    encode_v1(&req, &mut body);
    let mut headers = vec![
        ("Content-Type", "application/x-protobuf"),
        ("Content-Encoding", "snappy"),
        ("X-Prometheus-Remote-Write-Version", "0.1.0"),
    ];
    if let Some(t) = tenant {
        headers.push(("X-Scope-OrgID", t));
    }
    http_request(port, "POST", "/api/v1/write", &headers, &body)
        .map(|r| r.status)
        .unwrap_or(0)
}

/// The names of the groups a ruler says it evaluates itself.
fn groups_of(port: u16) -> BTreeSet<String> {
    rule_groups(port, &[("X-Strata-Ruler-Local", "1")])
}

/// The names of the groups in a ruler's `/api/v1/rules`.
fn rule_groups(port: u16, headers: &[(&str, &str)]) -> BTreeSet<String> {
    let Ok(resp) = http_request(port, "GET", "/api/v1/rules", headers, b"") else {
        return BTreeSet::new();
    };
    if resp.status != 200 {
        return BTreeSet::new();
    }
    resp.json()["data"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap().to_owned())
        .collect()
}

fn ruler(dir: &Path, write_url: &str, rules: &Path) -> StrataProcess {
    let port = free_port();
    let advertise = format!("http://127.0.0.1:{port}");
    StrataProcess::start_on(
        port,
        dir,
        &[
            ("STRATA_RULER_ADVERTISE_URL", &advertise),
            ("STRATA_SERVER_ROLE", "ruler"),
            ("STRATA_RULER_WRITE_URL", write_url),
            ("STRATA_RULER_HEARTBEAT_INTERVAL", "200ms"),
            ("STRATA_RULER_POLL_INTERVAL", "500ms"),
            ("STRATA_READER_POLL_INTERVAL", "100ms"),
            ("STRATA_RULES_RULE_FILES", rules.to_str().unwrap()),
        ],
    )
}

fn tenant_query(port: u16, tenant: &str, query: &str) -> serde_json::Value {
    let path = format!("/api/v1/query?{}", query_string(&[("query", query)]));
    let resp = http_request(port, "GET", &path, &[("X-Scope-OrgID", tenant)], b"").unwrap();
    assert_eq!(resp.status, 200, "{}", resp.text());
    resp.json()["data"]["result"].clone()
}

#[test]
fn rulers_share_groups_take_over_and_run_tenant_groups() {
    let data = tempfile::tempdir().unwrap();
    let rules_dir = tempfile::tempdir().unwrap();
    let rules = rules_dir.path().join("rules.yml");
    std::fs::write(&rules, rule_file()).unwrap();

    let writer = StrataProcess::start(
        data.path(),
        &[
            ("STRATA_SERVER_ROLE", "writer"),
            ("STRATA_STORAGE_FLUSH_INTERVAL", "50ms"),
        ],
    );
    let writer_url = format!("http://127.0.0.1:{}", writer.port);
    let distributor = StrataProcess::start(
        data.path(),
        &[
            ("STRATA_SERVER_ROLE", "distributor"),
            ("STRATA_SHARDS_WRITERS", &writer_url),
        ],
    );
    let write_url = format!("http://127.0.0.1:{}", distributor.port);

    // Samples every 200 ms, for the default tenant and for team-a.
    let stop = Arc::new(AtomicBool::new(false));
    let feeder = {
        let stop = Arc::clone(&stop);
        let port = distributor.port;
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let t = now_ms();
                write_demo(port, None, t);
                write_demo(port, Some("team-a"), t);
                std::thread::sleep(Duration::from_millis(200));
            }
        })
    };
    wait_until(Duration::from_secs(20), "demo is stored", || {
        query_matrix(writer.port, "demo[10s]", now_ms()).len() == 1
    });

    let mut a = ruler(data.path(), &write_url, &rules);
    let b = ruler(data.path(), &write_url, &rules);
    let all: BTreeSet<String> = (0..GROUPS)
        .map(|i| format!("g{i:02}"))
        .chain(["alerts".to_owned()])
        .collect();

    // Shared: every group on exactly one ruler, both rulers busy.
    wait_until(
        Duration::from_secs(30),
        "the rulers share every group",
        || {
            let (ga, gb) = (groups_of(a.port), groups_of(b.port));
            ga.is_disjoint(&gb)
                && ga.union(&gb).cloned().collect::<BTreeSet<_>>() == all
                && !ga.is_empty()
                && !gb.is_empty()
        },
    );
    for _ in 0..5 {
        let (ga, gb) = (groups_of(a.port), groups_of(b.port));
        assert!(ga.is_disjoint(&gb), "a group on both rulers: {ga:?} {gb:?}");
        std::thread::sleep(Duration::from_millis(300));
    }
    // Either ruler's API answers for all of them.
    assert_eq!(rule_groups(a.port, &[]), all);
    assert_eq!(rule_groups(b.port, &[]), all);
    // Their output reaches the writer through the distributor.
    wait_until(
        Duration::from_secs(20),
        "every group's series is written",
        || {
            (0..GROUPS).all(|i| {
                let m = query_matrix(writer.port, &format!("g{i:02}:demo:sum[5s]"), now_ms());
                m.values()
                    .next()
                    .is_some_and(|s| s.last().is_some_and(|(_, v)| v == &(5 + i).to_string()))
            })
        },
    );
    // The alert fires on whichever ruler holds its group.
    wait_until(Duration::from_secs(20), "DemoPresent fires", || {
        [a.port, b.port].iter().any(|&p| {
            http_get(p, "/api/v1/alerts")
                .map(|r| r.text().contains("\"state\":\"firing\""))
                .unwrap_or(false)
        })
    });

    // A ruler dies: the other takes its groups within two intervals.
    let a_groups = groups_of(a.port);
    let killed_at = now_ms();
    a.kill9();
    wait_until(Duration::from_secs(15), "b holds every group", || {
        groups_of(b.port) == all
    });
    std::thread::sleep(Duration::from_secs(3));
    let until = now_ms();
    for g in a_groups.iter().filter(|g| g.starts_with('g')) {
        let m = query_matrix(
            writer.port,
            &format!("{g}:demo:sum[{}ms]", until - killed_at + 5_000),
            until,
        );
        let samples = m.values().next().unwrap();
        let times: Vec<i64> = samples.iter().map(|(t, _)| *t).collect();
        let worst = times.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
        assert!(
            worst <= 2 * INTERVAL_MS,
            "{g}: a gap of {worst} ms in its recorded series across the takeover: {times:?}"
        );
        assert!(
            times
                .last()
                .is_some_and(|&t| t > killed_at + 2 * INTERVAL_MS),
            "{g}: not evaluated after the kill: {times:?}"
        );
    }

    // A tenant's group over the configuration API, through the other
    // ruler (any node that reaches the bucket answers it).
    let api = "/prometheus/config/v1/rules";
    let bad = http_request(
        b.port,
        "POST",
        &format!("{api}/team%20ns"),
        &[
            ("X-Scope-OrgID", "team-a"),
            ("Content-Type", "application/yaml"),
        ],
        b"name: stored\nrules:\n  - record: stored:demo:sum\n    expr: sum(demo\n",
    )
    .unwrap();
    assert_eq!(bad.status, 400, "{}", bad.text());
    assert!(bad.text().contains("stored:demo:sum"), "{}", bad.text());
    let group = "name: stored\ninterval: 1s\nrules:\n  - record: stored:demo:sum\n    expr: sum(demo) * 2\n";
    let posted = http_request(
        b.port,
        "POST",
        &format!("{api}/team%20ns"),
        &[
            ("X-Scope-OrgID", "team-a"),
            ("Content-Type", "application/yaml"),
        ],
        group.as_bytes(),
    )
    .unwrap();
    assert_eq!(posted.status, 202, "{}", posted.text());
    let listed =
        http_request(writer.port, "GET", api, &[("X-Scope-OrgID", "team-a")], b"").unwrap();
    assert_eq!(listed.status, 200, "{}", listed.text());
    assert!(
        listed.text().contains("team ns:") && listed.text().contains("stored:demo:sum"),
        "{}",
        listed.text()
    );
    // The same below the paths Grafana's ruler proxy asks for.
    for alias in [
        "/config/v1/rules/team%20ns/stored",
        "/prometheus/rules/team%20ns/stored",
    ] {
        let got = http_request(
            writer.port,
            "GET",
            alias,
            &[("X-Scope-OrgID", "team-a")],
            b"",
        )
        .unwrap();
        assert_eq!(got.status, 200, "{alias}: {}", got.text());
        assert!(
            got.text().contains("name: stored"),
            "{alias}: {}",
            got.text()
        );
    }
    let other = http_request(writer.port, "GET", api, &[("X-Scope-OrgID", "team-b")], b"").unwrap();
    assert_eq!(
        other.status,
        404,
        "another tenant sees none: {}",
        other.text()
    );
    wait_until(Duration::from_secs(20), "team-a's group records", || {
        tenant_query(writer.port, "team-a", "stored:demo:sum")
            .as_array()
            .is_some_and(|r| r.len() == 1 && r[0]["value"][1] == "10")
    });
    // Only team-a's: the default tenant has no such series.
    assert_eq!(
        tenant_query(writer.port, "anonymous", "stored:demo:sum"),
        serde_json::json!([])
    );
    // Mimir's layout of the query API answers too.
    let under_prefix = http_request(
        b.port,
        "GET",
        "/prometheus/api/v1/rules",
        &[("X-Scope-OrgID", "team-a")],
        b"",
    )
    .unwrap();
    assert!(
        under_prefix.text().contains("stored:demo:sum"),
        "{}",
        under_prefix.text()
    );
    let rules_b = http_request(
        b.port,
        "GET",
        "/api/v1/rules",
        &[("X-Scope-OrgID", "team-a")],
        b"",
    )
    .unwrap();
    assert!(
        rules_b.text().contains("\"file\":\"team ns\""),
        "{}",
        rules_b.text()
    );

    let deleted = http_request(
        b.port,
        "DELETE",
        &format!("{api}/team%20ns/stored"),
        &[("X-Scope-OrgID", "team-a")],
        b"",
    )
    .unwrap();
    assert_eq!(deleted.status, 202, "{}", deleted.text());
    let gone = http_request(
        b.port,
        "GET",
        &format!("{api}/team%20ns/stored"),
        &[("X-Scope-OrgID", "team-a")],
        b"",
    )
    .unwrap();
    assert_eq!(gone.status, 404);
    let started = Instant::now();
    wait_until(Duration::from_secs(10), "the deleted group stops", || {
        !http_request(
            b.port,
            "GET",
            "/api/v1/rules",
            &[("X-Scope-OrgID", "team-a")],
            b"",
        )
        .unwrap()
        .text()
        .contains("stored:demo:sum")
    });
    assert!(started.elapsed() < Duration::from_secs(10));

    stop.store(true, Ordering::Relaxed);
    feeder.join().unwrap();
    drop(b);
    drop(distributor);
    drop(writer);
}
