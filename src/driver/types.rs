//! Conversions between Rust types and the engine's values: [`Type`], [`Encode`] and [`Decode`] for
//! the types sqlx's SQLite driver maps, stored the same way, so a file written through either
//! driver reads back through the other. `Option<T>` of each binds and reads NULL.
//!
//! | Rust | binds as | decodes from |
//! |---|---|---|
//! | `bool` | `INTEGER` 0 or 1 | `INTEGER` (non-zero is `true`) |
//! | `i8`, `i16`, `i32`, `i64`, `u8`, `u16`, `u32` | `INTEGER` | `INTEGER`; a value out of the type's range is an error, never truncated |
//! | `f32`, `f64` | `REAL` | `REAL` or `INTEGER` |
//! | `String`, `&str`, `Box<str>`, `Arc<str>`, `Rc<str>`, `Cow<str>` | `TEXT` | `TEXT` |
//! | `Vec<u8>`, `&[u8]`, `Box<[u8]>`, `Arc<[u8]>`, `Rc<[u8]>`, `Cow<[u8]>` | `BLOB` | `BLOB` or `TEXT` (its UTF-8 bytes) |
//! | `time::OffsetDateTime`, `PrimitiveDateTime`, `Date`, `Time` (feature `time`) | `TEXT` (see the `time` module below) | `TEXT`; date-times also `INTEGER` Unix seconds |
//! | `chrono::DateTime<Utc>`, `DateTime<FixedOffset>`, `DateTime<Local>`, `NaiveDateTime`, `NaiveDate`, `NaiveTime` (feature `chrono`) | `TEXT` (see the `chrono` module below) | `TEXT`; date-times also `INTEGER` Unix seconds and `REAL` Julian days |
//! | `uuid::Uuid` (feature `uuid`) | `BLOB`, its 16 bytes | `BLOB`, or `TEXT` in any UUID form |
//! | `uuid::fmt::Hyphenated`, `Simple` (feature `uuid`) | `TEXT` in that form | `TEXT` |
//! | `sqlx::types::Json<T>`, `serde_json::Value`, `&serde_json::value::RawValue` (feature `json`) | `TEXT`, the JSON text | `TEXT` or `BLOB` |
//! | [`Value`] | itself | any value, NULL included |
//!
//! Decoding NULL into a type that is not an `Option` (or [`Value`]) is an error.

#[cfg(feature = "chrono")]
pub mod chrono;
#[cfg(feature = "json")]
mod json;
mod text;
#[cfg(feature = "time")]
pub mod time;
#[cfg(feature = "uuid")]
mod uuid;

use sqlx_core::decode::Decode;
use sqlx_core::encode::{Encode, IsNull};
use sqlx_core::error::{BoxDynError, UnexpectedNullError};
use sqlx_core::types::Type;

use super::{Shardlite, ShardliteArgumentBuffer, ShardliteTypeInfo, ShardliteValueRef};
use crate::client::Value;

fn mismatch(expected: &str, found: &Value) -> BoxDynError {
    if found.is_null() {
        return Box::new(UnexpectedNullError);
    }
    format!("expected {expected}, found a {} value", found.type_name()).into()
}

/// The text of a `TEXT` value, or an error naming what was `expected`.
#[cfg_attr(not(any(feature = "time", feature = "chrono", feature = "uuid")), allow(dead_code))]
fn text<'r>(value: ShardliteValueRef<'r>, expected: &str) -> Result<&'r str, BoxDynError> {
    match value.0 {
        Value::Text(text) => Ok(text.as_str()),
        other => Err(mismatch(expected, other)),
    }
}

fn integer(value: ShardliteValueRef<'_>) -> Result<i64, BoxDynError> {
    match value.0 {
        Value::Integer(v) => Ok(*v),
        other => Err(mismatch("an INTEGER", other)),
    }
}

macro_rules! integer_types {
    ($($t:ty),*) => {$(
        impl Type<Shardlite> for $t {
            fn type_info() -> ShardliteTypeInfo {
                ShardliteTypeInfo::INTEGER
            }
            fn compatible(ty: &ShardliteTypeInfo) -> bool {
                ty.is_integer()
            }
        }

        impl Encode<'_, Shardlite> for $t {
            fn encode_by_ref(&self, buf: &mut ShardliteArgumentBuffer) -> Result<IsNull, BoxDynError> {
                buf.push(Value::Integer(i64::from(*self)));
                Ok(IsNull::No)
            }
        }

        impl<'r> Decode<'r, Shardlite> for $t {
            fn decode(value: ShardliteValueRef<'r>) -> Result<Self, BoxDynError> {
                let v = integer(value)?;
                <$t>::try_from(v)
                    .map_err(|_| format!("integer {v} is out of range for {}", stringify!($t)).into())
            }
        }
    )*};
}

