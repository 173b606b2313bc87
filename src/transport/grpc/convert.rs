//! Conversions between the crate's types and the generated protobuf messages, used by both the
//! gRPC client and the daemon's gRPC service so the two sides cannot disagree.
//!
//! Encoding (crate → protobuf) never fails. Decoding (protobuf → crate) fails only where the
//! message can carry something the crate type cannot: JSON text that does not parse, a named
//! parameter without a name, an absent required field, an unknown enum value.
//!
//! Values, parameters and rows are here; [`data`] has the results of the data interface, [`admin`]
//! the shard-administration types, [`heat`] the heat report, [`catalog`] the catalog updates, [`schema`] schema migrations across shards, [`directory`] shard directories, [`atomic`] the participant calls of atomic transactions. Messages that mirror a crate type field for field are declared
//! with [`convert_both_ways!`], once for both directions.

use std::collections::{BTreeMap, HashMap};

use super::proto as pb;
use crate::data::{Params, Row, Value};
use crate::error::{Error, Result};

/// Implements `From` both ways between a crate type and a protobuf message with the same field
/// names. Each field is moved as is, or converted: `list` item by item, `option` when present,
/// `value_rows` row by row (each row a list of values).
macro_rules! convert_both_ways {
    ($ours:ty, $theirs:ty { $($field:ident $(: $how:ident)?),* $(,)? }) => {
        impl From<$ours> for $theirs {
            fn from(value: $ours) -> Self {
                Self { $($field: convert_field!(encode $($how)? value.$field)),* }
            }
        }

        impl From<$theirs> for $ours {
            fn from(value: $theirs) -> Self {
                Self { $($field: convert_field!(decode $($how)? value.$field)),* }
            }
        }
    };
}

/// One field of [`convert_both_ways!`], in one direction.
macro_rules! convert_field {
    (encode value_rows $field:expr) => {
        $field
            .into_iter()
            .map($crate::transport::grpc::convert::values_to_pb)
            .collect()
    };
    (decode value_rows $field:expr) => {
        $field
            .into_iter()
            .map($crate::transport::grpc::convert::values_from_pb)
            .collect()
    };
    ($direction:ident list $field:expr) => {
        $field.into_iter().map(Into::into).collect()
    };
    ($direction:ident option $field:expr) => {
        $field.map(Into::into)
    };
    ($direction:ident $field:expr) => {
        $field
    };
}

mod admin;
pub(crate) mod atomic;
mod catalog;
mod data;
mod directory;
mod heat;
mod host;
mod schema;

/// The error for a required message field that is absent.
fn missing(field: &str) -> Error {
    Error::invalid_argument("gRPC message", format!("field '{field}' is missing"))
}

impl From<Value> for pb::Value {
    fn from(value: Value) -> Self {
        use pb::value::Kind;
        let kind = match value {
            Value::Null => Kind::Null(pb::Null {}),
            Value::Integer(v) => Kind::Integer(v),
            Value::Real(v) => Kind::Real(v),
            Value::Text(v) => Kind::Text(v),
            Value::Blob(v) => Kind::Blob(v),
        };
        Self { kind: Some(kind) }
    }
}

impl From<pb::Value> for Value {
    fn from(value: pb::Value) -> Self {
        use pb::value::Kind;
        match value.kind {
            None | Some(Kind::Null(_)) => Self::Null,
            Some(Kind::Integer(v)) => Self::Integer(v),
            Some(Kind::Real(v)) => Self::Real(v),
            Some(Kind::Text(v)) => Self::Text(v),
            Some(Kind::Blob(v)) => Self::Blob(v),
        }
    }
}

fn values_to_pb(values: Vec<Value>) -> pb::ValueList {
    pb::ValueList {
        values: values.into_iter().map(Into::into).collect(),
    }
}

fn values_from_pb(values: pb::ValueList) -> Vec<Value> {
    values.values.into_iter().map(Into::into).collect()
}

/// A row (column name → value) as a protobuf map.
pub(crate) fn row_to_pb(row: Row) -> HashMap<String, pb::Value> {
    row.into_iter().map(|(k, v)| (k, v.into())).collect()
}

