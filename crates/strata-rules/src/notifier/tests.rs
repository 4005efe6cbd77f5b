//! The notifier against fake Alertmanagers served in the test.

use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use parking_lot::Mutex;

use super::*;

fn ls(pairs: &[(&str, &str)]) -> LabelSet {
    pairs
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect()
}

fn alert(name: &str) -> Notification {
    Notification {
        labels: ls(&[("alertname", name)]),
        annotations: ls(&[("summary", "s")]),
        starts_at: 1_700_000_000_000,
        ends_at: 1_700_000_240_000,
        generator_url: "http://strata/graph".into(),
    }
}

/// A request a fake Alertmanager received.
#[derive(Clone, Debug)]
struct Received {
    authorization: Option<String>,
    alerts: Vec<serde_json::Value>,
}

/// An HTTP server answering `POST {path}` with `status`, keeping what
/// it received.
struct FakeAm {
    base: String,
    received: Arc<Mutex<Vec<Received>>>,
}

impl FakeAm {
    async fn start(path: &str, status: StatusCode) -> Self {
        let received: Arc<Mutex<Vec<Received>>> = Arc::default();
        let kept = Arc::clone(&received);
        let app = axum::Router::new().route(
            path,
            post(move |headers: HeaderMap, body: String| {
                let kept = Arc::clone(&kept);
                async move {
                    let alerts: Vec<serde_json::Value> = serde_json::from_str(&body).unwrap();
                    kept.lock().push(Received {
                        authorization: headers
                            .get("authorization")
                            .map(|v| v.to_str().unwrap().to_owned()),
                        alerts,
                    });
                    status
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { base, received }
    }

    fn url(&self) -> String {
        format!("{}/api/v2/alerts", self.base)
    }

    fn alertnames(&self) -> Vec<String> {
        self.received
            .lock()
            .iter()
            .flat_map(|r| r.alerts.iter())
            .map(|a| a["labels"]["alertname"].as_str().unwrap().to_owned())
            .collect()
    }

    fn batch_sizes(&self) -> Vec<usize> {
        self.received
            .lock()
            .iter()
            .map(|r| r.alerts.len())
            .collect()
    }
}

fn group(urls: &[&str]) -> AlertmanagerSettings {
    AlertmanagerSettings {
        urls: urls.iter().map(|u| (*u).to_owned()).collect(),
        timeout: Duration::from_secs(5),
        ..Default::default()
    }
}

/// Waits until `done` holds, for at most 10 s.
async fn until(mut done: impl FnMut() -> bool) {
    for _ in 0..1000 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out");
}

#[test]
fn settings_defaults_and_toml() {
    let s: NotifierSettings = toml::from_str(
        r#"
        external_labels = { cluster = "eu1" }
        [[alertmanagers]]
        urls = ["http://am:9093", "dns+http://am-headless:9093"]
        path_prefix = "/am"
        timeout = "3s"
        basic_auth = { username = "u", password_file = "/run/pw" }
        [[alertmanagers.alert_relabel_configs]]
        source_labels = ["severity"]
        regex = "debug"
        action = "drop"
        "#,
    )
    .unwrap();
    s.validate().unwrap();
    assert_eq!(s.queue_capacity, 10_000);
    assert_eq!(s.max_batch_size, 256);
    assert!(s.drain_on_shutdown);
    let am = &s.alertmanagers[0];
    assert_eq!(am.timeout, Duration::from_secs(3));
    assert_eq!(am.api_version, ApiVersion::V2);
    assert_eq!(am.alert_relabel_configs.len(), 1);
    let d: AlertmanagerSettings = toml::from_str("urls = []").unwrap();
    assert_eq!(d.timeout, Duration::from_secs(10));

    let bad = |t: &str| match toml::from_str::<NotifierSettings>(t) {
        Ok(s) => s.validate().unwrap_err().to_string(),
        Err(e) => e.to_string(),
    };
    assert!(bad("[[alertmanagers]]\napi_version = \"v1\"").contains("v1"));
    assert!(
        bad("[[alertmanagers]]\nbearer_token = \"t\"\nbearer_token_file = \"f\"")
            .contains("at most one")
    );
    assert!(bad("[[alertmanagers]]\nurls = [\"am\"]").contains("port"));
    assert!(bad("queue_capacity = 0").contains("queue_capacity"));
    assert!(
        bad("[[alert_relabel_configs]]\naction = \"hashmod\"\ntarget_label = \"x\"")
            .contains("modulus")
    );
    // Secrets do not show.
    let shown = format!(
        "{:?}",
        toml::from_str::<NotifierSettings>("[[alertmanagers]]\nbearer_token = \"hunter2\"",)
            .unwrap()
    );
    assert!(!shown.contains("hunter2"));
}

#[test]
fn external_labels_fill_gaps_before_relabeling() {
    let external = ls(&[("cluster", "eu1"), ("alertname", "ignored")]);
    let configs: Vec<RelabelConfig> = vec![
        toml::from_str(
            "source_labels = [\"cluster\"]\ntarget_label = \"region\"\nregex = \"(..).*\"",
        )
        .unwrap(),
        toml::from_str("source_labels = [\"alertname\"]\nregex = \"Drop.*\"\naction = \"drop\"")
            .unwrap(),
    ];
    let out = relabel_alerts(vec![alert("Up"), alert("DropMe")], &external, &configs);
    assert_eq!(out.len(), 1);
    assert_eq!(
        out[0].labels,
        ls(&[("alertname", "Up"), ("cluster", "eu1"), ("region", "eu")])
    );
}

#[tokio::test]
async fn batches_of_at_most_max_batch_size_to_every_alertmanager() {
    let a = FakeAm::start("/api/v2/alerts", StatusCode::OK).await;
    let b = FakeAm::start("/pre/api/v2/alerts", StatusCode::OK).await;
    let c = FakeAm::start("/api/v2/alerts", StatusCode::OK).await;
    let mut second = group(&[&b.base]);
    second.path_prefix = "pre".into();
    let n = Notifier::start(&NotifierSettings {
        alertmanagers: vec![group(&[&a.base, &c.base]), second],
        max_batch_size: 10,
        ..Default::default()
    })
    .unwrap();
    // On this single-threaded runtime the task runs only once the test
    // awaits: all 25 are queued first.
    n.send((0..25).map(|i| alert(&format!("a{i}"))).collect());
    until(|| [&a, &b, &c].iter().all(|am| am.alertnames().len() == 25)).await;
    let want: Vec<String> = (0..25).map(|i| format!("a{i}")).collect();
    for am in [&a, &b, &c] {
        assert_eq!(am.batch_sizes(), vec![10, 10, 5]);
        assert_eq!(am.alertnames(), want);
    }
    let stats = n.stats();
    let mut urls = vec![a.url(), format!("{}/pre/api/v2/alerts", b.base), c.url()];
    urls.sort();
    assert_eq!(stats.alertmanagers(), urls);
    for url in &urls {
        let s = stats.alertmanager(url).unwrap();
        assert_eq!((s.sent, s.errors, s.latency_count), (25, 0, 3));
    }
    assert_eq!(stats.dropped(), 0);
    assert_eq!(stats.queue_length(), 0);
    n.shutdown().await;
}

#[tokio::test]
async fn a_full_queue_drops_the_oldest_and_counts_them() {
    let am = FakeAm::start("/api/v2/alerts", StatusCode::OK).await;
    let n = Notifier::start(&NotifierSettings {
        alertmanagers: vec![group(&[&am.base])],
        queue_capacity: 3,
        ..Default::default()
    })
    .unwrap();
    n.send(vec![alert("a0"), alert("a1")]);
    n.send(vec![alert("a2"), alert("a3")]);
    assert_eq!(n.stats().dropped(), 1);
    assert_eq!(n.stats().queue_length(), 3);
    n.send((4..9).map(|i| alert(&format!("a{i}"))).collect());
    assert_eq!(n.stats().dropped(), 1 + 3 + 2);
    until(|| am.alertnames().len() == 3).await;
    assert_eq!(am.alertnames(), vec!["a6", "a7", "a8"]);
    n.shutdown().await;
}

#[tokio::test]
async fn failed_sends_are_counted_and_not_retried() {
    let good = FakeAm::start("/api/v2/alerts", StatusCode::OK).await;
    let bad = FakeAm::start("/api/v2/alerts", StatusCode::INTERNAL_SERVER_ERROR).await;
    // One group where one Alertmanager takes the alerts: not dropped.
    let n = Notifier::start(&NotifierSettings {
        alertmanagers: vec![group(&[&good.base, &bad.base])],
        ..Default::default()
    })
    .unwrap();
    n.send(vec![alert("x"), alert("y")]);
    until(|| good.alertnames().len() == 2 && bad.alertnames().len() == 2).await;
    let stats = n.stats();
    until(|| stats.alertmanager(&bad.url()).unwrap().errors == 2).await;
    assert_eq!(stats.alertmanager(&bad.url()).unwrap().sent, 0);
    assert_eq!(stats.alertmanager(&good.url()).unwrap().sent, 2);
    assert_eq!(stats.dropped(), 0);
    n.shutdown().await;

    // A group where none does: the batch counts as dropped, once.
    let n = Notifier::start(&NotifierSettings {
        alertmanagers: vec![group(&[&bad.base]), group(&[&good.base])],
        ..Default::default()
    })
    .unwrap();
    n.send(vec![alert("z")]);
    let stats = n.stats();
    until(|| stats.dropped() == 1).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(bad.alertnames(), vec!["x", "y", "z"]);
    assert_eq!(good.alertnames(), vec!["x", "y", "z"]);
    assert_eq!(stats.alertmanager(&bad.url()).unwrap().errors, 1);
    n.shutdown().await;
}

#[tokio::test]
async fn unreachable_alertmanagers_count_errors() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = closed.local_addr().unwrap();
    drop(closed);
    let n = Notifier::start(&NotifierSettings {
        alertmanagers: vec![group(&[&format!("http://{addr}")])],
        ..Default::default()
    })
    .unwrap();
    n.send(vec![alert("x")]);
    let stats = n.stats();
    until(|| stats.dropped() == 1).await;
    let url = format!("http://{addr}/api/v2/alerts");
    assert_eq!(stats.alertmanager(&url).unwrap().errors, 1);
    n.shutdown().await;
}

#[tokio::test]
async fn credentials_and_per_group_relabeling() {
    let basic = FakeAm::start("/api/v2/alerts", StatusCode::OK).await;
    let bearer = FakeAm::start("/api/v2/alerts", StatusCode::OK).await;
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "tok3n\n").unwrap();
    let mut g1 = group(&[&basic.base]);
    g1.basic_auth = Some(BasicAuth {
        username: "user".into(),
        password: Some(Secret("pass".into())),
        password_file: None,
    });
    let mut g2 = group(&[&bearer.base]);
    g2.bearer_token_file = Some(token_file);
    g2.alert_relabel_configs = vec![toml::from_str(
        "source_labels = [\"alertname\"]\nregex = \"quiet\"\naction = \"drop\"",
    )
    .unwrap()];
    let n = Notifier::start(&NotifierSettings {
        alertmanagers: vec![g1, g2],
        external_labels: ls(&[("cluster", "c1")]),
        ..Default::default()
    })
    .unwrap();
    n.send(vec![alert("loud"), alert("quiet")]);
    until(|| basic.alertnames().len() == 2 && bearer.alertnames().len() == 1).await;
    let r = basic.received.lock()[0].clone();
    // base64("user:pass")
    assert_eq!(r.authorization.as_deref(), Some("Basic dXNlcjpwYXNz"));
    assert_eq!(r.alerts[0]["labels"]["cluster"], "c1");
    let r = bearer.received.lock()[0].clone();
    assert_eq!(r.authorization.as_deref(), Some("Bearer tok3n"));
    assert_eq!(bearer.alertnames(), vec!["loud"]);
    n.shutdown().await;
}

#[tokio::test]
async fn shutdown_drains_or_drops() {
    let am = FakeAm::start("/api/v2/alerts", StatusCode::OK).await;
    let n = Notifier::start(&NotifierSettings {
        alertmanagers: vec![group(&[&am.base])],
        ..Default::default()
    })
    .unwrap();
    n.send(vec![alert("a")]);
    n.shutdown().await;
    assert_eq!(am.alertnames(), vec!["a"]);
    n.send(vec![alert("after")]);
    assert_eq!(n.stats().queue_length(), 0);

    let n = Notifier::start(&NotifierSettings {
        alertmanagers: vec![group(&[&am.base])],
        drain_on_shutdown: false,
        ..Default::default()
    })
    .unwrap();
    n.send(vec![alert("b"), alert("c")]);
    n.shutdown().await;
    assert_eq!(n.stats().dropped(), 2);
    assert_eq!(am.alertnames(), vec!["a"]);
}

#[tokio::test]
async fn reload_switches_alertmanagers() {
    let first = FakeAm::start("/api/v2/alerts", StatusCode::OK).await;
    let second = FakeAm::start("/api/v2/alerts", StatusCode::OK).await;
    let n = Notifier::start(&NotifierSettings {
        alertmanagers: vec![group(&[&first.base])],
        ..Default::default()
    })
    .unwrap();
    n.send(vec![alert("one")]);
    until(|| first.alertnames().len() == 1).await;
    let bad = NotifierSettings {
        queue_capacity: 0,
        ..Default::default()
    };
    assert!(n.reload(&bad).is_err());
    n.reload(&NotifierSettings {
        alertmanagers: vec![group(&[&second.base])],
        ..Default::default()
    })
    .unwrap();
    n.send(vec![alert("two")]);
    until(|| second.alertnames().len() == 1).await;
    assert_eq!(first.alertnames(), vec!["one"]);
    assert_eq!(n.stats().alertmanagers(), vec![second.url()]);
    n.shutdown().await;
}
