//! `/api/v1/status/tsdb`: the series count and what accounts for it.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::response::Response;

use super::limit::parse_tsdb_limit;
use super::{json, read_params, respond, Api};
use crate::error::QueryError;

/// `status/tsdb`: the series count and what accounts for it (top metric
/// names, label names and label pairs), as Prometheus answers it from its
/// head; `limit` (default 10, at most 10,000) entries per list.
pub(super) async fn tsdb_status(State(api): State<Arc<Api>>, req: Request) -> Response {
    respond(
        async {
            let engine = api.engine(&req)?;
            let p = read_params(req).await?;
            let limit = parse_tsdb_limit(p.get("limit"))?;
            let status = engine
                .source()
                .tsdb_status("", limit)
                .await?
                .ok_or_else(|| QueryError::Internal("no series statistics here".into()))?;
            let mut out = format!(
                "{{\"headStats\":{{\"numSeries\":{},\"numLabelPairs\":{}}}",
                status.num_series, status.num_label_pairs
            );
            for (key, list) in [
                (
                    "seriesCountByMetricName",
                    &status.series_count_by_metric_name,
                ),
                (
                    "labelValueCountByLabelName",
                    &status.label_value_count_by_label_name,
                ),
                (
                    "memoryInBytesByLabelName",
                    &status.memory_in_bytes_by_label_name,
                ),
                (
                    "seriesCountByLabelValuePair",
                    &status.series_count_by_label_value_pair,
                ),
            ] {
                out.push_str(&format!(",\"{key}\":["));
                for (i, (name, value)) in list.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str("{\"name\":");
                    json::write_str(&mut out, name);
                    out.push_str(&format!(",\"value\":{value}}}"));
                }
                out.push(']');
            }
            out.push('}');
            Ok(out)
        }
        .await,
    )
}
