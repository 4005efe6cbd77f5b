//! From YAML text to a [`RuleFile`], reading values as Go's YAML decoder
//! does for Prometheus: any scalar where text goes (`expr: 1`), `null` as
//! empty, a repeated key as an error, only the first document.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_yaml::Value;

use super::{Problem, RuleFile};

/// Decodes the first YAML document of `text`; an empty text is a file of
/// no groups.
pub(crate) fn rule_file(text: &str) -> Result<RuleFile, Problem> {
    let mut documents = serde_yaml::Deserializer::from_str(text);
    let Some(first) = documents.next() else {
        return Ok(RuleFile::default());
    };
    let decoded = match Option::<RuleFile>::deserialize(first) {
        Ok(file) => Ok(file.unwrap_or_default()),
        // serde_yaml decodes `<<` merge keys only into a `Value`: decode
        // that way too before calling the file wrong.
        Err(direct) if text.contains("<<") => {
            merged(text).map_err(|_| Problem::Decode(direct.to_string()))
        }
        Err(e) => Err(Problem::Decode(e.to_string())),
    };
    if documents.next().is_some() {
        tracing::warn!(
            "Multiple document yaml rules files are not supported, only the first document is processed"
        );
    }
    decoded
}

/// The first document read as a `Value` with its merge keys applied. A
/// `Value` holds numbers and booleans as such, not as the text they were
/// written as: every scalar but a group's `limit` goes back to text.
fn merged(text: &str) -> Result<RuleFile, serde_yaml::Error> {
    let first = serde_yaml::Deserializer::from_str(text)
        .next()
        .map(Value::deserialize)
        .transpose()?
        .unwrap_or(Value::Null);
    let mut value = first;
    value.apply_merge()?;
    if let Value::Mapping(root) = &mut value {
        for (key, groups) in root.iter_mut() {
            if key.as_str() != Some("groups") {
                scalars_to_text(groups);
                continue;
            }
            let Value::Sequence(groups) = groups else {
                continue;
            };
            for group in groups {
                let Value::Mapping(fields) = group else {
                    scalars_to_text(group);
                    continue;
                };
                for (field, v) in fields.iter_mut() {
                    if field.as_str() != Some("limit") {
                        scalars_to_text(v);
                    }
                }
            }
        }
    }
    Ok(Option::<RuleFile>::deserialize(value)?.unwrap_or_default())
}

fn scalars_to_text(value: &mut Value) {
    match value {
        Value::Bool(b) => *value = Value::String(b.to_string()),
        Value::Number(n) => *value = Value::String(n.to_string()),
        Value::Sequence(items) => items.iter_mut().for_each(scalars_to_text),
        Value::Mapping(entries) => {
            let taken = std::mem::take(entries);
            for (mut k, mut v) in taken {
                scalars_to_text(&mut k);
                scalars_to_text(&mut v);
                entries.insert(k, v);
            }
        }
        Value::Tagged(tagged) => scalars_to_text(&mut tagged.value),
        Value::Null | Value::String(_) => {}
    }
}

/// Serde: text, with `null` (or nothing) as the empty string.
pub(crate) fn text<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

/// Serde: optional text, `null` and the empty string both `None` (Go
/// tells them apart from neither).
pub(crate) fn optional_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(Option::<String>::deserialize(d)?.filter(|s| !s.is_empty()))
}

/// Serde: a list, `null` as empty.
pub(crate) fn list<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

/// Serde: a group's `limit`; `null` and anything below 1 mean no limit,
/// as Prometheus applies a limit only when it is positive.
pub(crate) fn limit<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    let n = Option::<i64>::deserialize(d)?.unwrap_or(0);
    Ok(usize::try_from(n).unwrap_or(0))
}

/// Serde: labels or annotations, names to text; `null` as empty, a
/// `null` value as the empty string, a repeated name an error as in Go.
pub(crate) fn text_map<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    struct TextMap;
    impl<'de> Visitor<'de> for TextMap {
        type Value = BTreeMap<String, String>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a mapping of names to text")
        }

        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(BTreeMap::new())
        }

        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(BTreeMap::new())
        }

        fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<Self::Value, D2::Error> {
            d.deserialize_map(self)
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = BTreeMap::new();
            while let Some(name) = map.next_key::<Option<String>>()? {
                let name = name.unwrap_or_default();
                let value = map.next_value::<Option<String>>()?.unwrap_or_default();
                if out.contains_key(&name) {
                    return Err(serde::de::Error::custom(format!(
                        "mapping key {name:?} already defined"
                    )));
                }
                out.insert(name, value);
            }
            Ok(out)
        }
    }
    d.deserialize_option(TextMap)
}
