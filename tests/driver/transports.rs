//! The sqlx driver, through the `sqlx` facade, on each transport: in-process, over HTTP and over
//! gRPC against a real daemon. Each test runs the same steps on all three.
#![cfg(all(feature = "sqlx", feature = "server", feature = "http", feature = "grpc"))]

use crate::support::daemon::Daemon;
use crate::support::{Fixture, temp_dir};
use shardlite::driver::ShardliteConnection;
use sqlx::{Connection, Row};

const SCHEMA: &str = "CREATE TABLE orders (id INTEGER PRIMARY KEY, order_month TEXT NOT NULL, note TEXT);
CREATE TABLE keyed (code TEXT PRIMARY KEY, n INTEGER) WITHOUT ROWID;";

/// A daemon serving a [`Fixture`] seeded with a schema, and connection strings for each transport.
struct Transports {
    fixture: Fixture,
    daemon: Daemon,
}

impl Transports {
    async fn new(schema: &str) -> Self {
        let fixture = Fixture::orders_with(schema).await;
        let daemon = fixture.start().await;
        Self { fixture, daemon }
    }

    /// `(name, connection string)` bound to `orders_by_month` / `key`, for each transport.
    fn connection_strings(&self, key: &str) -> [(&'static str, String); 3] {
        let route = format!("Shard Keyspace=orders_by_month;Shard Key={key}");
        [
            (
                "in-process",
                format!("Data Source={};{route}", self.fixture.master.display()),
            ),
            (
                "http",
                format!("Endpoint={};Transport=Http;{route}", self.daemon.base_url),
            ),
            (
                "grpc",
                format!("Endpoint={};Transport=Grpc;{route}", self.daemon.base_url),
            ),
        ]
    }
}

#[tokio::test]
async fn last_insert_rowid_is_the_inserted_row_on_every_transport() {
    let fx = Transports::new(SCHEMA).await;
    for (n, (transport, text)) in fx.connection_strings("2026-05").into_iter().enumerate() {
        let base = i64::try_from(n).unwrap() * 100 + 1000;
        let mut conn = ShardliteConnection::connect(&text).await.unwrap();

        let done = sqlx::query("INSERT INTO orders (id, order_month) VALUES (?, '2026-05')")
            .bind(base)
            .execute(&mut conn)
            .await
            .unwrap();
        assert_eq!(done.last_insert_rowid(), base, "{transport}");
        let done = sqlx::query("INSERT INTO orders (order_month) VALUES ('2026-05')")
            .execute(&mut conn)
            .await
            .unwrap();
        assert_eq!(
            done.last_insert_rowid(),
            base + 1,
            "{transport}: the rowid SQLite chose"
        );

        // Inside a transaction, from the transaction's own connection.
        let mut tx = conn.begin().await.unwrap();
        let done = sqlx::query("INSERT INTO orders (id, order_month, note) VALUES (?, '2026-05', 'tx')")
            .bind(base + 50)
            .execute(&mut *tx)
            .await
            .unwrap();
        assert_eq!(done.last_insert_rowid(), base + 50, "{transport}");
        tx.commit().await.unwrap();

        // Statements that insert nothing report no rowid.
        let done = sqlx::query("UPDATE orders SET note = 'seen' WHERE id = ?")
            .bind(base)
            .execute(&mut conn)
            .await
            .unwrap();
        assert_eq!((done.rows_affected(), done.last_insert_rowid()), (1, 0), "{transport}");
        let done = sqlx::query("INSERT INTO keyed VALUES ('a', ?)")
            .bind(base)
            .execute(&mut conn)
            .await
            .unwrap();
        assert_eq!(done.rows_affected(), 1, "{transport}");
        let id: i64 = sqlx::query_scalar("SELECT id FROM orders WHERE id = ?")
            .bind(base + 1)
            .fetch_one(&mut conn)
            .await
            .unwrap();
        assert_eq!(id, base + 1, "{transport}");
        sqlx::query("DELETE FROM keyed").execute(&mut conn).await.unwrap();
        let seen = sqlx::query("SELECT count(*) AS n FROM orders WHERE id >= ? AND id < ?")
            .bind(base)
            .bind(base + 100)
            .fetch_one(&mut conn)
            .await
            .unwrap();
        assert_eq!(seen.get::<i64, _>("n"), 3, "{transport}");
        conn.close().await.unwrap();
    }
}

/// Every type sqlx's SQLite driver maps beyond the basics, bound and decoded on each transport.
#[cfg(all(feature = "time", feature = "chrono", feature = "uuid", feature = "json"))]
mod types {
    use std::borrow::Cow;
    use std::sync::Arc;

