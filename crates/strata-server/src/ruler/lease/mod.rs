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
//!
//! By seam: this ruler's part and the handle a tenant's groups claim
//! through (this file), the rulers alive and who a group goes to
//! (`members`), the lease's objects read and written (`objects`), a claim
//! at an evaluation (`claim`).

mod claim;
mod members;
mod objects;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use object_store::path::Path;
use object_store::ObjectStore;
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use strata_codec::clock::Clock;
use strata_rules::group::{Claim, GroupSpec};

use objects::LeaseView;

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

fn encode(name: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(name)
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
