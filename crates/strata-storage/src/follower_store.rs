//! The object store under a reader node's SlateDB: it answers the reader's
//! polls for objects that do not exist yet from what it learned moments
//! ago, so an idle reader stops paying for requests that find nothing.
//!
//! Every `reader.poll_interval` SlateDB's reader asks for the manifest
//! after the newest it has (a GET), for the manifest GC boundary (a GET),
//! and for the WAL objects after the newest it replayed: eight HEADs at
//! once (offsets 1, 2, 4 … 128), then a binary search. On an idle writer
//! that is ~10 requests per poll, all but none answered 404.
//!
//! WAL and manifest ids are contiguous (SlateDB's fencing protocol): if
//! the id after the newest one seen does not exist, no later one does.
//! So, per sequence:
//! - a probe beyond the id after the newest first probes that one id, and
//!   answers "not found" if it is missing: one request instead of eight;
//! - "missing from id N on" is remembered for `fresh_for`, which starts at
//!   half the poll interval (so the probes of one poll share one answer)
//!   and doubles each time the next id is found missing again, up to
//!   `reader.idle_poll_interval`; it drops back once a new object appears.
//!
//! A reader therefore sees a new object at most `idle_poll_interval` (plus
//! one poll) after it appears when the writer has been idle, and within a
//! poll while the writer is writing. Objects at or below the newest id
//! seen, and every other path, pass through untouched.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;
use object_store::path::Path;
use object_store::{
    Attributes, CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload,
    ObjectMeta, ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};

/// How long "missing" answers stay fresh: from `min` while objects keep
/// appearing, doubling while they do not, to `max`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Quiet {
    pub min: Duration,
    pub max: Duration,
}

impl Quiet {
    /// From the reader's poll interval and its idle poll interval.
    pub(crate) fn new(poll: Duration, idle: Duration) -> Self {
        Self {
            min: poll / 2,
            max: idle.max(poll),
        }
    }
}

/// Wraps the store a reader node's SlateDB reads from.
#[derive(Debug)]
pub(crate) struct FollowerStore {
    inner: Arc<dyn ObjectStore>,
    wal: Sequence,
    manifest: Sequence,
    boundary: Boundary,
}

impl FollowerStore {
    /// A store for the database at `root` (the path given to SlateDB).
    pub(crate) fn new(inner: Arc<dyn ObjectStore>, root: &str, quiet: Quiet) -> Self {
        let root = root.trim_matches('/');
        let dir = |d: &str| {
            if root.is_empty() {
                format!("{d}/")
            } else {
                format!("{root}/{d}/")
            }
        };
        Self {
            inner,
            wal: Sequence::new(dir("wal"), ".sst", quiet),
            manifest: Sequence::new(dir("manifest"), ".manifest", quiet),
            boundary: Boundary {
                path: Path::from(format!("{}manifest.boundary", dir("gc"))),
                fresh_for: quiet.max,
                cached: tokio::sync::Mutex::new(None),
            },
        }
    }
}

/// Objects named by consecutive ids in one folder (`<dir><id:020><suffix>`).
#[derive(Debug)]
struct Sequence {
    dir: String,
    suffix: &'static str,
    quiet: Quiet,
    /// Held while probing beyond the newest id seen, so that the probes of
    /// one poll (sent together) are answered by the first one's result.
    state: tokio::sync::Mutex<SequenceState>,
}

#[derive(Debug)]
struct SequenceState {
    /// The highest id seen to exist.
    newest: Option<u64>,
    /// Ids from this one on were missing at that instant.
    missing_from: Option<(u64, Instant)>,
    /// How long `missing_from` stays fresh.
    fresh_for: Duration,
    /// What the newest objects' metadata said: they never change, and
    /// SlateDB asks for a WAL object's size (a HEAD) right after finding it.
    known: std::collections::VecDeque<(u64, ObjectMeta)>,
}

/// How many objects' metadata a sequence remembers.
const KNOWN: usize = 64;

