//! `sqlx::types::Json<T>` (feature `json`), stored as sqlx's SQLite driver stores it: the JSON
//! text as `TEXT`. `serde_json::Value` and `&RawValue` come with it (sqlx-core forwards them to
//! `Json`). Decoding also accepts a `BLOB` holding JSON text.

use serde::{Deserialize, Serialize};
use sqlx_core::decode::Decode;
use sqlx_core::encode::{Encode, IsNull};
use sqlx_core::error::BoxDynError;
use sqlx_core::types::{Json, Type};

use super::mismatch;
use crate::client::Value;
use crate::driver::{Shardlite, ShardliteArgumentBuffer, ShardliteTypeInfo, ShardliteValueRef};

impl<T> Type<Shardlite> for Json<T> {
    fn type_info() -> ShardliteTypeInfo {
        ShardliteTypeInfo::TEXT
    }
    fn compatible(ty: &ShardliteTypeInfo) -> bool {
        *ty == ShardliteTypeInfo::TEXT || *ty == ShardliteTypeInfo::BLOB
    }
}

impl<T: Serialize> Encode<'_, Shardlite> for Json<T> {
    fn encode_by_ref(&self, buf: &mut ShardliteArgumentBuffer) -> Result<IsNull, BoxDynError> {
        buf.push(Value::Text(self.encode_to_string()?));
        Ok(IsNull::No)
    }
}

impl<'r, T: 'r + Deserialize<'r>> Decode<'r, Shardlite> for Json<T> {
    fn decode(value: ShardliteValueRef<'r>) -> Result<Self, BoxDynError> {
        let bytes = match value.value() {
            Value::Text(text) => text.as_bytes(),
            Value::Blob(bytes) => bytes.as_slice(),
            other => return Err(mismatch("JSON (TEXT)", other)),
        };
        Self::decode_from_bytes(bytes)
    }
}
