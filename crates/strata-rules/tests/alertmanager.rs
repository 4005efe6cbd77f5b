//! The notifier against a real Alertmanager 0.35: a firing alert and then
//! its resolved form go through the notifier (external labels and
//! relabeling applied); Alertmanager's API shows the alert, and its
//! webhook receiver is sent the firing and then the resolved notification.
//!
//! Alertmanager is built from its Go module by .ci/run into
//! `~/.cache/strata-test-bin/alertmanager-0.35.0/alertmanager`, or named by
//! `STRATA_ALERTMANAGER_BIN`. Without it the test fails.

// Test helpers may unwrap and index; the wall clock dates the alerts.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::routing::post;
use parking_lot::Mutex;
use serde_json::Value;
use strata_rules::group::{Notification, Notify};
use strata_rules::notifier::{Notifier, NotifierSettings};

fn alertmanager_bin() -> PathBuf {
    let bin = std::env::var_os("STRATA_ALERTMANAGER_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").expect("HOME is set");
            Path::new(&home).join(".cache/strata-test-bin/alertmanager-0.35.0/alertmanager")
        });
    assert!(
        bin.is_file(),
        "{} not found: build Alertmanager 0.35 as .ci/run does (its Go module \
         github.com/prometheus/alertmanager@v0.35.0, with stub pages in ui/app/dist, \
         `go build ./cmd/alertmanager`), or set STRATA_ALERTMANAGER_BIN",
        bin.display()
    );
    bin
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// An Alertmanager process, killed when dropped; its output goes to a
/// log file shown when the test fails.
struct Alertmanager {
    child: Child,
    base: String,
    log: PathBuf,
}

