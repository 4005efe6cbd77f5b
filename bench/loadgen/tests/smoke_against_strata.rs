//! The load generator against a real Strata, in-process: a few seconds at a
//! low rate, no drops or errors, and every accepted sample's series is
//! queryable afterwards.

use std::time::Duration;

use strata_loadgen::{run, LoadConfig};
use strata_server::config::{Config, Overrides};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loadgen_against_strata() {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let overrides = Overrides {
        listen: Some(format!("127.0.0.1:{port}")),
        object_store: Some(dir.path().join("data").display().to_string()),
        ..Overrides::default()
    };
    let config = Config::load(None, std::iter::empty(), &overrides).unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(strata_server::run(config, async {
        let _ = stopped.await;
    }));
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let mut ready = false;
    for _ in 0..400 {
        if let Ok(r) = client.get(format!("{base}/-/ready")).send().await {
            if r.status() == 200 {
                ready = true;
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(ready, "strata did not become ready");

    // Two targets scraped every second: 2,000 samples/s, 1,000-sample
    // batches, for 3 s.
    let summary = run(
        LoadConfig {
            url: format!("{base}/api/v1/write"),
            rate: 2000.0,
            duration: Duration::from_secs(3),
            targets: Some(2),
            batch_size: 1000,
            senders: 2,
            progress_interval: Duration::from_secs(1),
            ..LoadConfig::default()
        },
        |_| {},
    )
    .await
    .unwrap();
    assert!(summary.clean(), "{summary:#?}");
    assert_eq!(summary.samples_accepted, 6000, "{summary:#?}");
    assert_eq!(summary.unique_series, 2000);
    assert!(summary.latency.count == 6 && summary.latency.max_ms < 2000.0);

    let r: serde_json::Value = client
        .get(format!("{base}/api/v1/query"))
        .query(&[("query", "count({__name__=~\".+\"})")])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(r["status"], "success", "{r}");
    let count: f64 = r["data"]["result"][0]["value"][1]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(count, 2000.0, "{r}");

    let r: serde_json::Value = client
        .get(format!("{base}/api/v1/query"))
        .query(&[("query", "up[1m]")])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let per_target: Vec<f64> = r["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["values"].as_array().unwrap().len() as f64)
        .collect();
    assert_eq!(per_target, vec![3.0, 3.0], "{r}");

    let _ = stop.send(());
    server.await.unwrap().unwrap();
}
