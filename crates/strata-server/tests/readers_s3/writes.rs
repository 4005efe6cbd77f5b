//! Remote writes to a node, and one request whose answer may not come
//! (the object store paused).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use strata_remote_write::encode_v1;
use strata_remote_write::proto::v1::{self, TimeSeries, WriteRequest};

use crate::common::{http_request, HttpResponse};

/// One series to write; labels are sent sorted by name, as remote write
/// requires.
pub(crate) fn series(pairs: &[(&str, &str)], samples: &[(i64, f64)]) -> TimeSeries {
    let mut pairs = pairs.to_vec();
    pairs.sort();
    TimeSeries {
        labels: pairs
            .iter()
            .map(|(n, v)| v1::Label {
                name: n.to_string(),
                value: v.to_string(),
            })
            .collect(),
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

pub(crate) fn write_body(ts: Vec<TimeSeries>) -> Vec<u8> {
    let mut out = Vec::new();
    encode_v1(
        &WriteRequest {
            timeseries: ts,
            ..WriteRequest::default()
        },
        &mut out,
    );
    out
}

pub(crate) const WRITE_HEADERS: [(&str, &str); 3] = [
    ("Content-Type", "application/x-protobuf"),
    ("Content-Encoding", "snappy"),
    ("X-Prometheus-Remote-Write-Version", "0.1.0"),
];

pub(crate) fn write(port: u16, ts: Vec<TimeSeries>) -> HttpResponse {
    http_request(
        port,
        "POST",
        "/api/v1/write",
        &WRITE_HEADERS,
        &write_body(ts),
    )
    .unwrap_or_else(|e| panic!("POST /api/v1/write to :{port}: {e}"))
}

/// The status of one request, or `None` when no answer came within
/// `timeout` (the shared client waits up to a minute).
pub(crate) fn status_within(
    port: u16,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    timeout: Duration,
) -> Option<u16> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(timeout)).ok()?;
    let method = if body.is_empty() { "GET" } else { "POST" };
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).ok()?;
    s.write_all(body).ok()?;
    let mut buf = [0u8; 64];
    let mut got = Vec::new();
    while !got.windows(2).any(|w| w == b"\r\n") {
        let n = s.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        got.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&got)
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
}
