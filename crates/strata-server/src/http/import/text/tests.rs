use proptest::prelude::*;

use super::*;

fn sample(line: &str) -> SampleLine<'_> {
    split_line(line.as_bytes())
        .unwrap_or_else(|e| panic!("{line:?}: {e}"))
        .unwrap_or_else(|| panic!("{line:?} is not a sample"))
}

fn series(line: &str) -> Vec<(String, String)> {
    let s = sample(line);
    let mut out = Vec::new();
    parse_series(s.series, &mut out).unwrap_or_else(|e| panic!("{line:?}: {e}"));
    out
}

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

fn error(line: &str) -> String {
    let s = match split_line(line.as_bytes()) {
        Err(e) => return e,
        Ok(None) => panic!("{line:?} is skipped, not refused"),
        Ok(Some(s)) => s,
    };
    let mut out = Vec::new();
    match parse_series(s.series, &mut out) {
        Err(e) => e,
        Ok(()) => panic!("{line:?} parsed as {out:?}"),
    }
}

#[test]
fn prometheus_text_with_milliseconds() {
    let s = sample(r#"http_requests_total{method="post",code="200"} 1027 1395066363000"#);
    assert_eq!(s.value, 1027.0);
    assert_eq!(s.timestamp_ms, Some(1_395_066_363_000));
    assert_eq!(
        s.series,
        br#"http_requests_total{method="post",code="200"}"#
    );
    assert_eq!(
        series(r#"http_requests_total{method="post",code="200"} 1027"#),
        pairs(&[
            ("__name__", "http_requests_total"),
            ("method", "post"),
            ("code", "200")
        ])
    );
}

#[test]
fn openmetrics_seconds_convert_exactly() {
    // promtool writes float64(ms)/1000 with %.3f; these are the digits of
    // millisecond timestamps whose float division is inexact.
    for ms in [
        1_700_000_000_123i64,
        1_700_000_000_001,
        1_732_406_399_999,
        1_000,
    ] {
        let line = format!("m {} {}.{:03}", 1.5, ms / 1000, ms % 1000);
        assert_eq!(sample(&line).timestamp_ms, Some(ms), "{line}");
    }
    assert_eq!(sample("m 1 1.2345").timestamp_ms, Some(1234));
    assert_eq!(sample("m 1 -1.5").timestamp_ms, Some(-1500));
    assert_eq!(sample("m 1 .5").timestamp_ms, Some(500));
    assert_eq!(sample("m 1 1.7e9").timestamp_ms, Some(1_700_000_000_000));
}

#[test]
fn integer_timestamps_below_2_31_are_seconds() {
    assert_eq!(
        sample("m 1 1700000000").timestamp_ms,
        Some(1_700_000_000_000)
    );
    assert_eq!(
        sample("m 1 2147483647").timestamp_ms,
        Some(2_147_483_647_000)
    );
    assert_eq!(sample("m 1 2147483648").timestamp_ms, Some(2_147_483_648));
    assert_eq!(sample("m 1 0").timestamp_ms, Some(0));
    assert_eq!(sample("m 1 -5").timestamp_ms, Some(-5000));
    // A decimal point means seconds, whatever the magnitude (dates after
    // 2038 in a dump).
    assert_eq!(
        sample("m 1 4102444800.000").timestamp_ms,
        Some(4_102_444_800_000)
    );
    assert_eq!(sample("m 1 1.7e12").timestamp_ms, Some(1_700_000_000_000));
}

#[test]
fn no_timestamp() {
    let s = sample("up 1");
    assert_eq!(s.timestamp_ms, None);
    assert_eq!(s.series, b"up");
    assert_eq!(sample("up{job=\"a\"}   1   ").timestamp_ms, None);
}

#[test]
fn comments_metadata_eof_and_blank_lines_are_skipped() {
    for line in [
        "",
        "   ",
        "\r",
        "# HELP http_requests_total The total number of HTTP requests.",
        "# TYPE http_requests_total counter",
        "# UNIT request_seconds seconds",
        "# EOF",
        "  # indented comment",
    ] {
        assert_eq!(split_line(line.as_bytes()), Ok(None), "{line:?}");
    }
}

#[test]
fn special_values() {
    let v = |l: &str| sample(l).value;
    assert!(v("m NaN").is_nan());
    assert_eq!(v("m +Inf"), f64::INFINITY);
    assert_eq!(v("m -Inf"), f64::NEG_INFINITY);
    assert_eq!(v("m Inf"), f64::INFINITY);
    assert_eq!(v("m 1e+06"), 1e6);
    assert_eq!(v("m -1.5e-07"), -1.5e-7);
    assert_eq!(v("m 1.7976931348623157e+308"), f64::MAX);
    let z = v("m -0");
    assert!(z == 0.0 && z.is_sign_negative());
}

#[test]
fn escapes_in_label_values() {
    assert_eq!(
        series(r#"m{a="x\"y\\z\nw"} 1"#),
        pairs(&[("__name__", "m"), ("a", "x\"y\\z\nw")])
    );
    // Go's quoting, as promtool writes it.
    assert_eq!(
        series(r#"m{a="tab\there",b="\u00e9\U0001F600",c="\x41\xc3\xa9",d="\a\b\f\v\r"} 1"#),
        pairs(&[
            ("__name__", "m"),
            ("a", "tab\there"),
            ("b", "é😀"),
            ("c", "Aé"),
            ("d", "\x07\x08\x0c\x0b\r")
        ])
    );
    // Other backslashes stay as they are.
    assert_eq!(
        series(r#"m{path="C:\dir\q"} 1"#),
        pairs(&[("__name__", "m"), ("path", "C:\\dir\\q")])
    );
    // Braces, commas and '#' inside values.
    assert_eq!(
        series(r#"m{a="}{,# x"} 2 # exemplar"#),
        pairs(&[("__name__", "m"), ("a", "}{,# x")])
    );
}

#[test]
fn utf8_names_quoted_and_bare() {
    assert_eq!(
        series(r#"{"my.metric", "label.x"="v", job="j"} 1"#),
        pairs(&[("__name__", "my.metric"), ("label.x", "v"), ("job", "j")])
    );
    // promtool writes Prometheus 3's names bare.
    assert_eq!(
        series(r#"my.metric{k8s.pod="p",ünï="ü"} 1 1700000000.000"#),
        pairs(&[("__name__", "my.metric"), ("k8s.pod", "p"), ("ünï", "ü")])
    );
    assert_eq!(
        series(r#"{__name__="up",job="x"} 1"#),
        pairs(&[("__name__", "up"), ("job", "x")])
    );
}

#[test]
fn layout_variants() {
    assert_eq!(series("m{} 1"), pairs(&[("__name__", "m")]));
    assert_eq!(
        series(r#"m{a="1",} 1"#),
        pairs(&[("__name__", "m"), ("a", "1")])
    );
    assert_eq!(
        series(r#"m { a = "1" , b="2" } 1"#),
        pairs(&[("__name__", "m"), ("a", "1"), ("b", "2")])
    );
    assert_eq!(series("m\t1\t5\r"), pairs(&[("__name__", "m")]));
    assert_eq!(
        sample("m\t1\t1700000000000\r").timestamp_ms,
        Some(1_700_000_000_000)
    );
    // Empty values are no label.
    assert_eq!(
        series(r#"m{a="",b="x"} 1"#),
        pairs(&[("__name__", "m"), ("b", "x")])
    );
    let ex = sample(r#"foo_total 17.0 1520879607.789 # {trace_id="KOO5S4vxi0o"} 0.67"#);
    assert_eq!(ex.timestamp_ms, Some(1_520_879_607_789));
    assert_eq!(
        sample(r#"foo_total 17 # {trace_id="a"} 1"#).timestamp_ms,
        None
    );
}

#[test]
fn bad_lines_say_what_is_wrong() {
    let cases = [
        ("m", "missing value"),
        ("m{a=\"b\"}", "missing value"),
        ("m abc", "cannot parse value \"abc\""),
        ("m 1 abc", "cannot parse timestamp \"abc\""),
        ("m 1 NaN", "cannot parse timestamp"),
        ("m 1 1e300", "out of range"),
        ("m 1 99999999999999999.5", "out of range"),
        ("m 1 2 3", "unexpected \"3\" after the timestamp"),
        ("m{a=\"b} 1", "unterminated quoted string"),
        ("m{a=\"b\" 1", "missing closing brace"),
        ("m{a=b} 1", "not quoted"),
        ("m{a} 1", "expected '='"),
        ("m{a=\"1\" b=\"2\"} 1", "expected ',' or '}'"),
        ("{a=\"b\"} 1", "missing metric name"),
        ("m{__name__=\"x\"} 1", "given twice"),
        ("{\"a\", \"b\"} 1", "given twice"),
        ("\"m\"{} 1", "must be inside the braces"),
        ("m{a=\"\\uZZZZ\"} 1", "bad escape"),
        ("m{a=\"\\xff\"} 1", "not valid UTF-8"),
        ("m{=\"x\"} 1", "expected a label name"),
    ];
    for (line, want) in cases {
        let got = error(line);
        assert!(
            got.contains(want),
            "{line:?}: {got:?} does not say {want:?}"
        );
    }
}

#[test]
fn invalid_utf8_is_refused_not_mangled() {
    let line = b"m{a=\"\xff\"} 1";
    let s = split_line(line).unwrap().unwrap();
    let mut out = Vec::new();
    assert!(parse_series(s.series, &mut out).is_err());
    let line = b"m\xff 1";
    let s = split_line(line).unwrap().unwrap();
    assert!(parse_series(s.series, &mut out)
        .unwrap_err()
        .contains("not valid UTF-8"));
}

/// Label values made of the characters that need care.
fn value_strategy() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just('"'),
            Just('\\'),
            Just('\n'),
            Just('\t'),
            Just('{'),
            Just('}'),
            Just(','),
            Just('#'),
            Just(' '),
            Just('='),
            Just('é'),
            Just('\u{1}'),
            proptest::char::range('a', 'z'),
        ],
        0..12,
    )
    .prop_map(|c| c.into_iter().collect())
}

proptest! {
    /// What promtool writes reads back as the series, value and
    /// millisecond it came from.
    #[test]
    fn rendered_lines_round_trip(
        name in "[a-zA-Z_:][a-zA-Z0-9_:.]{0,12}",
        labels in proptest::collection::btree_map("[a-z][a-z0-9_.]{0,8}", value_strategy(), 0..5),
        value in prop_oneof![any::<f64>(), Just(f64::NAN), Just(f64::INFINITY), Just(f64::NEG_INFINITY)],
        ms in 0i64..4_102_444_800_000,
    ) {
        let mut want = vec![("__name__".to_string(), name.clone())];
        want.extend(labels.iter().map(|(n, v)| (n.clone(), v.clone())));
        let line = format!("{} {:?} {}.{:03}", render(&want), value, ms / 1000, ms % 1000);
        let s = split_line(line.as_bytes()).unwrap().unwrap();
        prop_assert_eq!(s.timestamp_ms, Some(ms));
        prop_assert!(s.value.to_bits() == value.to_bits() || (s.value.is_nan() && value.is_nan()));
        let mut got = Vec::new();
        parse_series(s.series, &mut got).unwrap();
        want.retain(|(_, v)| !v.is_empty());
        prop_assert_eq!(got, want);
    }

    /// Any bytes: an answer, never a panic.
    #[test]
    fn arbitrary_bytes_do_not_panic(line in proptest::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(Some(s)) = split_line(&line) {
            let mut out = Vec::new();
            let _ = parse_series(s.series, &mut out);
        }
    }

    /// Lines built from the format's own characters: never a panic.
    #[test]
    fn format_like_bytes_do_not_panic(line in "[a-z{}=,\"\\\\# .0-9e+-]{0,60}") {
        if let Ok(Some(s)) = split_line(line.as_bytes()) {
            let mut out = Vec::new();
            let _ = parse_series(s.series, &mut out);
        }
    }
}
