//! What every ingest path writes, whatever its wire: remote write 1.0 and
//! 2.0, OTLP, the import API and a distributor's forwarded parts all
//! decode into a [`DecodedWrite`] of [`RawSeries`], which then passes one
//! validation step, [`apply_limits`] (the label rules of the remote-write
//! specification are [`check_labels`]), before the server writes it.
//!
//! ```text
//!  remote write ─┐
//!  OTLP ─────────┼─▶ DecodedWrite ─▶ apply_limits ─▶ the server's ingest ─▶ storage
//!  import ───────┘
//! ```

mod model;
pub mod validate;

pub use model::{
    metric_kind, metric_kind_number, DecodedWrite, MetricMetadata, RawLabel, RawLabels, RawSeries,
    RejectedSeries, SeriesSamples, MAX_REJECTION_LINES,
};
pub use validate::{apply_limits, check_labels, SeriesLimits};
