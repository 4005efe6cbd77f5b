//! An invalid exemplar is dropped alone: its series, the series' samples
//! and the request stand, and the first problem is kept for the log. A
//! rejected series' exemplars go with it.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use prost::Message;
use strata_codec::{Exemplar, Label};
use strata_remote_write::proto::{v1, v2};
use strata_remote_write::{
    decode, decode_protobuf, encode_v2, DecodeLimits, V2RequestBuilder, Version,
};

use strata_write::DecodedWrite;

mod common;
use common::labels;

fn ex(t: i64, pairs: &[(&str, &str)]) -> Exemplar {
    Exemplar {
        labels: pairs.iter().map(|&(n, v)| Label::new(n, v)).collect(),
        t,
        v: 1.0,
    }
}

/// Replaces the one occurrence of `marker` in `raw` by `with`, same length.
fn patch(raw: &mut [u8], marker: &[u8], with: &[u8]) {
    assert_eq!(marker.len(), with.len());
    let at = raw.windows(marker.len()).position(|w| w == marker).unwrap();
    raw[at..at + marker.len()].copy_from_slice(with);
}

fn kept(d: &DecodedWrite) -> usize {
    d.series.iter().map(|s| s.exemplars.len()).sum()
}

#[test]
fn v1_invalid_exemplars_are_dropped_and_the_series_kept() {
    let long = "v".repeat(121);
    let mut ts = common::v1_series(&[("__name__", "up"), ("job", "a")], &[(10, 1.0), (20, 2.0)]);
    ts.exemplars = [
        ex(1, &[("trace_id", "ok1")]),
        ex(2, &[("a", "1"), ("b", "2"), ("a", "3")]),
        ex(3, &[("", "x")]),
        ex(4, &[("trace_id", &long)]),
        ex(5, &[("BADNAME", "x")]),
        ex(6, &[("trace_id", "BADVALUE")]),
        ex(7, &[("trace_id", "ok2")]),
    ]
    .iter()
    .map(v1::Exemplar::from)
    .collect();
    let mut raw = v1::WriteRequest {
        timeseries: vec![ts],
        metadata: Vec::new(),
    }
    .encode_to_vec();
    patch(&mut raw, b"BADNAME", b"BAD\xffAME");
    patch(&mut raw, b"BADVALUE", b"BAD\xc3ALUE");
    let d = decode_protobuf(Version::V1, &raw).unwrap();

    assert!(d.rejected.is_empty(), "{:?}", d.rejected);
    assert_eq!(d.series.len(), 1);
    assert_eq!(d.series[0].samples, vec![(10, 1.0), (20, 2.0)]);
    assert_eq!(
        d.series[0].exemplars,
        vec![ex(1, &[("trace_id", "ok1")]), ex(7, &[("trace_id", "ok2")])]
    );
    assert_eq!((d.exemplars, d.exemplars_dropped), (7, 5));
    assert_eq!(
        d.exemplar_problem.as_deref(),
        Some(
            r#"series {__name__="up", job="a"}: exemplar 1 dropped: exemplar label name "a" is not unique"#
        )
    );
}

#[test]
fn each_v1_problem_is_named() {
    let problem = |e: Exemplar, marker: Option<(&[u8], &[u8])>| {
        let mut ts = common::v1_series(&[("__name__", "up")], &[(1, 1.0)]);
        ts.exemplars = vec![v1::Exemplar::from(&e)];
        let mut raw = v1::WriteRequest {
            timeseries: vec![ts],
            metadata: Vec::new(),
        }
        .encode_to_vec();
        if let Some((marker, with)) = marker {
            patch(&mut raw, marker, with);
        }
        let d = decode_protobuf(Version::V1, &raw).unwrap();
        assert_eq!(d.series.len(), 1);
        assert!(d.series[0].exemplars.is_empty());
        assert_eq!(d.exemplars_dropped, 1);
        d.exemplar_problem.unwrap()
    };
    let p = problem(ex(1, &[("", "x")]), None);
    assert!(
        p.ends_with("exemplar 0 dropped: exemplar has a label with an empty name"),
        "{p}"
    );
    let p = problem(ex(1, &[("trace_id", &"é".repeat(121))]), None);
    assert!(p.ends_with("over the maximum of 128"), "{p}");
    assert!(p.contains("are 129 characters long"), "{p}");
    let p = problem(ex(1, &[("NAME", "x")]), Some((b"NAME", b"N\xffME")));
    assert!(
        p.contains("exemplar label name \"N\u{fffd}ME\" is not valid UTF-8"),
        "{p}"
    );
    let p = problem(
        ex(1, &[("trace_id", "VALUE")]),
        Some((b"VALUE", b"V\xffLUE")),
    );
    assert!(
        p.contains("the value of exemplar label \"trace_id\" is not valid UTF-8"),
        "{p}"
    );
}

