//! Running groups: each on its own interval, at an offset within it
//! fixed by its name and file (so groups spread across the interval and
//! keep their times across restarts, as Prometheus' do), an evaluation
//! that comes too late counted as missed rather than run in a burst; and
//! reloads that keep the state of rules that stay.

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

/// A group's offset within its interval: the hash Prometheus takes of the
/// labels `{file, name}` (xxHash64 of each name and value, each followed
/// by 0xff), modulo the interval in nanoseconds.
pub fn group_offset_ms(name: &str, file: &str, interval: Duration) -> i64 {
    let mut bytes = Vec::with_capacity(name.len() + file.len() + 12);
    for (n, v) in [("file", file), ("name", name)] {
        bytes.extend_from_slice(n.as_bytes());
        bytes.push(0xff);
        bytes.extend_from_slice(v.as_bytes());
        bytes.push(0xff);
    }
    let hash = twox_hash::XxHash64::oneshot(0, &bytes);
    let nanos = u64::try_from(interval.as_nanos())
        .unwrap_or(u64::MAX)
        .max(1);
    i64::try_from((hash % nanos) / 1_000_000).unwrap_or(0)
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
    /// health, what they wrote last).
    pub fn update(&self, specs: Vec<GroupSpec>) {
        let mut running = self.running.lock();
        let old: Vec<Running> = std::mem::take(&mut *running);
        for r in &old {
            r.task.abort();
        }
        for spec in specs {
            let group = Arc::new(Group::new(spec));
            if let Some(o) = old.iter().find(|o| o.group.key() == group.key()) {
                group.take_state(&o.group);
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
}
