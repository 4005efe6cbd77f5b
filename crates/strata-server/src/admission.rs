//! Admission of query work, kept apart from ingest and probes.
//!
//! Requests of the query API run on a runtime of their own whose threads
//! have a lower scheduling priority than the request runtime's
//! ([`QueryPool`]): remote write, `/-/healthy` and `/-/ready` are served
//! on the request runtime's workers, which query work never occupies, and
//! when the CPU is short the kernel runs them first.
//!
//! Before it runs, a query request takes a turn ([`QueryAdmission`]): at
//! most `query.max_concurrent` run on the node and
//! `query.max_concurrent_per_tenant` per tenant; the others wait in a
//! queue of at most `query.max_queued`, each for at most
//! `query.queue_timeout`. A request the queue cannot take, or that waited
//! too long, is answered 503 with `Retry-After` at once, so a dashboard's
//! burst costs a refusal, not a pile of work nobody waits for.

use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use strata_storage::stats::LATENCY_BOUNDS;
use strata_storage::Histogram;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::config::QueryConfig;

/// Nice value of the query runtime's threads: above ingest and probes
/// (0), below the seal and compaction threads (10), which must keep up.
const QUERY_NICE: i32 = 5;

/// The runtime query requests run on.
pub struct QueryPool {
    /// Taken on drop, to shut it down without blocking the async context
    /// the server's state is dropped in.
    runtime: Option<tokio::runtime::Runtime>,
}

impl QueryPool {
    /// A runtime of one worker per core, whose blocking threads (query
    /// evaluation, decoding) are bounded, all at a lower priority.
    pub fn new() -> std::io::Result<Self> {
        let cores = strata_codec::threads::available().max(1);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(cores)
            .max_blocking_threads((4 * cores).max(8))
            .thread_name("strata-query")
            .on_thread_start(lower_priority)
            .enable_all()
            .build()?;
        Ok(Self {
            runtime: Some(runtime),
        })
    }

    /// A handle on the query runtime, for work that belongs beside the
    /// queries (rule evaluation); `None` once it is shut down.
    pub fn handle(&self) -> Option<tokio::runtime::Handle> {
        self.runtime.as_ref().map(|r| r.handle().clone())
    }

    /// Starts `work` on the query runtime (or on the current one once the
    /// pool is shut down); aborted when the returned handle is dropped,
    /// unless detached.
    pub fn spawn<F>(&self, work: F) -> AbortOnDrop
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let handle = match &self.runtime {
            Some(runtime) => runtime.spawn(work),
            None => tokio::spawn(work),
        };
        AbortOnDrop(Some(handle))
    }
}

impl Drop for QueryPool {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// A spawned task that is aborted when its handle is dropped.
pub struct AbortOnDrop(Option<tokio::task::JoinHandle<()>>);

impl AbortOnDrop {
    /// Lets the task run on its own.
    pub fn detach(mut self) {
        self.0 = None;
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(h) = self.0.take() {
            h.abort();
        }
    }
}

/// Lowers the calling thread's scheduling priority (Linux: a thread's
/// nice value is its own). Best effort: queries work at any priority.
#[allow(unsafe_code)]
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid and setpriority take no pointers and only affect the
    // calling thread's scheduling.
    unsafe {
        let tid = libc::gettid();
        if libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, QUERY_NICE) != 0 {
            tracing::debug!("could not lower a query thread's priority");
        }
    }
}

/// Why a query request was not admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The queue held `query.max_queued` requests already.
    QueueFull { max_queued: usize },
    /// It waited `query.queue_timeout` for a turn, on the node's limit or
    /// its tenant's.
    QueueTimeout {
        waited: Duration,
        limit: &'static str,
        running: usize,
    },
}

impl Refusal {
    /// Seconds a client should wait before it tries again.
    pub fn retry_after_secs(&self) -> u64 {
        1
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::QueueFull { max_queued } => write!(
                f,
                "too many queries: {max_queued} are queued already (query.max_queued); retry later"
            ),
            Self::QueueTimeout {
                waited,
                limit,
                running,
            } => write!(
                f,
                "query waited {:.1}s in the queue (query.queue_timeout) while {running} queries \
                 ran ({limit}); retry later",
                waited.as_secs_f64()
            ),
        }
    }
}

