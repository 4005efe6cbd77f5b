//! `load_with_nhcb`: classic histogram series (`_bucket`, `_count`,
//! `_sum`) also loaded as native histograms with custom buckets, the way
//! Prometheus' runner converts them (`util/convertnhcb`).

use std::collections::BTreeMap;

use strata_codec::histogram::{FloatHistogram, Span, CUSTOM_BUCKETS_SCHEMA};
use strata_codec::Label;

use crate::series::{SeriesDesc, Slot};

/// What one timestamp of a classic histogram holds so far.
#[derive(Default)]
struct Classic {
    /// `le` and cumulative count, in the order met.
    buckets: Vec<(f64, f64)>,
    count: Option<f64>,
    sum: f64,
}

/// A converted series: its labels, and its histograms by time.
pub type NativeSeries = (Vec<Label>, Vec<(i64, FloatHistogram)>);

/// The native histograms (labels without `le`, named without the suffix;
/// time and histogram) the classic series among `series` convert to.
pub fn convert(series: &[SeriesDesc], step_ms: i64) -> Result<Vec<NativeSeries>, String> {
    let mut classics: BTreeMap<Vec<Label>, BTreeMap<i64, Classic>> = BTreeMap::new();
    for (labels, slots) in series {
        let name = labels
            .iter()
            .find(|l| l.name == "__name__")
            .map_or("", |l| l.value.as_str());
        enum Part {
            Bucket(f64),
            Count,
            Sum,
        }
        let (part, base) = if let Some(base) = name.strip_suffix("_bucket") {
            let le = labels
                .iter()
                .find(|l| l.name == "le")
                .ok_or(format!("bucket series {name} without le"))?;
            match crate::series::parse_number(&le.value) {
                Ok(le) if !le.is_nan() => (Part::Bucket(le), base),
                _ => continue,
            }
        } else if let Some(base) = name.strip_suffix("_count") {
            (Part::Count, base)
        } else if let Some(base) = name.strip_suffix("_sum") {
            (Part::Sum, base)
        } else {
            continue;
        };
        let mut key: Vec<Label> = labels
            .iter()
            .filter(|l| l.name != "le" && l.name != "__name__")
            .cloned()
            .collect();
        key.push(Label::new("__name__", base));
        key.sort();
        let by_time = classics.entry(key).or_default();
        for (k, slot) in slots.iter().enumerate() {
            let Slot::Value(v) = slot else { continue };
            let c = by_time.entry(k as i64 * step_ms).or_default();
            match part {
                Part::Bucket(le) => c.buckets.push((le, *v)),
                Part::Count => c.count = Some(*v),
                Part::Sum => c.sum = *v,
            }
        }
    }
    classics
        .into_iter()
        .map(|(labels, by_time)| {
            let points = by_time
                .into_iter()
                .map(|(t, c)| Ok((t, to_native(c)?)))
                .collect::<Result<Vec<_>, String>>()?;
            Ok((labels, points))
        })
        .collect()
}

/// `TempHistogram.Convert`: cumulative counts to a custom-bucket histogram,
/// with a `+Inf` bucket holding the count if there is none.
fn to_native(mut c: Classic) -> Result<FloatHistogram, String> {
    c.buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    c.buckets.dedup_by(|b, a| a.0 == b.0);
    for pair in c.buckets.windows(2) {
        if pair[1].1 < pair[0].1 {
            return Err(format!(
                "count is not cumulative: {} < {}",
                pair[1].1, pair[0].1
            ));
        }
    }
    if let Some(&(le, n)) = c.buckets.iter().find(|b| b.1 < 0.0) {
        return Err(format!(
            "bucket count must be non-negative: le={le}, count={n}"
        ));
    }
    let count = match (c.count, c.buckets.last()) {
        (Some(n), _) => n,
        (None, Some(b)) => b.1,
        (None, None) => return Err("count must be provided when no buckets are present".into()),
    };
    if count < 0.0 {
        return Err(format!("count must be non-negative: count={count}"));
    }
    if c.buckets.last().is_none_or(|b| b.0 != f64::INFINITY) {
        c.buckets.push((f64::INFINITY, count));
    }
    let last = c.buckets.last().map_or(0.0, |b| b.1);
    if count != last {
        return Err(format!(
            "count mismatch: count={count} != +Inf count={last}"
        ));
    }
    let mut h = FloatHistogram {
        schema: CUSTOM_BUCKETS_SCHEMA,
        count,
        sum: c.sum,
        ..FloatHistogram::default()
    };
    let mut prev = 0.0;
    for &(le, n) in &c.buckets {
        h.positive_buckets.push(n - prev);
        prev = n;
        if le != f64::INFINITY {
            h.custom_values.push(le);
        }
    }
    h.positive_spans = vec![Span::new(0, h.positive_buckets.len() as u32)];
    Ok(h)
}
