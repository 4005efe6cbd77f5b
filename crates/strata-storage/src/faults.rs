//! A fault-injecting object store for tests: wraps any store and, per kind
//! of operation, adds latency, answers as S3 does to HTTP 500 or 503,
//! stalls, black-holes (never answers), or resets the connection, always,
//! for the next N calls, or with a probability. A cloneable [`Faults`]
//! handle changes the faults while the store is in use and counts what it
//! injected.
//!
//! ```
//! # use std::sync::Arc;
//! # use object_store::{memory::InMemory, ObjectStore};
//! use strata_storage::faults::{Fault, Faults, Op};
//! let faults = Faults::new();
//! let store: Arc<dyn ObjectStore> = faults.wrap(Arc::new(InMemory::new()));
//! faults.set(Op::Put, Fault::Status(503));
//! // ... every put now fails as an S3 client reports a 503 ...
//! faults.heal();
//! # drop(store);
//! ```

use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions, Result, UploadPart,
};
use parking_lot::Mutex;
use strata_codec::rand::SplitMix64;
use tokio::sync::watch;

/// A kind of object-store operation; faults are set per kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// A single-request upload (`put_opts`).
    Put,
    /// A multipart upload: starting it, each part and completing it.
    PutMultipart,
    /// A read of an object or ranges of it (`get_opts`, `get_range(s)`).
    Get,
    /// A read of an object's metadata (`head`, `get_opts` with `head`).
    Head,
    /// A listing, with or without delimiter or offset.
    List,
    Delete,
    /// A server-side copy or rename.
    Copy,
}

impl Op {
    pub const ALL: [Op; 7] = [
        Op::Put,
        Op::PutMultipart,
        Op::Get,
        Op::Head,
        Op::List,
        Op::Delete,
        Op::Copy,
    ];
    /// Operations that upload data.
    pub const WRITES: [Op; 2] = [Op::Put, Op::PutMultipart];
    /// Operations that read data or metadata.
    pub const READS: [Op; 3] = [Op::Get, Op::Head, Op::List];

    fn index(self) -> usize {
        self as usize
    }
}

/// What happens to an operation a fault applies to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fault {
    /// The call waits this long, then goes to the store.
    Latency(Duration),
    /// The call fails as an S3 client reports this HTTP status (500, 503,
    /// ...): `object_store::Error::Generic` naming the status. The store
    /// never sees the call.
    Status(u16),
    /// The call waits until this fault is cleared (or changed), then goes
    /// to the store: a request held up somewhere that resumes.
    Stall,
    /// The call never answers, not even after the fault is cleared: a
    /// request lost in a network partition, on a connection that stays
    /// dead. Only dropping the call (a timeout) ends it; calls made after
    /// healing go to the store.
    BlackHole,
    /// The connection resets before the store sees the call: an error whose
    /// source is an `std::io::Error` of kind `ConnectionReset`.
    Reset,
    /// The store does the call, then the connection resets before the
    /// answer arrives: the caller sees a reset for work that was done.
    AnswerLost,
}

/// When a fault applies to a call of its kind.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum When {
    Always,
    /// The next `n` calls, then the fault clears itself.
    Next(u64),
    /// Each call with this probability (0.0 ..= 1.0), from a seeded PRNG.
    Probability(f64),
}

/// A fault and when it applies.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Rule {
    fault: Fault,
    when: When,
}

#[derive(Debug, Default)]
struct Counters {
    calls: AtomicU64,
    injected: AtomicU64,
    /// Bumped each time this kind's fault is set or cleared: a stalled call
    /// waits for it to move.
    epoch: AtomicU64,
}

#[derive(Debug)]
struct Shared {
    rules: Mutex<RuleSet>,
    counters: [Counters; Op::ALL.len()],
    /// Bumped on every change, to wake stalled calls.
    changed: watch::Sender<u64>,
}

#[derive(Debug)]
struct RuleSet {
    rules: [Option<Rule>; Op::ALL.len()],
    rng: SplitMix64,
}

/// The control handle of one or more [`FaultyStore`]s: set and clear
/// faults, and count calls and injected faults. Clones share state.
#[derive(Clone, Debug)]
pub struct Faults(Arc<Shared>);

impl Default for Faults {
    fn default() -> Self {
        Self::new()
    }
}

impl Faults {
    /// No faults; probabilities drawn from a fixed seed.
    pub fn new() -> Self {
        Self::with_seed(0x5eed)
    }

