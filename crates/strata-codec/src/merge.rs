//! Merging sorted sample runs of one series, the one merge every path
//! uses: a head read with spilled segments, a sealed bucket with late
//! segments, a late segment with the chunk it is folded into, a series
//! read from several shards.

/// Two ascending sample runs merged into one; where both hold a
/// timestamp, `newer`'s sample is kept (a later write wins). Runs that do
/// not overlap are concatenated; overlapping ones are merged run by run,
/// each run found by binary search, not sample by sample.
pub fn merge_newer(
    older: (Vec<i64>, Vec<f64>),
    newer: (Vec<i64>, Vec<f64>),
) -> (Vec<i64>, Vec<f64>) {
    let ((a_ts, a_vs), (b_ts, b_vs)) = (older, newer);
    match (a_ts.first(), a_ts.last(), b_ts.first(), b_ts.last()) {
        (None, ..) => return (b_ts, b_vs),
        (_, _, None, _) => return (a_ts, a_vs),
        (_, Some(&a_last), Some(&b_first), _) if a_last < b_first => {
            let (mut ts, mut vs) = (a_ts, a_vs);
            ts.extend(b_ts);
            vs.extend(b_vs);
            return (ts, vs);
        }
        (Some(&a_first), _, _, Some(&b_last)) if b_last < a_first => {
            let (mut ts, mut vs) = (b_ts, b_vs);
            ts.extend(a_ts);
            vs.extend(a_vs);
            return (ts, vs);
        }
        _ => {}
    }
    let n = a_ts.len() + b_ts.len();
    let (mut ts, mut vs) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let (mut a, mut b) = (
        (a_ts.as_slice(), a_vs.as_slice()),
        (b_ts.as_slice(), b_vs.as_slice()),
    );
    while let (Some(&at), Some(&bt)) = (a.0.first(), b.0.first()) {
        if at < bt {
            // `a`'s run before `b`'s next sample.
            let run = a.0.partition_point(|&t| t < bt);
            take_run(&mut a, run, &mut ts, &mut vs);
        } else {
            // `b`'s run up to `a`'s next sample, which it replaces if equal.
            let run = b.0.partition_point(|&t| t <= at);
            if b.0.get(run.wrapping_sub(1)) == Some(&at) {
                a = (
                    a.0.get(1..).unwrap_or_default(),
                    a.1.get(1..).unwrap_or_default(),
                );
            }
            take_run(&mut b, run, &mut ts, &mut vs);
        }
    }
    for side in [a, b] {
        ts.extend_from_slice(side.0);
        vs.extend_from_slice(side.1);
    }
    (ts, vs)
}

fn take_run(side: &mut (&[i64], &[f64]), run: usize, ts: &mut Vec<i64>, vs: &mut Vec<f64>) {
    let (t_run, t_rest) = side.0.split_at(run.min(side.0.len()));
    let (v_run, v_rest) = side.1.split_at(run.min(side.1.len()));
    ts.extend_from_slice(t_run);
    vs.extend_from_slice(v_run);
    *side = (t_rest, v_rest);
}

/// Merges `newer` into the end of `ts`/`vs` in place: only the samples
/// from `newer`'s first timestamp on are moved, so merging a bucket's late
/// samples into a series read over many buckets costs that bucket only.
pub fn merge_into(ts: &mut Vec<i64>, vs: &mut Vec<f64>, newer: (Vec<i64>, Vec<f64>)) {
    let Some(&first) = newer.0.first() else {
        return;
    };
    let at = ts.partition_point(|&t| t < first);
    if at == ts.len() {
        ts.extend(newer.0);
        vs.extend(newer.1);
        return;
    }
    let tail = (ts.split_off(at), vs.split_off(at.min(vs.len())));
    let (t, v) = merge_newer(tail, newer);
    ts.extend(t);
    vs.extend(v);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(ts: &[i64], k: f64) -> (Vec<i64>, Vec<f64>) {
        (ts.to_vec(), ts.iter().map(|&t| t as f64 * k).collect())
    }

    #[test]
    fn merges_runs_in_any_order_newer_wins() {
        let cases: [(&[i64], &[i64]); 8] = [
            (&[], &[1, 2]),
            (&[1, 2], &[]),
            (&[1, 2], &[3, 4]),
            (&[5, 6], &[1, 2]),
            (&[4, 5, 6], &[1, 2, 3, 7, 8, 9]),
            (&[1, 3, 10, 11, 20], &[2, 4, 5, 12, 30, 31]),
            (&[1, 2, 3, 4], &[2, 3]),
            (&[1, 5, 9], &[1, 5, 9, 10]),
        ];
        for (a, b) in cases {
            let (ts, vs) = merge_newer(run(a, 1.0), run(b, 2.0));
            let mut want: Vec<i64> = a.iter().chain(b).copied().collect();
            want.sort_unstable();
            want.dedup();
            assert_eq!(ts, want, "{a:?} {b:?}");
            for (t, v) in ts.iter().zip(&vs) {
                let k = if b.contains(t) { 2.0 } else { 1.0 };
                assert_eq!(*v, *t as f64 * k, "{a:?} {b:?} at {t}");
            }
            let (mut ts2, mut vs2) = run(a, 1.0);
            merge_into(&mut ts2, &mut vs2, run(b, 2.0));
            assert_eq!((ts2, vs2), (ts, vs));
        }
    }
}
