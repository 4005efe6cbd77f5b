//! How rulers share the groups: each group is evaluated by one ruler at a
//! time, under a lease in the bucket, and a dead ruler's groups are taken
//! over at the next evaluation (at worst the one after).
//!
//! ```text
//! <root>/ruler/members/<ruler id>                       heartbeat (its time is the object's)
//! <root>/ruler/leases/<tenant>/<file>/<group>/<seq>     {owner, tick, released}
//! ```
//!
//! A lease is a sequence of objects, each created only if absent (the
//! conditional write the writer's fencing already needs), so of two
//! rulers that create the next one at once exactly one wins. The holder
//! creates the next at each of the group's evaluations, for that
//! evaluation's timestamp, and evaluates only once it has. Others look a
//! moment later: a lease not renewed for this timestamp is taken by the
//! ruler that rendezvous hashing prefers among the live ones (the silent
//! holder left out), or by any ruler once it has gone unrenewed for a
//! whole interval. A holder that is no longer the preferred ruler (one
//! joined) releases the group at its turn, and the preferred one takes it
//! at the same timestamp. Every renewal costs one PUT per group per
//! interval.

use std::sync::Arc;
use std::time::Duration;

use futures::TryStreamExt as _;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt as _, PutMode, PutOptions, PutPayload};
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use strata_codec::clock::Clock;
use strata_rules::group::{Claim, GroupSpec};

/// One lease object.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
struct LeaseRecord {
    owner: String,
    /// The evaluation timestamp (ms) the lease was taken or renewed for.
    tick: i64,
    /// The owner gave the group up.
    #[serde(default)]
    released: bool,
}

/// What this ruler knows of one group's lease.
#[derive(Clone, Debug, Default)]
struct LeaseView {
    /// The newest sequence number seen (0: none yet).
    seq: u64,
    record: Option<LeaseRecord>,
    /// The evaluation timestamp at which the lease was first seen absent.
    absent_since: Option<i64>,
}

impl LeaseView {
    fn mine(&self, me: &str) -> bool {
        self.record
            .as_ref()
            .is_some_and(|r| r.owner == me && !r.released)
    }
}

/// A ruler that said it was alive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub id: String,
    /// Where the other rulers reach it (`ruler.advertise_url`); empty
    /// when it gave none.
    pub url: String,
    /// Its heartbeat's time by the store's clock (ms).
    pub seen: i64,
}

/// This ruler's part in sharing the groups.
pub struct Sharing {
    store: Arc<dyn ObjectStore>,
    /// `<root>/ruler`.
    root: Path,
    me: String,
    heartbeat: Duration,
    /// Live rulers, this one included, sorted by id.
    members: Mutex<Vec<Member>>,
    leases: Mutex<FxHashMap<Path, LeaseView>>,
    /// Each member's URL, by id.
    urls: Mutex<FxHashMap<String, String>>,
    /// Rulers whose lease this one took because they stopped renewing,
    /// with their heartbeat's time then: no group goes to them until
    /// they say they are alive again (or they leave the list).
    suspects: Mutex<FxHashMap<String, i64>>,
    clock: Arc<dyn Clock>,
}

/// The lease's object for sequence number `seq`: zero-padded, so that
/// listing order is numeric order.
fn seq_key(dir: &Path, seq: u64) -> Path {
    dir.clone().join(format!("{seq:020}"))
}

fn encode(name: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(name)
}

/// Rendezvous hashing: the member a group goes to, of `members` without
/// `except`.
fn preferred<'a>(members: &'a [Member], group: &str, except: Option<&str>) -> Option<&'a str> {
    members
        .iter()
        .filter(|m| Some(m.id.as_str()) != except)
        .max_by_key(|m| {
            let mut bytes = Vec::with_capacity(m.id.len() + group.len() + 1);
            bytes.extend_from_slice(m.id.as_bytes());
            bytes.push(0xff);
            bytes.extend_from_slice(group.as_bytes());
            twox_hash::XxHash64::oneshot(0, &bytes)
        })
        .map(|m| m.id.as_str())
}

/// How long a ruler that does not hold a group waits after the group's
/// evaluation time before it looks at the lease, so that a live holder
/// has renewed it.
fn look_delay(interval: Duration) -> Duration {
    (interval / 8).clamp(Duration::from_millis(50), Duration::from_secs(2))
}

