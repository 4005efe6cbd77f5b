//! Strata's storage engine on SlateDB: the keyspace, the in-memory head,
//! the write coordinator, the sealer, recovery and the read API.
//!
//! ```text
//!  write(labels, samples) ──resolve series (caller's task)──▶ coordinator queue
//!  coordinator: append to head ─▶ one `L` record (+ new `S` keys) ─▶ SlateDB
//!  sealer (bucket end + grace): head bucket ─▶ `C` chunks + `I` postings + `M`
//!  open: `M` checkpoint ─▶ load `S` ─▶ replay `L` after the checkpoint
//! ```
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::indexing_slicing))]

pub mod clock;
mod coordinator;
pub mod error;
pub mod head;
pub mod instrumented;
pub mod keys;
mod object_store_url;
mod postings;
mod read;
mod recovery;
mod sealer;
pub mod settings;
pub mod stats;
pub mod values;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use slatedb::config::{PutOptions, Ttl};
use slatedb::Db;
use strata_codec::Label;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

pub use clock::{Clock, ManualClock, SystemClock};
pub use coordinator::{render_labels, ResolvedSeries, WriteOutcome};
pub use error::StorageError;
pub use head::Rejection;
pub use instrumented::{InstrumentedStore, ObjectStoreCounters, ObjectStoreStats};
pub use object_store_url::{open_object_store, ObjectStoreLocation, S3Settings};
pub use read::SeriesData;
pub use settings::StorageSettings;
pub use stats::{Histogram, StorageStats};

use coordinator::Command;

/// When a write is answered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// Once applied to the head and appended to SlateDB's WAL buffer; a
    /// crash loses at most one flush interval.
    #[default]
    Applied,
    /// Once SlateDB reports the WAL flushed to the object store.
    Durable,
}

/// The samples of one series to write; labels sorted with unique names.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IngestSeries {
    pub labels: Vec<Label>,
    pub samples: Vec<(i64, f64)>,
}

pub(crate) struct Inner {
    pub(crate) db: Db,
    pub(crate) head: head::Head,
    pub(crate) settings: StorageSettings,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) stats: StorageStats,
    pub(crate) fenced: AtomicBool,
    pub(crate) object_store: Arc<ObjectStoreCounters>,
}

impl Inner {
    pub(crate) fn series_ttl(&self) -> PutOptions {
        PutOptions {
            ttl: Ttl::ExpireAfterMillis(
                u64::try_from(self.settings.retention_ms()).unwrap_or(u64::MAX),
            ),
        }
    }
}

/// An open Strata database: one writer on one object-store path.
pub struct Storage {
    inner: Arc<Inner>,
    tx: mpsc::Sender<Command>,
    coordinator: Mutex<Option<JoinHandle<()>>>,
}

