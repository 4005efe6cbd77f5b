//! Child processes on free ports: killed on drop, logs in files printed
//! when the test fails.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::{
    free_port, http_get, require_binary, NODE_EXPORTER_BIN, PROMETHEUS_BIN, VICTORIA_METRICS_BIN,
};

/// How long a process may take to answer its readiness endpoint.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a stopped process may take to exit.
const EXIT_TIMEOUT: Duration = Duration::from_secs(30);

/// Stops `child` with SIGTERM and waits for it to exit.
fn terminate(child: &mut Child, name: &str) -> ExitStatus {
    if let Ok(Some(status)) = child.try_wait() {
        return status;
    }
    // The shell's builtin kill: std has no signals but SIGKILL, and a
    // minimal image may lack procps' kill.
    let sent = Command::new("sh")
        .args(["-c", "kill -TERM \"$0\"", &child.id().to_string()])
        .status();
    assert!(
        matches!(sent, Ok(s) if s.success()),
        "cannot send SIGTERM to {name}: {sent:?}"
    );
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

    /// Kills the server with SIGKILL (a crash: nothing is flushed) and
    /// reaps it. The value stays, so a test failing later still prints the
    /// killed server's log.
    pub fn kill9(&mut self) -> ExitStatus {
        self.child.kill().expect("send SIGKILL to strata");
        self.child.wait().expect("reap strata")
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
        Self::launch(
            Path::new(PROMETHEUS_BIN),
            port,
            config_yaml,
            None,
            extra_args,
        )
    }

    /// Starts the Prometheus binary `bin` (another version than Debian's)
    /// on `port` with its own temporary TSDB.
    pub fn start_binary_on(bin: &Path, port: u16, config_yaml: &str, extra_args: &[&str]) -> Self {
        Self::launch(bin, port, config_yaml, None, extra_args)
    }

    /// Starts the Prometheus binary `bin` (another version than Debian's)
    /// on the existing TSDB in `data`, on a free port.
    pub fn start_binary_on_tsdb(
        bin: &Path,
        config_yaml: &str,
        data: &Path,
        extra_args: &[&str],
    ) -> Self {
        Self::launch(bin, free_port(), config_yaml, Some(data), extra_args)
    }

    fn launch(
        bin: &Path,
        port: u16,
        config_yaml: &str,
        data: Option<&Path>,
        extra_args: &[&str],
    ) -> Self {
        let dir = tempfile::tempdir().expect("temp dir for Prometheus");
        let config = dir.path().join("prometheus.yml");
        std::fs::write(&config, config_yaml).expect("write prometheus.yml");
        let log = dir.path().join("prometheus.log");
        let data = data.map_or_else(|| dir.path().join("data"), Path::to_path_buf);
        let mut cmd = Command::new(bin);
        cmd.arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", data.display()))
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

/// Debian's single-node VictoriaMetrics on its own temporary folder.
pub struct VictoriaMetricsProcess {
    pub port: u16,
    pub child: Child,
    log: PathBuf,
    _dir: TempDir,
}

impl VictoriaMetricsProcess {
    pub fn start() -> Self {
        require_binary(VICTORIA_METRICS_BIN, "victoria-metrics");
        let dir = tempfile::tempdir().expect("temp dir for VictoriaMetrics");
        let log = dir.path().join("victoria-metrics.log");
        let port = free_port();
        let mut cmd = Command::new(VICTORIA_METRICS_BIN);
        cmd.arg(format!(
            "-storageDataPath={}",
            dir.path().join("data").display()
        ))
        .arg(format!("-httpListenAddr=127.0.0.1:{port}"))
        .arg("-retentionPeriod=100y");
        let mut child = spawn_logged(cmd, &log, "victoria-metrics");
        wait_ready(&mut child, port, "/health", "victoria-metrics", &log);
        Self {
            port,
            child,
            log,
            _dir: dir,
        }
    }
}

impl Drop for VictoriaMetricsProcess {
    fn drop(&mut self) {
        kill(&mut self.child);
        if std::thread::panicking() {
            print_log("victoria-metrics", &self.log);
        }
    }
}

/// A vmagent (`bin`: Debian's or a newer build) scraping with
/// `config_yaml` and remote-writing to each of `urls`, with
/// `-remoteWrite.label` pairs `labels` added to every series.
pub struct VmagentProcess {
    pub port: u16,
    pub child: Child,
    dir: TempDir,
}

impl VmagentProcess {
    pub fn start(bin: &Path, config_yaml: &str, urls: &[String], labels: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("temp dir for vmagent");
        let config = dir.path().join("scrape.yml");
        std::fs::write(&config, config_yaml).expect("write scrape.yml");
        let log = dir.path().join("vmagent.log");
        let port = free_port();
        let mut cmd = Command::new(bin);
        cmd.arg(format!("-promscrape.config={}", config.display()))
            .arg(format!("-httpListenAddr=127.0.0.1:{port}"))
            .arg(format!(
                "-remoteWrite.tmpDataPath={}",
                dir.path().join("queue").display()
            ))
            .arg("-remoteWrite.flushInterval=500ms")
            .arg("-remoteWrite.showURL");
        for url in urls {
            cmd.arg(format!("-remoteWrite.url={url}"));
        }
        for label in labels {
            cmd.arg(format!("-remoteWrite.label={label}"));
        }
        let mut child = spawn_logged(cmd, &log, "vmagent");
        wait_ready(&mut child, port, "/health", "vmagent", &log);
        Self { port, child, dir }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("vmagent.log")).unwrap_or_default()
    }
}

impl Drop for VmagentProcess {
    fn drop(&mut self) {
        kill(&mut self.child);
        if std::thread::panicking() {
            print_log("vmagent", &self.dir.path().join("vmagent.log"));
        }
    }
}
