//! The value model: null, exact 64-bit integer, 64-bit float, text, blob.
//!
//! JSON encoding (used by every transport): `null`, a JSON integer, a JSON float (always
//! written with a fraction or exponent so it reads back as a float), a string, and
//! `{"$blob":"<base64>"}` for blobs. Non-finite floats, which JSON cannot carry, travel as
//! `{"$real":"inf"}`, `{"$real":"-inf"}` or `{"$real":"nan"}`.

use base64::Engine as _;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD as BASE64};

/// Decoding accepts base64 with or without padding and ignores stray trailing bits, so any
/// reasonable encoder's output is taken; encoding is always canonical standard base64.
const LENIENT_BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One SQLite value.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Value {
    /// SQL NULL.
    #[default]
    Null,
    /// A 64-bit integer, exact over its whole range.
    Integer(i64),
    /// A 64-bit IEEE float.
    Real(f64),
    /// UTF-8 text.
    Text(String),
    /// Raw bytes.
    Blob(Vec<u8>),
}

impl Value {
    /// The integer, if this is one.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Self::Integer(v) => Some(*v),
            _ => None,
        }
    }

    /// The float (integers widen), if this is numeric.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            #[allow(clippy::cast_precision_loss)]
            Self::Integer(v) => Some(*v as f64),
            Self::Real(v) => Some(*v),
            _ => None,
        }
    }

    /// The text, if this is text.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::Text(v) => Some(v),
            _ => None,
        }
    }

    /// The bytes, if this is a blob.
    pub fn as_blob(&self) -> Option<&[u8]> {
        match self {
            Self::Blob(v) => Some(v),
            _ => None,
        }
    }

    /// Whether this is NULL.
    pub fn is_null(&self) -> bool {
        matches!(self, Self::Null)
    }

    /// The SQLite storage class name (`NULL`, `INTEGER`, `REAL`, `TEXT`, `BLOB`).
    pub fn type_name(&self) -> &'static str {
        self.as_value_ref().type_name()
    }
}

macro_rules! from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for Value {
            fn from(v: $t) -> Self {
                Self::Integer(i64::from(v))
            }
        }
    )*};
}
from_int!(i8, i16, i32, i64, u8, u16, u32, bool);

impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Self::Real(v)
    }
}
impl From<f32> for Value {
    fn from(v: f32) -> Self {
        Self::Real(f64::from(v))
    }
}
impl From<String> for Value {
    fn from(v: String) -> Self {
        Self::Text(v)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Self::Text(v.to_owned())
    }
}
impl From<Vec<u8>> for Value {
    fn from(v: Vec<u8>) -> Self {
        Self::Blob(v)
    }
}
impl From<&[u8]> for Value {
    fn from(v: &[u8]) -> Self {
        Self::Blob(v.to_vec())
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Self {
        v.map_or(Self::Null, Into::into)
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Null => serializer.serialize_unit(),
            Self::Integer(v) => serializer.serialize_i64(*v),
            Self::Real(v) if v.is_finite() => serializer.serialize_f64(*v),
            Self::Real(v) => {
                let text = if v.is_nan() {
                    "nan"
                } else if *v > 0.0 {
                    "inf"
                } else {
                    "-inf"
                };
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("$real", text)?;
                map.end()
            }
            Self::Text(v) => serializer.serialize_str(v),
            Self::Blob(v) => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("$blob", &BASE64.encode(v))?;
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("null, a number, a string, true/false, or {\"$blob\": \"<base64>\"}")
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Integer(i64::from(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Integer(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        i64::try_from(v)
            .map(Value::Integer)
            .map_err(|_| E::custom(format!("integer {v} does not fit in a signed 64-bit SQLite integer")))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::Real(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::Text(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::Text(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _seq: A) -> Result<Value, A::Error> {
        Err(de::Error::custom(
            "an array is not a SQL value (encode blobs as {\"$blob\": \"<base64>\"})",
        ))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let Some(tag) = map.next_key::<String>()? else {
            return Err(de::Error::custom("an empty object is not a SQL value"));
        };
        let text: String = map.next_value()?;
        if map.next_key::<String>()?.is_some() {
            return Err(de::Error::custom(format!("a {tag} object must have exactly one field")));
        }
        match tag.as_str() {
            "$blob" => LENIENT_BASE64
                .decode(text.as_bytes())
                .map(Value::Blob)
                .map_err(|e| de::Error::custom(format!("invalid base64 in $blob: {e}"))),
            "$real" => match text.as_str() {
                "inf" => Ok(Value::Real(f64::INFINITY)),
                "-inf" => Ok(Value::Real(f64::NEG_INFINITY)),
                "nan" => Ok(Value::Real(f64::NAN)),
                other => Err(de::Error::custom(format!(
                    "$real must be \"inf\", \"-inf\" or \"nan\", not \"{other}\""
                ))),
            },
            other => Err(de::Error::custom(format!(
                "unknown tagged value '{other}' (expected $blob or $real)"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(value: &Value) -> Value {
        serde_json::from_str(&serde_json::to_string(value).unwrap()).unwrap()
    }

    #[test]
    fn json_round_trip_is_lossless() {
        let values = [
            Value::Null,
            Value::Integer(i64::MIN),
            Value::Integer(i64::MAX),
            Value::Integer((1 << 53) + 1),
            Value::Real(-0.0),
            Value::Real(f64::MIN_POSITIVE / 4.0),
            Value::Real(1.0),
            Value::Real(f64::INFINITY),
            Value::Text("nul\0 and 🙂".into()),
            Value::Blob(vec![0, 255, 1]),
        ];
        for value in &values {
            let back = round_trip(value);
            match (value, &back) {
                (Value::Real(a), Value::Real(b)) => assert_eq!(a.to_bits(), b.to_bits()),
                _ => assert_eq!(value, &back),
            }
        }
    }

    #[test]
    fn blob_json_shape_and_bad_input() {
        assert_eq!(
            serde_json::to_string(&Value::Blob(b"hi".to_vec())).unwrap(),
            r#"{"$blob":"aGk="}"#
        );
        assert!(serde_json::from_str::<Value>(r#"{"$blob":"***"}"#).is_err());
        // Unpadded and non-canonical trailing bits are accepted on input.
        assert_eq!(
            serde_json::from_str::<Value>(r#"{"$blob":"aGk"}"#).unwrap(),
            Value::Blob(b"hi".to_vec())
        );
        assert_eq!(
            serde_json::from_str::<Value>(r#"{"$blob":"aGl="}"#).unwrap(),
            Value::Blob(b"hi".to_vec())
        );
        assert!(serde_json::from_str::<Value>(r#"{"$other":"x"}"#).is_err());
        assert!(serde_json::from_str::<Value>("[1]").is_err());
        assert!(serde_json::from_str::<Value>("18446744073709551615").is_err());
    }
}
