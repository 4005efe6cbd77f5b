//! A node's `/metrics`, summed by name, and what a reader fetched from the
//! store or its cache as they say.

use std::collections::BTreeMap;

use crate::common::http_get;

/// `/metrics` of `port`, each metric name summed over its label sets.
pub(crate) fn metrics(port: u16) -> BTreeMap<String, f64> {
    let r = http_get(port, "/metrics").expect("GET /metrics");
    let mut out = BTreeMap::new();
    for line in r.text().lines().filter(|l| !l.starts_with('#')) {
        let Some((name, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let name = name.split('{').next().unwrap_or(name).to_owned();
        if let Ok(v) = value.parse::<f64>() {
            *out.entry(name).or_insert(0.0) += v;
        }
    }
    out
}

/// What a reader fetched and where from, as its `/metrics` say.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Fetched {
    pub(crate) requests: f64,
    pub(crate) read_bytes: f64,
    pub(crate) part_hits: f64,
    pub(crate) part_accesses: f64,
}

pub(crate) fn fetched(port: u16) -> Fetched {
    let m = metrics(port);
    let get = |name: &str| m.get(name).copied().unwrap_or(0.0);
    Fetched {
        requests: get("strata_object_store_requests_total"),
        read_bytes: get("strata_object_store_read_bytes_total"),
        part_hits: get("slatedb_object_store_cache_part_hits_total"),
        part_accesses: get("slatedb_object_store_cache_part_accesses_total"),
    }
}
