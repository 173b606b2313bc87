//! Paging across route keys, end to end: the API-level sharding sample's order history on
//! real (in-memory) SQLite databases, one per month route, plus properties of the arithmetic.

use std::cmp::Reverse;
use std::collections::HashMap;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use proptest::prelude::*;
use rusqlite::Connection;
use shardlite::Error;
use shardlite::paging::{
    ContinuationFill, CursorCodec, MonthOrder, PageCursor, RouteSlice, merge_page, merge_page_by_key, month_route_keys,
    plan_page,
};
use time::macros::date;

const SECRET: &[u8] = b"paging-test-secret-of-32-bytes!!";
const CUSTOMER: &str = "customer-1001";

/// The sample's orders: (order_month, customer, order_number, order_date, amount).
const ORDERS: [(&str, &str, &str, &str, f64); 15] = [
    ("2026-06", CUSTOMER, "SO-202606-1001", "2026-06-01T10:15:00Z", 129.95),
    ("2026-06", CUSTOMER, "SO-202606-1002", "2026-06-01T09:05:00Z", 42.50),
    ("2026-06", CUSTOMER, "SO-202606-1003", "2026-06-01T08:30:00Z", 310.00),
    ("2026-06", CUSTOMER, "SO-202606-1004", "2026-06-01T07:55:00Z", 18.75),
    ("2026-06", CUSTOMER, "SO-202606-1013", "2026-06-01T07:15:00Z", 61.00),
    ("2026-05", CUSTOMER, "SO-202605-1005", "2026-05-29T10:00:00Z", 88.40),
    ("2026-05", CUSTOMER, "SO-202605-1006", "2026-05-22T10:00:00Z", 54.10),
    ("2026-05", CUSTOMER, "SO-202605-1007", "2026-05-07T10:00:00Z", 219.99),
    ("2026-05", CUSTOMER, "SO-202605-1014", "2026-05-01T10:00:00Z", 34.99),
    ("2026-04", CUSTOMER, "SO-202604-1008", "2026-04-17T10:00:00Z", 73.35),
    ("2026-04", CUSTOMER, "SO-202604-1009", "2026-04-03T10:00:00Z", 19.99),
    ("2025-12", CUSTOMER, "SO-202512-1010", "2025-12-19T10:00:00Z", 540.00),
    (
        "2026-06",
        "customer-2002",
        "SO-202606-2002",
        "2026-06-01T11:00:00Z",
        64.25,
    ),
    (
        "2026-05",
        "customer-2002",
        "SO-202605-2002",
        "2026-05-15T10:00:00Z",
        121.00,
    ),
    ("2026-06", CUSTOMER, "SO-202606-TX", "2026-06-01T12:05:00Z", 27.25),
];

/// One SQLite database per month route, standing in for the shard each month resolves to.
struct MonthShards {
    by_month: HashMap<&'static str, Connection>,
}

impl MonthShards {
    fn sample() -> Self {
        let mut by_month = HashMap::new();
        for (month, customer, number, date, amount) in ORDERS {
            let db = by_month.entry(month).or_insert_with(|| {
                let db = Connection::open_in_memory().expect("open an in-memory database");
                db.execute_batch(
                    "CREATE TABLE orders (id INTEGER PRIMARY KEY, order_month TEXT NOT NULL, customer_id TEXT NOT NULL, \
                     order_number TEXT NOT NULL, order_date TEXT NOT NULL, amount REAL NOT NULL);",
                )
                .expect("create the orders table");
                db
            });
            db.execute(
                "INSERT INTO orders (order_month, customer_id, order_number, order_date, amount) VALUES (?1, ?2, ?3, ?4, ?5)",
                (month, customer, number, date, amount),
            )
            .expect("insert an order");
        }
        Self { by_month }
    }

    fn count(&self, month: &str) -> u64 {
        let Some(db) = self.by_month.get(month) else {
            return 0;
        };
        db.query_row(
            "SELECT COUNT(*) FROM orders WHERE order_month = ?1 AND customer_id = ?2",
            (month, CUSTOMER),
            |row| row.get::<_, u32>(0),
        )
        .map(u64::from)
        .expect("count orders")
    }

