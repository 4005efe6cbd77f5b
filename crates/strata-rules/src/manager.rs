//! Running groups: each on its own interval, at an offset within it
//! fixed by its name and file as Prometheus 3 fixes it (so groups spread
//! across the interval, keep their times across restarts, and evaluate at
//! the instants Prometheus would), an evaluation that comes too late
//! counted as missed rather than run in a burst; and reloads that keep the
//! state of rules that stay.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use strata_codec::clock::Clock;

use crate::alerting::ms;
use crate::group::{Context, Group, GroupSpec};

/// The timestamp of the evaluation of a group due at or before `now_ms`:
/// Prometheus' `Group.EvalTimestamp`.
pub fn eval_timestamp(now_ms: i64, interval_ms: i64, offset_ms: i64) -> i64 {
    let adjusted = now_ms - offset_ms;
    adjusted - adjusted.rem_euclid(interval_ms) + offset_ms
}

/// A group's offset within its interval, in nanoseconds: Prometheus 3's
/// `Group.hash` modulo the interval. The hash is xxHash64 of the labels
/// `{file, name}` as Prometheus 3 holds them (its default `stringlabels`
/// build): each name and value after its length (one byte below 255,
/// else 255 and three little-endian bytes), names sorted.
pub fn group_offset_ns(name: &str, file: &str, interval: Duration) -> u64 {
    let mut bytes = Vec::with_capacity(name.len() + file.len() + 16);
    for s in ["file", file, "name", name] {
        let len = s.len();
        if len < 255 {
            bytes.push(len as u8);
        } else {
            bytes.push(255);
            bytes.extend_from_slice(&(len as u32).to_le_bytes()[..3]);
        }
        bytes.extend_from_slice(s.as_bytes());
    }
    let hash = twox_hash::XxHash64::oneshot(0, &bytes);
    let nanos = u64::try_from(interval.as_nanos())
        .unwrap_or(u64::MAX)
        .max(1);
    hash % nanos
}

/// [`group_offset_ns`] in whole milliseconds: evaluation timestamps are
/// milliseconds, Prometheus' truncated from its nanoseconds.
pub fn group_offset_ms(name: &str, file: &str, interval: Duration) -> i64 {
    i64::try_from(group_offset_ns(name, file, interval) / 1_000_000).unwrap_or(0)
}

/// A group and the task that runs it.
struct Running {
    group: Arc<Group>,
    task: tokio::task::JoinHandle<()>,
}

/// Every group of a rule set, each evaluated on its own schedule.
pub struct RuleManager {
    ctx: Arc<Context>,
    clock: Arc<dyn Clock>,
    running: Mutex<Vec<Running>>,
    /// Whether groups were loaded once: those of the first load restore
    /// their alerts' `for` state, those a later load adds or changes do not,
    /// as in Prometheus.
    loaded: std::sync::atomic::AtomicBool,
    /// Where groups run: the caller's runtime, or one of its choosing (a
    /// server runs rules beside its queries, below ingest).
    runtime: Option<tokio::runtime::Handle>,
}

impl RuleManager {
    pub fn new(ctx: Arc<Context>, clock: Arc<dyn Clock>) -> Self {
        Self {
            ctx,
            clock,
            running: Mutex::new(Vec::new()),
            loaded: std::sync::atomic::AtomicBool::new(false),
            runtime: None,
        }
    }

    /// Runs the groups on `runtime` instead of the caller's.
    pub fn on_runtime(mut self, runtime: tokio::runtime::Handle) -> Self {
        self.runtime = Some(runtime);
        self
    }

    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    /// Runs `specs` in place of the groups running now. A group of the
    /// same file and name keeps the state of its rules that stay (alerts,
    /// health, what they wrote last). The groups of the first load restore
    /// their alerts' `for` state after their second evaluation; a group a
    /// later load adds or changes starts restored.
    pub fn update(&self, specs: Vec<GroupSpec>) {
        let first = !self.loaded.swap(true, std::sync::atomic::Ordering::SeqCst);
        let mut running = self.running.lock();
        let old: Vec<Running> = std::mem::take(&mut *running);
        for r in &old {
            r.task.abort();
        }
        for spec in specs {
            let group = Arc::new(Group::new(spec));
            let before = old.iter().find(|o| o.group.key() == group.key());
            if let Some(o) = before {
                group.take_state(&o.group);
            }
            if !first && before.is_none_or(|o| o.group.spec != group.spec) {
                group.skip_restore();
            }
            let work = run(
                Arc::clone(&group),
                Arc::clone(&self.ctx),
                Arc::clone(&self.clock),
            );
            let task = match &self.runtime {
                Some(rt) => rt.spawn(work),
                None => tokio::spawn(work),
            };
            running.push(Running { group, task });
        }
    }

