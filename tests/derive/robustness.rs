//! Robustness: hostile answers and hostile schemas end in errors, never in a panic, a stack
//! overflow or unbounded work; and a failing answer is reported field by field, every field.

#![allow(clippy::panic, reason = "a test reports a failure by panicking, with the offending input")]

use elicit_runtime::schema::{MAX_OPTIONS, MAX_PROPERTIES, RequestedSchema};
use elicit_runtime::{ContentErrors, Elicit};
use serde_json::{Map, Value, json};

use elicit_test_support::forms::{Confirm, Numbers, Optionals, Profile};

/// Arrays nested `depth` deep around `inner`, built without recursion.
fn deep_array(depth: usize, inner: Value) -> Value {
    let mut value = inner;
    for _ in 0..depth {
        value = Value::Array(vec![value]);
    }
    value
}

/// Objects nested `depth` deep under `key`, built without recursion.
fn deep_object(depth: usize, key: &str, inner: Value) -> Value {
    let mut value = inner;
    for _ in 0..depth {
        let mut map = Map::new();
        map.insert(key.to_owned(), value);
        value = Value::Object(map);
    }
    value
}

/// Drops a value without recursion: serde_json's own drop recurses once per level, which would
/// overflow a test thread's stack on the deepest values here.
fn dismantle(value: Value) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

const DEPTH: usize = 10_000;
const HUGE: usize = 4 * 1024 * 1024;

/// Every hostile value, one at a time, in every property of `T`, and as an unknown key.
fn survives_everything<T: Elicit>() {
    let base = Map::new();
    let mut hostile: Vec<Value> = vec![
        Value::Null,
        json!(true),
        json!(""),
        json!(1e308),
        json!(-1e308),
        json!(f64::MIN_POSITIVE),
        json!(5e-324),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(i64::MAX),
        json!(0.5),
        json!(3.0),
        json!(-0.0),
        json!(1.7014118346046923e38),
        json!(-1.7014118346046923e38),
        json!([]),
        json!({}),
        json!([null, 1, "x", [], {}]),
        Value::Array(vec![json!("red"); 100_000]),
        "x".repeat(HUGE).into(),
        "😀".repeat(HUGE / 4).into(),
        format!("{}@example.com", "a".repeat(HUGE)).into(),
        format!("https://example.com/{}", "a".repeat(HUGE)).into(),
        format!("2026-07-28T09:30:00.{}Z", "1".repeat(HUGE)).into(),
        deep_array(DEPTH, json!("red")),
        deep_object(DEPTH, "k", json!(1)),
    ];
    let many_keys: Map<String, Value> = (0..100_000).map(|i| (format!("k{i}"), json!(i))).collect();
    hostile.push(Value::Object(many_keys));

    let names: Vec<String> = T::requested_schema().properties.iter().map(|p| p.name.to_string()).collect();
    let mut content = base;
    for value in hostile {
        // Move the value in and out rather than cloning it: a clone of the deepest values recurses.
        let mut value = value;
        for name in names.iter().map(String::as_str).chain(["unknown"]) {
            content.insert(name.to_owned(), value);
            let result = T::from_content(&content);
            if let Err(errors) = result {
                // Reasons never echo the value: a hostile answer cannot inflate the message.
                assert!(errors.to_string().len() < 2048, "{name}: {} bytes of errors", errors.to_string().len());
            }
            value = content.shift_remove(name).expect("just inserted");
        }
        dismantle(value);
    }
}

#[test]
fn from_content_survives_hostile_values() {
    survives_everything::<Profile>();
    survives_everything::<Optionals>();
    survives_everything::<Numbers>();
    survives_everything::<Confirm>();
}

#[test]
fn huge_strings_stop_at_the_bound() {
    for text in ["x".repeat(HUGE), "😀".repeat(HUGE / 4)] {
        let content = json!({"short": text});
        let errors = Optionals::from_content(content.as_object().expect("object")).expect_err("too long");
        assert_eq!(errors.to_string(), "`short` must be at most 5 characters long");
    }
    // Without a bound the string is accepted whole.
    let nickname = "日".repeat(HUGE / 3);
    let mut content = Map::new();
    content.insert("nickname".into(), json!(nickname));
    let errors = Profile::from_content(&content).expect_err("required fields are missing");
    assert!(errors.get("nickname").is_none());
}

