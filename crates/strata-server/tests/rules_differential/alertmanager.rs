//! A real Alertmanager without receivers, one for each side: its API
//! shows the alerts it was sent, with their start times in ms.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common::{self, free_port, http_get};

/// An Alertmanager without receivers: its API shows what it was sent.
pub(crate) struct Alertmanager {
    child: Child,
    pub(crate) port: u16,
    _dir: tempfile::TempDir,
}

impl Alertmanager {
    pub(crate) fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("alertmanager.yml");
        std::fs::write(
            &config,
            "route:\n  receiver: none\nreceivers:\n  - name: none\n",
        )
        .unwrap();
        let port = free_port();
        let child = Command::new(common::alertmanager_bin())
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--cluster.listen-address=")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let am = Self {
            child,
            port,
            _dir: dir,
        };
        common::wait_until(
            Duration::from_secs(30),
            "Alertmanager is ready",
            || matches!(http_get(port, "/-/ready"), Ok(r) if r.status == 200),
        );
        am
    }

    /// The alerts it holds, as the comparison sees them: labels,
    /// annotations, `generatorURL`, and `startsAt` in ms.
    pub(crate) fn alerts(&self) -> Vec<(Value, i64)> {
        let r = http_get(self.port, "/api/v2/alerts").unwrap();
        assert_eq!(r.status, 200, "{}", r.text());
        let mut out: Vec<(Value, i64)> = r
            .json()
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                let key = serde_json::json!({
                    "labels": a["labels"],
                    "annotations": a["annotations"],
                    "generatorURL": a["generatorURL"],
                });
                (key, time_ms(a["startsAt"].as_str().unwrap()))
            })
            .collect();
        out.sort_by_key(|(k, _)| k.to_string());
        out
    }
}

impl Drop for Alertmanager {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An RFC 3339 time (any fraction) in ms since the epoch.
fn time_ms(s: &str) -> i64 {
    let t = humantime::parse_rfc3339(s).unwrap_or_else(|e| panic!("{s}: {e}"));
    t.duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
}
