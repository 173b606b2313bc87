//! Unit tests of the paged copy: pages, cursors, checksums and resume between two files.

use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::data::Params;
use crate::engine::{Database, EngineConfig};

async fn shard(dir: &std::path::Path, name: &str) -> Database {
    let db = Database::open(dir.join(name), name, EngineConfig::default())
        .await
        .expect("open");
    db.execute(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, v BLOB)",
        Params::none(),
    )
    .await
    .expect("schema");
    db
}

fn query(schema: Option<&str>) -> [String; 2] {
    let from = schema.map_or_else(|| "t".to_owned(), |s| format!("{s}.t"));
    [false, true].map(|after| {
        format!(
            "SELECT id, k, v FROM {from} WHERE k = :k{} ORDER BY id LIMIT :limit",
            if after { " AND id > :after" } else { "" }
        )
    })
}

fn record(migration_id: &str) -> CopyRecord {
    CopyRecord {
        migration_id: migration_id.to_owned(),
        item: "table 't'".to_owned(),
    }
}

/// The copy of `k = 'moving'` rows of `t`, `page_size` rows a page, recorded under `m-1`.
fn moving_copy(page_size: usize) -> PagedCopy {
    PagedCopy {
        query: PagedQuery {
            select: query(None),
            params: vec![("k", Value::from("moving"))],
            key_index: 0,
            page_size,
            label: "table 't'".to_owned(),
        },
        insert: query(Some(COPY_SOURCE_SCHEMA))
            .map(|select| format!("INSERT INTO main.t (id, k, v) {select} ON CONFLICT (id) DO NOTHING")),
        record: record("m-1"),
    }
}

/// Each page's transaction records the cursor after it on the destination, so the record
/// is exactly as far as the rows: a page whose insert fails leaves neither its rows nor its
/// cursor, and the record still holds the cursor of the last page that landed. Records are
/// kept per migration, and cleared per migration.
#[tokio::test]
async fn the_cursor_is_recorded_with_its_page_and_only_with_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let source = shard(dir.path(), "source.db").await;
    let destination = shard(dir.path(), "destination.db").await;
    source
        .execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10)
             INSERT INTO t SELECT i, 'moving', randomblob(i) FROM n",
            Params::none(),
        )
        .await
        .expect("fill");
    // Row 5 (the third page's first) cannot be written.
    destination
        .execute(
            "CREATE TRIGGER refuse_five BEFORE INSERT ON t WHEN new.id = 5 BEGIN SELECT RAISE(ABORT, 'no five'); END",
            Params::none(),
        )
        .await
        .expect("trigger");
    let copy = Arc::new(moving_copy(2));
    assert_eq!(
        destination
            .moves()
            .copy_cursor(&copy.record)
            .await
            .expect("no table yet"),
        None
    );
    let (tx, rx) = std::sync::mpsc::channel();
    let failed = destination
        .moves()
        .copy_pages(
            &source,
            Arc::clone(&copy),
            PageCursor::start(),
            Duration::from_secs(5),
            move |page| {
                let _ = tx.send(page.clone());
            },
        )
        .await
        .expect_err("the third page fails");
    assert!(failed.to_string().contains("no five"), "{failed}");
    let landed: Vec<PageCursor> = rx.try_iter().collect();
    assert_eq!(landed.len(), 2, "{landed:?}");
    let recorded = destination
        .moves()
        .copy_cursor(&copy.record)
        .await
        .expect("read the record")
        .expect("a record");
    assert_eq!(recorded, landed[1]);
    assert_eq!(recorded.after, Some(Value::Integer(4)));
    assert_eq!((recorded.rows, recorded.pages, recorded.finished), (4, 2, false));
    let rows = destination
        .execute("SELECT id FROM t ORDER BY id", Params::none())
        .await
        .expect("rows");
    assert_eq!(rows.rows, (1..=4).map(|i| vec![Value::Integer(i)]).collect::<Vec<_>>());
    assert!(
        destination
            .write(|conn| Ok(conn.is_autocommit()))
            .await
            .expect("writer")
    );

    // Another migration's copy has a record of its own; the first one's is still there.
    destination
        .execute("DROP TRIGGER refuse_five", Params::none())
        .await
        .expect("drop trigger");
    let other = Arc::new(PagedCopy {
        record: record("m-2"),
        ..moving_copy(4)
    });
    let done = destination
        .moves()
        .copy_pages(
            &source,
            Arc::clone(&other),
            PageCursor::start(),
            Duration::from_secs(5),
            |_| {},
        )
        .await
        .expect("copy");
    assert!(done.finished);
    let finished = destination
        .moves()
        .copy_cursor(&other.record)
        .await
        .expect("read")
        .expect("a record");
    assert_eq!((finished.rows, finished.pages, finished.finished), (10, 3, true));
    assert_eq!(finished.checksum, done.checksum);
    assert_eq!(
        destination.moves().copy_cursor(&copy.record).await.expect("read"),
        Some(recorded)
    );

    destination.moves().clear_copy_cursors("m-1").await.expect("clear");
    assert_eq!(destination.moves().copy_cursor(&copy.record).await.expect("read"), None);
    assert!(
        destination
            .moves()
            .copy_cursor(&other.record)
            .await
            .expect("read")
            .is_some()
    );
    // Internal: client SQL's table list does not show it.
    let tables = destination.tables().list_tables().await.expect("tables");
    assert_eq!(tables, vec!["t".to_owned()]);
}

