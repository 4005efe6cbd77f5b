use std::io::{BufReader, Write as _};

use super::parse::*;
use super::*;

/// A series as `name{k="v", ...}`, short for the expectations below.
fn show(labels: &impl strata_codec::LabelPairs) -> String {
    let mut name = "";
    let mut rest = Vec::new();
    for (n, v) in labels.pairs() {
        if n == "__name__" {
            name = v;
        } else {
            rest.push(format!("{n}={v:?}"));
        }
    }
    format!("{name}{{{}}}", rest.join(", "))
}

fn options() -> Options {
    Options {
        default_timestamp_ms: None,
        extra_labels: Vec::new(),
        gzip: false,
        batch_samples: 1000,
        batch_series: 1000,
        max_line_bytes: 4096,
    }
}

/// Parses `body` and collects every batch: series as rendered labels with
/// their samples.
/// Per batch, its series as rendered labels with their samples.
type Batches = Vec<Vec<(String, Vec<(i64, f64)>)>>;

fn parse_all(body: &[u8], options: &Options) -> (Batches, ParseEnd) {
    let (tx, mut rx) = mpsc::channel(10_000);
    let end = parse_body(body, options, &tx);
    drop(tx);
    let mut batches = Vec::new();
    while let Ok(b) = rx.try_recv() {
        assert_eq!(
            b.samples,
            b.series.iter().map(|s| s.samples.len()).sum::<usize>()
        );
        batches.push(
            b.series
                .into_iter()
                .map(|s| (show(&s.labels), s.samples))
                .collect(),
        );
    }
    (batches, end)
}

