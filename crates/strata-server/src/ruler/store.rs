//! Rule groups kept in the bucket, per tenant and namespace, as the ruler
//! configuration API (Mimir's `/prometheus/config/v1/rules`) manages them.
//!
//! ```text
//! <root>/ruler/rules/<tenant>/<namespace, base64url>/<group name, base64url>
//! ```
//!
//! One object per group holds the group's YAML as it was posted (checked
//! first), so that posting or deleting one group is one request and two
//! groups never overwrite each other. Names are base64url-encoded, as
//! Mimir's bucket store encodes them, so that any text is a valid key.

use std::sync::Arc;

use base64::Engine as _;
use futures::TryStreamExt as _;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt as _, PutPayload};
use rustc_hash::FxHashMap;

/// One stored group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredGroup {
    pub tenant: String,
    pub namespace: String,
    pub name: String,
    /// The group's YAML, as posted.
    pub yaml: String,
}

/// The bucket's rule groups.
pub struct RuleStore {
    store: Arc<dyn ObjectStore>,
    /// `<root>/ruler`.
    root: Path,
    /// Each group's text by key, with the e-tag it was read at: a poll
    /// reads again only what changed.
    read: parking_lot::Mutex<FxHashMap<Path, (Option<String>, StoredGroup)>>,
}

fn encode(name: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(name)
}

fn decode(part: &str) -> Option<String> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part)
        .ok()?;
    String::from_utf8(bytes).ok()
}

/// An object-store failure, worded for the API's answer.
fn failed(what: &str, e: object_store::Error) -> String {
    format!("{what}: the object store failed: {e}")
}

impl RuleStore {
    /// The store under `root` (the database's prefix: the objects live
    /// beside its own, under `ruler/`).
    pub fn new(store: Arc<dyn ObjectStore>, root: &Path) -> Self {
        Self {
            store,
            root: root.clone().join("ruler"),
            read: parking_lot::Mutex::new(FxHashMap::default()),
        }
    }

    /// The prefix of the rulers' other objects (leases, members).
    pub fn ruler_root(&self) -> &Path {
        &self.root
    }

    pub fn object_store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    fn tenant_prefix(&self, tenant: &str) -> Path {
        self.root.clone().join("rules").clone().join(tenant)
    }

    fn namespace_prefix(&self, tenant: &str, namespace: &str) -> Path {
        self.tenant_prefix(tenant).clone().join(encode(namespace))
    }

    fn key(&self, tenant: &str, namespace: &str, group: &str) -> Path {
        self.namespace_prefix(tenant, namespace)
            .clone()
            .join(encode(group))
    }

    /// Stores a group (already checked), replacing one of the same name.
    pub async fn put(
        &self,
        tenant: &str,
        namespace: &str,
        group: &str,
        yaml: &str,
    ) -> Result<(), String> {
        let key = self.key(tenant, namespace, group);
        self.store
            .put(&key, PutPayload::from(yaml.to_owned()))
            .await
            .map(|_| ())
            .map_err(|e| failed("storing the rule group", e))
    }

