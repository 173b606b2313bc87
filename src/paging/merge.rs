//! Bounded over-fetch, then merge: one page from several routes whose rows interleave.

use std::cmp::Ordering;
use std::collections::HashSet;

use serde::Serialize;

use super::plan::duplicate_route;
use crate::error::{Error, Result};

/// What one route contributed to a [`MergedPage`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteTake {
    /// The route key.
    pub route_key: String,
    /// Rows the route returned (at most the per-route limit).
    pub rows_fetched: usize,
    /// Rows of those that are on the page: always the first `rows_taken` the route returned,
    /// so `rows_taken` is how far a per-route offset or keyset cursor advances.
    pub rows_taken: usize,
    /// Whether the route may hold rows after the ones on the page: it returned the full
    /// per-route limit, or some of its rows were left off the page.
    pub may_have_more: bool,
}

/// One page merged from several routes by [`merge_page`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergedPage<T> {
    /// The page's rows in merge order; at most `page_size`.
    pub rows: Vec<T>,
    /// One entry per route, in the order the routes were given.
    pub routes: Vec<RouteTake>,
    /// Whether rows after this page may exist in any route. `false` means they certainly do
    /// not; `true` can be a false alarm when a route held exactly the per-route limit.
    pub more_rows_may_exist: bool,
}

/// Merges rows fetched from several routes (at most `per_route_limit` from each, each list
/// already in merge order) into one page of at most `page_size` rows.
///
/// `compare` is the page order: the sort key and its tie-breakers, for example `order_date`
/// descending, then `order_number` ascending. Rows it calls equal are further ordered by
/// route key (ascending byte order) and then by their position in their route's list, so the
/// page is the same whatever order the routes are given in.
///
/// Each route's query must use the same order as `compare` and `LIMIT per_route_limit`, with
/// `per_route_limit >= page_size`; then the page is exact: no row left unfetched can belong on
/// it. For the next page, query each route again for rows after the page's last row (a keyset
/// predicate such as `(order_date, order_number) < (?, ?)` for a descending date order) and
/// merge again, or advance per-route offsets by [`RouteTake::rows_taken`].
///
/// Reads up to `routes × per_route_limit` rows, so keep the route window small (the current
/// and previous month, a bounded date range).
///
/// # Errors
///
/// [`Error::InvalidArgument`] when `page_size` is 0, `per_route_limit < page_size`, a route key
/// appears twice, a route returned more than `per_route_limit` rows, or a route's rows are not
/// in `compare` order (its query's `ORDER BY` disagrees with `compare`, which would make the
/// page wrong).
///
/// # Example
///
/// ```
/// use shardlite::paging::merge_page;
///
/// // (order_date, order_number) rows from two routes, each newest first.
/// let june = vec![("2026-06-01", "SO-1"), ("2026-06-01", "SO-3")];
/// let may = vec![("2026-06-01", "SO-2"), ("2026-05-29", "SO-4")];
///
/// let page = merge_page([("2026-05", may), ("2026-06", june)], 3, 3, |a, b| {
///     b.0.cmp(a.0).then_with(|| a.1.cmp(b.1)) // date DESC, then number ASC
/// })?;
/// let numbers: Vec<_> = page.rows.iter().map(|row| row.1).collect();
/// assert_eq!(numbers, ["SO-1", "SO-2", "SO-3"]);
/// assert!(page.more_rows_may_exist); // SO-4 was left off
/// # Ok::<(), shardlite::Error>(())
/// ```
pub fn merge_page<T, K, I, F>(
    route_rows: I,
    page_size: usize,
    per_route_limit: usize,
    mut compare: F,
) -> Result<MergedPage<T>>
where
    I: IntoIterator<Item = (K, Vec<T>)>,
    K: AsRef<str>,
    F: FnMut(&T, &T) -> Ordering,
{
    if page_size == 0 {
        return Err(Error::invalid_argument("page_size", "must be at least 1, got 0"));
    }
    if per_route_limit < page_size {
        return Err(Error::invalid_argument(
            "per_route_limit",
            format!(
                "must be at least the page size ({page_size}), got {per_route_limit}: a route could hold \
                 unfetched rows that belong on the page"
            ),
        ));
    }

    let mut seen = HashSet::new();
    let mut routes = Vec::new();
    for (route_key, rows) in route_rows {
        let route_key = route_key.as_ref();
        if !seen.insert(route_key.to_owned()) {
            return Err(duplicate_route("route_rows", route_key));
        }
        if rows.len() > per_route_limit {
            return Err(Error::invalid_argument(
                "route_rows",
                format!(
                    "route '{route_key}' returned {} rows, more than the per-route limit of {per_route_limit}",
                    rows.len()
                ),
            ));
        }
        if let Some(at) = rows
            .windows(2)
            .position(|pair| compare(&pair[0], &pair[1]) == Ordering::Greater)
        {
            return Err(Error::invalid_argument(
                "route_rows",
                format!(
                    "rows {at} and {} of route '{route_key}' are out of order: the route query's ORDER BY must \
                     match the merge order",
                    at + 1
                ),
            ));
        }
        routes.push((route_key.to_owned(), rows.len(), rows.into_iter()));
    }

    // Ties between routes go to the smaller route key, whatever the input order.
    let mut by_route_key: Vec<usize> = (0..routes.len()).collect();
    by_route_key.sort_by(|&a, &b| routes[a].0.cmp(&routes[b].0));

    let mut taken = vec![0usize; routes.len()];
    let mut rows = Vec::with_capacity(page_size.min(routes.iter().map(|route| route.1).sum()));
    while rows.len() < page_size {
        let mut best: Option<usize> = None;
        for &candidate in &by_route_key {
            let Some(head) = routes[candidate].2.as_slice().first() else {
                continue;
            };
            let better = match best {
                None => true,
                Some(current) => routes[current]
                    .2
                    .as_slice()
                    .first()
                    .is_none_or(|best_head| compare(head, best_head) == Ordering::Less),
            };
            if better {
                best = Some(candidate);
            }
        }
        let Some(best) = best else {
            break;
        };
        let Some(row) = routes[best].2.next() else {
            break;
        };
        rows.push(row);
        taken[best] += 1;
    }

    let routes: Vec<RouteTake> = routes
        .into_iter()
        .zip(taken)
        .map(|((route_key, rows_fetched, _), rows_taken)| RouteTake {
            route_key,
            rows_fetched,
            rows_taken,
            may_have_more: rows_fetched == per_route_limit || rows_taken < rows_fetched,
        })
        .collect();
    let more_rows_may_exist = routes.iter().any(|route| route.may_have_more);
    Ok(MergedPage {
        rows,
        routes,
        more_rows_may_exist,
    })
}