impl Storage {
    /// Opens (or creates) the database at `path` in `store` and recovers
    /// the head: checkpoint, forward index, then the log after it.
    pub async fn open(
        store: Arc<dyn object_store::ObjectStore>,
        path: &str,
        settings: StorageSettings,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, StorageError> {
        settings.validate().map_err(StorageError::Invalid)?;
        let counters = Arc::new(ObjectStoreCounters::default());
        let store: Arc<dyn object_store::ObjectStore> =
            Arc::new(InstrumentedStore::new(store, Arc::clone(&counters)));
        let slate = slatedb::Settings {
            flush_interval: Some(settings.flush_interval),
            ..slatedb::Settings::default()
        };
        let db = Db::builder(path.to_owned(), store)
            .with_settings(slate)
            .build()
            .await?;
        let recovered = recovery::recover(&db, &settings).await?;
        let inner = Arc::new(Inner {
            db,
            head: recovered.head,
            settings,
            clock,
            stats: StorageStats::default(),
            fenced: AtomicBool::new(false),
            object_store: counters,
        });
        add_replayed(&inner, recovered.samples_replayed);
        let (tx, rx) = mpsc::channel(inner.settings.queue_capacity);
        let coordinator = coordinator::Coordinator::new(
            Arc::clone(&inner),
            recovered.next_seq,
            recovered.open_buckets,
            recovered.frozen_through,
        );
        let handle = tokio::spawn(coordinator.run(rx));
        Ok(Self {
            inner,
            tx,
            coordinator: Mutex::new(Some(handle)),
        })
    }

    /// Writes series samples and answers at the requested durability. The
    /// outcome counts appended, duplicate and rejected samples; rejected
    /// samples do not fail the call.
    pub async fn write(
        &self,
        series: Vec<IngestSeries>,
        durability: Durability,
    ) -> Result<WriteOutcome, StorageError> {
        if self.inner.fenced.load(Ordering::Acquire) {
            return Err(StorageError::Fenced(
                "a newer writer holds this path".into(),
            ));
        }
        let now = self.inner.clock.now_ms();
        let mut new_series = 0;
        let resolved = series
            .into_iter()
            .filter(|s| !s.samples.is_empty())
            .map(|s| {
                let (series, created) = self.inner.head.get_or_create(s.labels, now);
                new_series += usize::from(created);
                ResolvedSeries {
                    series,
                    samples: s.samples,
                }
            })
            .collect::<Vec<_>>();
        stats::add(&self.inner.stats.series_created, new_series);
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(Command::Write {
                series: resolved,
                new_series,
                reply,
            })
            .await
            .map_err(|_| StorageError::Closed)?;
        let (outcome, handle) = rx
            .await
            .map_err(|_| StorageError::Closed)?
            .map_err(|e| self.note(e))?;
        if durability == Durability::Durable {
            if let Some(h) = handle {
                let started = std::time::Instant::now();
                h.await_durable()
                    .await
                    .map_err(|e| self.note(StorageError::from(e)))?;
                self.inner.stats.durable_wait.observe(started.elapsed());
            }
        }
        Ok(outcome)
    }

    /// Records that this writer was fenced, if that is what `e` says.
    fn note(&self, e: StorageError) -> StorageError {
        if matches!(e, StorageError::Fenced(_)) && !self.inner.fenced.swap(true, Ordering::AcqRel) {
            tracing::error!("this writer has been fenced by a newer writer on the same path");
        }
        e
    }

    /// Seals every bucket that is due now, and waits for it.
    pub async fn seal_due_now(&self) -> Result<(), StorageError> {
        let (done, rx) = oneshot::channel();
        self.tx
            .send(Command::SealNow(done))
            .await
            .map_err(|_| StorageError::Closed)?;
        rx.await.map_err(|_| StorageError::Closed)?
    }

    /// Flushes SlateDB's WAL to the object store now.
    pub async fn flush(&self) -> Result<(), StorageError> {
        Ok(self.inner.db.flush().await?)
    }

    /// Stops taking writes, finishes queued ones and any seal under way,
    /// then flushes and closes SlateDB.
    pub async fn close(&self) -> Result<(), StorageError> {
        let handle = self.coordinator.lock().take();
        if let Some(handle) = handle {
            let (done, rx) = oneshot::channel();
            if self.tx.send(Command::Shutdown(done)).await.is_ok() {
                let _ = rx.await;
            }
            let _ = handle.await;
        }
        if self.inner.fenced.load(Ordering::Acquire) {
            return Ok(());
        }
        Ok(self.inner.db.close().await?)
    }

    pub fn stats(&self) -> &StorageStats {
        &self.inner.stats
    }

    pub fn head(&self) -> &head::Head {
        &self.inner.head
    }

    pub fn settings(&self) -> &StorageSettings {
        &self.inner.settings
    }

    /// Whether a newer writer fenced this one.
    pub fn is_fenced(&self) -> bool {
        self.inner.fenced.load(Ordering::Acquire)
    }

    /// Requests and errors against the object store so far.
    pub fn object_store_stats(&self) -> ObjectStoreStats {
        self.inner.object_store.snapshot()
    }

    /// Requests waiting in the coordinator's queue.
    pub fn queue_depth(&self) -> usize {
        self.inner.settings.queue_capacity - self.tx.capacity()
    }
}

fn add_replayed(inner: &Inner, n: usize) {
    stats::add(&inner.stats.samples_replayed, n);
}
