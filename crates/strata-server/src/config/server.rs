//! `[server]`: the node's role, where it listens, and how it stops.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use strata_storage::Durability;

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    All,
    Writer,
    Reader,
    /// Stateless: splits remote write by series over the writer shards.
    Distributor,
    /// Evaluates rules: reads the bucket as a reader node does and writes
    /// what its rules produce through a distributor or writer.
    Ruler,
}

impl Role {
    /// The role's name, as `server.role` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Self::All => "all",
            Self::Writer => "writer",
            Self::Reader => "reader",
            Self::Distributor => "distributor",
            Self::Ruler => "ruler",
        }
    }

    /// Whether the process opens the database read-only (a reader node
    /// or a ruler), not as its writer.
    pub fn reads_only(self) -> bool {
        matches!(self, Self::Reader | Self::Ruler)
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    pub role: Role,
    pub listen: String,
    pub log_level: String,
    pub default_durability: Durability,
    #[serde(with = "humantime_serde")]
    pub shutdown_timeout: Duration,
    /// `/-/healthy` answers 503 once every object-store request has failed
    /// for this long; 0 = never.
    #[serde(with = "humantime_serde")]
    pub store_unhealthy_after: Duration,
}
