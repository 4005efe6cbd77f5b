//! The Prometheus remote-write wire protocol, 1.0 and 2.0, with no HTTP
//! framework and no storage.
//!
//! Server side: [`negotiate`] picks the [`Version`] from the Content-Type and
//! checks the Content-Encoding; [`decode`] bounds, decompresses, parses and
//! validates the body into the write model of `strata-write`
//! ([`strata_write::DecodedWrite`]): valid series to write, and rejected
//! series with the reason. Client side: [`encode_v1`],
//! [`encode_v2`], [`Encoder`] and [`V2RequestBuilder`]. The messages
//! themselves are in [`proto`].
//!
//! Choices where the specifications leave room, following Prometheus' own
//! receiver unless said otherwise:
//!
//! - No Content-Type means 1.0; no Content-Encoding means snappy; zstd is
//!   accepted too (vmagent's first choice, as VictoriaMetrics accepts it).
//! - Label names may be any non-empty UTF-8 (Prometheus 3's rule); values
//!   must be non-empty UTF-8; labels in any order (sorted on receipt, as
//!   Prometheus does), names unique; `__name__` present. A bad series is
//!   rejected alone; the rest of the request is kept.
//! - Native histograms (integer or float counts, exponential schemas or
//!   custom buckets, stale markers) are kept with their series as
//!   [`strata_codec::histogram::HistogramSample`]s. One failing
//!   `HistogramSample::validate` (Prometheus' checks) is refused alone, as
//!   Prometheus' 2.0 receiver refuses it: the series' other samples stand,
//!   and a rejection entry names the series and the problem (a 400).
//!   Schemas 9 to 52 (reserved for finer exponential buckets) are reduced
//!   to 8 first, as Prometheus reduces them. Metric metadata (1.0's list, 2.0's per series) is
//!   returned for the caller to keep.
//! - Exemplars are kept with their series, labels in the order sent. One
//!   with labels that are not UTF-8, a 2.0 reference that cannot be
//!   resolved, or labels failing [`strata_codec::Exemplar::validate`] is
//!   dropped alone: the request and the series stand, and
//!   [`DecodedWrite::exemplar_problem`] says why for the log. A 2.0
//!   timestamp of 0 ("unset") is kept as 0.
//! - 2.0: a symbols table whose first entry is not `""` (or that is empty
//!   while series exist) refuses the whole request (400); a reference out of
//!   range, an odd `labels_refs`, or a metadata reference out of range
//!   rejects the series.
//! - A valid series with no float sample, no valid histogram and no valid
//!   exemplar is omitted without complaint.

mod decode;
mod encode;
mod error;
mod exemplar;
mod fast_v1;
mod histogram;
mod negotiate;
pub mod proto;
mod raw_labels;
mod wire;

pub use decode::{
    decode, decode_encoded, decode_protobuf, decode_raw, decompress, decompress_zstd, DecodeLimits,
};
pub use encode::{encode_v1, encode_v2, Encoder, V2RequestBuilder};
pub use error::WriteError;
pub use negotiate::{negotiate, Encoding, Version, MEDIA_TYPE, PROTO_V1, PROTO_V2};
