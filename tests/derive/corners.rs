//! The corners of what the derive promises, each checked where a probe of realistic structs found
//! it broken: serde's `deny_unknown_fields` in tool arguments, an `f32` at a fractional bound, a
//! multi-select that allows no choice, a `with` module on an `Option`, integers past 64 bits,
//! counts in messages, serde's `transparent` beside the derive's, and a default's own format.
//! (Mistakes refused at compile time are `tests/compile_fail/cases/`.)

#![allow(clippy::unwrap_used, clippy::panic, reason = "a failing test should stop loudly")]

use std::collections::{BTreeSet, HashSet};

use elicit_runtime::Elicit;
use elicit_runtime::field::{FieldRules, InvalidValue};
use elicit_runtime::schema::PrimitiveSchema;
use elicit_test_support::spec;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::{object, required};

// ---- serde's deny_unknown_fields ----

/// Tool arguments: serde's `Serialize` beside the derive's validating `Deserialize`, which honours
/// the struct's `deny_unknown_fields`.
#[derive(Elicit, Serialize, Debug, PartialEq)]
#[elicit(deserialize)]
#[serde(deny_unknown_fields)]
struct Strict {
    query: String,
    #[elicit(default = 10)]
    limit: u32,
}

#[derive(Elicit, Serialize, Debug, PartialEq)]
#[elicit(deserialize)]
struct Lenient {
    query: String,
    #[elicit(default = 10)]
    limit: u32,
}

/// The same struct, read by serde's own derive: the reference the validating parser agrees with.
#[derive(Deserialize, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct StrictBySerde {
    query: String,
    #[serde(default = "ten")]
    limit: u32,
}

fn ten() -> u32 {
    10
}

#[test]
fn deny_unknown_fields_refuses_a_misspelt_tool_argument_as_serde_does() {
    let misspelt = json!({"query": "mcp", "limt": 3});
    let ours = serde_json::from_value::<Strict>(misspelt.clone()).unwrap_err().to_string();
    let serdes = serde_json::from_value::<StrictBySerde>(misspelt.clone()).unwrap_err().to_string();
    assert_eq!(ours, serdes);
    assert_eq!(ours, "unknown field `limt`, expected `query` or `limit`");
    // A null for an unknown key is still an unknown key.
    assert!(serde_json::from_value::<Strict>(json!({"query": "mcp", "other": null})).is_err());
    // Known keys (and a null for a known one) are read as before.
    let ok = serde_json::from_value::<Strict>(json!({"query": "mcp", "limit": null})).unwrap();
    assert_eq!(ok, Strict { query: "mcp".into(), limit: 10 });
    // Without the attribute an unknown key is ignored, as serde ignores it.
    let lenient = serde_json::from_value::<Lenient>(misspelt).unwrap();
    assert_eq!(lenient, Lenient { query: "mcp".into(), limit: 10 });
    // Forms are unaffected: content is read by `from_content`, which the schema lists every key of.
    let content = object(json!({"query": "mcp", "extra": 1}));
    assert_eq!(Strict::from_content(&content).unwrap(), Strict { query: "mcp".into(), limit: 10 });
}

// ---- f32 at fractional bounds ----

#[derive(Elicit, Debug, PartialEq)]
struct Ratios {
    #[elicit(minimum = 0.1, maximum = 0.3)]
    share: f32,
    #[elicit(minimum = -0.7, maximum = 0.29999999999, default = 0.29999999999)]
    tilt: f32,
    #[elicit(maximum = 16777217)]
    count: f32,
}

