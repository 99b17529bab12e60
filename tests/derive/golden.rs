//! Golden tests: the schema a derive produces, byte for byte and in property order, checked against
//! the protocol's own JSON Schema; and the official examples read and written back unchanged.

#![allow(clippy::panic, reason = "a test reports a failure by panicking, with the offending input")]

use elicit_test_support::spec;

use elicit_runtime::Elicit;
use elicit_runtime::schema::RequestedSchema;
use serde_json::{Value, json};

use elicit_test_support::forms::{Confirm, Optionals, Profile};

/// Parses expected JSON keeping its key order (the workspace enables `preserve_order`).
fn expected(text: &str) -> Value {
    serde_json::from_str(text).expect("expected JSON parses")
}

/// Compares serialised text, so key order counts (`Value` equality ignores it).
#[track_caller]
fn assert_same_json(actual: &Value, expected: &Value) {
    let actual = serde_json::to_string_pretty(actual).expect("serialises");
    let expected = serde_json::to_string_pretty(expected).expect("serialises");
    assert_eq!(actual, expected, "\n--- actual ---\n{actual}\n--- expected ---\n{expected}");
}

#[track_caller]
fn assert_valid_form_params(schema: &Value) {
    let errors = spec::form_params_errors(&spec::form_params_validator(), schema);
    assert!(errors.is_empty(), "not a valid ElicitRequestFormParams.requestedSchema: {errors:#?}\n{schema:#}");
}

const PROFILE: &str = r#"{
  "type": "object",
  "properties": {
    "fullName": {"type": "string", "title": "Name", "description": "Your full name, as on your passport",
                 "minLength": 2, "maxLength": 40, "default": "Ada"},
    "contactEmail": {"type": "string", "description": "Where we write to", "format": "email"},
    "homePage": {"type": "string", "maxLength": 200, "format": "uri"},
    "birthday": {"type": "string", "format": "date"},
    "seen_at": {"type": "string", "format": "date-time"},
    "workEmail": {"type": "string", "title": "Work e-mail", "format": "email"},
    "startDate": {"type": "string", "format": "date"},
    "updatedAt": {"type": "string", "format": "date-time"},
    "website": {"type": "string", "format": "uri"},
    "subscribed": {"type": "boolean", "description": "Send me the newsletter", "default": true},
    "level": {"type": "integer", "minimum": 0, "maximum": 255},
    "offset": {"type": "integer", "minimum": -10, "maximum": 10, "default": 0},
    "ratio": {"type": "number", "minimum": 0.5, "maximum": 99.5, "default": 1.5},
    "nickname": {"type": "string"},
    "age": {"type": "integer", "minimum": 0, "maximum": 65535},
    "colour": {"type": "string", "enum": ["red", "green", "deep-blue"]},
    "cabin": {"type": "string", "title": "Cabin class", "oneOf": [
        {"const": "economy", "title": "Economy"},
        {"const": "premium_economy", "title": "Premium economy"},
        {"const": "business", "title": "Business class"}
      ], "default": "business"},
    "colours": {"type": "array", "minItems": 1, "maxItems": 3,
                "items": {"type": "string", "enum": ["red", "green", "deep-blue"]}, "default": ["red"]},
    "extras": {"type": "array", "title": "Extras", "items": {"anyOf": [
        {"const": "Legroom", "title": "Extra legroom"},
        {"const": "Meal", "title": "Meal"},
        {"const": "Lounge", "title": "Lounge access"}
      ]}},
    "type": {"type": "string", "oneOf": [
        {"const": "economy", "title": "Economy"},
        {"const": "premium_economy", "title": "Premium economy"},
        {"const": "business", "title": "Business class"}
      ]}
  },
  "required": ["contactEmail", "homePage", "birthday", "seen_at", "workEmail", "startDate", "updatedAt", "website",
               "level", "colour"]
}"#;

#[test]
fn profile_schema_uses_every_kind_in_declaration_order() {
    let schema = Profile::requested_schema().to_json();
    assert_same_json(&schema, &expected(PROFILE));
    assert_valid_form_params(&schema);
}

/// Doc-comment paragraphs stay paragraphs: a blank `///` line separates them.
#[test]
fn doc_comment_paragraphs_become_the_message() {
    assert_eq!(Profile::MESSAGE, "Tell us about yourself\n\nEverything is kept private.");
}

/// The spec validator is not a rubber stamp: shapes outside the subset fail it.
#[test]
fn spec_validator_refuses_foreign_shapes() {
    let validator = spec::form_params_validator();
    for schema in [
        json!({"type": "object", "properties": {"a": {"type": "string", "format": "ipv4"}}}),
        json!({"type": "object", "properties": {"a": {"type": "object"}}}),
        json!({"type": "array", "properties": {}}),
        json!({"type": "object"}),
    ] {
        assert!(!spec::form_params_errors(&validator, &schema).is_empty(), "accepted {schema}");
    }
}

