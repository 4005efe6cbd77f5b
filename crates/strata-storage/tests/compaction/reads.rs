//! The reads the compaction tests compare with what they expect: every
//! series, one host and random windows, on the writer or polled on a
//! reader node; and the first difference when they differ.

use std::time::{Duration, Instant};

use strata_codec::{MatchOp, Matcher};
use strata_storage::Storage;

use crate::history::Rng;
use crate::samples::{read, Expected};
use crate::setup::HOUR;

pub(crate) fn all() -> Vec<Matcher> {
    vec![Matcher::new(MatchOp::Equal, "__name__", "m").unwrap()]
}

/// The part of `want` a selection of `host` over `[mint, maxt]` reads.
fn expected(want: &Expected, host: Option<&str>, mint: i64, maxt: i64) -> Expected {
    want.iter()
        .filter(|(l, _)| host.is_none_or(|h| l.iter().any(|l| l.name == "host" && l.value == h)))
        .map(|(l, s)| {
            let s: Vec<_> = s
                .iter()
                .copied()
                .filter(|&(t, _)| t >= mint && t <= maxt)
                .collect();
            (l.clone(), s)
        })
        .filter(|(_, s)| !s.is_empty())
        .collect()
}

/// The first series whose samples differ, and how.
pub(crate) fn difference(got: &Expected, want: &Expected) -> String {
    for (l, w) in want {
        let g = got.get(l).cloned().unwrap_or_default();
        if &g != w {
            let extra: Vec<_> = g.iter().filter(|x| !w.contains(x)).take(3).collect();
            let missing: Vec<_> = w.iter().filter(|x| !g.contains(x)).take(3).collect();
            return format!(
                "{l:?}: {} samples, want {}; extra {extra:?}, missing {missing:?}",
                g.len(),
                w.len()
            );
        }
    }
    format!("{} series, want {}", got.len(), want.len())
}

/// Every read the test makes: everything, one host, and random windows.
pub(crate) async fn check(
    db: &Storage,
    want: &Expected,
    first: i64,
    hours: i64,
    rng: &mut Rng,
    what: &str,
) {
    let (mint, maxt) = (first - HOUR, first + (hours + 1) * HOUR);
    let got = read(db, &all(), mint, maxt).await;
    assert!(
        got == *want,
        "{what}: everything: {}",
        difference(&got, want)
    );
    let host = vec![
        Matcher::new(MatchOp::Equal, "__name__", "m").unwrap(),
        Matcher::new(MatchOp::Equal, "host", "h2").unwrap(),
    ];
    assert_eq!(
        read(db, &host, mint, maxt).await,
        expected(want, Some("h2"), mint, maxt),
        "{what}: host h2"
    );
    for _ in 0..3 {
        let a = first + rng.below((hours * HOUR) as u64) as i64;
        let b = a + rng.below((10 * HOUR) as u64) as i64;
        assert_eq!(
            read(db, &all(), a, b).await,
            expected(want, None, a, b),
            "{what}: window {a}..{b}"
        );
    }
    // The series API finds the same series over the whole range.
    let series = db.series(&all(), mint, maxt).await.unwrap();
    assert_eq!(series.len(), want.len(), "{what}: series");
}

/// Polls until the reader node reads what the writer wrote.
pub(crate) async fn reader_sees(
    reader: &Storage,
    want: &Expected,
    first: i64,
    hours: i64,
    what: &str,
) {
    let (mint, maxt) = (first - HOUR, first + (hours + 1) * HOUR);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = read(reader, &all(), mint, maxt).await;
        if &got == want {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: the reader node differs");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
