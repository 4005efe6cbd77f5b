//! A ruler's output, remote-written to a distributor or writer (1.0,
//! snappy), in the name of the rules' tenant, and kept for the ruler's
//! own queries.

use std::sync::Arc;
use std::time::Duration;

use strata_codec::Label;
use strata_remote_write::proto::v1;
use strata_rules::group::Sink;

use super::overlay::RecentWrites;
use crate::tenants::TENANT_HEADER;

/// Tries of one write: a retryable failure (transport, 5xx, 429) is tried
/// again after 0.5 s, then 1 s.
const TRIES: u32 = 3;

/// Where one tenant's rules write.
pub struct RemoteSink {
    pub client: reqwest::Client,
    /// `<write_url>/api/v1/write`.
    pub url: String,
    /// `None`: the default tenant (no header).
    pub tenant: Option<String>,
    pub bearer_token: Option<String>,
    pub recent: Arc<RecentWrites>,
}

/// The 1.0 request for `samples`.
fn request(samples: &[(Vec<Label>, i64, f64)]) -> v1::WriteRequest {
    v1::WriteRequest {
        timeseries: samples
            .iter()
            .map(|(labels, t, v)| v1::TimeSeries {
                labels: labels
                    .iter()
                    .map(|l| v1::Label {
                        name: l.name.clone(),
                        value: l.value.clone(),
                    })
                    .collect(),
                samples: vec![v1::Sample {
                    value: *v,
                    timestamp: *t,
                }],
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

#[async_trait::async_trait]
impl Sink for RemoteSink {
    async fn write(&self, samples: Vec<(Vec<Label>, i64, f64)>) -> Result<(), String> {
        let mut body = Vec::new();
        strata_remote_write::encode_v1(&request(&samples), &mut body);
        let body = bytes::Bytes::from(body);
        let mut last = String::new();
        for attempt in 0..TRIES {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(500 << (attempt - 1))).await;
            }
            let mut req = self
                .client
                .post(&self.url)
                .header("content-type", "application/x-protobuf")
                .header("content-encoding", "snappy")
                .header("x-prometheus-remote-write-version", "0.1.0")
                .body(body.clone());
            if let Some(t) = &self.tenant {
                req = req.header(TENANT_HEADER, t);
            }
            if let Some(token) = &self.bearer_token {
                req = req.bearer_auth(token);
            }
            match req.send().await {
                Ok(resp) if resp.status().is_success() => {
                    self.recent.add(&samples);
                    return Ok(());
                }
                Ok(resp) => {
                    let status = resp.status();
                    let text = resp.text().await.unwrap_or_default();
                    last = format!(
                        "writing the rule's output to {} failed ({status}): {}",
                        self.url,
                        text.trim()
                    );
                    if !(status.is_server_error() || status.as_u16() == 429) {
                        return Err(last);
                    }
                }
                Err(e) => {
                    last = format!("writing the rule's output to {} failed: {e}", self.url);
                }
            }
        }
        Err(last)
    }
}
