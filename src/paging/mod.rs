//! Paging across route keys: the offset arithmetic and merging that an application needs when
//! one page of results spans several routes (and so several shards).
//!
//! shardlite sends every query to exactly one shard, so a page that spans routes (a 10-row
//! order history where June has 6 orders and May the rest) is assembled by the application,
//! one route query at a time. This module does the arithmetic for that loop and nothing
//! else: it never touches a database. The caller supplies route keys, counts and rows, runs
//! the queries on each route's shard, and keeps filtering on the route-key column
//! (`WHERE order_month = ?`) because several routes can share a shard.
//!
//! ## Which pattern to use
//!
//! | Need | Pattern | Cost |
//! |---|---|---|
//! | Numbered pages ("page 3 of 8"), jump to any page | [`plan_page`]: precise page fill from per-route counts | one `COUNT` per route, then only the rows on the page |
//! | Infinite scroll / "load more" | [`ContinuationFill`] with a [`PageCursor`] signed by [`CursorCodec`] | no counts; reads only the rows on the page (plus a possibly empty last page) |
//! | Rows of several routes interleave in page order, or a small fixed window (this month and last) | [`merge_page`]: bounded over-fetch, then merge | up to `routes × per_route_limit` rows read per page |
//! | A date filter ("April through June", "last 90 days") | [`month_route_keys`] for the route list, then one of the above | capped number of routes |
//! | A multi-month summary (counts, totals per month) | iterate [`month_route_keys`], aggregate per route, combine | one aggregate query per route; no paging arithmetic needed |
//!
//! [`plan_page`] and [`ContinuationFill`] assume **route order is page order**: every row of
//! one route comes before every row of the next (months newest first for an
//! `ORDER BY order_date DESC` history). When that does not hold (routes by region or tenant,
//! sorted by date), rows interleave and only [`merge_page`] gives a correct page.
//!
//! ## Precise page fill
//!
//! The seed's "filled cross-month page": convert the page number into a global offset, skip
//! whole routes until it is consumed, read the first contributing route from a route-local
//! offset and later ones from 0 until the page is full. [`plan_page`] returns those reads as
//! [`RouteSlice`]s together with the total row and page counts.
//!
//! ## Cursor-based continuation
//!
//! A token records where the next page resumes (route key and route-local offset), so later
//! pages need no counts. [`ContinuationFill`] runs the read loop from a cursor and produces
//! the next one; [`CursorCodec`] turns cursors into opaque URL-safe tokens signed with
//! HMAC-SHA256 under an application secret and bound to the shard map version, so a
//! tampered token or one from before a map change is rejected with
//! [`Error::InvalidCursor`](crate::Error::InvalidCursor). The token format is part of the API
//! contract: it carries a format version.
//!
//! ## Bounded over-fetch, then merge
//!
//! Query each route for at most `per_route_limit` rows (at least the page size) in page
//! order, then [`merge_page`] merges them by the caller's order with a deterministic
//! tie-breaker (route key, then position within the route) and trims to the page. Because
//! every route was asked for a full page, no unread row can belong on it.
//!
//! ## Date-range windows
//!
//! [`month_route_keys`] lists the `yyyy-MM` keys a date range touches, newest or oldest
//! first, and refuses ranges wider than a caller-chosen cap so a broad filter does not turn
//! into an unbounded fan-out.

mod continuation;
mod cursor;
mod merge;
mod months;
mod plan;

pub use continuation::ContinuationFill;
pub use cursor::{CursorCodec, PageCursor};
pub use merge::{MergedPage, RouteTake, merge_page, merge_page_by_key};
pub use months::{MonthOrder, month_route_key, month_route_keys};
pub use plan::{PagePlan, RouteSlice, plan_page};
