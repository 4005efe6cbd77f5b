//! A reader started without waiting for it to be ready (the object store
//! may be down), killed on drop, its log printed when the test fails.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use crate::cluster::URL;
use crate::common::free_port;
use crate::common::s3::s3_env;

/// A reader started without waiting for it to be ready (the object store
/// may be down), killed on drop.
pub(crate) struct BareReader {
    pub(crate) port: u16,
    child: Child,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl BareReader {
    pub(crate) fn start(s3_port: u16) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = dir.path().join("strata.log");
        let port = free_port();
        let out = std::fs::File::create(&log).expect("log file");
        let err = out.try_clone().expect("log file");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
        cmd.args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .args(["--object-store", URL])
            .arg("--cache-dir")
            .arg(dir.path().join("cache"))
            .args(["--role", "reader"])
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err));
        for (k, v) in s3_env(s3_port) {
            cmd.env(k, v);
        }
        let child = cmd.spawn().expect("start strata");
        Self {
            port,
            child,
            log,
            _dir: dir,
        }
    }
}

impl Drop for BareReader {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            let from = text.len().saturating_sub(10_000);
            eprintln!("----- late reader log -----\n{}", &text[from..]);
        }
    }
}
