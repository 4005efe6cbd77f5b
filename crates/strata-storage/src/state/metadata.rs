//! Metric metadata as the writer last stored it (`metadata.rs` reads and
//! writes the keys).

use parking_lot::Mutex;
use rustc_hash::FxHashMap;

/// One description of a metric.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MetadataEntry {
    /// `counter`, `gauge`, `histogram`, … or `unknown`.
    pub kind: String,
    pub help: String,
    pub unit: String,
}

/// What a writer last stored per (tenant, metric).
#[derive(Debug, Default)]
pub(crate) struct MetadataCache {
    pub(crate) stored: Mutex<FxHashMap<(String, String), Vec<MetadataEntry>>>,
}
