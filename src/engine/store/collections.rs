//! JSON collections, stored as key/document rows in an internal table; [`Collections`], handed
//! out by [`Database::collections`].

use rusqlite::{Connection, OptionalExtension, params};

use super::{count, delete_where, page_bounds, read_names, require_name, total_pages, write_internal};
use crate::data::{Document, DocumentPage};
use crate::engine::database::Database;
use crate::engine::sqlite_error::sql_error;
use crate::error::{Error, Result};
use crate::sql::internal_table;

fn get_document(conn: &Connection, collection: &str, key: &str) -> Result<Option<serde_json::Value>> {
    let text: Option<String> = conn
        .prepare_cached(concat!(
            "SELECT document FROM ",
            internal_table!(collections),
            " WHERE collection = ?1 AND key = ?2"
        ))
        .map_err(sql_error)?
        .query_row([collection, key], |r| r.get(0))
        .optional()
        .map_err(sql_error)?;
    text.map(|t| {
        serde_json::from_str(&t).map_err(|source| Error::Json {
            what: "a stored document",
            source,
        })
    })
    .transpose()
}

/// The JSON collections of one [`Database`]: documents stored by key, in shardlite's internal
/// table of collections. Handed out by [`Database::collections`].
///
/// A collection exists while it holds a document; collection names and document keys must not be
/// blank.
#[derive(Debug, Clone, Copy)]
pub struct Collections<'db> {
    db: &'db Database,
}

impl<'db> Collections<'db> {
    pub(in crate::engine) fn new(db: &'db Database) -> Self {
        Self { db }
    }

    /// Collection names, sorted.
    pub async fn list_collections(self) -> Result<Vec<String>> {
        read_names(
            self.db,
            concat!(
                "SELECT DISTINCT collection FROM ",
                internal_table!(collections),
                " ORDER BY collection"
            ),
        )
        .await
    }

    /// Documents in a collection.
    pub async fn count_documents(self, collection: &str) -> Result<u64> {
        require_name("collection", collection)?;
        let collection = collection.to_owned();
        self.db
            .read(move |conn| {
                count(
                    conn,
                    concat!(
                        "SELECT count(*) FROM ",
                        internal_table!(collections),
                        " WHERE collection = ?1"
                    ),
                    [&collection],
                )
            })
            .await
    }

    /// One page of a collection, in key order.
    pub async fn browse_documents(self, collection: &str, page: u32, page_size: u32) -> Result<DocumentPage> {
        require_name("collection", collection)?;
        let (page, page_size, offset) = page_bounds(page, page_size)?;
        let collection = collection.to_owned();
        self.db
            .read(move |conn| {
                let total_count = count(
                    conn,
                    concat!(
                        "SELECT count(*) FROM ",
                        internal_table!(collections),
                        " WHERE collection = ?1"
                    ),
                    [&collection],
                )?;
                let mut stmt = conn
                    .prepare_cached(concat!(
                        "SELECT key, document FROM ",
                        internal_table!(collections),
                        " WHERE collection = ?1 \
                     ORDER BY key LIMIT ?2 OFFSET ?3"
                    ))
                    .map_err(sql_error)?;
                let raw = stmt
                    .query_map(params![collection, page_size, offset], |r| {
                        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
                    })
                    .map_err(sql_error)?
                    .collect::<rusqlite::Result<Vec<_>>>()
                    .map_err(sql_error)?;
                let documents = raw
                    .into_iter()
                    .map(|(key, text)| {
                        serde_json::from_str(&text)
                            .map(|document| Document { key, document })
                            .map_err(|source| Error::Json {
                                what: "a stored document",
                                source,
                            })
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok(DocumentPage {
                    collection_name: collection,
                    documents,
                    total_count,
                    page,
                    page_size,
                    total_pages: total_pages(total_count, page_size),
                })
            })
            .await
    }

    /// A document by key.
    pub async fn get_document(self, collection: &str, key: &str) -> Result<Option<serde_json::Value>> {
        require_name("collection", collection)?;
        require_name("document key", key)?;
        let (collection, key) = (collection.to_owned(), key.to_owned());
        self.db.read(move |conn| get_document(conn, &collection, &key)).await
    }

    /// Stores (inserts or replaces) a document.
    pub async fn put_document(self, collection: &str, key: &str, document: serde_json::Value) -> Result<()> {
        require_name("collection", collection)?;
        require_name("document key", key)?;
        let (collection, key) = (collection.to_owned(), key.to_owned());
        let text = document.to_string();
        write_internal(self.db, move |conn| {
            conn.prepare_cached(concat!(
                "INSERT INTO ",
                internal_table!(collections),
                " (collection, key, document) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (collection, key) DO UPDATE SET document = excluded.document"
            ))
            .map_err(sql_error)?
            .execute([&collection, &key, &text])
            .map_err(sql_error)?;
            Ok(())
        })
        .await
    }

    /// Deletes a document; returns whether it existed.
    pub async fn delete_document(self, collection: &str, key: &str) -> Result<bool> {
        require_name("collection", collection)?;
        require_name("document key", key)?;
        delete_where(
            self.db,
            concat!(
                "DELETE FROM ",
                internal_table!(collections),
                " WHERE collection = ?1 AND key = ?2"
            ),
            vec![collection.to_owned(), key.to_owned()],
        )
        .await
    }

    /// Deletes every document of a collection; returns whether it had any.
    pub async fn drop_collection(self, collection: &str) -> Result<bool> {
        require_name("collection", collection)?;
        delete_where(
            self.db,
            concat!("DELETE FROM ", internal_table!(collections), " WHERE collection = ?1"),
            vec![collection.to_owned()],
        )
        .await
    }
}
