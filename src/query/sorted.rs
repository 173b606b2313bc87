//! The merge of a plain query's rows without SQLite: every shard returns its rows sorted by the
//! query's `ORDER BY`, so a k-way merge of them, cut at `OFFSET` and `LIMIT`, is the answer.
//!
//! Values compare as SQLite compares them in `ORDER BY`: `NULL` first (unless `NULLS LAST` or
//! `DESC` says otherwise), then numbers (an integer and a real by their exact values), then text
//! by the column's collation (`BINARY`, `NOCASE` or `RTRIM`), then blobs byte by byte. Before
//! merging, every shard's rows are checked to be in that order; rows in another order (a shard
//! whose column has another collation than the probed one) are handed back, so the caller can
//! let SQLite merge them instead.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::partial::Collation;
use crate::data::Value;

/// One `ORDER BY` term over a partial column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SortTerm {
    /// The partial column compared.
    pub(super) column: usize,
    pub(super) descending: bool,
    /// Where `NULL`s go: SQLite puts them first when ascending, last when descending.
    pub(super) nulls_first: bool,
    pub(super) collation: Collation,
}

/// A merge of sorted partial rows.
#[derive(Debug, Clone)]
pub struct RowMerge {
    /// The partial columns that are result columns (the sort keys after them are dropped).
    pub(super) outputs: usize,
    pub(super) terms: Vec<SortTerm>,
    pub(super) offset: usize,
    /// Rows kept after the offset; `None` keeps every row.
    pub(super) limit: Option<usize>,
}

impl RowMerge {
    /// How many of each partial row's values are result columns.
    pub fn outputs(&self) -> usize {
        self.outputs
    }

    /// Merges each shard's rows (in the order the shard gave them) into the answer's rows, or
    /// hands them back untouched when a shard's rows are not in the order this merge compares
    /// by, or not as wide as they should be.
    pub fn run(&self, shards: Vec<Vec<Vec<Value>>>) -> Result<Vec<Vec<Value>>, Vec<Vec<Vec<Value>>>> {
        let width = self
            .terms
            .iter()
            .map(|t| t.column + 1)
            .max()
            .unwrap_or(0)
            .max(self.outputs);
        let fits = shards.iter().all(|rows| {
            rows.iter().all(|row| row.len() >= width)
                && rows
                    .windows(2)
                    .all(|pair| self.compare(&pair[0], &pair[1]) != Ordering::Greater)
        });
        if !fits {
            return Err(shards);
        }
        let wanted = self.limit.map_or(usize::MAX, |limit| limit.saturating_add(self.offset));
        let total = shards.iter().map(Vec::len).sum::<usize>().min(wanted);
        let mut rows = Vec::with_capacity(total.saturating_sub(self.offset));
        let mut taken = 0usize;
        let mut keep = |mut row: Vec<Value>| {
            taken += 1;
            if taken > self.offset {
                row.truncate(self.outputs);
                rows.push(row);
            }
        };
        if self.terms.is_empty() {
            // No order: the shards' rows one shard after another, as the merge table holds them.
            for row in shards.into_iter().flatten().take(wanted) {
                keep(row);
            }
        } else {
            let mut streams: Vec<std::vec::IntoIter<Vec<Value>>> = shards.into_iter().map(Vec::into_iter).collect();
            let mut heads = BinaryHeap::with_capacity(streams.len());
            for (shard, stream) in streams.iter_mut().enumerate() {
                if let Some(row) = stream.next() {
                    heads.push(Head {
                        merge: self,
                        row,
                        shard,
                    });
                }
            }
            for _ in 0..wanted {
                let Some(Head { row, shard, .. }) = heads.pop() else {
                    break;
                };
                if let Some(next) = streams[shard].next() {
                    heads.push(Head {
                        merge: self,
                        row: next,
                        shard,
                    });
                }
                keep(row);
            }
        }
        Ok(rows)
    }

    /// How `a` and `b` compare under the `ORDER BY`.
    fn compare(&self, a: &[Value], b: &[Value]) -> Ordering {
        for term in &self.terms {
            let (x, y) = (&a[term.column], &b[term.column]);
            let order = match (x.is_null(), y.is_null()) {
                (true, true) => Ordering::Equal,
                (true, false) if term.nulls_first => Ordering::Less,
                (true, false) => Ordering::Greater,
                (false, true) if term.nulls_first => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) if term.descending => compare_values(y, x, term.collation),
                (false, false) => compare_values(x, y, term.collation),
            };
            if order != Ordering::Equal {
                return order;
            }
        }
        Ordering::Equal
    }
}

/// The next row of one shard, ordered for a max-heap so that the smallest row comes out first,
/// and of equal rows the one of the earlier shard.
struct Head<'m> {
    merge: &'m RowMerge,
    row: Vec<Value>,
    shard: usize,
}

impl Ord for Head<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.merge
            .compare(&other.row, &self.row)
            .then_with(|| other.shard.cmp(&self.shard))
    }
}

impl PartialOrd for Head<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Head<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Head<'_> {}