    use sqlx::types::chrono::{DateTime, FixedOffset, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Utc};
    use sqlx::types::time::{Date, OffsetDateTime, PrimitiveDateTime, Time, UtcOffset};
    use sqlx::types::{Json, Uuid};

    use super::*;

    pub const SCHEMA: &str = "CREATE TABLE everything (
        id INTEGER PRIMARY KEY,
        small INTEGER, medium INTEGER, large INTEGER,
        at TEXT, wall TEXT, day TEXT, clock TEXT,
        c_utc TEXT, c_fixed TEXT, c_naive TEXT, c_date TEXT, c_time TEXT,
        uid BLOB, doc TEXT, raw TEXT,
        cow TEXT, boxed TEXT, shared TEXT
    )";

    #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
    pub struct Preferences {
        pub theme: String,
        pub tags: Vec<String>,
        pub limit: Option<u32>,
    }

    #[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
    pub struct Everything {
        pub id: i64,
        pub small: u8,
        pub medium: u16,
        pub large: u32,
        pub at: OffsetDateTime,
        pub wall: PrimitiveDateTime,
        pub day: Date,
        pub clock: Time,
        pub c_utc: DateTime<Utc>,
        pub c_fixed: DateTime<FixedOffset>,
        pub c_naive: NaiveDateTime,
        pub c_date: NaiveDate,
        pub c_time: NaiveTime,
        pub uid: Uuid,
        pub doc: Json<Preferences>,
        pub raw: serde_json::Value,
        pub cow: Cow<'static, str>,
        pub boxed: Box<str>,
        pub shared: Arc<str>,
    }

    pub fn sample(id: i64) -> Everything {
        let at = OffsetDateTime::from_unix_timestamp_nanos(1_780_000_000_123_456_789)
            .unwrap()
            .to_offset(UtcOffset::from_hms(2, 0, 0).unwrap());
        let wall = PrimitiveDateTime::new(at.date(), at.time());
        let c_naive = NaiveDate::from_ymd_opt(2026, 6, 1)
            .unwrap()
            .and_hms_micro_opt(23, 59, 58, 250_001)
            .unwrap();
        Everything {
            id,
            small: u8::MAX,
            medium: u16::MAX,
            large: u32::MAX,
            at,
            wall,
            day: at.date(),
            clock: at.time(),
            c_utc: c_naive.and_utc(),
            c_fixed: FixedOffset::west_opt(5 * 3600 + 30 * 60)
                .unwrap()
                .from_utc_datetime(&c_naive),
            c_naive,
            c_date: c_naive.date(),
            c_time: c_naive.time(),
            uid: Uuid::from_u128(0x0123_4567_89ab_cdef_fedc_ba98_7654_3210 + u128::from(id.unsigned_abs())),
            doc: Json(Preferences {
                theme: "dark \"night\" 🙂".into(),
                tags: vec!["a".into(), "b".into()],
                limit: Some(7),
            }),
            raw: serde_json::json!({"nested": {"list": [1, 2.5, null, true]}, "text": "x"}),
            cow: Cow::Borrowed("borrowed text"),
            boxed: "boxed text".into(),
            shared: Arc::from("shared text"),
        }
    }

    pub const INSERT: &str = "INSERT INTO everything VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";

    /// Binds every field of `row` to [`INSERT`], by reference and by value as applications do.
    macro_rules! bind_everything {
        ($query:expr, $row:expr) => {{
            let row = $row;
            $query
                .bind(row.id)
                .bind(row.small)
                .bind(row.medium)
                .bind(row.large)
                .bind(row.at)
                .bind(row.wall)
                .bind(row.day)
                .bind(row.clock)
                .bind(row.c_utc)
                .bind(row.c_fixed)
                .bind(row.c_naive)
                .bind(row.c_date)
                .bind(row.c_time)
                .bind(row.uid)
                .bind(row.doc.clone())
                .bind(row.raw.clone())
                .bind(row.cow.clone())
                .bind(row.boxed.clone())
                .bind(std::sync::Arc::clone(&row.shared))
        }};
    }
    pub(crate) use bind_everything;

