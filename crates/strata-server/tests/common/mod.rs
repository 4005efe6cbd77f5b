//! Harness for end-to-end tests: the `strata` binary and real external
//! systems (Prometheus, node_exporter) as child processes on free ports,
//! killed on drop, their logs kept in files and printed when a test fails.
//!
//! Each test binary compiles this module on its own and uses part of it.
#![allow(dead_code)]

pub mod s3;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tempfile::TempDir;

/// How long a process may take to answer its readiness endpoint.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a stopped process may take to exit.
const EXIT_TIMEOUT: Duration = Duration::from_secs(30);

pub const PROMETHEUS_BIN: &str = "/usr/bin/prometheus";
pub const NODE_EXPORTER_BIN: &str = "/usr/bin/prometheus-node-exporter";

/// A port nobody listens on right now (the kernel's pick for 127.0.0.1:0).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind 127.0.0.1:0")
        .port()
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as i64
}

/// A Prometheus API timestamp: seconds with millisecond precision.
pub fn api_time(ms: i64) -> String {
    format!("{}.{:03}", ms.div_euclid(1000), ms.rem_euclid(1000))
}

/// Polls `ready` every 100 ms until it holds; panics naming `what` after
/// `timeout`.
pub fn wait_until(timeout: Duration, what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    loop {
        if ready() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting until {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Panics with install instructions when an external binary is missing:
/// these tests must fail, not skip, on a machine without it.
pub fn require_binary(path: &str, debian_package: &str) {
    assert!(
        Path::new(path).is_file(),
        "{path} not found: install Debian's `{debian_package}` package \
         (apt-get install {debian_package}); .ci/run does this"
    );
}

// ---------------------------------------------------------------- HTTP

/// An HTTP answer, body fully read.
#[derive(Debug)]
pub struct HttpResponse {
    pub status: u16,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "answer is not JSON ({e}): status {}: {}",
                self.status,
                self.text()
            )
        })
    }
}

/// One HTTP/1.1 request to 127.0.0.1:`port` on a fresh connection, closed
/// after the answer. Blocking, so it works from any test, async or not.
pub fn http_request(
    port: u16,
    method: &str,
    path_and_query: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<HttpResponse> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut head = format!(
        "{method} {path_and_query} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
         Connection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    parse_response(&raw).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

fn parse_response(raw: &[u8]) -> Result<HttpResponse, String> {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("no end of headers")?;
    let head = std::str::from_utf8(&raw[..split]).map_err(|e| e.to_string())?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().ok_or("no status line")?;
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("bad status line {status_line:?}"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let rest = &raw[split + 4..];
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.eq_ignore_ascii_case("chunked"));
    let body = if chunked {
        dechunk(rest)?
    } else {
        rest.to_vec()
    };
    Ok(HttpResponse {
        status,
        headers,
        body,
    })
}

fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        let eol = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("truncated chunk size")?;
        let size_text = std::str::from_utf8(&rest[..eol]).map_err(|e| e.to_string())?;
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|e| format!("bad chunk size {size_text:?}: {e}"))?;
        rest = &rest[eol + 2..];
        if size == 0 {
            return Ok(body);
        }
        if rest.len() < size + 2 {
            return Err("truncated chunk".into());
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

pub fn http_get(port: u16, path_and_query: &str) -> std::io::Result<HttpResponse> {
    http_request(port, "GET", path_and_query, &[], &[])
}

/// `k=v&k=v` with every byte but the unreserved ones percent-encoded.
pub fn query_string(params: &[(&str, &str)]) -> String {
    fn enc(s: &str) -> String {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect()
    }
    params
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

// ------------------------------------------------------- query results

/// A label set, as the query API's `metric` object.
pub type Labels = BTreeMap<String, String>;
/// A range-vector result: per series, its samples as (milliseconds, value
/// exactly as the API printed it).
pub type Matrix = BTreeMap<Labels, Vec<(i64, String)>>;

/// Runs an instant query that must answer a matrix (`selector[range]`) at
/// `time_ms` against the Prometheus API on `port`.
pub fn query_matrix(port: u16, query: &str, time_ms: i64) -> Matrix {
    let path = format!(
        "/api/v1/query?{}",
        query_string(&[("query", query), ("time", &api_time(time_ms))])
    );
    let resp = http_get(port, &path).unwrap_or_else(|e| panic!("GET :{port}{path}: {e}"));
    assert_eq!(
        resp.status,
        200,
        "GET :{port}{path} answered {}: {}",
        resp.status,
        resp.text()
    );
    let json = resp.json();
    assert_eq!(json["status"], "success", "GET :{port}{path}: {json}");
    assert_eq!(
        json["data"]["resultType"], "matrix",
        "GET :{port}{path}: {json}"
    );
    let mut out = Matrix::new();
    for series in json["data"]["result"].as_array().expect("result array") {
        let labels: Labels = series["metric"]
            .as_object()
            .expect("metric object")
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().expect("label value").to_owned()))
            .collect();
        let samples = series["values"]
            .as_array()
            .expect("values array")
            .iter()
            .map(|p| {
                let ts = p[0].as_f64().expect("timestamp number");
                let v = p[1].as_str().expect("value string").to_owned();
                ((ts * 1000.0).round() as i64, v)
            })
            .collect();
        let dup = out.insert(labels.clone(), samples);
        assert!(dup.is_none(), "GET :{port}{path}: series {labels:?} twice");
    }
    out
}

/// Runs an instant query and answers its vector result as label sets and
/// values.
pub fn query_vector(port: u16, query: &str) -> Vec<(Labels, String)> {
    let path = format!("/api/v1/query?{}", query_string(&[("query", query)]));
    let resp = http_get(port, &path).unwrap_or_else(|e| panic!("GET :{port}{path}: {e}"));
    assert_eq!(resp.status, 200, "GET :{port}{path}: {}", resp.text());
    let json = resp.json();
    assert_eq!(
        json["data"]["resultType"], "vector",
        "GET :{port}{path}: {json}"
    );
    json["data"]["result"]
        .as_array()
        .expect("result array")
        .iter()
        .map(|s| {
            let labels = s["metric"]
                .as_object()
                .expect("metric object")
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().expect("label value").to_owned()))
                .collect();
            (labels, s["value"][1].as_str().expect("value").to_owned())
        })
        .collect()
}

