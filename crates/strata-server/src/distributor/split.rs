//! Splitting a decoded request by shard and encoding each part in the
//! request's own protocol version.

use strata_remote_write::proto::v1;
use strata_remote_write::{Encoder, SeriesSamples, V2RequestBuilder, Version};

use super::shard_map::shard_of;

/// The series of one shard, encoded as a remote-write body.
#[derive(Debug)]
pub struct Part {
    pub shard: usize,
    pub body: Vec<u8>,
    pub series: usize,
    pub samples: usize,
}

/// Groups `series` by owning shard among `count` and encodes each non-empty
/// group as a `version` body (snappy-compressed protobuf). Series keep their
/// order within a part.
pub fn split(version: Version, series: Vec<SeriesSamples>, count: usize) -> Vec<Part> {
    let count_u32 = u32::try_from(count).unwrap_or(u32::MAX);
    let mut groups: Vec<Vec<SeriesSamples>> = (0..count).map(|_| Vec::new()).collect();
    for s in series {
        let shard = shard_of(&s.labels, count_u32) as usize;
        if let Some(g) = groups.get_mut(shard) {
            g.push(s);
        }
    }
    let mut encoder = Encoder::new();
    groups
        .into_iter()
        .enumerate()
        .filter(|(_, g)| !g.is_empty())
        .map(|(shard, group)| {
            let series = group.len();
            let samples = group.iter().map(|s| s.samples.len()).sum();
            let mut body = Vec::new();
            match version {
                Version::V1 => encoder.encode_v1(&to_v1(group), &mut body),
                Version::V2 => {
                    let mut b = V2RequestBuilder::new();
                    for s in &group {
                        b.add_series(&s.labels, &s.samples);
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
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use strata_codec::Label;
    use strata_remote_write::{decode, DecodeLimits};

    use super::*;

    fn series(n: usize) -> Vec<SeriesSamples> {
        (0..n)
            .map(|i| SeriesSamples {
                labels: vec![Label::new("__name__", "m"), Label::new("i", i.to_string())],
                samples: vec![(1_000, i as f64), (2_000, -(i as f64))],
            })
            .collect()
    }

    #[test]
    fn parts_round_trip_in_both_versions() {
        for version in [Version::V1, Version::V2] {
            let all = series(100);
            let parts = split(version, all.clone(), 3);
            assert_eq!(parts.len(), 3);
            let mut back = Vec::new();
            for p in &parts {
                let d = decode(version, &p.body, &DecodeLimits::default()).unwrap();
                assert!(d.rejected.is_empty());
                assert_eq!(d.series.len(), p.series);
                assert_eq!(d.sample_count(), p.samples);
                for s in &d.series {
                    assert_eq!(shard_of(&s.labels, 3) as usize, p.shard);
                }
                back.extend(d.series);
            }
            back.sort_by(|a, b| a.labels.cmp(&b.labels));
            let mut want = all;
            want.sort_by(|a, b| a.labels.cmp(&b.labels));
            assert_eq!(back, want);
        }
    }

    #[test]
    fn empty_groups_make_no_part() {
        assert!(split(Version::V1, Vec::new(), 4).is_empty());
        let parts = split(Version::V1, series(1), 4);
        assert_eq!(parts.len(), 1);
    }
}
