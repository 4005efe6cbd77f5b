//! The rulers alive, by their heartbeats in the bucket, and which of them
//! a group goes to.

use std::sync::Arc;

use futures::TryStreamExt as _;
use object_store::path::Path;
use object_store::{ObjectStoreExt as _, PutPayload};

use super::objects::LeaseView;
use super::{Member, Sharing};

/// Rendezvous hashing: the member a group goes to, of `members` without
/// `except`.
pub(super) fn preferred<'a>(
    members: &'a [Member],
    group: &str,
    except: Option<&str>,
) -> Option<&'a str> {
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

impl Sharing {
    /// The live rulers as last seen, this one included.
    pub fn members(&self) -> Vec<Member> {
        self.members.lock().clone()
    }

    /// The rulers groups may go to: the live ones but those suspected
    /// dead.
    pub(super) fn candidates(&self) -> Vec<Member> {
        let suspects = self.suspects.lock();
        self.members
            .lock()
            .iter()
            .filter(|m| !suspects.contains_key(&m.id))
            .cloned()
            .collect()
    }

    /// Remembers that `owner` stopped renewing a lease.
    pub(super) fn suspect(&self, owner: &str) {
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
}