    /// No faults; probabilities drawn from `seed`.
    pub fn with_seed(seed: u64) -> Self {
        Self(Arc::new(Shared {
            rules: Mutex::new(RuleSet {
                rules: [None; Op::ALL.len()],
                rng: SplitMix64::new(seed),
            }),
            counters: Default::default(),
            changed: watch::channel(0).0,
        }))
    }

    /// `inner` behind a [`FaultyStore`] controlled by this handle.
    pub fn wrap(&self, inner: Arc<dyn ObjectStore>) -> Arc<dyn ObjectStore> {
        Arc::new(FaultyStore::new(inner, self.clone()))
    }

    /// Every call of kind `op` gets `fault`, until cleared.
    pub fn set(&self, op: Op, fault: Fault) {
        self.set_when(op, fault, When::Always);
    }

    /// Calls of kind `op` get `fault` as `when` says, replacing any fault
    /// set for `op` before.
    pub fn set_when(&self, op: Op, fault: Fault, when: When) {
        self.replace(op, Some(Rule { fault, when }));
    }

    /// The same fault on several kinds, e.g. [`Op::WRITES`].
    pub fn set_all(&self, ops: &[Op], fault: Fault, when: When) {
        for &op in ops {
            self.set_when(op, fault, when);
        }
    }

    /// Clears the fault of `op`; stalled calls of that kind go on.
    pub fn clear(&self, op: Op) {
        self.replace(op, None);
    }

    /// Clears every fault; stalled calls go on, black-holed calls stay
    /// unanswered. Counters are kept.
    pub fn heal(&self) {
        for op in Op::ALL {
            self.replace(op, None);
        }
    }

    /// Calls of kind `op` so far.
    pub fn calls(&self, op: Op) -> u64 {
        self.counters(op)
            .map_or(0, |c| c.calls.load(Ordering::Relaxed))
    }

    /// Faults injected into calls of kind `op` so far.
    pub fn injected(&self, op: Op) -> u64 {
        self.counters(op)
            .map_or(0, |c| c.injected.load(Ordering::Relaxed))
    }

    /// Faults injected into calls of any kind so far.
    pub fn injected_total(&self) -> u64 {
        Op::ALL.iter().map(|&op| self.injected(op)).sum()
    }

    fn counters(&self, op: Op) -> Option<&Counters> {
        self.0.counters.get(op.index())
    }

    fn replace(&self, op: Op, rule: Option<Rule>) {
        if let Some(slot) = self.0.rules.lock().rules.get_mut(op.index()) {
            *slot = rule;
        }
        if let Some(c) = self.counters(op) {
            c.epoch.fetch_add(1, Ordering::AcqRel);
        }
        self.0.changed.send_modify(|g| *g += 1);
    }

    /// Counts a call of kind `op` and picks the fault it gets, if any.
    fn pick(&self, op: Op) -> Option<Fault> {
        let counters = self.counters(op)?;
        counters.calls.fetch_add(1, Ordering::Relaxed);
        let mut set = self.0.rules.lock();
        let RuleSet { rules, rng } = &mut *set;
        let slot = rules.get_mut(op.index())?;
        let rule = (*slot)?;
        let applies = match rule.when {
            When::Always => true,
            When::Next(0) => false,
            When::Next(n) => {
                *slot = (n > 1).then_some(Rule {
                    when: When::Next(n - 1),
                    ..rule
                });
                true
            }
            When::Probability(p) => rng.unit() < p,
        };
        if !applies {
            return None;
        }
        counters.injected.fetch_add(1, Ordering::Relaxed);
        Some(rule.fault)
    }

    fn epoch(&self, op: Op) -> u64 {
        self.counters(op)
            .map_or(0, |c| c.epoch.load(Ordering::Acquire))
    }

    /// Applies the fault a call of kind `op` gets before it goes to the
    /// store. `Ok(true)`: do the call, then report its answer lost.
    async fn before(&self, op: Op) -> Result<bool> {
        // Subscribed before the pick, so no change after it is missed.
        let mut changed = self.0.changed.subscribe();
        let epoch = self.epoch(op);
        match self.pick(op) {
            None => Ok(false),
            Some(Fault::Latency(d)) => {
                tokio::time::sleep(d).await;
                Ok(false)
            }
            Some(Fault::Status(code)) => Err(status_error(op, code)),
            Some(Fault::Reset) => Err(reset_error(op)),
            Some(Fault::AnswerLost) => Ok(true),
            Some(Fault::BlackHole) => std::future::pending().await,
            Some(Fault::Stall) => {
                while self.epoch(op) == epoch {
                    if changed.changed().await.is_err() {
                        break;
                    }
                }
                Ok(false)
            }
        }
    }