impl Sharing {
    pub fn new(
        store: Arc<dyn ObjectStore>,
        ruler_root: &Path,
        me: String,
        heartbeat: Duration,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            store,
            root: ruler_root.clone(),
            members: Mutex::new(vec![Member {
                id: me.clone(),
                url: String::new(),
                seen: 0,
            }]),
            suspects: Mutex::new(FxHashMap::default()),
            urls: Mutex::new(FxHashMap::default()),
            me,
            heartbeat,
            leases: Mutex::new(FxHashMap::default()),
            clock,
        }
    }

    pub fn id(&self) -> &str {
        &self.me
    }

    /// The live rulers as last seen, this one included.
    pub fn members(&self) -> Vec<Member> {
        self.members.lock().clone()
    }

    /// The rulers groups may go to: the live ones but those suspected
    /// dead.
    fn candidates(&self) -> Vec<Member> {
        let suspects = self.suspects.lock();
        self.members
            .lock()
            .iter()
            .filter(|m| !suspects.contains_key(&m.id))
            .cloned()
            .collect()
    }

    /// Remembers that `owner` stopped renewing a lease.
    fn suspect(&self, owner: &str) {
        if owner == self.me {
            return;
        }
        let seen = self
            .members
            .lock()
            .iter()
            .find(|m| m.id == owner)
            .map_or(i64::MAX, |m| m.seen);
        self.suspects.lock().insert(owner.to_owned(), seen);
    }

    fn member_key(&self, id: &str) -> Path {
        self.root.clone().join("members").clone().join(id)
    }

    /// Says this ruler is alive and reads who else is: a ruler whose
    /// heartbeat is older than three intervals than this one's (both by
    /// the store's clock) is left out.
    pub async fn heartbeat_once(&self, advertise_url: &str) -> Result<(), String> {
        let body = serde_json::json!({ "id": self.me, "url": advertise_url }).to_string();
        self.store
            .put(&self.member_key(&self.me), PutPayload::from(body))
            .await
            .map_err(|e| format!("ruler heartbeat: {e}"))?;
        let listed: Vec<object_store::ObjectMeta> = self
            .store
            .list(Some(&self.root.clone().join("members")))
            .try_collect()
            .await
            .map_err(|e| format!("listing the rulers: {e}"))?;
        let Some(newest) = listed.iter().map(|m| m.last_modified).max() else {
            return Ok(());
        };
        let stale_ms = i64::try_from((self.heartbeat * 3).as_millis()).unwrap_or(i64::MAX);
        let mut live: Vec<Member> = Vec::with_capacity(listed.len());
        for meta in listed
            .iter()
            .filter(|m| (newest - m.last_modified).num_milliseconds() <= stale_ms)
        {
            let Some(id) = meta.location.filename().map(str::to_owned) else {
                continue;
            };
            let url = self.member_url(&id, meta).await;
            live.push(Member {
                id,
                url,
                seen: meta.last_modified.timestamp_millis(),
            });
        }
        if !live.iter().any(|m| m.id == self.me) {
            live.push(Member {
                id: self.me.clone(),
                url: advertise_url.to_owned(),
                seen: 0,
            });
        }
        self.suspects.lock().retain(|id, then| {
            live.iter()
                .find(|m| &m.id == id)
                .is_some_and(|m| m.seen <= *then)
        });
        live.sort_by(|a, b| a.id.cmp(&b.id));
        *self.members.lock() = live;
        Ok(())
    }

    /// A member's URL from its heartbeat, read once: a ruler's id is new
    /// at each start, and so is what it advertises.
    async fn member_url(&self, id: &str, meta: &object_store::ObjectMeta) -> String {
        if let Some(url) = self.urls.lock().get(id) {
            return url.clone();
        }
        let url = match self.store.get(&meta.location).await {
            Ok(r) => r
                .bytes()
                .await
                .ok()
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                .and_then(|v| v.get("url")?.as_str().map(str::to_owned))
                .unwrap_or_default(),
            Err(_) => String::new(),
        };
        let mut urls = self.urls.lock();
        // Rulers that left are forgotten with the rest at times.
        if urls.len() > 1024 {
            urls.clear();
        }
        urls.insert(id.to_owned(), url.clone());
        url
    }

    /// Says this ruler is alive every heartbeat interval until aborted.
    pub async fn heartbeat(self: Arc<Self>, advertise_url: String) {
        loop {
            if let Err(e) = self.heartbeat_once(&advertise_url).await {
                tracing::warn!(error = %e, "ruler heartbeat failed");
            }
            tokio::time::sleep(self.heartbeat).await;
        }
    }

    /// Leaves: this ruler's heartbeat is deleted and the groups it holds
    /// released, so that the others take them at their next evaluation.
    pub async fn leave(&self) {
        let held: Vec<(Path, LeaseView)> = self
            .leases
            .lock()
            .iter()
            .filter(|(_, v)| v.mine(&self.me))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (dir, view) in held {
            let tick = view.record.as_ref().map_or(0, |r| r.tick);
            let _ = self.create(&dir, view.seq + 1, tick, true).await;
        }
        let _ = self.store.delete(&self.member_key(&self.me)).await;
    }

    fn lease_dir(&self, tenant: &str, group: &GroupSpec) -> Path {
        self.root
            .clone()
            .join("leases")
            .clone()
            .join(tenant)
            .clone()
            .join(encode(&group.file))
            .clone()
            .join(encode(&group.name))
    }

    /// Whether this ruler holds `group` of `tenant` now.
    pub fn holds(&self, tenant: &str, group: &GroupSpec) -> bool {
        let dir = self.lease_dir(tenant, group);
        self.leases
            .lock()
            .get(&dir)
            .is_some_and(|v| v.mine(&self.me))
    }

    /// Creates lease object `seq`; false when another ruler created it
    /// first.
    async fn create(
        &self,
        dir: &Path,
        seq: u64,
        tick: i64,
        released: bool,
    ) -> Result<bool, String> {
        let record = LeaseRecord {
            owner: self.me.clone(),
            tick,
            released,
        };
        let body = serde_json::to_vec(&record).map_err(|e| e.to_string())?;
        let opts = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        match self
            .store
            .put_opts(&seq_key(dir, seq), PutPayload::from(body), opts)
            .await
        {
            Ok(_) => {
                {
                    let mut leases = self.leases.lock();
                    let view = leases.entry(dir.clone()).or_default();
                    if view.seq < seq {
                        view.seq = seq;
                        view.record = Some(record);
                    }
                }
                // Two kept: a ruler reading forward from the one before
                // still finds this one.
                if seq > 2 {
                    let _ = self.store.delete(&seq_key(dir, seq - 2)).await;
                }
                Ok(true)
            }
            Err(object_store::Error::AlreadyExists { .. })
            | Err(object_store::Error::Precondition { .. }) => Ok(false),
            Err(e) => Err(format!("lease: {e}")),
        }
    }

    async fn read(&self, key: &Path) -> Result<Option<LeaseRecord>, String> {
        match self.store.get(key).await {
            Ok(r) => {
                let bytes = r.bytes().await.map_err(|e| format!("lease: {e}"))?;
                Ok(serde_json::from_slice(&bytes).ok())
            }
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(format!("lease: {e}")),
        }
    }

    /// The newest lease object by listing (the start, and before taking a
    /// lease: reading forward could miss that old objects were deleted).
    async fn newest_listed(&self, dir: &Path) -> Result<(u64, Option<LeaseRecord>), String> {
        let listed: Vec<object_store::ObjectMeta> = self
            .store
            .list(Some(dir))
            .try_collect()
            .await
            .map_err(|e| format!("lease: {e}"))?;
        let Some(seq) = listed
            .iter()
            .filter_map(|m| m.location.filename()?.parse::<u64>().ok())
            .max()
        else {
            return Ok((0, None));
        };
        Ok((seq, self.read(&seq_key(dir, seq)).await?))
    }

    /// The newest lease object, read forward from the one last seen.
    async fn newest(&self, dir: &Path, mut view: LeaseView) -> Result<LeaseView, String> {
        if view.seq == 0 && view.record.is_none() {
            let (seq, record) = self.newest_listed(dir).await?;
            view.seq = seq;
            view.record = record;
            return Ok(view);
        }
        while let Some(record) = self.read(&seq_key(dir, view.seq + 1)).await? {
            view.seq += 1;
            view.record = Some(record);
        }
        Ok(view)
    }

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

    fn remember(
        &self,
        dir: &Path,
        seq: u64,
        record: Option<LeaseRecord>,
        absent_since: Option<i64>,
    ) {
        self.leases.lock().insert(
            dir.clone(),
            LeaseView {
                seq,
                record,
                absent_since,
            },
        );
    }

    /// The clock the leases' timestamps come from.
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }
}