    /// `(order_date, order_number)` rows of one route, newest first, ties by number.
    fn load(&self, month: &str, limit: u64, offset: u64) -> Vec<(String, String)> {
        let Some(db) = self.by_month.get(month) else {
            return Vec::new();
        };
        let mut statement = db
            .prepare(
                "SELECT order_date, order_number FROM orders WHERE order_month = ?1 AND customer_id = ?2 \
                 ORDER BY order_date DESC, order_number ASC LIMIT ?3 OFFSET ?4",
            )
            .expect("prepare the page query");
        statement
            .query_map(
                (
                    month,
                    CUSTOMER,
                    i64::try_from(limit).expect("a limit within the counts fits in i64"),
                    i64::try_from(offset).expect("an offset within the counts fits in i64"),
                ),
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .and_then(Iterator::collect)
            .expect("read a page of orders")
    }

    fn load_slice(&self, slice: &RouteSlice) -> Vec<String> {
        self.load(&slice.route_key, slice.limit, slice.offset)
            .into_iter()
            .map(|(_, number)| number)
            .collect()
    }

    fn numbered_page(&self, months: &[String], page_number: u64, page_size: u64) -> Vec<String> {
        let counts = months.iter().map(|month| (month.as_str(), self.count(month)));
        let plan = plan_page(counts, page_number, page_size).expect("valid page arguments");
        plan.slices.iter().flat_map(|slice| self.load_slice(slice)).collect()
    }
}

fn history_months() -> Vec<String> {
    month_route_keys(
        date!(2025 - 12 - 01),
        date!(2026 - 06 - 30),
        MonthOrder::NewestFirst,
        12,
    )
    .expect("a seven-month range")
}

fn numbers(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|id| format!("SO-{id}")).collect()
}

fn cursor_reason(err: Error) -> String {
    match err {
        Error::InvalidCursor { reason } => reason,
        other => panic!("expected InvalidCursor, got {other:?}"),
    }
}

#[test]
fn filled_cross_month_page_matches_the_sample() {
    let shards = MonthShards::sample();
    let months = history_months();
    assert_eq!(months.first().map(String::as_str), Some("2026-06"));
    assert_eq!(months.len(), 7, "2026-06 back to 2025-12, empty months included");

    let counts: Vec<_> = months
        .iter()
        .map(|month| (month.as_str(), shards.count(month)))
        .collect();
    let plan = plan_page(counts.iter().copied(), 1, 10).unwrap();
    let supplied: Vec<_> = plan.slices.iter().map(|s| (s.route_key.as_str(), s.limit)).collect();
    assert_eq!(supplied, [("2026-06", 6), ("2026-05", 4)]);
    assert_eq!((plan.total_rows, plan.total_pages), (13, 2));

    let page: Vec<_> = plan.slices.iter().flat_map(|slice| shards.load_slice(slice)).collect();
    assert_eq!(
        page,
        numbers(&[
            "202606-TX",
            "202606-1001",
            "202606-1002",
            "202606-1003",
            "202606-1004",
            "202606-1013",
            "202605-1005",
            "202605-1006",
            "202605-1007",
            "202605-1014",
        ])
    );
}

#[test]
fn page_inside_one_route_is_the_recent_orders_preview() {
    let shards = MonthShards::sample();
    let page = shards.numbered_page(&history_months(), 1, 3);
    assert_eq!(page, numbers(&["202606-TX", "202606-1001", "202606-1002"]));
}

#[test]
fn later_pages_start_mid_route_and_skip_empty_months() {
    let shards = MonthShards::sample();
    let months = history_months();
    // June holds 6 of the customer's orders, so page 2 of 5 starts at June's 6th row.
    assert_eq!(
        shards.numbered_page(&months, 2, 5),
        numbers(&[
            "202606-1013",
            "202605-1005",
            "202605-1006",
            "202605-1007",
            "202605-1014"
        ])
    );
    // Page 3 skips June and May whole, reads April, then three empty months, then December.
    assert_eq!(
        shards.numbered_page(&months, 3, 5),
        numbers(&["202604-1008", "202604-1009", "202512-1010"])
    );
}