    /// Runs `call` under the fault `op` gets.
    async fn run<T>(
        &self,
        op: Op,
        call: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T> {
        let lose_answer = self.before(op).await?;
        let answer = call.await;
        if lose_answer && answer.is_ok() {
            return Err(reset_error(op));
        }
        answer
    }

    /// `stream` under the fault `op` gets, applied when it is first polled.
    fn stream<T: Send + 'static>(
        &self,
        op: Op,
        stream: BoxStream<'static, Result<T>>,
    ) -> BoxStream<'static, Result<T>> {
        let faults = self.clone();
        futures::stream::once(async move {
            match faults.before(op).await {
                Ok(false) => stream,
                // The whole answer is produced, then cut off.
                Ok(true) => stream
                    .chain(futures::stream::once(async move { Err(reset_error(op)) }))
                    .boxed(),
                Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
            }
        })
        .flatten()
        .boxed()
    }
}

/// An injected HTTP error status.
#[derive(Debug)]
struct InjectedStatus {
    op: Op,
    code: u16,
}

impl fmt::Display for InjectedStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let reason = match self.code {
            500 => " Internal Server Error",
            502 => " Bad Gateway",
            503 => " Service Unavailable",
            504 => " Gateway Timeout",
            _ => "",
        };
        write!(
            f,
            "injected fault: server returned non-2xx status code: {}{reason} ({:?})",
            self.code, self.op
        )
    }
}

impl std::error::Error for InjectedStatus {}

fn status_error(op: Op, code: u16) -> object_store::Error {
    object_store::Error::Generic {
        store: "FaultyStore",
        source: Box::new(InjectedStatus { op, code }),
    }
}

fn reset_error(op: Op) -> object_store::Error {
    object_store::Error::Generic {
        store: "FaultyStore",
        source: Box::new(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            format!("injected fault: connection reset by peer ({op:?})"),
        )),
    }
}

/// An object store that injects the faults its [`Faults`] handle sets.
#[derive(Debug)]
pub struct FaultyStore {
    inner: Arc<dyn ObjectStore>,
    faults: Faults,
}

impl FaultyStore {
    pub fn new(inner: Arc<dyn ObjectStore>, faults: Faults) -> Self {
        Self { inner, faults }
    }

    /// The handle that controls this store's faults.
    pub fn faults(&self) -> &Faults {
        &self.faults
    }
}

impl fmt::Display for FaultyStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FaultyStore({})", self.inner)
    }
}

/// A multipart upload whose parts and completion get `PutMultipart` faults.
#[derive(Debug)]
struct FaultyUpload {
    inner: Box<dyn MultipartUpload>,
    faults: Faults,
}

#[async_trait::async_trait]
impl MultipartUpload for FaultyUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        let part = self.inner.put_part(data);
        let faults = self.faults.clone();
        async move { faults.run(Op::PutMultipart, part).await }.boxed()
    }

    async fn complete(&mut self) -> Result<PutResult> {
        let faults = self.faults.clone();
        faults.run(Op::PutMultipart, self.inner.complete()).await
    }

    async fn abort(&mut self) -> Result<()> {
        self.inner.abort().await
    }
}

#[async_trait::async_trait]
impl ObjectStore for FaultyStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.faults
            .run(Op::Put, self.inner.put_opts(location, payload, opts))
            .await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        let inner = self
            .faults
            .run(
                Op::PutMultipart,
                self.inner.put_multipart_opts(location, opts),
            )
            .await?;
        Ok(Box::new(FaultyUpload {
            inner,
            faults: self.faults.clone(),
        }))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let op = if options.head { Op::Head } else { Op::Get };
        self.faults
            .run(op, self.inner.get_opts(location, options))
            .await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        self.faults
            .run(Op::Get, self.inner.get_ranges(location, ranges))
            .await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.faults
            .stream(Op::Delete, self.inner.delete_stream(locations))
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.faults.stream(Op::List, self.inner.list(prefix))
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.faults
            .stream(Op::List, self.inner.list_with_offset(prefix, offset))
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.faults
            .run(Op::List, self.inner.list_with_delimiter(prefix))
            .await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.faults
            .run(Op::Copy, self.inner.copy_opts(from, to, options))
            .await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        self.faults
            .run(Op::Copy, self.inner.rename_opts(from, to, options))
            .await
    }
}

#[cfg(test)]
mod tests {
    use object_store::memory::InMemory;
    use object_store::ObjectStoreExt;

    use super::*;

    fn store() -> (Faults, Arc<dyn ObjectStore>) {
        let faults = Faults::new();
        let store = faults.wrap(Arc::new(InMemory::new()));
        (faults, store)
    }

