//! Strata's encodings, with no I/O: labels and matchers, Gorilla (head) and
//! sealed chunks, native histogram samples and their chunks, and log
//! records.
//!
//! Every decoder here takes untrusted bytes: it returns a [`CodecError`]
//! rather than panicking, and never allocates more than the input can
//! justify.

#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod bits;
pub mod chunk;
pub mod clock;
pub mod error;
pub mod exemplar;
pub mod histogram;
pub mod labels;
pub mod log_record;
pub mod merge;
pub mod rand;
pub mod render;
pub mod sealed;
pub mod series;
pub mod threads;
pub mod varint;

pub use chunk::{
    decode_into, decode_range_into, decode_range_to_slices, ChunkIter, TailChunk, XorChunk,
};
pub use error::CodecError;
pub use exemplar::{
    decode_exemplars, encode_exemplars, Exemplar, ExemplarProblem, SeriesExemplars,
};
pub use labels::{labels_eq, Label, LabelPairs, MatchOp, Matcher, MatcherError};
pub use log_record::{
    LogExemplar, LogHistogram, LogRecord, LogRecordEncoder, LogSample, NewSeries,
};
pub use sealed::{
    chunk_len_hint, decode_chunk_range_into, encode_sealed, encode_sealed_with, SealScratch,
};
pub use series::{Series, SeriesMap};