#[test]
fn v1_exemplars_of_rejected_series_are_not_kept() {
    let with_exemplars = |mut ts: v1::TimeSeries| {
        ts.exemplars = vec![v1::Exemplar::from(&ex(1, &[("trace_id", "t")])); 2];
        ts
    };
    let good = with_exemplars(common::v1_series(&[("__name__", "up")], &[(1, 1.0)]));
    let no_name = with_exemplars(common::v1_series(&[("job", "x")], &[(1, 1.0)]));
    let mut raw = v1::WriteRequest {
        timeseries: vec![
            good,
            no_name,
            with_exemplars(common::v1_series(&[("__name__", "BADUTF8")], &[(1, 1.0)])),
        ],
        metadata: Vec::new(),
    }
    .encode_to_vec();
    patch(&mut raw, b"BADUTF8", b"BAD\xffTF8");
    let d = decode_protobuf(Version::V1, &raw).unwrap();
    assert_eq!(d.series.len(), 1);
    assert_eq!(d.series[0].exemplars.len(), 2);
    assert_eq!(d.rejected.len(), 2, "{:?}", d.rejected);
    assert_eq!((d.exemplars, d.exemplars_dropped), (6, 4));
    // The series' rejections say why; no exemplar was invalid.
    assert_eq!(d.exemplar_problem, None);
}

#[test]
fn a_bad_symbol_reference_drops_only_its_exemplar() {
    let mut builder = V2RequestBuilder::new();
    let name = builder.symbol("__name__");
    let up = builder.symbol("up");
    let trace = builder.symbol("trace_id");
    let t1 = builder.symbol("t1");
    let bad = builder.symbol("BADSYMBOL");
    let e = |labels_refs: Vec<u32>, timestamp| v2::Exemplar {
        labels_refs,
        value: 1.0,
        timestamp,
    };
    builder.push_series(v2::TimeSeries {
        labels_refs: vec![name, up],
        samples: vec![v2::Sample {
            value: 1.0,
            timestamp: 100,
            start_timestamp: 0,
        }],
        exemplars: vec![
            e(vec![trace, t1], 1),
            e(vec![trace, 999], 2),
            e(vec![trace, t1, trace], 3),
            e(vec![999, t1], 4),
            e(vec![trace, bad], 5),
            e(vec![0, t1], 6),
            e(vec![], 7),
        ],
        ..Default::default()
    });
    let mut raw = builder.build().encode_to_vec();
    patch(&mut raw, b"BADSYMBOL", b"BAD\xffYMBOL");
    let d = decode_protobuf(Version::V2, &raw).unwrap();

    assert!(d.rejected.is_empty(), "{:?}", d.rejected);
    assert_eq!(d.series.len(), 1);
    assert_eq!(d.series[0].samples, vec![(100, 1.0)]);
    assert_eq!(
        d.series[0].exemplars,
        vec![ex(1, &[("trace_id", "t1")]), ex(7, &[])]
    );
    assert_eq!((d.exemplars, d.exemplars_dropped), (7, 5));
    assert_eq!(
        d.exemplar_problem.as_deref(),
        Some(
            r#"series {__name__="up"}: exemplar 1 dropped: exemplar labels_refs[1] (the value of label "trace_id") refers to symbol 999, out of range: the symbols table has 6 entries"#
        )
    );
}

