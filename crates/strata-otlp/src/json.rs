//! OTLP/JSON's number forms: 64-bit integers as decimal strings or
//! numbers, doubles as numbers or `"NaN"`, `"Infinity"`, `"-Infinity"`,
//! enums as integers (or their names), bytes as base64 (trace and span
//! ids in hex). `null` reads as
//! the field's default, as proto3's JSON mapping says.

use base64::Engine as _;
use serde::de::{self, Deserializer};
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(untagged)]
enum Number<'a> {
    U(u64),
    I(i64),
    F(f64),
    #[serde(borrow)]
    S(std::borrow::Cow<'a, str>),
}

fn parse<'de, D, T>(d: D, convert: impl FnOnce(Number<'_>) -> Option<T>) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default,
{
    match Option::<Number>::deserialize(d)? {
        None => Ok(T::default()),
        Some(n) => {
            let shown = match &n {
                Number::U(v) => v.to_string(),
                Number::I(v) => v.to_string(),
                Number::F(v) => v.to_string(),
                Number::S(s) => format!("{s:?}"),
            };
            convert(n).ok_or_else(|| {
                de::Error::custom(format!(
                    "{shown} is not a valid {}",
                    std::any::type_name::<T>()
                ))
            })
        }
    }
}

pub fn u64_number<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    parse(d, as_u64)
}

fn as_u64(n: Number<'_>) -> Option<u64> {
    match n {
        Number::U(v) => Some(v),
        Number::I(v) => u64::try_from(v).ok(),
        Number::S(s) => s.parse().ok(),
        Number::F(_) => None,
    }
}

pub fn i64_number<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    parse(d, |n| match n {
        Number::U(v) => i64::try_from(v).ok(),
        Number::I(v) => Some(v),
        Number::S(s) => s.parse().ok(),
        Number::F(_) => None,
    })
}

pub fn f64_number<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    parse(d, as_f64)
}

#[allow(clippy::cast_precision_loss)]
fn as_f64(n: Number<'_>) -> Option<f64> {
    match n {
        Number::U(v) => Some(v as f64),
        Number::I(v) => Some(v as f64),
        Number::F(v) => Some(v),
        Number::S(s) => match s.as_ref() {
            "NaN" => Some(f64::NAN),
            "Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            other => other.parse().ok(),
        },
    }
}

pub fn optional_f64_number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    parse(d, |n| as_f64(n).map(Some))
}

pub fn u64_numbers<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u64>, D::Error> {
    let list = Option::<Vec<Number>>::deserialize(d)?.unwrap_or_default();
    list.into_iter()
        .map(|n| as_u64(n).ok_or_else(|| de::Error::custom("not a valid unsigned 64-bit count")))
        .collect()
}

pub fn f64_numbers<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
    let list = Option::<Vec<Number>>::deserialize(d)?.unwrap_or_default();
    list.into_iter()
        .map(|n| as_f64(n).ok_or_else(|| de::Error::custom("not a valid double")))
        .collect()
}

/// An `AggregationTemporality`, by number or by its enum name.
pub fn enum_number<'de, D: Deserializer<'de>>(d: D) -> Result<i32, D::Error> {
    parse(d, |n| match n {
        Number::U(v) => i32::try_from(v).ok(),
        Number::I(v) => i32::try_from(v).ok(),
        Number::S(s) => match s.as_ref() {
            "AGGREGATION_TEMPORALITY_UNSPECIFIED" => Some(0),
            "AGGREGATION_TEMPORALITY_DELTA" => Some(1),
            "AGGREGATION_TEMPORALITY_CUMULATIVE" => Some(2),
            other => other.parse().ok(),
        },
        Number::F(_) => None,
    })
}

pub fn base64_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    let s = Option::<std::borrow::Cow<'de, str>>::deserialize(d)?.unwrap_or_default();
    base64::engine::general_purpose::STANDARD
        .decode(s.as_bytes())
        .map_err(|e| de::Error::custom(format!("bytesValue is not base64: {e}")))
}

/// A trace or span id, which OTLP/JSON writes in hex (not base64).
pub fn hex_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    let s = Option::<std::borrow::Cow<'de, str>>::deserialize(d)?.unwrap_or_default();
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    let bad = || de::Error::custom(format!("{s:?} is not a hex id"));
    if s.len() % 2 != 0 {
        return Err(bad());
    }
    s.as_bytes()
        .chunks_exact(2)
        .map(|pair| match pair {
            [hi, lo] => Some(digit(*hi)? << 4 | digit(*lo)?),
            _ => None,
        })
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(bad)
}
