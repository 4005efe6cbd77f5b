//! Splitting a decoded request by shard and encoding each part in the
//! request's own protocol version.

use std::collections::HashMap;

use strata_remote_write::proto::{v1, v2};
use strata_remote_write::{Encoder, V2RequestBuilder, Version};
use strata_write::{metric_kind_number, MetricMetadata, SeriesSamples};

use super::shard_map::shard_of;

/// The series of one shard, encoded as a remote-write body.
#[derive(Debug)]
pub struct Part {
    pub shard: usize,
    pub body: Vec<u8>,
    pub series: usize,
    /// Float and native histogram samples.
    pub samples: usize,
}

/// Groups `series` by owning shard among `count` and encodes each non-empty
/// group as a `version` body (snappy-compressed protobuf). Series keep their
/// order within a part, with their float samples, native histograms and
/// exemplars. Metric metadata travels as it came: 1.0's list to
/// shard 0 (readers merge every shard's), 2.0's on each series of the
/// metric it describes.
pub fn split(
    version: Version,
    series: Vec<SeriesSamples>,
    metadata: Vec<MetricMetadata>,
    count: usize,
) -> Vec<Part> {
    let count_u32 = u32::try_from(count).unwrap_or(u32::MAX);
    let mut groups: Vec<Vec<SeriesSamples>> = (0..count).map(|_| Vec::new()).collect();
    for s in series {
        let shard = shard_of(&s.labels, count_u32) as usize;
        if let Some(g) = groups.get_mut(shard) {
            g.push(s);
        }
    }
    let mut encoder = Encoder::new();
    let v1_metadata: &[MetricMetadata] = if version == Version::V1 {
        &metadata
    } else {
        &[]
    };
    let described: HashMap<&str, &MetricMetadata> =
        metadata.iter().map(|m| (m.metric.as_str(), m)).collect();
    groups
        .into_iter()
        .enumerate()
        .filter(|(shard, g)| !g.is_empty() || (*shard == 0 && !v1_metadata.is_empty()))
        .map(|(shard, group)| {
            let series = group.len();
            let samples = group
                .iter()
                .map(|s| s.samples.len() + s.histograms.len())
                .sum();
            let mut body = Vec::new();
            match version {
                Version::V1 => {
                    let mut req = to_v1(group);
                    if shard == 0 {
                        req.metadata = v1_metadata.iter().map(to_v1_metadata).collect();
                    }
                    encoder.encode_v1(&req, &mut body)
                }
                Version::V2 => {
                    let mut b = V2RequestBuilder::new();
                    for s in &group {
                        let name = s.labels.iter().find(|l| l.name == "__name__");
                        match name.and_then(|n| described.get(n.value.as_str())) {
                            Some(m) => {
                                let series = v2_series(&mut b, s, m);
                                b.push_series(series);
                            }
                            None => {
                                b.add_series_with_histograms(
                                    &s.labels,
                                    &s.samples,
                                    &s.histograms,
                                    &s.exemplars,
                                );
                            }
                        }
                    }
                    encoder.encode_v2(&b.build(), &mut body);
                }
            }
            Part {
                shard,
                body,
                series,
                samples,
            }
        })
        .collect()
}

fn to_v1_metadata(m: &MetricMetadata) -> v1::MetricMetadata {
    v1::MetricMetadata {
        r#type: metric_kind_number(m.kind),
        metric_family_name: m.metric.clone(),
        help: m.help.clone(),
        unit: m.unit.clone(),
    }
}

/// A 2.0 series with its metric's metadata.
fn v2_series(b: &mut V2RequestBuilder, s: &SeriesSamples, m: &MetricMetadata) -> v2::TimeSeries {
    let mut labels_refs = Vec::with_capacity(s.labels.len() * 2);
    for l in &s.labels {
        labels_refs.push(b.symbol(&l.name));
        labels_refs.push(b.symbol(&l.value));
    }
    v2::TimeSeries {
        labels_refs,
        samples: s
            .samples
            .iter()
            .map(|&(timestamp, value)| v2::Sample {
                value,
                timestamp,
                start_timestamp: 0,
            })
            .collect(),
        histograms: s
            .histograms
            .iter()
            .map(|(t, h)| v2::Histogram::from_sample(*t, h))
            .collect(),
        exemplars: s.exemplars.iter().map(|e| b.exemplar(e)).collect(),
        metadata: Some(v2::Metadata {
            r#type: metric_kind_number(m.kind),
            help_ref: b.symbol(&m.help),
            unit_ref: b.symbol(&m.unit),
        }),
        ..Default::default()
    }
}

