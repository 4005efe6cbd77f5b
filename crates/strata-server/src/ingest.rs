//! The write path's server-side entry: what every ingest protocol (remote
//! write, OTLP, import, recorded rules) does once its body is decoded into
//! strata-write's model. The request limits, the tenant's rate limit, the
//! one validation and limits step, metadata, then storage. The protocols
//! in `http/` and the distributor are decoders in front of it.

use std::sync::atomic::Ordering;

use axum::http::StatusCode;
use axum::response::Response;
use strata_storage::{Durability, IngestSeries, WriteLimits, Writer};
use strata_write::{apply_limits, DecodedWrite, RawLabels, RawSeries, SeriesLimits};

use crate::http::write::{retry_after, storage_error, text};
use crate::state::AppState;
use crate::tenants::Tenant;

/// Decoded series as the storage takes them.
pub(crate) fn ingest_series(series: Vec<RawSeries>) -> Vec<IngestSeries<RawLabels>> {
    series
        .into_iter()
        .map(|s| IngestSeries {
            labels: s.labels,
            samples: s.samples,
            exemplars: s.exemplars,
            histograms: s.histograms,
        })
        .collect()
}

/// The write path's one validation step, after decoding: the
/// configuration's limits applied by [`apply_limits`] (label limits, the
/// reserved tenant label, the timestamps storage keeps), and the tenant's
/// label added.
pub(crate) fn check_series(
    decoded: &mut DecodedWrite<RawSeries>,
    limits: &SeriesLimits,
    tenant: &Tenant,
    now_ms: i64,
) {
    apply_limits(decoded, limits, tenant.0.as_deref(), now_ms);
}

/// The limits [`check_series`] holds every written series to: the label
/// limits, and the timestamps storage keeps (from the epoch, or now less
/// `storage.retention`, to now plus `limits.max_future`).
pub fn series_limits(config: &crate::config::Config) -> SeriesLimits {
    let limits = &config.limits;
    let ms = |d: std::time::Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    SeriesLimits {
        max_labels_per_series: limits.max_labels_per_series,
        max_label_name_length: limits.max_label_name_length,
        max_label_value_length: limits.max_label_value_length,
        max_future_ms: Some(ms(limits.max_future)),
        max_age_ms: Some(ms(config.storage.retention)),
    }
}

/// What became of a decoded write's samples.
pub(crate) struct Ingested {
    /// Float samples stored, duplicates of stored ones included.
    pub written: usize,
    /// Native histogram samples stored, duplicates included.
    pub histograms: usize,
    /// Samples (floats and histograms) refused, by the decoder or its
    /// limits and by storage.
    pub rejected: usize,
    /// Samples (floats and histograms) offered in all.
    pub offered: usize,
    /// The refusals, one per line, as a 400 body lists them.
    pub reasons: Option<String>,
    /// Exemplars stored (or held already).
    pub exemplars: usize,
}

impl Ingested {
    /// The body of the 400 a write with refusals is answered with.
    pub fn rejection_message(&self) -> Option<String> {
        (self.rejected > 0).then(|| {
            let mut msg = format!(
                "{} of {} samples rejected ({} written)",
                self.rejected,
                self.offered,
                self.written + self.histograms
            );
            if let Some(r) = &self.reasons {
                msg.push('\n');
                msg.push_str(r);
            }
            msg
        })
    }
}

/// The write path every protocol shares once its body is decoded: the
/// request limits, the tenant's rate limit, the one validation step,
/// metadata, then storage. `Err` is the answer to give instead (413, 429,
/// 503 and the like), in remote write's plain text.
pub(crate) async fn ingest(
    state: &AppState,
    tenant: &Tenant,
    storage: &Writer,
    mut decoded: DecodedWrite<RawSeries>,
    durability: Durability,
) -> Result<Ingested, Response> {
    let limits = &state.config.limits;
    let series_count = decoded.series.len() + decoded.rejected.len();
    if series_count > limits.max_series_per_request {
        return Err(text(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "request has {series_count} series, more than limits.max_series_per_request ({}); send smaller batches",
                limits.max_series_per_request
            ),
        ));
    }
    // Histograms count as samples for the limits, as they are for
    // Prometheus' shards.
    let n = decoded.sample_count() + decoded.histogram_count();
    if n > limits.max_samples_per_request {
        return Err(text(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "request has {n} samples, more than limits.max_samples_per_request ({}); send smaller batches",
                limits.max_samples_per_request
            ),
        ));
    }
    state
        .metrics
        .samples_received
        .fetch_add(n as u64, Ordering::Relaxed);
    if let Err((wait, rate)) = state.tenants.take(tenant, n) {
        state.metrics.rate_limited.fetch_add(1, Ordering::Relaxed);
        return Err(retry_after(
            StatusCode::TOO_MANY_REQUESTS,
            wait,
            format!(
                "ingest rate limit of {rate} samples/s for tenant {:?} exceeded; retry later",
                state.tenants.name(tenant)
            ),
        ));
    }
    check_series(&mut decoded, &state.series_limits, tenant, storage.now_ms());
    if !decoded.metadata.is_empty() {
        let entries = metadata_entries(std::mem::take(&mut decoded.metadata));
        if let Err(e) = storage
            .record_metadata(tenant.label_value(), &entries)
            .await
        {
            return Err(storage_error(&e));
        }
    }
    let n = decoded.sample_count() + decoded.histogram_count();
    // As Prometheus' receiver: an exemplar that cannot be stored is logged,
    // never a failed write.
    if let Some(problem) = decoded.exemplar_problem.take() {
        tracing::debug!(
            dropped = decoded.exemplars_dropped,
            first = %problem,
            "exemplars dropped"
        );
    }
    let rejection_msg = (!decoded.rejected.is_empty()).then(|| decoded.rejection_message());
    let rejected_invalid: usize = decoded.rejected.iter().map(|r| r.samples).sum();
    let series = ingest_series(decoded.series);
    let write_limits = WriteLimits {
        max_active_series: state.tenants.limits(tenant).max_active_series,
    };
    let outcome = storage
        .write_with(series, durability, write_limits)
        .await
        .map_err(|e| storage_error(&e))?;
    let mut reasons = rejection_msg;
    if let Some((series, why)) = &outcome.first_rejection {
        let line = format!(
            "series {series}: {why} ({} samples rejected in all)",
            outcome.rejected
        );
        reasons = Some(match reasons {
            Some(r) => format!("{r}\n{line}"),
            None => line,
        });
    }
    if outcome.exemplars_refused > 0 {
        tracing::debug!(
            refused = outcome.exemplars_refused,
            "exemplars refused: older than the out-of-order window (from now, or from their series' newest)"
        );
    }
    Ok(Ingested {
        written: outcome.appended + outcome.duplicates,
        histograms: outcome.histograms,
        rejected: rejected_invalid + outcome.rejected,
        offered: rejected_invalid + n,
        reasons,
        exemplars: outcome.exemplars,
    })
}

/// A request's metric metadata as storage keeps it.
fn metadata_entries(
    list: Vec<strata_write::MetricMetadata>,
) -> Vec<(String, strata_storage::metadata::MetadataEntry)> {
    list.into_iter()
        .map(|m| {
            let entry = strata_storage::metadata::MetadataEntry {
                kind: m.kind.to_owned(),
                help: m.help,
                unit: m.unit,
            };
            (m.metric, entry)
        })
        .collect()
}