impl Sequence {
    fn new(dir: String, suffix: &'static str, quiet: Quiet) -> Self {
        Self {
            dir,
            suffix,
            quiet,
            state: tokio::sync::Mutex::new(SequenceState {
                newest: None,
                missing_from: None,
                fresh_for: quiet.min,
                known: std::collections::VecDeque::with_capacity(KNOWN),
            }),
        }
    }

    fn id_of(&self, location: &Path) -> Option<u64> {
        let name = location
            .as_ref()
            .strip_prefix(self.dir.as_str())?
            .strip_suffix(self.suffix)?;
        (name.len() == 20).then(|| name.parse().ok()).flatten()
    }

    fn path_of(&self, id: u64) -> Path {
        Path::from(format!("{}{id:020}{}", self.dir, self.suffix))
    }

    async fn get(
        &self,
        inner: &dyn ObjectStore,
        location: &Path,
        id: u64,
        options: GetOptions,
    ) -> Result<GetResult> {
        // Objects already seen exist (or were collected): read them freely,
        // in parallel.
        let (newest, known) = {
            let state = self.state.lock().await;
            let known = is_plain_head(&options)
                .then(|| state.known.iter().find(|(k, _)| *k == id))
                .flatten()
                .map(|(_, meta)| meta.clone());
            (state.newest, known)
        };
        if let Some(meta) = known {
            return Ok(head_answer(meta));
        }
        if newest.is_some_and(|n| id <= n) {
            return inner.get_opts(location, options).await;
        }
        let mut state = self.state.lock().await;
        if let Some((from, at)) = state.missing_from {
            if id >= from && at.elapsed() < state.fresh_for {
                return Err(not_found(location));
            }
        }
        if let Some(n) = state.newest {
            if id > n.saturating_add(1) {
                let next = n + 1;
                let head = GetOptions {
                    head: true,
                    ..GetOptions::default()
                };
                match inner.get_opts(&self.path_of(next), head).await {
                    Ok(r) => state.found(next, r.meta, self.quiet),
                    Err(object_store::Error::NotFound { .. }) => {
                        state.missing(next, self.quiet);
                        return Err(not_found(location));
                    }
                    Err(e) => return Err(e),
                }
            } else if id <= n {
                drop(state);
                return inner.get_opts(location, options).await;
            }
        }
        let r = inner.get_opts(location, options).await;
        match &r {
            Ok(r) => state.found(id, r.meta.clone(), self.quiet),
            Err(object_store::Error::NotFound { .. }) => state.missing(id, self.quiet),
            Err(_) => {}
        }
        r
    }
}

impl SequenceState {
    fn found(&mut self, id: u64, meta: ObjectMeta, quiet: Quiet) {
        if !self.known.iter().any(|(k, _)| *k == id) {
            if self.known.len() == KNOWN {
                self.known.pop_front();
            }
            self.known.push_back((id, meta));
        }
        if self.newest.is_none_or(|n| id > n) {
            self.newest = Some(id);
            self.fresh_for = quiet.min;
        }
        if self.missing_from.is_some_and(|(from, _)| from <= id) {
            self.missing_from = None;
        }
    }

    fn missing(&mut self, id: u64, quiet: Quiet) {
        // The same id missing again: nothing was written since the last
        // look, so look less often.
        let again = self.missing_from.is_some_and(|(from, _)| from == id);
        self.fresh_for = if again {
            (self.fresh_for * 2).clamp(quiet.min, quiet.max)
        } else {
            quiet.min
        };
        self.missing_from = Some((id, Instant::now()));
    }
}

/// An object's body, metadata and attributes.
type StoredObject = (Bytes, ObjectMeta, Attributes);

/// The manifest GC boundary, read after every manifest poll. A reader
/// reads the newest manifest, which collection never removes, so an
/// answer a second old serves as well as a new one.
#[derive(Debug)]
struct Boundary {
    path: Path,
    fresh_for: Duration,
    /// When it was read, and what: the object, or none.
    cached: tokio::sync::Mutex<Option<(Instant, Option<StoredObject>)>>,
}

