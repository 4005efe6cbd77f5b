//! Relabeling as Prometheus does it (`model/relabel/relabel.go`): a list
//! of steps, each reading some labels and rewriting, keeping or dropping
//! the label set. The notifier runs them on alerts (`alert_relabel_configs`).
//!
//! Label names are checked as Prometheus 3 checks them by default (UTF-8
//! names: any non-empty string), and a label set to the empty value is
//! removed, as a `labels.Builder` does.

use std::fmt;

use md5::{Digest, Md5};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::alerting::LabelSet;

/// What a relabel step does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Action {
    /// Writes the replacement, expanded with the regex's groups, to the
    /// target label when the regex matches the joined source values.
    #[default]
    Replace,
    /// Drops the set unless the regex matches the joined source values.
    Keep,
    /// Drops the set when the regex matches the joined source values.
    Drop,
    /// Drops the set unless the target label's value equals the joined
    /// source values.
    KeepEqual,
    /// Drops the set when the target label's value equals the joined
    /// source values.
    DropEqual,
    /// Sets the target label to the MD5 of the joined source values modulo
    /// `modulus`.
    HashMod,
    /// Copies each label whose name matches to the name the replacement
    /// makes of it.
    LabelMap,
    /// Removes each label whose name matches.
    LabelDrop,
    /// Removes each label whose name does not match.
    LabelKeep,
    /// Sets the target label to the joined source values in lower case.
    Lowercase,
    /// Sets the target label to the joined source values in upper case.
    Uppercase,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Replace => "replace",
            Self::Keep => "keep",
            Self::Drop => "drop",
            Self::KeepEqual => "keepequal",
            Self::DropEqual => "dropequal",
            Self::HashMod => "hashmod",
            Self::LabelMap => "labelmap",
            Self::LabelDrop => "labeldrop",
            Self::LabelKeep => "labelkeep",
            Self::Lowercase => "lowercase",
            Self::Uppercase => "uppercase",
        }
    }

    /// Parses an action name, in any case, as Prometheus does.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s.to_ascii_lowercase().as_str() {
            "replace" => Self::Replace,
            "keep" => Self::Keep,
            "drop" => Self::Drop,
            "keepequal" => Self::KeepEqual,
            "dropequal" => Self::DropEqual,
            "hashmod" => Self::HashMod,
            "labelmap" => Self::LabelMap,
            "labeldrop" => Self::LabelDrop,
            "labelkeep" => Self::LabelKeep,
            "lowercase" => Self::Lowercase,
            "uppercase" => Self::Uppercase,
            _ => return None,
        })
    }
}

impl Serialize for Action {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Action {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::parse(&s)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown relabel action {s:?}")))
    }
}

/// The regex a relabel step was given: matched against whole strings
/// (`^(?s:…)$`), as Prometheus anchors it, and kept with its source for
/// display and comparison.
#[derive(Clone)]
pub struct Regex {
    source: String,
    anchored: regex::Regex,
}

/// The regex a step has when it names none.
pub const DEFAULT_REGEX: &str = "(.*)";
/// The separator a step has when it names none.
pub const DEFAULT_SEPARATOR: &str = ";";
/// The replacement a step has when it names none.
pub const DEFAULT_REPLACEMENT: &str = "$1";

impl Regex {
    pub fn new(source: &str) -> Result<Self, RelabelError> {
        let anchored = regex::Regex::new(&format!("^(?s:{source})$"))
            .map_err(|e| RelabelError(format!("invalid relabel regex {source:?}: {e}")))?;
        Ok(Self {
            source: source.to_owned(),
            anchored,
        })
    }

    /// The regex as given, without the anchors.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    pub fn is_match(&self, s: &str) -> bool {
        self.anchored.is_match(s)
    }
}

impl Default for Regex {
    fn default() -> Self {
        Self {
            source: DEFAULT_REGEX.to_owned(),
            anchored: default_regex().clone(),
        }
    }
}

fn default_regex() -> &'static regex::Regex {
    static RE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new("^(?s:(.*))$").expect("a constant regex compiles")
    });
    &RE
}

impl PartialEq for Regex {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl fmt::Debug for Regex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.source)
    }
}

impl Serialize for Regex {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.source)
    }
}

impl<'de> Deserialize<'de> for Regex {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::new(&s).map_err(serde::de::Error::custom)
    }
}

/// One relabel step, as in Prometheus' `relabel_config`; fields left out
/// take Prometheus' defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RelabelConfig {
    /// Labels whose values are joined with `separator` into the value the
    /// regex is matched against.
    pub source_labels: Vec<String>,
    pub separator: String,
    pub regex: Regex,
    /// For `hashmod`.
    pub modulus: u64,
    /// The label written to; `$1`, `${name}` expand in it for `replace`.
    pub target_label: String,
    /// What `replace` writes and `labelmap` names labels with; `$1`,
    /// `${name}` expand to the regex's groups.
    pub replacement: String,
    pub action: Action,
}

