//! One series with its samples: what storage reads and the query engine
//! evaluates.

use std::sync::Arc;

use crate::Label;

/// One series' samples in a time range: labels sorted by name, samples in
/// ascending timestamp order (milliseconds), as parallel columns. The labels
/// are shared: the query engine's results and a rule's output hold them
/// without copying their strings.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub labels: Arc<[Label]>,
    pub timestamps: Vec<i64>,
    pub values: Vec<f64>,
    /// Native histogram samples, ascending by timestamp, in float form. A
    /// series may change between floats and histograms over time; no
    /// timestamp is in both.
    pub histograms: Vec<(i64, crate::histogram::FloatHistogram)>,
}

impl Default for Series {
    fn default() -> Self {
        Self {
            labels: Arc::from([]),
            timestamps: Vec::new(),
            values: Vec::new(),
            histograms: Vec::new(),
        }
    }
}

/// What a reader does with each series as soon as it has read it, before
/// reading the next: returns what to keep of it (`None`: nothing). A query
/// that needs only a function of each series' samples (a `rate` at each
/// step) passes one, so a long range is never held in memory whole.
pub type SeriesMap = std::sync::Arc<dyn Fn(Series) -> Option<Series> + Send + Sync>;