#[test]
fn small_forms() {
    let confirm = Confirm::requested_schema().to_json();
    assert_eq!(
        serde_json::to_string(&confirm).expect("serialises"),
        r#"{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}"#
    );
    assert_valid_form_params(&confirm);
    assert_eq!(Confirm::MESSAGE, "A form with one field.");

    let optionals = Optionals::requested_schema().to_json();
    let titled_extras = r#"{"anyOf": [{"const": "Legroom", "title": "Extra legroom"},
        {"const": "Meal", "title": "Meal"}, {"const": "Lounge", "title": "Lounge access"}]}"#;
    let optionals_expected = format!(
        r#"{{
      "type": "object",
      "properties": {{
        "short": {{"type": "string", "minLength": 1, "maxLength": 5}},
        "email": {{"type": "string", "format": "email"}},
        "link": {{"type": "string", "format": "uri"}},
        "day": {{"type": "string", "format": "date"}},
        "moment": {{"type": "string", "format": "date-time"}},
        "site": {{"type": "string", "format": "uri"}},
        "flag": {{"type": "boolean"}},
        "small": {{"type": "integer", "minimum": -128, "maximum": 127}},
        "big": {{"type": "integer", "minimum": 0, "maximum": 9007199254740991}},
        "wide": {{"type": "integer", "minimum": -9007199254740991, "maximum": 9007199254740991}},
        "single": {{"type": "number", "minimum": -3.4028235e38, "maximum": 3.4028235e38}},
        "double": {{"type": "number", "minimum": -1.5}},
        "colour": {{"type": "string", "enum": ["red", "green", "deep-blue"]}},
        "colours": {{"type": "array", "maxItems": 2,
                     "items": {{"type": "string", "enum": ["red", "green", "deep-blue"]}}}},
        "extras": {{"type": "array", "minItems": 1, "items": {titled_extras}}}
      }}
    }}"#
    );
    assert_same_json(&optionals, &expected(&optionals_expected));
    assert_valid_form_params(&optionals);
    assert_eq!(Optionals::MESSAGE, "Optional extras");
}

#[test]
fn schema_is_built_once() {
    assert!(std::ptr::eq(Profile::requested_schema(), Profile::requested_schema()));
    assert!(std::ptr::eq(Confirm::requested_schema(), Confirm::requested_schema()));
    let from_threads: Vec<usize> = (0..4)
        .map(|_| std::thread::spawn(|| std::ptr::from_ref(Optionals::requested_schema()) as usize))
        .map(|handle| handle.join().expect("thread ran"))
        .collect();
    assert!(from_threads.windows(2).all(|w| w[0] == w[1]));
}

#[test]
fn generated_schemas_parse_back_to_themselves() {
    for schema in [Profile::requested_schema(), Confirm::requested_schema(), Optionals::requested_schema()] {
        let json = schema.to_json();
        let parsed = RequestedSchema::from_json(&json).expect("a generated schema is inside the subset");
        assert_eq!(&parsed, schema);
        assert_same_json(&parsed.to_json(), &json);
    }
}

#[test]
fn derived_content_round_trips_in_declaration_order() {
    let content = json!({
        "fullName": "Ada Lovelace", "contactEmail": "ada@example.com", "homePage": "https://example.com/ada",
        "birthday": "1815-12-10", "seen_at": "2026-07-28T09:30:00+02:00", "workEmail": "ada@work.example",
        "startDate": "2026-07-28", "updatedAt": "2026-07-28T07:30:00Z", "website": "https://example.org/",
        "subscribed": false, "level": 3.0, "offset": -10, "ratio": 2, "colour": "deep-blue",
        "cabin": "premium_economy", "colours": ["red", "green"], "extras": ["Lounge", "Legroom"]
    });
    let profile = Profile::from_content(content.as_object().expect("object")).expect("valid answer");
    assert_eq!(profile.level, 3);
    assert_eq!(profile.ratio, 2.0);
    let written = Value::Object(profile.to_content());
    let keys: Vec<&str> = written.as_object().expect("object").keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "fullName",
            "contactEmail",
            "homePage",
            "birthday",
            "seen_at",
            "workEmail",
            "startDate",
            "updatedAt",
            "website",
            "subscribed",
            "level",
            "offset",
            "ratio",
            "colour",
            "cabin",
            "colours",
            "extras"
        ]
    );
    // Sets are written in their order (the enum's declaration order here).
    assert_eq!(written["extras"], json!(["Legroom", "Lounge"]));
    assert_eq!(Profile::from_content(written.as_object().expect("object")), Ok(profile));
}

// ---- the official examples ----

fn is_primitive_example(name: &str) -> bool {
    let page = name.starts_with("page-elicitation-0")
        && name.as_bytes().get("page-elicitation-0".len()).is_some_and(|d| (b'3'..=b'9').contains(d));
    (name.starts_with("schema-") && name.contains("Schema--")) || page
}

/// Every primitive-schema example of the spec is read by `from_json` and written back unchanged,
/// in the spec's key order.
#[test]
fn official_primitive_schema_examples_round_trip() {
    let examples = spec::spec_examples(|name| is_primitive_example(name) && name.ends_with(".json"));
    assert_eq!(examples.len(), 14, "expected 7 schema-*Schema--* and 7 page-elicitation-0[3-9] examples");
    let validator = spec::form_params_validator();
    for (name, primitive) in examples {
        // The primitive examples are property schemas: wrap each in a one-property form.
        let wrapped = json!({"type": "object", "properties": {"field": primitive}});
        let parsed = RequestedSchema::from_json(&wrapped).unwrap_or_else(|e| panic!("{name}: {e}"));
        let written = parsed.to_json();
        assert_same_json(&written["properties"]["field"], &primitive);
        assert!(spec::form_params_errors(&validator, &written).is_empty(), "{name}");
    }
}

#[test]
fn official_form_params_examples_round_trip() {
    let examples = spec::spec_examples(|name| name.starts_with("schema-ElicitRequestFormParams--"));
    assert_eq!(examples.len(), 2);
    let validator = spec::form_params_validator();
    for (name, params) in examples {
        assert!(validator.is_valid(&params), "{name} is not valid against the spec itself");
        let requested = &params["requestedSchema"];
        let parsed = RequestedSchema::from_json(requested).unwrap_or_else(|e| panic!("{name}: {e}"));
        // These examples write `format` before `description`; our writer keeps the spec's
        // StringSchema order (title, description, ..., format), so compare as values here.
        assert_eq!(&parsed.to_json(), requested, "{name}");
    }
}
