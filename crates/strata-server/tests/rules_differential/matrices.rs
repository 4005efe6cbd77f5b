//! Recorded series compared sample by sample: a window of a selector's
//! samples, and the differences between two matrices (values within float
//! noise).

use crate::common::{query_matrix, Matrix};

/// The samples of `selector` with timestamps in `[from, to]`.
pub(crate) fn samples(port: u16, selector: &str, from: i64, to: i64) -> Matrix {
    let secs = (to - from) / 1000 + 1;
    query_matrix(port, &format!("{selector}[{secs}s]"), to)
        .into_iter()
        .map(|(l, s)| {
            let s: Vec<(i64, String)> = s
                .into_iter()
                .filter(|(t, _)| (from..=to).contains(t))
                .collect();
            (l, s)
        })
        .filter(|(_, s)| !s.is_empty())
        .collect()
}

/// Equal values, or within float noise (relative 1e-9).
fn same_value(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => (x - y).abs() <= 1e-9 * x.abs().max(y.abs()),
        _ => false,
    }
}

/// Differences between two matrices: series on one side only, and per
/// series the timestamps or values that differ.
pub(crate) fn matrix_differences(want: &Matrix, got: &Matrix) -> Vec<String> {
    let mut out = Vec::new();
    for (labels, w) in want {
        let Some(g) = got.get(labels) else {
            out.push(format!(
                "only in Prometheus: {labels:?} ({} samples)",
                w.len()
            ));
            continue;
        };
        let wt: Vec<i64> = w.iter().map(|(t, _)| *t).collect();
        let gt: Vec<i64> = g.iter().map(|(t, _)| *t).collect();
        if wt != gt {
            let i = wt.iter().zip(&gt).take_while(|(a, b)| a == b).count();
            out.push(format!(
                "{labels:?}: {} samples in Prometheus, {} in Strata; the {i}th at {:?} in \
                 Prometheus, at {:?} in Strata",
                wt.len(),
                gt.len(),
                wt.get(i),
                gt.get(i)
            ));
            continue;
        }
        for ((t, a), (_, b)) in w.iter().zip(g) {
            if !same_value(a, b) {
                out.push(format!(
                    "{labels:?} at {t}: {a} in Prometheus, {b} in Strata"
                ));
                break;
            }
        }
    }
    for labels in got.keys().filter(|l| !want.contains_key(*l)) {
        out.push(format!("only in Strata: {labels:?}"));
    }
    out
}
