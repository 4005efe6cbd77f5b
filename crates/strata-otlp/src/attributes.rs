//! Attribute values as label values, and the label set a data point gets
//! from its attributes, its resource and its scope.

use std::collections::HashMap;

use base64::Engine as _;
use bytes::Bytes;
use strata_write::{RawLabel, RawLabels};

use crate::names::LabelNamer;
use crate::proto::{any_value, AnyValue, KeyValue};

/// An attribute's value as Prometheus writes it in a label: strings as
/// they are, numbers and booleans in text, bytes in base64, lists and maps
/// in JSON.
pub fn value_string(v: Option<&AnyValue>) -> String {
    match v.and_then(|v| v.value.as_ref()) {
        None => String::new(),
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::DoubleValue(f)) => double_string(*f),
        Some(any_value::Value::BytesValue(b)) => {
            base64::engine::general_purpose::STANDARD.encode(b)
        }
        Some(v @ (any_value::Value::ArrayValue(_) | any_value::Value::KvlistValue(_))) => {
            raw(Some(v)).to_string()
        }
    }
}

/// A double as JavaScript (and Go's JSON encoder) writes it.
pub fn double_string(f: f64) -> String {
    if !f.is_finite() {
        let shown = if f.is_nan() {
            "NaN"
        } else if f > 0.0 {
            "+Inf"
        } else {
            "-Inf"
        };
        return format!("json: unsupported value: {shown}");
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let s = format!("{f:e}");
        match s.split_once('e') {
            Some((m, e)) if !e.starts_with('-') => format!("{m}e+{e}"),
            _ => s,
        }
    } else {
        format!("{f}")
    }
}

fn raw(v: Option<&any_value::Value>) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        None => J::Null,
        Some(any_value::Value::StringValue(s)) => J::String(s.clone()),
        Some(any_value::Value::BoolValue(b)) => J::Bool(*b),
        Some(any_value::Value::IntValue(i)) => J::from(*i),
        Some(any_value::Value::DoubleValue(f)) => {
            serde_json::Number::from_f64(*f).map_or(J::Null, J::Number)
        }
        Some(any_value::Value::BytesValue(b)) => {
            J::String(base64::engine::general_purpose::STANDARD.encode(b))
        }
        Some(any_value::Value::ArrayValue(a)) => {
            J::Array(a.values.iter().map(|v| raw(v.value.as_ref())).collect())
        }
        Some(any_value::Value::KvlistValue(kv)) => J::Object(
            kv.values
                .iter()
                .map(|kv| {
                    (
                        kv.key.clone(),
                        raw(kv.value.as_ref().and_then(|v| v.value.as_ref())),
                    )
                })
                .collect(),
        ),
    }
}

/// The value of attribute `key`, if present.
pub fn get<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a KeyValue> {
    attrs.iter().find(|kv| kv.key == key)
}

/// Label names of attribute keys, each built once per request (a request
/// repeats the same few keys on every point).
pub struct NameCache {
    namer: LabelNamer,
    built: HashMap<String, Bytes>,
}

impl NameCache {
    pub fn new(namer: LabelNamer) -> Self {
        Self {
            namer,
            built: HashMap::new(),
        }
    }

    /// The label name of attribute `key`, or why it has none.
    pub fn build(&mut self, key: &str) -> Result<Bytes, String> {
        if let Some(b) = self.built.get(key) {
            return Ok(b.clone());
        }
        let b = Bytes::from(self.namer.build(key)?);
        self.built.insert(key.to_owned(), b.clone());
        Ok(b)
    }
}

/// A label set under construction, sorted by name; setting an empty value
/// removes the label, as Prometheus' label builder does. Names and values
/// are shared buffers, so the labels a resource or a histogram's points
/// have in common are copied by reference.
#[derive(Clone, Debug, Default)]
pub struct LabelBuilder(Vec<(Bytes, Bytes)>);

impl LabelBuilder {
    fn find(&self, name: &[u8]) -> Result<usize, usize> {
        self.0.binary_search_by(|(n, _)| n.as_ref().cmp(name))
    }

    pub fn set(&mut self, name: impl Into<Bytes>, value: impl Into<Bytes>) {
        let (name, value) = (name.into(), value.into());
        match self.find(&name) {
            Ok(i) if value.is_empty() => {
                self.0.remove(i);
            }
            Ok(i) => {
                if let Some(slot) = self.0.get_mut(i) {
                    slot.1 = value;
                }
            }
            Err(_) if value.is_empty() => {}
            Err(i) => self.0.insert(i, (name, value)),
        }
    }