/// A query request's turn; the next waiting request starts when it drops.
pub struct Admitted {
    _node: OwnedSemaphorePermit,
    _tenant: Option<OwnedSemaphorePermit>,
    running: Arc<AtomicUsize>,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.running.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What `/metrics` shows of admission.
pub struct AdmissionStats {
    pub admitted: AtomicU64,
    pub refused_queue_full: AtomicU64,
    pub refused_queue_timeout: AtomicU64,
    /// Time each admitted or timed-out request waited for its turn.
    pub queue_wait: Histogram,
}

/// The turns of query requests: per node, per tenant, and the queue.
pub struct QueryAdmission {
    node: Arc<Semaphore>,
    per_tenant: usize,
    tenants: Mutex<FxHashMap<String, Arc<Semaphore>>>,
    max_queued: usize,
    queue_timeout: Duration,
    queued: AtomicUsize,
    running: Arc<AtomicUsize>,
    pub stats: AdmissionStats,
}

impl QueryAdmission {
    pub fn new(config: &QueryConfig) -> Self {
        let max_concurrent = config.max_concurrent.max(1);
        Self {
            node: Arc::new(Semaphore::new(max_concurrent)),
            per_tenant: config.max_concurrent_per_tenant,
            tenants: Mutex::new(FxHashMap::default()),
            max_queued: config.max_queued,
            queue_timeout: config.queue_timeout,
            queued: AtomicUsize::new(0),
            running: Arc::new(AtomicUsize::new(0)),
            stats: AdmissionStats {
                admitted: AtomicU64::new(0),
                refused_queue_full: AtomicU64::new(0),
                refused_queue_timeout: AtomicU64::new(0),
                queue_wait: Histogram::new(LATENCY_BOUNDS),
            },
        }
    }

    /// Requests waiting for a turn now.
    pub fn queued(&self) -> usize {
        self.queued.load(Ordering::Relaxed)
    }

    /// Requests running now.
    pub fn running(&self) -> usize {
        self.running.load(Ordering::Relaxed)
    }

    fn tenant_gate(&self, tenant: &str) -> Option<Arc<Semaphore>> {
        if self.per_tenant == 0 {
            return None;
        }
        let mut tenants = self.tenants.lock();
        if tenants.len() > 4096 {
            // Tenants with nothing running hold no permit: forget them
            // rather than grow with every tenant ever seen.
            let limit = self.per_tenant;
            tenants.retain(|_, s| Arc::strong_count(s) > 1 || s.available_permits() < limit);
        }
        let gate = tenants
            .entry(tenant.to_owned())
            .or_insert_with(|| Arc::new(Semaphore::new(self.per_tenant)));
        Some(Arc::clone(gate))
    }

    /// Waits for `tenant`'s request's turn: its tenant's first, then the
    /// node's, within `query.queue_timeout` in all; refuses at once when
    /// the queue is full.
    pub async fn admit(&self, tenant: &str) -> Result<Admitted, Refusal> {
        let tenant_gate = self.tenant_gate(tenant);
        let tenant_now = match &tenant_gate {
            Some(g) => match Arc::clone(g).try_acquire_owned() {
                Ok(p) => Some(Some(p)),
                Err(_) => None,
            },
            None => Some(None),
        };
        if let Some(tenant_permit) = tenant_now {
            if let Ok(node) = Arc::clone(&self.node).try_acquire_owned() {
                return Ok(self.admitted(node, tenant_permit, Duration::ZERO));
            }
            // Queued for the node only: the tenant's permit is given back
            // while waiting, so that a tenant's queued requests do not
            // hold its turns.
        }
        let was = self.queued.fetch_add(1, Ordering::AcqRel);
        let _queued = Queued(&self.queued);
        if was >= self.max_queued {
            self.stats
                .refused_queue_full
                .fetch_add(1, Ordering::Relaxed);
            return Err(Refusal::QueueFull {
                max_queued: self.max_queued,
            });
        }
        let began = Instant::now();
        let deadline = tokio::time::Instant::from_std(began + self.queue_timeout);
        let timed_out = |limit: &'static str| {
            let waited = began.elapsed();
            self.stats.queue_wait.observe(waited);
            self.stats
                .refused_queue_timeout
                .fetch_add(1, Ordering::Relaxed);
            Refusal::QueueTimeout {
                waited,
                limit,
                running: self.running(),
            }
        };
        let tenant_permit = match tenant_gate {
            Some(g) => match tokio::time::timeout_at(deadline, g.acquire_owned()).await {
                Ok(Ok(p)) => Some(p),
                _ => return Err(timed_out("query.max_concurrent_per_tenant")),
            },
            None => None,
        };
        let node =
            match tokio::time::timeout_at(deadline, Arc::clone(&self.node).acquire_owned()).await {
                Ok(Ok(p)) => p,
                _ => return Err(timed_out("query.max_concurrent")),
            };
        Ok(self.admitted(node, tenant_permit, began.elapsed()))
    }