/// A protobuf map as a row (column name → value).
pub(crate) fn row_from_pb(row: HashMap<String, pb::Value>) -> Row {
    row.into_iter().map(|(k, v)| (k, v.into())).collect()
}

impl From<Params> for pb::Params {
    fn from(params: Params) -> Self {
        use pb::params::Kind;
        let kind = match params {
            Params::Positional(values) if values.is_empty() => None,
            Params::Positional(values) => Some(Kind::Positional(values_to_pb(values))),
            Params::Named(values) => Some(Kind::Named(pb::ValueMap {
                values: row_to_pb(values),
            })),
        };
        Self { kind }
    }
}

/// Decodes parameters; absent means none. Named parameters lose a leading `:`, `@` or `$`, as
/// in the JSON form; a blank name or a name given twice is refused.
#[cfg_attr(not(feature = "server"), allow(dead_code))]
pub(crate) fn params_from_pb(params: Option<pb::Params>) -> Result<Params> {
    use pb::params::Kind;
    match params.and_then(|p| p.kind) {
        None => Ok(Params::none()),
        Some(Kind::Positional(values)) => Ok(Params::Positional(values_from_pb(values))),
        Some(Kind::Named(named)) => {
            let mut values = BTreeMap::new();
            for (name, value) in named.values {
                let bare = name.trim_start_matches([':', '@', '$']);
                if bare.is_empty() {
                    return Err(Error::invalid_argument("parameters", "a named parameter needs a name"));
                }
                if values.insert(bare.to_owned(), Value::from(value)).is_some() {
                    return Err(Error::invalid_argument(
                        "parameters",
                        format!("parameter '{bare}' is given twice (with different sigils)"),
                    ));
                }
            }
            Ok(Params::Named(values))
        }
    }
}

/// Decodes a required value (a primary key): absent is an error naming `name`.
#[cfg_attr(not(feature = "server"), allow(dead_code))]
pub(crate) fn required_value(value: Option<pb::Value>, name: &'static str) -> Result<Value> {
    value
        .map(Value::from)
        .ok_or_else(|| Error::invalid_argument(name, "is required"))
}

/// Parses a document sent as JSON text.
pub(crate) fn document_from_json(json: &str) -> Result<serde_json::Value> {
    serde_json::from_str(json).map_err(|source| Error::Json {
        what: "document",
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Real(x), Value::Real(y)) => x.to_bits() == y.to_bits(),
            _ => a == b,
        }
    }

    #[test]
    fn values_round_trip_bit_for_bit_through_protobuf_bytes() {
        use prost::Message;
        let values = vec![
            Value::Null,
            Value::Integer(i64::MIN),
            Value::Integer(i64::MAX),
            Value::Real(-0.0),
            Value::Real(f64::from_bits(1)),
            Value::Real(f64::NAN),
            Value::Real(f64::NEG_INFINITY),
            Value::Text("a\0b".into()),
            Value::Blob(vec![0, 255]),
        ];
        let bytes = values_to_pb(values.clone()).encode_to_vec();
        let back = values_from_pb(pb::ValueList::decode(bytes.as_slice()).expect("decodes"));
        assert_eq!(back.len(), values.len());
        for (a, b) in values.iter().zip(&back) {
            assert!(same(a, b), "{a:?} came back as {b:?}");
        }
    }

    #[test]
    fn named_parameters_lose_their_sigil_and_refuse_duplicates() {
        let named = |pairs: &[(&str, i64)]| {
            Some(pb::Params {
                kind: Some(pb::params::Kind::Named(pb::ValueMap {
                    values: pairs
                        .iter()
                        .map(|(k, v)| ((*k).to_owned(), Value::Integer(*v).into()))
                        .collect(),
                })),
            })
        };
        assert_eq!(
            params_from_pb(named(&[(":a", 1), ("b", 2)])).expect("valid"),
            Params::named([("a", 1), ("b", 2)])
        );
        let err = params_from_pb(named(&[(":a", 1), ("@a", 2)])).expect_err("duplicate");
        assert_eq!(err.kind(), crate::ErrorKind::InvalidInput);
        assert!(params_from_pb(named(&[("$", 1)])).is_err());
        assert_eq!(params_from_pb(None).expect("none"), Params::none());
    }
}
