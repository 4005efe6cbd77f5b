#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::alerting::{AlertState, LabelSet};
use strata_codec::{Label, MatchOp, Matcher};
use strata_promql::{Engine, MemSource, QueryLimits};

struct MemSink(Arc<MemSource>);

#[async_trait::async_trait]
impl Sink for MemSink {
    async fn write(&self, samples: Vec<(Vec<Label>, i64, f64)>) -> Result<(), String> {
        for (l, t, v) in samples {
            self.0.append(&l, t, v);
        }
        Ok(())
    }
}

fn alert(name: &str, expr: &str, secs: u64, labels: &[(&str, &str)]) -> RuleSpec {
    RuleSpec::Alerting {
        alert: name.into(),
        expr: expr.into(),
        hold: Duration::from_secs(secs),
        keep_firing_for: Duration::ZERO,
        labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        annotations: LabelSet::new(),
    }
}

fn l(name: &str) -> Vec<Label> {
    vec![Label::new("__name__", name)]
}

const T0: i64 = 1_700_000_000_000;

/// `ALERTS_FOR_STATE` of `alertname`: its samples' times and values.
fn for_state(src: &MemSource, alertname: &str) -> Vec<(i64, f64)> {
    let m = [
        Matcher::new(MatchOp::Equal, "__name__", "ALERTS_FOR_STATE").unwrap(),
        Matcher::new(MatchOp::Equal, "alertname", alertname).unwrap(),
    ];
    let rt = tokio::runtime::Handle::current();
    let series = tokio::task::block_in_place(|| {
        rt.block_on(strata_promql::Queryable::select(src, &m, 0, i64::MAX))
    })
    .unwrap();
    series
        .iter()
        .flat_map(|s| s.timestamps.iter().copied().zip(s.values.iter().copied()))
        .collect()
}

fn active_at(g: &Group, alertname: &str) -> (i64, AlertState) {
    let rules = g.rules.lock();
    let r = rules.iter().find(|r| r.spec.name() == alertname).unwrap();
    let a = r.alerts.active()[0];
    (a.active_at, a.state)
}

/// Prometheus 3's restart: no `ALERTS` before the second evaluation,
/// after which `activeAt` is read back from `ALERTS_FOR_STATE`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_for_state_is_restored_after_the_second_evaluation() {
    let src = Arc::new(MemSource::new());
    let ctx = Context {
        engine: Engine::new(src.clone(), QueryLimits::default()),
        sink: Arc::new(MemSink(src.clone())),
        notify: None,
        external_labels: LabelSet::new(),
        external_url: String::new(),
        resend_delay: Duration::from_secs(60),
        for_grace: Duration::from_secs(10),
        outage_tolerance: Duration::from_secs(3600),
        claim: None,
    };
    let spec = GroupSpec {
        name: "g".into(),
        file: "rules.yml".into(),
        interval: Duration::from_secs(1),
        query_offset: Duration::ZERO,
        limit: 0,
        rules: vec![
            // `for` past the grace period, pending when it stops.
            alert("Long", "vector(1)", 30, &[("severity", "page")]),
            // Firing when it stops, though its `for` is short.
            alert("Short", "vector(1)", 5, &[]),
            // Pending with a `for` shorter than the grace period.
            alert("Brief", "vector(1)", 8, &[]),
            // Templated labels match no series: never restored.
            alert("Templated", "vector(1)", 30, &[("x", "{{ \"y\" }}")]),
            // Resolved before the stop: a stale marker last.
            alert("Gone", "gone_source == 1", 30, &[]),
        ],
    };
    src.append(&l("gone_source"), T0 - 1000, 1.0);
    src.append(&l("gone_source"), T0 + 3500, 0.0);
    let g = Group::new(spec.clone());
    for k in 0..=6 {
        g.eval(&ctx, T0 + k * 1000).await;
    }
    // Written from the third evaluation on.
    let long = for_state(&src, "Long");
    assert_eq!(long.first(), Some(&(T0 + 2000, (T0 / 1000) as f64)));
    assert_eq!(long.last(), Some(&(T0 + 6000, (T0 / 1000) as f64)));
    assert_eq!(active_at(&g, "Short"), (T0, AlertState::Firing));
    let gone = for_state(&src, "Gone");
    assert!(gone.last().unwrap().1.is_nan(), "{gone:?}");

    // A restart 14 s later.
    let r = T0 + 20_000;
    src.append(&l("gone_source"), r - 500, 1.0);
    let g = Group::new(spec);
    g.eval(&ctx, r).await;
    g.eval(&ctx, r + 1000).await;
    assert_eq!(for_state(&src, "Long").last().unwrap().0, T0 + 6000);
    // Restored at the end of the second evaluation: the 6 s pending
    // before the stop count, the time down does not.
    let (long_at, state) = active_at(&g, "Long");
    assert_eq!(state, AlertState::Pending);
    let restored = r + 1000 - 6000;
    assert!(
        (restored..restored + 1000).contains(&long_at),
        "{long_at} vs {restored}"
    );
    assert_eq!(active_at(&g, "Short").0, T0);
    assert_eq!(active_at(&g, "Brief").0, r);
    assert_eq!(active_at(&g, "Templated").0, r);
    assert_eq!(active_at(&g, "Gone").0, r);
    g.eval(&ctx, r + 2000).await;
    assert_eq!(active_at(&g, "Short"), (T0, AlertState::Firing));
    assert_eq!(
        for_state(&src, "Long").last(),
        Some(&(r + 2000, (long_at / 1000) as f64))
    );
}
