//! Opening an object store from a URL: `file:///path`, `s3://bucket/prefix`
//! or `memory://`.

use std::sync::Arc;

use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::ObjectStore;
use serde::{Deserialize, Serialize};

use crate::error::StorageError;

/// S3 connection options; anything left empty comes from the usual AWS
/// environment variables (`AWS_ACCESS_KEY_ID`, `AWS_REGION`, ...) or the
/// instance profile.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct S3Settings {
    /// Endpoint of an S3-compatible server, e.g. `http://127.0.0.1:9000`.
    pub endpoint: Option<String>,
    pub region: Option<String>,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    /// Allow plain HTTP (for a local S3-compatible server).
    pub allow_http: bool,
}

/// An opened object store and the path inside it where the database lives.
pub struct ObjectStoreLocation {
    pub store: Arc<dyn ObjectStore>,
    pub path: String,
}

/// Opens the object store a URL names.
pub fn open_object_store(url: &str, s3: &S3Settings) -> Result<ObjectStoreLocation, StorageError> {
    let parsed = url::Url::parse(url)
        .map_err(|e| StorageError::Invalid(format!("object_store: {url:?} is not a URL: {e}")))?;
    match parsed.scheme() {
        "file" => {
            let dir = parsed.to_file_path().map_err(|()| {
                StorageError::Invalid(format!("object_store: {url:?} is not an absolute file path"))
            })?;
            std::fs::create_dir_all(&dir).map_err(|e| {
                StorageError::Invalid(format!("object_store: cannot create {}: {e}", dir.display()))
            })?;
            let fs = LocalFileSystem::new_with_prefix(&dir).map_err(|e| {
                StorageError::Invalid(format!("object_store: cannot open {}: {e}", dir.display()))
            })?;
            Ok(ObjectStoreLocation {
                store: Arc::new(fs),
                path: "strata".into(),
            })
        }
        "memory" => Ok(ObjectStoreLocation {
            store: Arc::new(InMemory::new()),
            path: "strata".into(),
        }),
        "s3" => {
            let bucket = parsed.host_str().filter(|b| !b.is_empty()).ok_or_else(|| {
                StorageError::Invalid(format!("object_store: {url:?} names no bucket"))
            })?;
            // `allow_http = false` leaves AWS_ALLOW_HTTP from the
            // environment in force, as object_store's users expect.
            let mut b = AmazonS3Builder::from_env().with_bucket_name(bucket);
            if s3.allow_http {
                b = b.with_allow_http(true);
            }
            if let Some(e) = &s3.endpoint {
                b = b.with_endpoint(e);
            }
            if let Some(r) = &s3.region {
                b = b.with_region(r);
            }
            if let Some(k) = &s3.access_key_id {
                b = b.with_access_key_id(k);
            }
            if let Some(k) = &s3.secret_access_key {
                b = b.with_secret_access_key(k);
            }
            let store = b
                .build()
                .map_err(|e| StorageError::Invalid(format!("object_store: S3 settings: {e}")))?;
            let prefix = parsed.path().trim_matches('/');
            Ok(ObjectStoreLocation {
                store: Arc::new(store),
                path: if prefix.is_empty() {
                    "strata".into()
                } else {
                    prefix.to_owned()
                },
            })
        }
        other => Err(StorageError::Invalid(format!(
            "object_store: unsupported scheme {other:?} in {url:?} (use file://, s3:// or memory://)"
        ))),
    }
}

/// How long one attempt of [`check_object_store`] waits for the store.
pub const CHECK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// Checks at start that the store at `url` can work: it answers a listing
/// of `path` (the bucket exists, plain HTTP is allowed if the endpoint
/// uses it, the credentials are accepted) and, when `writable`, honours
/// conditional writes (a create-if-absent of a probe object succeeds once
/// and is refused the second time; SlateDB's fencing depends on it).
///
/// A mistake that waiting cannot mend is answered at once, as one line
/// naming the problem and the setting to change. A store that does not
/// answer (down, unreachable, slow) may be an outage: that is logged as a
/// warning naming the problem and retried every few seconds, so a node
/// started during an outage comes up when it ends; meanwhile `health`
/// says since when it has not answered.
pub async fn check_object_store(
    store: &dyn ObjectStore,
    url: &str,
    path: &str,
    writable: bool,
    health: &crate::instrumented::StoreHealth,
) -> Result<(), String> {
    let mut attempts = 0u32;
    loop {
        attempts += 1;
        let problem = match tokio::time::timeout(CHECK_TIMEOUT, probe(store, path, writable)).await
        {
            Ok(Ok(())) => {
                health.answered();
                if attempts > 1 {
                    tracing::info!(url, attempts, "object store reachable");
                }
                return Ok(());
            }
            Ok(Err(e)) => describe(url, &e),
            Err(_) => Problem {
                mistake: false,
                line: format!(
                    "object store {url} did not answer within {}s: check \
                     object_store.s3.endpoint (or AWS_ENDPOINT), the network, and the \
                     credentials (without any, the AWS client waits for an instance profile)",
                    CHECK_TIMEOUT.as_secs()
                ),
            },
        };
        if problem.mistake {
            return Err(problem.line);
        }
        health.failed(&problem.line);
        tracing::warn!(attempts, "{}; retrying", problem.line);
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    }
}