    /// How sqlx's SQLite driver stores each column of [`sample`]: storage class and text.
    pub const STORED: &str = "SELECT typeof(at), at, typeof(wall), wall, day, clock, c_utc, c_fixed, c_naive, c_date, \
                              c_time, typeof(uid), hex(uid), doc, typeof(raw), small, large FROM everything WHERE id = ?";

    pub fn expected_stored() -> Vec<String> {
        [
            "text",
            "2026-05-28T22:26:40.123456789+02:00",
            "text",
            "2026-05-28 22:26:40.123456789",
            "2026-05-28",
            "22:26:40.123456789",
            "2026-06-01T23:59:58.250001+00:00",
            "2026-06-01T18:29:58.250001-05:30",
            "2026-06-01 23:59:58.250001",
            "2026-06-01",
            "23:59:58.250001",
            "blob",
        ]
        .into_iter()
        .map(str::to_owned)
        .collect()
    }

    #[tokio::test]
    async fn every_type_round_trips_on_every_transport() {
        let fx = Transports::new(SCHEMA).await;
        for (n, (transport, text)) in fx.connection_strings("2026-05").into_iter().enumerate() {
            let mut conn = ShardliteConnection::connect(&text).await.unwrap();
            let row = sample(i64::try_from(n).unwrap() + 1);
            bind_everything!(sqlx::query(INSERT), &row)
                .execute(&mut conn)
                .await
                .unwrap_or_else(|err| panic!("{transport}: {err}"));
            let back: Everything = sqlx::query_as("SELECT * FROM everything WHERE id = ?")
                .bind(row.id)
                .fetch_one(&mut conn)
                .await
                .unwrap_or_else(|err| panic!("{transport}: {err}"));
            assert_eq!(back, row, "{transport}");

            // Binds compare against the stored forms, so filters work as they do with sqlx-sqlite.
            let found: Option<i64> =
                sqlx::query_scalar("SELECT id FROM everything WHERE uid = ? AND at = ? AND day = ?")
                    .bind(row.uid)
                    .bind(row.at)
                    .bind(row.day)
                    .fetch_optional(&mut conn)
                    .await
                    .unwrap();
            assert_eq!(found, Some(row.id), "{transport}");

            let stored = sqlx::query(STORED).bind(row.id).fetch_one(&mut conn).await.unwrap();
            let texts: Vec<String> = (0..12).map(|i| stored.get::<String, _>(i)).collect();
            assert_eq!(texts, expected_stored(), "{transport}");
            assert_eq!(
                stored.get::<String, _>(12),
                format!("{:X}", row.uid.simple()),
                "{transport}"
            );
            let doc: serde_json::Value = serde_json::from_str(&stored.get::<String, _>(13)).unwrap();
            assert_eq!(doc["tags"], serde_json::json!(["a", "b"]), "{transport}");
            assert_eq!(stored.get::<String, _>(14), "text", "{transport}");
            assert_eq!(stored.get::<i64, _>(15), 255, "{transport}");
            assert_eq!(stored.get::<i64, _>(16), i64::from(u32::MAX), "{transport}");

            // Out-of-range and malformed values are errors naming the problem, never truncated.
            let err = sqlx::query_scalar::<_, u8>("SELECT 256")
                .fetch_one(&mut conn)
                .await
                .unwrap_err();
            assert!(err.to_string().contains("out of range for u8"), "{transport}: {err}");
            let err = sqlx::query_scalar::<_, u32>("SELECT -1")
                .fetch_one(&mut conn)
                .await
                .unwrap_err();
            assert!(err.to_string().contains("out of range for u32"), "{transport}: {err}");
            let err = sqlx::query_scalar::<_, Uuid>("SELECT x'0102'")
                .fetch_one(&mut conn)
                .await
                .unwrap_err();
            assert!(err.to_string().contains("16 bytes"), "{transport}: {err}");
            let err = sqlx::query_scalar::<_, Date>("SELECT 'yesterday'")
                .fetch_one(&mut conn)
                .await
                .unwrap_err();
            assert!(err.to_string().contains("yesterday"), "{transport}: {err}");
            let err = sqlx::query_scalar::<_, Json<Preferences>>("SELECT '{\"theme\": 1}'")
                .fetch_one(&mut conn)
                .await
                .unwrap_err();
            assert!(
                err.to_string().contains("theme") || err.to_string().contains("invalid type"),
                "{transport}: {err}"
            );
            // SQLite's own date functions write forms that decode too.
            let now: (OffsetDateTime, DateTime<Utc>, PrimitiveDateTime) = sqlx::query_as(
                "SELECT datetime('2026-06-01 10:00'), datetime('2026-06-01 10:00'), '2026-06-01T10:00:00Z'",
            )
            .fetch_one(&mut conn)
            .await
            .unwrap();
            assert_eq!(now.0.unix_timestamp(), now.1.timestamp(), "{transport}");
            assert_eq!(now.2.hour(), 10, "{transport}");
            conn.close().await.unwrap();
        }
    }
}

