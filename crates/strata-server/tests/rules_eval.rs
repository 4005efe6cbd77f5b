//! A single node evaluates its own rule files: recording rules write
//! through the write path and a later rule of the group reads what an
//! earlier one wrote at the same evaluation; alerts go pending, then
//! firing, with `ALERTS` and `ALERTS_FOR_STATE` written and templated
//! annotations; `/api/v1/rules` and `/api/v1/alerts` answer in
//! Prometheus' shape; the firing alert reaches a real Alertmanager (0.35,
//! built from its Go module) with the external labels; a reload with a
//! bad file keeps the rules running and says why.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::inproc::{body, now_ms, post, ts, Server};

const RULES: &str = r#"
groups:
  - name: demo
    interval: 1s
    rules:
      - record: job:demo_requests:sum
        expr: sum by (job) (demo_requests)
      - record: job:demo_requests:doubled
        expr: job:demo_requests:sum * 2
      - alert: DemoHigh
        expr: job:demo_requests:sum > 10
        for: 2s
        labels:
          severity: page
        annotations:
          summary: "{{ $labels.job }} has {{ $value }} requests"
"#;

/// An Alertmanager with a route to nowhere, killed on drop.
struct Alertmanager(Child, String);

impl Alertmanager {
    fn start(dir: &Path) -> Self {
        let config = dir.join("alertmanager.yml");
        std::fs::write(
            &config,
            "route:\n  receiver: none\nreceivers:\n  - name: none\n",
        )
        .unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(common::alertmanager_bin())
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.path={}", dir.join("am-data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--cluster.listen-address=")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Self(child, format!("http://127.0.0.1:{port}"))
    }
}

