//! One series with its samples: what storage reads and the query engine
//! evaluates.

use crate::Label;

/// One series' samples in a time range: labels sorted by name, samples in
/// ascending timestamp order (milliseconds), as parallel columns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    pub labels: Vec<Label>,
    pub timestamps: Vec<i64>,
    pub values: Vec<f64>,
}
