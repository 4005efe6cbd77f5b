//! Alert templates expanded as Prometheus expands them. Every expected
//! output and error in the tables is what Prometheus v0.316.0 gives for the
//! same template, data and query results (checked by running it), except
//! that execution errors here lack Go's line:column and node; the tests
//! after the tables cover what differs on purpose and how queries run.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::cell::RefCell;

use strata_rules::template::{self, QueryResultSample, TemplateData, PREAMBLE};

/// Prometheus' own test time: 2012-11-24 11:14:12 UTC.
const NOW_MS: i64 = 1_353_755_652_000;

type Case = (f64, &'static str, Result<&'static str, &'static str>);

fn data(value: f64) -> TemplateData {
    let map = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    TemplateData {
        labels: map(&[
            ("instance", "node1:9100"),
            ("job", "node"),
            ("severity", "critical"),
        ]),
        external_labels: map(&[("cluster", "eu1")]),
        external_url: "http://testhost:9090/path/prefix".into(),
        value,
    }
}

fn sample(labels: &[(&str, &str)], value: f64) -> QueryResultSample {
    QueryResultSample {
        labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        value,
    }
}

/// The query results the tables' templates see.
fn queries(q: &str, at_ms: i64) -> Result<Vec<QueryResultSample>, String> {
    assert_eq!(at_ms, NOW_MS, "queries run at the evaluation time");
    Ok(match q {
        "up" => vec![
            sample(
                &[("__name__", "up"), ("instance", "b:9100"), ("job", "node")],
                1.0,
            ),
            sample(
                &[("__name__", "up"), ("instance", "a:9100"), ("job", "node")],
                0.0,
            ),
        ],
        "metric{__value__='a'}" => {
            vec![sample(&[("__name__", "metric"), ("__value__", "a")], 11.0)]
        }
        "empty" => vec![],
        "fail" => return Err("boom".into()),
        _ => vec![sample(&[("instance", "x")], 0.123456)],
    })
}

fn expand(value: f64, text: &str) -> Result<String, String> {
    template::expand("test", text, &data(value), NOW_MS, &queries).map_err(|e| e.to_string())
}

fn run(cases: &[Case]) {
    let mut failures = Vec::new();
    for &(value, text, want) in cases {
        let got = expand(value, text);
        let want = want.map(str::to_owned).map_err(str::to_owned);
        if got != want {
            failures.push(format!(
                "{text:?} (value {value}):\n  want {want:?}\n  got  {got:?}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// Prometheus' `template_test.go` cases, with the alert data as `.` (its lists of inputs written as literals).
#[test]
fn prometheus_template_test_cases() {
    run(&[
        (1.0, "plain text", Ok("plain text")),
        (1.0, "{{ 1 }}", Ok("1")),
        (1.0, "{{\u{a0}}}", Err("error parsing template test: template: test:1: unrecognized character in action: U+00A0")),
        (1.0, "{{ \"<b>\" | safeHtml }}", Ok("<b>")),
        (1.0, "{{ \"<b>\" }}", Ok("<b>")),
        (1.0, "{{define \"x\"}}{{.arg0}} {{.arg1}}{{end}}{{template \"x\" (args 1 \"2\")}}", Ok("1 2")),
        (1.0, "{{ query \"up\" | first | value }}", Ok("1")),
        (1.0, "{{ query \"up\" | first | label \"instance\" }}", Ok("b:9100")),
        (1.0, "{{ query \"metric{__value__='a'}\" | first | strvalue }}", Ok("a")),
        (1.0, "{{ query \"up\" | first | label \"foo\" }}", Ok("")),
        (1.0, "{{ $x := query \"up\" | first }}{{ $x.Labels.foo }}", Ok("")),
        (1.0, "{{ range query \"up\" | sortByLabel \"instance\" }}{{.Labels.instance}}:{{.Value}}: {{end}}", Ok("a:9100:0: b:9100:1: ")),
        (1.0, "{{ \"foo.example.com\" | stripPort }}", Ok("foo.example.com")),
        (1.0, "{{ \"foo.example.com:12345\" | stripPort }}", Ok("foo.example.com")),
        (1.0, "{{ \"192.0.2.1\" | stripPort }}", Ok("192.0.2.1")),
        (1.0, "{{ \"192.0.2.1:12345\" | stripPort }}", Ok("192.0.2.1")),
        (1.0, "{{ \"2001:0DB8::1\" | stripPort }}", Ok("2001:0DB8::1")),
        (1.0, "{{ \"[2001:0DB8::1]:12345\" | stripPort }}", Ok("2001:0DB8::1")),
        (1.0, "{{ \"[2001:0DB8::1]::12345\" | stripPort }}", Ok("[2001:0DB8::1]::12345")),
        (1.0, "{{ \"foo.example.com\" | stripDomain }}", Ok("foo")),
        (1.0, "{{ \"foo.example.com:12345\" | stripDomain }}", Ok("foo:12345")),
        (1.0, "{{ \"192.0.2.1\" | stripDomain }}", Ok("192.0.2.1")),
        (1.0, "{{ \"192.0.2.1:12345\" | stripDomain }}", Ok("192.0.2.1:12345")),
        (1.0, "{{ \"2001:0DB8::1\" | stripDomain }}", Ok("2001:0DB8::1")),
        (1.0, "{{ \"[2001:0DB8::1]:12345\" | stripDomain }}", Ok("[2001:0DB8::1]:12345")),
        (1.0, "{{ \"[2001:0DB8::1]::12345\" | stripDomain }}", Ok("[2001:0DB8::1]::12345")),
        (1.0, "{{ \"fe80::1%eth0.100\" | stripDomain }}", Ok("fe80::1%eth0.100")),
        (1.0, "{{ \"[fe80::1%eth0.100]:9090\" | stripDomain }}", Ok("[fe80::1%eth0.100]:9090")),
        (1.0, "{{ \"::ffff:192.0.2.1%eth0.100\" | stripDomain }}", Ok("::ffff:192.0.2.1%eth0.100")),
        (1.0, "{{ .Foo }}", Err("error executing template test: template: test: executing \"test\": can't evaluate field Foo in type struct { Labels map[string]string; ExternalLabels map[string]string; ExternalURL string; Value interface {} }")),
        (1.0, "{{", Err("error parsing template test: template: test:1: unclosed action")),
        (1.0, "{{ query \"empty\" | first }}", Err("error executing template test: template: test: executing \"test\": error calling first: first() called on vector with no elements")),
        (1.0, "{{ (query \"empty\").banana }}", Err("error executing template test: template: test: executing \"test\": can't evaluate field banana in type template.queryResult")),
        (1.0, "{{ reReplaceAll \"(a)b\" \"x$1\" \"ab\" }}", Ok("xa")),
        (1.0, "{{ humanize 0.0 }}:{{ humanize 1.0 }}:{{ humanize 1234567.0 }}:{{ humanize .12 }}:", Ok("0:1:1.235M:120m:")),
        (1.0, "{{ humanize \"0.0\" }}:{{ humanize \"1.0\" }}:{{ humanize \"1234567.0\" }}:{{ humanize \".12\" }}:", Ok("0:1:1.235M:120m:")),
        (1.0, "{{ humanize \"one\" }}", Err("error executing template test: template: test: executing \"test\": error calling humanize: strconv.ParseFloat: parsing \"one\": invalid syntax")),
        (1.0, "{{ humanize 0 }}:{{ humanize -1 }}:{{ humanize 1 }}:{{ humanize 1234567 }}:{{ humanize 9223372036854775807 }}:", Ok("0:-1:1:1.235M:9.223E:")),
        (1.0, "{{ humanize1024 0.0 }}:{{ humanize1024 1.0 }}:{{ humanize1024 1048576.0 }}:{{ humanize1024 .12 }}:", Ok("0:1:1Mi:0.12:")),
        (1.0, "{{ humanize1024 \"0.0\" }}:{{ humanize1024 \"1.0\" }}:{{ humanize1024 \"1048576.0\" }}:{{ humanize1024 \".12\" }}:", Ok("0:1:1Mi:0.12:")),
        (1.0, "{{ humanize1024 \"one\" }}", Err("error executing template test: template: test: executing \"test\": error calling humanize1024: strconv.ParseFloat: parsing \"one\": invalid syntax")),
        (1.0, "{{ humanize1024 0 }}:{{ humanize1024 -1 }}:{{ humanize1024 1 }}:{{ humanize1024 1234567 }}:{{ humanize1024 9223372036854775807 }}:", Ok("0:-1:1:1.177Mi:8Ei:")),
        (1.0, "{{ humanizeDuration 0 }}:{{ humanizeDuration 1 }}:{{ humanizeDuration 60 }}:{{ humanizeDuration 3600 }}:{{ humanizeDuration 86400 }}:{{ humanizeDuration 90000 }}:{{ humanizeDuration -183845 }}:{{ humanizeDuration 899.99 }}:", Ok("0s:1s:1m 0s:1h 0m 0s:1d 0h 0m 0s:1d 1h 0m 0s:-2d 3h 4m 5s:14m 59s:")),
        (1.0, "{{ humanizeDuration \"0\" }}:{{ humanizeDuration \"1\" }}:{{ humanizeDuration \"60\" }}:{{ humanizeDuration \"3600\" }}:{{ humanizeDuration \"86400\" }}:", Ok("0s:1s:1m 0s:1h 0m 0s:1d 0h 0m 0s:")),
        (1.0, "{{ humanizeDuration .1 }}:{{ humanizeDuration .0001 }}:{{ humanizeDuration .12345 }}:{{ humanizeDuration 60.1 }}:{{ humanizeDuration 60.5 }}:{{ humanizeDuration 1.2345 }}:{{ humanizeDuration 12.345 }}:", Ok("100ms:100us:123.5ms:1m 0s:1m 0s:1.234s:12.35s:")),
        (1.0, "{{ humanizeDuration \".1\" }}:{{ humanizeDuration \".0001\" }}:{{ humanizeDuration \".12345\" }}:{{ humanizeDuration \"60.1\" }}:{{ humanizeDuration \"1.2345\" }}:{{ humanizeDuration \"12.345\" }}:", Ok("100ms:100us:123.5ms:1m 0s:1.234s:12.35s:")),
        (1.0, "{{ humanizeDuration \"one\" }}", Err("error executing template test: template: test: executing \"test\": error calling humanizeDuration: strconv.ParseFloat: parsing \"one\": invalid syntax")),
        (1.0, "{{ humanizeDuration 0 }}:{{ humanizeDuration -1 }}:{{ humanizeDuration 1 }}:{{ humanizeDuration 1234567 }}:", Ok("0s:-1s:1s:14d 6h 56m 7s:")),
        (1.0, "{{ range (args \"+Inf\" \"-Inf\" \"NaN\") }}{{ humanize . }}:{{ humanize1024 . }}:{{ humanizeDuration . }}:{{ humanizeTimestamp . }}:{{ end }}", Ok("+Inf:+Inf:+Inf:+Inf:-Inf:-Inf:-Inf:-Inf:NaN:NaN:NaN:NaN:")),
        (1.0, "{{ -0.22222 | humanizePercentage }}:{{ 0.0 | humanizePercentage }}:{{ 0.1234567 | humanizePercentage }}:{{ 1.23456 | humanizePercentage }}", Ok("-22.22%:0%:12.35%:123.5%")),
        (1.0, "{{ humanizePercentage 0 }}:{{ humanizePercentage -1 }}:{{ humanizePercentage 1 }}:{{ humanizePercentage 1234567 }}:{{ humanizePercentage 9223372036854775807 }}:", Ok("0%:-100%:100%:1.235e+08%:9.223e+20%:")),
        (1.0, "{{ \"-0.22222\" | humanizePercentage }}:{{ \"0.0\" | humanizePercentage }}:{{ \"0.1234567\" | humanizePercentage }}:{{ \"1.23456\" | humanizePercentage }}", Ok("-22.22%:0%:12.35%:123.5%")),
        (1.0, "{{ \"one\" | humanizePercentage }}", Err("error executing template test: template: test: executing \"test\": error calling humanizePercentage: strconv.ParseFloat: parsing \"one\": invalid syntax")),
        (1.0, "{{ humanizeTimestamp 0 }}:{{ humanizeTimestamp -1 }}:{{ humanizeTimestamp 1 }}:{{ humanizeTimestamp 1234567 }}:{{ humanizeTimestamp 9223372036 }}:", Ok("1970-01-01 00:00:00 +0000 UTC:1969-12-31 23:59:59 +0000 UTC:1970-01-01 00:00:01 +0000 UTC:1970-01-15 06:56:07 +0000 UTC:2262-04-11 23:47:16 +0000 UTC:")),
        (1.0, "{{ humanizeTimestamp -9223372036854775808 }}", Err("error executing template test: template: test: executing \"test\": error calling humanizeTimestamp: -9.223372036854776e+18 cannot be represented as a nanoseconds timestamp since it overflows int64")),
        (1.0, "{{ humanizeTimestamp 9223372036854775807 }}", Err("error executing template test: template: test: executing \"test\": error calling humanizeTimestamp: 9.223372036854776e+18 cannot be represented as a nanoseconds timestamp since it overflows int64")),
        (1.0, "{{ 1435065584.128 | humanizeTimestamp }}", Ok("2015-06-23 13:19:44.128 +0000 UTC")),
        (1.0, "{{ \"1435065584.128\" | humanizeTimestamp }}", Ok("2015-06-23 13:19:44.128 +0000 UTC")),
        (1.0, "{{ (1435065584.128 | toTime).Format \"2006\" }}", Ok("2015")),
        (1.0, "{{ (\"1435065584.128\" | toTime).Format \"2006\" }}", Ok("2015")),
        (1.0, "{{ (1800 | toDuration).String }}", Ok("30m0s")),
        (1.0, "{{ (\"1800\" | toDuration).String }}", Ok("30m0s")),
        (1.0, "{{ now }}", Ok("1.353755652e+09")),
        (1.0, "{{ (now | toTime).Format \"Mon Jan 2 15:04:05 2006\" }}", Ok("Sat Nov 24 11:14:12 2012")),
        (1.0, "{{ (\"-30m\" | parseDuration | toDuration | (now | toTime).Add).UnixMilli }}", Ok("1353753852000")),
        (1.0, "{{ \"aa bb CC\" | title }}", Ok("Aa Bb CC")),
        (1.0, "{{ \"aa bb CC\" | toUpper }}", Ok("AA BB CC")),
        (1.0, "{{ \"aA bB CC\" | toLower }}", Ok("aa bb cc")),
        (1.0, "{{ match \"a+\" \"aa\" }} {{ match \"a+\" \"b\" }}", Ok("true false")),
        (1.0, "{{ graphLink \"up\" }}", Ok("/graph?g0.expr=up&g0.tab=0")),
        (1.0, "{{ tableLink \"up\" }}", Ok("/graph?g0.expr=up&g0.tab=1")),
        (1.0, "{{ pathPrefix }}", Ok("/path/prefix")),
        (1.0, "{{ externalURL }}", Ok("http://testhost:9090/path/prefix")),
        (1.0, "{{ printf \"%0.2f\" (parseDuration \"1h2m10ms\") }}", Ok("3720.01")),
        (1.0, "{{ printf \"%0.2f\" (parseDuration \"-1h2m10ms\") }}", Ok("-3720.01")),
        (1.0, "{{ humanizeDuration 9223372036854775807 }}", Ok("-106751991167300d -15h -30m -8s")),
    ]);
}

/// `$value` printed bare, with `print` and with `%v`, as Go prints a float64.
#[test]
fn value_prints_as_go_prints_a_float64() {
    run(&[
        (1.0, "{{ $value }}|{{ .Value }}|{{ print $value }}|{{ printf \"%v\" $value }}", Ok("1|1|1|1")),
        (1.5, "{{ $value }}|{{ .Value }}|{{ print $value }}|{{ printf \"%v\" $value }}", Ok("1.5|1.5|1.5|1.5")),
        (1e21, "{{ $value }}|{{ .Value }}|{{ print $value }}|{{ printf \"%v\" $value }}", Ok("1e+21|1e+21|1e+21|1e+21")),
        (1000000.0, "{{ $value }}|{{ .Value }}|{{ print $value }}|{{ printf \"%v\" $value }}", Ok("1e+06|1e+06|1e+06|1e+06")),
        (123456.0, "{{ $value }}|{{ .Value }}|{{ print $value }}|{{ printf \"%v\" $value }}", Ok("123456|123456|123456|123456")),
        (0.00001, "{{ $value }}|{{ .Value }}|{{ print $value }}|{{ printf \"%v\" $value }}", Ok("1e-05|1e-05|1e-05|1e-05")),
        (0.0001, "{{ $value }}|{{ .Value }}|{{ print $value }}|{{ printf \"%v\" $value }}", Ok("0.0001|0.0001|0.0001|0.0001")),
        (-0.5, "{{ $value }}|{{ .Value }}|{{ print $value }}|{{ printf \"%v\" $value }}", Ok("-0.5|-0.5|-0.5|-0.5")),
        (0.0, "{{ $value }}|{{ .Value }}|{{ print $value }}|{{ printf \"%v\" $value }}", Ok("0|0|0|0")),
        (-0.0, "{{ $value }}|{{ .Value }}|{{ print $value }}|{{ printf \"%v\" $value }}", Ok("-0|-0|-0|-0")),
        (f64::INFINITY, "{{ $value }}|{{ .Value }}|{{ print $value }}|{{ printf \"%v\" $value }}", Ok("+Inf|+Inf|+Inf|+Inf")),
        (f64::NEG_INFINITY, "{{ $value }}|{{ .Value }}|{{ print $value }}|{{ printf \"%v\" $value }}", Ok("-Inf|-Inf|-Inf|-Inf")),
        (f64::NAN, "{{ $value }}|{{ .Value }}|{{ print $value }}|{{ printf \"%v\" $value }}", Ok("NaN|NaN|NaN|NaN")),
        (0.1, "{{ $value }}|{{ .Value }}|{{ print $value }}|{{ printf \"%v\" $value }}", Ok("0.1|0.1|0.1|0.1")),
        (1e-7, "{{ $value }}|{{ .Value }}|{{ print $value }}|{{ printf \"%v\" $value }}", Ok("1e-07|1e-07|1e-07|1e-07")),
        (123456789.0, "{{ $value }}|{{ .Value }}|{{ print $value }}|{{ printf \"%v\" $value }}", Ok("1.23456789e+08|1.23456789e+08|1.23456789e+08|1.23456789e+08")),
        (2.5e-5, "{{ $value }}|{{ .Value }}|{{ print $value }}|{{ printf \"%v\" $value }}", Ok("2.5e-05|2.5e-05|2.5e-05|2.5e-05")),
        (1e100, "{{ $value }}|{{ .Value }}|{{ print $value }}|{{ printf \"%v\" $value }}", Ok("1e+100|1e+100|1e+100|1e+100")),
        (5e-324, "{{ $value }}|{{ .Value }}|{{ print $value }}|{{ printf \"%v\" $value }}", Ok("5e-324|5e-324|5e-324|5e-324")),
        (1.7976931348623157e308, "{{ $value }}|{{ .Value }}|{{ print $value }}|{{ printf \"%v\" $value }}", Ok("1.7976931348623157e+308|1.7976931348623157e+308|1.7976931348623157e+308|1.7976931348623157e+308")),
        (0.30000000000000004, "{{ $value }}|{{ .Value }}|{{ print $value }}|{{ printf \"%v\" $value }}", Ok("0.30000000000000004|0.30000000000000004|0.30000000000000004|0.30000000000000004")),
        (100.0, "{{ $value }}|{{ .Value }}|{{ print $value }}|{{ printf \"%v\" $value }}", Ok("100|100|100|100")),
        (-1234567.125, "{{ $value }}|{{ .Value }}|{{ print $value }}|{{ printf \"%v\" $value }}", Ok("-1.234567125e+06|-1.234567125e+06|-1.234567125e+06|-1.234567125e+06")),
    ]);
}

/// Number, string and character literals, as Go's parser types and unquotes them.
#[test]
fn literals() {
    run(&[
        (1.0, "{{ 1.0 }} {{ 2 }} {{ -0.0 }} {{ 1e100 }} {{ 3.0e-10 }} {{ -5 }} {{ +7 }}", Ok("1 2 -0 1e+100 3e-10 -5 7")),
        (1.0, "{{ .5 }} {{ 5. }} {{ 1e3 }} {{ 0x1F }} {{ 017 }} {{ 0o17 }} {{ 0b101 }} {{ 1_000 }} {{ -0x10 }}", Ok("0.5 5 1000 31 15 15 5 1000 -16")),
        (1.0, "{{ 'a' }} {{ '\\n' }} {{ '\\x41' }} {{ '\\u00e9' }}", Ok("97 10 65 233")),
        (1.0, "{{ \"\\x41\\u00e9\\t\\\"q\\\"\" }} {{ `raw\\n$1` }} {{ \"\\u00e9\\U0001F600\\101\\\\\" }}", Ok("Aé\t\"q\" raw\\n$1 é😀A\\")),
        (1.0, "{{ \"abc\\\\\" }}|{{ `a\\` }}|{{ \"\\\\\\\"\" }}", Ok("abc\\|a\\|\\\"")),
        (1.0, "{{ true }} {{ false }} {{ \"{\" }}{{ \"}\" }} {{ \"{{\" }}", Ok("true false {} {{")),
        (1.0, "a{ {{- \"b\" }}", Ok("a{b")),
        (1.0, "{{ 9223372036854775807 }} {{ -9223372036854775808 }}", Ok("9223372036854775807 -9223372036854775808")),
    ]);
}

/// `printf`'s verbs, flags, widths, precisions and argument errors, as Go's `fmt`.
#[test]
fn printf_as_go_fmt() {
    run(&[
        (1.0, "{{ printf \"%d %s %v %5.2f|%-6s|%x %q\" 5 \"a\" 1.5 3.14159 \"ab\" 255 \"hi\" }}", Ok("5 a 1.5  3.14|ab    |ff \"hi\"")),
        (1.0, "{{ printf \"%d\" 1.5 }}|{{ printf \"%s\" }}|{{ printf \"%d\" 1 2 }}", Ok("%!d(float64=1.5)|%!s(MISSING)|1%!(EXTRA int=2)")),
        (1.0, "{{ printf \"%.2f\" 2.005 }} {{ printf \"%.1f\" 0.25 }} {{ printf \"%.0f\" 2.5 }} {{ printf \"%.0f\" 3.5 }} {{ printf \"%.2f\" 1.005 }} {{ printf \"%.3g\" 1234.5678 }}", Ok("2.00 0.2 2 4 1.00 1.23e+03")),
        (1.0, "{{ printf \"%e|%E|%g|%G|%.3e|%10.3f|%-10.2f|%+.1f|%08.3f|% .2f\" 123456.789 0.000123 1e21 1e-7 9.9999 3.14159 2.5 3.0 -3.14159 1.0 }}", Ok("1.234568e+05|1.230000E-04|1e+21|1E-07|1.000e+01|     3.142|2.50      |+3.0|-003.142| 1.00")),
        (1.0, "{{ printf \"%v %v %v %v %v\" 1e6 1e20 1e21 123456789.0 0.000012345 }}", Ok("1e+06 1e+20 1e+21 1.23456789e+08 1.2345e-05")),
        (1.0, "{{ printf \"%5d|%-5d|%05d|%+d|%x|%X|%o|%b|%#x|%c|%q|%U\" 42 42 42 42 255 255 8 5 255 65 65 65 }}", Ok("   42|42   |00042|+42|ff|FF|10|101|0xff|A|'A'|U+0041")),
        (1.0, "{{ printf \"%t %v %s\" true false true }}", Ok("true false %!s(bool=true)")),
        (1.0, "{{ printf \"%6.2f%%\" 12.345 }}", Ok(" 12.35%")),
        (1.0, "{{ printf \"%.3s|%5s|%-5s|%05s\" \"abcdef\" \"ab\" \"ab\" \"ab\" }}", Ok("abc|   ab|ab   |000ab")),
        (1.0, "{{ printf \"%v\" nil }}", Ok("<nil>")),
        (1.0, "{{ printf \"%-8s|%8.3f|\" \"ab\" 3.14159 }}", Ok("ab      |   3.142|")),
        (1.0, "{{ printf \"%08.3e\" -1234.5 }} {{ printf \"%+e\" 0.0 }} {{ printf \"%g\" 100000.0 }} {{ printf \"%g\" 1000000.0 }} {{ printf \"%.2g\" 123.0 }} {{ printf \"%.10g\" 1.0 }} {{ printf \"%G\" 1e-10 }}", Ok("-1.234e+03 +0.000000e+00 100000 1e+06 1.2e+02 1 1E-10")),
        (1.0, "{{ printf \"%6.1f|%-6.1f|%06.1f\" -2.25 -2.35 -2.45 }}", Ok("  -2.2|-2.4  |-002.5")),
        (1.0, "{{ printf \"%v %.3v %10.4v\" 3.14159 3.14159 3.14159 }}", Ok("3.14159 3.14      3.142")),
        (1.0, "{{ printf \"%.0f %.0f %.0f %.0f %.1f %.1f %.2f\" 0.5 1.5 -0.5 -2.5 0.05 0.15 0.125 }}", Ok("0 2 -0 -2 0.1 0.1 0.12")),
        (1.0, "{{ printf \"%.3f %.3f %.4g %.4g %.4g\" 1.0005 2.0005 1.00005 1234.5 0.00012345 }}", Ok("1.000 2.001 1 1234 0.0001234")),
        (1.0, "{{ printf \"%.15g %.17g %.20f\" 0.1 0.1 0.1 }}", Ok("0.1 0.10000000000000001 0.10000000000000000555")),
        (1.0, "{{ printf \"%g %g %g %g\" 1e-5 1e-4 123456789.0 0.1 }}", Ok("1e-05 0.0001 1.23456789e+08 0.1")),
        (1.0, "{{ printf \"%e %e\" 0.0 5e-324 }} {{ printf \"%f\" 1e300 }}", Ok("0.000000e+00 4.940656e-324 1000000000000000052504760255204420248704468581108159154915854115511802457988908195786371375080447864043704443832883878176942523235360430575644792184786706982848387200926575803737830233794788090059368953234970799945081119038967640880074652742780142494579258788820056842838115669472196386865459400540160.000000")),
        (1.0, "{{ printf \"%[2]d %[1]d\" 1 2 }} {{ printf \"%[1]d %[1]x %d\" 10 }} {{ printf \"%[3]d\" 1 }}", Ok("2 1 10 a %!d(MISSING) %!d(BADINDEX)")),
        (1.0, "{{ printf \"%*d|%-*d|%.*f\" 5 1 4 2 2 3.14159 }}", Ok("    1|2   |3.14")),
        (1.0, "{{ printf \"%!\" }} {{ printf \"%\" }} {{ printf \"%z\" 1 }}", Ok("%!!(MISSING) %!(NOVERB) %!z(int=1)")),
        (1.0, "{{ printf \"%q %q\" \"a\\\"b\\n\" \"é\\x01\" }}", Ok("\"a\\\"b\\n\" \"é\\x01\"")),
        (1.0, "{{ printf \"%05t|%#v|%+v|%#v|%+d|%+v\" true \"x\" 1.5 1.0 5 5 }}", Ok("0true|\"x\"|1.5|1|+5|5")),
        (1.0, "{{ printf \"%.2f\" \"1.5\" }} {{ printf \"%T %T %T\" $value $labels . }}", Ok("%!f(string=1.) float64 map[string]string struct { Labels map[string]string; ExternalLabels map[string]string; ExternalURL string; Value interface {} }")),
        (1.0, "{{ printf \"%s %v\" $labels $value }} {{ printf \"%s\" (args 1 \"x\") }} {{ printf \"%v\" (query \"up\" | first) }}", Ok("map[instance:node1:9100 job:node severity:critical] 1 map[arg0:%!s(int=1) arg1:x] &{map[__name__:up instance:b:9100 job:node] 1}")),
        (1.0, "{{ printf \"%s|%v|%x\" (toDuration 1.5) (toTime 0) (toDuration 2) }}", Ok("1.5s|1970-01-01 00:00:00 +0000 UTC|3273")),
        (1.0, "{{ printf \"%x %X %x\" \"hi\" \"hi\" 255 }}", Ok("6869 6869 ff")),
        (1.0, "{{ print \"a\" 1 2 \"b\" 3.5 true }}|{{ println \"a\" 1 }}|{{ print $labels }}|{{ print }}|{{ print nil 1 }}", Ok("a1 2b3.5 true|a 1\n|map[instance:node1:9100 job:node severity:critical]||<nil> 1")),
        (1.0, "{{ 12.5 | printf \"%.1f\" }} {{ 1 | printf \"%d %d\" 2 }} {{ \"x\" | printf \"%s-%s\" \"y\" }}", Ok("12.5 2 1 y-x")),
    ]);
}

/// Every function with more inputs than Prometheus' own tests try.
#[test]
fn functions() {
    run(&[
        (1.0, "{{ humanize 999.99 }} {{ humanize 999.999 }} {{ humanize 1000 }} {{ humanize 0.001 }} {{ humanize 0.0009999 }} {{ humanize -0.5 }} {{ humanize 1e-30 }} {{ humanize 1e30 }}", Ok("1000 1000 1k 1m 999.9u -500m 1e-06y 1e+06Y")),
        (1.0, "{{ humanize1024 1023 }} {{ humanize1024 1024 }} {{ humanize1024 1.5 }} {{ humanize1024 -1 }} {{ humanize1024 -2048 }} {{ humanize1024 1e30 }}", Ok("1023 1ki 1.5 -1 -2ki 8.272e+05Yi")),
        (1.0, "{{ humanizeDuration 59.999 }} {{ humanizeDuration 0.9999 }} {{ humanizeDuration -0.5 }} {{ humanizeDuration 1e-12 }} {{ humanizeDuration 31536000 }}", Ok("60s 999.9ms -500ms 1ps 365d 0h 0m 0s")),
        (1.0, "{{ humanizeTimestamp -0.5 }} {{ humanizeTimestamp 1e9 }} {{ humanizeTimestamp 253402300800 }} {{ humanizeTimestamp 1435065584.1289 }}", Err("error executing template test: template: test: executing \"test\": error calling humanizeTimestamp: 2.534023008e+11 cannot be represented as a nanoseconds timestamp since it overflows int64")),
        (1.0, "{{ now | toTime }} {{ toTime 1435065584.1289 }} {{ now | humanizeTimestamp }}", Ok("2012-11-24 11:14:12 +0000 UTC 2015-06-23 13:19:44.128 +0000 UTC 2012-11-24 11:14:12 +0000 UTC")),
        (1.0, "{{ (1435065584.128 | toTime).Format \"2006-01-02T15:04:05Z07:00 .999 ,000 pm PM 3 03 _2 __2 002 Monday January 06 -0700 -07:00 Month\" }}", Ok("2015-06-23T13:19:44Z .128 ,128 pm PM 1 01 23 174 174 Tuesday June 15 +0000 +00:00 Month")),
        (1.0, "{{ $t := now | toTime }}{{ $t.Year }} {{ $t.Month }} {{ $t.Day }} {{ $t.Unix }} {{ $t.Weekday }} {{ $t.YearDay }} {{ $t.Hour }} {{ $t.UnixMilli }}", Ok("2012 November 24 1353755652 Saturday 329 11 1353755652000")),
        (1.0, "{{ ((toTime 100).Sub (toTime 40)).String }} {{ (toTime 100).After (toTime 40) }} {{ (toTime 100).Before (toTime 40) }} {{ ((now | toTime).Add 3600000000000).Format \"15:04\" }}", Ok("1m0s true false 12:14")),
        (1.0, "{{ $d := toDuration 90.5 }}{{ $d.Seconds }} {{ $d.Minutes }} {{ $d }} {{ toDuration 0.0015 }} {{ toDuration 3661.5 }} {{ toDuration -90 }} {{ toDuration 0 }} {{ toDuration 0.0000005 }}", Ok("90.5 1.5083333333333333 1m30.5s 1.5ms 1h1m1.5s -1m30s 0s 500ns")),
        (1.0, "{{ parseDuration \"0\" }} {{ parseDuration \"1y2w3d\" }} {{ parseDuration \"90s\" }} {{ parseDuration \"1h30m\" }} {{ parseDuration \"100ms\" }} {{ parseDuration \"-5m\" }}", Ok("0 3.30048e+07 90 5400 0.1 -300")),
        (1.0, "{{ title \"hello-world foo_bar e.g. 3rd x1y don't foo.bar-baz_qux 1st it's x.y:z\" }}", Ok("Hello-World Foo_bar E.g. 3Rd X1y Don't Foo.bar-Baz_qux 1St It's X.y:z")),
        (1.0, "{{ title \"ǆemal ßtraße ñandú über\" }} {{ toUpper \"straße ǆ\" }} {{ toLower \"İSTANBUL ǅ\" }}", Ok("ǅemal Sstraße Ñandú Über STRAßE Ǆ istanbul ǆ")),
        (1.0, "{{ match \"^b\" \"ab\" }} {{ match \"\\\\d+\" \"abc123\" }} {{ match \"(?i)ERR\" \"error\" }}", Ok("false true true")),
        (1.0, "{{ reReplaceAll \"(.*):.*\" \"$1\" $labels.instance }} {{ reReplaceAll \"a\" \"$$\" \"banana\" }} {{ reReplaceAll \"^(.+?)\\\\.(.*)$\" \"${1}_$2\" \"a.b.c\" }} {{ reReplaceAll \"(?P<n>b)\" \"[$n]\" \"abc\" }}", Ok("node1 b$n$n$ a_b.c a[b]c")),
        (1.0, "{{ urlQueryEscape \"a b&c=d/é\" }} {{ urlQueryEscape \"~!@#$%^&*()_+-=[]{}|;':\\\",./<>? ü\" }}", Ok("a+b%26c%3Dd%2F%C3%A9 ~%21%40%23%24%25%5E%26%2A%28%29_%2B-%3D%5B%5D%7B%7D%7C%3B%27%3A%22%2C.%2F%3C%3E%3F+%C3%BC")),
        (1.0, "{{ graphLink \"sum by (job) (rate(http_requests_total{code=~\\\"5..\\\"}[5m]))\" }}", Ok("/graph?g0.expr=sum+by+%28job%29+%28rate%28http_requests_total%7Bcode%3D~%225..%22%7D%5B5m%5D%29%29&g0.tab=0")),
        (1.0, "{{ stripDomain \"host\" }} {{ stripDomain \"host:\" }} {{ stripDomain \":9100\" }} {{ stripDomain \"[::1]\" }} {{ stripDomain \"a.b.c:80\" }} {{ stripDomain \"1.2.3.4.5\" }} {{ stripDomain \"node-1.prod.example.com:9100\" }}", Ok("host host :9100 [::1] a:80 1 node-1:9100")),
        (1.0, "{{ stripPort \"host:\" }} {{ stripPort \":9100\" }} {{ stripPort \"[::1]\" }} {{ stripPort \"a:b:c\" }} {{ stripPort \"[x]y:1\" }}", Ok("host  [::1] a:b:c [x]y:1")),
        (1.0, "{{ html \"<a href='x'>&\\\"\" }} {{ js \"it's <b>\\\"x\\\"=\" }} {{ urlquery \"a b?\" }} {{ html 1 2 \"<\" }} {{ urlquery \"a\" \"b\" }}", Ok("&lt;a href=&#39;x&#39;&gt;&amp;&#34; it\\'s \\u003Cb\\u003E\\\"x\\\"\\u003D a+b%3F 1 2&lt; ab")),
        (1.0, "{{ html nil }} {{ urlquery (query \"up\" | first) }} {{ js nil 1 \"x\" 2 }} {{ len (html nil) }}", Ok("&lt;no value&gt; %7Bmap%5B__name__%3Aup+instance%3Ab%3A9100+job%3Anode%5D+1%7D \\u003Cno value\\u003E1x2 16")),
        (1.0, "{{ index $labels \"instance\" }} {{ index $labels \"nope\" }}|{{ index .Labels \"job\" }} {{ index (args 1) \"arg0\" }} {{ index \"abc\" 1 }} {{ (index (query \"up\") 1).Labels.instance }}", Ok("node1:9100 |node 1 98 a:9100")),
        (1.0, "{{ len $labels }} {{ len \"abc\" }} {{ len (query \"up\") }} {{ len $labels.nope }} {{ query \"up\" | len }}", Ok("3 3 2 0 2")),
        (1.0, "{{ slice \"abcdef\" 1 3 }} {{ slice \"abcdef\" 2 }} {{ slice \"abc\" }}", Ok("bc cdef abc")),
        (1.0, "{{ eq \"a\" \"b\" \"a\" }} {{ ne 1 2 }} {{ lt 1 2 }} {{ le 2 2 }} {{ gt \"b\" \"a\" }} {{ ge 1.5 2.5 }} {{ eq $labels.nope \"\" }} {{ eq .Labels.severity \"critical\" }} {{ eq (toTime 1) (toTime 1) }} {{ eq nil nil }}", Ok("true true true true true false true true false true")),
        (1.0, "{{ or false 0 \"x\" }} {{ and 1 2 }} {{ and 1 0 2 }} {{ not 0 }} {{ not $value }} {{ or 0 \"\" }}", Ok("x 2 0 true false ")),
    ]);
}

/// Variables and their scopes, `if`, `with`, `range`, `define`, `template`, `block`, comments and trim markers.
#[test]
fn control_flow_and_variables() {
    run(&[
        (1.0, "{{ range $k, $v := $labels }}{{$k}}={{$v}},{{ end }}", Ok("instance=node1:9100,job=node,severity=critical,")),
        (1.0, "{{ range $v := $labels }}{{$v}},{{ end }}|{{ range $labels }}{{.}},{{ end }}", Ok("node1:9100,node,critical,|node1:9100,node,critical,")),
        (1.0, "{{ range $i, $e := query \"up\" }}{{$i}}:{{$e.Labels.instance}} {{ end }}", Ok("0:b:9100 1:a:9100 ")),
        (1.0, "{{ range $i := 3 }}{{ $i }}{{ end }}|{{ range $labels.nope }}x{{ end }}done", Err("error executing template test: template: test: executing \"test\": range can't iterate over ")),
        (1.0, "{{ range query \"empty\" }}x{{ else }}empty{{ end }} {{ range query \"up\" }}x{{ else }}empty{{ end }}", Ok("empty xx")),
        (1.0, "{{ $x := 1 }}{{ if true }}{{ $x := 2 }}{{ end }}{{ $x }}", Ok("1")),
        (1.0, "{{ $x := 1 }}{{ with true }}{{ $x := 2 }}{{ $x }}{{ end }}{{ $x }}", Ok("21")),
        (1.0, "{{ $x := 1 }}{{ if true }}{{ $x = 3 }}{{ if true }}{{ $x = 4 }}{{ end }}{{ end }}{{ $x }}", Ok("4")),
        (1.0, "{{ $x := 1 }}{{ range $i := 2 }}{{ $x := $i }}{{ $x }}{{ end }}{{ $x }}", Ok("011")),
        (1.0, "{{ range $i, $e := query \"up\" }}{{ $y := $i }}{{ if true }}{{ $y = 9 }}{{ end }}{{ $y }}{{ end }}", Ok("99")),
        (1.0, "{{ $a := \"x\" }}{{ if $a := \"y\" }}{{ $a }}{{ end }}{{ $a }}", Ok("yx")),
        (1.0, "{{ $x := 5 }}{{ $x = 6 }}{{ $x }}", Ok("6")),
        (1.0, "{{ if and (eq $labels.job \"node\") (gt $value 0.5) }}big{{ else if eq $labels.job \"x\" }}x{{ else }}small{{ end }}", Ok("big")),
        (1.0, "{{ $v := 3 }}{{ with $v }}{{ . }}{{ end }}{{ with $w := 0 }}yes{{ else }}no{{ end }}", Ok("3no")),
        (1.0, "{{ with $labels.nope }}set{{ else with $labels.job }}job={{ . }}{{ end }}", Ok("job=node")),
        (1.0, "{{ with $labels.job }}{{ . }}{{ $.Labels.severity }}{{ end }} {{ $.Value }} {{ range $labels }}{{ $.Labels.job }}{{ end }}", Ok("nodecritical 1 nodenodenode")),
        (1.0, "{{ block \"b\" . }}block {{ .Labels.job }}{{ end }}", Ok("block node")),
        (1.0, "{{ define \"a\" }}A{{ end }}{{ define \"b\" }}B{{ template \"a\" }}{{ end }}{{ template \"b\" }}{{ template \"a\" . }}", Ok("BAA")),
        (1.0, "{{ define \"v\" }}{{ . }}{{ end }}{{ template \"v\" $value }}|{{ template \"v\" }}", Ok("1|<no value>")),
        (1.0, "{{ if not (query \"empty\") }}no data{{ end }}", Ok("no data")),
        (1.0, "{{ with (query \"up\") }}{{ range . }}{{ .Labels.instance }};{{ end }}{{ end }}", Ok("b:9100;a:9100;")),
        (1.0, "{{ $q := query \"up\" }}{{ len $q }} {{ (index $q 0).Value }} {{ (index $q 1).Labels.instance }}", Ok("2 1 a:9100")),
        (1.0, "{{ with query \"up\" | first }}{{ .Labels.instance }}={{ .Value }}{{ end }} {{ (query \"up\" | first).Value | humanize }}", Ok("b:9100=1 1")),
        (1.0, "{{ if eq $labels.severity \"critical\" -}}\n  CRIT\n{{- else -}}\n  other\n{{- end }}", Ok("CRIT")),
        (1.0, "{{- range $k, $v := $labels }}\n- {{ $k }}: {{ $v }}\n{{- end }}", Ok("\n- instance: node1:9100\n- job: node\n- severity: critical")),
        (1.0, "{{ $labels.instance\n  | toUpper }}", Ok("NODE1:9100")),
        (1.0, "{{- \"  trimmed  \" -}}   | {{- /* comment */ -}} |  {{ \"x\" }}", Ok("  trimmed  ||  x")),
        (1.0, "{{/* a comment */}}a{{- /* trimmed comment */ -}}  b", Ok("ab")),
        (1.0, "{{ \"a\" -}} {{- \"b\" }}  {{- \"c\" }} {{- \"a\" }}  {{ \"b\" -}}  x", Ok("abca  bx")),
        (1.0, " {{-3}} {{- 3}}", Ok(" -33")),
    ]);
}

/// Annotations as kube-prometheus, the node-exporter mixin and awesome-prometheus-alerts write them.
#[test]
fn real_world_annotations() {
    run(&[
        (12.3456, "{{ $labels.instance }} has {{ printf \"%.2f\" $value }}% free", Ok("node1:9100 has 12.35% free")),
        (0.4567, "{{ $value | humanizePercentage }} of the {{ $labels.job }}/{{ $labels.service }} targets in {{ $labels.namespace }} namespace are down.", Ok("45.67% of the node/ targets in  namespace are down.")),
        (0.95, "Kubelet '{{ $labels.node }}' is running at {{ $value | humanizePercentage }} of its Pod capacity.", Ok("Kubelet '' is running at 95% of its Pod capacity.")),
        (3.0, "Filesystem on {{ $labels.device }}, mounted on {{ $labels.mountpoint }}, at {{ $labels.instance }} has only {{ printf \"%.2f\" $value }}% available space left.", Ok("Filesystem on , mounted on , at node1:9100 has only 3.00% available space left.")),
        (7.9, "Disk is almost full (< 10% left)\n  VALUE = {{ $value }}\n  LABELS = {{ $labels }}", Ok("Disk is almost full (< 10% left)\n  VALUE = 7.9\n  LABELS = map[instance:node1:9100 job:node severity:critical]")),
        (1.0, "{{ range query \"up\" }}{{ .Labels.instance }} {{ .Value }}{{ end }}", Ok("b:9100 1a:9100 0")),
        (1.0, "{{ with query \"some_metric\" }}{{ . | first | value | humanize }}{{ end }}", Ok("123.5m")),
        (1.0, "{{ with printf \"node_uname_info{instance='%s'}\" $labels.instance | query }}{{ . | first | label \"instance\" }}{{ end }}", Ok("x")),
        (1.0, "https://grafana/d/x?var-instance={{ $labels.instance | urlquery }}", Ok("https://grafana/d/x?var-instance=node1%3A9100")),
        (1.0, "{{ $labels.instance | reReplaceAll \":.*\" \"\" }} {{ $labels.instance | stripPort }} ({{ $labels.instance | stripDomain }}) {{ $externalLabels.cluster }} {{ $externalURL }}", Ok("node1 node1 (node1:9100) eu1 http://testhost:9090/path/prefix")),
        (1.0, "{{ if eq $labels.severity \"critical\" }}Page{{ else if eq $labels.severity \"warning\" }}Ticket{{ else }}Info{{ end }}", Ok("Page")),
        (1.0, "{{ range $i, $s := query \"up\" | sortByLabel \"instance\" }}{{ if $i }}, {{ end }}{{ $s.Labels.instance }}={{ $s.Value }}{{ end }}", Ok("a:9100=0, b:9100=1")),
        (1.0, "{{ with $labels.pod }}pod={{ . }}{{ else }}no pod{{ end }}", Ok("no pod")),
        (1.0, "{{ len (query \"up\") }} targets, {{ with query \"empty\" }}some{{ else }}none{{ end }} empty", Ok("2 targets, none empty")),
        (1.0, "{{ .ExternalURL }}/alerts?search={{ urlQueryEscape .Labels.job }}", Ok("http://testhost:9090/path/prefix/alerts?search=node")),
        (1.0, "See {{ graphLink \"up == 0\" }} and {{ tableLink \"up\" }} at {{ externalURL }}", Ok("See /graph?g0.expr=up+%3D%3D+0&g0.tab=0 and /graph?g0.expr=up&g0.tab=1 at http://testhost:9090/path/prefix")),
        (2.5, "Prometheus {{$labels.namespace}}/{{$labels.pod}} has failed to evaluate {{ printf \"%.0f\" $value }} rules in the last 5m.", Ok("Prometheus / has failed to evaluate 2 rules in the last 5m.")),
        (1536000000.0, "{{ humanize $value }}B {{ $value | humanize1024 }}B", Ok("1.536GB 1.431GiB")),
        (93784.0, "{{ $value | humanizeDuration }}", Ok("1d 2h 3m 4s")),
        (1700000000.0, "{{ $value | humanizeTimestamp }}", Ok("2023-11-14 22:13:20 +0000 UTC")),
        (150.0, "{{ if gt $value 100.0 }}critical: {{ $value }}{{ else }}warning{{ end }}", Ok("critical: 150")),
        (0.0, "{{ if $value }}firing{{ else }}resolved{{ end }} {{ $value }}", Ok("resolved 0")),
        (42.424242, "Memory usage is {{ $value | humanize }}%\n LABELS = {{ $labels }}", Ok("Memory usage is 42.42%\n LABELS = map[instance:node1:9100 job:node severity:critical]")),
        (-3.25, "{{ $value }} {{ printf \"%.1f\" $value }} {{ humanize $value }} {{ humanizePercentage $value }}", Ok("-3.25 -3.2 -3.25 -325%")),
        (99.99999, "{{ printf \"%.2f\" $value }} {{ printf \"%.0f\" $value }} {{ humanize $value }}", Ok("100.00 100 100")),
    ]);
}

/// Parse and execution errors, with Prometheus' text (less Go's line:column and node in execution errors).
#[test]
fn errors_as_prometheus_reports_them() {
    run(&[
        (1.0, "{{ eq $value 1 }}", Err("error executing template test: template: test: executing \"test\": error calling eq: incompatible types for comparison: float64 and int")),
        (1.0, "{{ lt 1 2.0 }}", Err("error executing template test: template: test: executing \"test\": error calling lt: incompatible types for comparison: int and float64")),
        (1.0, "{{ query \"fail\" }}", Err("error executing template test: template: test: executing \"test\": error calling query: boom")),
        (1.0, "{{ with query \"fail\" }}x{{ end }}", Err("error executing template test: template: test: executing \"test\": error calling query: boom")),
        (1.0, "{{ parseDuration \"1x\" }}", Err("error executing template test: template: test: executing \"test\": error calling parseDuration: unknown unit \"x\" in duration \"1x\"")),
        (1.0, "{{ parseDuration \"5m1h\" }}", Err("error executing template test: template: test: executing \"test\": error calling parseDuration: not a valid duration string: \"5m1h\"")),
        (1.0, "{{ parseDuration \"\" }}", Err("error executing template test: template: test: executing \"test\": error calling parseDuration: empty duration string")),
        (1.0, "{{ parseDuration \"1.5h\" }}", Err("error executing template test: template: test: executing \"test\": error calling parseDuration: unknown unit \".\" in duration \"1.5h\"")),
        (1.0, "{{ reReplaceAll \"(\" \"x\" \"ab\" }}", Err("error executing template test: template: test: executing \"test\": error calling reReplaceAll: regexp: Compile(`(`): error parsing regexp: missing closing ): `(`")),
        (1.0, "{{ match \"a(\" \"x\" }}", Err("error executing template test: template: test: executing \"test\": error calling match: error parsing regexp: missing closing ): `a(`")),
        (1.0, "{{ len $value }}", Err("error executing template test: template: test: executing \"test\": error calling len: len of type float64")),
        (1.0, "{{ toUpper $value }}", Err("error executing template test: template: test: executing \"test\": wrong type for value; expected string; got float64")),
        (1.0, "{{ humanize }}", Err("error executing template test: template: test: executing \"test\": wrong number of args for humanize: want 1 got 0")),
        (1.0, "{{ humanize 1 2 }}", Err("error executing template test: template: test: executing \"test\": wrong number of args for humanize: want 1 got 2")),
        (1.0, "{{ $labels.nope.deeper }}", Err("error executing template test: template: test: executing \"test\": can't evaluate field deeper in type string")),
        (1.0, "{{ .Labels.foo \"x\" }}", Err("error executing template test: template: test: executing \"test\": foo is not a method but has arguments")),
        (1.0, "{{ template \"nope\" }}", Err("error executing template test: template: test: executing \"test\": template \"nope\" not defined")),
        (1.0, "{{ index (query \"up\") 5 }}", Err("error executing template test: template: test: executing \"test\": error calling index: index out of range: 5")),
        (1.0, "{{ index $labels 5 }}", Err("error executing template test: template: test: executing \"test\": error calling index: value has type int; should be string")),
        (1.0, "{{ index 5 1 }}", Err("error executing template test: template: test: executing \"test\": error calling index: can't index item of type int")),
        (1.0, "{{ slice \"abc\" 2 1 }}", Err("error executing template test: template: test: executing \"test\": error calling slice: invalid slice index: 2 > 1")),
        (1.0, "{{ slice (args 1 2 3).arg0 }}", Err("error executing template test: template: test: executing \"test\": error calling slice: can't slice item of type int")),
        (1.0, "{{ \"a\" \"b\" }}", Err("error executing template test: template: test: executing \"test\": can't give argument to non-function \"a\"")),
        (1.0, "{{ eq 1 }}", Err("error executing template test: template: test: executing \"test\": error calling eq: missing argument for comparison")),
        (1.0, "{{ and }}", Err("error executing template test: template: test: executing \"test\": wrong number of args for and: want at least 1 got 0")),
        (1.0, "{{ not 1 2 }}", Err("error executing template test: template: test: executing \"test\": wrong number of args for not: want 1 got 2")),
        (1.0, "{{ eq $labels $labels }}", Err("error executing template test: template: test: executing \"test\": error calling eq: non-comparable type map[instance:node1:9100 job:node severity:critical]: map[string]string")),
        (1.0, "{{ humanizePercentage \"abc\" }}", Err("error executing template test: template: test: executing \"test\": error calling humanizePercentage: strconv.ParseFloat: parsing \"abc\": invalid syntax")),
        (1.0, "{{ toTime \"x\" }}", Err("error executing template test: template: test: executing \"test\": error calling toTime: strconv.ParseFloat: parsing \"x\": invalid syntax")),
        (1.0, "{{ humanizeDuration (toDuration 5) }}", Err("error executing template test: template: test: executing \"test\": error calling humanizeDuration: can't convert *time.Duration to float")),
        (1.0, "{{ printf }}", Err("error executing template test: template: test: executing \"test\": wrong number of args for printf: want at least 1 got 0")),
        (1.0, "{{ call 1 }}", Err("error executing template test: template: test: executing \"test\": error calling call: non-function 1 of type int")),
        (1.0, "{{ nil }}", Err("error executing template test: template: test: executing \"test\": nil is not a command")),
        (1.0, "{{ undefinedfn 1 }}", Err("error parsing template test: template: test:1: function \"undefinedfn\" not defined")),
        (1.0, "{{ $undefined }}", Err("error parsing template test: template: test:1: undefined variable \"$undefined\"")),
        (1.0, "{{ end }}", Err("error parsing template test: template: test:1: unexpected {{end}}")),
        (1.0, "{{ else }}", Err("error parsing template test: template: test:1: unexpected {{else}}")),
        (1.0, "{{ if true }}x", Err("error parsing template test: template: test:1: unexpected EOF")),
        (1.0, "{{ if }}x{{ end }}", Err("error parsing template test: template: test:1: missing value for if")),
        (1.0, "{{ 1 | 2 }}", Err("error parsing template test: template: test:1: non executable command in pipeline stage 2")),
        (1.0, "{{ $x := }}", Err("error parsing template test: template: test:1: missing value for command")),
        (1.0, "{{ range $a, $b, $c := . }}{{ end }}", Err("error parsing template test: template: test:1: too many declarations in range")),
        (1.0, "{{ with $x, $y := . }}{{ end }}", Err("error parsing template test: template: test:1: too many declarations in with")),
        (1.0, "{{ \"unterminated }}", Err("error parsing template test: template: test:1: unterminated quoted string")),
        (1.0, "{{/* unclosed comment }}", Err("error parsing template test: template: test:1: unclosed comment")),
        (1.0, "{{/* c */ }}", Err("error parsing template test: template: test:1: comment ends before closing delimiter")),
        (1.0, "{{ /* not a comment */ }}", Err("error parsing template test: template: test:1: unexpected \"/\" in command")),
        (1.0, "{{ 1e400 }}", Err("error parsing template test: template: test:1: illegal number syntax: \"1e400\"")),
        (1.0, "{{ \"\\q\" }}", Err("error parsing template test: template: test:1: invalid syntax")),
        (1.0, "{{ 'ab' }}", Err("error parsing template test: template: test:1: malformed character constant: 'ab'")),
        (1.0, "{{ break }}", Err("error parsing template test: template: test:1: {{break}} outside {{range}}")),
        (1.0, "{{ .Foo | x }}", Err("error parsing template test: template: test:1: function \"x\" not defined")),
        (1.0, "line 1\nline 2 {{ bad }}", Err("error parsing template test: template: test:2: function \"bad\" not defined")),
    ]);
}

/// What gtmpl cannot run is refused with an error that names it, not
/// expanded differently from Prometheus.
#[test]
fn unsupported_constructs_are_refused_by_name() {
    run(&[
        (
            1.0,
            "{{ range query \"up\" }}{{ break }}{{ end }}",
            Err("error parsing template test: template: test:1: {{break}} is not supported"),
        ),
        (
            1.0,
            "{{ range query \"up\" }}{{ continue }}{{ end }}",
            Err("error parsing template test: template: test:1: {{continue}} is not supported"),
        ),
        (
            1.0,
            "{{ $n := 0 }}{{ range query \"up\" }}{{ $n = 1 }}{{ end }}{{ $n }}",
            Err("error parsing template test: template: test:1: assigning to $n inside a {{range}} \
                 it was declared outside of is not supported"),
        ),
        (
            1.0,
            "{{ 1i }}",
            Err("error parsing template test: template: test:1: complex numbers are not supported"),
        ),
        (
            1.0,
            "{{ 0x1p-2 }}",
            Err("error parsing template test: template: test:1: hexadecimal floating-point numbers are not supported"),
        ),
    ]);
}

/// Where the output differs from Prometheus', by design.
#[test]
fn documented_differences() {
    run(&[
        // Go prints a missing key of a map[string]any as "<no value>"; here
        // every missing map key reads as the empty string, which is right
        // for labels, the maps templates index.
        (1.0, "{{ (args 1).arg5 }}|{{ $labels.nope }}", Ok("|")),
        // Go prints the pointers of a query result's samples as addresses.
        (
            1.0,
            "{{ query \"up\" }}",
            Ok("[{map[__name__:up instance:b:9100 job:node] 1} {map[__name__:up instance:a:9100 job:node] 0}]"),
        ),
    ]);
}

#[test]
fn check_parses_without_running() {
    assert_eq!(
        template::check(&format!(
            "{PREAMBLE}{{{{ $labels.instance }}}} {{{{ query \"up\" | first }}}}"
        )),
        Ok(())
    );
    assert_eq!(template::check("plain"), Ok(()));
    assert_eq!(
        template::check("{{"),
        Err("template: __alert:1: unclosed action".to_owned())
    );
    assert_eq!(
        template::check("{{ $labels.instance }}"),
        Err("template: __alert:1: undefined variable \"$labels\"".to_owned())
    );
    assert_eq!(
        template::check("a\n{{ if true }}\nb"),
        Err("template: __alert:3: unexpected EOF".to_owned())
    );
    assert_eq!(
        template::check("{{ humanise 1 }}"),
        Err("template: __alert:1: function \"humanise\" not defined".to_owned())
    );
    // Only running finds a bad argument.
    assert_eq!(template::check("{{ humanize \"x\" }}"), Ok(()));
}

#[test]
fn error_value_is_what_the_alert_carries() {
    let err = template::expand(
        "__alert_Down",
        "{{ query \"x\" | first }}",
        &data(1.0),
        NOW_MS,
        &|_: &str, _: i64| Ok(vec![]),
    )
    .unwrap_err();
    assert_eq!(
        template::error_value(&err),
        "<error expanding template: error executing template __alert_Down: template: __alert_Down: \
         executing \"__alert_Down\": error calling first: first() called on vector with no elements>"
    );
}

#[test]
fn each_query_runs_once_at_the_evaluation_time() {
    let calls = RefCell::new(Vec::new());
    let querier = |q: &str, at_ms: i64| {
        calls.borrow_mut().push((q.to_owned(), at_ms));
        queries(q, at_ms)
    };
    let text = "{{ range query \"up\" }}{{ .Labels.instance }} {{ end }}\
                {{ with query \"other\" }}{{ . | first | value }}{{ end }} {{ len (query \"up\") }}";
    let out = template::expand("t", text, &data(1.0), NOW_MS, &querier).unwrap();
    assert_eq!(out, "b:9100 a:9100 0.123456 2");
    assert_eq!(
        calls.into_inner(),
        vec![("up".to_owned(), NOW_MS), ("other".to_owned(), NOW_MS)]
    );
}

#[test]
fn a_query_error_fails_the_expansion() {
    let err = template::expand(
        "t",
        "a {{ query \"fail\" }} b",
        &data(1.0),
        NOW_MS,
        &queries,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "error executing template t: template: t: executing \"t\": error calling query: boom"
    );
}

#[test]
fn queries_are_bounded() {
    let text = "{{ range $i := 100 }}{{ query (printf \"q%d\" $i) | len }}{{ end }}";
    let err = template::expand("t", text, &data(1.0), NOW_MS, &queries).unwrap_err();
    assert!(
        err.to_string().ends_with("runs more than 64 queries"),
        "{err}"
    );
}

/// A querier may itself expand templates (its own expansion does not
/// disturb the one that called it).
#[test]
fn expansions_nest() {
    let querier = |q: &str, at_ms: i64| {
        let inner = template::expand(
            "inner",
            "{{ query \"up\" | len }}",
            &data(2.0),
            at_ms,
            &queries,
        )
        .map_err(|e| e.to_string())?;
        Ok(vec![sample(&[("inner", inner.as_str()), ("q", q)], 5.0)])
    };
    let out = template::expand(
        "outer",
        "{{ with query \"x\" | first }}{{ .Labels.inner }} {{ .Labels.q }} {{ .Value }}{{ end }} {{ $value }}",
        &data(1.5),
        NOW_MS,
        &querier,
    )
    .unwrap();
    assert_eq!(out, "2 x 5 1.5");
}

/// The same text under two names keeps each name in its errors.
#[test]
fn names_stay_apart() {
    for name in ["__alert_A", "__alert_B"] {
        let err = template::expand(name, "{{ .Nope }}", &data(1.0), NOW_MS, &queries).unwrap_err();
        assert!(
            err.to_string().starts_with(&format!(
                "error executing template {name}: template: {name}:"
            )),
            "{err}"
        );
    }
}
