//! Sends an object-store request again when it is not answered in time.
//!
//! Why: a request on a connection that died (a network partition, or a NAT
//! or load balancer that dropped the connection) neither answers nor
//! fails, and nothing above gives it up. SlateDB retries a call only once
//! it has failed, its WAL flush waits for the upload in hand, and every
//! Durable write waits for the WAL flush: all of them wait until the HTTP
//! client's own request timeout (30 s on S3) fails the request. After such
//! a partition healed, the first Durable write succeeded 27 s later.
//!
//! So a request not answered within [`RESEND_AFTER`] (plus time for the
//! bytes it uploads) is sent again, and the first answer wins. The first
//! try is kept, not given up: a store that is only slow still answers it,
//! and no call is retried for ever. Each later try replaces the one
//! before it, so at most two tries of a call are out at once. Once the
//! store answers again, the next try (at most `RESEND_AFTER` later) gets
//! through.
//!
//! Covered: uploads in one request, reads up to the answer's head (the
//! body of a streamed read is not), metadata reads and listings (a listing
//! is collected whole, as SlateDB's retry layer collects it anyway).
//! Multipart uploads (SlateDB's tables over 10 MiB), deletes and copies
//! go through as they are: none is on a Durable write's path.

use std::fmt;
use std::future::Future;
use std::ops::Range;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions, Result,
};

/// How long a request may go unanswered before it is sent again. Why 1 s:
/// it bounds how long writes wait after a partition heals (about a second
/// is what `docs/reliability.md` promises), and it is well above the time
/// S3 takes to answer a small request (tens of milliseconds; AWS's advice
/// for latency-sensitive clients is a 2 s request timeout, then a retry).
/// A slower store costs a second request per slow call, never an answer.
pub(crate) const RESEND_AFTER: Duration = Duration::from_secs(1);

/// Time allowed per MiB uploaded on top of [`RESEND_AFTER`]: 4 MiB/s, so
/// that a large upload (a memtable's table) is not sent twice while it is
/// still going at a reasonable pace.
const PER_MIB: Duration = Duration::from_millis(250);

fn resend_after(upload_bytes: usize) -> Duration {
    RESEND_AFTER + PER_MIB.mul_f64(upload_bytes as f64 / f64::from(1u32 << 20))
}

/// Whether a try's error may wait while another try of the same call is
/// out, since that one may still succeed: a transient error (SlateDB
/// retries those), or "already exists" and "precondition failed", which
/// the other try may have caused by succeeding first.
fn may_wait(e: &object_store::Error) -> bool {
    slatedb_common::retry::should_retry(e)
        || matches!(
            e,
            object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. }
        )
}

/// Polls one try; its answer if the call should return it now.
fn poll_try<T>(
    slot: &mut Option<BoxFuture<'_, Result<T>>>,
    other_out: bool,
    cx: &mut std::task::Context<'_>,
) -> Option<Result<T>> {
    let answer = match slot.as_mut()?.poll_unpin(cx) {
        Poll::Pending => return None,
        Poll::Ready(answer) => answer,
    };
    *slot = None;
    match answer {
        Err(e) if other_out && may_wait(&e) => {
            tracing::debug!(error = %e, "object store try failed; another is out");
            None
        }
        answer => Some(answer),
    }
}

/// The first answer to `send`, sent again every `after` while unanswered:
/// the first try and the latest one are kept.
async fn first_answer<'a, T: Send>(
    after: Duration,
    send: impl Fn() -> BoxFuture<'a, Result<T>> + Send,
) -> Result<T> {
    let mut first = Some(send());
    let mut latest: Option<BoxFuture<'a, Result<T>>> = None;
    let mut resend = Box::pin(tokio::time::sleep(after));
    std::future::poll_fn(move |cx| loop {
        if let Some(answer) = poll_try(&mut first, latest.is_some(), cx) {
            return Poll::Ready(answer);
        }
        if let Some(answer) = poll_try(&mut latest, first.is_some(), cx) {
            return Poll::Ready(answer);
        }
        if resend.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        tracing::debug!(?after, "object store request unanswered; sending it again");
        latest = Some(send());
        resend.as_mut().reset(tokio::time::Instant::now() + after);
    })
    .await
}

/// A listing as one collected answer, so that it can be sent again.
fn collected(
    listing: impl Future<Output = Result<Vec<ObjectMeta>>> + Send + 'static,
) -> BoxStream<'static, Result<ObjectMeta>> {
    futures::stream::once(listing)
        .map_ok(|all| futures::stream::iter(all.into_iter().map(Ok)))
        .try_flatten()
        .boxed()
}

/// Wraps a store, sending requests again that go unanswered (see the
/// module's comment).
#[derive(Debug)]
pub struct ResendingStore {
    inner: Arc<dyn ObjectStore>,
}

impl ResendingStore {
    pub fn new(inner: Arc<dyn ObjectStore>) -> Self {
        Self { inner }
    }
}

impl fmt::Display for ResendingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Resending({})", self.inner)
    }
}