#[test]
fn pages_past_the_end_are_empty() {
    let shards = MonthShards::sample();
    let months = history_months();
    assert!(shards.numbered_page(&months, 3, 10).is_empty());
    assert!(shards.numbered_page(&months, u64::MAX, u64::MAX).is_empty());
}

#[test]
fn infinite_scroll_with_tokens_reads_every_order_once() {
    let shards = MonthShards::sample();
    let months = history_months();
    let codec = CursorCodec::new(SECRET, 1).unwrap();

    let mut token: Option<String> = None;
    let mut pages = Vec::new();
    loop {
        let mut fill = match &token {
            None => ContinuationFill::start(&months, 4).unwrap(),
            Some(token) => ContinuationFill::resume(&months, &codec.decode(token).unwrap()).unwrap(),
        };
        let mut page = Vec::new();
        while let Some(slice) = fill.next_slice() {
            let rows = shards.load_slice(&slice);
            fill.record_rows(rows.len()).unwrap();
            page.extend(rows);
        }
        pages.push(page);
        match fill.next_cursor() {
            Some(cursor) => token = Some(codec.encode(&cursor)),
            None => break,
        }
    }
    let numbered: Vec<_> = (1..=4).map(|n| shards.numbered_page(&months, n, 4)).collect();
    assert_eq!(pages, numbered, "scrolling gives the same pages as numbered paging");
}

#[test]
fn tampered_token_is_rejected() {
    let codec = CursorCodec::new(SECRET, 1).unwrap();
    let token = codec.encode(&PageCursor::new("2026-05", 4, 10).unwrap());

    // Change the offset inside the payload (bytes 9..17) from 4 to 0 without re-signing.
    let mut bytes = URL_SAFE_NO_PAD.decode(&token).unwrap();
    bytes[16] = 0;
    let text = cursor_reason(codec.decode(&URL_SAFE_NO_PAD.encode(&bytes)).unwrap_err());
    assert!(text.contains("signature"), "{text}");

    // Change one character of the token itself.
    let mut chars: Vec<char> = token.chars().collect();
    chars[20] = if chars[20] == 'A' { 'B' } else { 'A' };
    let altered: String = chars.into_iter().collect();
    assert!(matches!(codec.decode(&altered), Err(Error::InvalidCursor { .. })));
}

#[test]
fn token_from_another_map_version_is_rejected_naming_both_versions() {
    let token = CursorCodec::new(SECRET, 41)
        .unwrap()
        .encode(&PageCursor::new("2026-05", 4, 10).unwrap());
    let err = CursorCodec::new(SECRET, 42).unwrap().decode(&token).unwrap_err();
    assert_eq!(err.kind(), shardlite::ErrorKind::InvalidInput);
    let text = cursor_reason(err);
    assert!(text.contains("41") && text.contains("42"), "{text}");
}

#[test]
fn garbage_tokens_are_rejected_never_panicking() {
    let codec = CursorCodec::new(SECRET, 1).unwrap();
    let long = "x".repeat(100_000);
    for token in [
        "",
        " ",
        "null",
        "%%%",
        "AAAA",
        "eyJtYXAiOjF9",
        "====",
        "\u{0}",
        long.as_str(),
    ] {
        let err = codec.decode(token).unwrap_err();
        assert!(!cursor_reason(err).is_empty(), "{token:?}");
    }
}

#[test]
fn token_for_a_month_no_longer_listed_is_rejected() {
    let codec = CursorCodec::new(SECRET, 1).unwrap();
    let cursor = codec
        .decode(&codec.encode(&PageCursor::new("2024-01", 0, 10).unwrap()))
        .unwrap();
    let err = ContinuationFill::resume(history_months(), &cursor).unwrap_err();
    assert!(cursor_reason(err).contains("2024-01"));
}

