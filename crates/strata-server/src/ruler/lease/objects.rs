//! A group's lease as objects in the bucket: each created only if
//! absent, read forward from the one last seen.

use futures::TryStreamExt as _;
use object_store::path::Path;
use object_store::{ObjectStoreExt as _, PutMode, PutOptions, PutPayload};
use serde::{Deserialize, Serialize};
use strata_rules::group::GroupSpec;

use super::{encode, Sharing};

/// One lease object.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub(super) struct LeaseRecord {
    pub(super) owner: String,
    /// The evaluation timestamp (ms) the lease was taken or renewed for.
    pub(super) tick: i64,
    /// The owner gave the group up.
    #[serde(default)]
    pub(super) released: bool,
}

/// What this ruler knows of one group's lease.
#[derive(Clone, Debug, Default)]
pub(super) struct LeaseView {
    /// The newest sequence number seen (0: none yet).
    pub(super) seq: u64,
    pub(super) record: Option<LeaseRecord>,
    /// The evaluation timestamp at which the lease was first seen absent.
    pub(super) absent_since: Option<i64>,
}

impl LeaseView {
    pub(super) fn mine(&self, me: &str) -> bool {
        self.record
            .as_ref()
            .is_some_and(|r| r.owner == me && !r.released)
    }
}

/// The lease's object for sequence number `seq`: zero-padded, so that
/// listing order is numeric order.
fn seq_key(dir: &Path, seq: u64) -> Path {
    dir.clone().join(format!("{seq:020}"))
}

impl Sharing {
    pub(super) fn lease_dir(&self, tenant: &str, group: &GroupSpec) -> Path {
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
    pub(super) async fn create(
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
    pub(super) async fn newest_listed(
        &self,
        dir: &Path,
    ) -> Result<(u64, Option<LeaseRecord>), String> {
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
    pub(super) async fn newest(
        &self,
        dir: &Path,
        mut view: LeaseView,
    ) -> Result<LeaseView, String> {
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

    pub(super) fn remember(
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
}
