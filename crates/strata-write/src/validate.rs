//! The one validation step of every write: the label rules of the
//! remote-write specification, which every ingest path keeps, and the
//! limits a write's series are held to.

use strata_codec::labels::METRIC_NAME;
use strata_codec::render::render_labels;
use strata_codec::LabelPairs;

use crate::model::{DecodedWrite, RawLabel, RawLabels, RawSeries, RejectedSeries};

/// Checks one series' labels, sorting them by name first if the sender did
/// not (vmagent sends them in scrape order; Prometheus sorts on receipt):
/// every name and value non-empty, names unique (compared bytewise, as
/// Prometheus does), and a `__name__` label present. Any UTF-8 name is
/// accepted, as Prometheus 3 accepts it; invalid UTF-8 is caught while
/// converting.
pub fn check_labels(labels: &mut RawLabels) -> Result<(), String> {
    match check_sorted(labels) {
        Err(Problem::Unsorted) => {
            // Stable, so that duplicates are named in the order sent.
            labels.0.sort_by(|a, b| a.name().cmp(b.name()));
            check_sorted(labels).map_err(Problem::into_message)
        }
        other => other.map_err(Problem::into_message),
    }
}

enum Problem {
    /// Not sorted by name: the caller sorts and checks again.
    Unsorted,
    Invalid(String),
}

impl Problem {
    fn into_message(self) -> String {
        match self {
            Self::Unsorted => "labels are not sorted by name".to_owned(),
            Self::Invalid(m) => m,
        }
    }
}

/// The checks of [`check_labels`] on labels taken as sorted.
fn check_sorted(labels: &(impl LabelPairs + ?Sized)) -> Result<(), Problem> {
    let mut previous: Option<&str> = None;
    let mut has_metric_name = false;
    for (name, value) in labels.pairs() {
        if name.is_empty() {
            return Err(Problem::Invalid(format!(
                "a label has an empty name (its value is {value:?})"
            )));
        }
        if value.is_empty() {
            return Err(Problem::Invalid(format!(
                "label {name:?} has an empty value"
            )));
        }
        if let Some(previous) = previous {
            match name.cmp(previous) {
                std::cmp::Ordering::Greater => {}
                std::cmp::Ordering::Equal => {
                    return Err(Problem::Invalid(format!("duplicate label name {name:?}")))
                }
                std::cmp::Ordering::Less => return Err(Problem::Unsorted),
            }
        }
        has_metric_name |= name == METRIC_NAME;
        previous = Some(name);
    }
    if has_metric_name {
        Ok(())
    } else {
        Err(Problem::Invalid(format!("missing the {METRIC_NAME} label")))
    }
}

/// The limits a write's series are held to, beyond the specification's
/// rules: checked in one step ([`apply_limits`]) after decoding, for
/// remote write and import alike. Limits that depend on what the store
/// holds (active series, conflicting values) are the store's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeriesLimits {
    pub max_labels_per_series: usize,
    pub max_label_name_length: usize,
    pub max_label_value_length: usize,
    /// Samples later than now plus this many milliseconds are rejected.
    pub max_future_ms: Option<i64>,
    /// Samples older than now minus this many milliseconds are rejected:
    /// storage would not keep them (the retention).
    pub max_age_ms: Option<i64>,
}

/// The timestamps a write may carry at one moment: from the epoch (or
/// now less the retention, if later) to now plus the future limit. A
/// sample outside is refused at the door, never answered 2xx and dropped
/// later.
struct TimeBounds {
    /// Earliest timestamp kept, and whether the retention (not the epoch)
    /// sets it.
    min_t: i64,
    by_retention: bool,
    max_t: Option<i64>,
}

impl TimeBounds {
    fn new(limits: &SeriesLimits, now_ms: i64) -> Self {
        let oldest = limits.max_age_ms.map(|a| now_ms.saturating_sub(a));
        let (min_t, by_retention) = match oldest {
            Some(t) if t > 0 => (t, true),
            _ => (0, false),
        };
        Self {
            min_t,
            by_retention,
            max_t: limits.max_future_ms.map(|f| now_ms.saturating_add(f)),
        }
    }

    fn holds(&self, t: i64) -> bool {
        t >= self.min_t && self.max_t.is_none_or(|max| t <= max)
    }

