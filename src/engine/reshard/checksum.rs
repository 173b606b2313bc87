//! The canonical row encoding that migration checksums hash, in one place for both ways rows
//! reach it: as [`Value`]s (rows read through a data client, possibly from a remote daemon) and
//! as SQLite column references (pages checksummed inside the engine, never turned into values).
//! Both feed the same bytes, so a checksum does not depend on how its rows were read.
//!
//! A page link is `SHA-256(previous link ‖ rows)`, each row its value count (`u64`, big-endian)
//! then each value: a type tag, then `i64` or `f64` bits big-endian for numbers, or a `u64`
//! length and the bytes for text and blobs. Text is hashed as values show it: invalid UTF-8 is
//! replaced, as [`value_from_ref`](crate::engine::value::value_from_ref) does.

use rusqlite::types::ValueRef;
use sha2::{Digest, Sha256};

use crate::data::Value;

/// Bytes gathered before they are hashed: one call into the hasher per few rows rather than
/// several per value.
const BUFFER: usize = 8 * 1024;

/// The link of one page in a checksum chain, being computed.
pub(crate) struct PageDigest {
    hasher: Sha256,
    buffer: Vec<u8>,
}

impl PageDigest {
    /// Starts the link that follows `previous`.
    pub(crate) fn new(previous: &[u8; 32]) -> Self {
        let mut buffer = Vec::with_capacity(BUFFER + 256);
        buffer.extend_from_slice(previous);
        Self {
            hasher: Sha256::new(),
            buffer,
        }
    }

    /// Adds one row read as values.
    pub(crate) fn add_row(&mut self, row: &[Value]) {
        self.row_len(row.len());
        for value in row {
            self.add_value(value_ref(value));
        }
    }

    /// Starts a row of `len` values; [`add_value`](Self::add_value) adds each.
    pub(crate) fn row_len(&mut self, len: usize) {
        if self.buffer.len() >= BUFFER {
            self.hasher.update(&self.buffer);
            self.buffer.clear();
        }
        self.buffer
            .extend_from_slice(&u64::try_from(len).unwrap_or(u64::MAX).to_be_bytes());
    }

    /// Adds one value of the current row.
    pub(crate) fn add_value(&mut self, value: ValueRef<'_>) {
        let len = |n: usize| u64::try_from(n).unwrap_or(u64::MAX).to_be_bytes();
        match value {
            ValueRef::Null => self.buffer.push(0),
            ValueRef::Integer(i) => {
                self.buffer.push(1);
                self.buffer.extend_from_slice(&i.to_be_bytes());
            }
            ValueRef::Real(f) => {
                self.buffer.push(2);
                self.buffer.extend_from_slice(&f.to_bits().to_be_bytes());
            }
            ValueRef::Text(bytes) => match std::str::from_utf8(bytes) {
                Ok(text) => self.bytes(3, len(text.len()), text.as_bytes()),
                Err(_) => {
                    let text = String::from_utf8_lossy(bytes);
                    self.bytes(3, len(text.len()), text.as_bytes());
                }
            },
            ValueRef::Blob(bytes) => self.bytes(4, len(bytes.len()), bytes),
        }
    }

    fn bytes(&mut self, tag: u8, len: [u8; 8], bytes: &[u8]) {
        self.buffer.push(tag);
        self.buffer.extend_from_slice(&len);
        if bytes.len() > BUFFER {
            // A large value goes to the hasher directly rather than through the buffer.
            self.hasher.update(&self.buffer);
            self.buffer.clear();
            self.hasher.update(bytes);
        } else {
            self.buffer.extend_from_slice(bytes);
        }
    }

    /// The finished link.
    pub(crate) fn finish(mut self) -> [u8; 32] {
        self.hasher.update(&self.buffer);
        let mut link = [0u8; 32];
        link.copy_from_slice(&self.hasher.finalize());
        link
    }
}

fn value_ref(value: &Value) -> ValueRef<'_> {
    match value {
        Value::Null => ValueRef::Null,
        Value::Integer(i) => ValueRef::Integer(*i),
        Value::Real(f) => ValueRef::Real(*f),
        Value::Text(text) => ValueRef::Text(text.as_bytes()),
        Value::Blob(bytes) => ValueRef::Blob(bytes),
    }
}

#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    use super::*;
    use crate::engine::value::value_from_ref;

    /// Rows hashed straight from SQLite and rows read as values give the same link, for every
    /// storage class and for text that is not valid UTF-8.
    #[test]
    fn column_references_and_values_hash_alike() {
        let conn = Connection::open_in_memory().expect("memory db");
        let sql = "SELECT 1, NULL, 7, -2.5, 'héllo', x'00ff', CAST(x'66ff6f' AS TEXT), ''";
        let mut by_ref = PageDigest::new(&[7; 32]);
        let mut by_value = PageDigest::new(&[7; 32]);
        let mut stmt = conn.prepare(sql).expect("prepare");
        let columns = stmt.column_count();
        let mut rows = stmt.query([]).expect("query");
        while let Some(row) = rows.next().expect("step") {
            by_ref.row_len(columns);
            let mut values = Vec::new();
            for i in 0..columns {
                let value = row.get_ref(i).expect("column");
                by_ref.add_value(value);
                values.push(value_from_ref(value));
            }
            by_value.add_row(&values);
        }
        assert_eq!(by_ref.finish(), by_value.finish());
    }

    #[test]
    fn every_value_and_the_previous_link_count() {
        let link = |previous: [u8; 32], row: &[Value]| {
            let mut digest = PageDigest::new(&previous);
            digest.add_row(row);
            digest.finish()
        };
        let base = link([0; 32], &[Value::Integer(1), Value::from("a")]);
        assert_ne!(base, link([1; 32], &[Value::Integer(1), Value::from("a")]));
        assert_ne!(base, link([0; 32], &[Value::Integer(1), Value::from("b")]));
        assert_ne!(base, link([0; 32], &[Value::Real(1.0), Value::from("a")]));
        assert_ne!(
            link([0; 32], &[Value::from("ab"), Value::from("")]),
            link([0; 32], &[Value::from("a"), Value::from("b")])
        );
    }
}