/// [`merge_page`] with the order given as a sort key: rows are ordered by `sort_key`
/// ascending; wrap a part in [`std::cmp::Reverse`] for descending order and put tie-breakers
/// after it in a tuple.
///
/// ```
/// use std::cmp::Reverse;
/// use shardlite::paging::merge_page_by_key;
///
/// let june = vec![("2026-06-01", 1003)];
/// let may = vec![("2026-05-29", 1005)];
/// let page = merge_page_by_key([("2026-06", june), ("2026-05", may)], 10, 10, |row| (Reverse(row.0), row.1))?;
/// assert_eq!(page.rows, [("2026-06-01", 1003), ("2026-05-29", 1005)]);
/// assert!(!page.more_rows_may_exist);
/// # Ok::<(), shardlite::Error>(())
/// ```
///
/// # Errors
///
/// As [`merge_page`].
pub fn merge_page_by_key<T, K, I, S, F>(
    route_rows: I,
    page_size: usize,
    per_route_limit: usize,
    mut sort_key: F,
) -> Result<MergedPage<T>>
where
    I: IntoIterator<Item = (K, Vec<T>)>,
    K: AsRef<str>,
    S: Ord,
    F: FnMut(&T) -> S,
{
    merge_page(route_rows, page_size, per_route_limit, |a, b| {
        sort_key(a).cmp(&sort_key(b))
    })
}

#[cfg(test)]
mod tests {
    use std::cmp::Reverse;

    use super::*;

    /// (order_date, order_number, tag): the tag tells rows with equal sort keys apart.
    type Row = (&'static str, u32, &'static str);

    fn date_desc_number_asc(a: &Row, b: &Row) -> Ordering {
        b.0.cmp(a.0).then_with(|| a.1.cmp(&b.1))
    }

