//! `[object_store]` and `[shards]`: where the data lives, which shard this
//! writer is, and the object-store URLs a writer or reader opens.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use strata_storage::S3Settings;

use super::{name_list, Config};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ObjectStoreConfig {
    pub url: String,
    #[serde(default)]
    pub s3: S3Settings,
}

/// Writer shards: how many, which one this writer is, where a distributor
/// sends each shard's series and what else a reader opens.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ShardsConfig {
    /// Number of writer shards; 1 = unsharded (data at the object store's
    /// root). With more, shard `i` lives under `<url>/shard-<i>`.
    pub count: u32,
    /// This writer's shard.
    pub id: ShardId,
    /// Distributor: the writers' base URLs, shard `i` first at index `i`.
    /// A list, or one comma-separated string (for the environment).
    #[serde(deserialize_with = "url_list")]
    pub writers: Vec<String>,
    /// Readers: more object-store URLs to open read-only besides the
    /// `count` shards, e.g. the shards of a previous shard count.
    #[serde(deserialize_with = "url_list")]
    pub extra_read_urls: Vec<String>,
    /// Distributor: longest wait for a writer's answer.
    #[serde(with = "humantime_serde")]
    pub forward_timeout: Duration,
}

/// A writer's shard: a number, or `"auto"` for the trailing `-<n>` of the
/// host name (a Kubernetes StatefulSet ordinal).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShardId {
    Index(u32),
    FromHostname,
}

impl<'de> Deserialize<'de> for ShardId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Index(u32),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Index(i) => Ok(Self::Index(i)),
            Raw::Text(t) => t.parse().map_err(serde::de::Error::custom),
        }
    }
}

impl Serialize for ShardId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Index(i) => s.serialize_u32(*i),
            Self::FromHostname => s.serialize_str("auto"),
        }
    }
}

impl std::str::FromStr for ShardId {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("auto") {
            return Ok(Self::FromHostname);
        }
        s.parse().map(Self::Index).map_err(|_| {
            format!(
                "shard id {s:?} is neither a number nor \"auto\" (the host name's trailing -<n>)"
            )
        })
    }
}

fn url_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(name_list(d)?
        .into_iter()
        .map(|u| u.trim_end_matches('/').to_owned())
        .filter(|u| !u.is_empty())
        .collect())
}

/// The shard number at the end of a host name such as `strata-writer-2`.
pub fn shard_from_hostname(hostname: &str) -> Option<u32> {
    let (_, n) = hostname.trim().rsplit_once('-')?;
    n.parse().ok()
}

/// This machine's host name: `$HOSTNAME`, else the kernel's.
pub(crate) fn hostname() -> Option<String> {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.trim().is_empty())
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|h| h.trim().to_owned())
}

/// The object-store URL of shard `id`: `<url>/shard-<id>` (for
/// `s3://bucket/prefix`, the prefix `prefix/shard-<id>`).
pub fn shard_url(url: &str, id: u32) -> String {
    format!("{}/shard-{id}", url.trim_end_matches('/'))
}

impl Config {
    /// This writer's shard, `None` when unsharded.
    pub fn shard_id(&self) -> Option<u32> {
        match (self.shards.count, &self.shards.id) {
            (1, _) => None,
            (_, ShardId::Index(i)) => Some(*i),
            // Resolved by `load`.
            (_, ShardId::FromHostname) => Some(0),
        }
    }

    /// The object-store URLs a reader opens: every shard's (or the root
    /// when unsharded), then `shards.extra_read_urls`.
    pub fn read_urls(&self) -> Result<Vec<String>, String> {
        let root = self.object_store_url()?;
        let mut urls: Vec<String> = if self.shards.count == 1 {
            vec![root]
        } else {
            (0..self.shards.count)
                .map(|i| shard_url(&root, i))
                .collect()
        };
        for extra in &self.shards.extra_read_urls {
            if !urls.contains(extra) {
                urls.push(extra.clone());
            }
        }
        Ok(urls)
    }

    /// The object-store URL a writer (or `all`) opens: its shard's.
    pub fn write_url(&self) -> Result<String, String> {
        let root = self.object_store_url()?;
        Ok(match self.shard_id() {
            Some(i) => shard_url(&root, i),
            None => root,
        })
    }

    /// The object store URL with a relative folder turned into `file://`.
    pub fn object_store_url(&self) -> Result<String, String> {
        let url = &self.object_store.url;
        if url.contains("://") {
            return Ok(url.clone());
        }
        let dir = std::path::Path::new(url);
        let abs = if dir.is_absolute() {
            dir.to_path_buf()
        } else {
            std::env::current_dir()
                .map_err(|e| format!("object_store.url: cannot resolve {url:?}: {e}"))?
                .join(dir)
        };
        Ok(format!("file://{}", abs.display()))
    }
}