#[test]
fn numbers_out_of_every_range_are_named() {
    let cases: &[(&str, Value, &str)] = &[
        ("a_u8", json!(1e308), "must be at most 255"),
        ("a_u8", json!(-1e308), "must be at least 0"),
        ("a_u8", json!(0.5), "must be an integer, found a number with a fraction"),
        ("a_u8", json!(-0.0), ""),
        ("a_u8", json!(255.0), ""),
        ("a_i8", json!(u64::MAX), "must be at most 127"),
        ("a_i8", json!(i64::MIN), "must be at least -128"),
        ("a_i64", json!(u64::MAX), "must be at most 9223372036854775807"),
        ("a_i64", json!(i64::MIN), ""),
        ("a_u64", json!(u64::MAX), ""),
        ("a_u64", json!(1.8446744073709552e19), "must be at most 18446744073709551615"),
        ("a_u64", json!(i64::MIN), "must be at least 0"),
        // i128::MAX is not an f64: the bound stated is the largest f64 below it.
        ("a_i128", json!(1e308), "must be at most 1.7014118346046921e+38"),
        ("a_i128", json!(-1e308), "must be at least -1.7014118346046923e+38"),
        ("a_u128", json!(1.7014118346046923e38), "must be at most 1.7014118346046921e+38"),
        ("a_f32", json!(1e308), "must be at most 3.4028235e+38"),
        ("a_f32", json!(-1e308), "must be at least -3.4028235e+38"),
        ("a_f64", json!(1e308), ""),
        ("a_f64", json!(-1e308), ""),
        ("a_f64", json!(u64::MAX), ""),
        ("unit", json!(1e308), "must be at most 1"),
        ("unit", json!(-5e-324), "must be at least 0"),
        ("a_i32", json!("3"), "must be an integer, found a string"),
        ("a_f64", Value::Null, "must be a number, found null"),
    ];
    for (field, value, reason) in cases {
        let content = json!({ *field: value });
        let errors = Numbers::from_content(content.as_object().expect("object")).expect_err("others are missing");
        match errors.get(field) {
            Some(error) => assert_eq!(error.reason, *reason, "{field} = {value}"),
            None => assert_eq!(*reason, "", "{field} = {value} was accepted"),
        }
    }
}

fn names(errors: &ContentErrors) -> Vec<&str> {
    errors.iter().map(|e| &*e.field).collect()
}

#[test]
fn every_failing_field_is_reported() {
    let all: Vec<&str> = Profile::requested_schema().properties.iter().map(|p| &*p.name).collect();

    // Nothing at all: every required field, in declaration order.
    let errors = Profile::from_content(&Map::new()).expect_err("empty");
    let required: Vec<&str> =
        Profile::requested_schema().properties.iter().filter(|p| p.required).map(|p| &*p.name).collect();
    assert_eq!(names(&errors), required);
    assert!(errors.iter().all(|e| e.reason == "is required"));

    // Every property null: every property fails, optional ones too (null is not "absent").
    let nulls: Map<String, Value> = all.iter().map(|name| ((*name).to_owned(), Value::Null)).collect();
    let errors = Profile::from_content(&nulls).expect_err("all null");
    assert_eq!(names(&errors), all);
    assert!(errors.iter().all(|e| e.reason.ends_with("found null")), "{errors}");

    // Each field wrong in its own way.
    let content = json!({
        "fullName": "A", "contactEmail": "ada.example.com", "homePage": "/relative", "birthday": "2023-02-29",
        "seen_at": "2026-07-28T09:30:00", "workEmail": "Ada <ada@example.com>", "startDate": "2026-7-28",
        "updatedAt": 3, "website": "http:", "subscribed": "yes", "level": 256, "offset": 3.5, "ratio": 100,
        "nickname": ["x"], "age": -1, "colour": "blue", "cabin": "first",
        "colours": ["red", "red", "red", "red"], "extras": ["Spa"], "type": {},
        "unknown": [[[]]]
    });
    let errors = Profile::from_content(content.as_object().expect("object")).expect_err("all wrong");
    let reasons: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        reasons,
        [
            "`fullName` must be at least 2 characters long",
            "`contactEmail` must be an e-mail address",
            "`homePage` must be an absolute URI",
            "`birthday` must be a date (YYYY-MM-DD)",
            "`seen_at` must be a date and time with offset (YYYY-MM-DDThh:mm:ssZ)",
            "`workEmail` must be an e-mail address",
            "`startDate` must be a date (YYYY-MM-DD)",
            "`updatedAt` must be a string, found an integer",
            "`website` is not a valid URL: empty host",
            "`subscribed` must be a boolean, found a string",
            "`level` must be at most 255",
            "`offset` must be an integer, found a number with a fraction",
            "`ratio` must be at most 99.5",
            "`nickname` must be a string, found an array",
            "`age` must be at least 0",
            "`colour` must be one of `red`, `green`, `deep-blue`",
            "`cabin` must be one of `economy`, `premium_economy`, `business`",
            "`colours` must have at most 3 items selected",
            "`extras` item must be one of `Legroom`, `Meal`, `Lounge`",
            "`type` must be a string, found an object",
        ]
    );
}

