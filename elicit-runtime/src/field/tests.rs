#![allow(clippy::unwrap_used, clippy::panic, reason = "a failing test should stop loudly")]

use super::*;
use serde_json::json;

#[test]
fn integers_follow_json_schema() {
    let rules = FieldRules::EMPTY;
    assert_eq!(u8::parse(&json!(3.0), &rules), Ok(3));
    assert!(u8::parse(&json!(3.5), &rules).is_err());
    assert!(u8::parse(&json!(256), &rules).is_err());
    assert!(u8::parse(&json!(-1), &rules).is_err());
    assert!(u8::parse(&json!("3"), &rules).is_err());
    assert!(i64::parse(&json!(1e300), &rules).is_err());
    assert_eq!(u64::parse(&json!(u64::MAX), &rules), Ok(u64::MAX));
    assert!(i64::parse(&json!(u64::MAX), &rules).is_err());
    let narrowed = FieldRules { minimum: Some(Bound::Int(1)), maximum: Some(Bound::Int(9)), ..rules };
    assert_eq!(u8::parse(&json!(10), &narrowed), Err("must be at most 9".to_owned()));
    assert_eq!(u8::parse(&json!(0), &narrowed), Err("must be at least 1".to_owned()));
}

#[test]
fn integer_schema_carries_type_range() {
    let schema = serde_json::to_value(u8::schema(&FieldRules::EMPTY)).unwrap();
    assert_eq!(schema, json!({"type":"integer","minimum":0,"maximum":255}));
    let schema = serde_json::to_value(u64::schema(&FieldRules::EMPTY)).unwrap();
    assert_eq!(schema, json!({"type":"integer","minimum":0,"maximum":u64::MAX}));
}

#[test]
fn widest_integers_keep_exact_ranges() {
    let rules = FieldRules::EMPTY;
    // `u128::MAX` does not fit the i128 arithmetic: the range stops at `i128::MAX`.
    let schema = serde_json::to_value(u128::schema(&rules)).unwrap();
    assert_eq!(schema["minimum"], json!(0));
    assert_eq!(u128::parse(&json!(5), &rules), Ok(5));
    // `i128::MAX` is not an f64: the schema states the largest f64 below it, never 2^127.
    let max = schema["maximum"].as_f64().unwrap();
    assert!(max < 2f64.powi(127) && max.next_up() == 2f64.powi(127));
    let schema = serde_json::to_value(i128::schema(&rules)).unwrap();
    assert_eq!(schema["minimum"].as_f64(), Some(-(2f64.powi(127))));
    assert_eq!(i128::parse(&json!(1.7e38), &rules), Ok(1.7e38 as i128));
    assert_eq!(i128::parse(&json!(max), &rules), Ok(max as i128));
    assert!(i128::parse(&json!(2f64.powi(127)), &rules).is_err());
    assert_eq!(i128::parse(&json!(-(2f64.powi(127))), &rules), Ok(i128::MIN));
    assert!(u128::parse(&json!(2f64.powi(127)), &rules).is_err());
    assert_eq!(u128::MAX.to_value().and_then(|v| v.as_f64()), Some(2f64.powi(128)));
}

#[test]
fn float_bounds_compare_exactly() {
    // 2^53 + 1 is not an f64; 2^53 is below it and must be refused.
    let rules = FieldRules { minimum: Some(Bound::Int(9_007_199_254_740_993)), ..FieldRules::EMPTY };
    assert!(f64::parse(&json!(9_007_199_254_740_992.0), &rules).is_err());
    assert!(f64::parse(&json!(9_007_199_254_740_994.0), &rules).is_ok());
    let rules = FieldRules { maximum: Some(Bound::Int(0)), ..FieldRules::EMPTY };
    assert!(f64::parse(&json!(-0.0), &rules).is_ok());
    assert!(f64::parse(&json!(1e-300), &rules).is_err());
}

#[test]
fn floats() {
    assert_eq!(f64::parse(&json!(30.5), &FieldRules::EMPTY), Ok(30.5));
    assert_eq!(f64::parse(&json!(3), &FieldRules::EMPTY), Ok(3.0));
    assert!(f32::parse(&json!(1e300), &FieldRules::EMPTY).is_err());
}

/// The date fast path agrees with chrono's `%Y-%m-%d` parser on every day of these years
/// (leap rules, year 0, the last year RFC 3339 can write) and on the days that do not exist.
#[cfg(feature = "chrono")]
#[test]
fn dates_parse_as_chrono_parses_them() {
    use chrono::NaiveDate;
    for year in [0, 1, 1900, 1999, 2000, 2024, 2026, 2100, 9999] {
        for month in 0..=13 {
            for day in 0..=32 {
                let text = format!("{year:04}-{month:02}-{day:02}");
                let ours = NaiveDate::parse(&json!(text), &FieldRules::EMPTY).ok();
                let chrono = NaiveDate::parse_from_str(&text, "%Y-%m-%d").ok();
                assert_eq!(ours, chrono, "{text}");
            }
        }
    }
    assert!(NaiveDate::parse(&json!("2026-7-28"), &FieldRules::EMPTY).is_err());
    assert!(NaiveDate::parse(&json!("+2026-07-28"), &FieldRules::EMPTY).is_err());
}