/// A file written through sqlx's own SQLite driver reads back through shardlite's, and the other
/// way round: both store every type the same way.
#[cfg(all(feature = "time", feature = "chrono", feature = "uuid", feature = "json"))]
#[tokio::test]
async fn files_written_by_sqlx_sqlite_and_by_shardlite_read_back_in_the_other() {
    use sqlx::ConnectOptions;
    use sqlx_sqlite::{SqliteConnectOptions, SqliteConnection};
    use types::{Everything, INSERT, SCHEMA, STORED, bind_everything, sample};

    let dir = temp_dir();
    let file = dir.path().join("shared.db");
    let mut theirs: SqliteConnection = SqliteConnectOptions::new()
        .filename(&file)
        .create_if_missing(true)
        .connect()
        .await
        .unwrap();
    sqlx::query(SCHEMA).execute(&mut theirs).await.unwrap();
    let written_by_sqlx = sample(1);
    bind_everything!(sqlx::query(INSERT), &written_by_sqlx)
        .execute(&mut theirs)
        .await
        .unwrap();

    let mut ours = ShardliteConnection::connect(&format!("Data Source={}", file.display()))
        .await
        .unwrap();
    let read_by_shardlite: Everything = sqlx::query_as("SELECT * FROM everything WHERE id = 1")
        .fetch_one(&mut ours)
        .await
        .unwrap();
    assert_eq!(read_by_shardlite, written_by_sqlx);
    let written_by_shardlite = sample(2);
    bind_everything!(sqlx::query(INSERT), &written_by_shardlite)
        .execute(&mut ours)
        .await
        .unwrap();

    let read_by_sqlx: Everything = sqlx::query_as("SELECT * FROM everything WHERE id = 2")
        .fetch_one(&mut theirs)
        .await
        .unwrap();
    assert_eq!(read_by_sqlx, written_by_shardlite);
    // Byte for byte: the stored forms of the two rows are the same.
    for id in [1_i64, 2] {
        let row = sqlx::query(STORED).bind(id).fetch_one(&mut theirs).await.unwrap();
        let texts: Vec<String> = (0..12).map(|i| row.get::<String, _>(i)).collect();
        assert_eq!(texts, types::expected_stored(), "row {id}");
    }
    theirs.close().await.unwrap();
    ours.close().await.unwrap();
}

