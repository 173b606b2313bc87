//! Text and bytes behind smart pointers: `Box<str>`, `Arc<str>`, `Cow<str>` and their byte
//! counterparts bind as `TEXT` / `BLOB` (sqlx-core already decodes them through `&str` / `Vec<u8>`).

use std::borrow::Cow;
use std::rc::Rc;
use std::sync::Arc;

use sqlx_core::encode::{Encode, IsNull};
use sqlx_core::error::BoxDynError;

use crate::client::Value;
use crate::driver::{Shardlite, ShardliteArgumentBuffer};

macro_rules! owned_text {
    ($($t:ty),*) => {$(
        impl Encode<'_, Shardlite> for $t {
            fn encode_by_ref(&self, buf: &mut ShardliteArgumentBuffer) -> Result<IsNull, BoxDynError> {
                buf.push(Value::Text(str::to_owned(self)));
                Ok(IsNull::No)
            }
        }
    )*};
}

macro_rules! owned_bytes {
    ($($t:ty),*) => {$(
        impl Encode<'_, Shardlite> for $t {
            fn encode_by_ref(&self, buf: &mut ShardliteArgumentBuffer) -> Result<IsNull, BoxDynError> {
                buf.push(Value::Blob(<[u8]>::to_vec(self)));
                Ok(IsNull::No)
            }
        }
    )*};
}

owned_text!(Box<str>, Arc<str>, Rc<str>, Cow<'_, str>);
owned_bytes!(Box<[u8]>, Arc<[u8]>, Rc<[u8]>, Cow<'_, [u8]>);