// Unsigned types up to `u32` fit `i64` exactly; decoding refuses values out of their range.
integer_types!(i8, i16, i32, i64, u8, u16, u32);

impl Type<Shardlite> for bool {
    fn type_info() -> ShardliteTypeInfo {
        ShardliteTypeInfo::BOOLEAN
    }
    fn compatible(ty: &ShardliteTypeInfo) -> bool {
        ty.is_integer()
    }
}

impl Encode<'_, Shardlite> for bool {
    fn encode_by_ref(&self, buf: &mut ShardliteArgumentBuffer) -> Result<IsNull, BoxDynError> {
        buf.push(Value::Integer(i64::from(*self)));
        Ok(IsNull::No)
    }
}

impl<'r> Decode<'r, Shardlite> for bool {
    fn decode(value: ShardliteValueRef<'r>) -> Result<Self, BoxDynError> {
        Ok(integer(value)? != 0)
    }
}

fn real(value: ShardliteValueRef<'_>) -> Result<f64, BoxDynError> {
    match value.0 {
        Value::Real(v) => Ok(*v),
        // SQLite hands back integral values of numeric columns as integers.
        #[allow(clippy::cast_precision_loss)]
        Value::Integer(v) => Ok(*v as f64),
        other => Err(mismatch("a REAL", other)),
    }
}

impl Type<Shardlite> for f64 {
    fn type_info() -> ShardliteTypeInfo {
        ShardliteTypeInfo::REAL
    }
    fn compatible(ty: &ShardliteTypeInfo) -> bool {
        *ty == ShardliteTypeInfo::REAL || ty.is_integer()
    }
}

impl Encode<'_, Shardlite> for f64 {
    fn encode_by_ref(&self, buf: &mut ShardliteArgumentBuffer) -> Result<IsNull, BoxDynError> {
        buf.push(Value::Real(*self));
        Ok(IsNull::No)
    }
}

impl<'r> Decode<'r, Shardlite> for f64 {
    fn decode(value: ShardliteValueRef<'r>) -> Result<Self, BoxDynError> {
        real(value)
    }
}

impl Type<Shardlite> for f32 {
    fn type_info() -> ShardliteTypeInfo {
        ShardliteTypeInfo::REAL
    }
    fn compatible(ty: &ShardliteTypeInfo) -> bool {
        <f64 as Type<Shardlite>>::compatible(ty)
    }
}

impl Encode<'_, Shardlite> for f32 {
    fn encode_by_ref(&self, buf: &mut ShardliteArgumentBuffer) -> Result<IsNull, BoxDynError> {
        buf.push(Value::Real(f64::from(*self)));
        Ok(IsNull::No)
    }
}

impl<'r> Decode<'r, Shardlite> for f32 {
    fn decode(value: ShardliteValueRef<'r>) -> Result<Self, BoxDynError> {
        // Narrowing is what asking for an f32 means; SQLite itself stores only doubles.
        #[allow(clippy::cast_possible_truncation)]
        Ok(real(value)? as f32)
    }
}

impl Type<Shardlite> for str {
    fn type_info() -> ShardliteTypeInfo {
        ShardliteTypeInfo::TEXT
    }
}

impl Type<Shardlite> for String {
    fn type_info() -> ShardliteTypeInfo {
        ShardliteTypeInfo::TEXT
    }
}

impl<'q> Encode<'q, Shardlite> for &'q str {
    fn encode_by_ref(&self, buf: &mut ShardliteArgumentBuffer) -> Result<IsNull, BoxDynError> {
        buf.push(Value::Text((*self).to_owned()));
        Ok(IsNull::No)
    }
}

impl Encode<'_, Shardlite> for String {
    fn encode(self, buf: &mut ShardliteArgumentBuffer) -> Result<IsNull, BoxDynError> {
        buf.push(Value::Text(self));
        Ok(IsNull::No)
    }

    fn encode_by_ref(&self, buf: &mut ShardliteArgumentBuffer) -> Result<IsNull, BoxDynError> {
        buf.push(Value::Text(self.clone()));
        Ok(IsNull::No)
    }
}

impl<'r> Decode<'r, Shardlite> for &'r str {
    fn decode(value: ShardliteValueRef<'r>) -> Result<Self, BoxDynError> {
        match value.0 {
            Value::Text(text) => Ok(text.as_str()),
            other => Err(mismatch("TEXT", other)),
        }
    }
}

impl<'r> Decode<'r, Shardlite> for String {
    fn decode(value: ShardliteValueRef<'r>) -> Result<Self, BoxDynError> {
        <&str as Decode<Shardlite>>::decode(value).map(str::to_owned)
    }
}