/// [`Sharing`] for one tenant's groups.
pub struct TenantClaim {
    pub sharing: Arc<Sharing>,
    pub tenant: String,
}

#[async_trait::async_trait]
impl Claim for TenantClaim {
    async fn claim(&self, group: &GroupSpec, ts: i64) -> bool {
        self.sharing.claim(&self.tenant, group, ts).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str) -> GroupSpec {
        GroupSpec {
            name: name.into(),
            file: "rules.yml".into(),
            interval: Duration::from_secs(1),
            query_offset: Duration::ZERO,
            limit: 0,
            rules: Vec::new(),
        }
    }

    fn ruler(store: &Arc<dyn ObjectStore>, id: &str) -> Arc<Sharing> {
        Arc::new(Sharing::new(
            Arc::clone(store),
            &Path::from("db/ruler"),
            id.into(),
            Duration::from_secs(1),
            Arc::new(strata_codec::clock::SystemClock),
        ))
    }

    #[tokio::test]
    async fn one_ruler_at_a_time_and_a_silent_one_is_replaced() {
        let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
        let (a, b) = (ruler(&store, "a"), ruler(&store, "b"));
        a.heartbeat_once("").await.unwrap();
        b.heartbeat_once("").await.unwrap();
        a.heartbeat_once("").await.unwrap();
        let groups: Vec<GroupSpec> = (0..16).map(|i| spec(&format!("g{i}"))).collect();
        let mut held_by_a = 0;
        for ts in [1_000, 2_000, 3_000] {
            for g in &groups {
                let (x, y) = tokio::join!(a.claim("t", g, ts), b.claim("t", g, ts));
                assert!(x ^ y, "{} at {ts}: a {x}, b {y}", g.name);
                if ts == 3_000 && x {
                    held_by_a += 1;
                }
            }
        }
        // Shared, not all on one.
        assert!((1..16).contains(&held_by_a), "{held_by_a} of 16 on a");
        // a stops renewing: b takes each of a's groups at the next
        // timestamp.
        for g in &groups {
            assert!(b.claim("t", g, 4_000).await, "{}", g.name);
        }
        // a comes back with what it knew: it never evaluates beside b, and
        // by the next timestamp each group has one ruler again.
        for g in &groups {
            let (x, y) = tokio::join!(a.claim("t", g, 5_000), b.claim("t", g, 5_000));
            assert!(!(x && y), "{} at 5000: both", g.name);
        }
        for g in &groups {
            let (x, y) = tokio::join!(a.claim("t", g, 6_000), b.claim("t", g, 6_000));
            assert!(x ^ y, "{} at 6000: a {x}, b {y}", g.name);
        }
    }

