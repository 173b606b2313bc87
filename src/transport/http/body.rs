//! The JSON bodies the REST client sends and reads, and how a primary key is written in a path.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;
use serde_json::json;

use crate::data::{Params, Value};

/// The answer to a row operation.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RowsAffected {
    pub(super) rows_affected: u64,
}

/// The answer to a count.
#[derive(Deserialize)]
pub(super) struct Count {
    pub(super) count: u64,
}

/// The answer to a document read.
#[derive(Deserialize)]
pub(super) struct DocumentBody {
    pub(super) document: serde_json::Value,
}

/// A statement and its parameters; parameters are left out when there are none.
pub(super) fn sql_body(sql: &str, params: Params) -> serde_json::Value {
    if params.is_empty() {
        json!({ "sql": sql })
    } else {
        json!({ "sql": sql, "parameters": params })
    }
}

/// The path segment and `pkType` of a primary-key value.
pub(super) fn key_segment(key: &Value) -> Option<(String, &'static str)> {
    match key {
        Value::Null => None,
        Value::Integer(v) => Some((v.to_string(), "integer")),
        Value::Real(v) => Some((v.to_string(), "real")),
        Value::Text(v) => Some((v.clone(), "text")),
        Value::Blob(v) => Some((URL_SAFE_NO_PAD.encode(v), "blob")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_become_a_path_segment_and_a_type() {
        assert_eq!(key_segment(&Value::Null), None);
        assert_eq!(key_segment(&Value::Integer(-7)), Some(("-7".to_owned(), "integer")));
        assert_eq!(
            key_segment(&Value::Text("a/b".into())),
            Some(("a/b".to_owned(), "text"))
        );
        assert_eq!(
            key_segment(&Value::Blob(vec![0xfb, 0xff])),
            Some(("-_8".to_owned(), "blob"))
        );
    }

    #[test]
    fn sql_bodies_leave_out_empty_parameters() {
        assert_eq!(sql_body("SELECT 1", Params::none()), json!({ "sql": "SELECT 1" }));
        assert_eq!(
            sql_body("SELECT ?1", Params::from(vec![1])),
            json!({ "sql": "SELECT ?1", "parameters": [1] })
        );
    }
}