#[test]
fn over_fetch_merges_recent_months_by_date_then_number() {
    let shards = MonthShards::sample();
    let page_size = 5;
    let fetched: Vec<_> = ["2026-05", "2026-06"]
        .into_iter()
        .map(|month| (month, shards.load(month, page_size, 0)))
        .collect();
    let page = merge_page_by_key(fetched, 5, 5, |row: &(String, String)| {
        (Reverse(row.0.clone()), row.1.clone())
    })
    .unwrap();
    let got: Vec<_> = page.rows.iter().map(|row| row.1.clone()).collect();
    assert_eq!(
        got,
        numbers(&["202606-TX", "202606-1001", "202606-1002", "202606-1003", "202606-1004"])
    );
    assert!(page.more_rows_may_exist);
    let june = page.routes.iter().find(|route| route.route_key == "2026-06").unwrap();
    assert_eq!((june.rows_fetched, june.rows_taken), (5, 5));
}

#[test]
fn merge_ties_are_broken_the_same_for_every_input_order() {
    // Equal dates across routes: the comparator cannot tell them apart, the route key can.
    let route = |key: &'static str, tags: &[&'static str]| {
        (key, tags.iter().map(|tag| ("2026-06-01", *tag)).collect::<Vec<_>>())
    };
    let routes = [
        route("east", &["e1", "e2"]),
        route("north", &["n1"]),
        route("west", &["w1", "w2"]),
    ];
    let by_date_desc = |a: &(&str, &str), b: &(&str, &str)| b.0.cmp(a.0);
    let expected = ["e1", "e2", "n1", "w1"];
    for order in [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]] {
        let input: Vec<_> = order.iter().map(|&i| routes[i].clone()).collect();
        let page = merge_page(input, 4, 4, by_date_desc).unwrap();
        let tags: Vec<_> = page.rows.iter().map(|row| row.1).collect();
        assert_eq!(tags, expected, "input order {order:?}");
    }
}

#[test]
fn date_range_gives_month_keys_and_rejects_bad_ranges() {
    let keys = month_route_keys(date!(2026 - 03 - 15), date!(2026 - 06 - 13), MonthOrder::OldestFirst, 6).unwrap();
    assert_eq!(keys, ["2026-03", "2026-04", "2026-05", "2026-06"]);
    let reversed = month_route_keys(date!(2026 - 06 - 13), date!(2026 - 03 - 15), MonthOrder::OldestFirst, 6);
    assert!(matches!(reversed, Err(Error::InvalidArgument { .. })));
    let too_wide = month_route_keys(
        date!(2016 - 01 - 01),
        date!(2026 - 06 - 13),
        MonthOrder::NewestFirst,
        24,
    );
    assert!(matches!(too_wide, Err(Error::InvalidArgument { .. })));
}

/// Rows of the test routes: `(route index, position within the route)`, in page order.
fn all_rows(counts: &[u64]) -> Vec<(usize, u64)> {
    counts
        .iter()
        .enumerate()
        .flat_map(|(route, &count)| (0..count).map(move |at| (route, at)))
        .collect()
}

/// A merge test row: (sort key, route index, position within the route).
type TaggedRow = (u8, usize, usize);

fn route_keys(counts: &[u64]) -> Vec<String> {
    (0..counts.len()).map(|i| format!("route-{i:02}")).collect()
}

fn rows_of(keys: &[String], slices: &[RouteSlice]) -> Vec<(usize, u64)> {
    slices
        .iter()
        .flat_map(|slice| {
            let route = keys
                .iter()
                .position(|key| *key == slice.route_key)
                .expect("a slice names a listed route");
            (slice.offset..slice.offset + slice.limit).map(move |at| (route, at))
        })
        .collect()
}

