//! Attribute values as label values, and the label set a data point gets
//! from its attributes, its resource and its scope.

use std::collections::BTreeMap;

use base64::Engine as _;

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

/// A label set under construction, sorted by name; setting an empty value
/// removes the label, as Prometheus' label builder does.
#[derive(Clone, Debug, Default)]
pub struct LabelBuilder(BTreeMap<String, String>);

impl LabelBuilder {
    pub fn set(&mut self, name: impl Into<String>, value: impl Into<String>) {
        let (name, value) = (name.into(), value.into());
        if value.is_empty() {
            self.0.remove(&name);
        } else {
            self.0.insert(name, value);
        }
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// Sets `name` only if the set lacks it.
    pub fn set_if_absent(&mut self, name: &str, value: &str) {
        if self.get(name).is_none() {
            self.set(name, value);
        }
    }

    /// A data point's attributes (minus `ignore`) under their label names;
    /// two attributes whose names sanitize alike get their values joined
    /// with `;` in key order, and `collisions` names them.
    pub fn from_attributes(
        attrs: &[KeyValue],
        ignore: &[&str],
        namer: &LabelNamer,
        collisions: &mut Vec<String>,
    ) -> Result<Self, String> {
        let mut sorted: Vec<(&str, String)> = attrs
            .iter()
            .filter(|kv| !ignore.contains(&kv.key.as_str()))
            .map(|kv| (kv.key.as_str(), value_string(kv.value.as_ref())))
            .collect();
        sorted.sort_by(|a, b| a.0.cmp(b.0));
        let mut out = Self::default();
        for (key, value) in sorted {
            if value.is_empty() {
                continue;
            }
            let name = namer.build(key)?;
            match out.0.get_mut(&name) {
                Some(existing) => {
                    existing.push(';');
                    existing.push_str(&value);
                    if !collisions.contains(&name) {
                        collisions.push(name);
                    }
                }
                None => {
                    out.0.insert(name, value);
                }
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
        let b = LabelBuilder::from_attributes(&attrs, &[], &namer, &mut collisions).unwrap();
        assert_eq!(b.iter().collect::<Vec<_>>(), vec![("a_b", "2;1")]);
        assert_eq!(collisions, vec!["a_b".to_owned()]);
    }
}