    #[tokio::test]
    async fn a_dead_ruler_still_listed_gets_no_group_back() {
        let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
        let (a, b, c) = (ruler(&store, "a"), ruler(&store, "b"), ruler(&store, "c"));
        for r in [&a, &b, &c, &a, &b] {
            r.heartbeat_once("").await.unwrap();
        }
        let groups: Vec<GroupSpec> = (0..12).map(|i| spec(&format!("g{i}"))).collect();
        for ts in [1_000, 2_000] {
            for g in &groups {
                let (x, y, z) = tokio::join!(
                    a.claim("t", g, ts),
                    b.claim("t", g, ts),
                    c.claim("t", g, ts)
                );
                assert_eq!(u8::from(x) + u8::from(y) + u8::from(z), 1, "{}", g.name);
            }
        }
        // c dies; its heartbeat is still fresh, so a and b still list it:
        // its groups are taken once and stay taken, none handed back to it.
        for ts in [3_000, 4_000, 5_000, 6_000] {
            for g in &groups {
                let (x, y) = tokio::join!(a.claim("t", g, ts), b.claim("t", g, ts));
                assert!(x ^ y, "{} at {ts}: a {x}, b {y}", g.name);
            }
        }
    }

    #[tokio::test]
    async fn a_leaving_ruler_releases_its_groups() {
        let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
        let a = ruler(&store, "a");
        let b = ruler(&store, "b");
        let g = spec("g");
        assert!(a.claim("t", &g, 1_000).await);
        assert!(!b.claim("t", &g, 1_000).await);
        a.leave().await;
        // b is not the preferred ruler by its view (it sees only itself,
        // so it is): it takes the released group at the next timestamp.
        assert!(b.claim("t", &g, 2_000).await);
        assert!(!a.claim("t", &g, 2_000).await);
    }
}
