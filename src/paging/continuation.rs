//! Cursor-based continuation: fill a page route by route without counting any route.

use std::collections::HashSet;

use super::cursor::{PageCursor, check_route_key};
use super::plan::{RouteSlice, duplicate_route};
use crate::error::{Error, Result};

/// Fills one page by reading ordered routes in turn from a [`PageCursor`] (or from the start),
/// and yields the cursor for the page after it.
///
/// The caller runs the loop: ask [`next_slice`](Self::next_slice) what to read, read it
/// (`LIMIT limit OFFSET offset` on that route, in page order), report how many rows came back
/// with [`record_rows`](Self::record_rows), and repeat until `next_slice` returns `None`.
/// A route that returns fewer rows than asked is finished and the next route is read from
/// offset 0; a route that returns all of them filled the page. No route is counted, which
/// suits infinite scroll; numbered pages ("page 4 of 9") need [`plan_page`](super::plan_page).
///
/// Like [`plan_page`](super::plan_page), this assumes each route's rows all come before the
/// next route's rows in page order. When the page fills exactly at the end of the last route,
/// the next cursor still points there and the page after it is empty.
///
/// ```
/// use shardlite::paging::{ContinuationFill, CursorCodec};
///
/// # fn load(route_key: &str, offset: u64, limit: u64) -> Vec<u64> {
/// #     let rows: u64 = match route_key { "2026-06" => 6, "2026-05" => 4, _ => 2 };
/// #     (offset..rows.min(offset + limit)).collect()
/// # }
/// let routes = ["2026-06", "2026-05", "2026-04"];
/// let codec = CursorCodec::new(b"0123456789abcdef0123456789abcdef", 1)?;
///
/// // First request: no token.
/// let mut fill = ContinuationFill::start(routes, 10)?;
/// let mut page = Vec::new();
/// while let Some(slice) = fill.next_slice() {
///     let rows = load(&slice.route_key, slice.offset, slice.limit);
///     fill.record_rows(rows.len())?;
///     page.extend(rows);
/// }
/// assert_eq!(page.len(), 10);
/// let token = fill.next_cursor().map(|cursor| codec.encode(&cursor)).expect("more pages");
///
/// // Next request: resume from the client's token.
/// let mut fill = ContinuationFill::resume(routes, &codec.decode(&token)?)?;
/// let slice = fill.next_slice().expect("a read");
/// assert_eq!((slice.route_key.as_str(), slice.offset, slice.limit), ("2026-05", 4, 10));
/// # Ok::<(), shardlite::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContinuationFill {
    route_keys: Vec<String>,
    page_size: u64,
    /// Index into `route_keys` of the route being read.
    position: usize,
    /// Rows of that route already delivered, on this page or earlier ones.
    route_offset: u64,
    rows_filled: u64,
    /// The limit of the slice handed out and not yet recorded.
    outstanding: Option<u64>,
}

impl ContinuationFill {
    /// Fills the first page over `route_keys` (in page order) with pages of `page_size` rows.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `page_size` is 0, or a route key is empty, listed twice,
    /// or longer than [`PageCursor::MAX_ROUTE_KEY_BYTES`].
    pub fn start<I, K>(route_keys: I, page_size: u64) -> Result<Self>
    where
        I: IntoIterator<Item = K>,
        K: AsRef<str>,
    {
        if page_size == 0 {
            return Err(Error::invalid_argument("page_size", "must be at least 1, got 0"));
        }
        Ok(Self {
            route_keys: collect_route_keys(route_keys)?,
            page_size,
            position: 0,
            route_offset: 0,
            rows_filled: 0,
            outstanding: None,
        })
    }

