//! `time` types (feature `time`), stored as sqlx's SQLite driver stores them, so a file written by
//! either reads back in the other:
//!
//! | Rust | stored as `TEXT` |
//! |---|---|
//! | `OffsetDateTime` | RFC 3339, `2026-06-01T12:30:00.5+02:00` |
//! | `PrimitiveDateTime` | `2026-06-01 12:30:00.5` |
//! | `Date` | `2026-06-01` |
//! | `Time` | `12:30:00.5` |
//!
//! Date-times also decode from the other text forms SQLite's date functions write (`T` or space
//! between date and time, seconds and fractions optional, `Z` or an offset) and from `INTEGER`
//! Unix seconds. A form without an offset is UTC.

use sqlx_core::decode::Decode;
use sqlx_core::encode::{Encode, IsNull};
use sqlx_core::error::BoxDynError;
use sqlx_core::types::Type;
use time::format_description::BorrowedFormatItem;
use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{Date, OffsetDateTime, PrimitiveDateTime, Time};

use super::{mismatch, text};
use crate::client::Value;
use crate::driver::{Shardlite, ShardliteArgumentBuffer, ShardliteTypeInfo, ShardliteValueRef};

const DATE_TIME: &[BorrowedFormatItem<'_>] =
    format_description!("[year]-[month]-[day] [hour]:[minute]:[second].[subsecond]");
const DATE: &[BorrowedFormatItem<'_>] = format_description!("[year]-[month]-[day]");
const TIME: &[BorrowedFormatItem<'_>] = format_description!("[hour]:[minute]:[second].[subsecond]");

/// Date-times without an offset that decode, tried in order after [`DATE_TIME`].
const DATE_TIMES_READ: &[&[BorrowedFormatItem<'_>]] = &[
    format_description!(
        "[year]-[month]-[day] [hour]:[minute][optional [:[second]]][optional [.[subsecond]]][optional [Z]]"
    ),
    format_description!(
        "[year]-[month]-[day]T[hour]:[minute][optional [:[second]]][optional [.[subsecond]]][optional [Z]]"
    ),
];

/// Date-times with a numeric offset that decode, after RFC 3339.
const OFFSET_DATE_TIMES_READ: &[&[BorrowedFormatItem<'_>]] = &[
    format_description!(
        "[year]-[month]-[day] [hour]:[minute][optional [:[second]]][optional [.[subsecond]]][offset_hour sign:mandatory]:[offset_minute]"
    ),
    format_description!(
        "[year]-[month]-[day]T[hour]:[minute][optional [:[second]]][optional [.[subsecond]]][offset_hour sign:mandatory]:[offset_minute]"
    ),
];

/// Times that decode, in order.
const TIMES_READ: &[&[BorrowedFormatItem<'_>]] = &[
    TIME,
    format_description!("[hour]:[minute]:[second]"),
    format_description!("[hour]:[minute]"),
];

fn push_text(buf: &mut ShardliteArgumentBuffer, text: String) -> Result<IsNull, BoxDynError> {
    buf.push(Value::Text(text));
    Ok(IsNull::No)
}

fn date_time_text(text: &str) -> Option<PrimitiveDateTime> {
    std::iter::once(DATE_TIME)
        .chain(DATE_TIMES_READ.iter().copied())
        .find_map(|format| PrimitiveDateTime::parse(text, format).ok())
}

fn offset_date_time(value: ShardliteValueRef<'_>) -> Result<OffsetDateTime, BoxDynError> {
    match value.value() {
        Value::Text(text) => OffsetDateTime::parse(text, &Rfc3339)
            .ok()
            .or_else(|| {
                OFFSET_DATE_TIMES_READ
                    .iter()
                    .find_map(|format| OffsetDateTime::parse(text, format).ok())
            })
            .or_else(|| date_time_text(text).map(PrimitiveDateTime::assume_utc))
            .ok_or_else(|| format!("invalid date-time text '{text}'").into()),
        Value::Integer(seconds) => Ok(OffsetDateTime::from_unix_timestamp(*seconds)?),
        other => Err(mismatch("a date-time (TEXT or INTEGER)", other)),
    }
}

fn date_time_compatible(ty: &ShardliteTypeInfo) -> bool {
    *ty == ShardliteTypeInfo::TEXT || ty.is_integer()
}

impl Type<Shardlite> for OffsetDateTime {
    fn type_info() -> ShardliteTypeInfo {
        ShardliteTypeInfo::TEXT
    }
    fn compatible(ty: &ShardliteTypeInfo) -> bool {
        date_time_compatible(ty)
    }
}

impl Encode<'_, Shardlite> for OffsetDateTime {
    fn encode_by_ref(&self, buf: &mut ShardliteArgumentBuffer) -> Result<IsNull, BoxDynError> {
        push_text(buf, self.format(&Rfc3339)?)
    }
}

impl<'r> Decode<'r, Shardlite> for OffsetDateTime {
    fn decode(value: ShardliteValueRef<'r>) -> Result<Self, BoxDynError> {
        offset_date_time(value)
    }
}

impl Type<Shardlite> for PrimitiveDateTime {
    fn type_info() -> ShardliteTypeInfo {
        ShardliteTypeInfo::TEXT
    }
    fn compatible(ty: &ShardliteTypeInfo) -> bool {
        date_time_compatible(ty)
    }
}

impl Encode<'_, Shardlite> for PrimitiveDateTime {
    fn encode_by_ref(&self, buf: &mut ShardliteArgumentBuffer) -> Result<IsNull, BoxDynError> {
        push_text(buf, self.format(DATE_TIME)?)
    }
}

impl<'r> Decode<'r, Shardlite> for PrimitiveDateTime {
    fn decode(value: ShardliteValueRef<'r>) -> Result<Self, BoxDynError> {
        match value.value() {
            Value::Text(text) => date_time_text(text).ok_or_else(|| format!("invalid date-time text '{text}'").into()),
            Value::Integer(_) => {
                let at = offset_date_time(value)?;
                Ok(PrimitiveDateTime::new(at.date(), at.time()))
            }
            other => Err(mismatch("a date-time (TEXT or INTEGER)", other)),
        }
    }
}

impl Type<Shardlite> for Date {
    fn type_info() -> ShardliteTypeInfo {
        ShardliteTypeInfo::TEXT
    }
}

impl Encode<'_, Shardlite> for Date {
    fn encode_by_ref(&self, buf: &mut ShardliteArgumentBuffer) -> Result<IsNull, BoxDynError> {
        push_text(buf, self.format(DATE)?)
    }
}

impl<'r> Decode<'r, Shardlite> for Date {
    fn decode(value: ShardliteValueRef<'r>) -> Result<Self, BoxDynError> {
        let text = text(value, "a date (TEXT)")?;
        Date::parse(text, DATE).map_err(|err| format!("invalid date text '{text}': {err}").into())
    }
}

impl Type<Shardlite> for Time {
    fn type_info() -> ShardliteTypeInfo {
        ShardliteTypeInfo::TEXT
    }
}

impl Encode<'_, Shardlite> for Time {
    fn encode_by_ref(&self, buf: &mut ShardliteArgumentBuffer) -> Result<IsNull, BoxDynError> {
        push_text(buf, self.format(TIME)?)
    }
}

impl<'r> Decode<'r, Shardlite> for Time {
    fn decode(value: ShardliteValueRef<'r>) -> Result<Self, BoxDynError> {
        let text = text(value, "a time (TEXT)")?;
        TIMES_READ
            .iter()
            .find_map(|format| Time::parse(text, format).ok())
            .ok_or_else(|| format!("invalid time text '{text}'").into())
    }
}

#[cfg(test)]
mod tests {
    use time::macros::{date, datetime, time};

    use super::*;

    fn encoded<T: for<'q> Encode<'q, Shardlite>>(value: T) -> Value {
        let mut buf = ShardliteArgumentBuffer::default();
        assert!(matches!(value.encode_by_ref(&mut buf).unwrap(), IsNull::No));
        buf.into_values().remove(0)
    }

    fn decode<T: for<'r> Decode<'r, Shardlite>>(value: &Value) -> Result<T, BoxDynError> {
        T::decode(ShardliteValueRef(value))
    }

    #[test]
    fn stored_forms_are_sqlx_sqlites() {
        let text = |s: &str| Value::Text(s.to_owned());
        assert_eq!(
            encoded(datetime!(2026-06-01 12:30:00.5 +02:00)),
            text("2026-06-01T12:30:00.5+02:00")
        );
        assert_eq!(
            encoded(datetime!(2026-06-01 12:30:00 UTC)),
            text("2026-06-01T12:30:00Z")
        );
        assert_eq!(
            encoded(datetime!(2026-06-01 12:30:00.25)),
            text("2026-06-01 12:30:00.25")
        );
        assert_eq!(encoded(datetime!(2026-06-01 12:30:00)), text("2026-06-01 12:30:00.0"));
        assert_eq!(encoded(date!(2026 - 06 - 01)), text("2026-06-01"));
        assert_eq!(encoded(time!(07:05:09.125)), text("07:05:09.125"));
    }

    #[test]
    fn sqlite_forms_decode() {
        let text = |s: &str| Value::Text(s.to_owned());
        assert_eq!(
            decode::<OffsetDateTime>(&text("2026-06-01 12:30:00")).unwrap(),
            datetime!(2026-06-01 12:30:00 UTC)
        );
        assert_eq!(
            decode::<OffsetDateTime>(&text("2026-06-01 12:30+01:00")).unwrap(),
            datetime!(2026-06-01 12:30:00 +01:00)
        );
        assert_eq!(
            decode::<OffsetDateTime>(&Value::Integer(0)).unwrap(),
            OffsetDateTime::UNIX_EPOCH
        );
        assert_eq!(
            decode::<PrimitiveDateTime>(&text("2026-06-01T12:30:15Z")).unwrap(),
            datetime!(2026-06-01 12:30:15)
        );
        assert_eq!(decode::<Time>(&text("12:30")).unwrap(), time!(12:30));
        let err = decode::<Date>(&text("June")).unwrap_err();
        assert!(err.to_string().contains("June"), "{err}");
        assert!(decode::<Date>(&Value::Integer(3)).is_err());
    }
}
