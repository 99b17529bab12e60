#![allow(clippy::unwrap_used, clippy::panic, reason = "a failing test should stop loudly")]

use super::*;
use serde_json::json;

#[test]
fn rules_must_fit_the_shape() {
    const ECONOMY: &[Variant] = &[Variant { value: "economy", title: None }];
    let lengths = FieldRules { max_length: Some(3), ..FieldRules::EMPTY };
    assert_eq!(FieldShape::String.misfit(&lengths), None);
    assert!(FieldShape::Integer.misfit(&lengths).unwrap().starts_with("`min_length` and `max_length` apply to string"));
    let default = |value| FieldRules { default: Some(value), ..FieldRules::EMPTY };
    assert_eq!(FieldShape::SingleSelect(ECONOMY).misfit(&default(DefaultValue::Str("economy"))), None);
    assert!(FieldShape::SingleSelect(ECONOMY).misfit(&default(DefaultValue::Str("first"))).is_some());
    assert!(FieldShape::Integer.misfit(&default(DefaultValue::Number(Bound::Float(1.5)))).is_some());
    assert_eq!(FieldShape::Number.misfit(&default(DefaultValue::Number(Bound::Int(1)))), None);
    assert!(FieldShape::Boolean.misfit(&default(DefaultValue::Str("yes"))).is_some());
}

#[test]
fn constant_rules_are_checked_for_consistency() {
    let ok = FieldRules {
        min_length: Some(1),
        max_length: Some(3),
        default: Some(DefaultValue::Str("héé")),
        ..FieldRules::EMPTY
    };
    assert_eq!(ok.inconsistency(None), None);
    let long = FieldRules { default: Some(DefaultValue::Str("hééé")), ..ok };
    assert_eq!(long.inconsistency(None), Some("`default` is longer than `max_length`"));
    let crossed = FieldRules { minimum: Some(Bound::Int(5)), maximum: Some(Bound::Float(4.5)), ..FieldRules::EMPTY };
    assert_eq!(crossed.inconsistency(None), Some("`minimum` is greater than `maximum`"));
    let wide = FieldRules { maximum: Some(Bound::Int(300)), ..FieldRules::EMPTY };
    assert_eq!(wide.inconsistency(Some((0, 255))), Some("a bound is outside the range of the field's integer type"));
    let default = FieldRules { default: Some(DefaultValue::Number(Bound::Int(256))), ..FieldRules::EMPTY };
    assert_eq!(default.inconsistency(Some((0, 255))), Some("`default` is outside the field's range"));
    assert_eq!(default.inconsistency(None), None);
}

#[test]
fn a_default_makes_a_field_optional_unless_required() {
    let with_default = FieldRules { default: Some(DefaultValue::Bool(true)), ..FieldRules::EMPTY };
    assert!(!with_default.is_required(true));
    assert!(FieldRules { required: Some(true), ..with_default }.is_required(true));
    assert!(FieldRules::EMPTY.is_required(true));
    assert!(!FieldRules::EMPTY.is_required(false));
    assert!(!FieldRules { required: Some(false), ..FieldRules::EMPTY }.is_required(true));
}

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
    assert_eq!(u8::parse(&json!(10), &narrowed), Err("must be at most 9".into()));
    assert_eq!(u8::parse(&json!(0), &narrowed), Err("must be at least 1".into()));
}

#[test]
fn integer_schema_carries_type_range() {
    let schema = serde_json::to_value(u8::schema(&FieldRules::EMPTY)).unwrap();
    assert_eq!(schema, json!({"type":"integer","minimum":0,"maximum":255}));
    let schema = serde_json::to_value(i32::schema(&FieldRules::EMPTY)).unwrap();
    assert_eq!(schema, json!({"type":"integer","minimum":i32::MIN,"maximum":i32::MAX}));
}

const SAFE: i64 = (1 << 53) - 1;

/// Every integer type's schema bounds sit inside `±(2^53 - 1)` and are JSON integers, so a
/// JavaScript peer holds them exactly and an `i64` one decodes them; the parser still accepts the
/// type's whole range.
#[test]
fn wide_integer_schemas_are_clamped_to_the_interoperable_range() {
    let rules = FieldRules::EMPTY;
    let bounds = |schema: PrimitiveSchema| {
        let json = serde_json::to_value(schema).unwrap();
        (json["minimum"].as_i64().unwrap(), json["maximum"].as_i64().unwrap())
    };
    assert_eq!(bounds(u64::schema(&rules)), (0, SAFE));
    assert_eq!(bounds(usize::schema(&rules)), (0, SAFE));
    assert_eq!(bounds(u128::schema(&rules)), (0, SAFE));
    assert_eq!(bounds(i64::schema(&rules)), (-SAFE, SAFE));
    assert_eq!(bounds(isize::schema(&rules)), (-SAFE, SAFE));
    assert_eq!(bounds(i128::schema(&rules)), (-SAFE, SAFE));
    assert_eq!(bounds(u32::schema(&rules)), (0, i64::from(u32::MAX)));
    // Declared bounds past the range are clamped too; inside it they are kept.
    let declared = FieldRules { minimum: Some(Bound::Int(1)), maximum: Some(Bound::Int(1 << 60)), ..rules };
    assert_eq!(bounds(u64::schema(&declared)), (1, SAFE));
    // In full on parse: the type's range and the declared bound, not the schema's.
    assert_eq!(u64::parse(&json!(u64::MAX), &rules), Ok(u64::MAX));
    assert_eq!(i64::parse(&json!(i64::MIN), &rules), Ok(i64::MIN));
    assert_eq!(u64::parse(&json!(1_u64 << 60), &declared), Ok(1 << 60));
    assert_eq!(
        u64::parse(&json!((1_u64 << 60) + 1), &declared),
        Err(format!("must be at most {}", 1_u64 << 60).into())
    );
    // Past the 64-bit integers a JSON number arrives rounded: refused, never taken rounded.
    let rounded = InvalidValue::from("is too large to be read exactly: integers past 64 bits arrive rounded in JSON");
    assert_eq!(i128::parse(&json!(1.7e38), &rules), Err(rounded.clone()));
    assert_eq!(i128::parse(&json!(2f64.powi(64)), &rules), Err(rounded.clone()));
    assert_eq!(u128::parse(&json!(2f64.powi(64)), &rules), Err(rounded.clone()));
    assert_eq!(i128::parse(&json!(-(2f64.powi(63)) * 1.5), &rules), Err(rounded.clone()));
    assert_eq!(i128::parse(&json!(-(2f64.powi(63))), &rules), Err(rounded));
    assert_eq!(i128::parse(&json!(i64::MIN), &rules), Ok(i128::from(i64::MIN)));
    assert_eq!(u128::parse(&json!(u64::MAX), &rules), Ok(u128::from(u64::MAX)));
    assert!(i128::parse(&json!(2f64.powi(127)), &rules).is_err());
    assert!(i128::parse(&json!(-(2f64.powi(127))), &rules).is_err());
    assert!(u128::parse(&json!(2f64.powi(127)), &rules).is_err());
    assert_eq!(u128::parse(&json!(5), &rules), Ok(5));
    assert_eq!(u128::MAX.to_value().and_then(|v| v.as_f64()), Some(2f64.powi(128)));
}