#[test]
fn consecutive_lines_of_a_series_share_one_entry() {
    let body = b"# TYPE m gauge\nm{a=\"1\"} 1 1700000000.000\nm{a=\"1\"} 2 1700000015.000\nm{a=\"2\"} 3 1700000000.000\n# EOF\n";
    let (batches, end) = parse_all(body, &options());
    assert_eq!(end.lines, 5);
    assert_eq!(end.bad_lines, 0);
    assert_eq!(
        batches,
        vec![vec![
            (
                r#"m{a="1"}"#.to_string(),
                vec![(1_700_000_000_000, 1.0), (1_700_000_015_000, 2.0)]
            ),
            (r#"m{a="2"}"#.to_string(), vec![(1_700_000_000_000, 3.0)]),
        ]]
    );
}

#[test]
fn batches_split_at_the_sample_limit_and_keep_order() {
    let mut body = String::new();
    for i in 0..25 {
        body.push_str(&format!(
            "m{{s=\"{}\"}} {i} {}\n",
            i / 10,
            1_700_000_000_000i64 + i
        ));
    }
    let opts = Options {
        batch_samples: 7,
        ..options()
    };
    let (batches, end) = parse_all(body.as_bytes(), &opts);
    assert_eq!(end.lines, 25);
    let sizes: Vec<usize> = batches
        .iter()
        .map(|b| b.iter().map(|s| s.1.len()).sum())
        .collect();
    assert_eq!(sizes, vec![7, 7, 7, 4]);
    let all: Vec<(i64, f64)> = batches
        .iter()
        .flat_map(|b| b.iter().flat_map(|s| s.1.clone()))
        .collect();
    let want: Vec<(i64, f64)> = (0..25).map(|i| (1_700_000_000_000 + i, i as f64)).collect();
    assert_eq!(all, want);
}

#[test]
fn bad_lines_are_counted_named_and_skipped() {
    let body = b"good 1 1700000000000\nbad{ 1\ngood 2 1700000001000\nworse x\ngood 3 1700000002000";
    let (batches, end) = parse_all(body, &options());
    assert_eq!(end.lines, 5);
    assert_eq!(end.bad_lines, 2);
    assert_eq!(end.line_errors.len(), 2);
    assert!(
        end.line_errors[0].starts_with("line 2: "),
        "{:?}",
        end.line_errors
    );
    assert!(end.line_errors[1].starts_with("line 4: cannot parse value \"x\""));
    // Bad lines in between do not split a series' entry.
    assert_eq!(
        batches,
        vec![vec![(
            "good{}".to_string(),
            vec![
                (1_700_000_000_000, 1.0),
                (1_700_000_001_000, 2.0),
                (1_700_000_002_000, 3.0)
            ]
        )]]
    );
}

#[test]
fn only_the_first_bad_lines_are_quoted() {
    let body = "x\n".repeat(MAX_QUOTED + 5);
    let (_, end) = parse_all(body.as_bytes(), &options());
    assert_eq!(end.bad_lines, MAX_QUOTED as u64 + 5);
    assert_eq!(end.line_errors.len(), MAX_QUOTED);
}

#[test]
fn long_lines_are_skipped_without_holding_them() {
    let long = format!("m{{a=\"{}\"}} 1\n", "v".repeat(10_000));
    let body = format!("m 1 1700000000000\n{long}m 2 1700000001000\n");
    let opts = Options {
        max_line_bytes: 100,
        ..options()
    };
    let (batches, end) = parse_all(body.as_bytes(), &opts);
    assert_eq!(end.lines, 3);
    assert_eq!(end.bad_lines, 1);
    assert_eq!(
        end.line_errors,
        vec!["line 2: line of 10009 bytes is longer than the limits allow (100 bytes)"]
    );
    assert_eq!(batches[0][0].1.len(), 2);
}

#[test]
fn next_line_edges() {
    let mut r = BufReader::with_capacity(4, &b"abc\n\nlast"[..]);
    let mut buf = Vec::new();
    assert!(matches!(next_line(&mut r, &mut buf, 3), Ok(LineRead::Line)));
    assert_eq!(buf, b"abc");
    assert!(matches!(next_line(&mut r, &mut buf, 3), Ok(LineRead::Line)));
    assert_eq!(buf, b"");
    assert!(matches!(
        next_line(&mut r, &mut buf, 3),
        Ok(LineRead::TooLong(4))
    ));
    assert!(matches!(next_line(&mut r, &mut buf, 3), Ok(LineRead::End)));
}

#[test]
fn default_timestamp_and_extra_labels() {
    let body = b"m{job=\"a\",x=\"1\"} 5\nm{job=\"a\",x=\"1\"} 6 1700000000000\n";
    let opts = Options {
        default_timestamp_ms: Some(1_600_000_000_000),
        extra_labels: vec![
            ("job".into(), "imported".into()),
            ("dc".into(), "eu".into()),
        ],
        ..options()
    };
    let (batches, _) = parse_all(body, &opts);
    assert_eq!(
        batches,
        vec![vec![(
            r#"m{dc="eu", job="imported", x="1"}"#.to_string(),
            vec![(1_600_000_000_000, 5.0), (1_700_000_000_000, 6.0)]
        )]]
    );
    // Without `timestamp`, lines without one are stamped when read.
    let before = now_ms();
    let (batches, _) = parse_all(b"m 1\n", &options());
    let t = batches[0][0].1[0].0;
    assert!(t >= before && t <= now_ms(), "{t}");
}

#[test]
fn duplicate_label_names_are_refused() {
    let (batches, end) = parse_all(b"m{a=\"1\",a=\"2\"} 1 1700000000000\n", &options());
    assert!(batches.is_empty());
    assert!(end.line_errors[0].contains("duplicate label name \"a\""));
}

#[test]
fn gzip_bodies_decompress_even_in_several_members() {
    let mut body = Vec::new();
    for part in ["m 1 1700000000000\n", "m 2 1700000001000\n"] {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(part.as_bytes()).unwrap();
        body.extend(gz.finish().unwrap());
    }
    let opts = Options {
        gzip: true,
        ..options()
    };
    let (batches, end) = parse_all(&body, &opts);
    assert_eq!(end.fatal, None);
    assert_eq!(
        batches[0][0].1,
        vec![(1_700_000_000_000, 1.0), (1_700_000_001_000, 2.0)]
    );
    let (_, end) = parse_all(b"not gzip at all\n", &opts);
    assert!(end
        .fatal
        .unwrap()
        .contains("cannot read the body after line 0"));
}

#[test]
fn query_arguments() {
    assert_eq!(query_options(None), Ok((None, vec![])));
    assert_eq!(
        query_options(Some(
            "timestamp=1594370496905&extra_label=a%3D1&extra_label=b=x%20y&extra_label=a=2"
        )),
        Ok((
            Some(1_594_370_496_905),
            vec![("b".into(), "x y".into()), ("a".into(), "2".into())]
        ))
    );
    assert!(query_options(Some("timestamp=1.5"))
        .unwrap_err()
        .contains("Unix milliseconds"));
    assert!(query_options(Some("extra_label=novalue")).is_err());
    assert!(query_options(Some("extra_label==x")).is_err());
}

#[test]
fn content_encodings() {
    let h = |v: &str| {
        let mut m = HeaderMap::new();
        m.insert("content-encoding", v.parse().unwrap());
        m
    };
    assert_eq!(gzipped(&HeaderMap::new()), Ok(false));
    assert_eq!(gzipped(&h("identity")), Ok(false));
    assert_eq!(gzipped(&h("gzip")), Ok(true));
    assert_eq!(gzipped(&h("GZIP")), Ok(true));
    assert!(gzipped(&h("snappy")).unwrap_err().contains("snappy"));
}
