//! The request body Alertmanager's `POST /api/v2/alerts` takes: a JSON
//! array of `postableAlert`, as Prometheus' `alertsToOpenAPIAlerts`
//! writes it.

use chrono::{DateTime, SecondsFormat};
use serde::Serialize;

use crate::alerting::LabelSet;
use crate::group::Notification;

/// One alert in the body. Fields in the order Prometheus writes them;
/// empty annotations, an empty generator URL and unset (zero) times are
/// left out, and Alertmanager reads a missing time as unset.
#[derive(Serialize)]
struct PostableAlert<'a> {
    #[serde(skip_serializing_if = "LabelSet::is_empty")]
    annotations: &'a LabelSet,
    #[serde(rename = "endsAt", skip_serializing_if = "Option::is_none")]
    ends_at: Option<String>,
    #[serde(rename = "startsAt", skip_serializing_if = "Option::is_none")]
    starts_at: Option<String>,
    #[serde(rename = "generatorURL", skip_serializing_if = "str::is_empty")]
    generator_url: &'a str,
    labels: &'a LabelSet,
}

/// RFC 3339 in UTC with milliseconds (`2006-01-02T15:04:05.000Z`, Go's
/// `strfmt.DateTime`); `None` for 0 (unset).
fn time(ms: i64) -> Option<String> {
    if ms == 0 {
        return None;
    }
    DateTime::from_timestamp_millis(ms).map(|t| t.to_rfc3339_opts(SecondsFormat::Millis, true))
}

/// The JSON body for `alerts`.
pub(crate) fn encode(alerts: &[Notification]) -> Vec<u8> {
    let body: Vec<PostableAlert<'_>> = alerts
        .iter()
        .map(|a| PostableAlert {
            annotations: &a.annotations,
            ends_at: time(a.ends_at),
            starts_at: time(a.starts_at),
            generator_url: &a.generator_url,
            labels: &a.labels,
        })
        .collect();
    // Maps of strings and strings: serialising them cannot fail.
    serde_json::to_vec(&body).unwrap_or_else(|_| b"[]".to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ls(pairs: &[(&str, &str)]) -> LabelSet {
        pairs
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn body_is_alertmanagers_postable_alerts() {
        let alerts = vec![
            Notification {
                labels: ls(&[("alertname", "Up"), ("job", "a\"b")]),
                annotations: ls(&[("summary", "down")]),
                starts_at: 1_700_000_000_123,
                ends_at: 1_700_000_240_000,
                generator_url: "http://strata/graph?g0.expr=up".into(),
            },
            Notification {
                labels: ls(&[("alertname", "Bare")]),
                annotations: LabelSet::new(),
                starts_at: 0,
                ends_at: 0,
                generator_url: String::new(),
            },
        ];
        let text = String::from_utf8(encode(&alerts)).unwrap();
        assert_eq!(
            text,
            concat!(
                r#"[{"annotations":{"summary":"down"},"endsAt":"2023-11-14T22:17:20.000Z","#,
                r#""startsAt":"2023-11-14T22:13:20.123Z","generatorURL":"http://strata/graph?g0.expr=up","#,
                r#""labels":{"alertname":"Up","job":"a\"b"}},"#,
                r#"{"labels":{"alertname":"Bare"}}]"#
            )
        );
    }

    #[test]
    fn empty_batch_is_an_empty_array() {
        assert_eq!(encode(&[]), b"[]");
    }
}