// ---- hostile schemas ----

#[track_caller]
fn refused(schema: Value) {
    let error = RequestedSchema::from_json(&schema).expect_err("hostile schema accepted");
    assert!(error.to_string().len() < 512, "long error: {} bytes", error.to_string().len());
    dismantle(schema);
}

/// An object of these members. `json!` would not do for deep members: it copies an interpolated
/// value through `to_value`, which recurses once per level.
fn object<const N: usize>(members: [(&str, Value); N]) -> Value {
    Value::Object(members.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
}

/// A one-property form whose property schema is `property`.
fn form_with(property: Value) -> Value {
    object([("type", json!("object")), ("properties", object([("a", property)]))])
}

#[test]
fn from_json_refuses_deep_nesting() {
    refused(deep_array(DEPTH, json!({})));
    refused(deep_object(DEPTH, "properties", json!({})));
    refused(object([("type", json!("object")), ("properties", deep_object(DEPTH, "a", json!({"type": "string"})))]));
    refused(form_with(deep_object(DEPTH, "items", json!({}))));
    refused(form_with(object([("type", json!("array")), ("items", deep_object(DEPTH, "anyOf", json!([])))])));
    refused(form_with(object([("type", json!("string")), ("title", deep_array(DEPTH, json!("t")))])));
    refused(form_with(object([("type", json!("string")), ("enum", deep_array(DEPTH, json!("t")))])));
    refused(form_with(object([("type", json!("string")), ("oneOf", deep_array(DEPTH, json!({})))])));
    refused(object([
        ("type", json!("object")),
        ("properties", json!({"a": {"type": "string"}})),
        ("required", deep_array(DEPTH, json!("a"))),
    ]));
}

#[test]
fn from_json_refuses_oversized_schemas() {
    let properties: Map<String, Value> = (0..100_000).map(|i| (format!("p{i}"), json!({"type": "string"}))).collect();
    refused(json!({"type": "object", "properties": properties}));

    let options: Vec<Value> = (0..100_000).map(|i| json!(format!("v{i}"))).collect();
    refused(json!({"type": "object", "properties": {"a": {"type": "string", "enum": options}}}));
    let titled: Vec<Value> = (0..100_000).map(|i| json!({"const": format!("v{i}"), "title": "t"})).collect();
    refused(json!({"type": "object", "properties": {"a": {"type": "array", "items": {"anyOf": titled}}}}));

    let huge = "x".repeat(HUGE);
    refused(json!({"type": "object", "properties": {"a": {"type": "string", "title": huge}}}));
    refused(json!({"type": "object", "properties": {huge.clone(): {"type": "string"}}}));
    refused(json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": [huge.clone()]}));
    refused(json!({"type": "object", "properties": {"a": {"type": "string", "format": huge}}}));
}

#[test]
fn from_json_stays_linear_at_its_limits() {
    // The most a schema may hold: 256 properties, one with 1024 long options that differ only at
    // the end, one with a default list 100,000 entries long, and a `required` list of 200,000.
    let long = "x".repeat(8 * 1024);
    let long_options: Vec<Value> = (0..MAX_OPTIONS).map(|i| json!(format!("{long}{i:04}"))).collect();
    let options: Vec<Value> = (0..MAX_OPTIONS).map(|i| json!(format!("v{i}"))).collect();
    let default: Vec<Value> = (0..100_000).map(|i| options[i % MAX_OPTIONS].clone()).collect();
    let mut properties = Map::new();
    properties.insert("long".into(), object([("type", json!("string")), ("enum", Value::Array(long_options))]));
    properties.insert(
        "multi".into(),
        object([
            ("type", json!("array")),
            ("items", object([("type", json!("string")), ("enum", Value::Array(options))])),
            ("default", Value::Array(default)),
        ]),
    );
    for i in 2..MAX_PROPERTIES {
        properties.insert(format!("p{i}"), json!({"type": "string", "enum": ["a", "b"]}));
    }
    let names: Vec<String> = properties.keys().cloned().collect();
    let required: Vec<Value> = (0..200_000).map(|i| json!(names[i % names.len()])).collect();
    let schema = object([
        ("type", json!("object")),
        ("properties", Value::Object(properties)),
        ("required", Value::Array(required)),
    ]);
    let parsed = RequestedSchema::from_json(&schema).expect("at the limits, not beyond");
    assert_eq!(parsed.properties.len(), MAX_PROPERTIES);
    assert!(parsed.properties.iter().all(|p| p.required));

    // One option too many, one property too many.
    let mut options: Vec<Value> = (0..=MAX_OPTIONS).map(|i| json!(format!("v{i}"))).collect();
    refused(json!({"type": "object", "properties": {"a": {"type": "string", "enum": options.clone()}}}));
    options.pop();
    assert!(
        RequestedSchema::from_json(
            &json!({"type": "object", "properties": {"a": {"type": "string", "enum": options}}})
        )
        .is_ok()
    );
    let too_many: Map<String, Value> =
        (0..=MAX_PROPERTIES).map(|i| (format!("p{i}"), json!({"type": "boolean"}))).collect();
    refused(json!({"type": "object", "properties": too_many}));
}

#[test]
fn from_json_refuses_odd_values_without_panicking() {
    let odd = [
        form_with(json!({"type": ["string", "null"]})),
        form_with(json!({"type": "string", "minLength": 1e300})),
        form_with(json!({"type": "string", "minLength": -0.5})),
        form_with(json!({"type": "number", "minimum": 1e308, "maximum": -1e308})),
        form_with(json!({"type": "number", "minimum": "0"})),
        form_with(json!({"type": "array", "items": {"enum": ["x"]}})),
        form_with(json!({"type": "array", "items": {"anyOf": [{"const": 1, "title": "x"}]}})),
        form_with(json!({"type": "string", "enum": ["x"], "enumNames": []})),
        form_with(json!({"type": "array", "items": {"type": "string", "enum": ["x"]}, "default": "x"})),
        form_with(json!({"type": "boolean", "default": "true"})),
        json!({"type": "object", "properties": [], "required": []}),
        json!({"type": "object", "properties": {}, "required": "a"}),
        json!({"type": "object", "properties": {}, "required": [null]}),
    ];
    for schema in odd {
        refused(schema);
    }
    // Extreme but well-formed values are kept as they are.
    let ok = json!({"type": "object", "properties": {
        "n": {"type": "number", "minimum": -1e308, "maximum": 1e308, "default": 5e-324},
        "s": {"type": "string", "minLength": 0, "maxLength": u64::MAX}
    }});
    let parsed = RequestedSchema::from_json(&ok).expect("well-formed");
    assert_eq!(parsed.to_json(), ok);
}