    /// Fills the page that `cursor` points at, over the same listing's `route_keys`.
    ///
    /// The cursor's route is found by key, so routes added before it (a new month at the head
    /// of a newest-first list) do not shift where the page resumes.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidCursor`] when the cursor's route key is not among `route_keys`;
    /// [`Error::InvalidArgument`] for route keys that [`start`](Self::start) rejects.
    pub fn resume<I, K>(route_keys: I, cursor: &PageCursor) -> Result<Self>
    where
        I: IntoIterator<Item = K>,
        K: AsRef<str>,
    {
        let route_keys = collect_route_keys(route_keys)?;
        let position = route_keys
            .iter()
            .position(|key| *key == cursor.route_key)
            .ok_or_else(|| Error::InvalidCursor {
                reason: format!(
                    "the token resumes route '{}', which is not one of this listing's {} routes",
                    cursor.route_key,
                    route_keys.len()
                ),
            })?;
        Ok(Self {
            route_keys,
            page_size: cursor.page_size,
            position,
            route_offset: cursor.route_offset,
            rows_filled: 0,
            outstanding: None,
        })
    }

    /// The next read, or `None` when the page is full or every route is finished.
    ///
    /// Until [`record_rows`](Self::record_rows) reports the read, this returns the same slice.
    pub fn next_slice(&mut self) -> Option<RouteSlice> {
        let route_key = self.route_keys.get(self.position)?;
        let limit = self.page_size - self.rows_filled;
        if limit == 0 {
            return None;
        }
        self.outstanding = Some(limit);
        Some(RouteSlice {
            route_key: route_key.clone(),
            offset: self.route_offset,
            limit,
        })
    }

    /// Reports how many rows the read from [`next_slice`](Self::next_slice) returned.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when no read is outstanding, or `rows_returned` exceeds its
    /// limit (the query ignored `LIMIT`); the state is unchanged.
    pub fn record_rows(&mut self, rows_returned: usize) -> Result<()> {
        let Some(limit) = self.outstanding else {
            return Err(Error::invalid_argument(
                "rows_returned",
                "no read is outstanding: call next_slice before record_rows",
            ));
        };
        let rows = u64::try_from(rows_returned)
            .ok()
            .filter(|&rows| rows <= limit)
            .ok_or_else(|| {
                Error::invalid_argument(
                    "rows_returned",
                    format!("the read asked for at most {limit} rows but {rows_returned} were reported"),
                )
            })?;
        // A short read finished the route; a full one filled the page inside it.
        let (position, route_offset) = if rows < limit {
            (self.position + 1, 0)
        } else {
            let offset = self
                .route_offset
                .checked_add(rows)
                .ok_or_else(|| Error::invalid_argument("rows_returned", "the route offset would exceed u64::MAX"))?;
            (self.position, offset)
        };
        self.outstanding = None;
        self.rows_filled += rows;
        self.position = position;
        self.route_offset = route_offset;
        Ok(())
    }

    /// Rows recorded on this page so far.
    pub fn rows_filled(&self) -> u64 {
        self.rows_filled
    }

    /// Rows per page.
    pub fn page_size(&self) -> u64 {
        self.page_size
    }

    /// The cursor for the rows after those recorded so far, or `None` when every route is
    /// finished. Call it once `next_slice` returns `None`.
    pub fn next_cursor(&self) -> Option<PageCursor> {
        let route_key = self.route_keys.get(self.position)?;
        Some(PageCursor {
            route_key: route_key.clone(),
            route_offset: self.route_offset,
            page_size: self.page_size,
        })
    }
}

