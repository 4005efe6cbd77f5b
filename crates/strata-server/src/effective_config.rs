//! The merged configuration as settings, with where each value came from
//! (the embedded default, a file, an environment variable or a flag), and
//! its rendering with secrets redacted.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// What a secret's value is shown as.
pub const REDACTED: &str = "<secret>";

/// The settings after every layer, and each one's source.
#[derive(Clone, Debug)]
pub struct Effective {
    pub(crate) table: toml::Table,
    /// Dotted key → source.
    sources: BTreeMap<String, String>,
}

impl Effective {
    /// The embedded defaults.
    pub(crate) fn new(defaults: toml::Table) -> Self {
        let mut e = Self {
            table: toml::Table::new(),
            sources: BTreeMap::new(),
        };
        e.merge(defaults, "default");
        e
    }

    /// Lays `over` on top, every value it holds coming from `source`.
    pub(crate) fn merge(&mut self, over: toml::Table, source: &str) {
        let mut leaves = Vec::new();
        collect_leaves(&over, &mut Vec::new(), &mut leaves);
        for (path, value) in leaves {
            let path: Vec<&str> = path.iter().map(String::as_str).collect();
            // A leaf of a table never lands on a non-table: `collect_leaves`
            // walks `over`'s own tables, and a scalar replaced by a table
            // (or the reverse) is a type error the deserializer reports.
            let _ = self.set(&path, value, source);
        }
    }

    /// Sets one setting; fails naming the part of `path` that is a value
    /// where a section must be.
    pub(crate) fn set(
        &mut self,
        path: &[&str],
        value: toml::Value,
        source: &str,
    ) -> Result<(), String> {
        let Some((name, sections)) = path.split_last() else {
            return Ok(());
        };
        let mut table = &mut self.table;
        for (i, part) in sections.iter().enumerate() {
            table = match table
                .entry((*part).to_owned())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            {
                toml::Value::Table(t) => t,
                _ => return Err(path[..=i].join(".")),
            };
        }
        table.insert((*name).to_owned(), value);
        self.sources.insert(path.join("."), source.to_owned());
        Ok(())
    }

    /// Where the setting at dotted `key` came from.
    pub fn source(&self, key: &str) -> Option<&str> {
        self.sources.get(key).map(String::as_str)
    }

    /// Every setting as `dotted.key = value` with its source, secrets
    /// redacted, in TOML (each value) that `--config` reads back apart
    /// from the redacted ones.
    pub fn render(&self) -> String {
        let mut leaves = Vec::new();
        collect_leaves(&self.table, &mut Vec::new(), &mut leaves);
        let mut out = String::new();
        let mut section = String::new();
        for (path, value) in leaves {
            let key = path.join(".");
            let (parent, name) = match path.split_last() {
                Some((name, parent)) => (parent.join("."), name.clone()),
                None => continue,
            };
            if parent != section {
                let _ = writeln!(out, "\n[{parent}]");
                section = parent;
            }
            let shown = if is_secret(&key) && !is_empty(&value) {
                toml::Value::from(REDACTED)
            } else {
                value
            };
            let source = self.source(&key).unwrap_or("default");
            let _ = writeln!(out, "{name} = {shown}  # {source}");
        }
        out.trim_start().to_owned()
    }

    /// Every setting as dotted key → value (secrets redacted).
    pub fn flat(&self) -> BTreeMap<String, String> {
        let mut leaves = Vec::new();
        collect_leaves(&self.table, &mut Vec::new(), &mut leaves);
        leaves
            .into_iter()
            .map(|(path, value)| {
                let key = path.join(".");
                let shown = if is_secret(&key) && !is_empty(&value) {
                    REDACTED.to_owned()
                } else {
                    match value {
                        toml::Value::String(s) => s,
                        other => other.to_string(),
                    }
                };
                (key, shown)
            })
            .collect()
    }
}

/// Settings whose values must not be shown: secret keys, passwords, and
/// token and password hashes.
pub fn is_secret(key: &str) -> bool {
    let name = key.rsplit('.').next().unwrap_or(key);
    name.contains("secret")
        || name.contains("password")
        || name.ends_with("_hashes")
        || name == "basic_auth"
}

fn is_empty(v: &toml::Value) -> bool {
    match v {
        toml::Value::String(s) => s.is_empty(),
        toml::Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// The non-table values under `table`, with their paths, in order.
fn collect_leaves(
    table: &toml::Table,
    prefix: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, toml::Value)>,
) {
    // Values before sub-tables, as TOML must print them.
    for (k, v) in table {
        if !v.is_table() {
            let mut path = prefix.clone();
            path.push(k.clone());
            out.push((path, v.clone()));
        }
    }
    for (k, v) in table {
        if let toml::Value::Table(t) = v {
            prefix.push(k.clone());
            collect_leaves(t, prefix, out);
            prefix.pop();
        }
    }
}
