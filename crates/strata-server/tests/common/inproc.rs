//! An in-process `strata` server on a temporary folder, and remote-write
//! and query helpers for HTTP-level tests.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

use std::time::Duration;

use strata_remote_write::encode_v1;
use strata_remote_write::proto::v1::{self, TimeSeries, WriteRequest};
use strata_server::config::{Config, Overrides};

pub struct Server {
    pub url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
    pub dir: tempfile::TempDir,
}

impl Server {
    /// Starts a server with `STRATA_*` settings `env` on a new folder.
    pub async fn start(env: &[(&str, &str)]) -> Self {
        Self::start_in(tempfile::tempdir().unwrap(), env).await
    }

    /// Starts a server on `dir` (its `data` folder is the object store).
    pub async fn start_in(dir: tempfile::TempDir, env: &[(&str, &str)]) -> Self {
        Self::start_with(dir, env, reqwest::Client::new(), "http").await
    }

    /// Starts a server on `dir` whose object store is seen through `layer`
    /// (e.g. a fault-injecting store).
    pub async fn start_layered(
        dir: tempfile::TempDir,
        env: &[(&str, &str)],
        layer: strata_server::StoreLayer,
    ) -> Self {
        Self::launch(dir, env, reqwest::Client::new(), "http", Some(layer)).await
    }

    /// Starts a server and waits until `client` finds it ready at
    /// `scheme://127.0.0.1:<port>` (https with TLS settings in `env`).
    pub async fn start_with(
        dir: tempfile::TempDir,
        env: &[(&str, &str)],
        client: reqwest::Client,
        scheme: &str,
    ) -> Self {
        Self::launch(dir, env, client, scheme, None).await
    }

    async fn launch(
        dir: tempfile::TempDir,
        env: &[(&str, &str)],
        client: reqwest::Client,
        scheme: &str,
        layer: Option<strata_server::StoreLayer>,
    ) -> Self {
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
        let config = Config::load(
            None,
            env.iter().map(|(k, v)| (k.to_string(), v.to_string())),
            &overrides,
        )
        .unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let stopped = async {
            let _ = stopped.await;
        };
        let task = match layer {
            Some(layer) => {
                tokio::spawn(strata_server::run_with_store_layer(config, stopped, layer))
            }
            None => tokio::spawn(strata_server::run(config, stopped)),
        };
        let url = format!("{scheme}://127.0.0.1:{port}");
        for _ in 0..400 {
            if let Ok(r) = client.get(format!("{url}/-/ready")).send().await {
                if r.status() == 200 {
                    return Self {
                        url,
                        stop: Some(stop),
                        task,
                        dir,
                    };
                }
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("server did not become ready");
    }

    /// Whether `/-/healthy` answers 200.
    pub async fn healthy(&self) -> bool {
        reqwest::get(format!("{}/-/healthy", self.url))
            .await
            .is_ok_and(|r| r.status() == 200)
    }

    /// Stops the server gracefully and hands its folder back.
    pub async fn stop(mut self) -> tempfile::TempDir {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        (&mut self.task).await.unwrap().unwrap();
        std::mem::replace(&mut self.dir, tempfile::tempdir().unwrap())
    }
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

pub fn labels(pairs: &[(&str, &str)]) -> Vec<v1::Label> {
    pairs
        .iter()
        .map(|(n, v)| v1::Label {
            name: n.to_string(),
            value: v.to_string(),
        })
        .collect()
}

pub fn ts(pairs: &[(&str, &str)], samples: &[(i64, f64)]) -> TimeSeries {
    TimeSeries {
        labels: labels(pairs),
        samples: samples
            .iter()
            .map(|&(t, v)| v1::Sample {
                value: v,
                timestamp: t,
            })
            .collect(),
        ..TimeSeries::default()
    }
}

pub fn body(series: Vec<TimeSeries>) -> Vec<u8> {
    let mut out = Vec::new();
    encode_v1(
        &WriteRequest {
            timeseries: series,
            ..WriteRequest::default()
        },
        &mut out,
    );
    out
}

/// Remote-writes `body` (1.0 unless `headers` say otherwise).
pub async fn post(
    url: &str,
    body: Vec<u8>,
    headers: &[(&str, &str)],
) -> (u16, String, reqwest::header::HeaderMap) {
    post_with(&reqwest::Client::new(), url, body, headers).await
}

/// [`post`] with a given client (TLS settings, client certificates).
pub async fn post_with(
    client: &reqwest::Client,
    url: &str,
    body: Vec<u8>,
    headers: &[(&str, &str)],
) -> (u16, String, reqwest::header::HeaderMap) {
    let mut h = reqwest::header::HeaderMap::new();
    let defaults = [
        ("Content-Type", "application/x-protobuf"),
        ("Content-Encoding", "snappy"),
        ("X-Prometheus-Remote-Write-Version", "0.1.0"),
    ];
    for (k, v) in defaults.iter().chain(headers) {
        h.insert(
            reqwest::header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            v.parse().unwrap(),
        );
    }
    let r = client
        .post(format!("{url}/api/v1/write"))
        .headers(h)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    (status, r.text().await.unwrap(), headers)
}

/// Raw samples of `selector` over the last hour, as (labels, [(t, v)]).
pub async fn raw(url: &str, selector: &str) -> Vec<(serde_json::Value, Vec<(f64, String)>)> {
    raw_as(url, selector, &[]).await
}

/// [`raw`] with extra request headers (tenant, credentials).
pub async fn raw_as(
    url: &str,
    selector: &str,
    headers: &[(&str, &str)],
) -> Vec<(serde_json::Value, Vec<(f64, String)>)> {
    let mut req = reqwest::Client::new().get(format!("{url}/api/v1/query"));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let r: serde_json::Value = req
        .query(&[
            ("query", format!("{selector}[1h]")),
            ("time", format!("{}", now_ms() as f64 / 1000.0 + 60.0)),
        ])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(r["status"], "success", "{r}");
    let mut out: Vec<_> = r["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let vals = s["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| (p[0].as_f64().unwrap(), p[1].as_str().unwrap().to_string()))
                .collect();
            (s["metric"].clone(), vals)
        })
        .collect();
    out.sort_by_key(|a| a.0.to_string());
    out
}