fn collect_route_keys<I, K>(route_keys: I) -> Result<Vec<String>>
where
    I: IntoIterator<Item = K>,
    K: AsRef<str>,
{
    let mut seen = HashSet::new();
    let mut keys = Vec::new();
    for route_key in route_keys {
        let route_key = route_key.as_ref();
        check_route_key("route_keys", route_key)?;
        if !seen.insert(route_key.to_owned()) {
            return Err(duplicate_route("route_keys", route_key));
        }
        keys.push(route_key.to_owned());
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROUTES: [(&str, u64); 3] = [("2026-06", 6), ("2026-05", 4), ("2026-04", 2)];

    /// Runs one page against in-memory counts; returns the reads and the next cursor.
    fn fill_page(mut fill: ContinuationFill) -> (Vec<(String, u64, u64)>, u64, Option<PageCursor>) {
        let mut reads = Vec::new();
        while let Some(slice) = fill.next_slice() {
            let count = ROUTES
                .iter()
                .find(|(key, _)| *key == slice.route_key)
                .map_or(0, |r| r.1);
            let returned = count.saturating_sub(slice.offset).min(slice.limit);
            reads.push((slice.route_key, slice.offset, returned));
            fill.record_rows(usize::try_from(returned).unwrap()).unwrap();
        }
        (reads, fill.rows_filled(), fill.next_cursor())
    }

    fn keys() -> impl Iterator<Item = &'static str> {
        ROUTES.iter().map(|route| route.0)
    }

    #[test]
    fn walks_pages_until_the_routes_run_out() {
        let (reads, filled, cursor) = fill_page(ContinuationFill::start(keys(), 5).unwrap());
        assert_eq!(reads, [("2026-06".to_owned(), 0, 5)]);
        assert_eq!(filled, 5);
        let cursor = cursor.unwrap();
        assert_eq!(
            (cursor.route_key(), cursor.route_offset(), cursor.page_size()),
            ("2026-06", 5, 5)
        );

        let (reads, filled, cursor) = fill_page(ContinuationFill::resume(keys(), &cursor).unwrap());
        assert_eq!(reads, [("2026-06".to_owned(), 5, 1), ("2026-05".to_owned(), 0, 4)]);
        assert_eq!(filled, 5);
        let cursor = cursor.unwrap();
        assert_eq!((cursor.route_key(), cursor.route_offset()), ("2026-05", 4));

        let (reads, filled, cursor) = fill_page(ContinuationFill::resume(keys(), &cursor).unwrap());
        assert_eq!(reads, [("2026-05".to_owned(), 4, 0), ("2026-04".to_owned(), 0, 2)]);
        assert_eq!(filled, 2);
        assert_eq!(cursor, None);
    }

    #[test]
    fn resume_finds_the_route_by_key_after_a_new_month_starts() {
        let cursor = PageCursor::new("2026-05", 4, 10).unwrap();
        let mut fill = ContinuationFill::resume(["2026-07", "2026-06", "2026-05", "2026-04"], &cursor).unwrap();
        let slice = fill.next_slice().unwrap();
        assert_eq!((slice.route_key.as_str(), slice.offset), ("2026-05", 4));
    }

    #[test]
    fn resume_rejects_a_route_not_in_the_listing() {
        let cursor = PageCursor::new("2025-01", 0, 10).unwrap();
        let err = ContinuationFill::resume(keys(), &cursor).unwrap_err();
        assert!(matches!(err, Error::InvalidCursor { .. }), "{err}");
    }

    #[test]
    fn next_slice_repeats_until_recorded() {
        let mut fill = ContinuationFill::start(keys(), 3).unwrap();
        assert_eq!(fill.next_slice(), fill.next_slice());
    }

    #[test]
    fn misuse_is_rejected_without_changing_state() {
        let mut fill = ContinuationFill::start(keys(), 3).unwrap();
        assert!(fill.record_rows(0).is_err(), "nothing outstanding");
        let slice = fill.next_slice().unwrap();
        let before = fill.clone();
        assert!(fill.record_rows(4).is_err(), "more rows than the limit");
        assert_eq!(fill, before);
        assert_eq!(fill.next_slice(), Some(slice));
    }

    #[test]
    fn bad_routes_and_page_size_are_rejected() {
        assert!(ContinuationFill::start(keys(), 0).is_err());
        assert!(ContinuationFill::start(["2026-06", ""], 10).is_err());
        assert!(ContinuationFill::start(["2026-06", "2026-06"], 10).is_err());
    }

    #[test]
    fn no_routes_means_no_reads_and_no_cursor() {
        let mut fill = ContinuationFill::start(Vec::<String>::new(), 10).unwrap();
        assert_eq!(fill.next_slice(), None);
        assert_eq!(fill.next_cursor(), None);
    }
}