    pub fn get(&self, name: &str) -> Option<&Bytes> {
        let i = self.find(name.as_bytes()).ok()?;
        self.0.get(i).map(|(_, v)| v)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Bytes, &Bytes)> {
        self.0.iter().map(|(n, v)| (n, v))
    }

    /// Sets `name` only if the set lacks it.
    pub fn set_if_absent(&mut self, name: &Bytes, value: &Bytes) {
        if let Err(i) = self.find(name) {
            if !value.is_empty() {
                self.0.insert(i, (name.clone(), value.clone()));
            }
        }
    }

    /// The labels as a decoded series carries them.
    pub fn into_raw(self) -> RawLabels {
        RawLabels(
            self.0
                .into_iter()
                .filter_map(|(n, v)| RawLabel::new(n, v))
                .collect(),
        )
    }

    /// A data point's attributes (minus `ignore`) under their label names;
    /// two attributes whose names sanitize alike get their values joined
    /// with `;` in key order, and `collisions` names them.
    pub fn from_attributes(
        attrs: &[KeyValue],
        ignore: &[&str],
        names: &mut NameCache,
        collisions: &mut Vec<String>,
    ) -> Result<Self, String> {
        let mut sorted: Vec<&KeyValue> = attrs
            .iter()
            .filter(|kv| !ignore.contains(&kv.key.as_str()))
            .collect();
        sorted.sort_by(|a, b| a.key.cmp(&b.key));
        let mut out = Self(Vec::with_capacity(sorted.len() + 4));
        for kv in sorted {
            let value = value_string(kv.value.as_ref());
            if value.is_empty() {
                continue;
            }
            let name = names.build(&kv.key)?;
            match out.find(&name) {
                Ok(i) => {
                    if let Some(slot) = out.0.get_mut(i) {
                        let mut joined = Vec::with_capacity(slot.1.len() + 1 + value.len());
                        joined.extend_from_slice(&slot.1);
                        joined.push(b';');
                        joined.extend_from_slice(value.as_bytes());
                        slot.1 = Bytes::from(joined);
                    }
                    let shown = String::from_utf8_lossy(&name).into_owned();
                    if !collisions.contains(&shown) {
                        collisions.push(shown);
                    }
                }
                Err(i) => out.0.insert(i, (name, Bytes::from(value))),
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn kv(key: &str, v: any_value::Value) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: Some(AnyValue { value: Some(v) }),
        }
    }

    #[test]
    fn values_as_text() {
        use any_value::Value::*;
        let s = |v| value_string(Some(&AnyValue { value: Some(v) }));
        assert_eq!(s(StringValue("x".into())), "x");
        assert_eq!(s(BoolValue(true)), "true");
        assert_eq!(s(IntValue(-3)), "-3");
        assert_eq!(s(DoubleValue(1.5)), "1.5");
        assert_eq!(s(DoubleValue(3.0)), "3");
        assert_eq!(s(DoubleValue(1e21)), "1e+21");
        assert_eq!(s(DoubleValue(1.5e-7)), "1.5e-7");
        assert_eq!(s(BytesValue(vec![1, 2, 3])), "AQID");
        let list = ArrayValue(crate::proto::ArrayValue {
            values: vec![
                AnyValue {
                    value: Some(StringValue("a".into())),
                },
                AnyValue {
                    value: Some(IntValue(1)),
                },
            ],
        });
        assert_eq!(s(list), r#"["a",1]"#);
    }

    #[test]
    fn colliding_names_join_values() {
        use any_value::Value::StringValue;
        let namer = LabelNamer {
            utf8: false,
            underscore_sanitization: true,
            preserve_multiple_underscores: true,
        };
        let attrs = vec![
            kv("a.b", StringValue("2".into())),
            kv("a_b", StringValue("1".into())),
            kv("empty", StringValue(String::new())),
        ];
        let mut collisions = Vec::new();
        let mut names = NameCache::new(namer);
        let b = LabelBuilder::from_attributes(&attrs, &[], &mut names, &mut collisions).unwrap();
        let got: Vec<(&[u8], &[u8])> = b.iter().map(|(n, v)| (&n[..], &v[..])).collect();
        assert_eq!(got, vec![(&b"a_b"[..], &b"2;1"[..])]);
        assert_eq!(collisions, vec!["a_b".to_owned()]);
    }
}