/// Pages land on the destination with the upsert's rule, the checksums of both sides agree
/// page for page, and the source is detached again: client SQL neither sees it nor may
/// attach anything.
#[tokio::test]
async fn pages_are_copied_checksummed_and_the_source_detached() {
    let dir = tempfile::tempdir().expect("temp dir");
    let source = shard(dir.path(), "source.db").await;
    let destination = shard(dir.path(), "destination.db").await;
    source
        .execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 9)
             INSERT INTO t SELECT i, CASE WHEN i % 3 = 0 THEN 'other' ELSE 'moving' END, randomblob(i) FROM n",
            Params::none(),
        )
        .await
        .expect("fill");
    let paged = PagedQuery {
        select: query(None),
        params: vec![("k", Value::from("moving"))],
        key_index: 0,
        page_size: 2,
        label: "table 't'".to_owned(),
    };
    let insert = query(Some(COPY_SOURCE_SCHEMA)).map(|select| {
        format!(
            "INSERT INTO main.t (id, k, v) {select} ON CONFLICT (id) DO UPDATE SET k = excluded.k, v = excluded.v \
             WHERE t.k IS excluded.k"
        )
    });
    let copy = Arc::new(PagedCopy {
        query: paged.clone(),
        insert,
        record: record("m-1"),
    });
    let mut cursor = PageCursor::start();
    let mut seen = Vec::new();
    while !cursor.finished {
        let (tx, rx) = std::sync::mpsc::channel();
        cursor = destination
            .moves()
            .copy_pages(&source, Arc::clone(&copy), cursor, Duration::ZERO, move |page| {
                let _ = tx.send(page.rows);
            })
            .await
            .expect("copy");
        seen.extend(rx.try_iter());
    }
    assert_eq!((cursor.rows, cursor.pages), (6, 3));
    assert_eq!(seen.last(), Some(&6));
    let checksum = |db: Database| {
        let paged = Arc::new(paged.clone());
        async move {
            let mut cursor = PageCursor::start();
            while !cursor.finished {
                cursor = db
                    .moves()
                    .checksum_pages(Arc::clone(&paged), cursor, Duration::ZERO)
                    .await
                    .expect("checksum");
            }
            cursor
        }
    };
    let on_source = checksum(source.clone()).await;
    let on_destination = checksum(destination.clone()).await;
    assert_eq!(on_source.checksum, cursor.checksum);
    assert_eq!(on_destination, on_source);

    let autocheckpoint = destination
        .write(|conn| {
            guard::trusted(|| conn.query_row("PRAGMA wal_autocheckpoint", [], |row| row.get::<_, i64>(0)))
                .map_err(sql_error)
        })
        .await
        .expect("autocheckpoint");
    // The copy's own setting is gone: the writer checkpoints through its hook again, under
    // which the setting reads 0.
    assert_eq!(autocheckpoint, 0, "the writer's checkpoint hook is put back");
    let attached = destination
        .execute("SELECT name FROM pragma_database_list", Params::none())
        .await
        .expect("database list");
    assert_eq!(attached.rows, vec![vec![Value::from("main")]]);
    let refused = destination
        .execute(
            "ATTACH DATABASE ?1 AS other",
            Params::from(vec![dir.path().join("source.db").to_string_lossy().into_owned()]),
        )
        .await
        .expect_err("client SQL may not attach");
    assert!(matches!(refused, Error::ForbiddenStatement { .. }), "{refused:?}");
}

/// A destination row with a moving key but another route value is left alone, so the
/// destination's checksum differs and verification can report it.
#[tokio::test]
async fn a_colliding_row_is_not_overwritten() {
    let dir = tempfile::tempdir().expect("temp dir");
    let source = shard(dir.path(), "source.db").await;
    let destination = shard(dir.path(), "destination.db").await;
    source
        .execute(
            "INSERT INTO t VALUES (1, 'moving', x'01'), (2, 'moving', x'02')",
            Params::none(),
        )
        .await
        .expect("fill");
    destination
        .execute("INSERT INTO t VALUES (2, 'someone else', x'ff')", Params::none())
        .await
        .expect("collision");
    let copy = Arc::new(PagedCopy {
        query: PagedQuery {
            select: query(None),
            params: vec![("k", Value::from("moving"))],
            key_index: 0,
            page_size: 10,
            label: "table 't'".to_owned(),
        },
        insert: query(Some(COPY_SOURCE_SCHEMA)).map(|select| {
            format!("INSERT INTO main.t (id, k, v) {select} ON CONFLICT (id) DO UPDATE SET k = excluded.k WHERE t.k IS excluded.k")
        }),
        record: record("m-1"),
    });
    let cursor = destination
        .moves()
        .copy_pages(&source, copy, PageCursor::start(), Duration::from_secs(5), |_| {})
        .await
        .expect("copy");
    assert!(cursor.finished);
    assert_eq!(cursor.rows, 2);
    let rows = destination
        .execute("SELECT id, k FROM t ORDER BY id", Params::none())
        .await
        .expect("rows");
    assert_eq!(
        rows.rows,
        vec![
            vec![Value::Integer(1), Value::from("moving")],
            vec![Value::Integer(2), Value::from("someone else")]
        ]
    );
}