impl Boundary {
    async fn get(&self, inner: &dyn ObjectStore, options: GetOptions) -> Result<GetResult> {
        if options.head || options.range.is_some() || options.version.is_some() {
            return inner.get_opts(&self.path, options).await;
        }
        let mut cached = self.cached.lock().await;
        let fresh = cached
            .as_ref()
            .is_some_and(|(at, _)| at.elapsed() < self.fresh_for);
        if !fresh {
            // Unconditional, so the body is at hand for later answers.
            let answer = match inner.get_opts(&self.path, GetOptions::default()).await {
                Ok(r) => {
                    let (meta, attributes) = (r.meta.clone(), r.attributes.clone());
                    Some((r.bytes().await?, meta, attributes))
                }
                Err(object_store::Error::NotFound { .. }) => None,
                Err(e) => return Err(e),
            };
            *cached = Some((Instant::now(), answer));
        }
        match cached.as_ref().and_then(|(_, a)| a.clone()) {
            None => Err(not_found(&self.path)),
            Some((bytes, meta, attributes)) => {
                options.check_preconditions(&meta)?;
                let len = bytes.len() as u64;
                Ok(GetResult {
                    payload: GetResultPayload::Stream(
                        futures::stream::once(async move { Ok(bytes) }).boxed(),
                    ),
                    meta,
                    range: 0..len,
                    attributes,
                    extensions: Default::default(),
                })
            }
        }
    }
}

/// A HEAD with no condition, range or version: answered by metadata alone.
fn is_plain_head(o: &GetOptions) -> bool {
    o.head
        && o.if_match.is_none()
        && o.if_none_match.is_none()
        && o.if_modified_since.is_none()
        && o.if_unmodified_since.is_none()
        && o.range.is_none()
        && o.version.is_none()
}

fn head_answer(meta: ObjectMeta) -> GetResult {
    GetResult {
        payload: GetResultPayload::Stream(futures::stream::empty().boxed()),
        range: 0..meta.size,
        meta,
        attributes: Attributes::default(),
        extensions: Default::default(),
    }
}

fn not_found(location: &Path) -> object_store::Error {
    object_store::Error::NotFound {
        path: location.to_string(),
        source: "not written yet (answered by the reader from its last probe)".into(),
    }
}

impl fmt::Display for FollowerStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Follower({})", self.inner)
    }
}