impl Type<Shardlite> for [u8] {
    fn type_info() -> ShardliteTypeInfo {
        ShardliteTypeInfo::BLOB
    }
    fn compatible(ty: &ShardliteTypeInfo) -> bool {
        *ty == ShardliteTypeInfo::BLOB || *ty == ShardliteTypeInfo::TEXT
    }
}

impl Type<Shardlite> for Vec<u8> {
    fn type_info() -> ShardliteTypeInfo {
        ShardliteTypeInfo::BLOB
    }
    fn compatible(ty: &ShardliteTypeInfo) -> bool {
        <[u8] as Type<Shardlite>>::compatible(ty)
    }
}

impl<'q> Encode<'q, Shardlite> for &'q [u8] {
    fn encode_by_ref(&self, buf: &mut ShardliteArgumentBuffer) -> Result<IsNull, BoxDynError> {
        buf.push(Value::Blob(self.to_vec()));
        Ok(IsNull::No)
    }
}

impl Encode<'_, Shardlite> for Vec<u8> {
    fn encode(self, buf: &mut ShardliteArgumentBuffer) -> Result<IsNull, BoxDynError> {
        buf.push(Value::Blob(self));
        Ok(IsNull::No)
    }

    fn encode_by_ref(&self, buf: &mut ShardliteArgumentBuffer) -> Result<IsNull, BoxDynError> {
        buf.push(Value::Blob(self.clone()));
        Ok(IsNull::No)
    }
}

impl<'r> Decode<'r, Shardlite> for &'r [u8] {
    fn decode(value: ShardliteValueRef<'r>) -> Result<Self, BoxDynError> {
        match value.0 {
            Value::Blob(bytes) => Ok(bytes.as_slice()),
            Value::Text(text) => Ok(text.as_bytes()),
            other => Err(mismatch("a BLOB", other)),
        }
    }
}

impl<'r> Decode<'r, Shardlite> for Vec<u8> {
    fn decode(value: ShardliteValueRef<'r>) -> Result<Self, BoxDynError> {
        <&[u8] as Decode<Shardlite>>::decode(value).map(<[u8]>::to_vec)
    }
}

/// Any value: binds as itself and decodes whatever the column holds.
impl Type<Shardlite> for Value {
    fn type_info() -> ShardliteTypeInfo {
        ShardliteTypeInfo::NULL
    }
    fn compatible(_ty: &ShardliteTypeInfo) -> bool {
        true
    }
}

impl Encode<'_, Shardlite> for Value {
    fn encode(self, buf: &mut ShardliteArgumentBuffer) -> Result<IsNull, BoxDynError> {
        buf.push(self);
        Ok(IsNull::No)
    }

    fn encode_by_ref(&self, buf: &mut ShardliteArgumentBuffer) -> Result<IsNull, BoxDynError> {
        buf.push(self.clone());
        Ok(IsNull::No)
    }
}

impl<'r> Decode<'r, Shardlite> for Value {
    fn decode(value: ShardliteValueRef<'r>) -> Result<Self, BoxDynError> {
        Ok(value.0.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode<'r, T: Decode<'r, Shardlite>>(value: &'r Value) -> Result<T, BoxDynError> {
        T::decode(ShardliteValueRef(value))
    }

    #[test]
    fn integers_decode_exactly_or_fail() {
        assert_eq!(decode::<i64>(&Value::Integer(i64::MIN)).unwrap(), i64::MIN);
        assert_eq!(decode::<i8>(&Value::Integer(-128)).unwrap(), -128);
        let err = decode::<i8>(&Value::Integer(128)).unwrap_err();
        assert!(err.to_string().contains("out of range for i8"), "{err}");
        assert!(decode::<i32>(&Value::Text("1".into())).is_err());
        assert!(decode::<bool>(&Value::Integer(2)).unwrap());
    }

    #[test]
    fn null_into_a_plain_type_is_the_unexpected_null_error() {
        let err = decode::<String>(&Value::Null).unwrap_err();
        assert!(err.is::<UnexpectedNullError>(), "{err}");
        assert_eq!(decode::<Option<String>>(&Value::Null).unwrap(), None);
        assert_eq!(decode::<Value>(&Value::Null).unwrap(), Value::Null);
    }

    #[test]
    fn text_and_bytes_borrow_from_the_row() {
        let text = Value::Text("héllo".into());
        assert_eq!(decode::<&str>(&text).unwrap(), "héllo");
        assert_eq!(decode::<&[u8]>(&text).unwrap(), "héllo".as_bytes());
        let blob = Value::Blob(vec![0, 255]);
        assert_eq!(decode::<Vec<u8>>(&blob).unwrap(), vec![0, 255]);
        assert!(decode::<String>(&blob).is_err());
        assert!((decode::<f32>(&Value::Integer(3)).unwrap() - 3.0).abs() < f32::EPSILON);
    }
}
