//! The model of a merge across shards: the table the shards' partial rows are loaded into and
//! its columns, each declared with the collation its source expression had on the shards. The
//! planner writes the merge statement against it; the engine runs it
//! (`engine::merge::merge_partial_rows`).

/// The name of the table the partial rows are loaded into.
pub const PARTIAL_TABLE: &str = "shardlite_partial";

/// A collating sequence SQLite has built in: the merge declares each partial column with the
/// collation its source expression had on the shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collation {
    /// Byte order (`memcmp`), SQLite's default.
    Binary,
    /// ASCII letters compared without case.
    NoCase,
    /// Trailing spaces ignored.
    RTrim,
}

impl Collation {
    /// The name SQLite knows it by.
    pub fn name(self) -> &'static str {
        match self {
            Self::Binary => "BINARY",
            Self::NoCase => "NOCASE",
            Self::RTrim => "RTRIM",
        }
    }
}

/// One column of the partial rows: its name in the merge query and its collation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartialColumn {
    /// The column's name (quoted when declared).
    pub name: String,
    /// The collation comparisons and sorts on the column use.
    pub collation: Collation,
}
