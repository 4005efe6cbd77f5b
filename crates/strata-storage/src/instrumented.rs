//! An object store wrapper that counts requests and errors, for `/metrics`.

use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};

/// Requests made to the object store and how many failed.
#[derive(Debug, Default)]
pub struct ObjectStoreCounters {
    pub requests: AtomicU64,
    pub errors: AtomicU64,
    pub bytes_read: AtomicU64,
    pub bytes_written: AtomicU64,
    pub health: StoreHealth,
}

/// Whether the object store is failing: since when every request has
/// failed, and the last failure. Any answer (a "not found" included) ends
/// a failing spell.
#[derive(Debug, Default)]
pub struct StoreHealth {
    failing: AtomicBool,
    since: parking_lot::Mutex<Option<(Instant, String)>>,
}

impl StoreHealth {
    /// A request was answered.
    pub fn answered(&self) {
        if self.failing.load(Ordering::Relaxed) {
            *self.since.lock() = None;
            self.failing.store(false, Ordering::Relaxed);
        }
    }

    /// A request failed with `error`.
    pub fn failed(&self, error: &dyn fmt::Display) {
        let mut since = self.since.lock();
        let started = since.as_ref().map_or_else(Instant::now, |(at, _)| *at);
        *since = Some((started, error.to_string()));
        self.failing.store(true, Ordering::Relaxed);
    }

    /// How long every request has failed, and the last failure; `None`
    /// while requests are answered.
    pub fn failing_for(&self) -> Option<(Duration, String)> {
        if !self.failing.load(Ordering::Relaxed) {
            return None;
        }
        self.since
            .lock()
            .as_ref()
            .map(|(at, e)| (at.elapsed(), e.clone()))
    }
}

/// A snapshot of [`ObjectStoreCounters`].
#[derive(Clone, Copy, Debug, Default)]
pub struct ObjectStoreStats {
    pub requests: u64,
    pub errors: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
}

impl ObjectStoreCounters {
    pub fn snapshot(&self) -> ObjectStoreStats {
        let l = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ObjectStoreStats {
            requests: l(&self.requests),
            errors: l(&self.errors),
            bytes_read: l(&self.bytes_read),
            bytes_written: l(&self.bytes_written),
        }
    }
}

/// Wraps a store, counting every request into shared counters.
#[derive(Debug)]
pub struct InstrumentedStore {
    inner: Arc<dyn ObjectStore>,
    counters: Arc<ObjectStoreCounters>,
}

impl InstrumentedStore {
    pub fn new(inner: Arc<dyn ObjectStore>, counters: Arc<ObjectStoreCounters>) -> Self {
        Self { inner, counters }
    }

    fn count<T>(&self, r: Result<T>) -> Result<T> {
        count_into(&self.counters, r.as_ref().err());
        r
    }
}

/// Counts one request and its outcome.
fn count_into(counters: &ObjectStoreCounters, error: Option<&object_store::Error>) {
    counters.requests.fetch_add(1, Ordering::Relaxed);
    match error {
        Some(e) if is_failure(e) => {
            tracing::debug!(error = %e, "object store request failed");
            counters.errors.fetch_add(1, Ordering::Relaxed);
            counters.health.failed(e);
        }
        _ => counters.health.answered(),
    }
}

/// Whether an error from the object store is a failure to count. Two are
/// answers: "not found" (readers probe for the next WAL file on every poll)
/// and "not implemented" (SlateDB tags each write with an attribute and,
/// where the store cannot keep attributes, as a local folder cannot, writes
/// again without it: about 40 % of a writer's requests on a folder).
fn is_failure(e: &object_store::Error) -> bool {
    !matches!(
        e,
        object_store::Error::NotFound { .. } | object_store::Error::NotImplemented { .. }
    )
}

impl fmt::Display for InstrumentedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Instrumented({})", self.inner)
    }
}

#[async_trait::async_trait]
impl ObjectStore for InstrumentedStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        let n = payload.content_length() as u64;
        let r = self.count(self.inner.put_opts(location, payload, opts).await);
        if r.is_ok() {
            self.counters.bytes_written.fetch_add(n, Ordering::Relaxed);
        }
        r
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.count(self.inner.put_multipart_opts(location, opts).await)
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let r = self.count(self.inner.get_opts(location, options).await);
        if let Ok(g) = &r {
            self.counters
                .bytes_read
                .fetch_add(g.range.end.saturating_sub(g.range.start), Ordering::Relaxed);
        }
        r
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let r = self.count(self.inner.get_ranges(location, ranges).await);
        if let Ok(parts) = &r {
            let n: usize = parts.iter().map(Bytes::len).sum();
            self.counters
                .bytes_read
                .fetch_add(n as u64, Ordering::Relaxed);
        }
        r
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        let counters = Arc::clone(&self.counters);
        self.inner
            .delete_stream(locations)
            .map(move |r| {
                count_into(&counters, r.as_ref().err());
                r
            })
            .boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.counters.requests.fetch_add(1, Ordering::Relaxed);
        self.inner.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.counters.requests.fetch_add(1, Ordering::Relaxed);
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.count(self.inner.list_with_delimiter(prefix).await)
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.count(self.inner.copy_opts(from, to, options).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::local::LocalFileSystem;
    use object_store::{Attribute, AttributeValue, Attributes, ObjectStoreExt};

    #[tokio::test]
    async fn answers_are_not_counted_as_errors() {
        let dir = tempfile::tempdir().unwrap();
        let counters = Arc::new(ObjectStoreCounters::default());
        let store = InstrumentedStore::new(
            Arc::new(LocalFileSystem::new_with_prefix(dir.path()).unwrap()),
            Arc::clone(&counters),
        );
        // A folder cannot keep attributes: "not implemented", which SlateDB
        // answers by writing again without them.
        let mut attributes = Attributes::new();
        attributes.insert(Attribute::ContentType, AttributeValue::from("x"));
        let opts = PutOptions {
            attributes,
            ..PutOptions::default()
        };
        let tagged = store
            .put_opts(&Path::from("a"), PutPayload::from_static(b"1"), opts)
            .await;
        assert!(matches!(
            tagged,
            Err(object_store::Error::NotImplemented { .. })
        ));
        store
            .put(&Path::from("a"), PutPayload::from_static(b"1"))
            .await
            .unwrap();
        assert!(store.get(&Path::from("missing")).await.is_err());
        assert_eq!(counters.snapshot().errors, 0);
        // A real failure: a file where a folder must be.
        assert!(store
            .put(&Path::from("a/b"), PutPayload::from_static(b"2"))
            .await
            .is_err());
        let stats = counters.snapshot();
        assert_eq!((stats.requests, stats.errors), (4, 1));
    }
}