impl Drop for Alertmanager {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn get(url: &str) -> serde_json::Value {
    reqwest::get(url).await.unwrap().json().await.unwrap()
}

async fn instant(url: &str, q: &str) -> Vec<serde_json::Value> {
    let r: serde_json::Value = reqwest::Client::new()
        .get(format!("{url}/api/v1/query"))
        .query(&[("query", q)])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(r["status"], "success", "{r}");
    r["data"]["result"].as_array().unwrap().clone()
}

/// Waits until `f` holds, at most `secs`.
async fn eventually<F, Fut>(secs: u64, what: &str, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let began = Instant::now();
    while !f().await {
        assert!(began.elapsed() < Duration::from_secs(secs), "{what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_node_evaluates_its_rules() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.yml");
    std::fs::write(&rules, RULES).unwrap();
    let pattern = dir.path().join("*.yml").display().to_string();
    let am_dir = tempfile::tempdir().unwrap();
    let am = Alertmanager::start(am_dir.path());
    let alertmanagers = format!("[{{urls = [\"{}\"]}}]", am.1);
    let srv = Server::start_in(
        dir,
        &[
            ("STRATA_RULES_RULE_FILES", &pattern),
            ("STRATA_RULES_EVALUATION_INTERVAL", "1s"),
            ("STRATA_RULES_EXTERNAL_LABELS", "cluster=test"),
            ("STRATA_ALERTING_ALERTMANAGERS", &alertmanagers),
        ],
    )
    .await;
    let url = srv.url.clone();
    // Samples kept fresh for the lookback while the rules run.
    let writer = {
        let url = url.clone();
        tokio::spawn(async move {
            loop {
                let t = now_ms();
                let b = body(vec![
                    ts(
                        &[("__name__", "demo_requests"), ("job", "api"), ("i", "1")],
                        &[(t, 7.0)],
                    ),
                    ts(
                        &[("__name__", "demo_requests"), ("job", "api"), ("i", "2")],
                        &[(t, 8.0)],
                    ),
                    ts(
                        &[("__name__", "demo_requests"), ("job", "db"), ("i", "1")],
                        &[(t, 1.0)],
                    ),
                ]);
                post(&url, b, &[]).await;
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        })
    };

    // The recording rules, the second reading the first's output.
    let began = Instant::now();
    while instant(&url, "job:demo_requests:doubled").await.len() != 2 {
        let r = get(&format!("{url}/api/v1/rules")).await;
        assert!(
            began.elapsed() < Duration::from_secs(20),
            "recorded series: {r}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let sums = instant(&url, "job:demo_requests:sum").await;
    let api = sums.iter().find(|s| s["metric"]["job"] == "api").unwrap();
    assert_eq!(api["value"][1], "15");
    let doubled = instant(&url, "job:demo_requests:doubled{job=\"api\"}").await;
    assert_eq!(doubled[0]["value"][1], "30");

    // The alert: pending, then firing after its `for`.
    eventually(20, "alert firing", || async {
        instant(&url, "ALERTS{alertstate=\"firing\"}").await.len() == 1
    })
    .await;
    let alerts = get(&format!("{url}/api/v1/alerts")).await;
    let a = &alerts["data"]["alerts"][0];
    assert_eq!(a["state"], "firing", "{alerts}");
    assert_eq!(a["labels"]["alertname"], "DemoHigh");
    assert_eq!(a["labels"]["severity"], "page");
    assert_eq!(a["labels"]["job"], "api");
    assert_eq!(a["annotations"]["summary"], "api has 15 requests");
    assert_eq!(a["value"], "1.5e+01");
    let for_state = instant(&url, "ALERTS_FOR_STATE").await;
    assert_eq!(for_state.len(), 1);
    let active_at: f64 = for_state[0]["value"][1].as_str().unwrap().parse().unwrap();
    assert!((active_at - now_ms() as f64 / 1000.0).abs() < 60.0);

    // Alertmanager has it, with the external labels.
    let began = Instant::now();
    loop {
        let got: serde_json::Value = match reqwest::get(format!("{}/api/v2/alerts", am.1)).await {
            Ok(r) => r.json().await.unwrap_or_default(),
            Err(_) => serde_json::Value::Null,
        };
        let found = got.as_array().and_then(|a| {
            a.iter()
                .find(|x| x["labels"]["alertname"] == "DemoHigh")
                .cloned()
        });
        if let Some(a) = found {
            assert_eq!(a["labels"]["cluster"], "test", "{a}");
            assert_eq!(a["labels"]["job"], "api", "{a}");
            assert_eq!(a["annotations"]["summary"], "api has 15 requests", "{a}");
            assert_eq!(a["status"]["state"], "active", "{a}");
            break;
        }
        assert!(
            began.elapsed() < Duration::from_secs(20),
            "Alertmanager never got the alert: {got}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // The rules API, and its filters.
    let r = get(&format!("{url}/api/v1/rules")).await;
    let group = &r["data"]["groups"][0];
    assert_eq!(group["name"], "demo");
    assert_eq!(group["interval"], 1.0);
    let rules = group["rules"].as_array().unwrap();
    assert_eq!(rules.len(), 3);
    assert_eq!(rules[0]["type"], "recording");
    assert_eq!(rules[0]["health"], "ok");
    assert_eq!(rules[2]["type"], "alerting");
    assert_eq!(rules[2]["state"], "firing");
    assert_eq!(rules[2]["duration"], 2.0);
    assert_eq!(rules[2]["alerts"].as_array().unwrap().len(), 1);
    let alerting = get(&format!("{url}/api/v1/rules?type=alert")).await;
    assert_eq!(
        alerting["data"]["groups"][0]["rules"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let matched = get(&format!("{url}/api/v1/rules?match[]={{severity=\"page\"}}")).await;
    assert_eq!(matched["data"]["groups"][0]["rules"][0]["name"], "DemoHigh");

    // A bad file: the reload fails naming it, and the rules keep running.
    std::fs::write(
        srv.dir.path().join("rules.yml"),
        "groups:\n  - name: demo\n    rules:\n      - record: x\n        expr: sum(\n",
    )
    .unwrap();
    let r = reqwest::Client::new()
        .post(format!("{url}/-/reload"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 500);
    let why = r.text().await.unwrap();
    assert!(why.contains("rules.yml") && why.contains("parse"), "{why}");
    let metrics = reqwest::get(format!("{url}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("strata_rules_config_last_reload_successful 0"));
    assert!(metrics.contains("strata_rule_group_iterations_total{rule_group="));
    let r = get(&format!("{url}/api/v1/rules")).await;
    assert_eq!(r["data"]["groups"][0]["rules"].as_array().unwrap().len(), 3);

    // A good file: the new rules run, the alert's state carried over.
    std::fs::write(
        srv.dir.path().join("rules.yml"),
        RULES.replace("doubled", "tripled").replace("* 2", "* 3"),
    )
    .unwrap();
    let r = reqwest::Client::new()
        .post(format!("{url}/-/reload"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    eventually(20, "the reloaded rule", || async {
        instant(&url, "job:demo_requests:tripled{job=\"api\"}")
            .await
            .first()
            .is_some_and(|s| s["value"][1] == "45")
    })
    .await;
    let alerts = get(&format!("{url}/api/v1/alerts")).await;
    assert_eq!(alerts["data"]["alerts"][0]["state"], "firing", "{alerts}");

    writer.abort();
    srv.stop().await;
}
