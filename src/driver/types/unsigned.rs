//! `u8`, `u16` and `u32`: stored as `INTEGER`, decoded exactly or refused.

use sqlx_core::decode::Decode;
use sqlx_core::encode::{Encode, IsNull};
use sqlx_core::error::BoxDynError;
use sqlx_core::types::Type;

use super::integer;
use crate::client::Value;
use crate::driver::{Shardlite, ShardliteArgumentBuffer, ShardliteTypeInfo, ShardliteValueRef};

macro_rules! unsigned_types {
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

unsigned_types!(u8, u16, u32);
