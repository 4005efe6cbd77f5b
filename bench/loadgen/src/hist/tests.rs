use super::*;

fn config() -> HistConfig {
    HistConfig {
        endpoints: vec![],
        series: 10,
        interval: Duration::from_secs(5),
        duration: Duration::from_secs(60),
        batch_size: 500,
        senders: 1,
        seed: 7,
        nhcb_share: 0.3,
        reset_probability: 0.0,
        observations: 100.0,
        metric: "h".into(),
        give_up_after: Duration::from_secs(30),
        drain_timeout: Duration::from_secs(5),
        progress_interval: Duration::from_secs(5),
        headers: vec![],
    }
}

#[test]
fn samples_are_valid_deterministic_and_grow() {
    let c = config();
    let mut a: Vec<SeriesState> = (0..c.series).map(|i| SeriesState::new(i, &c)).collect();
    let mut b: Vec<SeriesState> = (0..c.series).map(|i| SeriesState::new(i, &c)).collect();
    for _ in 0..50 {
        for (x, y) in a.iter_mut().zip(&mut b) {
            let before = x.count;
            let hx = x.step(0.0);
            let hy = y.step(0.0);
            assert_eq!(hx, hy);
            assert!(x.count >= before);
            let HistogramSample::Int(h) = &hx else {
                panic!("not an integer histogram")
            };
            let buckets: i64 = h
                .positive_buckets
                .iter()
                .scan(0i64, |acc, d| {
                    *acc += d;
                    Some(*acc)
                })
                .sum();
            assert_eq!(buckets as u64, h.count);
            let len: u32 = h.positive_spans.iter().map(|s| s.length).sum();
            assert_eq!(len as usize, h.positive_buckets.len());
        }
    }
    let exp: Vec<usize> = a
        .iter()
        .filter(|s| !s.nhcb)
        .map(|s| s.buckets.len())
        .collect();
    assert!(exp.iter().all(|&n| (15..=60).contains(&n)), "{exp:?}");
}
