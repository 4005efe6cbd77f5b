//! Remote-write protobuf messages, written by hand with `prost` derives.
//!
//! Field numbers and types follow Prometheus' `prompb/types.proto`,
//! `prompb/remote.proto` (1.0) and `prompb/io/prometheus/write/v2/types.proto`
//! (2.0). These are the messages a client builds and encodes; the server
//! decodes into leaner private views of the same wire format (see `wire.rs`)
//! so that a bad string in one series rejects only that series.

mod sample;
pub mod v1;
pub mod v2;