#[test]
fn each_v2_problem_is_named() {
    let problem = |refs: &dyn Fn(&mut V2RequestBuilder) -> Vec<u32>| {
        let mut builder = V2RequestBuilder::new();
        let series = vec![builder.symbol("__name__"), builder.symbol("up")];
        let labels_refs = refs(&mut builder);
        builder.push_series(v2::TimeSeries {
            labels_refs: series,
            samples: vec![v2::Sample {
                value: 1.0,
                timestamp: 1,
                start_timestamp: 0,
            }],
            exemplars: vec![v2::Exemplar {
                labels_refs,
                value: 1.0,
                timestamp: 1,
            }],
            ..Default::default()
        });
        let mut raw = builder.build().encode_to_vec();
        if let Some(at) = raw.windows(3).position(|w| w == b"BAD") {
            raw[at + 1] = 0xff;
        }
        let d = decode_protobuf(Version::V2, &raw).unwrap();
        assert_eq!(d.series.len(), 1);
        assert!(d.series[0].exemplars.is_empty());
        assert_eq!(d.exemplars_dropped, 1);
        d.exemplar_problem.unwrap()
    };
    let p = problem(&|b| vec![b.symbol("trace_id")]);
    assert!(
        p.ends_with("exemplar labels_refs has an odd length (1)"),
        "{p}"
    );
    let p = problem(&|_| vec![77, 0]);
    assert!(
        p.ends_with("exemplar labels_refs[0] (a label name) refers to symbol 77, out of range: the symbols table has 3 entries"),
        "{p}"
    );
    let p = problem(&|b| vec![b.symbol("BAD"), b.symbol("x")]);
    assert!(
        p.ends_with("refers to symbol 3, which is not valid UTF-8"),
        "{p}"
    );
    let p = problem(&|b| vec![0, b.symbol("x")]);
    assert!(
        p.ends_with("exemplar has a label with an empty name"),
        "{p}"
    );
    let p = problem(&|b| vec![b.symbol("k"), b.symbol("v"), b.symbol("k"), b.symbol("w")]);
    assert!(
        p.ends_with("exemplar label name \"k\" is not unique"),
        "{p}"
    );
}

#[test]
fn v2_exemplars_of_rejected_series_are_not_kept() {
    let mut builder = V2RequestBuilder::new();
    builder.add_series_with_exemplars(
        &labels(&[("__name__", "up")]),
        &[(1, 1.0)],
        &[ex(1, &[("trace_id", "a")])],
    );
    let name = builder.symbol("__name__");
    let trace = builder.symbol("trace_id");
    let a = builder.symbol("a");
    builder.push_series(v2::TimeSeries {
        // An out-of-range label reference rejects the series.
        labels_refs: vec![name, 999],
        samples: vec![v2::Sample {
            value: 1.0,
            timestamp: 1,
            start_timestamp: 0,
        }],
        exemplars: vec![
            v2::Exemplar {
                labels_refs: vec![trace, a],
                value: 1.0,
                timestamp: 1,
            };
            3
        ],
        ..Default::default()
    });
    let mut body = Vec::new();
    encode_v2(&builder.build(), &mut body);
    let d = decode(Version::V2, &body, &DecodeLimits::default()).unwrap();
    assert_eq!(d.series.len(), 1);
    assert_eq!(d.series[0].exemplars, vec![ex(1, &[("trace_id", "a")])]);
    assert_eq!(d.rejected.len(), 1);
    assert_eq!(d.rejected[0].samples, 1);
    assert_eq!((d.exemplars, d.exemplars_dropped), (4, 3));
    assert_eq!(kept(&d), d.exemplars - d.exemplars_dropped);
    assert_eq!(d.exemplar_problem, None);
}

#[test]
fn a_series_of_invalid_histograms_only_is_rejected_with_its_exemplars() {
    let mut builder = V2RequestBuilder::new();
    let labels_refs = vec![builder.symbol("__name__"), builder.symbol("latency")];
    let exemplars = vec![builder.exemplar(&ex(1, &[("trace_id", "a")]))];
    builder.push_series(v2::TimeSeries {
        labels_refs,
        // A count of 1 with no observation in any bucket: invalid.
        histograms: vec![v2::Histogram {
            count: Some(v2::histogram::Count::CountInt(1)),
            sum: 1.0,
            timestamp: 1,
            ..Default::default()
        }],
        exemplars,
        ..Default::default()
    });
    let mut body = Vec::new();
    encode_v2(&builder.build(), &mut body);
    let d = decode(Version::V2, &body, &DecodeLimits::default()).unwrap();
    assert!(d.series.is_empty());
    assert_eq!(d.rejected.len(), 1);
    assert!(
        d.rejected[0]
            .reason
            .starts_with("invalid native histogram at timestamp 1: "),
        "{}",
        d.rejected[0].reason
    );
    assert_eq!((d.histograms, d.exemplars, d.exemplars_dropped), (1, 1, 1));
    assert_eq!(d.exemplar_problem, None);
}