    /// Why `what` at `t`, outside the bounds, is refused.
    fn refusal(&self, what: &str, t: i64) -> String {
        match self.max_t {
            Some(max_t) if t > max_t => format!(
                "{what} too far in the future: timestamp {t} is after {max_t} \
                 (now plus limits.max_future)"
            ),
            _ if self.by_retention => format!(
                "{what} too old: timestamp {t} is before {} (now minus storage.retention): \
                 it would not be kept",
                self.min_t
            ),
            _ => format!(
                "{what} before the epoch: timestamp {t} is before 0 (1970-01-01T00:00:00Z), \
                 which is not stored"
            ),
        }
    }
}

/// The label names a sender may not use: the server sets it from the
/// request's tenant.
const RESERVED: &str = strata_codec::labels::TENANT_LABEL;

/// Holds every series of `decoded` to `limits` at `now_ms`: a series
/// breaking a label limit, or naming the reserved tenant label, is
/// rejected whole, exemplars included; samples outside the time bounds
/// (before the epoch, older than `max_age_ms`, too far in the future) are
/// rejected alone, and exemplars outside them are dropped as invalid ones
/// are; the series kept get `tenant`'s label. Each refusal
/// goes to `decoded.rejected`, its series rendered as everywhere else.
pub fn apply_limits(
    decoded: &mut DecodedWrite<RawSeries>,
    limits: &SeriesLimits,
    tenant: Option<&str>,
    now_ms: i64,
) {
    let tenant_label = tenant.and_then(|t| {
        RawLabel::new(
            bytes::Bytes::from_static(RESERVED.as_bytes()),
            bytes::Bytes::from(t.to_owned()),
        )
    });
    let bounds = TimeBounds::new(limits, now_ms);
    let series = std::mem::take(&mut decoded.series);
    let mut kept = Vec::with_capacity(series.len());
    for mut s in series {
        if let Some(reason) = label_problem(&s.labels, limits) {
            decoded.exemplars_dropped += s.exemplars.len();
            decoded.rejected.push(RejectedSeries {
                labels: render_labels(&s.labels),
                samples: s.samples.len() + s.histograms.len(),
                reason,
            });
            continue;
        }
        let outside = |t: i64| !bounds.holds(t);
        let mut trimmed = false;
        if let Some(&(t, _)) = s.samples.iter().find(|&&(t, _)| outside(t)) {
            trimmed = true;
            let before = s.samples.len();
            s.samples.retain(|&(t, _)| bounds.holds(t));
            decoded.rejected.push(RejectedSeries {
                labels: render_labels(&s.labels),
                samples: before - s.samples.len(),
                reason: bounds.refusal("sample", t),
            });
        }
        if let Some(&(t, _)) = s.histograms.iter().find(|&&(t, _)| outside(t)) {
            trimmed = true;
            let before = s.histograms.len();
            s.histograms.retain(|&(t, _)| bounds.holds(t));
            decoded.rejected.push(RejectedSeries {
                labels: render_labels(&s.labels),
                samples: before - s.histograms.len(),
                reason: bounds.refusal("histogram sample", t),
            });
        }
        if let Some(e) = s.exemplars.iter().find(|e| outside(e.t)) {
            let t = e.t;
            trimmed = true;
            let before = s.exemplars.len();
            s.exemplars.retain(|e| bounds.holds(e.t));
            decoded.drop_exemplars(&s.labels, before - s.exemplars.len(), || {
                bounds.refusal("exemplar", t)
            });
        }
        if trimmed && s.samples.is_empty() && s.histograms.is_empty() && s.exemplars.is_empty() {
            continue;
        }
        if let Some(t) = &tenant_label {
            let at = s.labels.0.partition_point(|l| l.name() < RESERVED);
            s.labels.0.insert(at, t.clone());
        }
        kept.push(s);
    }
    decoded.series = kept;
}