#[test]
fn an_f32_at_a_fractional_bound_round_trips() {
    let schema = Ratios::requested_schema().to_json();
    // Stated at the field's own precision: the nearest f32, written shortest.
    assert_eq!(schema["properties"]["share"]["maximum"], json!(0.3));
    assert_eq!(schema["properties"]["tilt"]["maximum"], json!(0.3));
    assert_eq!(schema["properties"]["tilt"]["default"], json!(0.3));
    assert_eq!(schema["properties"]["count"]["maximum"], json!(16777216.0));
    let validator = spec::content_validator(&schema);
    for (share, tilt) in [(0.3, 0.3), (0.1, -0.7), (0.2, 0.29999999999), (0.30000000000000004, 0.1)] {
        let content = object(json!({"share": share, "tilt": tilt, "count": 1}));
        let parsed = Ratios::from_content(&content);
        assert_eq!(parsed.is_ok(), validator.is_valid(&Value::Object(content.clone())), "{content:?}");
        let Ok(parsed) = parsed else { continue };
        let written = parsed.to_content();
        assert!(validator.is_valid(&Value::Object(written.clone())), "{written:?}");
        assert_eq!(Ratios::from_content(&written).unwrap(), parsed, "{written:?}");
        assert_eq!(written["share"], json!(format_f32(share)));
    }
    // Absent, the default is read at the field's precision, inside the stated bound.
    let defaulted = Ratios::from_content(&object(json!({"share": 0.3, "count": 0}))).unwrap();
    assert_eq!(defaulted.tilt, 0.3_f32);
    assert_eq!(defaulted.to_content()["tilt"], json!(0.3));
}

/// The shortest decimal of `value` as an f32, read back as a JSON number.
fn format_f32(value: f64) -> f64 {
    (value as f32).to_string().parse().unwrap()
}

// ---- a multi-select that allows no choice ----

#[derive(Elicit, Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Extra {
    Legroom,
    Meal,
}

#[derive(Elicit, Debug, PartialEq)]
struct Booking {
    extras: Vec<Extra>,
    #[elicit(min_items = 0)]
    set: BTreeSet<Extra>,
    hashed: HashSet<Extra>,
    #[elicit(min_items = 1)]
    at_least_one: Vec<Extra>,
    maybe: Option<Vec<Extra>>,
}

#[test]
fn a_multi_select_without_min_items_is_not_required_and_absent_is_no_choice() {
    let schema = Booking::requested_schema().to_json();
    assert_eq!(required(&schema), ["at_least_one"]);
    // Absent: no choice; an empty list: no choice too.
    let booking = Booking::from_content(&object(json!({"at_least_one": ["Meal"]}))).unwrap();
    assert_eq!(booking.extras, []);
    assert!(booking.set.is_empty() && booking.hashed.is_empty());
    assert_eq!(booking.maybe, None);
    let empty = Booking::from_content(&object(json!({"extras": [], "at_least_one": ["Meal"]}))).unwrap();
    assert_eq!(empty, booking);
    // `min_items = 1` keeps it required.
    let errors = Booking::from_content(&object(json!({}))).unwrap_err();
    assert_eq!(errors.to_string(), "`at_least_one` is required");
    let validator = spec::content_validator(&schema);
    assert!(validator.is_valid(&json!({"at_least_one": ["Meal"]})));
    assert!(!validator.is_valid(&json!({})));
}

// ---- a `with` module on an Option ----

mod cents {
    use super::*;

    pub(super) fn schema(rules: &FieldRules) -> PrimitiveSchema {
        <String as elicit_runtime::field::FieldValue>::schema(rules)
    }

    pub(super) fn parse(value: &Value, _: &FieldRules) -> Result<Option<u64>, InvalidValue> {
        let text = value.as_str().ok_or("must be a string")?;
        text.parse::<u64>().map(Some).map_err(|_| "must be a number of cents".into())
    }

    pub(super) fn to_value(value: &Option<u64>) -> Option<Value> {
        value.map(|cents| Value::String(cents.to_string()))
    }
}

mod cents_required {
    use super::*;

    pub(super) fn schema(rules: &FieldRules) -> PrimitiveSchema {
        super::cents::schema(rules)
    }