/// `AnyPool` over `shardlite:`, `shardlite+http:` and `shardlite+grpc:` URLs: queries, binds of
/// the Any types, transactions and last insert ids.
#[tokio::test]
async fn the_any_driver_serves_all_three_url_schemes() {
    use sqlx::any::AnyPoolOptions;

    crate::install_any_driver();

    let fx = Transports::new(
        "CREATE TABLE kinds (id INTEGER PRIMARY KEY, big INTEGER, int INTEGER, small INTEGER, flag INTEGER, \
         dbl REAL, flt REAL, txt TEXT, bytes BLOB, absent TEXT, via TEXT)",
    )
    .await;
    let route = "shard_keyspace=orders_by_month&shard_key=2026-05";
    let address = fx.daemon.addr;
    let urls = [
        (
            "shardlite",
            format!("shardlite://{}?{route}", fx.fixture.master.display()),
        ),
        ("shardlite+http", format!("shardlite+http://{address}?{route}")),
        ("shardlite+grpc", format!("shardlite+grpc://{address}?{route}")),
    ];
    for (n, (scheme, url)) in urls.iter().enumerate() {
        let pool = AnyPoolOptions::new()
            .max_connections(2)
            .connect(url)
            .await
            .unwrap_or_else(|err| panic!("{scheme}: {err}"));
        let id = i64::try_from(n).unwrap() * 10 + 1;
        let done = sqlx::query("INSERT INTO kinds VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
            .bind(id)
            .bind(i64::MIN)
            .bind(i32::MAX)
            .bind(i16::MIN)
            .bind(true)
            .bind(-0.5_f64)
            .bind(1.5_f32)
            .bind("naïve 🙂")
            .bind(vec![0_u8, 255])
            .bind(None::<String>)
            .bind(scheme.to_string())
            .execute(&pool)
            .await
            .unwrap_or_else(|err| panic!("{scheme}: {err}"));
        assert_eq!(done.rows_affected(), 1, "{scheme}");
        assert_eq!(done.last_insert_id(), Some(id), "{scheme}");

        let row = sqlx::query("SELECT * FROM kinds WHERE id = ?")
            .bind(id)
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(row.get::<i64, _>("big"), i64::MIN, "{scheme}");
        assert_eq!(row.get::<i64, _>("int"), i64::from(i32::MAX), "{scheme}");
        assert_eq!(row.get::<i64, _>("small"), i64::from(i16::MIN), "{scheme}");
        assert_eq!(row.get::<i64, _>("flag"), 1, "{scheme}");
        assert!((row.get::<f64, _>("dbl") + 0.5).abs() < f64::EPSILON, "{scheme}");
        assert!((row.get::<f64, _>("flt") - 1.5).abs() < f64::EPSILON, "{scheme}");
        assert_eq!(row.get::<String, _>("txt"), "naïve 🙂", "{scheme}");
        assert_eq!(row.get::<Vec<u8>, _>("bytes"), vec![0, 255], "{scheme}");
        assert_eq!(row.get::<Option<String>, _>("absent"), None, "{scheme}");
        let missing = sqlx::query("SELECT id FROM kinds WHERE id = -1")
            .fetch_optional(&pool)
            .await
            .unwrap();
        assert!(missing.is_none(), "{scheme}");

        // A committed transaction keeps its row; a rolled-back and a dropped one do not.
        let mut tx = pool.begin().await.unwrap();
        sqlx::query("INSERT INTO kinds (id, via) VALUES (?, ?)")
            .bind(id + 1)
            .bind(scheme.to_string())
            .execute(&mut *tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        let mut tx = pool.begin().await.unwrap();
        sqlx::query("INSERT INTO kinds (id) VALUES (?)")
            .bind(id + 2)
            .execute(&mut *tx)
            .await
            .unwrap();
        tx.rollback().await.unwrap();
        {
            let mut tx = pool.begin().await.unwrap();
            sqlx::query("INSERT INTO kinds (id) VALUES (?)")
                .bind(id + 3)
                .execute(&mut *tx)
                .await
                .unwrap();
        }
        let ids: Vec<i64> = sqlx::query_scalar("SELECT id FROM kinds WHERE via = ? ORDER BY id")
            .bind(scheme.to_string())
            .fetch_all(&pool)
            .await
            .unwrap();
        assert_eq!(ids, vec![id, id + 1], "{scheme}");
        let err = sqlx::query("SELEC 1").execute(&pool).await.unwrap_err();
        assert!(err.as_database_error().is_some(), "{scheme}: {err}");
        pool.close().await;
    }

    // Every row is on 2026-05's shard: another route's shard has none.
    let mut elsewhere = ShardliteConnection::connect(&fx.connection_strings("2026-06")[0].1)
        .await
        .unwrap();
    let other: i64 = sqlx::query_scalar("SELECT count(*) FROM kinds")
        .fetch_one(&mut elsewhere)
        .await
        .unwrap();
    assert_eq!(other, 0);
    let mut here = ShardliteConnection::connect(&fx.connection_strings("2026-05")[0].1)
        .await
        .unwrap();
    let here: i64 = sqlx::query_scalar("SELECT count(*) FROM kinds")
        .fetch_one(&mut here)
        .await
        .unwrap();
    assert_eq!(here, 6);
}
