//! Month route keys (`yyyy-MM`) for dates and date ranges.

use time::Date;

use crate::error::{Error, Result};

/// The order [`month_route_keys`] lists months in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MonthOrder {
    /// Latest month first: the order of an order-history view (`order_date DESC`).
    #[default]
    NewestFirst,
    /// Earliest month first: the order of a report or an `order_date ASC` view.
    OldestFirst,
}

/// The `yyyy-MM` month route key of a date, for example `2026-06` for 2026-06-15.
///
/// ```
/// use time::macros::date;
///
/// assert_eq!(shardlite::paging::month_route_key(date!(2026 - 06 - 15))?, "2026-06");
/// # Ok::<(), shardlite::Error>(())
/// ```
///
/// # Errors
///
/// [`Error::InvalidArgument`] for a year outside 0000..=9999, which `yyyy` cannot spell.
pub fn month_route_key(date: Date) -> Result<String> {
    let index = month_index("date", date)?;
    Ok(key_for_index(index))
}

/// The `yyyy-MM` route keys of every month that `from..=to` touches, in `order`.
///
/// The first and last months are usually partial, so each route's query must still filter on
/// the date range (`order_date >= ? AND order_date < ?`) as well as the route key.
/// `max_months` caps the fan-out: a range that spans more months is rejected rather than
/// turned into hundreds of route queries.
///
/// ```
/// use shardlite::paging::{month_route_keys, MonthOrder};
/// use time::macros::date;
///
/// let newest_first = month_route_keys(date!(2026 - 04 - 10), date!(2026 - 06 - 01), MonthOrder::NewestFirst, 12)?;
/// assert_eq!(newest_first, ["2026-06", "2026-05", "2026-04"]);
///
/// let across_new_year = month_route_keys(date!(2025 - 12 - 31), date!(2026 - 01 - 01), MonthOrder::OldestFirst, 12)?;
/// assert_eq!(across_new_year, ["2025-12", "2026-01"]);
///
/// assert!(month_route_keys(date!(2020 - 01 - 01), date!(2026 - 01 - 01), MonthOrder::NewestFirst, 24).is_err());
/// # Ok::<(), shardlite::Error>(())
/// ```
///
/// # Errors
///
/// [`Error::InvalidArgument`] when `from` is after `to`, `max_months` is 0, the range spans
/// more than `max_months` months, or a year is outside 0000..=9999.
pub fn month_route_keys(from: Date, to: Date, order: MonthOrder, max_months: usize) -> Result<Vec<String>> {
    if from > to {
        return Err(Error::invalid_argument(
            "from",
            format!("the range starts on {from}, after it ends on {to}"),
        ));
    }
    if max_months == 0 {
        return Err(Error::invalid_argument("max_months", "must be at least 1, got 0"));
    }
    let first = month_index("from", from)?;
    let last = month_index("to", to)?;
    // Both indices lie in 0..120_000, so neither the difference nor the count can overflow.
    let month_count = last - first + 1;
    let within_cap = usize::try_from(month_count).is_ok_and(|count| count <= max_months);
    if !within_cap {
        return Err(Error::invalid_argument(
            "to",
            format!("{from}..={to} spans {month_count} months, more than the limit of {max_months}"),
        ));
    }
    let keys = (first..=last).map(key_for_index);
    Ok(match order {
        MonthOrder::NewestFirst => keys.rev().collect(),
        MonthOrder::OldestFirst => keys.collect(),
    })
}

/// Months since January of year 0: `year * 12 + (month - 1)`.
fn month_index(argument: &'static str, date: Date) -> Result<i64> {
    let year = date.year();
    if !(0..=9999).contains(&year) {
        return Err(Error::invalid_argument(
            argument,
            format!("year {year} of {date} cannot be written as a yyyy-MM route key"),
        ));
    }
    Ok(i64::from(year) * 12 + i64::from(u8::from(date.month())) - 1)
}

fn key_for_index(index: i64) -> String {
    format!("{:04}-{:02}", index / 12, index % 12 + 1)
}

#[cfg(test)]
mod tests {
    use time::macros::date;

    use super::*;

    #[test]
    fn single_day_gives_its_month() {
        let keys = month_route_keys(date!(2026 - 06 - 15), date!(2026 - 06 - 15), MonthOrder::NewestFirst, 1).unwrap();
        assert_eq!(keys, ["2026-06"]);
    }

    #[test]
    fn newest_and_oldest_first_are_reverses() {
        let (from, to) = (date!(2025 - 11 - 30), date!(2026 - 02 - 01));
        let newest = month_route_keys(from, to, MonthOrder::NewestFirst, 4).unwrap();
        let oldest = month_route_keys(from, to, MonthOrder::OldestFirst, 4).unwrap();
        assert_eq!(newest, ["2026-02", "2026-01", "2025-12", "2025-11"]);
        assert_eq!(oldest.into_iter().rev().collect::<Vec<_>>(), newest);
    }

    #[test]
    fn reversed_range_is_rejected() {
        let err = month_route_keys(
            date!(2026 - 06 - 02),
            date!(2026 - 06 - 01),
            MonthOrder::NewestFirst,
            12,
        )
        .unwrap_err();
        assert!(matches!(err, Error::InvalidArgument { name: "from", .. }), "{err}");
    }

    #[test]
    fn cap_is_inclusive_and_enforced() {
        let (from, to) = (date!(2025 - 07 - 01), date!(2026 - 06 - 30));
        assert_eq!(
            month_route_keys(from, to, MonthOrder::NewestFirst, 12).unwrap().len(),
            12
        );
        let err = month_route_keys(from, to, MonthOrder::NewestFirst, 11).unwrap_err();
        assert!(err.to_string().contains("spans 12 months"), "{err}");
        let err = month_route_keys(from, to, MonthOrder::NewestFirst, 0).unwrap_err();
        assert!(
            matches!(err, Error::InvalidArgument { name: "max_months", .. }),
            "{err}"
        );
    }

    #[test]
    fn widest_range_is_capped_not_allocated() {
        let err = month_route_keys(Date::MIN, Date::MAX, MonthOrder::NewestFirst, usize::MAX).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument { name: "from", .. }), "{err}");
        let err = month_route_keys(
            date!(0000 - 01 - 01),
            date!(9999 - 12 - 31),
            MonthOrder::NewestFirst,
            1200,
        )
        .unwrap_err();
        assert!(err.to_string().contains("spans 120000 months"), "{err}");
    }

    #[test]
    fn single_key_pads_year_and_month() {
        assert_eq!(month_route_key(date!(0987 - 01 - 31)).unwrap(), "0987-01");
        assert!(month_route_key(date!(-0001 - 12 - 31)).is_err());
    }
}