    /// The groups, in the order they were loaded.
    pub fn groups(&self) -> Vec<Arc<Group>> {
        self.running
            .lock()
            .iter()
            .map(|r| Arc::clone(&r.group))
            .collect()
    }

    /// Stops every group.
    pub fn stop(&self) {
        for r in self.running.lock().drain(..) {
            r.task.abort();
        }
    }
}

impl Drop for RuleManager {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Evaluates `group` at each of its timestamps until aborted.
async fn run(group: Arc<Group>, ctx: Arc<Context>, clock: Arc<dyn Clock>) {
    let interval = ms(group.spec.interval).max(1);
    let offset = group_offset_ms(&group.spec.name, &group.spec.file, group.spec.interval);
    let mut next = eval_timestamp(clock.now_ms(), interval, offset) + interval;
    let mut owned = false;
    loop {
        let wait = next - clock.now_ms();
        if wait > 0 {
            tokio::time::sleep(Duration::from_millis(wait.unsigned_abs())).await;
        }
        let now = clock.now_ms();
        // Late by whole intervals (the process was stopped, or the
        // evaluation before took longer than the interval): those are
        // counted as missed, and the group evaluates once, at the latest.
        let missed = (now - next) / interval;
        if missed > 0 {
            next += missed * interval;
        }
        if let Some(claim) = &ctx.claim {
            if !claim.claim(&group.spec, next).await {
                // Another process evaluates it now; what this one knew of
                // its alerts is stale when the group comes back.
                if owned {
                    group.forget_state();
                    owned = false;
                }
                next += interval;
                continue;
            }
            owned = true;
        }
        if missed > 0 {
            group.stats.lock().iterations_missed += missed.unsigned_abs();
        }
        group.eval(&ctx, next).await;
        next += interval;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evaluations_fall_at_the_groups_offset() {
        let min = 60_000;
        assert_eq!(
            eval_timestamp(10 * min + 5_000, min, 7_000),
            10 * min - 53_000
        );
        assert_eq!(
            eval_timestamp(10 * min + 7_000, min, 7_000),
            10 * min + 7_000
        );
        let off = group_offset_ms("g", "rules.yml", Duration::from_secs(60));
        assert!((0..60_000).contains(&off));
        // Fixed by name and file.
        assert_eq!(
            off,
            group_offset_ms("g", "rules.yml", Duration::from_secs(60))
        );
        assert_ne!(
            off,
            group_offset_ms("h", "rules.yml", Duration::from_secs(60))
        );
    }

    /// Offsets Prometheus 3.16 computes (`labels.New(name, file).Hash() %
    /// interval` from its `model/labels`, default build), so a group
    /// evaluates at the same instants in Strata and in Prometheus.
    #[test]
    fn offsets_are_prometheus_3s() {
        let long_file = format!("/srv/rules/{}.yml", "abcdefghijklmnopqrstuvwxyz".repeat(10));
        let cases = [
            ("g", "rules.yml".to_owned(), 60, 17_426_745_134),
            (
                "node",
                "/etc/prometheus/rules/node.yml".to_owned(),
                15,
                7_707_652_404,
            ),
            (
                "prometheus",
                "/tmp/x/rules.yml".to_owned(),
                2,
                1_872_877_155,
            ),
            // A file name of 255 bytes or more: a four-byte length.
            ("a-very-long-group-name", long_file, 60, 49_478_047_043),
        ];
        for (name, file, secs, want) in cases {
            let interval = Duration::from_secs(secs);
            assert_eq!(group_offset_ns(name, &file, interval), want, "{name}");
            assert_eq!(
                group_offset_ms(name, &file, interval),
                (want / 1_000_000) as i64
            );
        }
    }
}
