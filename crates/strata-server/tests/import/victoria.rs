//! Migration from VictoriaMetrics: what it holds, read from its own JSON
//! export, to compare with what Strata reads back.

use crate::common::{http_request, Labels};

/// A value as VictoriaMetrics' JSON export writes it.
fn vm_value(v: &serde_json::Value) -> f64 {
    match v {
        serde_json::Value::Number(n) => n.as_f64().unwrap(),
        serde_json::Value::String(s) if s == "Infinity" => f64::INFINITY,
        serde_json::Value::String(s) if s == "-Infinity" => f64::NEG_INFINITY,
        _ => f64::NAN,
    }
}

/// Every series in VictoriaMetrics, from its JSON-lines export: per label
/// set, (ms, value).
pub(crate) fn vm_export(port: u16) -> std::collections::BTreeMap<Labels, Vec<(i64, f64)>> {
    let r = http_request(
        port,
        "GET",
        "/api/v1/export?match%5B%5D=%7B__name__%21%3D%22%22%7D",
        &[],
        b"",
    )
    .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    let mut out = std::collections::BTreeMap::new();
    for line in r.text().lines().filter(|l| !l.is_empty()) {
        // Older VictoriaMetrics (Debian's 1.79) writes infinities bare,
        // which is not JSON; newer ones write "Infinity".
        let (head, values) = line.split_once("\"values\":[").unwrap();
        let (values, tail) = values.split_once(']').unwrap();
        let values = values
            .replace("+Inf", "\"Infinity\"")
            .replace("-Inf", "\"-Infinity\"");
        let line = format!("{head}\"values\":[{values}]{tail}");
        let j: serde_json::Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("VictoriaMetrics export line {line:?}: {e}"));
        let labels: Labels = j["metric"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
            .collect();
        let samples = j["timestamps"]
            .as_array()
            .unwrap()
            .iter()
            .zip(j["values"].as_array().unwrap())
            .map(|(t, v)| (t.as_i64().unwrap(), vm_value(v)))
            .collect();
        out.insert(labels, samples);
    }
    out
}
