//! The rules and alerts APIs compared as JSON: answers fetched from both
//! sides while Prometheus' holds still, the wall-clock times of the
//! evaluations taken out, times cut to ms, and every difference named by
//! its path.

use std::time::Duration;

use serde_json::Value;

use crate::common::http_get;

pub(crate) fn get_json(port: u16, path: &str) -> Value {
    let r = http_get(port, path).unwrap_or_else(|e| panic!("GET :{port}{path}: {e}"));
    assert_eq!(r.status, 200, "GET :{port}{path}: {}", r.text());
    let v = r.json();
    assert_eq!(v["status"], "success", "GET :{port}{path}: {v}");
    v["data"].clone()
}

/// A Go time cut to milliseconds, as Go writes such a time: trailing
/// zeros of the fraction dropped.
fn go_time_ms(s: &str) -> String {
    let Some((head, frac)) = s.strip_suffix('Z').and_then(|s| s.split_once('.')) else {
        return s.to_owned();
    };
    let mut frac: String = frac.chars().take(3).collect();
    while frac.ends_with('0') {
        frac.pop();
    }
    if frac.is_empty() {
        format!("{head}Z")
    } else {
        format!("{head}.{frac}Z")
    }
}

/// Alerts as compared: sorted by labels (Prometheus lists them in map
/// order), `activeAt` and `keepFiringSince` cut to ms.
fn normalize_alerts(alerts: &mut Value) {
    let Some(list) = alerts.as_array_mut() else {
        return;
    };
    for a in list.iter_mut() {
        for key in ["activeAt", "keepFiringSince"] {
            if let Some(t) = a[key].as_str() {
                a[key] = Value::String(go_time_ms(t));
            }
        }
    }
    list.sort_by_key(|a| a["labels"].to_string());
}

/// `/api/v1/rules` as compared: without the wall-clock times of the
/// evaluations.
pub(crate) fn normalize_rules(mut data: Value) -> Value {
    for g in data["groups"].as_array_mut().unwrap() {
        let g = g.as_object_mut().unwrap();
        assert!(g.remove("evaluationTime").is_some(), "{g:?}");
        assert!(g.remove("lastEvaluation").is_some(), "{g:?}");
        for r in g["rules"].as_array_mut().unwrap() {
            let r = r.as_object_mut().unwrap();
            assert!(r.remove("evaluationTime").is_some(), "{r:?}");
            assert!(r.remove("lastEvaluation").is_some(), "{r:?}");
            if let Some(alerts) = r.get_mut("alerts") {
                normalize_alerts(alerts);
            }
        }
    }
    data
}

pub(crate) fn normalize_alert_list(mut data: Value) -> Value {
    normalize_alerts(&mut data["alerts"]);
    data
}

/// Compares what `fetch` answers of each side between two evaluations:
/// Prometheus' answer is taken before and after Strata's and must not
/// have changed, else the round is tried again. Panics with both answers
/// when they differ in every round.
pub(crate) fn compare_stable(
    what: &str,
    prom: u16,
    strata: u16,
    fetch: impl Fn(u16) -> Value,
) -> Value {
    let mut last = None;
    for _ in 0..20 {
        let before = fetch(prom);
        let got = fetch(strata);
        let after = fetch(prom);
        if before != after {
            continue;
        }
        if before == got {
            return got;
        }
        last = Some((before, got));
        std::thread::sleep(Duration::from_millis(300));
    }
    let (want, got) = last.expect("Prometheus' answer never held still");
    let mut diffs = Vec::new();
    differences(&want, &got, "", &mut diffs);
    panic!(
        "{what} differs:\n{}\nPrometheus answered:\n{}\nStrata answered:\n{}",
        diffs.join("\n"),
        serde_json::to_string_pretty(&want).unwrap(),
        serde_json::to_string_pretty(&got).unwrap(),
    );
}

/// Every place two JSON values differ, as paths.
pub(crate) fn differences(a: &Value, b: &Value, at: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, p) in x {
                match y.get(k) {
                    Some(q) => differences(p, q, &format!("{at}.{k}"), out),
                    None => out.push(format!("{at}.{k}: {p} in Prometheus, missing in Strata")),
                }
            }
            for (k, q) in y.iter().filter(|(k, _)| !x.contains_key(*k)) {
                out.push(format!("{at}.{k}: missing in Prometheus, {q} in Strata"));
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                differences(p, q, &format!("{at}[{i}]"), out);
            }
        }
        _ if a != b => out.push(format!("{at}: {a} in Prometheus, {b} in Strata")),
        _ => {}
    }
}