    fn path() -> Path {
        Path::from("a/b")
    }

    #[tokio::test]
    async fn status_and_reset_errors_look_like_a_client_s() {
        let (faults, store) = store();
        faults.set(Op::Put, Fault::Status(503));
        let e = store.put(&path(), "x".into()).await.unwrap_err();
        assert!(matches!(e, object_store::Error::Generic { .. }), "{e:?}");
        assert!(e.to_string().contains("503"), "{e}");

        faults.set(Op::Put, Fault::Reset);
        let e = store.put(&path(), "x".into()).await.unwrap_err();
        let object_store::Error::Generic { source, .. } = &e else {
            panic!("{e:?}");
        };
        let io = source.downcast_ref::<std::io::Error>().unwrap();
        assert_eq!(io.kind(), std::io::ErrorKind::ConnectionReset);
        assert_eq!(faults.injected(Op::Put), 2);
        assert_eq!(faults.calls(Op::Put), 2);
        // Nothing reached the store.
        assert!(store.get(&path()).await.is_err());

        faults.heal();
        store.put(&path(), "x".into()).await.unwrap();
        assert_eq!(faults.injected(Op::Put), 2);
        assert_eq!(faults.calls(Op::Put), 3);
    }

    #[tokio::test]
    async fn faults_apply_by_operation() {
        let (faults, store) = store();
        store.put(&path(), "x".into()).await.unwrap();
        faults.set(Op::Get, Fault::Status(500));
        assert!(store.get(&path()).await.is_err());
        assert!(store.get_range(&path(), 0..1).await.is_err());
        store.head(&path()).await.unwrap();
        store.put(&path(), "y".into()).await.unwrap();
        faults.set(Op::List, Fault::Reset);
        assert!(store.list(None).next().await.unwrap().is_err());
        assert_eq!(faults.injected(Op::Get), 2);
        assert_eq!(faults.injected(Op::List), 1);
        assert_eq!(faults.injected(Op::Put), 0);
    }

    #[tokio::test]
    async fn next_n_calls_then_clear() {
        let (faults, store) = store();
        faults.set_when(Op::Put, Fault::Status(500), When::Next(2));
        assert!(store.put(&path(), "x".into()).await.is_err());
        assert!(store.put(&path(), "x".into()).await.is_err());
        store.put(&path(), "x".into()).await.unwrap();
        assert_eq!(faults.injected(Op::Put), 2);
    }

    #[tokio::test]
    async fn probability_is_deterministic_and_roughly_right() {
        let run = || async {
            let (faults, store) = store();
            faults.set_when(Op::Head, Fault::Status(503), When::Probability(0.3));
            store.put(&path(), "x".into()).await.unwrap();
            let mut failed = Vec::new();
            for _ in 0..200 {
                failed.push(store.head(&path()).await.is_err());
            }
            failed
        };
        let a = run().await;
        assert_eq!(a, run().await);
        let n = a.iter().filter(|f| **f).count();
        assert!((40..=80).contains(&n), "{n} of 200 failed at p = 0.3");
    }

    #[tokio::test]
    async fn answer_lost_does_the_work() {
        let (faults, store) = store();
        faults.set(Op::Put, Fault::AnswerLost);
        assert!(store.put(&path(), "x".into()).await.is_err());
        faults.clear(Op::Put);
        let got = store.get(&path()).await.unwrap().bytes().await.unwrap();
        assert_eq!(&got[..], b"x");
    }

    #[tokio::test]
    async fn stall_waits_until_cleared_black_hole_forever_latency_delays() {
        let (faults, store) = store();
        faults.set(Op::Put, Fault::Stall);
        let stalled = tokio::spawn({
            let store = Arc::clone(&store);
            async move { store.put(&path(), "x".into()).await }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!stalled.is_finished());
        // Another kind's fault changing does not release it.
        faults.set(Op::Get, Fault::Status(500));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!stalled.is_finished());
        faults.heal();
        stalled.await.unwrap().unwrap();

        faults.set(Op::Put, Fault::BlackHole);
        let lost = tokio::spawn({
            let store = Arc::clone(&store);
            async move { store.put(&Path::from("lost"), "x".into()).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        faults.heal();
        // Healed, new calls are answered; the black-holed one never is.
        store.put(&path(), "y".into()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!lost.is_finished());
        lost.abort();
        assert!(store.head(&Path::from("lost")).await.is_err());

        faults.set(Op::Head, Fault::Latency(Duration::from_millis(100)));
        let started = std::time::Instant::now();
        store.head(&path()).await.unwrap();
        assert!(started.elapsed() >= Duration::from_millis(100));
    }
}
