//! Strata's encodings, with no I/O: labels and matchers, Gorilla chunks and
//! log records.

pub mod labels;

pub use labels::{Label, MatchOp, Matcher, MatcherError};