async fn probe(store: &dyn ObjectStore, path: &str, writable: bool) -> Result<(), ProbeError> {
    use object_store::{ObjectStoreExt as _, PutMode, PutOptions, PutPayload};
    use strata_codec::clock::Clock as _;
    let prefix = object_store::path::Path::from(path);
    store
        .list_with_delimiter(Some(&prefix))
        .await
        .map_err(ProbeError::Store)?;
    if !writable {
        return Ok(());
    }
    let key = prefix.clone().join(format!(
        "start-probe-{}-{}",
        std::process::id(),
        strata_codec::clock::SystemClock.now_ms()
    ));
    let create = || PutOptions {
        mode: PutMode::Create,
        ..PutOptions::default()
    };
    store
        .put_opts(&key, PutPayload::from_static(b"probe"), create())
        .await
        .map_err(ProbeError::Store)?;
    let second = store
        .put_opts(&key, PutPayload::from_static(b"probe"), create())
        .await;
    let _ = store.delete(&key).await;
    match second {
        Err(object_store::Error::AlreadyExists { .. }) => Ok(()),
        Err(object_store::Error::NotImplemented { .. }) | Ok(_) => {
            Err(ProbeError::NoConditionalWrites)
        }
        Err(e) => Err(ProbeError::Store(e)),
    }
}

enum ProbeError {
    Store(object_store::Error),
    NoConditionalWrites,
}

/// What a failed probe means.
struct Problem {
    /// A mistake in the settings or the store, which waiting cannot mend.
    mistake: bool,
    line: String,
}

fn describe(url: &str, e: &ProbeError) -> Problem {
    let e = match e {
        ProbeError::NoConditionalWrites => {
            let line = format!(
                "object store {url} does not honour conditional writes (a create-if-absent \
                 of an existing object succeeded): Strata's writer fencing needs them; use \
                 S3 or an S3-compatible server that supports If-None-Match"
            );
            return Problem {
                mistake: true,
                line,
            };
        }
        ProbeError::Store(e) => e,
    };
    // The whole chain, to classify: the S3 client's text is in its sources.
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    let lower = text.to_lowercase();
    let (mistake, hint) =
        if lower.contains("nosuchbucket") || lower.contains("bucket does not exist") {
            (
            true,
            "the bucket does not exist: create it, or fix the bucket name in the object_store URL",
        )
        } else if lower.contains("builder error")
            || (lower.contains("scheme") && lower.contains("http"))
        {
            // The HTTP client refuses to build an http:// request when plain
            // HTTP is not allowed ("builder error").
            (
                true,
                "the endpoint is http:// but plain HTTP is not allowed: set \
             object_store.s3.allow_http = true (or AWS_ALLOW_HTTP=true), or use https://",
            )
        } else if lower.contains("invalidaccesskeyid")
            || lower.contains("signaturedoesnotmatch")
            || lower.contains("accessdenied")
            || lower.contains("403 forbidden")
        {
            (
                true,
                "the credentials are refused: set object_store.s3.access_key_id and \
             secret_access_key (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), or give the \
             instance a role that may use the bucket",
            )
        } else if lower.contains("credential") || lower.contains("169.254.169.254") {
            (
                true,
                "no credentials: set object_store.s3.access_key_id and secret_access_key (or \
             AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), or give the instance a role",
            )
        } else if lower.contains("connect")
            || lower.contains("dns")
            || lower.contains("resolve")
            || lower.contains("sending request")
        {
            (
                false,
                "the endpoint cannot be reached: check object_store.s3.endpoint (or AWS_ENDPOINT) \
             and the network",
            )
        } else {
            (
                false,
                "check the object_store URL and the [object_store.s3] settings",
            )
        };
    // One line: the client's message holds its causes already, some of
    // them a multi-line XML body.
    let mut shown: String = e
        .to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if shown.len() > 300 {
        let mut cut = 300;
        while !shown.is_char_boundary(cut) {
            cut -= 1;
        }
        shown.truncate(cut);
        shown.push_str("...");
    }
    Problem {
        mistake,
        line: format!("object store {url} cannot be used: {hint} ({shown})"),
    }
}
