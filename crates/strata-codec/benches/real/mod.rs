//! Real node_exporter data: every raw sample of the fixture
//! `data/node_exporter.txt.zst`, which `bench/capture-node-exporter` wrote
//! from a real node_exporter scraped by a real Prometheus (its timestamps,
//! jitter and timestamp adjustment included).

/// One captured series: its job and its samples, a whole bucket's worth.
pub struct Captured {
    pub job: String,
    pub ts: Vec<i64>,
    pub vs: Vec<f64>,
}

/// Every series of the fixture, in its order (sorted by labels).
pub fn node_exporter_capture() -> Vec<Captured> {
    let packed: &[u8] = include_bytes!("../data/node_exporter.txt.zst");
    let text = String::from_utf8(zstd::decode_all(packed).expect("fixture decompresses"))
        .expect("fixture is UTF-8");
    let mut out = Vec::new();
    let mut job = String::new();
    let mut ts = Vec::new();
    for line in text.lines() {
        if let Some(labels) = line.strip_prefix("s ") {
            job = labels
                .split(',')
                .find_map(|kv| kv.strip_prefix("job="))
                .map(|j| j.trim_matches('"').to_owned())
                .unwrap_or_default();
        } else if let Some(deltas) = line.strip_prefix("t ") {
            let mut t = 0i64;
            ts = deltas
                .split(' ')
                .map(|d| {
                    t += d.parse::<i64>().expect("fixture timestamp");
                    t
                })
                .collect();
        } else if let Some(values) = line.strip_prefix("v ") {
            let vs: Vec<f64> = values
                .split(' ')
                .map(|v| v.parse().expect("fixture value"))
                .collect();
            assert_eq!(vs.len(), ts.len(), "fixture series {job}: samples");
            out.push(Captured {
                job: job.clone(),
                ts: std::mem::take(&mut ts),
                vs,
            });
        }
    }
    out
}