    /// Deletes a group; false when there was none.
    pub async fn delete(&self, tenant: &str, namespace: &str, group: &str) -> Result<bool, String> {
        let key = self.key(tenant, namespace, group);
        match self.store.head(&key).await {
            Err(object_store::Error::NotFound { .. }) => return Ok(false),
            Err(e) => return Err(failed("deleting the rule group", e)),
            Ok(_) => {}
        }
        match self.store.delete(&key).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(true),
            Err(e) => Err(failed("deleting the rule group", e)),
        }
    }

    /// Deletes every group of a namespace; how many there were.
    pub async fn delete_namespace(&self, tenant: &str, namespace: &str) -> Result<usize, String> {
        let prefix = self.namespace_prefix(tenant, namespace);
        let keys: Vec<Path> = self
            .store
            .list(Some(&prefix))
            .map_ok(|m| m.location)
            .try_collect()
            .await
            .map_err(|e| failed("deleting the namespace", e))?;
        for key in &keys {
            match self.store.delete(key).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(failed("deleting the namespace", e)),
            }
        }
        Ok(keys.len())
    }

    /// One tenant's groups (every tenant's with `None`), sorted by tenant,
    /// namespace and name. Objects not changed since the last read are
    /// not read again.
    pub async fn list(&self, tenant: Option<&str>) -> Result<Vec<StoredGroup>, String> {
        let prefix = match tenant {
            Some(t) => self.tenant_prefix(t),
            None => self.root.clone().join("rules"),
        };
        let listed: Vec<object_store::ObjectMeta> = self
            .store
            .list(Some(&prefix))
            .try_collect()
            .await
            .map_err(|e| failed("listing the rule groups", e))?;
        let mut out = Vec::with_capacity(listed.len());
        for meta in listed {
            let Some(names) = self.names_of(&meta.location) else {
                continue;
            };
            let cached = self
                .read
                .lock()
                .get(&meta.location)
                .filter(|(tag, _)| tag.is_some() && *tag == meta.e_tag)
                .map(|(_, g)| g.clone());
            let group = match cached {
                Some(g) => g,
                None => {
                    let got = match self.store.get(&meta.location).await {
                        Ok(r) => r,
                        // Deleted since the listing.
                        Err(object_store::Error::NotFound { .. }) => continue,
                        Err(e) => return Err(failed("reading a rule group", e)),
                    };
                    let bytes = got
                        .bytes()
                        .await
                        .map_err(|e| failed("reading a rule group", e))?;
                    let (tenant, namespace, name) = names;
                    let g = StoredGroup {
                        tenant,
                        namespace,
                        name,
                        yaml: String::from_utf8_lossy(&bytes).into_owned(),
                    };
                    self.read
                        .lock()
                        .insert(meta.location.clone(), (meta.e_tag.clone(), g.clone()));
                    g
                }
            };
            out.push(group);
        }
        out.sort_by(|a, b| {
            (&a.tenant, &a.namespace, &a.name).cmp(&(&b.tenant, &b.namespace, &b.name))
        });
        Ok(out)
    }

    /// Tenant, namespace and group of a key under `rules/`.
    fn names_of(&self, key: &Path) -> Option<(String, String, String)> {
        let mut parts = key.prefix_match(&self.root.clone().join("rules"))?;
        let tenant = parts.next()?.as_ref().to_owned();
        let namespace = decode(parts.next()?.as_ref())?;
        let name = decode(parts.next()?.as_ref())?;
        if parts.next().is_some() {
            return None;
        }
        Some((tenant, namespace, name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn groups_are_kept_per_tenant_and_namespace() {
        let store = RuleStore::new(
            Arc::new(object_store::memory::InMemory::new()),
            &Path::from("db"),
        );
        store.put("a", "ns/one", "g1", "name: g1\n").await.unwrap();
        store
            .put("a", "ns/one", "g 2", "name: g 2\n")
            .await
            .unwrap();
        store.put("b", "other", "g1", "name: g1\n").await.unwrap();
        let a = store.list(Some("a")).await.unwrap();
        assert_eq!(
            a.iter()
                .map(|g| (g.namespace.as_str(), g.name.as_str()))
                .collect::<Vec<_>>(),
            [("ns/one", "g 2"), ("ns/one", "g1")]
        );
        assert_eq!(store.list(None).await.unwrap().len(), 3);
        // Replaced in place.
        store
            .put("a", "ns/one", "g1", "name: g1\nx\n")
            .await
            .unwrap();
        let a = store.list(Some("a")).await.unwrap();
        assert_eq!(a[1].yaml, "name: g1\nx\n");
        assert!(store.delete("a", "ns/one", "g1").await.unwrap());
        assert!(!store.delete("a", "ns/one", "g1").await.unwrap());
        assert_eq!(store.delete_namespace("a", "ns/one").await.unwrap(), 1);
        assert!(store.list(Some("a")).await.unwrap().is_empty());
        assert_eq!(store.list(None).await.unwrap().len(), 1);
    }
}