    fn tags(page: &MergedPage<Row>) -> Vec<&'static str> {
        page.rows.iter().map(|row| row.2).collect()
    }

    #[test]
    fn merges_interleaved_routes_and_trims_to_the_page() {
        let east = vec![
            ("2026-06-03", 1, "e1"),
            ("2026-06-01", 4, "e2"),
            ("2026-05-20", 6, "e3"),
        ];
        let west = vec![
            ("2026-06-02", 2, "w1"),
            ("2026-06-01", 3, "w2"),
            ("2026-05-01", 7, "w3"),
        ];
        let page = merge_page([("east", east), ("west", west)], 4, 4, date_desc_number_asc).unwrap();
        assert_eq!(tags(&page), ["e1", "w1", "w2", "e2"]);
        assert!(page.more_rows_may_exist);
        assert_eq!(page.routes[0].rows_taken, 2);
        assert_eq!(page.routes[1].rows_taken, 2);
        assert!(page.routes.iter().all(|route| route.may_have_more));
    }

    #[test]
    fn full_sort_key_ties_go_to_the_smaller_route_key_whatever_the_input_order() {
        let a = vec![("2026-06-01", 1, "a1"), ("2026-06-01", 1, "a2")];
        let b = vec![("2026-06-01", 1, "b1")];
        let c = vec![("2026-06-01", 1, "c1")];
        let expected = ["a1", "a2", "b1", "c1"];
        let orders = [["a", "b", "c"], ["c", "b", "a"], ["b", "c", "a"], ["c", "a", "b"]];
        for order in orders {
            let input: Vec<_> = order
                .iter()
                .map(|&key| {
                    let rows = match key {
                        "a" => a.clone(),
                        "b" => b.clone(),
                        _ => c.clone(),
                    };
                    (key, rows)
                })
                .collect();
            let page = merge_page(input, 4, 4, date_desc_number_asc).unwrap();
            assert_eq!(tags(&page), expected, "input order {order:?}");
        }
    }

    #[test]
    fn exhausted_routes_mean_no_more_rows() {
        let page = merge_page(
            [("2026-06", vec![("2026-06-01", 1, "j")]), ("2026-05", vec![])],
            10,
            10,
            date_desc_number_asc,
        )
        .unwrap();
        assert_eq!(tags(&page), ["j"]);
        assert!(!page.more_rows_may_exist);
        assert_eq!(page.routes[1].rows_fetched, 0);
    }

    #[test]
    fn a_route_at_its_limit_may_have_more() {
        let rows = vec![("2026-06-02", 1, "x"), ("2026-06-01", 2, "y")];
        let page = merge_page([("2026-06", rows)], 2, 2, date_desc_number_asc).unwrap();
        assert_eq!(page.rows.len(), 2);
        assert!(page.more_rows_may_exist);
    }

    #[test]
    fn by_key_matches_comparator() {
        let east = vec![("2026-06-03", 1, "e1"), ("2026-06-01", 4, "e2")];
        let west = vec![("2026-06-02", 2, "w1"), ("2026-06-01", 3, "w2")];
        let page = merge_page_by_key([("east", east), ("west", west)], 3, 5, |row| (Reverse(row.0), row.1)).unwrap();
        assert_eq!(tags(&page), ["e1", "w1", "w2"]);
    }

    #[test]
    fn bad_bounds_are_rejected() {
        let none: Vec<(&str, Vec<Row>)> = Vec::new();
        let err = merge_page(none.clone(), 0, 10, date_desc_number_asc).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument { name: "page_size", .. }), "{err}");
        let err = merge_page(none, 10, 5, date_desc_number_asc).unwrap_err();
        assert!(
            matches!(
                err,
                Error::InvalidArgument {
                    name: "per_route_limit",
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn too_many_rows_from_a_route_is_rejected() {
        let rows = vec![("2026-06-03", 1, "a"), ("2026-06-02", 2, "b"), ("2026-06-01", 3, "c")];
        let err = merge_page([("2026-06", rows)], 2, 2, date_desc_number_asc).unwrap_err();
        assert!(err.to_string().contains("returned 3 rows"), "{err}");
    }

    #[test]
    fn rows_out_of_merge_order_are_rejected() {
        let rows = vec![("2026-06-01", 1, "a"), ("2026-06-03", 2, "b")];
        let err = merge_page([("2026-06", rows)], 2, 2, date_desc_number_asc).unwrap_err();
        assert!(err.to_string().contains("out of order"), "{err}");
    }

    #[test]
    fn duplicate_routes_are_rejected() {
        let err = merge_page(
            [("2026-06", Vec::<Row>::new()), ("2026-06", Vec::new())],
            1,
            1,
            date_desc_number_asc,
        )
        .unwrap_err();
        assert!(err.to_string().contains("more than once"), "{err}");
    }
}
