//! Saved queries: named SQL stored in an internal table, for a client to fetch and run; [`SavedQueries`],
//! handed out by [`Database::saved_queries`].

use rusqlite::OptionalExtension;

use super::{delete_where, require_name, write_internal};
use crate::data::SavedQuery;
use crate::data::now_utc;
use crate::engine::database::Database;
use crate::engine::sqlite_error::sql_error;
use crate::error::Result;
use crate::sql::internal_table;

/// The saved queries of one [`Database`]: named SQL texts kept in shardlite's internal table
/// of saved queries, with when each was created and last updated. Storing one runs
/// nothing. Handed out by [`Database::saved_queries`].
#[derive(Debug, Clone, Copy)]
pub struct SavedQueries<'db> {
    db: &'db Database,
}

impl<'db> SavedQueries<'db> {
    pub(in crate::engine) fn new(db: &'db Database) -> Self {
        Self { db }
    }

    /// Saved queries, sorted by name.
    pub async fn list_saved_queries(self) -> Result<Vec<SavedQuery>> {
        self.db
            .read(|conn| {
                let mut stmt = conn
                    .prepare_cached(concat!(
                        "SELECT name, sql_text, created_utc, updated_utc FROM ",
                        internal_table!(saved_queries),
                        " ORDER BY name"
                    ))
                    .map_err(sql_error)?;
                stmt.query_map([], saved_query_from_row)
                    .map_err(sql_error)?
                    .collect::<rusqlite::Result<Vec<_>>>()
                    .map_err(sql_error)
            })
            .await
    }

    /// A saved query by name.
    pub async fn get_saved_query(self, name: &str) -> Result<Option<SavedQuery>> {
        require_name("saved query name", name)?;
        let name = name.to_owned();
        self.db
            .read(move |conn| {
                conn.prepare_cached(concat!(
                    "SELECT name, sql_text, created_utc, updated_utc FROM ",
                    internal_table!(saved_queries),
                    " WHERE name = ?1"
                ))
                .map_err(sql_error)?
                .query_row([&name], saved_query_from_row)
                .optional()
                .map_err(sql_error)
            })
            .await
    }

    /// Creates or replaces a saved query.
    pub async fn put_saved_query(self, name: &str, sql_text: &str) -> Result<SavedQuery> {
        require_name("saved query name", name)?;
        require_name("sqlText", sql_text)?;
        let (name, sql_text) = (name.trim().to_owned(), sql_text.to_owned());
        write_internal(self.db, move |conn| {
            let now = now_utc();
            conn.prepare_cached(concat!(
                "INSERT INTO ",
                internal_table!(saved_queries),
                " (name, sql_text, created_utc, updated_utc) \
                 VALUES (?1, ?2, ?3, ?3) \
                 ON CONFLICT (name) DO UPDATE SET sql_text = excluded.sql_text, updated_utc = excluded.updated_utc"
            ))
            .map_err(sql_error)?
            .execute([&name, &sql_text, &now])
            .map_err(sql_error)?;
            conn.query_row(
                concat!(
                    "SELECT name, sql_text, created_utc, updated_utc FROM ",
                    internal_table!(saved_queries),
                    " WHERE name = ?1"
                ),
                [&name],
                saved_query_from_row,
            )
            .map_err(sql_error)
        })
        .await
    }

    /// Deletes a saved query; returns whether it existed.
    pub async fn delete_saved_query(self, name: &str) -> Result<bool> {
        require_name("saved query name", name)?;
        delete_where(
            self.db,
            concat!("DELETE FROM ", internal_table!(saved_queries), " WHERE name = ?1"),
            vec![name.to_owned()],
        )
        .await
    }
}

fn saved_query_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SavedQuery> {
    Ok(SavedQuery {
        name: r.get(0)?,
        sql_text: r.get(1)?,
        created_utc: r.get(2)?,
        updated_utc: r.get(3)?,
    })
}
