//! What the import tests send and check: the import request and its
//! answer, OpenMetrics timestamps, the values of read-back series, and a
//! command (promtool, a curl pipe) run to its end.

use std::process::Command;

pub(crate) const PATH: &str = "/api/v1/import/prometheus";

pub(crate) async fn import(
    url: &str,
    query: &str,
    body: impl Into<reqwest::Body>,
    headers: &[(&str, &str)],
) -> (u16, String) {
    let mut req = reqwest::Client::new()
        .post(format!("{url}{PATH}{query}"))
        .body(body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let r = req.send().await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

pub(crate) fn expect(name: &str, got: &(u16, String), want: u16, needles: &[&str]) {
    assert_eq!(got.0, want, "{name}: {}", got.1);
    for n in needles {
        assert!(got.1.contains(n), "{name}: answer {:?} lacks {n:?}", got.1);
    }
}

/// Seconds with three decimals, as OpenMetrics and promtool write them.
pub(crate) fn om_time(ms: i64) -> String {
    format!("{}.{:03}", ms.div_euclid(1000), ms.rem_euclid(1000))
}

pub(crate) fn values(series: &[(serde_json::Value, Vec<(f64, String)>)]) -> Vec<Vec<String>> {
    series
        .iter()
        .map(|(_, s)| s.iter().map(|(_, v)| v.clone()).collect())
        .collect()
}

pub(crate) fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}): {text}",
        out.status
    );
    text
}