/// Describes how `actual` differs from `expected`, or `None` when equal:
/// series only in one of them, and per series the first differing sample.
pub fn matrix_diff(expected: &Matrix, actual: &Matrix) -> Option<String> {
    let mut out = Vec::new();
    for labels in expected.keys().filter(|l| !actual.contains_key(*l)) {
        out.push(format!("missing series {labels:?}"));
    }
    for labels in actual.keys().filter(|l| !expected.contains_key(*l)) {
        out.push(format!("unexpected series {labels:?}"));
    }
    for (labels, want) in expected {
        let Some(got) = actual.get(labels) else {
            continue;
        };
        if want == got {
            continue;
        }
        let first = want
            .iter()
            .zip(got)
            .position(|(w, g)| w != g)
            .unwrap_or(want.len().min(got.len()));
        out.push(format!(
            "series {labels:?}: {} samples expected, {} got; first difference at index {first}: \
             expected {:?}, got {:?}",
            want.len(),
            got.len(),
            want.get(first),
            got.get(first)
        ));
    }
    if out.is_empty() {
        None
    } else {
        Some(out.join("\n"))
    }
}

// ----------------------------------------------------------- processes

/// Stops `child` with SIGTERM and waits for it to exit.
fn terminate(child: &mut Child, name: &str) -> ExitStatus {
    if let Ok(Some(status)) = child.try_wait() {
        return status;
    }
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + EXIT_TIMEOUT;
    loop {
        if let Some(status) = child.try_wait().expect("wait for child") {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{name} did not exit within {EXIT_TIMEOUT:?} of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Kills `child` unless it has exited, then reaps it.
fn kill(child: &mut Child) {
    if let Ok(None) = child.try_wait() {
        let _ = child.kill();
    }
    let _ = child.wait();
}

fn print_log(name: &str, path: &Path) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| format!("(cannot read: {e})"));
    // The end of a log is what explains a failure; keep it bounded.
    let tail: String = {
        let chars: Vec<char> = text.chars().collect();
        let from = chars.len().saturating_sub(20_000);
        chars[from..].iter().collect()
    };
    eprintln!(
        "----- {name} log ({}) -----\n{tail}\n----- end of {name} log -----",
        path.display()
    );
}

/// Spawns `cmd` with stdout and stderr into `log`.
fn spawn_logged(mut cmd: Command, log: &Path, name: &str) -> Child {
    let out = File::create(log).expect("create log file");
    let err = out.try_clone().expect("clone log file");
    cmd.stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {name} ({cmd:?}): {e}"))
}

/// Waits until GET `path` on `port` answers 200, panicking with the log if
/// the child exits first or the wait times out.
fn wait_ready(child: &mut Child, port: u16, path: &str, name: &str, log: &Path) {
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        if let Some(status) = child.try_wait().expect("wait for child") {
            print_log(name, log);
            panic!("{name} exited with {status} before it was ready");
        }
        if matches!(http_get(port, path), Ok(r) if r.status == 200) {
            return;
        }
        if Instant::now() >= deadline {
            kill(child);
            print_log(name, log);
            panic!("{name} did not answer 200 on {path} within {READY_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A `strata serve` process on a free port over a folder object store.
pub struct StrataProcess {
    pub port: u16,
    pub child: Child,
    log: PathBuf,
    _logs: TempDir,
}

impl StrataProcess {
    /// Starts `strata serve` on `dir` (its object store) with `extra_env`
    /// (e.g. `STRATA_STORAGE_FLUSH_INTERVAL=100ms`) on a free port and waits
    /// for `/-/ready`.
    pub fn start(dir: &Path, extra_env: &[(&str, &str)]) -> Self {
        Self::start_on(free_port(), dir, extra_env)
    }

    /// Like [`StrataProcess::start`] on a given port: a restart where
    /// clients know the old address.
    pub fn start_on(port: u16, dir: &Path, extra_env: &[(&str, &str)]) -> Self {
        let logs = tempfile::tempdir().expect("temp dir for logs");
        let log = logs.path().join("strata.log");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
        cmd.args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .arg("--object-store")
            .arg(dir)
            .env("STRATA_SERVER_LOG_LEVEL", "info")
            .env_remove("RUST_LOG");
        for (k, v) in extra_env {
            cmd.env(k, v);
        }
        let mut child = spawn_logged(cmd, &log, "strata");
        wait_ready(&mut child, port, "/-/ready", "strata", &log);
        Self {
            port,
            child,
            log,
            _logs: logs,
        }
    }

    /// Stops the server with SIGTERM (a graceful shutdown) and answers its
    /// exit status.
    pub fn stop(mut self) -> ExitStatus {
        terminate(&mut self.child, "strata")
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for StrataProcess {
    fn drop(&mut self) {
        kill(&mut self.child);
        if std::thread::panicking() {
            print_log("strata", &self.log);
        }
    }
}

/// The real Prometheus (Debian's `prometheus`) on its own temporary TSDB.
pub struct PrometheusProcess {
    pub port: u16,
    pub child: Child,
    dir: TempDir,
}

impl PrometheusProcess {
    /// Starts Prometheus with `config_yaml` on a free port.
    pub fn start(config_yaml: &str, extra_args: &[&str]) -> Self {
        Self::start_on(free_port(), config_yaml, extra_args)
    }

    /// Starts Prometheus on `port`, for configurations that must name it
    /// (a Prometheus scraping itself), and waits for `/-/ready`.
    pub fn start_on(port: u16, config_yaml: &str, extra_args: &[&str]) -> Self {
        require_binary(PROMETHEUS_BIN, "prometheus");
        let dir = tempfile::tempdir().expect("temp dir for Prometheus");
        let config = dir.path().join("prometheus.yml");
        std::fs::write(&config, config_yaml).expect("write prometheus.yml");
        let log = dir.path().join("prometheus.log");
        let mut cmd = Command::new(PROMETHEUS_BIN);
        cmd.arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .args(extra_args);
        let mut child = spawn_logged(cmd, &log, "prometheus");
        wait_ready(&mut child, port, "/-/ready", "prometheus", &log);
        Self { port, child, dir }
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("prometheus.log")
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }
}

impl Drop for PrometheusProcess {
    fn drop(&mut self) {
        kill(&mut self.child);
        if std::thread::panicking() {
            print_log("prometheus", &self.log_path());
        }
    }
}

/// Debian's `prometheus-node-exporter` with a few cheap, container-safe
/// collectors: counters (cpu, network) and gauges (memory, load, time).
pub struct NodeExporterProcess {
    pub port: u16,
    pub child: Child,
    log: PathBuf,
    _dir: TempDir,
}

impl NodeExporterProcess {
    pub fn start() -> Self {
        require_binary(NODE_EXPORTER_BIN, "prometheus-node-exporter");
        let dir = tempfile::tempdir().expect("temp dir for node_exporter");
        let log = dir.path().join("node_exporter.log");
        let port = free_port();
        let mut cmd = Command::new(NODE_EXPORTER_BIN);
        cmd.arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--collector.disable-defaults")
            .args([
                "--collector.cpu",
                "--collector.meminfo",
                "--collector.netdev",
                "--collector.loadavg",
                "--collector.time",
            ]);
        let mut child = spawn_logged(cmd, &log, "node_exporter");
        wait_ready(&mut child, port, "/metrics", "node_exporter", &log);
        Self {
            port,
            child,
            log,
            _dir: dir,
        }
    }
}

impl Drop for NodeExporterProcess {
    fn drop(&mut self) {
        kill(&mut self.child);
        if std::thread::panicking() {
            print_log("node_exporter", &self.log);
        }
    }
}