/// A declared integer default the interoperable range holds is an integer in the schema; one past
/// it is left out rather than rounded.
#[test]
fn integer_defaults_stay_exact_integers() {
    let schema = |default: i128| {
        let rules = FieldRules { default: Some(DefaultValue::Number(Bound::Int(default))), ..FieldRules::EMPTY };
        serde_json::to_value(i128::schema(&rules)).unwrap()
    };
    assert_eq!(schema(SAFE.into())["default"], json!(SAFE));
    assert_eq!(schema(-7)["default"], json!(-7));
    assert!(schema(i128::from(SAFE) + 1).get("default").is_none());
    assert!(schema(1 << 100).get("default").is_none());
    assert!(schema(i64::MIN.into()).get("default").is_none());
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

/// A date-time made from the parts the format check reads is the one chrono's RFC 3339 parser
/// makes (leap seconds, fractions past nine digits, offsets at their limits), and what the check
/// refuses fails with the format's message.
#[cfg(feature = "chrono")]
#[test]
fn date_times_parse_as_chrono_parses_them() {
    use chrono::{DateTime, FixedOffset};
    let mut checked = 0;
    for date in ["0000-01-01", "2016-12-31", "2024-02-29", "2023-02-29", "9999-12-31", "2026-13-01"] {
        for time in ["00:00:00", "23:59:59", "23:59:60", "15:59:60", "00:29:60", "12:00:60", "24:00:00", "23:60:00"] {
            for fraction in ["", ".", ".5", ".123", ".000000001", ".123456789", ".1234567891234", ".999999999999"] {
                for offset in
                    ["Z", "z", "+00:00", "-00:00", "+08:00", "-08:00", "+23:59", "-23:59", "+24:00", "+02:60", ""]
                {
                    for t in ["T", "t", " "] {
                        let text = format!("{date}{t}{time}{fraction}{offset}");
                        let ours = <DateTime<FixedOffset> as FieldValue>::parse(&json!(text), &FieldRules::EMPTY);
                        // The format check decides; where it accepts, the value is chrono's.
                        let expected = crate::content::is_date_time(&text)
                            .then(|| DateTime::parse_from_rfc3339(&text).ok())
                            .flatten();
                        assert_eq!(ours.clone().ok(), expected, "{text}");
                        match ours {
                            Ok(_) => checked += 1,
                            Err(error) if !crate::content::is_date_time(&text) => assert_eq!(
                                error.reason(),
                                "must be a date and time with offset (YYYY-MM-DDThh:mm:ssZ)",
                                "{text}"
                            ),
                            Err(_) => {}
                        }
                    }
                }
            }
        }
    }
    assert!(checked > 1_000, "{checked}");
}

/// The `f64` shortcut for small integer bounds orders every value as the exact 128-bit comparison.
#[test]
fn small_bounds_compare_exactly() {
    let exact = |f: f64, i: i128| {
        let whole = f.trunc();
        (whole as i128).cmp(&i).then_with(|| (f - whole).partial_cmp(&0.0).unwrap_or(Ordering::Equal))
    };
    let edge = 1i128 << 53;
    let bounds = [0, 1, -1, 9, 100_000, edge - 1, edge, edge + 1, -edge, -edge - 1, i128::from(i64::MAX)];
    let values = [
        0.0,
        -0.0,
        0.5,
        -0.5,
        1.0,
        8.999_999,
        9.0,
        9.000_001,
        100_000.0,
        100_000.5,
        (edge - 1) as f64,
        edge as f64,
        (edge as f64).next_up(),
        (edge as f64).next_down(),
        -(edge as f64),
        (-(edge as f64)).next_down(),
        1e300,
        -1e300,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ];
    for bound in bounds {
        for value in values {
            let expected = if value.is_infinite() { value.partial_cmp(&0.0).unwrap() } else { exact(value, bound) };
            assert_eq!(cmp_f64_i128(value, bound), expected, "{value} {bound}");
        }
    }
}
