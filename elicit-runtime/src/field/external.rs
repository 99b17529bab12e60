//! Field types of optional dependencies: `chrono` dates and times, `url::Url`.

#[allow(unused_imports, reason = "which names are used depends on the features enabled")]
use super::*;

#[cfg(feature = "chrono")]
mod chrono_fields {
    use super::*;
    use chrono::{DateTime, FixedOffset, NaiveDate, NaiveTime, SecondsFormat, Utc};

    /// RFC 3339 has four-digit years: a date outside 0000..=9999 writes content that does not
    /// parse back.
    #[cfg_attr(docsrs, doc(cfg(feature = "chrono")))]
    impl FieldValue for NaiveDate {
        const SHAPE: FieldShape = FieldShape::String;

        fn schema(rules: &FieldRules) -> PrimitiveSchema {
            string_schema(rules, Some(StringFormat::Date))
        }

        fn parse(value: &Value, rules: &FieldRules) -> Result<Self, InvalidValue> {
            let text = parse_str(value, rules, Some(StringFormat::Date))?;
            // `parse_str` has checked `YYYY-MM-DD` in ASCII digits naming a real day: the parts
            // make the date directly, several times faster than chrono's format-string parser,
            // which stays as the fallback (and the source of the error message).
            match checked_date_parts(text).and_then(|(y, m, d)| NaiveDate::from_ymd_opt(y, m, d)) {
                Some(date) => Ok(date),
                None => NaiveDate::parse_from_str(text, "%Y-%m-%d")
                    .map_err(|e| InvalidValue::new(format!("is not a valid date: {e}"))),
            }
        }

        fn to_value(&self) -> Option<Value> {
            Some(Value::String(self.format("%Y-%m-%d").to_string()))
        }
    }

    /// Year, month and day of a `YYYY-MM-DD` text of ASCII digits.
    fn checked_date_parts(text: &str) -> Option<(i32, u32, u32)> {
        let bytes = text.as_bytes();
        let number = |range: std::ops::Range<usize>| {
            bytes.get(range)?.iter().try_fold(0u32, |acc, b| b.is_ascii_digit().then(|| acc * 10 + u32::from(b - b'0')))
        };
        if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
            return None;
        }
        Some((i32::try_from(number(0..4)?).ok()?, number(5..7)?, number(8..10)?))
    }

    fn parse_date_time(value: &Value, rules: &FieldRules) -> Result<DateTime<FixedOffset>, InvalidValue> {
        // The type and length first, as `parse_str` checks them; then the format, read in the same
        // pass that checks it, makes the value directly, as chrono's RFC 3339 parser would (leap
        // second as nanoseconds past 1e9, fraction cut at nine digits). Chrono's parser stays as
        // the fallback and the source of its error message.
        let text = parse_str(value, rules, None)?;
        let Some(parts) = crate::content::date_time_parts(text) else {
            return Err(InvalidValue::from(crate::content::FormatError::new(StringFormat::DateTime)));
        };
        match date_time_of(parts) {
            Some(time) => Ok(time),
            None => DateTime::parse_from_rfc3339(text)
                .map_err(|e| InvalidValue::new(format!("is not a valid date-time: {e}"))),
        }
    }

    fn date_time_of(parts: crate::content::DateTimeParts) -> Option<DateTime<FixedOffset>> {
        let date = NaiveDate::from_ymd_opt(i32::try_from(parts.year).ok()?, parts.month, parts.day)?;
        let (second, leap) = if parts.second == 60 { (59, 1_000_000_000) } else { (parts.second, 0) };
        let time = NaiveTime::from_hms_nano_opt(parts.hour, parts.minute, second, parts.nanosecond + leap)?;
        let offset = FixedOffset::east_opt(parts.offset_minutes * 60)?;
        date.and_time(time).and_local_timezone(offset).single()
    }

    #[cfg_attr(docsrs, doc(cfg(feature = "chrono")))]
    impl FieldValue for DateTime<FixedOffset> {
        const SHAPE: FieldShape = FieldShape::String;

        fn schema(rules: &FieldRules) -> PrimitiveSchema {
            string_schema(rules, Some(StringFormat::DateTime))
        }

        fn parse(value: &Value, rules: &FieldRules) -> Result<Self, InvalidValue> {
            parse_date_time(value, rules)
        }

        fn to_value(&self) -> Option<Value> {
            Some(Value::String(self.to_rfc3339_opts(SecondsFormat::AutoSi, true)))
        }
    }

    #[cfg_attr(docsrs, doc(cfg(feature = "chrono")))]
    impl FieldValue for DateTime<Utc> {
        const SHAPE: FieldShape = FieldShape::String;

        fn schema(rules: &FieldRules) -> PrimitiveSchema {
            string_schema(rules, Some(StringFormat::DateTime))
        }

        fn parse(value: &Value, rules: &FieldRules) -> Result<Self, InvalidValue> {
            parse_date_time(value, rules).map(|t| t.with_timezone(&Utc))
        }

        fn to_value(&self) -> Option<Value> {
            Some(Value::String(utc_text(self)))
        }
    }

    /// RFC 3339 text of a UTC instant. An answer at the edge of the four-digit years can name an
    /// instant outside them in UTC (`0000-01-01T00:30:00+01:00` is in the year -1), which UTC text
    /// cannot write; such an instant is written at the widest offset, which brings any instant an
    /// answer can name back to the year 0000 or 9999, so whatever parses writes content that
    /// parses back to it. Instants further out (built by the server) still write unparsable text.
    fn utc_text(time: &DateTime<Utc>) -> String {
        use chrono::Datelike;
        const WIDEST: i32 = 23 * 3600 + 59 * 60;
        let offset = match time.year() {
            ..0 => FixedOffset::east_opt(WIDEST),
            10_000.. => FixedOffset::west_opt(WIDEST),
            _ => None,
        };
        match offset {
            Some(offset) => time.with_timezone(&offset).to_rfc3339_opts(SecondsFormat::AutoSi, true),
            None => time.to_rfc3339_opts(SecondsFormat::AutoSi, true),
        }
    }
}

