//! A claim at a group's evaluation: the holder renews its lease, the
//! others look a moment later and take a lease not renewed.

use std::time::Duration;

use strata_rules::group::GroupSpec;

use super::members::preferred;
use super::Sharing;

/// How long a ruler that does not hold a group waits after the group's
/// evaluation time before it looks at the lease, so that a live holder
/// has renewed it.
fn look_delay(interval: Duration) -> Duration {
    (interval / 8).clamp(Duration::from_millis(50), Duration::from_secs(2))
}

impl Sharing {
    /// Whether this ruler evaluates `group` of `tenant` at `ts`.
    pub async fn claim(&self, tenant: &str, group: &GroupSpec, ts: i64) -> bool {
        match self.try_claim(tenant, group, ts).await {
            Ok(mine) => mine,
            Err(e) => {
                // The store fails for every ruler alike: the holder goes
                // on evaluating (alerts matter more than a double write),
                // the others wait.
                let held = self.holds(tenant, group);
                tracing::warn!(group = %group.name, error = %e, held, "rule group lease not renewed");
                held
            }
        }
    }

    async fn try_claim(&self, tenant: &str, group: &GroupSpec, ts: i64) -> Result<bool, String> {
        let dir = self.lease_dir(tenant, group);
        let key = format!("{tenant}\u{ff}{}\u{ff}{}", group.file, group.name);
        let interval = i64::try_from(group.interval.as_millis()).unwrap_or(i64::MAX);
        let members = self.candidates();
        let view = self.leases.lock().get(&dir).cloned().unwrap_or_default();
        if view.mine(&self.me) {
            if preferred(&members, &key, None).is_some_and(|p| p != self.me) {
                // A ruler joined that the group now goes to: it takes it
                // at this same timestamp.
                self.create(&dir, view.seq + 1, ts, true).await?;
                tracing::info!(group = %group.name, "rule group handed over to another ruler");
                return Ok(false);
            }
            if self.create(&dir, view.seq + 1, ts, false).await? {
                return Ok(true);
            }
            tracing::info!(group = %group.name, "rule group taken by another ruler");
            let fresh = self.newest_listed(&dir).await?;
            self.remember(&dir, fresh.0, fresh.1, None);
            return Ok(false);
        }
        // Not held here: let a live holder renew first.
        tokio::time::sleep(look_delay(group.interval)).await;
        let view = self.newest(&dir, view).await?;
        let take = match &view.record {
            None => {
                let since = view.absent_since.unwrap_or(ts);
                preferred(&members, &key, None) == Some(self.me.as_str()) || ts - since >= interval
            }
            Some(r) if r.released => {
                preferred(&members, &key, None) == Some(self.me.as_str()) || ts - r.tick > interval
            }
            Some(r) if r.tick >= ts => false,
            Some(r) => {
                preferred(&members, &key, Some(&r.owner)) == Some(self.me.as_str())
                    || ts - r.tick > interval
            }
        };
        let absent_since = if view.record.is_none() {
            Some(view.absent_since.unwrap_or(ts))
        } else {
            None
        };
        if !take {
            self.remember(&dir, view.seq, view.record, absent_since);
            return Ok(false);
        }
        let (seq, record) = self.newest_listed(&dir).await?;
        if seq != view.seq {
            // Renewed or taken while we looked.
            self.remember(&dir, seq, record, None);
            return Ok(false);
        }
        if self.create(&dir, seq + 1, ts, false).await? {
            if let Some(r) = view.record.as_ref().filter(|r| !r.released) {
                self.suspect(&r.owner);
            }
            tracing::info!(group = %group.name, "rule group taken over");
            return Ok(true);
        }
        let fresh = self.newest_listed(&dir).await?;
        self.remember(&dir, fresh.0, fresh.1, None);
        Ok(false)
    }
}
