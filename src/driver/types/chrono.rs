//! `chrono` types (feature `chrono`), stored as sqlx's SQLite driver stores them, so a file written
//! by either reads back in the other:
//!
//! | Rust | stored as `TEXT` |
//! |---|---|
//! | `DateTime<Utc>`, `DateTime<FixedOffset>`, `DateTime<Local>` | RFC 3339, `2026-06-01T12:30:00.500+02:00` (`Z` never used: `+00:00`) |
//! | `NaiveDateTime` | `2026-06-01 12:30:00.500` |
//! | `NaiveDate` | `2026-06-01` |
//! | `NaiveTime` | `12:30:00.500` |
//!
//! Date-times also decode from the other text forms SQLite's date functions write, from
//! `INTEGER` Unix seconds and from `REAL` Julian days. A form without an offset is UTC.

use std::fmt::Display;

use chrono::{DateTime, FixedOffset, Local, NaiveDate, NaiveDateTime, NaiveTime, Offset, SecondsFormat, TimeZone, Utc};
use sqlx_core::decode::Decode;
use sqlx_core::encode::{Encode, IsNull};
use sqlx_core::error::BoxDynError;
use sqlx_core::types::Type;

use super::{mismatch, text};
use crate::client::Value;
use crate::driver::{Shardlite, ShardliteArgumentBuffer, ShardliteTypeInfo, ShardliteValueRef};

/// Text forms a date-time decodes from after RFC 3339, most likely first.
const DATE_TIMES_READ: &[&str] = &[
    "%F %T%.f",
    "%F %R",
    "%F %RZ",
    "%F %R%:z",
    "%F %T%.fZ",
    "%F %T%.f%:z",
    "%FT%R",
    "%FT%RZ",
    "%FT%R%:z",
    "%FT%T%.f",
    "%FT%T%.fZ",
    "%FT%T%.f%:z",
];

/// Text forms a time decodes from, in order.
const TIMES_READ: &[&str] = &["%T%.f", "%R", "%RZ", "%T%.fZ", "%R%:z", "%T%.f%:z"];

fn push_text(buf: &mut ShardliteArgumentBuffer, text: String) -> Result<IsNull, BoxDynError> {
    buf.push(Value::Text(text));
    Ok(IsNull::No)
}

fn utc() -> FixedOffset {
    Utc.fix()
}

fn date_time(value: ShardliteValueRef<'_>) -> Result<DateTime<FixedOffset>, BoxDynError> {
    let found = match value.value() {
        Value::Text(text) => DateTime::parse_from_rfc3339(text).ok().or_else(|| {
            DATE_TIMES_READ.iter().find_map(|format| {
                DateTime::parse_from_str(text, format).ok().or_else(|| {
                    NaiveDateTime::parse_from_str(text, format)
                        .ok()
                        .map(|naive| utc().from_utc_datetime(&naive))
                })
            })
        }),
        Value::Integer(seconds) => utc().timestamp_opt(*seconds, 0).single(),
        Value::Real(julian_days) => from_julian_days(*julian_days),
        other => return Err(mismatch("a date-time (TEXT, INTEGER or REAL)", other)),
    };
    found.ok_or_else(|| format!("invalid date-time {}", shown(value.value())).into())
}

fn shown(value: &Value) -> String {
    match value {
        Value::Text(text) => format!("text '{text}'"),
        other => format!("{other:?}"),
    }
}

/// A Julian day number (SQLite's `julianday()`) as a date-time.
fn from_julian_days(days: f64) -> Option<DateTime<FixedOffset>> {
    const UNIX_EPOCH_JULIAN_DAY: f64 = 2_440_587.5;
    let seconds = (days - UNIX_EPOCH_JULIAN_DAY) * 86_400.0;
    if !seconds.is_finite() || seconds.abs() > 1e15 {
        return None;
    }
    // Bounded and finite above; the fraction is below one second.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let (whole, nanos) = (seconds.trunc() as i64, (seconds.fract().abs() * 1e9) as u32);
    utc().timestamp_opt(whole, nanos).single()
}

fn date_time_compatible(ty: &ShardliteTypeInfo) -> bool {
    *ty == ShardliteTypeInfo::TEXT || *ty == ShardliteTypeInfo::REAL || ty.is_integer()
}

impl<Tz: TimeZone> Type<Shardlite> for DateTime<Tz> {
    fn type_info() -> ShardliteTypeInfo {
        ShardliteTypeInfo::TEXT
    }
    fn compatible(ty: &ShardliteTypeInfo) -> bool {
        date_time_compatible(ty)
    }
}

impl<Tz: TimeZone> Encode<'_, Shardlite> for DateTime<Tz>
where
    Tz::Offset: Display,
{
    fn encode_by_ref(&self, buf: &mut ShardliteArgumentBuffer) -> Result<IsNull, BoxDynError> {
        push_text(buf, self.to_rfc3339_opts(SecondsFormat::AutoSi, false))
    }
}