fn to_v1(group: Vec<SeriesSamples>) -> v1::WriteRequest {
    v1::WriteRequest {
        timeseries: group
            .into_iter()
            .map(|s| v1::TimeSeries {
                labels: s
                    .labels
                    .into_iter()
                    .map(|l| v1::Label {
                        name: l.name,
                        value: l.value,
                    })
                    .collect(),
                samples: s
                    .samples
                    .into_iter()
                    .map(|(timestamp, value)| v1::Sample { value, timestamp })
                    .collect(),
                exemplars: s.exemplars.iter().map(v1::Exemplar::from).collect(),
                histograms: s
                    .histograms
                    .iter()
                    .map(|(t, h)| v1::Histogram::from_sample(*t, h))
                    .collect(),
            })
            .collect(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use strata_codec::histogram::{
        CounterResetHint, Histogram, HistogramSample, Span, CUSTOM_BUCKETS_SCHEMA,
    };
    use strata_codec::Label;
    use strata_remote_write::{decode, DecodeLimits};

    use super::*;

    /// A native histogram of `i` observations (float counts when `i` is
    /// odd, custom buckets when it is a multiple of 5).
    fn histogram(i: usize) -> HistogramSample {
        let n = i as u64 + 1;
        let h = Histogram {
            schema: if i % 5 == 0 { CUSTOM_BUCKETS_SCHEMA } else { 2 },
            zero_threshold: if i % 5 == 0 { 0.0 } else { 1e-128 },
            count: n,
            sum: 1.5 * n as f64,
            positive_spans: vec![Span::new(-1, 1)],
            positive_buckets: vec![n as i64],
            custom_values: if i % 5 == 0 { vec![0.5] } else { Vec::new() },
            counter_reset_hint: CounterResetHint::NotReset,
            ..Histogram::default()
        };
        let h = if i % 5 == 0 {
            Histogram {
                positive_spans: vec![Span::new(0, 1)],
                ..h
            }
        } else {
            h
        };
        if i % 2 == 1 {
            HistogramSample::Float(h.to_float())
        } else {
            HistogramSample::Int(h)
        }
    }

    fn series(n: usize) -> Vec<SeriesSamples> {
        (0..n)
            .map(|i| SeriesSamples {
                labels: vec![Label::new("__name__", "m"), Label::new("i", i.to_string())],
                // Every fourth series has only histograms.
                samples: if i % 4 == 3 {
                    Vec::new()
                } else {
                    vec![(1_000, i as f64), (2_000, -(i as f64))]
                },
                // Every other one has some.
                histograms: if i % 2 == 1 {
                    vec![(1_500, histogram(i)), (2_500, histogram(i + 2))]
                } else {
                    Vec::new()
                },
                // Every third series has an exemplar, which travels with it.
                exemplars: (i % 3 == 0)
                    .then(|| strata_codec::Exemplar {
                        labels: vec![Label::new("trace_id", format!("t{i}"))],
                        t: 2_000,
                        v: 0.5,
                    })
                    .into_iter()
                    .collect(),
            })
            .collect()
    }

    #[test]
    fn parts_round_trip_in_both_versions() {
        for version in [Version::V1, Version::V2] {
            let all = series(100);
            let parts = split(version, all.clone(), Vec::new(), 3);
            assert_eq!(parts.len(), 3);
            let mut back = Vec::new();
            for p in &parts {
                let d = decode(version, &p.body, &DecodeLimits::default()).unwrap();
                assert!(d.rejected.is_empty());
                assert_eq!(d.series.len(), p.series);
                assert_eq!(d.sample_count() + d.histogram_count(), p.samples);
                for s in &d.series {
                    assert_eq!(shard_of(&s.labels, 3) as usize, p.shard);
                }
                back.extend(d.series);
            }
            back.sort_by(|a, b| a.labels.cmp(&b.labels));
            let mut want = all;
            want.sort_by(|a, b| a.labels.cmp(&b.labels));
            assert_eq!(back.len(), want.len());
            // Histograms compared bit for bit (a stale NaN sum is not
            // equal to itself).
            for (b, w) in back.iter().zip(&want) {
                assert_eq!(b.histograms.len(), w.histograms.len(), "{:?}", w.labels);
                for ((bt, bh), (wt, wh)) in b.histograms.iter().zip(&w.histograms) {
                    assert_eq!(bt, wt);
                    assert!(bh.bit_eq(wh), "{bh:?} != {wh:?}");
                }
            }
            assert_eq!(back, want);
            assert_eq!(back.iter().map(|s| s.histograms.len()).sum::<usize>(), 100);
        }
    }

    #[test]
    fn empty_groups_make_no_part() {
        assert!(split(Version::V1, Vec::new(), Vec::new(), 4).is_empty());
        let parts = split(Version::V1, series(1), Vec::new(), 4);
        assert_eq!(parts.len(), 1);
    }

    #[test]
    fn metadata_travels_with_its_version() {
        let described = vec![MetricMetadata {
            metric: "m".into(),
            kind: "counter",
            help: "Things.".into(),
            unit: String::new(),
        }];
        // 1.0: the list goes to shard 0, even with no series of its own.
        let parts = split(Version::V1, Vec::new(), described.clone(), 4);
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].shard, 0);
        let d = decode(Version::V1, &parts[0].body, &DecodeLimits::default()).unwrap();
        assert_eq!(d.metadata, described);
        // 2.0: on the series of the metric, whatever their shard, with
        // their exemplars.
        let parts = split(Version::V2, series(20), described.clone(), 3);
        assert_eq!(parts.len(), 3);
        let (mut exemplars, mut histograms) = (0, 0);
        for p in &parts {
            let d = decode(Version::V2, &p.body, &DecodeLimits::default()).unwrap();
            assert_eq!(d.metadata, described, "shard {}", p.shard);
            exemplars += d.series.iter().map(|s| s.exemplars.len()).sum::<usize>();
            histograms += d.histogram_count();
        }
        assert_eq!((exemplars, histograms), (7, 20));
    }
}
