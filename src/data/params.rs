//! [`Params`]: values bound to SQL placeholders.

use std::collections::BTreeMap;

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use super::Value;

/// Parameters bound to SQL placeholders: an array for positional placeholders (`?`, `?NNN`)
/// or an object for named ones (`:name`, `@name`, `$name`, keyed without the sigil).
///
/// Values are always bound, never spliced into SQL text.
///
/// ```
/// use shardlite::client::{Params, Value};
///
/// let positional: Params = serde_json::from_str(r#"[1, "two", null]"#)?;
/// assert_eq!(positional, Params::Positional(vec![Value::Integer(1), "two".into(), Value::Null]));
/// let named: Params = serde_json::from_str(r#"{"month": "2026-06"}"#)?;
/// assert!(matches!(named, Params::Named(_)));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Params {
    /// Values for `?` / `?NNN` placeholders, first value is `?1`.
    Positional(Vec<Value>),
    /// Values for `:name` / `@name` / `$name` placeholders, keyed by name without the sigil.
    Named(BTreeMap<String, Value>),
}

impl Default for Params {
    fn default() -> Self {
        Self::Positional(Vec::new())
    }
}

impl Params {
    /// No parameters.
    pub fn none() -> Self {
        Self::default()
    }

    /// Whether there are no parameters.
    pub fn is_empty(&self) -> bool {
        match self {
            Self::Positional(v) => v.is_empty(),
            Self::Named(m) => m.is_empty(),
        }
    }

    /// Named parameters from `(name, value)` pairs.
    pub fn named<K: Into<String>, V: Into<Value>>(pairs: impl IntoIterator<Item = (K, V)>) -> Self {
        Self::Named(pairs.into_iter().map(|(k, v)| (k.into(), v.into())).collect())
    }
}

impl<V: Into<Value>> From<Vec<V>> for Params {
    fn from(values: Vec<V>) -> Self {
        Self::Positional(values.into_iter().map(Into::into).collect())
    }
}

impl<'de> Deserialize<'de> for Params {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ParamsVisitor;
        impl<'de> Visitor<'de> for ParamsVisitor {
            type Value = Params;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an array of positional parameters or an object of named parameters")
            }
            fn visit_unit<E>(self) -> Result<Params, E> {
                Ok(Params::default())
            }
            fn visit_none<E>(self) -> Result<Params, E> {
                Ok(Params::default())
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Params, A::Error> {
                let mut values = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(value) = seq.next_element()? {
                    values.push(value);
                }
                Ok(Params::Positional(values))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Params, A::Error> {
                let mut values = BTreeMap::new();
                while let Some((name, value)) = map.next_entry::<String, Value>()? {
                    let bare = name.trim_start_matches([':', '@', '$']).to_owned();
                    if bare.is_empty() {
                        return Err(de::Error::custom("a named parameter needs a name"));
                    }
                    if values.insert(bare, value).is_some() {
                        return Err(de::Error::custom(format!("parameter '{name}' is given twice")));
                    }
                }
                Ok(Params::Named(values))
            }
        }
        deserializer.deserialize_any(ParamsVisitor)
    }
}
