//! Precise page fill: numbered pages over ordered routes whose row counts are known.

use std::collections::HashSet;

use serde::Serialize;

use crate::error::{Error, Result};

/// One route's share of a page: read `limit` rows of `route_key`, skipping the first `offset`.
///
/// `offset` and `limit` are route-local: they go straight into the route's
/// `ORDER BY ... LIMIT {limit} OFFSET {offset}` query. SQLite binds integers as `i64`; a plan
/// never exceeds the counts it was given, so when those came from `COUNT(*)`,
/// `i64::try_from(slice.limit)` cannot fail.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteSlice {
    /// The route key to query, for example `2026-06`.
    pub route_key: String,
    /// Rows of this route to skip: the SQL `OFFSET`.
    pub offset: u64,
    /// Rows of this route to read: the SQL `LIMIT`; never 0.
    pub limit: u64,
}

/// Which rows of which routes make up one numbered page, as computed by [`plan_page`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PagePlan {
    /// The requested page, numbered from 1.
    pub page_number: u64,
    /// The requested page size.
    pub page_size: u64,
    /// Rows across all routes.
    pub total_rows: u64,
    /// Pages across all routes: `total_rows / page_size`, rounded up (0 when there are no rows).
    pub total_pages: u64,
    /// The reads that fill the page, in route order; empty when the page is past the end.
    pub slices: Vec<RouteSlice>,
}

impl PagePlan {
    /// Rows this page holds: the sum of the slice limits (`page_size` except on the last page).
    pub fn row_count(&self) -> u64 {
        // Every limit is at most `page_size` and they sum to at most `page_size`.
        self.slices.iter().map(|slice| slice.limit).sum()
    }

    /// Whether the page holds no rows (it is past the end, or there are no rows at all).
    pub fn is_empty(&self) -> bool {
        self.slices.is_empty()
    }

    /// Whether a page after this one holds rows.
    pub fn has_next_page(&self) -> bool {
        self.page_number < self.total_pages
    }
}

/// Plans page `page_number` (from 1) of `page_size` rows over routes listed in display order
/// with their row counts.
///
/// The page starts at the global row offset `(page_number - 1) * page_size`. Whole routes
/// before that offset are skipped; the first contributing route is read from a route-local
/// offset, and later routes from offset 0, until the page is full. Routes with no rows never
/// appear in the plan; a page past the end has an empty plan (not an error).
///
/// Use this when each route's rows all sort before the next route's rows (month routes listed
/// newest first for an `order_date DESC` history) and counting each route is affordable. The
/// counts must come from the same filter as the later reads (`COUNT(*) ... WHERE order_month =
/// ? AND customer_id = ?`); rows written between counting and reading shift the page.
///
/// All arithmetic is checked: a page whose offset does not fit in `u64` is past the end of any
/// data and gets an empty plan.
///
/// # Errors
///
/// [`Error::InvalidArgument`] when `page_number` or `page_size` is 0, a route key appears
/// twice, or the counts add up to more than `u64::MAX`.
///
/// # Example
///
/// The sample's "filled cross-month page", then a later page that starts inside a route:
///
/// ```
/// use shardlite::paging::{plan_page, RouteSlice};
///
/// let counts = [("2026-06", 6), ("2026-05", 4), ("2026-04", 2)];
///
/// let first = plan_page(counts, 1, 10)?;
/// assert_eq!(first.total_rows, 12);
/// assert_eq!(first.total_pages, 2);
/// assert_eq!(first.slices, vec![
///     RouteSlice { route_key: "2026-06".into(), offset: 0, limit: 6 },
///     RouteSlice { route_key: "2026-05".into(), offset: 0, limit: 4 },
/// ]);
///
/// let second = plan_page(counts, 2, 5)?;
/// assert_eq!(second.slices, vec![
///     RouteSlice { route_key: "2026-06".into(), offset: 5, limit: 1 },
///     RouteSlice { route_key: "2026-05".into(), offset: 0, limit: 4 },
/// ]);
///
/// // Each slice is one query on the route's shard:
/// for slice in &second.slices {
///     let _sql = format!(
///         "SELECT ... WHERE order_month = '{}' ORDER BY order_date DESC, id DESC LIMIT {} OFFSET {}",
///         slice.route_key, slice.limit, slice.offset,
///     );
/// }
///
/// assert!(plan_page(counts, 9, 10)?.is_empty());
/// # Ok::<(), shardlite::Error>(())
/// ```
pub fn plan_page<I, K>(route_counts: I, page_number: u64, page_size: u64) -> Result<PagePlan>
where
    I: IntoIterator<Item = (K, u64)>,
    K: AsRef<str>,
{
    if page_number == 0 {
        return Err(Error::invalid_argument(
            "page_number",
            "pages are numbered from 1, got 0",
        ));
    }
    if page_size == 0 {
        return Err(Error::invalid_argument("page_size", "must be at least 1, got 0"));
    }
    // `None` when the offset overflows u64: no route list can hold that many rows.
    let mut to_skip = (page_number - 1).checked_mul(page_size);
    let mut to_take = page_size;
    let mut total_rows: u64 = 0;
    let mut seen = HashSet::new();
    let mut slices = Vec::new();

    for (route_key, row_count) in route_counts {
        let route_key = route_key.as_ref();
        if !seen.insert(route_key.to_owned()) {
            return Err(duplicate_route("route_counts", route_key));
        }
        total_rows = total_rows.checked_add(row_count).ok_or_else(|| {
            Error::invalid_argument(
                "route_counts",
                format!("the row counts add up to more than {} at route '{route_key}'", u64::MAX),
            )
        })?;
        if row_count == 0 || to_take == 0 {
            continue;
        }
        let Some(skip) = to_skip.as_mut() else {
            continue;
        };
        if *skip >= row_count {
            *skip -= row_count;
            continue;
        }
        let offset = std::mem::take(skip);
        let limit = to_take.min(row_count - offset);
        to_take -= limit;
        slices.push(RouteSlice {
            route_key: route_key.to_owned(),
            offset,
            limit,
        });
    }

    Ok(PagePlan {
        page_number,
        page_size,
        total_rows,
        total_pages: total_rows.div_ceil(page_size),
        slices,
    })
}