#[async_trait::async_trait]
impl ObjectStore for FollowerStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let inner = self.inner.as_ref();
        if let Some(id) = self.wal.id_of(location) {
            return self.wal.get(inner, location, id, options).await;
        }
        if let Some(id) = self.manifest.id_of(location) {
            return self.manifest.get(inner, location, id, options).await;
        }
        if *location == self.boundary.path {
            return self.boundary.get(inner, options).await;
        }
        inner.get_opts(location, options).await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use object_store::memory::InMemory;
    use object_store::ObjectStoreExt;

    use super::*;
    use crate::instrumented::{InstrumentedStore, ObjectStoreCounters};

    const QUIET: Quiet = Quiet {
        min: Duration::from_millis(40),
        max: Duration::from_millis(160),
    };

    struct Fixture {
        raw: Arc<InMemory>,
        counters: Arc<ObjectStoreCounters>,
        store: Arc<FollowerStore>,
    }

    fn fixture() -> Fixture {
        let raw = Arc::new(InMemory::new());
        let counters = Arc::new(ObjectStoreCounters::default());
        let counted = Arc::new(InstrumentedStore::new(
            Arc::clone(&raw) as Arc<dyn ObjectStore>,
            Arc::clone(&counters),
        ));
        let store = Arc::new(FollowerStore::new(counted, "db", QUIET));
        Fixture {
            raw,
            counters,
            store,
        }
    }

    impl Fixture {
        fn requests(&self) -> u64 {
            self.counters.requests.load(Ordering::Relaxed)
        }

        async fn write_wal(&self, id: u64) {
            self.raw
                .put(&wal(id), PutPayload::from_static(b"wal"))
                .await
                .unwrap();
        }

        /// SlateDB's probe round: offsets 1, 2, 4 … 128 after `after`, at
        /// once; which exist.
        async fn probe_round(&self, after: u64) -> Vec<bool> {
            let probes = (0..8).map(|e| {
                let store = Arc::clone(&self.store);
                async move { store.head(&wal(after + (1 << e))).await.is_ok() }
            });
            futures::future::join_all(probes).await
        }
    }

    fn wal(id: u64) -> Path {
        Path::from(format!("db/wal/{id:020}.sst"))
    }

    #[tokio::test]
    async fn a_probe_round_past_the_newest_object_costs_one_request() {
        let f = fixture();
        f.write_wal(1).await;
        f.write_wal(2).await;
        // Learns that 2 is the newest.
        assert!(f.store.head(&wal(2)).await.is_ok());
        let before = f.requests();
        let found = f.probe_round(2).await;
        assert!(found.iter().all(|e| !e), "{found:?}");
        assert_eq!(f.requests() - before, 1, "only wal 3 is asked for");
        // SlateDB's size check on an object just found: known already.
        let before = f.requests();
        assert_eq!(f.store.head(&wal(2)).await.unwrap().size, 3);
        assert_eq!(f.requests() - before, 0);
        // Objects already seen are read as usual.
        let before = f.requests();
        assert_eq!(
            f.store.get(&wal(1)).await.unwrap().bytes().await.unwrap(),
            Bytes::from_static(b"wal")
        );
        assert_eq!(f.requests() - before, 1);
    }

    #[tokio::test]
    async fn a_new_object_is_seen_within_the_fresh_time() {
        let f = fixture();
        f.write_wal(1).await;
        assert!(f.store.head(&wal(1)).await.is_ok());
        assert!(f.probe_round(1).await.iter().all(|e| !e));
        f.write_wal(2).await;
        f.write_wal(3).await;
        // Still answered from the last probe…
        assert!(f.store.head(&wal(2)).await.is_err());
        tokio::time::sleep(QUIET.min).await;
        // …and seen once that answer is stale, with what follows it.
        let found = f.probe_round(1).await;
        assert_eq!(found[..3], [true, true, false], "{found:?}");
        assert!(f.store.head(&wal(3)).await.is_ok());
    }

    #[tokio::test]
    async fn an_idle_writer_is_probed_less_and_less_often() {
        let f = fixture();
        f.write_wal(1).await;
        assert!(f.store.head(&wal(1)).await.is_ok());
        // Poll every 10 ms for a while: the answer's fresh time doubles
        // from 40 ms to 160 ms, so far fewer than one request per poll.
        let before = f.requests();
        let polls = 60;
        for _ in 0..polls {
            assert!(f.probe_round(1).await.iter().all(|e| !e));
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let idle = f.requests() - before;
        assert!(idle <= 10, "{idle} requests for {polls} polls");
        assert_eq!(
            f.store.wal.state.lock().await.fresh_for,
            QUIET.max,
            "backed off to the idle interval"
        );
        // A new object brings it back to the short interval.
        f.write_wal(2).await;
        tokio::time::sleep(QUIET.max).await;
        assert!(f.probe_round(1).await[0]);
        assert_eq!(f.store.wal.state.lock().await.fresh_for, QUIET.min);
    }

    #[tokio::test]
    async fn the_gc_boundary_is_read_at_most_once_per_idle_interval() {
        let f = fixture();
        let boundary = Path::from("db/gc/manifest.boundary");
        let before = f.requests();
        for _ in 0..5 {
            assert!(matches!(
                f.store.get(&boundary).await,
                Err(object_store::Error::NotFound { .. })
            ));
        }
        assert_eq!(f.requests() - before, 1);
        f.raw
            .put(&boundary, PutPayload::from_static(b"7"))
            .await
            .unwrap();
        tokio::time::sleep(QUIET.max).await;
        let got = f.store.get(&boundary).await.unwrap();
        let etag = got.meta.e_tag.clone();
        assert_eq!(got.bytes().await.unwrap(), Bytes::from_static(b"7"));
        // SlateDB's conditional read of an unchanged boundary.
        let conditional = GetOptions {
            if_none_match: etag,
            ..GetOptions::default()
        };
        assert!(matches!(
            f.store.get_opts(&boundary, conditional).await,
            Err(object_store::Error::NotModified { .. })
        ));
        assert_eq!(f.requests() - before, 2);
    }
}