#[cfg(feature = "time")]
mod time_fields {
    use super::*;
    use time::format_description::well_known::Rfc3339;
    use time::{Date, Month, OffsetDateTime};

    /// RFC 3339 has four-digit years: a date outside 0000..=9999 writes content that does not
    /// parse back.
    #[cfg_attr(docsrs, doc(cfg(feature = "time")))]
    impl FieldValue for Date {
        const SHAPE: FieldShape = FieldShape::String;

        fn schema(rules: &FieldRules) -> PrimitiveSchema {
            string_schema(rules, Some(StringFormat::Date))
        }

        fn parse(value: &Value, rules: &FieldRules) -> Result<Self, InvalidValue> {
            let text = parse_str(value, rules, Some(StringFormat::Date))?;
            // `parse_str` has checked `YYYY-MM-DD` in ASCII digits naming a real day.
            let part = |range: std::ops::Range<usize>| text.get(range).and_then(|p| p.parse::<u16>().ok());
            let (Some(year), Some(month), Some(day)) = (part(0..4), part(5..7), part(8..10)) else {
                return Err("must be a date (YYYY-MM-DD)".into());
            };
            let month = u8::try_from(month).ok().and_then(|m| Month::try_from(m).ok());
            let day = u8::try_from(day).ok();
            match (month, day) {
                (Some(month), Some(day)) => Date::from_calendar_date(i32::from(year), month, day)
                    .map_err(|e| InvalidValue::new(format!("is not a valid date: {e}"))),
                _ => Err("must be a date (YYYY-MM-DD)".into()),
            }
        }

        fn to_value(&self) -> Option<Value> {
            Some(Value::String(format!("{:04}-{:02}-{:02}", self.year(), u8::from(self.month()), self.day())))
        }
    }

    #[cfg_attr(docsrs, doc(cfg(feature = "time")))]
    impl FieldValue for OffsetDateTime {
        const SHAPE: FieldShape = FieldShape::String;

        fn schema(rules: &FieldRules) -> PrimitiveSchema {
            string_schema(rules, Some(StringFormat::DateTime))
        }

        fn parse(value: &Value, rules: &FieldRules) -> Result<Self, InvalidValue> {
            let text = parse_str(value, rules, Some(StringFormat::DateTime))?;
            OffsetDateTime::parse(text, &Rfc3339)
                .map_err(|e| InvalidValue::new(format!("is not a valid date-time: {e}")))
        }

        fn to_value(&self) -> Option<Value> {
            self.format(&Rfc3339).ok().map(Value::String)
        }
    }

    #[cfg(test)]
    #[allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
    mod tests {
        use super::*;
        use serde_json::json;

        #[test]
        fn dates_and_date_times_round_trip() {
            let rules = FieldRules::EMPTY;
            let date = <Date as FieldValue>::parse(&json!("2024-02-29"), &rules).unwrap();
            assert_eq!(date.to_value(), Some(json!("2024-02-29")));
            assert!(<Date as FieldValue>::parse(&json!("2023-02-29"), &rules).is_err());
            let at = <OffsetDateTime as FieldValue>::parse(&json!("2026-07-28T09:30:00+02:00"), &rules).unwrap();
            assert_eq!(at.to_value(), Some(json!("2026-07-28T09:30:00+02:00")));
            assert!(<OffsetDateTime as FieldValue>::parse(&json!("2026-07-28T09:30:00"), &rules).is_err());
            let schema = serde_json::to_value(Date::schema(&rules)).unwrap();
            assert_eq!(schema, json!({"type": "string", "format": "date"}));
        }
    }
}

/// A `uri` string parsed by the WHATWG rules of `url`. Two gaps between those rules and RFC 3986,
/// which the schema's `format: uri` means, cannot be closed here: some valid URIs cannot be held
/// (`http:`, a port above 65535, an IPvFuture host) and are refused on parse although the schema
/// admits them; and a `Url` may keep `|`, `^`, `[` or `]` in its path or query, so its content is
/// not a valid `uri` and does not parse back.
#[cfg(feature = "url")]
#[cfg_attr(docsrs, doc(cfg(feature = "url")))]
impl FieldValue for url::Url {
    const SHAPE: FieldShape = FieldShape::String;

    fn schema(rules: &FieldRules) -> PrimitiveSchema {
        string_schema(rules, Some(StringFormat::Uri))
    }

    fn parse(value: &Value, rules: &FieldRules) -> Result<Self, InvalidValue> {
        let text = parse_str(value, rules, Some(StringFormat::Uri))?;
        url::Url::parse(text).map_err(|e| InvalidValue::new(format!("is not a valid URL: {e}")))
    }

    fn to_value(&self) -> Option<Value> {
        Some(Value::String(self.as_str().to_owned()))
    }
}
