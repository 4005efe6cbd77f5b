#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use super::*;

fn problems(text: &str) -> Vec<String> {
    match parse(text) {
        Ok(file) => panic!("expected problems, got {file:?}"),
        Err(problems) => problems.iter().map(ToString::to_string).collect(),
    }
}

fn one_problem(text: &str) -> String {
    let found = problems(text);
    assert_eq!(found.len(), 1, "{found:#?}");
    found.into_iter().next().unwrap()
}

/// A file of one group "g" holding `rule`, indented as a list item of
/// `rules:` (six spaces), so positions in it start at line 4.
fn one_rule(rule: &str) -> String {
    let body: String = rule
        .lines()
        .enumerate()
        .map(|(i, line)| {
            let lead = if i == 0 { "      - " } else { "        " };
            format!("{lead}{line}\n")
        })
        .collect();
    format!("groups:\n  - name: g\n    rules:\n{body}")
}

#[test]
fn reads_a_full_file() {
    let text = r#"
groups:
  - name: node
    interval: 1m
    query_offset: 0s
    limit: 10
    labels:
      team: infra
    rules:
      - record: instance:node_cpu_utilisation:rate5m
        expr: 1 - avg without (cpu) (rate(node_cpu_seconds_total{mode="idle"}[5m]))
      - alert: NodeDown
        expr: up{job="node"} == 0
        for: 5m
        keep_firing_for: 10m
        labels:
          severity: critical
        annotations:
          summary: "{{ $labels.instance }} is down"
  - name: second
    rules:
      - record: one
        expr: 1
"#;
    let file = parse(text).unwrap();
    assert_eq!(file.rule_count(), 3);
    let g = &file.groups[0];
    assert_eq!(g.name, "node");
    assert_eq!(g.interval, Some(Duration::from_secs(60)));
    assert_eq!(g.query_offset, Some(Duration::ZERO));
    assert_eq!(g.limit, 10);
    assert_eq!(g.labels["team"], "infra");
    assert_eq!(g.position, Some(Position { line: 3, column: 5 }));
    let record = &g.rules[0];
    assert_eq!(
        record.record.as_deref(),
        Some("instance:node_cpu_utilisation:rate5m")
    );
    assert_eq!(record.alert, None);
    assert_eq!(
        record.position,
        Some(Position {
            line: 10,
            column: 9
        })
    );
    let alert = &g.rules[1];
    assert_eq!(alert.name(), Some("NodeDown"));
    assert_eq!(alert.r#for, Some(Duration::from_secs(300)));
    assert_eq!(alert.keep_firing_for, Some(Duration::from_secs(600)));
    assert_eq!(alert.labels["severity"], "critical");
    assert_eq!(
        alert.annotations["summary"],
        "{{ $labels.instance }} is down"
    );
    assert_eq!(file.groups[1].rules[0].expr, "1");
    assert_eq!(file.groups[1].interval, None);
    assert_eq!(file.groups[1].query_offset, None);
}

#[test]
fn empty_and_comment_only_files_have_no_groups() {
    for text in ["", "# nothing\n", "groups:\n", "groups: []\n", "{}\n"] {
        assert_eq!(parse(text).unwrap(), RuleFile::default(), "{text:?}");
    }
}

#[test]
fn scalars_are_text_and_null_is_empty() {
    let file = parse(&one_rule("alert: 1\nexpr: 2.50\nlabels: {a: ~, b: 3}")).unwrap();
    let rule = &file.groups[0].rules[0];
    assert_eq!(rule.alert.as_deref(), Some("1"));
    assert_eq!(rule.expr, "2.50");
    assert_eq!(rule.labels["a"], "");
    assert_eq!(rule.labels["b"], "3");
    // `for: 0` is the bare zero Prometheus allows, and means no `for`.
    let file = parse(&one_rule("alert: a\nexpr: up\nfor: 0")).unwrap();
    assert_eq!(file.groups[0].rules[0].r#for, None);
}

#[test]
fn a_negative_limit_is_no_limit() {
    let file = parse("groups:\n  - name: g\n    limit: -3\n").unwrap();
    assert_eq!(file.groups[0].limit, 0);
}

#[test]
fn unknown_keys_are_errors_at_every_level() {
    for text in [
        "group:\n  - name: g\n",
        "groups:\n  - name: g\n    rule: []\n",
        &one_rule("alert: a\nexpr: up\nannotation: {}"),
    ] {
        let found = one_problem(text);
        assert!(found.contains("unknown field"), "{found}");
    }
}

#[test]
fn repeated_keys_are_errors() {
    let found = one_problem(&one_rule("alert: a\nexpr: up\nlabels: {x: 1, x: 2}"));
    assert!(
        found.contains("mapping key \"x\" already defined"),
        "{found}"
    );
    let found = one_problem(&one_rule("alert: a\nexpr: up\nexpr: down"));
    assert!(found.contains("duplicate field `expr`"), "{found}");
}

#[test]
fn bad_durations_are_errors() {
    let found = one_problem(&one_rule("alert: a\nexpr: up\nfor: 5"));
    assert!(
        found.contains("not a valid duration string: \"5\""),
        "{found}"
    );
    let found = one_problem("groups:\n  - name: g\n    interval: 1x\n");
    assert!(
        found.contains("unknown unit \"x\" in duration \"1x\""),
        "{found}"
    );
    let found = one_problem("groups:\n  - name: g\n    query_offset: -1m\n");
    assert!(found.contains("not a valid duration string"), "{found}");
}

#[test]
fn group_names_must_be_set_and_unique() {
    let found = problems("groups:\n  - name: a\n  - name: a\n  - rules: []\n");
    assert_eq!(
        found,
        [
            "3:5: groupname: \"a\" is repeated in the same file",
            "4:5: Groupname must not be empty",
        ]
    );
}

#[test]
fn group_labels_may_not_set_the_metric_name() {
    let found = one_problem("groups:\n  - name: g\n    labels:\n      __name__: x\n");
    assert_eq!(found, "invalid label name: __name__");
}

#[test]
fn a_rule_is_recording_or_alerting_not_both() {
    assert_eq!(
        one_problem(&one_rule("record: r\nalert: a\nexpr: up")),
        "4:17: 5:16: group \"g\", rule 1, \"a\": only one of 'record' and 'alert' must be set"
    );
    assert_eq!(
        one_problem(&one_rule("expr: up")),
        "4:9: group \"g\", rule 1, \"\": one of 'record' or 'alert' must be set"
    );
    // An empty name is no name.
    assert_eq!(
        one_problem(&one_rule("record: ''\nexpr: up")),
        "4:17: group \"g\", rule 1, \"\": one of 'record' or 'alert' must be set"
    );
}

#[test]
fn expr_must_be_set_and_parse() {
    assert_eq!(
        one_problem(&one_rule("record: r")),
        "4:9: group \"g\", rule 1, \"r\": field 'expr' must be set in rule"
    );
    assert_eq!(
        one_problem(&one_rule("record: r\nexpr: ~")),
        "5:15: group \"g\", rule 1, \"r\": field 'expr' must be set in rule"
    );
    let found = one_problem(&one_rule("alert: a\nexpr: up ===== 1"));
    assert!(
        found.starts_with("5:15: group \"g\", rule 1, \"a\": could not parse expression: "),
        "{found}"
    );
    // What Prometheus takes only with a feature flag.
    for (expr, message) in [
        (
            "sort_by_label(up, 'job')",
            "function \"sort_by_label\" is not enabled",
        ),
        (
            "limitk(2, up)",
            "limitk() is experimental and must be enabled with \
             --enable-feature=promql-experimental-functions",
        ),
    ] {
        assert_eq!(
            one_problem(&one_rule(&format!("record: r\nexpr: \"{expr}\""))),
            format!("5:15: group \"g\", rule 1, \"r\": could not parse expression: parse error: {message}")
        );
    }
    // Nested deeper than the query engine takes.
    let deep = format!("{}up{}", "(".repeat(300), ")".repeat(300));
    let found = one_problem(&one_rule(&format!("record: r\nexpr: {deep}")));
    assert!(found.contains("could not parse expression"), "{found}");
}

#[test]
fn recording_rules_take_no_alerting_fields() {
    let found = problems(&one_rule(
        "record: r\nexpr: up\nfor: 1m\nkeep_firing_for: 2m\nannotations: {a: b}",
    ));
    assert_eq!(
        found,
        [
            "4:17: group \"g\", rule 1, \"r\": invalid field 'annotations' in recording rule",
            "4:17: group \"g\", rule 1, \"r\": invalid field 'for' in recording rule",
            "4:17: group \"g\", rule 1, \"r\": invalid field 'keep_firing_for' in recording rule",
        ]
    );
    // Zero is the same as not set.
    parse(&one_rule("record: r\nexpr: up\nfor: 0s")).unwrap();
}

#[test]
fn recording_rule_names() {
    assert_eq!(
        one_problem(&one_rule("record: 'a{b=\"c\"}'\nexpr: up")),
        "4:17: group \"g\", rule 1, \"a{b=\\\"c\\\"}\": braces present in the recording rule \
         name; should it be in expr?: a{b=\"c\"}"
    );
    // Any UTF-8 name is valid by default, not under the legacy scheme.
    let text = one_rule("record: node.cpu:rate5m\nexpr: up");
    parse(&text).unwrap();
    let found = parse_with(&text, NameValidation::Legacy).unwrap_err();
    assert_eq!(
        found[0].to_string(),
        "4:17: group \"g\", rule 1, \"node.cpu:rate5m\": invalid recording rule name: node.cpu:rate5m"
    );
}

#[test]
fn label_and_annotation_names() {
    assert_eq!(
        one_problem(&one_rule("record: r\nexpr: up\nlabels: {__name__: x}")),
        "group \"g\", rule 1, \"r\": invalid label name: __name__"
    );
    assert_eq!(
        one_problem(&one_rule("alert: a\nexpr: up\nlabels: {'': x}")),
        "group \"g\", rule 1, \"a\": invalid label name: "
    );
    assert_eq!(
        one_problem(&one_rule("alert: a\nexpr: up\nannotations: {'': x}")),
        "group \"g\", rule 1, \"a\": invalid annotation name: "
    );
    // `__name__` is a fine annotation; dashes are fine names in UTF-8.
    let text = one_rule("alert: a\nexpr: up\nlabels: {ins-tance: x}\nannotations: {__name__: x}");
    parse(&text).unwrap();
    let found = parse_with(&text, NameValidation::Legacy).unwrap_err();
    let found: Vec<_> = found.iter().map(ToString::to_string).collect();
    assert_eq!(
        found,
        ["group \"g\", rule 1, \"a\": invalid label name: ins-tance"]
    );
    let text = one_rule("alert: a\nexpr: up\nannotations: {ins-tance: x}");
    let found = parse_with(&text, NameValidation::Legacy).unwrap_err();
    assert_eq!(
        found[0].to_string(),
        "group \"g\", rule 1, \"a\": invalid annotation name: ins-tance"
    );
}

#[test]
fn alerting_templates_are_parsed_recording_labels_are_not() {
    // What the template module says, under the label's or annotation's
    // name, the template named after the alert as in Prometheus.
    let bad = "'{{ bad }}'";
    let text = one_rule(&format!(
        "alert: a\nexpr: up\nlabels: {{severity: {bad}}}\nannotations: {{summary: {bad}}}"
    ));
    let found: Vec<_> = parse(&text)
        .unwrap_err()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        found,
        [
            "group \"g\", rule 1, \"a\": label \"severity\": template: __alert_a:1: function \"bad\" not defined",
            "group \"g\", rule 1, \"a\": annotation \"summary\": template: __alert_a:1: function \"bad\" not defined",
        ]
    );
    let found = one_problem(&one_rule(
        "alert: a\nexpr: up\nannotations: {s: '{{ $this_is_wrong }}'}",
    ));
    assert_eq!(
        found,
        "group \"g\", rule 1, \"a\": annotation \"s\": template: __alert_a:1: undefined variable \"$this_is_wrong\""
    );
    // The same text as a recording rule's label is not a template.
    parse(&one_rule(&format!(
        "record: r\nexpr: up\nlabels: {{x: {bad}}}"
    )))
    .unwrap();
    // Variables Prometheus defines are there to use.
    parse(&one_rule(
        "alert: a\nexpr: up\nannotations: {s: '{{ $labels.job }} {{ $value }} {{ $externalURL }}'}",
    ))
    .unwrap();
}

#[test]
fn every_problem_of_a_file_at_once_in_file_order() {
    let text = "groups:\n  - name: g\n    rules:\n      - expr: up\n      - record: r\n";
    let found = problems(text);
    assert_eq!(
        found,
        [
            "4:9: group \"g\", rule 1, \"\": one of 'record' or 'alert' must be set",
            "5:9: group \"g\", rule 2, \"r\": field 'expr' must be set in rule",
        ]
    );
}

#[test]
fn anchors_aliases_and_merge_keys() {
    let text = r#"
groups:
  - name: g
    rules:
      - &high
        alert: &name HighErrors
        expr: &expr |
          sum(rate(errors_total[5m])) / sum(rate(requests_total[5m]))
        for: 5m
        labels:
          severity: critical
      - record: errors:ratio
        expr: *expr
      - <<: *high
        alert: HighErrors2
      - <<: *high
        record: r
"#;
    let found = problems(text);
    // The merged rule has `alert` from the anchor and `record` of its own.
    assert_eq!(
        found,
        [
            "17:17: 6:16: group \"g\", rule 4, \"HighErrors\": only one of 'record' and 'alert' \
          must be set",
            "17:17: group \"g\", rule 4, \"HighErrors\": invalid field 'for' in recording rule"
        ]
    );
    let good = text
        .rsplit_once("      - <<: *high\n        record: r\n")
        .unwrap()
        .0;
    let file = parse(good).unwrap();
    let rules = &file.groups[0].rules;
    assert_eq!(rules.len(), 3);
    assert_eq!(rules[1].expr, rules[0].expr);
    assert_eq!(rules[2].alert.as_deref(), Some("HighErrors2"));
    assert_eq!(rules[2].r#for, Some(Duration::from_secs(300)));
    assert_eq!(rules[2].labels["severity"], "critical");
}

#[test]
fn only_the_first_document_counts() {
    let text = "groups:\n  - name: a\n---\ngroups:\n  - name: a\n  - name: a\n";
    assert_eq!(parse(text).unwrap().groups.len(), 1);
}

#[test]
fn not_yaml_is_one_problem() {
    let found = one_problem("groups: [\n");
    assert!(!found.is_empty());
    assert!(matches!(parse("- 1\n").unwrap_err()[0], Problem::Decode(_)));
}

#[test]
fn duplicate_rules_over_groups_with_group_labels() {
    let text = r#"
groups:
  - name: a
    labels: {team: x}
    rules:
      - record: job:up:sum
        expr: sum by (job) (up)
  - name: b
    rules:
      - record: job:up:sum
        expr: sum by (job) (up)
        labels: {team: x}
      - record: job:up:sum
        expr: sum by (job) (up)
        labels: {team: x}
      - alert: X
        expr: up == 0
      - alert: X
        expr: up == 1
      - alert: Y
        expr: up == 1
"#;
    let file = parse(text).unwrap();
    let found = duplicate_rules(&file);
    assert_eq!(found.len(), 2);
    assert_eq!(
        render_duplicates(&found),
        "2 duplicate rule(s) found.\nMetric: X\nLabel(s):\nMetric: job:up:sum\nLabel(s):\n\
         \tteam: x\nMight cause inconsistency while recording expressions"
    );
    let unique = "groups:\n  - name: a\n    rules:\n      - {record: a, expr: up}\n      - {record: a, expr: up, labels: {x: y}}\n";
    assert!(duplicate_rules(&parse(unique).unwrap()).is_empty());
}

#[test]
fn load_reports_unreadable_files() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.yml");
    let found = load(&missing).unwrap_err();
    assert!(matches!(found[0], Problem::Read(_)), "{found:?}");
    assert!(matches!(load(dir.path()).unwrap_err()[0], Problem::Read(_)));
}

#[test]
fn globs_load_each_match_once_and_skip_empty_patterns() {
    let dir = tempfile::tempdir().unwrap();
    let good = "groups:\n  - name: g\n    rules:\n      - {record: r, expr: up}\n";
    std::fs::write(dir.path().join("b.yml"), good).unwrap();
    std::fs::write(dir.path().join("a.yml"), good).unwrap();
    std::fs::write(dir.path().join(".hidden.yml"), good).unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/c.yml"), good).unwrap();
    let base = dir.path().display().to_string();
    let patterns = vec![
        format!("{base}/*.yml"),
        format!("{base}/a.yml"),
        format!("{base}/nothing/*.yml"),
    ];
    let files = load_globs(&patterns).unwrap();
    let names: Vec<_> = files
        .iter()
        .map(|(p, _)| p.file_name().unwrap().to_str().unwrap().to_string())
        .collect();
    assert_eq!(names, [".hidden.yml", "a.yml", "b.yml"]);
    assert!(files.iter().all(|(_, f)| f.rule_count() == 1));

    std::fs::write(
        dir.path().join("bad.yml"),
        "groups:\n  - name: g\n    rules:\n      - {expr: up}\n",
    )
    .unwrap();
    let problems = load_globs(&[format!("{base}/*.yml")]).unwrap_err();
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].0, dir.path().join("bad.yml"));
}

#[test]
fn globs_refuse_patterns_prometheus_refuses() {
    for pattern in ["rules/*/x.yml", "rules/*.*.yml", "rules/[.yml"] {
        let problems = load_globs(&[pattern.to_string()]).unwrap_err();
        assert_eq!(problems.len(), 1, "{pattern}");
        assert_eq!(problems[0].0, PathBuf::from(pattern));
    }
    assert_eq!(
        Problem::Pattern("rules/*/x.yml".into()).to_string(),
        "invalid rule file path \"rules/*/x.yml\""
    );
}
