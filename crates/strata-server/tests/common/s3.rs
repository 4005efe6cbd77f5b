//! An S3-compatible server for end-to-end tests: moto (`moto[server]` from
//! PyPI) on a free port, and a TCP proxy in front of it that a test can
//! pause to make an object-store outage without losing moto's in-memory
//! data.
#![allow(clippy::disallowed_methods)]

use std::fs::File;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::{free_port, http_get, http_request};

/// The AWS credentials moto accepts (any) and the region it serves.
const ACCESS_KEY: &str = "test";
const SECRET_KEY: &str = "test";
const REGION: &str = "us-east-1";

/// Finds `name` on `PATH`.
fn find_on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}

/// `moto_server` on 127.0.0.1, killed on drop. Its data lives in memory
/// only: a restarted moto is empty.
pub struct MotoServer {
    pub port: u16,
    child: Child,
    log: PathBuf,
    _dir: TempDir,
}

impl MotoServer {
    /// Starts moto on a free port and waits until it answers HTTP. Panics
    /// (these tests fail, not skip) when `moto_server` is not installed.
    pub fn start() -> Self {
        let bin = find_on_path("moto_server").unwrap_or_else(|| {
            panic!(
                "moto_server not found on PATH: install it with \
                 `pip install 'moto[server]'` (.ci/run does this)"
            )
        });
        let dir = tempfile::tempdir().expect("temp dir for moto");
        let log = dir.path().join("moto.log");
        let port = free_port();
        let out = File::create(&log).expect("create moto log");
        let err = out.try_clone().expect("clone moto log");
        let mut child = Command::new(&bin)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = child.try_wait().expect("wait for moto") {
                print_log(&log);
                panic!("moto_server exited with {status} before it answered");
            }
            if http_get(port, "/").is_ok() {
                break;
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                print_log(&log);
                panic!("moto_server did not answer within 30 s");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Self {
            port,
            child,
            log,
            _dir: dir,
        }
    }

    /// Creates a bucket (a PUT on its path, as moto accepts without
    /// signatures).
    pub fn create_bucket(&self, bucket: &str) {
        let r = http_request(self.port, "PUT", &format!("/{bucket}"), &[], &[])
            .unwrap_or_else(|e| panic!("PUT /{bucket} on moto: {e}"));
        assert!(
            r.status == 200,
            "creating bucket {bucket} on moto answered {}: {}",
            r.status,
            r.text()
        );
    }
}

impl MotoServer {
    /// Every key in `bucket` (a ListObjectsV2, unsigned, as moto accepts).
    pub fn list_keys(&self, bucket: &str) -> Vec<String> {
        let r = http_request(
            self.port,
            "GET",
            &format!("/{bucket}?list-type=2"),
            &[],
            &[],
        )
        .unwrap_or_else(|e| panic!("GET /{bucket} on moto: {e}"));
        assert_eq!(r.status, 200, "listing {bucket}: {}", r.text());
        r.text()
            .split("<Key>")
            .skip(1)
            .filter_map(|s| s.split("</Key>").next())
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for MotoServer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
        if std::thread::panicking() {
            print_log(&self.log);
        }
    }
}

fn print_log(path: &Path) {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let from = text.len().saturating_sub(5_000);
    let from = (from..text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len());
    eprintln!(
        "----- moto log -----\n{}\n----- end of moto log -----",
        &text[from..]
    );
}

/// The environment that points `strata` at an S3-compatible server on
/// 127.0.0.1:`port` over plain HTTP.
pub fn s3_env(port: u16) -> Vec<(String, String)> {
    s3_env_with(port, ACCESS_KEY, SECRET_KEY)
}

/// [`s3_env`] with the server's own keys.
pub fn s3_env_with(port: u16, access_key: &str, secret_key: &str) -> Vec<(String, String)> {
    [
        ("AWS_ACCESS_KEY_ID", access_key.to_owned()),
        ("AWS_SECRET_ACCESS_KEY", secret_key.to_owned()),
        ("AWS_REGION", REGION.to_owned()),
        (
            "STRATA_OBJECT_STORE_S3_ENDPOINT",
            format!("http://127.0.0.1:{port}"),
        ),
        ("STRATA_OBJECT_STORE_S3_ALLOW_HTTP", "true".to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// A TCP forwarder from a free port to 127.0.0.1:`upstream`. Paused, it
/// cuts every open connection and resets new ones at once: to a client it
/// looks like the server is down. It runs on its own thread and runtime and
/// stops on drop.
pub struct TcpProxy {
    pub port: u16,
    paused: Arc<AtomicBool>,
    /// Bumped on every pause; a connection opened under an older generation
    /// closes itself.
    generation: Arc<tokio::sync::watch::Sender<u64>>,
    connections: Arc<AtomicU64>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TcpProxy {
    pub fn start(upstream: u16) -> Self {
        let std_listener =
            std::net::TcpListener::bind("127.0.0.1:0").expect("bind the proxy's port");
        std_listener
            .set_nonblocking(true)
            .expect("non-blocking listener");
        let port = std_listener.local_addr().expect("proxy address").port();
        let paused = Arc::new(AtomicBool::new(false));
        let (generation, _) = tokio::sync::watch::channel(0u64);
        let generation = Arc::new(generation);
        let connections = Arc::new(AtomicU64::new(0));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = {
            let paused = Arc::clone(&paused);
            let generation = Arc::clone(&generation);
            let connections = Arc::clone(&connections);
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("proxy runtime");
                rt.block_on(async move {
                    let listener =
                        tokio::net::TcpListener::from_std(std_listener).expect("proxy listener");
                    let upstream: SocketAddr = ([127, 0, 0, 1], upstream).into();
                    let accept = async {
                        loop {
                            let Ok((client, _)) = listener.accept().await else {
                                continue;
                            };
                            if paused.load(Ordering::Acquire) {
                                // Reset, as a port with nothing behind it would.
                                let _ = client.set_zero_linger();
                                drop(client);
                                continue;
                            }
                            connections.fetch_add(1, Ordering::Relaxed);
                            let mut cut = generation.subscribe();
                            tokio::spawn(async move {
                                let Ok(server) = tokio::net::TcpStream::connect(upstream).await
                                else {
                                    return;
                                };
                                let (mut client, mut server) = (client, server);
                                tokio::select! {
                                    _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                                    _ = cut.changed() => {
                                        let _ = client.set_zero_linger();
                                    }
                                }
                            });
                        }
                    };
                    tokio::select! {
                        _ = accept => {}
                        _ = stopped => {}
                    }
                });
            })
        };
        Self {
            port,
            paused,
            generation,
            connections,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Cuts every open connection and refuses new ones until
    /// [`TcpProxy::resume`].
    pub fn pause(&self) {
        self.paused.store(true, Ordering::Release);
        self.generation.send_modify(|g| *g += 1);
    }

    pub fn resume(&self) {
        self.paused.store(false, Ordering::Release);
    }

    /// Connections forwarded so far.
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