    pub(super) fn parse(value: &Value, rules: &FieldRules) -> Result<u64, InvalidValue> {
        super::cents::parse(value, rules).map(Option::unwrap_or_default)
    }

    pub(super) fn to_value(value: &u64) -> Option<Value> {
        Some(Value::String(value.to_string()))
    }
}

#[derive(Elicit, Debug, PartialEq)]
struct Tip {
    #[elicit(with = cents)]
    tip: Option<u64>,
    #[elicit(with = cents_required)]
    total: u64,
}

#[test]
fn a_with_module_on_an_option_keeps_it_optional() {
    let schema = Tip::requested_schema().to_json();
    assert_eq!(required(&schema), ["total"]);
    let tip = Tip::from_content(&object(json!({"total": "500"}))).unwrap();
    assert_eq!(tip, Tip { tip: None, total: 500 });
    assert_eq!(tip.to_content(), object(json!({"total": "500"})));
    let with = Tip::from_content(&object(json!({"total": "500", "tip": "50"}))).unwrap();
    assert_eq!(with.tip, Some(50));
    assert_eq!(Tip::from_content(&object(json!({}))).unwrap_err().to_string(), "`total` is required");
}

// ---- integers past 64 bits, and counts in messages ----

#[derive(Elicit, Debug, PartialEq)]
struct Wide {
    signed: Option<i128>,
    unsigned: Option<u128>,
    #[elicit(min_length = 1, max_length = 1)]
    one: Option<String>,
    #[elicit(min_length = 2, max_length = 2)]
    two: Option<String>,
    #[elicit(min_items = 1, max_items = 1)]
    pick: Option<Vec<Extra>>,
    #[elicit(min_items = 2)]
    picks: Option<BTreeSet<Extra>>,
}

fn reason(content: Value, field: &str) -> String {
    let errors = Wide::from_content(&object(content)).unwrap_err();
    errors.get(field).map(|e| e.reason.clone()).unwrap_or_else(|| panic!("no error on {field}: {errors}"))
}

#[test]
fn integers_past_64_bits_are_refused_rather_than_rounded() {
    let rounded = "is too large to be read exactly: integers past 64 bits arrive rounded in JSON";
    // 2^64 + 1 and 2^70 + 1 arrive as the nearest f64, already rounded.
    let past: Value = serde_json::from_str("18446744073709551617").unwrap();
    assert_eq!(reason(json!({"unsigned": past}), "unsigned"), rounded);
    let far: Value = serde_json::from_str("1180591620717411303425").unwrap();
    assert_eq!(reason(json!({"signed": far}), "signed"), rounded);
    let below: Value = serde_json::from_str("-9223372036854775809").unwrap();
    assert_eq!(reason(json!({"signed": below}), "signed"), rounded);
    // Up to the 64-bit integers they are exact, and kept.
    let wide = Wide::from_content(&object(json!({"signed": i64::MIN, "unsigned": u64::MAX}))).unwrap();
    assert_eq!((wide.signed, wide.unsigned), (Some(i128::from(i64::MIN)), Some(u128::from(u64::MAX))));
    assert_eq!(Wide::from_content(&wide.to_content()).unwrap(), wide);
}

#[test]
fn counts_in_messages_are_pluralised() {
    assert_eq!(reason(json!({"one": ""}), "one"), "must be at least 1 character long");
    assert_eq!(reason(json!({"one": "ab"}), "one"), "must be at most 1 character long");
    assert_eq!(reason(json!({"two": "a"}), "two"), "must be at least 2 characters long");
    assert_eq!(reason(json!({"pick": []}), "pick"), "must have at least 1 item selected");
    assert_eq!(reason(json!({"pick": ["Meal", "Legroom"]}), "pick"), "must have at most 1 item selected");
    assert_eq!(reason(json!({"picks": ["Meal"]}), "picks"), "must have at least 2 items selected");
    assert_eq!(reason(json!({"picks": ["Meal", "Meal"]}), "picks"), "must have at least 2 different items selected");
}

