//! [`ShardliteArguments`]: values bound to a statement's placeholders.

use sqlx_core::arguments::Arguments;
use sqlx_core::encode::{Encode, IsNull};
use sqlx_core::error::BoxDynError;
use sqlx_core::types::Type;

use super::Shardlite;
use crate::client::{Params, Value};

/// Values for the positional placeholders of one statement (`?` and `?NNN`; the first value is
/// `?1`). They are bound by the engine, never spliced into the SQL text.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ShardliteArguments {
    values: ShardliteArgumentBuffer,
}

impl ShardliteArguments {
    /// The values added so far, in placeholder order.
    pub fn values(&self) -> &[Value] {
        &self.values.0
    }

    /// The values as parameters for `sql`: positional for `?` and `?NNN`; by number when the SQL
    /// writes its placeholders `$1`, `$2`, … (which SQLite reads as names, and sqlx's SQLite driver
    /// accepts too).
    pub(crate) fn into_params_for(self, sql: &str) -> Params {
        if uses_dollar_numbers(sql) {
            Params::Named(
                self.values
                    .0
                    .into_iter()
                    .enumerate()
                    .map(|(index, value)| ((index + 1).to_string(), value))
                    .collect(),
            )
        } else {
            Params::Positional(self.values.0)
        }
    }
}

/// Whether `sql` has a `$N` placeholder outside string literals, quoted identifiers and comments,
/// read as SQLite's tokenizer reads it (`price$1` is an identifier, not a placeholder).
fn uses_dollar_numbers(sql: &str) -> bool {
    crate::sql::placeholders(sql).any(|placeholder| {
        placeholder
            .strip_prefix('$')
            .is_some_and(|name| name.starts_with(|c: char| c.is_ascii_digit()))
    })
}

/// Where an [`Encode`] implementation writes its value: exactly one [`push`](Self::push) per
/// encoded value, or nothing when it reports [`IsNull::Yes`] (the arguments then record the NULL).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ShardliteArgumentBuffer(Vec<Value>);

impl ShardliteArgumentBuffer {
    /// Writes one value.
    pub fn push(&mut self, value: Value) {
        self.0.push(value);
    }

    /// The values written, in order.
    #[cfg(all(test, any(feature = "time", feature = "chrono")))]
    pub(crate) fn into_values(self) -> Vec<Value> {
        self.0
    }
}

impl Arguments for ShardliteArguments {
    type Database = Shardlite;

    fn reserve(&mut self, additional: usize, _size: usize) {
        self.values.0.reserve(additional);
    }

    fn add<'t, T>(&mut self, value: T) -> Result<(), BoxDynError>
    where
        T: Encode<'t, Shardlite> + Type<Shardlite>,
    {
        let before = self.values.0.len();
        let outcome = value.encode(&mut self.values);
        let written = self.values.0.len() - before;
        match (outcome, written) {
            // `Option::None` encodes as `IsNull::Yes` without writing: record the NULL here.
            (Ok(IsNull::Yes), 0) => self.values.0.push(Value::Null),
            (Ok(IsNull::Yes | IsNull::No), 1) => {}
            (Ok(_), written) => {
                self.values.0.truncate(before);
                return Err(format!("an encoder must write exactly one value, but it wrote {written}").into());
            }
            (Err(err), _) => {
                self.values.0.truncate(before);
                return Err(err);
            }
        }
        Ok(())
    }

    fn len(&self) -> usize {
        self.values.0.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_is_recorded_as_null_and_values_keep_their_order() {
        let mut args = ShardliteArguments::default();
        args.add(7_i64).unwrap();
        args.add(None::<String>).unwrap();
        args.add("text").unwrap();
        assert_eq!(args.len(), 3);
        assert_eq!(
            args.clone().into_params_for("SELECT ?, ?, ?"),
            Params::Positional(vec![Value::Integer(7), Value::Null, Value::Text("text".into())])
        );
        assert_eq!(
            args.into_params_for("SELECT $1, $3, $2"),
            Params::named([
                ("1", Value::Integer(7)),
                ("2", Value::Null),
                ("3", Value::Text("text".into()))
            ])
        );
    }

    #[test]
    fn dollar_numbers_are_found_only_where_they_are_placeholders() {
        assert!(uses_dollar_numbers("SELECT * FROM t WHERE a = $1"));
        assert!(uses_dollar_numbers("SELECT '$1''s', ($2)"));
        assert!(!uses_dollar_numbers(
            "SELECT ?1, '$1', \"$2\", `$3`, [$4] -- $5\n /* $6 */"
        ));
        assert!(!uses_dollar_numbers("SELECT price$1 FROM t WHERE a = ?"));
        assert!(!uses_dollar_numbers("SELECT $name, 'unterminated $1"));
    }
}