/// The first label limit `labels` breaks, named with its setting; a value
/// is named by its label and length, never repeated.
fn label_problem(labels: &RawLabels, limits: &SeriesLimits) -> Option<String> {
    if labels.0.len() > limits.max_labels_per_series {
        return Some(format!(
            "{} labels, more than limits.max_labels_per_series ({})",
            labels.0.len(),
            limits.max_labels_per_series
        ));
    }
    labels.0.iter().find_map(|l| {
        if l.name().len() > limits.max_label_name_length {
            Some(format!(
                "label name {:?}… is {} bytes long, more than limits.max_label_name_length ({})",
                l.name().chars().take(64).collect::<String>(),
                l.name().len(),
                limits.max_label_name_length
            ))
        } else if l.value().len() > limits.max_label_value_length {
            Some(format!(
                "value of label {:?} is {} bytes long, more than limits.max_label_value_length ({})",
                l.name(),
                l.value().len(),
                limits.max_label_value_length
            ))
        } else if l.name() == RESERVED {
            Some(format!(
                "label name {RESERVED} is reserved; the X-Scope-OrgID header sets the tenant"
            ))
        } else {
            None
        }
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn series(labels: &[(&str, &str)], samples: &[i64]) -> RawSeries {
        let labels = labels
            .iter()
            .map(|(n, v)| {
                RawLabel::new(
                    Bytes::copy_from_slice(n.as_bytes()),
                    Bytes::copy_from_slice(v.as_bytes()),
                )
                .unwrap()
            })
            .collect();
        RawSeries {
            labels: RawLabels(labels),
            samples: samples.iter().map(|&t| (t, 1.0)).collect(),
            histograms: Vec::new(),
            exemplars: Vec::new(),
        }
    }

    fn limits() -> SeriesLimits {
        SeriesLimits {
            max_labels_per_series: 3,
            max_label_name_length: 10,
            max_label_value_length: 20,
            max_future_ms: Some(1_000),
            max_age_ms: Some(10_000),
        }
    }

    fn decoded(series: Vec<RawSeries>) -> DecodedWrite<RawSeries> {
        let mut d = DecodedWrite::new(series.len());
        d.series = series;
        d
    }

    #[test]
    fn label_limits_reject_the_series_and_name_the_setting() {
        let long_value = "v".repeat(5000);
        let mut d = decoded(vec![
            series(&[("__name__", "ok"), ("job", "a")], &[1]),
            series(
                &[("__name__", "x"), ("a", "1"), ("b", "2"), ("c", "3")],
                &[1, 2],
            ),
            series(&[("__name__", "x"), ("job", &long_value)], &[1]),
            series(&[("__name__", "x"), ("__tenant__", "t")], &[1]),
        ]);
        apply_limits(&mut d, &limits(), None, 0);
        assert_eq!(d.series.len(), 1);
        let reasons: Vec<&str> = d.rejected.iter().map(|r| r.reason.as_str()).collect();
        assert!(
            reasons[0].contains("limits.max_labels_per_series (3)"),
            "{reasons:?}"
        );
        assert!(reasons[1].contains("5000 bytes long"), "{reasons:?}");
        assert!(reasons[2].contains("reserved"), "{reasons:?}");
        assert_eq!(d.rejected[0].samples, 2);
        // The long value is cut in the rendering, not repeated whole.
        let message = d.rejection_message();
        assert!(
            message.len() < 2 * strata_codec::render::MAX_RENDERED_BYTES,
            "{}",
            message.len()
        );
    }

    #[test]
    fn future_samples_are_rejected_alone_and_the_tenant_label_added() {
        let mut d = decoded(vec![
            series(&[("__name__", "up")], &[500, 1_000, 1_500, 2_000]),
            series(&[("__name__", "later")], &[5_000]),
        ]);
        apply_limits(&mut d, &limits(), Some("team"), 0);
        assert_eq!(d.series.len(), 1);
        assert_eq!(d.series[0].samples, vec![(500, 1.0), (1_000, 1.0)]);
        let names: Vec<&str> = d.series[0].labels.0.iter().map(|l| l.name()).collect();
        assert_eq!(names, ["__name__", "__tenant__"]);
        assert_eq!(d.rejected.len(), 2);
        assert_eq!(d.rejected[0].samples, 2);
        assert_eq!(d.rejected[0].labels, r#"{__name__="up"}"#);
        assert!(d.rejected[0]
            .reason
            .starts_with("sample too far in the future: timestamp 1500 is after 1000"));
        assert_eq!(d.rejected[1].samples, 1);
    }

    #[test]
    fn histograms_count_in_rejections_and_future_ones_are_rejected_alone() {
        use strata_codec::histogram::{Histogram, HistogramSample};
        let with = |mut s: RawSeries, ts: &[i64]| {
            s.histograms = ts
                .iter()
                .map(|&t| (t, HistogramSample::Int(Histogram::default())))
                .collect();
            s
        };
        let mut d = decoded(vec![
            with(series(&[("__name__", "h")], &[]), &[500, 1_500, 2_500]),
            with(series(&[("__name__", "gone")], &[]), &[5_000]),
            with(
                series(
                    &[("__name__", "x"), ("a", "1"), ("b", "2"), ("c", "3")],
                    &[1],
                ),
                &[1, 2],
            ),
        ]);
        apply_limits(&mut d, &limits(), None, 0);
        assert_eq!(d.series.len(), 1);
        assert_eq!(d.series[0].histograms.len(), 1);
        assert_eq!(d.series[0].histograms[0].0, 500);
        let rejected: Vec<(usize, &str)> = d
            .rejected
            .iter()
            .map(|r| (r.samples, r.reason.as_str()))
            .collect();
        assert_eq!(rejected.len(), 3, "{rejected:?}");
        assert_eq!(rejected[0].0, 2);
        assert!(rejected[0]
            .1
            .starts_with("histogram sample too far in the future: timestamp 1500 is after 1000"));
        assert_eq!(rejected[1].0, 1);
        // A label limit refuses the floats and the histograms.
        assert_eq!(rejected[2].0, 3);
    }

    fn exemplar(t: i64) -> strata_codec::Exemplar {
        strata_codec::Exemplar {
            labels: vec![strata_codec::Label::new("trace_id", "t")],
            t,
            v: 1.0,
        }
    }

    #[test]
    fn exemplars_follow_their_series_and_future_ones_are_dropped() {
        let with = |mut s: RawSeries, ts: &[i64]| {
            s.exemplars = ts.iter().map(|&t| exemplar(t)).collect();
            s
        };
        let mut d = decoded(vec![
            with(series(&[("__name__", "up")], &[500]), &[400, 1_500, 600]),
            with(
                series(
                    &[("__name__", "x"), ("a", "1"), ("b", "2"), ("c", "3")],
                    &[1],
                ),
                &[1, 2],
            ),
            // Exemplars only, all in the future: nothing left to write.
            with(series(&[("__name__", "gone")], &[]), &[5_000]),
            // Exemplars only, in range: kept.
            with(series(&[("__name__", "kept")], &[]), &[700]),
        ]);
        d.exemplars = 7;
        apply_limits(&mut d, &limits(), None, 0);
        let names: Vec<&str> = d.series.iter().map(|s| s.labels.0[0].value()).collect();
        assert_eq!(names, ["up", "kept"]);
        assert_eq!(d.series[0].exemplars, vec![exemplar(400), exemplar(600)]);
        assert_eq!(d.series[1].exemplars, vec![exemplar(700)]);
        // One future exemplar of "up", both of the rejected series, the
        // one of "gone".
        assert_eq!(d.exemplars_dropped, 4);
        assert_eq!(d.rejected.len(), 1, "{:?}", d.rejected);
        assert_eq!(
            d.exemplar_problem.as_deref(),
            Some(
                "series {__name__=\"up\"}: exemplar too far in the future: timestamp 1500 \
                 is after 1000 (now plus limits.max_future)"
            )
        );
    }

    #[test]
    fn samples_storage_would_not_keep_are_rejected_naming_the_limit() {
        let mut d = decoded(vec![
            series(&[("__name__", "up")], &[-1_000, 0, 4_999, 5_000, 6_000]),
            series(&[("__name__", "old")], &[i64::MIN, 1]),
        ]);
        // Now is 15 s: the retention (10 s) keeps from 5 s on.
        apply_limits(&mut d, &limits(), None, 15_000);
        assert_eq!(d.series.len(), 1);
        assert_eq!(d.series[0].samples, vec![(5_000, 1.0), (6_000, 1.0)]);
        assert_eq!(d.rejected.len(), 2);
        assert_eq!(d.rejected[0].samples, 3);
        assert!(
            d.rejected[0].reason.starts_with(
                "sample too old: timestamp -1000 is before 5000 (now minus storage.retention)"
            ),
            "{}",
            d.rejected[0].reason
        );
        assert_eq!(d.rejected[1].samples, 2);
        // Early on, the epoch bounds what is kept.
        let mut d = decoded(vec![series(&[("__name__", "up")], &[-1, 0, 1])]);
        apply_limits(&mut d, &limits(), None, 2_000);
        assert_eq!(d.series[0].samples, vec![(0, 1.0), (1, 1.0)]);
        assert!(
            d.rejected[0]
                .reason
                .starts_with("sample before the epoch: timestamp -1 is before 0"),
            "{}",
            d.rejected[0].reason
        );
    }
}