// ---- serde's transparent beside the derive's ----

/// A newtype serde reads through its field, as the derive does: the two agree, so both are taken.
#[derive(Elicit, Serialize, Deserialize, Debug, PartialEq)]
#[elicit(transparent)]
#[serde(transparent)]
struct Seats(u8);

#[derive(Elicit, Deserialize, Debug, PartialEq)]
struct Table {
    #[elicit(maximum = 12)]
    seats: Seats,
}

#[test]
fn serde_transparent_beside_elicit_transparent_is_taken() {
    let content = object(json!({"seats": 4}));
    assert_eq!(Table::from_content(&content).unwrap(), Table { seats: Seats(4) });
    assert_eq!(serde_json::from_value::<Table>(Value::Object(content)).unwrap(), Table { seats: Seats(4) });
    let errors = Table::from_content(&object(json!({"seats": 13}))).unwrap_err();
    assert_eq!(errors.to_string(), "`seats` must be at most 12");
}

// ---- constant bounds through a newtype ----

const MAX_SEATS: u16 = 40;
const MAX_SHARE: f64 = 0.75;

#[derive(Elicit, Debug, PartialEq)]
#[elicit(transparent)]
struct Capacity(u16);

#[derive(Elicit, Debug, PartialEq)]
#[elicit(transparent)]
struct Share(f64);

/// Constant bounds on types the derive cannot name take the kind of number the type's `SHAPE`
/// says: an integer newtype's bound is an integer, checked against the type's `RANGE`.
#[derive(Elicit, Debug, PartialEq)]
struct Venue {
    #[elicit(minimum = 1, maximum = MAX_SEATS)]
    capacity: Capacity,
    #[elicit(maximum = MAX_SHARE)]
    share: Share,
}

#[test]
fn constant_bounds_through_a_newtype_keep_the_kind_of_its_number() {
    let schema = Venue::requested_schema().to_json();
    assert_eq!(schema["properties"]["capacity"]["maximum"], json!(40));
    assert_eq!(schema["properties"]["share"]["maximum"], json!(0.75));
    let venue = Venue::from_content(&object(json!({"capacity": 40, "share": 0.75}))).unwrap();
    assert_eq!(venue, Venue { capacity: Capacity(40), share: Share(0.75) });
    let errors = Venue::from_content(&object(json!({"capacity": 41, "share": 0.8}))).unwrap_err();
    assert_eq!(errors.to_string(), "`capacity` must be at most 40; `share` must be at most 0.75");
}

// ---- a default's own format, when the derive cannot decide it ----

/// A newtype over `Email`: the derive cannot see the format its type implies, so the default is
/// checked when the schema is first built.
#[derive(Elicit, Debug)]
#[elicit(transparent)]
struct Contact(elicit_runtime::Email);

#[derive(Elicit, Debug)]
struct Signup {
    #[elicit(default = "ada at example.com")]
    contact: Contact,
}

#[derive(Elicit, Debug)]
struct Unusual {
    /// Valid, but past what constant evaluation decides: the schema's check accepts it.
    #[elicit(format = "uri", default = "http://[::1]:8080/%20")]
    home: String,
    #[elicit(format = "email", default = "\"a b\"@[192.0.2.1]")]
    mail: String,
}

#[test]
fn a_default_failing_its_format_is_refused_when_the_schema_is_built() {
    let panic = std::panic::catch_unwind(Signup::requested_schema).unwrap_err();
    assert_eq!(
        panic.downcast_ref::<String>().unwrap(),
        "property `contact`: its `default` \"ada at example.com\" must be an e-mail address"
    );
    let schema = Unusual::requested_schema().to_json();
    assert_eq!(schema["properties"]["home"]["default"], json!("http://[::1]:8080/%20"));
    let unusual = Unusual::from_content(&object(json!({}))).unwrap();
    assert_eq!(unusual.mail, "\"a b\"@[192.0.2.1]");
}