/// How SQLite orders two values that are not `NULL`: numbers, then text, then blobs.
pub(super) fn compare_values(a: &Value, b: &Value, collation: Collation) -> Ordering {
    fn class(value: &Value) -> u8 {
        match value {
            Value::Null => 0,
            Value::Integer(_) | Value::Real(_) => 1,
            Value::Text(_) => 2,
            Value::Blob(_) => 3,
        }
    }
    match (a, b) {
        (Value::Integer(x), Value::Integer(y)) => x.cmp(y),
        (Value::Real(x), Value::Real(y)) => x.partial_cmp(y).unwrap_or(Ordering::Equal),
        (Value::Integer(x), Value::Real(y)) => integer_against_real(*x, *y),
        (Value::Real(x), Value::Integer(y)) => integer_against_real(*y, *x).reverse(),
        (Value::Text(x), Value::Text(y)) => compare_text(x.as_bytes(), y.as_bytes(), collation),
        (Value::Blob(x), Value::Blob(y)) => x.cmp(y),
        _ => class(a).cmp(&class(b)),
    }
}

/// An integer against a real by their exact values, as SQLite's `sqlite3IntFloatCompare`.
fn integer_against_real(integer: i64, real: f64) -> Ordering {
    // 2^63 as a float: every real at or past it is beyond every integer.
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if real.is_nan() {
        return Ordering::Greater;
    }
    if real < -TWO_63 {
        return Ordering::Greater;
    }
    if real >= TWO_63 {
        return Ordering::Less;
    }
    // In range, so the conversion truncates toward zero without saturating.
    #[allow(clippy::cast_possible_truncation)]
    let truncated = real as i64;
    match integer.cmp(&truncated) {
        Ordering::Equal => {
            #[allow(clippy::cast_precision_loss)]
            let widened = integer as f64;
            widened.partial_cmp(&real).unwrap_or(Ordering::Equal)
        }
        other => other,
    }
}

/// Text under one of SQLite's built-in collations.
fn compare_text(a: &[u8], b: &[u8], collation: Collation) -> Ordering {
    match collation {
        Collation::Binary => a.cmp(b),
        // ASCII letters folded to lower case, every other byte as it is.
        Collation::NoCase => a
            .iter()
            .map(u8::to_ascii_lowercase)
            .cmp(b.iter().map(u8::to_ascii_lowercase)),
        Collation::RTrim => trim_spaces(a).cmp(trim_spaces(b)),
    }
}

fn trim_spaces(text: &[u8]) -> &[u8] {
    let end = text.iter().rposition(|&byte| byte != b' ').map_or(0, |last| last + 1);
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merge(terms: Vec<SortTerm>, offset: usize, limit: Option<usize>) -> RowMerge {
        RowMerge {
            outputs: 1,
            terms,
            offset,
            limit,
        }
    }

    fn term(descending: bool, collation: Collation) -> SortTerm {
        SortTerm {
            column: 0,
            descending,
            nulls_first: !descending,
            collation,
        }
    }

    fn rows(values: &[Value]) -> Vec<Vec<Value>> {
        values.iter().map(|v| vec![v.clone()]).collect()
    }

    #[test]
    fn values_of_every_kind_order_as_sqlite_orders_them() {
        let ordered = [
            Value::Null,
            Value::Integer(i64::MIN),
            Value::Real(-1.5),
            Value::Integer(1),
            Value::Real(1.5),
            Value::Integer(i64::MAX - 1),
            Value::Real(9.3e18),
            Value::Text("B".into()),
            Value::Text("a".into()),
            Value::Blob(vec![]),
            Value::Blob(vec![0]),
        ];
        for pair in ordered.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            let order = merge(vec![term(false, Collation::Binary)], 0, None)
                .compare(std::slice::from_ref(a), std::slice::from_ref(b));
            assert_eq!(order, Ordering::Less, "{a:?} < {b:?}");
        }
        // 2^53 + 1 is not a float: as an integer it is above the float 2^53.
        assert_eq!(
            integer_against_real((1 << 53) + 1, 9_007_199_254_740_992.0),
            Ordering::Greater
        );
        assert_eq!(integer_against_real(3, 3.0), Ordering::Equal);
        assert_eq!(compare_text(b"abc", b"ABC", Collation::NoCase), Ordering::Equal);
        assert_eq!(compare_text(b"ab", b"ab  ", Collation::RTrim), Ordering::Equal);
        assert_eq!(compare_text(b"ab", b"ab  ", Collation::Binary), Ordering::Less);
    }

    #[test]
    fn shards_merge_in_order_cut_at_offset_and_limit() {
        let one = rows(&[Value::Integer(9), Value::Integer(5), Value::Integer(1), Value::Null]);
        let two = rows(&[Value::Real(7.5), Value::Integer(5), Value::Null]);
        let merged = merge(vec![term(true, Collation::Binary)], 1, Some(3))
            .run(vec![one, two])
            .expect("sorted");
        assert_eq!(merged, rows(&[Value::Real(7.5), Value::Integer(5), Value::Integer(5)]));
    }

    #[test]
    fn rows_out_of_order_are_handed_back() {
        // In order without case, not byte by byte ('B' is before 'a').
        let shard = rows(&[Value::Text("a".into()), Value::Text("B".into())]);
        let nocase = merge(vec![term(false, Collation::NoCase)], 0, None);
        assert_eq!(nocase.run(vec![shard.clone()]).expect("in order"), shard);
        let binary = merge(vec![term(false, Collation::Binary)], 0, None);
        assert_eq!(binary.run(vec![shard.clone()]).expect_err("out of order"), vec![shard]);
    }
}
