//! [`ShardliteValue`] and [`ShardliteValueRef`]: one value of a row, owned or borrowed.

use std::borrow::Cow;

use sqlx_core::value::{Value as SqlxValue, ValueRef};

use super::{Shardlite, ShardliteTypeInfo};
use crate::client::Value;

/// An owned value: one of the engine's [`Value`]s (null, 64-bit integer, float, text, blob).
#[derive(Debug, Clone, PartialEq)]
pub struct ShardliteValue(pub(crate) Value);

impl ShardliteValue {
    /// Wraps an engine value.
    pub fn new(value: Value) -> Self {
        Self(value)
    }

    /// The engine value.
    pub fn as_value(&self) -> &Value {
        &self.0
    }

    /// The engine value, by value.
    pub fn into_value(self) -> Value {
        self.0
    }
}

impl From<Value> for ShardliteValue {
    fn from(value: Value) -> Self {
        Self(value)
    }
}

/// A value borrowed from a row; what [`Decode`](sqlx_core::decode::Decode) implementations read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShardliteValueRef<'r>(pub(crate) &'r Value);

impl<'r> ShardliteValueRef<'r> {
    /// The engine value, borrowed for as long as the row.
    pub fn value(&self) -> &'r Value {
        self.0
    }
}

impl SqlxValue for ShardliteValue {
    type Database = Shardlite;

    fn as_ref(&self) -> ShardliteValueRef<'_> {
        ShardliteValueRef(&self.0)
    }

    fn type_info(&self) -> Cow<'_, ShardliteTypeInfo> {
        Cow::Owned(ShardliteTypeInfo::of(&self.0))
    }

    fn is_null(&self) -> bool {
        self.0.is_null()
    }
}

impl<'r> ValueRef<'r> for ShardliteValueRef<'r> {
    type Database = Shardlite;

    fn to_owned(&self) -> ShardliteValue {
        ShardliteValue(self.0.clone())
    }

    fn type_info(&self) -> Cow<'_, ShardliteTypeInfo> {
        Cow::Owned(ShardliteTypeInfo::of(self.0))
    }

    fn is_null(&self) -> bool {
        self.0.is_null()
    }
}