proptest! {
    #[test]
    fn concatenated_pages_reproduce_every_row_once_in_order(
        counts in prop::collection::vec(prop_oneof![Just(0u64), 0u64..30], 0..10),
        page_size in 1u64..20,
    ) {
        let keys = route_keys(&counts);
        let expected = all_rows(&counts);
        let routes = || keys.iter().map(String::as_str).zip(counts.iter().copied());
        let first = plan_page(routes(), 1, page_size).unwrap();
        prop_assert_eq!(first.total_rows, u64::try_from(expected.len()).unwrap());
        prop_assert_eq!(first.total_pages, first.total_rows.div_ceil(page_size));

        let mut concatenated = Vec::new();
        for page_number in 1..=first.total_pages {
            let plan = plan_page(routes(), page_number, page_size).unwrap();
            let rows = rows_of(&keys, &plan.slices);
            prop_assert!(plan.slices.iter().all(|slice| slice.limit > 0));
            prop_assert_eq!(u64::try_from(rows.len()).unwrap(), plan.row_count());
            if page_number < first.total_pages {
                prop_assert_eq!(plan.row_count(), page_size);
            }
            concatenated.extend(rows);
        }
        prop_assert_eq!(&concatenated, &expected);
        prop_assert!(plan_page(routes(), first.total_pages + 1, page_size).unwrap().is_empty());
    }

    #[test]
    fn continuation_pages_equal_numbered_pages(
        counts in prop::collection::vec(0u64..12, 0..8),
        page_size in 1u64..10,
    ) {
        let keys = route_keys(&counts);
        let codec = CursorCodec::new(SECRET, 9).unwrap();
        let mut fill = ContinuationFill::start(&keys, page_size).unwrap();
        let mut scrolled = Vec::new();
        loop {
            let mut page = Vec::new();
            while let Some(slice) = fill.next_slice() {
                let route = keys.iter().position(|key| *key == slice.route_key).unwrap();
                let returned = counts[route].saturating_sub(slice.offset).min(slice.limit);
                page.extend((slice.offset..slice.offset + returned).map(|at| (route, at)));
                fill.record_rows(usize::try_from(returned).unwrap()).unwrap();
            }
            scrolled.push(page);
            let Some(cursor) = fill.next_cursor() else { break };
            let decoded = codec.decode(&codec.encode(&cursor)).unwrap();
            fill = ContinuationFill::resume(&keys, &decoded).unwrap();
        }
        // Scrolling can end with one empty page when the data fills the last page exactly.
        if scrolled.last().is_some_and(Vec::is_empty) {
            scrolled.pop();
        }
        let routes = || keys.iter().map(String::as_str).zip(counts.iter().copied());
        let total_pages = plan_page(routes(), 1, page_size).unwrap().total_pages;
        let numbered: Vec<_> = (1..=total_pages)
            .map(|n| rows_of(&keys, &plan_page(routes(), n, page_size).unwrap().slices))
            .collect();
        prop_assert_eq!(scrolled, numbered);
    }

    #[test]
    fn merged_page_is_the_top_of_the_union_for_any_input_order(
        (routes, order) in prop::collection::vec(prop::collection::vec(0u8..4, 0..6), 1..5)
            .prop_flat_map(|routes| {
                let n = routes.len();
                (Just(routes), Just((0..n).collect::<Vec<_>>()).prop_shuffle())
            }),
        page_size in 1usize..8,
    ) {
        let per_route_limit = page_size.max(6);
        // Each route's rows newest first (descending sort key), tagged with route and position.
        let lists: Vec<(String, Vec<TaggedRow>)> = routes
            .iter()
            .enumerate()
            .map(|(route, keys)| {
                let mut keys = keys.clone();
                keys.sort_by(|a, b| b.cmp(a));
                let rows = keys.into_iter().enumerate().map(|(at, key)| (key, route, at)).collect();
                (format!("r{route}"), rows)
            })
            .collect();
        let by_key_desc = |a: &TaggedRow, b: &TaggedRow| b.0.cmp(&a.0);

        let in_order = merge_page(lists.clone(), page_size, per_route_limit, by_key_desc).unwrap();
        let shuffled_input: Vec<_> = order.iter().map(|&i| lists[i].clone()).collect();
        let shuffled = merge_page(shuffled_input, page_size, per_route_limit, by_key_desc).unwrap();
        prop_assert_eq!(&in_order.rows, &shuffled.rows);

        let mut union: Vec<_> = lists.iter().flat_map(|(_, rows)| rows.iter().copied()).collect();
        union.sort_by(|a, b| by_key_desc(a, b).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let more = union.len() > page_size;
        union.truncate(page_size);
        prop_assert_eq!(&in_order.rows, &union);
        if more {
            prop_assert!(in_order.more_rows_may_exist);
        }
        prop_assert_eq!(in_order.routes.iter().map(|r| r.rows_taken).sum::<usize>(), in_order.rows.len());
    }
}
