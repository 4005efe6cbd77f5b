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
            let mut b = AmazonS3Builder::from_env()
                .with_bucket_name(bucket)
                .with_allow_http(s3.allow_http);
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
