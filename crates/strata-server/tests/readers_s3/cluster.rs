//! The writer and two reader nodes on one S3 bucket (moto behind a TCP
//! proxy the test can pause), and the settings each role starts with.

use std::path::Path;

use crate::common::s3::{s3_env, MotoServer, TcpProxy};
use crate::common::{free_port, StrataProcess};

const BUCKET: &str = "strata-readers";
pub(crate) const URL: &str = "s3://strata-readers/db";
pub(crate) const HOUR_MS: i64 = 3_600_000;

/// Writer, readers and the store they share.
pub(crate) struct Cluster {
    _moto: MotoServer,
    pub(crate) proxy: TcpProxy,
    pub(crate) writer_port: u16,
    pub(crate) writer: Option<StrataProcess>,
    pub(crate) readers: Vec<StrataProcess>,
    pub(crate) cache_dirs: Vec<tempfile::TempDir>,
}

impl Cluster {
    pub(crate) fn start() -> Self {
        let moto = MotoServer::start();
        moto.create_bucket(BUCKET);
        let proxy = TcpProxy::start(moto.port);
        let writer = start_strata(None, proxy.port, &writer_env());
        let cache_dirs: Vec<_> = (0..2)
            .map(|_| tempfile::tempdir().expect("cache dir"))
            .collect();
        let readers = cache_dirs
            .iter()
            .map(|d| start_strata(None, proxy.port, &reader_env(d.path())))
            .collect();
        Self {
            _moto: moto,
            proxy,
            writer_port: writer.port,
            writer: Some(writer),
            readers,
            cache_dirs,
        }
    }

    pub(crate) fn reader_ports(&self) -> Vec<u16> {
        self.readers.iter().map(|r| r.port).collect()
    }

    pub(crate) fn assert_all_running(&mut self) {
        for p in self.writer.iter_mut().chain(self.readers.iter_mut()) {
            let exited = p.child.try_wait().expect("wait for strata");
            assert!(exited.is_none(), "strata on :{} exited: {exited:?}", p.port);
        }
    }
}

pub(crate) fn writer_env() -> Vec<(String, String)> {
    vec![
        ("STRATA_SERVER_ROLE".into(), "writer".into()),
        // Seal the historical buckets soon after they are written, without
        // spreading the seal's writes.
        ("STRATA_STORAGE_SEAL_CHECK_INTERVAL".into(), "1s".into()),
        ("STRATA_STORAGE_SEAL_SPREAD".into(), "0s".into()),
    ]
}

pub(crate) fn reader_env(cache_dir: &Path) -> Vec<(String, String)> {
    vec![
        ("STRATA_SERVER_ROLE".into(), "reader".into()),
        (
            "STRATA_READER_CACHE_DIR".into(),
            cache_dir.display().to_string(),
        ),
    ]
}

/// Starts `strata serve` on the bucket through the S3 endpoint on
/// `s3_port`, on `port` or a free one, and waits until it is ready.
pub(crate) fn start_strata(
    port: Option<u16>,
    s3_port: u16,
    env: &[(String, String)],
) -> StrataProcess {
    let mut all = s3_env(s3_port);
    all.extend_from_slice(env);
    let refs: Vec<(&str, &str)> = all.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    StrataProcess::start_on(port.unwrap_or_else(free_port), Path::new(URL), &refs)
}
