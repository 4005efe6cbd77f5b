//! Strata's storage engine on SlateDB: the keyspace, the in-memory head,
//! the write coordinator, the sealer, recovery and the read API.
//!
//! ```text
//!  write(labels, samples) ──resolve series (caller's task)──▶ coordinator queue
//!  coordinator: append to head ─▶ one `L` record (+ new `S` keys) ─▶ SlateDB
//!  spill pass (every 30 s): long frozen runs ─▶ `C` segments, freed from the head
//!  sealer (bucket end + grace): head bucket ─▶ `C` chunks + `I` postings + `M`
//!  open: `M` checkpoint ─▶ load `S` ─▶ replay `L` after the checkpoint
//! ```

mod backend;
mod background;
mod cache;
mod compact;
mod coordinator;
pub mod error;
mod exemplars;
#[cfg(any(test, feature = "test-util"))]
pub mod faults;
mod follower_store;
pub mod head;
pub mod instrumented;
pub mod keys;
mod late;
pub mod metadata;
mod object_store_url;
mod open;
mod packed_batch;
mod postings;
mod read;
mod reclaim;
mod recovery;
mod resend;
mod sealer;
mod series_index;
pub mod settings;
mod shared;
pub mod slatedb_metrics;
mod slatedb_options;
mod spill;
pub mod stats;
mod storage;
mod stored;
#[doc(hidden)]
pub mod table_compression;
mod tailer;
pub mod values;
mod writer;

use strata_codec::Label;

pub use background::set_idle_hook;
pub use cache::CacheUsage;
pub use compact::CompactPass;
pub use coordinator::{ResolvedSeries, WriteOutcome};
pub use error::StorageError;
#[cfg(any(test, feature = "test-util"))]
pub use faults::{Fault, Faults, FaultyStore, Op, When};
pub use head::{tenant_of, Rejection, TENANT_LABEL};
pub use instrumented::{InstrumentedStore, ObjectStoreCounters, ObjectStoreStats};
pub use late::{BucketLayout, FoldPass, LatePass};
pub use object_store_url::{
    check_object_store, open_object_store, ObjectStoreLocation, S3Settings, CHECK_TIMEOUT,
};
pub use reclaim::ReclaimStep;
pub use settings::{Compression, ReaderSettings, StorageSettings};
pub use spill::SpillPass;
pub use stats::{Histogram, StorageStats};
pub use storage::Storage;
pub use strata_codec::clock::{self, Clock, ManualClock, SystemClock};
pub use strata_codec::Series;
pub use strata_codec::SeriesExemplars;
pub use writer::Writer;

/// When a write is answered; in configuration `"applied"` or `"durable"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// Once applied to the head and appended to SlateDB's WAL buffer; a
    /// crash loses at most one flush interval.
    #[default]
    Applied,
    /// Once SlateDB reports the WAL flushed to the object store.
    Durable,
}

/// Limits on what one write may add; the defaults limit nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteLimits {
    /// Most active series (with samples in a bucket not yet sealed) the
    /// tenant of a series may have before a new series of it is rejected;
    /// 0 = no limit. Series already active keep ingesting.
    pub max_active_series: usize,
}

/// The samples of one series to write; labels sorted with unique names,
/// owned or borrowed from a decoded request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IngestSeries<L = Vec<Label>> {
    pub labels: L,
    pub samples: Vec<(i64, f64)>,
    /// Exemplars of the series (any order): kept in the head's bounded
    /// ring, logged, and written to the store with their bucket.
    pub exemplars: Vec<strata_codec::Exemplar>,
    /// Native histogram samples (any order), integer or float.
    pub histograms: Vec<(i64, strata_codec::histogram::HistogramSample)>,
}
