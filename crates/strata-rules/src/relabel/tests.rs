//! Each action, and the checks, against Prometheus' behaviour.

use super::*;

fn ls(pairs: &[(&str, &str)]) -> LabelSet {
    pairs
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect()
}

fn cfg(toml_text: &str) -> RelabelConfig {
    let c: RelabelConfig = toml::from_str(toml_text).unwrap();
    c.validate().unwrap();
    c
}

fn run(labels: &[(&str, &str)], steps: &[&str]) -> Option<LabelSet> {
    let configs: Vec<_> = steps.iter().map(|s| cfg(s)).collect();
    let mut set = ls(labels);
    process(&mut set, &configs).then_some(set)
}

#[test]
fn defaults_are_prometheus() {
    let c = RelabelConfig::default();
    assert_eq!(c.separator, ";");
    assert_eq!(c.regex.as_str(), "(.*)");
    assert_eq!(c.replacement, "$1");
    assert_eq!(c.action, Action::Replace);
    let parsed: RelabelConfig = toml::from_str("target_label = \"x\"").unwrap();
    assert_eq!(
        parsed,
        RelabelConfig {
            target_label: "x".into(),
            ..c
        }
    );
}

#[test]
fn replace_expands_groups_into_target_and_value() {
    let out = run(
        &[("a", "foo"), ("b", "bar")],
        &[r#"
            source_labels = ["a", "b"]
            regex = "f(.*);(?P<second>.*)"
            target_label = "t_${1}"
            replacement = "${second}-$1"
        "#],
    )
    .unwrap();
    assert_eq!(out, ls(&[("a", "foo"), ("b", "bar"), ("t_oo", "bar-oo")]));
}

#[test]
fn replace_regex_is_anchored_and_no_match_leaves_labels() {
    let step = r#"
        source_labels = ["a"]
        regex = "(oo)"
        target_label = "t"
    "#;
    assert_eq!(run(&[("a", "foo")], &[step]).unwrap(), ls(&[("a", "foo")]));
    let out = run(&[("a", "oo")], &[step]).unwrap();
    assert_eq!(out, ls(&[("a", "oo"), ("t", "oo")]));
}

#[test]
fn replace_with_empty_result_removes_target() {
    let out = run(
        &[("a", "x"), ("t", "old")],
        &[r#"
            source_labels = ["missing"]
            target_label = "t"
        "#],
    )
    .unwrap();
    assert_eq!(out, ls(&[("a", "x")]));
    // `$1x` names a group called "1x", as in Go: it expands to nothing.
    let out = run(
        &[("a", "v")],
        &[r#"
            source_labels = ["a"]
            target_label = "t"
            replacement = "$1x"
        "#],
    )
    .unwrap();
    assert_eq!(out, ls(&[("a", "v")]));
}

#[test]
fn replace_dot_matches_newline() {
    let out = run(
        &[("a", "x\ny")],
        &[r#"
            source_labels = ["a"]
            regex = "x.y"
            target_label = "t"
            replacement = "ok"
        "#],
    )
    .unwrap();
    assert_eq!(out.get("t").map(String::as_str), Some("ok"));
}

#[test]
fn keep_and_drop() {
    let keep = r#"
        source_labels = ["severity"]
        regex = "critical|page"
        action = "keep"
    "#;
    assert!(run(&[("severity", "critical")], &[keep]).is_some());
    assert!(run(&[("severity", "warning")], &[keep]).is_none());
    assert!(run(&[], &[keep]).is_none());
    let drop = r#"
        source_labels = ["env", "team"]
        separator = "/"
        regex = "dev/.*"
        action = "Drop"
    "#;
    assert!(run(&[("env", "dev"), ("team", "a")], &[drop]).is_none());
    assert!(run(&[("env", "prod"), ("team", "a")], &[drop]).is_some());
}

#[test]
fn keepequal_and_dropequal() {
    let keep = r#"
        source_labels = ["a"]
        target_label = "b"
        action = "keepequal"
    "#;
    assert!(run(&[("a", "1"), ("b", "1")], &[keep]).is_some());
    assert!(run(&[("a", "1"), ("b", "2")], &[keep]).is_none());
    let drop = keep.replace("keepequal", "dropequal");
    assert!(run(&[("a", "1"), ("b", "1")], &[&drop]).is_none());
    assert!(run(&[("a", "1"), ("b", "2")], &[&drop]).is_some());
    // A missing label reads as empty.
    assert!(run(&[], &[&drop]).is_none());
}

#[test]
fn hashmod_matches_prometheus() {
    // Prometheus' relabel_test.go: the last eight bytes of the MD5,
    // big-endian, modulo 1000.
    for (value, want) in [("baz", "976"), ("foo\nbar", "734")] {
        let out = run(
            &[("a", value)],
            &[r#"
                source_labels = ["a"]
                target_label = "h"
                modulus = 1000
                action = "hashmod"
            "#],
        )
        .unwrap();
        assert_eq!(out["h"], want, "{value:?}");
    }
}

#[test]
fn labelmap_labeldrop_labelkeep() {
    let out = run(
        &[("__meta_a", "1"), ("__meta_b", "2"), ("c", "3")],
        &[r#"
            regex = "__meta_(.+)"
            replacement = "m_$1"
            action = "labelmap"
        "#],
    )
    .unwrap();
    assert_eq!(
        out,
        ls(&[
            ("__meta_a", "1"),
            ("__meta_b", "2"),
            ("c", "3"),
            ("m_a", "1"),
            ("m_b", "2"),
        ])
    );
    let out = run(
        &[("__meta_a", "1"), ("c", "3")],
        &[r#"
            regex = "__meta_.*"
            action = "labeldrop"
        "#],
    )
    .unwrap();
    assert_eq!(out, ls(&[("c", "3")]));
    let out = run(
        &[("__meta_a", "1"), ("c", "3"), ("d", "4")],
        &[r#"
            regex = "c|d"
            action = "labelkeep"
        "#],
    )
    .unwrap();
    assert_eq!(out, ls(&[("c", "3"), ("d", "4")]));
}

#[test]
fn lowercase_uppercase() {
    let out = run(
        &[("a", "MiXeD"), ("b", "x")],
        &[
            r#"
                source_labels = ["a"]
                target_label = "lo"
                action = "lowercase"
            "#,
            r#"
                source_labels = ["a", "b"]
                target_label = "up"
                action = "uppercase"
            "#,
        ],
    )
    .unwrap();
    assert_eq!(out["lo"], "mixed");
    assert_eq!(out["up"], "MIXED;X");
}

#[test]
fn steps_run_in_order_and_stop_at_a_drop() {
    let configs = vec![
        cfg(r#"
            source_labels = ["a"]
            target_label = "b"
        "#),
        cfg(r#"
            source_labels = ["b"]
            regex = "x"
            action = "drop"
        "#),
        cfg(r#"
            target_label = "never"
            replacement = "set"
        "#),
    ];
    let mut set = ls(&[("a", "x")]);
    assert!(!process(&mut set, &configs));
    assert!(!set.contains_key("never"));
    let mut set = ls(&[("a", "y")]);
    assert!(process(&mut set, &configs));
    assert_eq!(set, ls(&[("a", "y"), ("b", "y"), ("never", "set")]));
}

#[test]
fn invalid_configs_are_refused() {
    let bad = |t: &str| {
        toml::from_str::<RelabelConfig>(t)
            .map_err(|e| e.to_string())
            .and_then(|c| c.validate().map_err(|e| e.0))
            .unwrap_err()
    };
    assert!(bad("action = \"hashmod\"\ntarget_label = \"x\"").contains("modulus"));
    assert!(bad("action = \"replace\"").contains("target_label"));
    assert!(bad("action = \"nope\"").contains("unknown relabel action"));
    assert!(bad("regex = \"(\"\ntarget_label = \"x\"").contains("regex"));
    assert!(bad("action = \"labeldrop\"\nsource_labels = [\"a\"]").contains("only 'regex'"));
    assert!(
        bad("action = \"keepequal\"\ntarget_label = \"x\"\nregex = \"a\"")
            .contains("only 'source_labels'")
    );
    assert!(
        bad("action = \"lowercase\"\ntarget_label = \"x\"\nreplacement = \"y\"")
            .contains("'replacement' can not be set")
    );
    assert!(bad("bogus = 1").contains("unknown field"));
}