impl Default for RelabelConfig {
    fn default() -> Self {
        Self {
            source_labels: Vec::new(),
            separator: DEFAULT_SEPARATOR.to_owned(),
            regex: Regex::default(),
            modulus: 0,
            target_label: String::new(),
            replacement: DEFAULT_REPLACEMENT.to_owned(),
            action: Action::Replace,
        }
    }
}

/// A relabel step that Prometheus would refuse to load.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RelabelError(pub String);

impl RelabelConfig {
    /// Checks the step as Prometheus' `relabel.Config.Validate` does.
    pub fn validate(&self) -> Result<(), RelabelError> {
        let action = self.action.as_str();
        let err = |m: String| Err(RelabelError(m));
        if self.action == Action::HashMod && self.modulus == 0 {
            return err("relabel configuration for hashmod requires non-zero modulus".into());
        }
        let needs_target = matches!(
            self.action,
            Action::Replace
                | Action::HashMod
                | Action::Lowercase
                | Action::Uppercase
                | Action::KeepEqual
                | Action::DropEqual
        );
        if needs_target && self.target_label.is_empty() {
            return err(format!(
                "relabel configuration for {action} action requires 'target_label' value"
            ));
        }
        let only_target = matches!(
            self.action,
            Action::Lowercase | Action::Uppercase | Action::KeepEqual | Action::DropEqual
        );
        if only_target && self.replacement != DEFAULT_REPLACEMENT {
            return err(format!("'replacement' can not be set for {action} action"));
        }
        if self.action == Action::LabelMap && self.replacement.is_empty() {
            return err(format!(
                "{:?} is invalid 'replacement' for {action} action",
                self.replacement
            ));
        }
        if matches!(self.action, Action::KeepEqual | Action::DropEqual)
            && (self.regex.as_str() != DEFAULT_REGEX
                || self.modulus != 0
                || self.separator != DEFAULT_SEPARATOR
                || self.replacement != DEFAULT_REPLACEMENT)
        {
            return err(format!(
                "{action} action requires only 'source_labels' and `target_label`, and no other fields"
            ));
        }
        if matches!(self.action, Action::LabelDrop | Action::LabelKeep)
            && (!self.source_labels.is_empty()
                || !self.target_label.is_empty()
                || self.modulus != 0
                || self.separator != DEFAULT_SEPARATOR
                || self.replacement != DEFAULT_REPLACEMENT)
        {
            return err(format!(
                "{action} action requires only 'regex', and no other fields"
            ));
        }
        Ok(())
    }
}

/// Runs `configs` in order on `labels`; false when a step drops the set
/// (then `labels` is left as the steps before it made it).
pub fn process(labels: &mut LabelSet, configs: &[RelabelConfig]) -> bool {
    configs.iter().all(|cfg| step(labels, cfg))
}

/// Sets a label, removing it when the value is empty.
fn set(labels: &mut LabelSet, name: String, value: String) {
    if value.is_empty() {
        labels.remove(&name);
    } else {
        labels.insert(name, value);
    }
}

fn step(labels: &mut LabelSet, cfg: &RelabelConfig) -> bool {
    let get = |labels: &LabelSet, name: &str| labels.get(name).cloned().unwrap_or_default();
    let val = cfg
        .source_labels
        .iter()
        .map(|name| labels.get(name).map_or("", String::as_str))
        .collect::<Vec<_>>()
        .join(&cfg.separator);
    match cfg.action {
        Action::Drop => return !cfg.regex.is_match(&val),
        Action::Keep => return cfg.regex.is_match(&val),
        Action::DropEqual => return get(labels, &cfg.target_label) != val,
        Action::KeepEqual => return get(labels, &cfg.target_label) == val,
        Action::Replace => {
            let Some(caps) = cfg.regex.anchored.captures(&val) else {
                return true;
            };
            let mut target = String::new();
            caps.expand(&cfg.target_label, &mut target);
            if target.is_empty() {
                return true;
            }
            let mut value = String::new();
            caps.expand(&cfg.replacement, &mut value);
            set(labels, target, value);
        }
        Action::Lowercase => set(labels, cfg.target_label.clone(), val.to_lowercase()),
        Action::Uppercase => set(labels, cfg.target_label.clone(), val.to_uppercase()),
        Action::HashMod => {
            let hash = Md5::digest(val.as_bytes());
            let mut low = [0u8; 8];
            for (dst, src) in low.iter_mut().zip(hash.iter().skip(8)) {
                *dst = *src;
            }
            let m = u64::from_be_bytes(low) % cfg.modulus.max(1);
            set(labels, cfg.target_label.clone(), m.to_string());
        }
        Action::LabelMap => {
            let snapshot: Vec<(String, String)> =
                labels.iter().map(|(n, v)| (n.clone(), v.clone())).collect();
            for (name, value) in snapshot {
                if cfg.regex.is_match(&name) {
                    let new = cfg
                        .regex
                        .anchored
                        .replace_all(&name, cfg.replacement.as_str())
                        .into_owned();
                    set(labels, new, value);
                }
            }
        }
        Action::LabelDrop => labels.retain(|name, _| !cfg.regex.is_match(name)),
        Action::LabelKeep => labels.retain(|name, _| cfg.regex.is_match(name)),
    }
    true
}

#[cfg(test)]
mod tests;
