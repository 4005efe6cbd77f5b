//! The head: the in-memory delta of every unsealed bucket. Per series and
//! bucket one in-order chunk (a frozen run in the sealed format and a
//! tail chunk), beside it the out-of-order samples, and late samples of
//! sealed buckets until the late pass writes them; a series map keyed by a
//! label-set hash, and in-memory postings for selection.
//!
//! The head holds only series with samples it has not yet written out: a
//! series whose buckets are all sealed is dropped at the seal (as
//! Prometheus' head forgets a series once its chunks are compacted out).
//! Its labels live on in the store (`S` and `H` keys, postings), and for a
//! while in a bounded cache (`recent.rs`); if it comes back it gets its old
//! id from there.
//!
//! Split by operation as Prometheus' head is: `append.rs` adds samples,
//! `read.rs` selects series and reads their samples.

mod alloc;
mod append;
mod by_id;
mod chunk;
mod delta;
mod exemplars;
mod extra;
mod hash_filter;
mod hist;
mod hist_bucket;
mod ids;
mod index;
mod labels;
mod memory;
mod read;
mod recent;
mod released;
mod runs;
mod seal;
mod series;
#[cfg(test)]
mod tests;

use strata_codec::LabelPairs;

pub use append::{AppendOutcome, AppendPolicy, Rejection};

pub(crate) use chunk::Spill;
pub use chunk::FREEZE_MIN_SAMPLES;
pub use exemplars::{ExemplarAdded, ExemplarStore, DEFAULT_MAX_EXEMPLARS};
pub use labels::SeriesLabels;
pub use memory::HeadMemory;
pub use read::HeadRead;

/// No bucket sealed yet.
pub const NONE_SEALED: i64 = i64::MIN;

pub use strata_codec::labels::TENANT_LABEL;

/// The tenant a label set belongs to: its [`TENANT_LABEL`] value, or `""`
/// (the default tenant) without one.
pub fn tenant_of(labels: &(impl LabelPairs + ?Sized)) -> &str {
    labels.value_of(TENANT_LABEL)
}

pub(crate) use alloc::fit;
pub use delta::{Head, Origin};
pub use index::labels_hash;
pub use series::MemSeries;
pub(crate) use series::NOT_WRITTEN;