impl<'r> Decode<'r, Shardlite> for DateTime<FixedOffset> {
    fn decode(value: ShardliteValueRef<'r>) -> Result<Self, BoxDynError> {
        date_time(value)
    }
}

impl<'r> Decode<'r, Shardlite> for DateTime<Utc> {
    fn decode(value: ShardliteValueRef<'r>) -> Result<Self, BoxDynError> {
        Ok(date_time(value)?.with_timezone(&Utc))
    }
}

impl<'r> Decode<'r, Shardlite> for DateTime<Local> {
    fn decode(value: ShardliteValueRef<'r>) -> Result<Self, BoxDynError> {
        Ok(date_time(value)?.with_timezone(&Local))
    }
}

impl Type<Shardlite> for NaiveDateTime {
    fn type_info() -> ShardliteTypeInfo {
        ShardliteTypeInfo::TEXT
    }
    fn compatible(ty: &ShardliteTypeInfo) -> bool {
        date_time_compatible(ty)
    }
}

impl Encode<'_, Shardlite> for NaiveDateTime {
    fn encode_by_ref(&self, buf: &mut ShardliteArgumentBuffer) -> Result<IsNull, BoxDynError> {
        push_text(buf, self.format("%F %T%.f").to_string())
    }
}

impl<'r> Decode<'r, Shardlite> for NaiveDateTime {
    fn decode(value: ShardliteValueRef<'r>) -> Result<Self, BoxDynError> {
        // The wall-clock time as written, as sqlx's SQLite driver reads it.
        Ok(date_time(value)?.naive_local())
    }
}

impl Type<Shardlite> for NaiveDate {
    fn type_info() -> ShardliteTypeInfo {
        ShardliteTypeInfo::TEXT
    }
}

impl Encode<'_, Shardlite> for NaiveDate {
    fn encode_by_ref(&self, buf: &mut ShardliteArgumentBuffer) -> Result<IsNull, BoxDynError> {
        push_text(buf, self.format("%F").to_string())
    }
}

impl<'r> Decode<'r, Shardlite> for NaiveDate {
    fn decode(value: ShardliteValueRef<'r>) -> Result<Self, BoxDynError> {
        let text = text(value, "a date (TEXT)")?;
        NaiveDate::parse_from_str(text, "%F").map_err(|err| format!("invalid date text '{text}': {err}").into())
    }
}

impl Type<Shardlite> for NaiveTime {
    fn type_info() -> ShardliteTypeInfo {
        ShardliteTypeInfo::TEXT
    }
}

impl Encode<'_, Shardlite> for NaiveTime {
    fn encode_by_ref(&self, buf: &mut ShardliteArgumentBuffer) -> Result<IsNull, BoxDynError> {
        push_text(buf, self.format("%T%.f").to_string())
    }
}

impl<'r> Decode<'r, Shardlite> for NaiveTime {
    fn decode(value: ShardliteValueRef<'r>) -> Result<Self, BoxDynError> {
        let text = text(value, "a time (TEXT)")?;
        TIMES_READ
            .iter()
            .find_map(|format| NaiveTime::parse_from_str(text, format).ok())
            .ok_or_else(|| format!("invalid time text '{text}'").into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded<T: for<'q> Encode<'q, Shardlite>>(value: T) -> Value {
        let mut buf = ShardliteArgumentBuffer::default();
        assert!(matches!(value.encode_by_ref(&mut buf).unwrap(), IsNull::No));
        buf.into_values().remove(0)
    }

    #[test]
    fn stored_forms_are_sqlx_sqlites() {
        let text = |s: &str| Value::Text(s.to_owned());
        let at = NaiveDate::from_ymd_opt(2026, 6, 1)
            .unwrap()
            .and_hms_milli_opt(12, 30, 0, 500)
            .unwrap();
        assert_eq!(encoded(at), text("2026-06-01 12:30:00.500"));
        assert_eq!(encoded(at.and_utc()), text("2026-06-01T12:30:00.500+00:00"));
        let plus_two = FixedOffset::east_opt(7200).unwrap();
        assert_eq!(
            encoded(plus_two.from_utc_datetime(&at)),
            text("2026-06-01T14:30:00.500+02:00")
        );
        assert_eq!(encoded(at.date()), text("2026-06-01"));
        assert_eq!(encoded(at.time()), text("12:30:00.500"));
    }

    #[test]
    fn sqlite_forms_decode() {
        let decode = |value: Value| DateTime::<Utc>::decode(ShardliteValueRef(&value));
        let noon = Utc.with_ymd_and_hms(2026, 6, 1, 12, 0, 0).unwrap();
        assert_eq!(decode(Value::Text("2026-06-01 12:00".into())).unwrap(), noon);
        assert_eq!(decode(Value::Text("2026-06-01T14:00+02:00".into())).unwrap(), noon);
        assert_eq!(decode(Value::Integer(noon.timestamp())).unwrap(), noon);
        assert_eq!(decode(Value::Real(2_461_193.0)).unwrap(), noon);
        let err = decode(Value::Text("soon".into())).unwrap_err();
        assert!(err.to_string().contains("soon"), "{err}");
    }
}