    fn admitted(
        &self,
        node: OwnedSemaphorePermit,
        tenant: Option<OwnedSemaphorePermit>,
        waited: Duration,
    ) -> Admitted {
        self.stats.admitted.fetch_add(1, Ordering::Relaxed);
        self.stats.queue_wait.observe(waited);
        self.running.fetch_add(1, Ordering::Relaxed);
        Admitted {
            _node: node,
            _tenant: tenant,
            running: Arc::clone(&self.running),
        }
    }

    /// The admission metrics, in the Prometheus text format.
    pub fn render(&self, out: &mut String) {
        use std::fmt::Write as _;
        let l = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "# HELP strata_query_queue_depth Query requests waiting for a turn (query.max_queued).\n\
             # TYPE strata_query_queue_depth gauge\nstrata_query_queue_depth {}",
            self.queued()
        );
        let _ = writeln!(
            out,
            "# HELP strata_query_running Query requests running (query.max_concurrent).\n\
             # TYPE strata_query_running gauge\nstrata_query_running {}",
            self.running()
        );
        let _ = writeln!(
            out,
            "# HELP strata_query_admitted_total Query requests given a turn.\n\
             # TYPE strata_query_admitted_total counter\nstrata_query_admitted_total {}",
            l(&self.stats.admitted)
        );
        let _ = writeln!(
            out,
            "# HELP strata_query_refused_total Query requests refused with 503 before they ran, \
             by reason.\n# TYPE strata_query_refused_total counter\n\
             strata_query_refused_total{{reason=\"queue_full\"}} {}\n\
             strata_query_refused_total{{reason=\"queue_timeout\"}} {}",
            l(&self.stats.refused_queue_full),
            l(&self.stats.refused_queue_timeout)
        );
        let _ = writeln!(
            out,
            "# HELP strata_query_queue_wait_seconds Time query requests waited for a turn.\n\
             # TYPE strata_query_queue_wait_seconds histogram"
        );
        crate::metrics::histogram_lines(
            out,
            "strata_query_queue_wait_seconds",
            "",
            &self.stats.queue_wait,
        );
    }
}

/// One request counted in the queue until it leaves it.
struct Queued<'a>(&'a AtomicUsize);

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admission(max_concurrent: usize, per_tenant: usize, max_queued: usize) -> QueryAdmission {
        QueryAdmission::new(&QueryConfig {
            max_concurrent,
            max_concurrent_per_tenant: per_tenant,
            max_queued,
            queue_timeout: Duration::from_millis(100),
            ..QueryConfig::default()
        })
    }

    #[tokio::test]
    async fn a_full_queue_refuses_at_once_and_a_long_wait_times_out() {
        let a = Arc::new(admission(1, 0, 1));
        let first = a.admit("t").await.unwrap();
        assert_eq!(a.running(), 1);
        // One waits in the queue...
        let waiting = {
            let a = Arc::clone(&a);
            tokio::spawn(async move { a.admit("t").await.map(|_| ()) })
        };
        while a.queued() == 0 {
            tokio::task::yield_now().await;
        }
        // ...so the next finds it full.
        let began = Instant::now();
        let err = a.admit("t").await.err().unwrap();
        assert_eq!(err, Refusal::QueueFull { max_queued: 1 });
        assert!(began.elapsed() < Duration::from_millis(50));
        assert!(err.to_string().contains("query.max_queued"), "{err}");
        // The one waiting gives up after the queue timeout.
        let err = waiting.await.unwrap().err().unwrap();
        assert!(err.to_string().contains("query.queue_timeout"), "{err}");
        assert!(err.to_string().contains("(query.max_concurrent)"), "{err}");
        assert_eq!(a.stats.refused_queue_full.load(Ordering::Relaxed), 1);
        assert_eq!(a.stats.refused_queue_timeout.load(Ordering::Relaxed), 1);
        drop(first);
        assert_eq!(a.running(), 0);
        assert_eq!(a.queued(), 0);
        assert!(a.admit("t").await.is_ok());
    }

    #[tokio::test]
    async fn a_tenant_over_its_limit_waits_while_others_run() {
        let a = admission(4, 1, 10);
        let busy = a.admit("busy").await.unwrap();
        // Another tenant runs at once.
        let other = a.admit("other").await.unwrap();
        assert_eq!(a.running(), 2);
        // The busy tenant's second request waits for its first.
        let err = a.admit("busy").await.err().unwrap();
        assert!(
            err.to_string().contains("query.max_concurrent_per_tenant"),
            "{err}"
        );
        drop(busy);
        assert!(a.admit("busy").await.is_ok());
        drop(other);
    }
}