#[async_trait::async_trait]
impl ObjectStore for ResendingStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        let after = resend_after(payload.content_length());
        first_answer(after, || {
            self.inner.put_opts(location, payload.clone(), opts.clone())
        })
        .await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        first_answer(RESEND_AFTER, || {
            self.inner.get_opts(location, options.clone())
        })
        .await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let bytes: u64 = ranges.iter().map(|r| r.end.saturating_sub(r.start)).sum();
        let after = resend_after(usize::try_from(bytes).unwrap_or(usize::MAX));
        first_answer(after, || self.inner.get_ranges(location, ranges)).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        let inner = Arc::clone(&self.inner);
        let prefix = prefix.cloned();
        collected(async move {
            first_answer(RESEND_AFTER, || {
                inner.list(prefix.as_ref()).try_collect().boxed()
            })
            .await
        })
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        let inner = Arc::clone(&self.inner);
        let prefix = prefix.cloned();
        let offset = offset.clone();
        collected(async move {
            first_answer(RESEND_AFTER, || {
                inner
                    .list_with_offset(prefix.as_ref(), &offset)
                    .try_collect()
                    .boxed()
            })
            .await
        })
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        first_answer(RESEND_AFTER, || self.inner.list_with_delimiter(prefix)).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        self.inner.rename_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use object_store::memory::InMemory;
    use object_store::ObjectStoreExt;

    use super::*;
    use crate::faults::{Fault, Faults, Op, When};

    fn store() -> (Faults, ResendingStore) {
        let faults = Faults::new();
        let store = ResendingStore::new(faults.wrap(Arc::new(InMemory::new())));
        (faults, store)
    }

    #[tokio::test]
    async fn a_black_holed_request_is_sent_again() {
        let (faults, store) = store();
        faults.set_when(Op::Put, Fault::BlackHole, When::Next(1));
        let started = Instant::now();
        store.put(&Path::from("a"), "x".into()).await.unwrap();
        let took = started.elapsed();
        assert!(took >= RESEND_AFTER, "{took:?}");
        assert!(took < RESEND_AFTER * 2, "{took:?}");
        assert_eq!(faults.calls(Op::Put), 2);

        faults.set_when(Op::Get, Fault::BlackHole, When::Next(2));
        let got = store.get(&Path::from("a")).await.unwrap().bytes().await;
        assert_eq!(&got.unwrap()[..], b"x");
        assert_eq!(faults.calls(Op::Get), 3);

        faults.set_when(Op::List, Fault::BlackHole, When::Next(1));
        let listed: Vec<_> = store.list(None).try_collect().await.unwrap();
        assert_eq!(listed.len(), 1);
    }

    fn exists() -> object_store::Error {
        object_store::Error::AlreadyExists {
            path: "c".into(),
            source: "exists".into(),
        }
    }

    type Answer = fn() -> Result<u32>;

    /// Tries sent every 100 ms, try `i` answering `plan[i].1` after
    /// `plan[i].0` ms, later ones as `rest` says: the answer, how long it
    /// took and how many tries were sent.
    async fn tries(plan: &[(u64, Answer)], rest: (u64, Answer)) -> (Result<u32>, Duration, usize) {
        let sent = std::sync::atomic::AtomicUsize::new(0);
        let started = Instant::now();
        let answer = first_answer(Duration::from_millis(100), || {
            let n = sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let (delay, answer) = plan.get(n).copied().unwrap_or(rest);
            async move {
                tokio::time::sleep(Duration::from_millis(delay)).await;
                answer()
            }
            .boxed()
        })
        .await;
        (answer, started.elapsed(), sent.into_inner())
    }

    const NEVER: u64 = 60_000;

    #[tokio::test]
    async fn the_first_answer_wins_and_a_slow_first_try_is_kept() {
        // The first try, slower than the resend time, still answers.
        let (answer, took, sent) = tries(&[(250, || Ok(0))], (NEVER, || Ok(1))).await;
        assert_eq!(answer.unwrap(), 0);
        assert!(took < Duration::from_millis(400), "{took:?}");
        assert_eq!(sent, 3);
        // A try sent again answers first.
        let (answer, _, sent) =
            tries(&[(NEVER, || Ok(0)), (10, || Ok(1))], (NEVER, || Ok(2))).await;
        assert_eq!((answer.unwrap(), sent), (1, 2));
    }

    #[tokio::test]
    async fn an_error_another_try_may_have_caused_waits_for_it() {
        // The second try finds the object the first one created.
        let plan: [(u64, Answer); 2] = [(320, || Ok(0)), (50, || Err(exists()))];
        let (answer, _, _) = tries(&plan, (NEVER, || Ok(1))).await;
        assert_eq!(answer.unwrap(), 0);
        // A transient error waits for the other try too.
        let plan: [(u64, Answer); 2] = [(320, || Ok(0)), (50, || Err(status()))];
        let (answer, _, _) = tries(&plan, (NEVER, || Ok(1))).await;
        assert_eq!(answer.unwrap(), 0);
        // Every try fails: the error comes once no try is out.
        let plan: [(u64, Answer); 2] = [(320, || Err(status())), (50, || Err(exists()))];
        let (answer, took, _) = tries(&plan, (50, || Err(status()))).await;
        assert!(matches!(answer, Err(object_store::Error::Generic { .. })));
        assert!(took < Duration::from_millis(500), "{took:?}");
        // A definite answer ("not found") is returned at once.
        let plan: [(u64, Answer); 2] = [(NEVER, || Ok(0)), (10, || Err(missing()))];
        let (answer, took, _) = tries(&plan, (NEVER, || Ok(1))).await;
        assert!(matches!(answer, Err(object_store::Error::NotFound { .. })));
        assert!(took < Duration::from_millis(300), "{took:?}");
    }

    fn status() -> object_store::Error {
        object_store::Error::Generic {
            store: "test",
            source: "503 Service Unavailable".into(),
        }
    }

    fn missing() -> object_store::Error {
        object_store::Error::NotFound {
            path: "c".into(),
            source: "missing".into(),
        }
    }

    #[tokio::test]
    async fn answers_and_errors_pass_through() {
        let (faults, store) = store();
        assert!(matches!(
            store.get(&Path::from("missing")).await,
            Err(object_store::Error::NotFound { .. })
        ));
        faults.set(Op::Put, Fault::Status(503));
        assert!(store.put(&Path::from("a"), "x".into()).await.is_err());
        assert_eq!(faults.calls(Op::Put), 1);
    }
}
