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
pub mod key_usage;
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
mod state;
pub mod stats;
mod storage;
mod stored;
#[doc(hidden)]
pub mod table_compression;
mod tailer;
mod tombstones;
pub mod values;
mod worker;
mod write;
mod writer;

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
pub use tombstones::TOMBSTONE_POLL;
pub use worker::set_idle_hook;
pub use write::{Durability, IngestSeries, WriteLimits};
pub use writer::Writer;
