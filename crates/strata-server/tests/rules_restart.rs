//! A crash while alerts are pending or firing: the node is killed with
//! SIGKILL and started again on the same data, and each alert takes back
//! its `for` state from `ALERTS_FOR_STATE` as Prometheus 3 does, then fires
//! on time.
//!
//! The same scenario runs on Prometheus 3.16 (killed and started again on
//! its TSDB) beside Strata, and the same expectations are checked on both,
//! so that they are Prometheus' behaviour and not a guess at it:
//!
//! - after the start, nothing is written to `ALERTS` or `ALERTS_FOR_STATE`
//!   until the second evaluation has run and the state is restored;
//! - an alert that was firing keeps its `activeAt` (whole seconds, as
//!   `ALERTS_FOR_STATE` holds it) and fires at the next evaluation;
//! - a pending one whose `for` is shorter than the grace period starts its
//!   `for` over at the first evaluation;
//! - a pending one with less than the grace period of its `for` left fires
//!   the grace period after the restore;
//! - a pending one with more does not count the time down as pending: its
//!   `activeAt` moves on by the outage.
//!
//! A missing Prometheus 3 fails the test.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{
    http_get, now_ms, prometheus3_bin, query_matrix, wait_until, PrometheusProcess, StrataProcess,
};

/// Both sides' `for` grace period.
const GRACE_MS: i64 = 12_000;
/// The group's interval.
const INTERVAL_MS: i64 = 1_000;
/// How long after the alerts became active the node is killed.
const KILL_AFTER_MS: i64 = 5_500;

/// One alert for each case, all active from the same evaluation on.
const RULES: &str = r#"
groups:
  - name: restart
    interval: 1s
    rules:
      # Firing when killed (after 2 s): keeps its activeAt.
      - alert: Fired
        expr: vector(1)
        for: 2s
      # Pending, `for` under the grace period: starts over.
      - alert: Brief
        expr: vector(1)
        for: 10s
      # Pending with 10 s of its `for` left, under the grace period: fires
      # the grace period after the restore.
      - alert: Grace
        expr: vector(1)
        for: 15s
        labels:
          severity: page
      # Pending with 20 s left: the outage does not count.
      - alert: Shift
        expr: vector(1)
        for: 25s
"#;

/// What the scenario needs of a node.
enum Node {
    Strata {
        process: StrataProcess,
        data: PathBuf,
        env: Vec<(String, String)>,
    },
    Prometheus {
        process: Option<PrometheusProcess>,
        bin: PathBuf,
        config: String,
        data: PathBuf,
        args: Vec<String>,
    },
}

