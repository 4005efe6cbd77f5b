//! The write-ahead log record of one write batch: the series it creates and
//! the samples it carries.
//!
//! Layout (drawn byte by byte in `docs/format.md`): a version byte, the new
//! series (ids as zig-zag deltas, labels as length-prefixed strings), the
//! samples (series ids and timestamps as zig-zag deltas from the previous
//! sample, values as a zig-zag varint when they are small integers and as 8
//! raw bytes otherwise), then a CRC-32 of everything before it. Varints are
//! LEB128. A record with exemplars is version 2: after the samples, the
//! exemplars (series ids as zig-zag deltas, each exemplar as `exemplar.rs`
//! encodes it); one without is written as version 1, as before them. A
//! record with native histograms is version 3: the exemplars' section
//! (maybe empty), then the histogram samples (series ids and timestamps as
//! zig-zag deltas, each histogram in its log form, `histogram/log_sample.rs`).
//!
//! A writer stores a record compressed ([`LogRecordEncoder`]): a byte
//! [`COMPRESSED`], the record's length as a varint, then one zstd frame of
//! the record as above (its version byte and checksum included). A record
//! sits in SlateDB's memtable until the memtable is written out, and the
//! memtable is written out by its bytes: compressed, the same memtable
//! holds more samples. [`LogRecord::decode`] reads both forms.
//!
//! By seam: the record's parts (this file), `encode`, `decode`, and
//! `compressed` (the zstd form and its encoder).

use crate::exemplar::Exemplar;
use crate::histogram::HistogramSample;
use crate::labels::Label;

mod compressed;
mod decode;
mod encode;

#[cfg(test)]
mod tests;

pub use compressed::{LogRecordEncoder, COMPRESSED};
pub(crate) use encode::small_int;

/// The format version of a record without exemplars.
const VERSION: u8 = 1;
/// The format version of a record with exemplars.
const VERSION_EXEMPLARS: u8 = 2;
/// The format version of a record with native histograms.
const VERSION_HISTOGRAMS: u8 = 3;

/// Bytes of the checksum trailer.
const CRC_LEN: usize = 4;

/// A series created by the batch, with the id later samples refer to it by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewSeries {
    pub id: u64,
    pub labels: Vec<Label>,
}

/// One sample of the batch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LogSample {
    pub series: u64,
    pub t: i64,
    pub v: f64,
}

/// One exemplar of the batch, with the series it belongs to.
#[derive(Clone, Debug, PartialEq)]
pub struct LogExemplar {
    pub series: u64,
    pub exemplar: Exemplar,
}

/// One native histogram sample of the batch.
#[derive(Clone, Debug, PartialEq)]
pub struct LogHistogram {
    pub series: u64,
    pub t: i64,
    pub h: HistogramSample,
}

/// The log record of one write batch. Every `f64` round-trips bit for bit.
#[derive(Default, Clone, Debug, PartialEq)]
pub struct LogRecord {
    pub new_series: Vec<NewSeries>,
    pub samples: Vec<LogSample>,
    pub exemplars: Vec<LogExemplar>,
    pub histograms: Vec<LogHistogram>,
}
