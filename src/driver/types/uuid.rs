//! `uuid::Uuid` (feature `uuid`), stored as sqlx's SQLite driver stores it: its 16 bytes as a
//! `BLOB`. `uuid::fmt::Hyphenated` and `uuid::fmt::Simple` bind as `TEXT` in their own form, for
//! columns that hold text.

use sqlx_core::decode::Decode;
use sqlx_core::encode::{Encode, IsNull};
use sqlx_core::error::BoxDynError;
use sqlx_core::types::Type;
use uuid::Uuid;
use uuid::fmt::{Hyphenated, Simple};

use super::{mismatch, text};
use crate::client::Value;
use crate::driver::{Shardlite, ShardliteArgumentBuffer, ShardliteTypeInfo, ShardliteValueRef};

impl Type<Shardlite> for Uuid {
    fn type_info() -> ShardliteTypeInfo {
        ShardliteTypeInfo::BLOB
    }
    fn compatible(ty: &ShardliteTypeInfo) -> bool {
        *ty == ShardliteTypeInfo::BLOB || *ty == ShardliteTypeInfo::TEXT
    }
}

impl Encode<'_, Shardlite> for Uuid {
    fn encode_by_ref(&self, buf: &mut ShardliteArgumentBuffer) -> Result<IsNull, BoxDynError> {
        buf.push(Value::Blob(self.as_bytes().to_vec()));
        Ok(IsNull::No)
    }
}

impl<'r> Decode<'r, Shardlite> for Uuid {
    fn decode(value: ShardliteValueRef<'r>) -> Result<Self, BoxDynError> {
        match value.value() {
            Value::Blob(bytes) => Uuid::from_slice(bytes)
                .map_err(|_| format!("a UUID is 16 bytes, but the BLOB has {}", bytes.len()).into()),
            // A column written as text (by hand, or with `Hyphenated`) reads too.
            Value::Text(text) => {
                Uuid::parse_str(text).map_err(|err| format!("invalid UUID text '{text}': {err}").into())
            }
            other => Err(mismatch("a UUID (BLOB)", other)),
        }
    }
}

macro_rules! uuid_text {
    ($($t:ty => $into:ident),*) => {$(
        impl Type<Shardlite> for $t {
            fn type_info() -> ShardliteTypeInfo {
                ShardliteTypeInfo::TEXT
            }
        }

        impl Encode<'_, Shardlite> for $t {
            fn encode_by_ref(&self, buf: &mut ShardliteArgumentBuffer) -> Result<IsNull, BoxDynError> {
                buf.push(Value::Text(self.to_string()));
                Ok(IsNull::No)
            }
        }

        impl<'r> Decode<'r, Shardlite> for $t {
            fn decode(value: ShardliteValueRef<'r>) -> Result<Self, BoxDynError> {
                let text = text(value, "a UUID (TEXT)")?;
                Uuid::parse_str(text)
                    .map(Uuid::$into)
                    .map_err(|err| format!("invalid UUID text '{text}': {err}").into())
            }
        }
    )*};
}

uuid_text!(Hyphenated => hyphenated, Simple => simple);