impl Node {
    fn strata(data: &Path, rules: &Path) -> Self {
        let env: Vec<(String, String)> = [
            ("STRATA_RULES_RULE_FILES", rules.display().to_string()),
            ("STRATA_RULES_EVALUATION_INTERVAL", "1s".into()),
            ("STRATA_RULES_FOR_GRACE_PERIOD", format!("{GRACE_MS}ms")),
            ("STRATA_RULES_FOR_OUTAGE_TOLERANCE", "1h".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let process = StrataProcess::start(data, &pairs(&env));
        Self::Strata {
            process,
            data: data.to_owned(),
            env,
        }
    }

    fn prometheus(data: &Path, rules: &Path) -> Self {
        let bin = prometheus3_bin("prometheus");
        let config = format!(
            "global:\n  evaluation_interval: 1s\nrule_files:\n  - {}\n",
            rules.display()
        );
        let args = vec![
            format!("--rules.alert.for-grace-period={GRACE_MS}ms"),
            "--rules.alert.for-outage-tolerance=1h".to_owned(),
        ];
        let process = Some(PrometheusProcess::start_binary_on_tsdb(
            &bin,
            &config,
            data,
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
        ));
        Self::Prometheus {
            process,
            bin,
            config,
            data: data.to_owned(),
            args,
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Self::Strata { .. } => "Strata",
            Self::Prometheus { .. } => "Prometheus",
        }
    }

    fn port(&self) -> u16 {
        match self {
            Self::Strata { process, .. } => process.port,
            Self::Prometheus { process, .. } => process.as_ref().unwrap().port,
        }
    }

    /// SIGKILL, then a start on the same data.
    fn crash_and_restart(&mut self) {
        match self {
            Self::Strata {
                process, data, env, ..
            } => {
                let status = process.kill9();
                assert!(!status.success(), "strata was killed: {status}");
                let port = process.port;
                *process = StrataProcess::start_on(port, data, &pairs(env));
            }
            Self::Prometheus {
                process,
                bin,
                config,
                data,
                args,
            } => {
                let mut old = process.take().unwrap();
                old.child.kill().unwrap();
                old.child.wait().unwrap();
                drop(old);
                *process = Some(PrometheusProcess::start_binary_on_tsdb(
                    bin,
                    config,
                    data,
                    &args.iter().map(String::as_str).collect::<Vec<_>>(),
                ));
            }
        }
    }
}

fn pairs(env: &[(String, String)]) -> Vec<(&str, &str)> {
    env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

/// The active alerts by name: state and `activeAt` (ms).
fn alerts(port: u16) -> BTreeMap<String, (String, i64)> {
    let r = http_get(port, "/api/v1/alerts").unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["data"]["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let at = humantime::parse_rfc3339(a["activeAt"].as_str().unwrap()).unwrap();
            let ms = at
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis() as i64;
            (
                a["labels"]["alertname"].as_str().unwrap().to_owned(),
                (a["state"].as_str().unwrap().to_owned(), ms),
            )
        })
        .collect()
}

/// The samples of every series of `selector` in the last 5 minutes, by
/// time: (ms, value).
fn samples(port: u16, selector: &str) -> Vec<(i64, f64)> {
    let mut out: Vec<(i64, f64)> = query_matrix(port, &format!("{selector}[5m]"), now_ms())
        .into_values()
        .flatten()
        .map(|(t, v)| (t, v.parse().unwrap()))
        .collect();
    out.sort_by_key(|(t, _)| *t);
    out
}

fn secs(ms: i64) -> i64 {
    ms.div_euclid(1000) * 1000
}

/// The scenario on one node; panics naming the node when it does not go
/// as Prometheus 3 goes.
fn crash_while_pending(mut node: Node) {
    let who = node.name();
    let port = node.port();
    wait_until(Duration::from_secs(30), "Fired fires", || {
        alerts(port)
            .get("Fired")
            .is_some_and(|(state, _)| state == "firing")
    });
    let before = alerts(port);
    let orig = before["Shift"].1;
    for name in ["Fired", "Brief", "Grace", "Shift"] {
        assert_eq!(before[name].1, orig, "{who}: {before:?}");
    }
    let kill_at = orig + KILL_AFTER_MS;
    std::thread::sleep(Duration::from_millis((kill_at - now_ms()).max(0) as u64));
    let at_kill = alerts(node.port());
    assert_eq!(at_kill["Fired"].0, "firing", "{who}: {at_kill:?}");
    for name in ["Brief", "Grace", "Shift"] {
        assert_eq!(at_kill[name].0, "pending", "{who}: {at_kill:?}");
    }
    let down = now_ms();
    node.crash_and_restart();
    let port = node.port();

    // The first samples after the start: at the third evaluation.
    wait_until(
        Duration::from_secs(30),
        "ALERTS_FOR_STATE written again",
        || {
            samples(port, r#"ALERTS_FOR_STATE{alertname="Shift"}"#)
                .last()
                .is_some_and(|(t, _)| *t > down)
        },
    );
    let t3 = samples(port, r#"ALERTS_FOR_STATE{alertname="Shift"}"#)
        .into_iter()
        .find(|(t, _)| *t > down)
        .unwrap()
        .0;
    let (t1, t2) = (t3 - 2 * INTERVAL_MS, t3 - INTERVAL_MS);
    assert!(
        t1 > down,
        "{who}: evaluated at {t1} before the restart at {down}"
    );
    let restored = alerts(port);

    let mut expected_firing = BTreeMap::new();
    for name in ["Fired", "Brief", "Grace", "Shift"] {
        let for_state = samples(port, &format!("ALERTS_FOR_STATE{{alertname=\"{name}\"}}"));
        let (last_t, last_v) = *for_state
            .iter()
            .rfind(|(t, _)| *t < down)
            .unwrap_or_else(|| panic!("{who}: no {name} for state before the crash"));
        assert_eq!(last_v as i64 * 1000, secs(orig), "{who}: {name}");
        // No ALERTS between the crash and the third evaluation.
        let states = samples(port, &format!("ALERTS{{alertname=\"{name}\"}}"));
        let gap: Vec<i64> = states
            .iter()
            .map(|(t, _)| *t)
            .filter(|t| *t > last_t && *t < t3)
            .collect();
        assert!(
            gap.is_empty(),
            "{who}: {name} written at {gap:?} before the restore"
        );

        let (was, down_at) = (last_v as i64 * 1000, secs(last_t));
        let hold = match name {
            "Fired" => 2_000,
            "Brief" => 10_000,
            "Grace" => 15_000,
            _ => 25_000,
        };
        let remaining = hold - (down_at - was);
        let got = restored[name].1;
        // The restore runs between the second evaluation and the third.
        let (lo, hi) = match name {
            "Fired" => {
                assert!(remaining <= 0, "{who}: {name} was not firing");
                (was, was)
            }
            "Brief" => {
                assert!(remaining > 0 && hold < GRACE_MS, "{who}: {name}");
                (t1, t1)
            }
            "Grace" => {
                assert!(
                    remaining > 0 && remaining < GRACE_MS && hold >= GRACE_MS,
                    "{who}: {name}"
                );
                (t2 + GRACE_MS - hold, t3 + GRACE_MS - hold)
            }
            _ => {
                assert!(remaining >= GRACE_MS, "{who}: {name}");
                (was + t2 - down_at, was + t3 - down_at)
            }
        };
        assert!(
            (lo..=hi).contains(&got),
            "{who}: {name} restored with activeAt {got}, not in [{lo}, {hi}] \
             (active from {was}, last evaluated at {down_at} before the crash, \
             evaluated again from {t1})"
        );
        // ALERTS_FOR_STATE shows it from the third evaluation on.
        let first_after = for_state.iter().find(|(t, _)| *t > down).unwrap();
        assert_eq!(
            (first_after.0, first_after.1 as i64 * 1000),
            (t3, secs(got)),
            "{who}: {name}"
        );
        // It fires at the first evaluation at least `for` after it.
        let due = got + hold;
        let firing_at = t1 + (due - t1 + INTERVAL_MS - 1).div_euclid(INTERVAL_MS) * INTERVAL_MS;
        expected_firing.insert(name, firing_at.max(t3));
    }

    let last = *expected_firing.values().max().unwrap();
    wait_until(
        Duration::from_millis((last - now_ms()).max(0) as u64 + 15_000),
        "every alert fires",
        || alerts(port).values().all(|(state, _)| state == "firing"),
    );
    for (name, at) in expected_firing {
        let firing = samples(
            port,
            &format!("ALERTS{{alertname=\"{name}\",alertstate=\"firing\"}}"),
        );
        let first = firing.iter().map(|(t, _)| *t).find(|t| *t > down);
        assert_eq!(
            first,
            Some(at),
            "{who}: {name} fired at {first:?}, due at {at} (evaluations from {t1})"
        );
    }
    eprintln!("{who}: every alert restored and fired on time");
}

#[test]
fn alerts_keep_their_for_state_across_a_crash_as_in_prometheus_3() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("restart.yml");
    std::fs::write(&rules, RULES).unwrap();
    let strata_data = dir.path().join("strata");
    let prom_data = dir.path().join("prometheus");
    std::fs::create_dir_all(&strata_data).unwrap();
    std::fs::create_dir_all(&prom_data).unwrap();
    let began = std::time::Instant::now();
    std::thread::scope(|s| {
        let prometheus = s.spawn(|| crash_while_pending(Node::prometheus(&prom_data, &rules)));
        let strata = s.spawn(|| crash_while_pending(Node::strata(&strata_data, &rules)));
        let p = prometheus.join();
        let st = strata.join();
        if let Err(e) = p {
            std::panic::resume_unwind(e);
        }
        if let Err(e) = st {
            std::panic::resume_unwind(e);
        }
    });
    eprintln!("took {:?}", began.elapsed());
}
