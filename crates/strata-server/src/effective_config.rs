//! The merged configuration as settings, with where each value came from
//! (the embedded default, a file, an environment variable or a flag), and
//! its renderings with secrets redacted: `strata config`'s TOML, and for
//! the status endpoints YAML (`/api/v1/status/config`) and flat settings
//! (`/api/v1/status/flags`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::config::Config;

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
                _ => return Err(sections.get(..=i).unwrap_or(sections).join(".")),
            };
        }
        table.insert((*name).to_owned(), value);
        self.sources.insert(path.join("."), source.to_owned());
        Ok(())
    }

    /// A running configuration's settings, their sources unknown: what
    /// the status endpoints show.
    pub fn of(config: &Config) -> Self {
        let table = toml::Table::try_from(config).unwrap_or_else(|e| {
            // Every field is plain data: a bug, not a state to show.
            tracing::error!(error = %e, "cannot serialize the configuration");
            toml::Table::new()
        });
        Self {
            table,
            sources: BTreeMap::new(),
        }
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
            let source = self.source(&key).unwrap_or("default");
            let _ = writeln!(out, "{name} = {}  # {source}", shown(&key, value));
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
                let shown = match shown(&key, value) {
                    toml::Value::String(s) => s,
                    other => other.to_string(),
                };
                (key, shown)
            })
            .collect()
    }

    /// Every setting as a YAML document, secrets redacted: sections as
    /// mappings, lists as block sequences, strings double-quoted (JSON's
    /// escapes are YAML's).
    pub fn yaml(&self) -> String {
        let mut out = String::new();
        yaml_mapping(&mut out, &self.table, "", 0);
        out
    }
}

/// `value` as it may be shown: [`REDACTED`] for a secret that is set, and
/// the passwords of URLs replaced (`xxxxx`, as Go's `URL.Redacted`).
fn shown(key: &str, value: toml::Value) -> toml::Value {
    if is_secret(key) && !is_empty(&value) {
        return toml::Value::from(REDACTED);
    }
    match value {
        toml::Value::String(s) => toml::Value::String(without_password(s)),
        toml::Value::Array(items) => {
            toml::Value::Array(items.into_iter().map(|v| shown(key, v)).collect())
        }
        other => other,
    }
}

fn without_password(s: String) -> String {
    let Ok(mut u) = url::Url::parse(&s) else {
        return s;
    };
    if u.password().is_some() && u.set_password(Some("xxxxx")).is_ok() {
        return u.to_string();
    }
    s
}

fn yaml_mapping(out: &mut String, table: &toml::Table, prefix: &str, indent: usize) {
    let pad = " ".repeat(indent);
    for (name, v) in table {
        let key = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        match shown(&key, v.clone()) {
            toml::Value::Table(t) if !t.is_empty() => {
                let _ = writeln!(out, "{pad}{name}:");
                yaml_mapping(out, &t, &key, indent + 2);
            }
            toml::Value::Array(items) if !items.is_empty() => {
                let _ = writeln!(out, "{pad}{name}:");
                for item in &items {
                    yaml_item(out, item, &key, indent);
                }
            }
            v => {
                let _ = writeln!(out, "{pad}{name}: {}", yaml_scalar(&v));
            }
        }
    }
}

fn yaml_item(out: &mut String, item: &toml::Value, key: &str, indent: usize) {
    let pad = " ".repeat(indent);
    match item {
        toml::Value::Table(t) if !t.is_empty() => {
            // The mapping's first line shares the dash's line.
            let mut inner = String::new();
            yaml_mapping(&mut inner, t, key, indent + 2);
            let _ = write!(
                out,
                "{pad}- {}",
                inner.get(indent + 2..).unwrap_or_default()
            );
        }
        _ => {
            let _ = writeln!(out, "{pad}- {}", yaml_scalar(item));
        }
    }
}

fn yaml_scalar(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => serde_json::Value::from(s.as_str()).to_string(),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) => serde_json::Value::from(*f).to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::Datetime(d) => serde_json::Value::from(d.to_string()).to_string(),
        toml::Value::Array(_) => "[]".into(),
        toml::Value::Table(_) => "{}".into(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Overrides;

    #[test]
    fn a_running_configuration_shows_without_its_secrets() {
        let env = [
            (
                "STRATA_AUTH_READ_BASIC_AUTH",
                r#"["grafana:$2b$04$HASHED"]"#,
            ),
            ("STRATA_OBJECT_STORE_S3_SECRET_ACCESS_KEY", "s3cr3t"),
            (
                "STRATA_OBJECT_STORE_S3_ENDPOINT",
                "http://u:pw@127.0.0.1:9000",
            ),
        ];
        let config = Config::load(
            None,
            env.iter().map(|(k, v)| (k.to_string(), v.to_string())),
            &Overrides::default(),
        )
        .unwrap();
        let e = Effective::of(&config);
        let yaml = e.yaml();
        assert!(!yaml.contains("s3cr3t") && !yaml.contains("HASHED") && !yaml.contains(":pw@"));
        assert!(
            yaml.contains("  secret_access_key: \"<secret>\"\n"),
            "{yaml}"
        );
        let flags = e.flat();
        assert_eq!(flags["auth.read.basic_auth"], "<secret>");
        assert_eq!(flags["object_store.s3.secret_access_key"], "<secret>");
        assert_eq!(
            flags["object_store.s3.endpoint"],
            "http://u:xxxxx@127.0.0.1:9000/"
        );
        assert_eq!(flags["auth.write.bearer_token_hashes"], "[]");
        assert_eq!(flags["storage.retention"], "15days");
    }

    #[test]
    fn yaml_shapes() {
        let table: toml::Table = toml::from_str(
            "a = \"x\\\"y\"\nn = 3\n[s]\nlist = [\"p\", \"q\"]\nnone = []\n\
             [[s.items]]\nk = 1\nj = true\n[[s.items]]\nk = 2\n[empty]\n",
        )
        .unwrap();
        let e = Effective {
            table,
            sources: BTreeMap::new(),
        };
        assert_eq!(
            e.yaml(),
            "a: \"x\\\"y\"\nempty: {}\nn: 3\ns:\n  items:\n  - j: true\n    k: 1\n  - k: 2\n  \
             list:\n  - \"p\"\n  - \"q\"\n  none: []\n"
        );
    }
}
