//! `docs/configuration.md`'s table against the configuration the binary
//! accepts: every documented key, given through its documented variable
//! with its documented default, loads; every key the binary has by
//! default is documented with that default.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::collections::BTreeMap;

use strata_server::config::{Config, Overrides};

/// The table's rows: key → (type cell, default cell, variable cell).
fn documented() -> BTreeMap<String, (String, String, String)> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md");
    let text = std::fs::read_to_string(path).expect("docs/configuration.md");
    let mut rows = BTreeMap::new();
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // | `key` | type | `default` | `VAR` | meaning |
        if cells.len() < 6 || !cells[0].is_empty() {
            continue;
        }
        let key = cells[1].trim_matches('`');
        if !cells[1].starts_with('`') || !key.contains('.') || key.contains(' ') {
            continue;
        }
        rows.insert(
            key.to_owned(),
            (
                cells[2].to_owned(),
                cells[3].to_owned(),
                cells[4].trim_matches('`').to_owned(),
            ),
        );
    }
    rows
}

/// A cell's default as an environment value: TOML literals as they are
/// (strings unquoted), arrays as TOML.
fn env_value(cell: &str) -> Option<String> {
    if cell == "unset" {
        return None;
    }
    let v = cell.trim_matches('`');
    Some(
        v.strip_prefix('"')
            .and_then(|s| s.strip_suffix('"'))
            .unwrap_or(v)
            .to_owned(),
    )
}

#[test]
fn every_documented_setting_is_accepted_and_every_default_documented() {
    let doc = documented();
    assert!(doc.len() > 60, "only {} rows read", doc.len());
    let (_, effective) = Config::load_effective(None, [], &Overrides::default()).expect("defaults");
    let built_in = effective.flat();
    for (key, value) in &built_in {
        let (_, default, _) = doc
            .get(key)
            .unwrap_or_else(|| panic!("{key} is a setting of the binary but not in the docs"));
        // Durations, numbers and booleans as the binary reads them back.
        let shown = env_value(default).unwrap_or_default();
        assert_eq!(
            &shown, value,
            "{key}: the docs say {default}, the binary has {value:?}"
        );
    }
    for (key, (kind, default, var)) in &doc {
        let value = match env_value(default) {
            Some(v) => v,
            // Optional settings: a value of their type.
            None if kind.contains("duration") => "1h".to_owned(),
            None => "http://127.0.0.1:9000".to_owned(),
        };
        let loaded =
            Config::load_effective(None, [(var.clone(), value.clone())], &Overrides::default());
        let (_, effective) = loaded.unwrap_or_else(|e| {
            panic!("{key}: {var}={value:?} (its documented default) is refused: {e}")
        });
        assert_eq!(
            effective.source(key),
            Some(format!("env {var}").as_str()),
            "{var} does not set {key}"
        );
    }
}