/// The error for a route key listed twice: its rows would be counted or merged twice.
pub(super) fn duplicate_route(argument: &'static str, route_key: &str) -> Error {
    Error::invalid_argument(
        argument,
        format!("route key '{route_key}' is listed more than once; each route must appear once"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: [(&str, u64); 3] = [("2026-06", 6), ("2026-05", 4), ("2026-04", 2)];

    fn slice(route_key: &str, offset: u64, limit: u64) -> RouteSlice {
        RouteSlice {
            route_key: route_key.into(),
            offset,
            limit,
        }
    }

    #[test]
    fn first_page_spans_two_routes_like_the_sample() {
        let plan = plan_page(SAMPLE, 1, 10).unwrap();
        assert_eq!(plan.slices, vec![slice("2026-06", 0, 6), slice("2026-05", 0, 4)]);
        assert_eq!((plan.total_rows, plan.total_pages, plan.row_count()), (12, 2, 10));
        assert!(plan.has_next_page());
    }

    #[test]
    fn second_page_skips_whole_routes() {
        let plan = plan_page(SAMPLE, 2, 10).unwrap();
        assert_eq!(plan.slices, vec![slice("2026-04", 0, 2)]);
        assert_eq!(plan.row_count(), 2);
        assert!(!plan.has_next_page());
    }

    #[test]
    fn page_inside_one_route() {
        assert_eq!(plan_page(SAMPLE, 1, 3).unwrap().slices, vec![slice("2026-06", 0, 3)]);
        assert_eq!(plan_page(SAMPLE, 2, 3).unwrap().slices, vec![slice("2026-06", 3, 3)]);
    }

    #[test]
    fn later_page_starts_at_a_route_local_offset() {
        let plan = plan_page(SAMPLE, 2, 5).unwrap();
        assert_eq!(plan.slices, vec![slice("2026-06", 5, 1), slice("2026-05", 0, 4)]);
        let plan = plan_page(SAMPLE, 3, 5).unwrap();
        assert_eq!(plan.slices, vec![slice("2026-04", 0, 2)]);
    }

    #[test]
    fn page_past_the_end_is_empty_but_reports_totals() {
        let plan = plan_page(SAMPLE, 3, 10).unwrap();
        assert!(plan.is_empty());
        assert_eq!((plan.total_rows, plan.total_pages, plan.row_count()), (12, 2, 0));
        assert!(!plan.has_next_page());
    }

    #[test]
    fn empty_routes_never_appear() {
        let counts = [("2026-07", 0), ("2026-06", 2), ("2026-05", 0), ("2026-04", 3)];
        let plan = plan_page(counts, 1, 4).unwrap();
        assert_eq!(plan.slices, vec![slice("2026-06", 0, 2), slice("2026-04", 0, 2)]);
        let plan = plan_page(counts, 2, 2).unwrap();
        assert_eq!(plan.slices, vec![slice("2026-04", 0, 2)]);
    }

    #[test]
    fn no_routes_or_no_rows_give_zero_pages() {
        let plan = plan_page(Vec::<(String, u64)>::new(), 1, 10).unwrap();
        assert_eq!((plan.total_rows, plan.total_pages), (0, 0));
        assert!(plan.is_empty());
        let plan = plan_page([("2026-06", 0)], 1, 10).unwrap();
        assert_eq!((plan.total_rows, plan.total_pages), (0, 0));
    }

    #[test]
    fn zero_page_number_or_size_is_rejected() {
        let err = plan_page(SAMPLE, 0, 10).unwrap_err();
        assert!(
            matches!(
                err,
                Error::InvalidArgument {
                    name: "page_number",
                    ..
                }
            ),
            "{err}"
        );
        let err = plan_page(SAMPLE, 1, 0).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument { name: "page_size", .. }), "{err}");
    }

    #[test]
    fn duplicate_route_key_is_rejected() {
        let err = plan_page([("2026-06", 1), ("2026-06", 2)], 1, 10).unwrap_err();
        assert!(err.to_string().contains("'2026-06'"), "{err}");
    }

    #[test]
    fn huge_inputs_do_not_overflow() {
        let plan = plan_page([("a", u64::MAX)], u64::MAX, u64::MAX).unwrap();
        assert!(plan.is_empty());
        assert_eq!(plan.total_pages, 1);

        let plan = plan_page([("a", u64::MAX - 1), ("b", 1)], 2, u64::MAX - 1).unwrap();
        assert_eq!(plan.slices, vec![slice("b", 0, 1)]);
        assert_eq!(plan.total_pages, 2);

        let err = plan_page([("a", u64::MAX), ("b", 1)], 1, 10).unwrap_err();
        assert!(
            matches!(
                err,
                Error::InvalidArgument {
                    name: "route_counts",
                    ..
                }
            ),
            "{err}"
        );
    }
}