impl Alertmanager {
    fn start(dir: &Path, webhook: &str) -> Self {
        let config = dir.join("alertmanager.yml");
        std::fs::write(
            &config,
            format!(
                "route:\n  receiver: hook\n  group_by: [alertname]\n  group_wait: 1s\n  \
                 group_interval: 1s\n  repeat_interval: 1h\nreceivers:\n  - name: hook\n    \
                 webhook_configs:\n      - url: {webhook}\n        send_resolved: true\n"
            ),
        )
        .unwrap();
        let port = free_port();
        let log = dir.join("alertmanager.log");
        let out = std::fs::File::create(&log).unwrap();
        let child = Command::new(alertmanager_bin())
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--cluster.listen-address=")
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap();
        Self {
            child,
            base: format!("http://127.0.0.1:{port}"),
            log,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Alertmanager {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("alertmanager log:\n{}", self.log());
        }
    }
}

/// Polls `probe` every 100 ms until it gives a value, for at most `limit`.
async fn until<T, F, Fut>(what: &str, limit: Duration, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(v) = probe().await {
            return v;
        }
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn ls(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect()
}

fn json_labels(v: &Value) -> BTreeMap<String, String> {
    v.as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
        .collect()
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alerts_reach_alertmanager_and_its_receivers() {
    let dir = tempfile::tempdir().unwrap();

    // The webhook receiver: keeps every notification's body.
    let hooks: Arc<Mutex<Vec<Value>>> = Arc::default();
    let kept = Arc::clone(&hooks);
    let app = axum::Router::new().route(
        "/hook",
        post(move |body: String| {
            let kept = Arc::clone(&kept);
            async move {
                kept.lock().push(serde_json::from_str(&body).unwrap());
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let webhook = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let am = Alertmanager::start(dir.path(), &webhook);
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    until("Alertmanager to be ready", Duration::from_secs(30), || {
        let http = http.clone();
        let url = format!("{}/-/ready", am.base);
        async move {
            let r = http.get(url).send().await.ok()?;
            r.status().is_success().then_some(())
        }
    })
    .await;

    let settings: NotifierSettings = toml::from_str(&format!(
        r#"
        external_labels = {{ cluster = "eu1", severity = "not-used" }}

        # Global: the team from the service's name; scratch labels go.
        [[alert_relabel_configs]]
        source_labels = ["service"]
        regex = "(.+)-api"
        target_label = "team"
        replacement = "team-$1"
        [[alert_relabel_configs]]
        regex = "tmp_.*"
        action = "labeldrop"

        [[alertmanagers]]
        urls = ["{}"]
        timeout = "5s"
        # This group only: the cluster in upper case as a region.
        [[alertmanagers.alert_relabel_configs]]
        source_labels = ["cluster"]
        target_label = "region"
        action = "uppercase"
        "#,
        am.base
    ))
    .unwrap();
    let notifier = Notifier::start(&settings).unwrap();

    let started = now_ms() - 60_000;
    let firing = Notification {
        labels: ls(&[
            ("alertname", "StrataE2E"),
            ("service", "billing-api"),
            ("severity", "page"),
            ("tmp_debug", "x"),
        ]),
        annotations: ls(&[("summary", "billing is down"), ("runbook", "http://rb/1")]),
        starts_at: started,
        ends_at: now_ms() + 4 * 60_000,
        generator_url: "http://strata.example/graph?g0.expr=up".into(),
    };
    let want_labels = ls(&[
        ("alertname", "StrataE2E"),
        ("cluster", "eu1"),
        ("region", "EU1"),
        ("service", "billing-api"),
        ("severity", "page"),
        ("team", "team-billing"),
    ]);
    notifier.send(vec![firing.clone()]);

    // Alertmanager's API shows it, as relabeled.
    let shown = until(
        "the alert in /api/v2/alerts",
        Duration::from_secs(20),
        || {
            let http = http.clone();
            let url = format!("{}/api/v2/alerts", am.base);
            async move {
                let alerts: Vec<Value> = http.get(url).send().await.ok()?.json().await.ok()?;
                alerts
                    .into_iter()
                    .find(|a| a["labels"]["alertname"] == "StrataE2E")
            }
        },
    )
    .await;
    assert_eq!(json_labels(&shown["labels"]), want_labels, "{shown}");
    assert_eq!(json_labels(&shown["annotations"]), firing.annotations);
    assert_eq!(shown["generatorURL"], firing.generator_url);
    assert_eq!(shown["status"]["state"], "active");
    let starts = chrono::DateTime::parse_from_rfc3339(shown["startsAt"].as_str().unwrap())
        .unwrap()
        .timestamp_millis();
    assert_eq!(starts, started);

    // The receiver gets the firing notification (group_wait 1s).
    let note = |status: &'static str| {
        let hooks = Arc::clone(&hooks);
        move || {
            let found = hooks.lock().iter().find(|h| h["status"] == status).cloned();
            async move { found }
        }
    };
    let fired = until(
        "the firing webhook",
        Duration::from_secs(20),
        note("firing"),
    )
    .await;
    let alert = &fired["alerts"][0];
    assert_eq!(fired["alerts"].as_array().unwrap().len(), 1, "{fired}");
    assert_eq!(alert["status"], "firing");
    assert_eq!(json_labels(&alert["labels"]), want_labels);
    assert_eq!(json_labels(&alert["annotations"]), firing.annotations);
    assert_eq!(alert["generatorURL"], firing.generator_url);

    // Its resolved form: EndsAt is when it resolved.
    let resolved = Notification {
        ends_at: now_ms(),
        ..firing.clone()
    };
    notifier.send(vec![resolved.clone()]);
    let done = until(
        "the resolved webhook",
        Duration::from_secs(20),
        note("resolved"),
    )
    .await;
    let alert = &done["alerts"][0];
    assert_eq!(alert["status"], "resolved", "{done}");
    assert_eq!(json_labels(&alert["labels"]), want_labels);
    let ends = chrono::DateTime::parse_from_rfc3339(alert["endsAt"].as_str().unwrap())
        .unwrap()
        .timestamp_millis();
    assert_eq!(ends, resolved.ends_at);
    {
        let hooks = hooks.lock();
        let statuses: Vec<&str> = hooks
            .iter()
            .map(|h| h["status"].as_str().unwrap())
            .collect();
        let first_resolved = statuses.iter().position(|s| *s == "resolved").unwrap();
        assert!(
            statuses[..first_resolved].contains(&"firing"),
            "{statuses:?}"
        );
    }

    // Resolved alerts leave the API's list.
    until(
        "the alert to leave /api/v2/alerts",
        Duration::from_secs(20),
        || {
            let http = http.clone();
            let url = format!("{}/api/v2/alerts", am.base);
            async move {
                let alerts: Vec<Value> = http.get(url).send().await.ok()?.json().await.ok()?;
                (!alerts
                    .iter()
                    .any(|a| a["labels"]["alertname"] == "StrataE2E"))
                .then_some(())
            }
        },
    )
    .await;

    let stats = notifier.stats();
    let url = format!("{}/api/v2/alerts", am.base);
    let s = stats.alertmanager(&url).unwrap();
    assert_eq!((s.sent, s.errors), (2, 0));
    assert_eq!(stats.dropped(), 0);
    let mut metrics = String::new();
    stats.render("strata", &mut metrics);
    assert!(metrics.contains(&format!(
        "strata_notifications_sent_total{{alertmanager=\"{url}\"}} 2"
    )));
    assert!(metrics.contains("strata_notifications_alertmanagers_discovered 1"));
    notifier.shutdown().await;
    drop(am);
}
