#![allow(clippy::unwrap_used, clippy::panic, reason = "a failing test should stop loudly")]

use super::*;
use serde_json::{Map, Value, json};

#[test]
fn serialises_every_kind_in_spec_key_order() {
    let schema = RequestedSchema::new(vec![
        Property::required(
            "s",
            PrimitiveSchema::String(StringSchema {
                title: Some("S".into()),
                min_length: Some(1),
                max_length: Some(5),
                format: Some(StringFormat::Email),
                ..Default::default()
            }),
        ),
        Property::optional(
            "n",
            PrimitiveSchema::Number(NumberSchema {
                integer: true,
                minimum: Some(0.into()),
                maximum: Some(255.into()),
                default: Some(1.into()),
                ..Default::default()
            }),
        ),
        Property::optional(
            "m",
            PrimitiveSchema::MultiSelect(MultiSelectSchema {
                options: vec![EnumOption { value: "a".into(), title: Some("A".into()) }],
                titled: true,
                default: Some(vec!["a".into()]),
                ..Default::default()
            }),
        ),
    ]);
    assert_eq!(
        serde_json::to_string(&schema).unwrap(),
        concat!(
            r#"{"type":"object","properties":{"#,
            r#""s":{"type":"string","title":"S","minLength":1,"maxLength":5,"format":"email"},"#,
            r#""n":{"type":"integer","minimum":0,"maximum":255,"default":1},"#,
            r#""m":{"type":"array","items":{"anyOf":[{"const":"a","title":"A"}]},"default":["a"]}"#,
            r#"},"required":["s"]}"#
        )
    );
}

#[test]
#[cfg_attr(
    not(feature = "client"),
    ignore = "property order survives a `serde_json::Map` only with `preserve_order` (feature `client`)"
)]
fn parse_round_trips_every_kind() {
    let json = json!({"type":"object","properties":{
        "s":{"type":"string","title":"S","minLength":1,"maxLength":5,"format":"date","default":"x"},
        "n":{"type":"number","minimum":0.5,"maximum":2,"default":1},
        "b":{"type":"boolean","default":true},
        "e":{"type":"string","enum":["a","b"],"default":"a"},
        "t":{"type":"string","oneOf":[{"const":"a","title":"A"}]},
        "mu":{"type":"array","minItems":1,"maxItems":2,"items":{"type":"string","enum":["a","b"]},"default":["b"]},
        "mt":{"type":"array","items":{"anyOf":[{"const":"a","title":"A"}]}}
    },"required":["s","b"]});
    let schema = RequestedSchema::from_json(&json).unwrap();
    assert_eq!(schema.to_json(), json);
}

#[test]
fn legacy_enum_names_become_titles() {
    let json = json!({"type":"object","properties":{
        "e":{"type":"string","enum":["a","b"],"enumNames":["A","B"]}}});
    let schema = RequestedSchema::from_json(&json).unwrap();
    match &schema.properties[0].schema {
        PrimitiveSchema::SingleSelect(s) => {
            assert!(s.titled);
            assert_eq!(s.options[1].title.as_deref(), Some("B"));
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn refuses_shapes_outside_the_subset() {
    let cases = [
        json!(null),
        json!({"type":"array"}),
        json!({"type":"object"}),
        json!({"type":"object","properties":{"o":{"type":"object","properties":{}}}}),
        json!({"type":"object","properties":{"a":{"type":"array","items":{"type":"string"}}}}),
        json!({"type":"object","properties":{"e":{"type":"string","enum":[]}}}),
        json!({"type":"object","properties":{"e":{"type":"string","enum":["a","a"]}}}),
        json!({"type":"object","properties":{"e":{"type":"string","enum":["a"],"default":"b"}}}),
        json!({"type":"object","properties":{"s":{"type":"string","format":"ipv4"}}}),
        json!({"type":"object","properties":{"s":{"type":"string","minLength":3,"maxLength":2}}}),
        json!({"type":"object","properties":{"s":{"type":"string","minLength":-1}}}),
        json!({"type":"object","properties":{"n":{"type":"integer","minimum":3,"maximum":2}}}),
        json!({"type":"object","properties":{"s":{"type":"string"}},"required":["t"]}),
        json!({"type":"object","properties":{"x":{"type":"null"}}}),
        json!({"type":"object","properties":{"x":{"type":"string","oneOf":[{"const":"a"}]}}}),
    ];
    for case in cases {
        assert!(RequestedSchema::from_json(&case).is_err(), "accepted {case}");
    }
}

#[test]
fn errors_clip_hostile_text() {
    let long = "x".repeat(10_000);
    let json = json!({"type":"object","properties":{"s":{"type":"string","format": long}}});
    let error = RequestedSchema::from_json(&json).unwrap_err().to_string();
    assert!(error.len() < 300, "{error}");
}

fn form() -> RequestedSchema {
    RequestedSchema::from_json(&json!({"type": "object", "properties": {
        "name": {"type": "string"},
        "n": {"type": "integer", "default": 1},
        "ok": {"type": "boolean"},
        "c": {"type": "string", "enum": ["a", "b"]},
        "m": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}
    }, "required": ["name"]}))
    .unwrap()
}

#[test]
fn defaults_fill_only_absent_properties() {
    let content = json!({"name": "Ada", "n": 5}).as_object().unwrap().clone();
    assert_eq!(Value::Object(form().with_defaults(&content)), json!({"name": "Ada", "n": 5}));
    let filled = form().with_defaults(&Map::new());
    assert_eq!(Value::Object(filled), json!({"n": 1}));
}

/// A null for a property is an absent tool argument: dropped, or replaced by the default; a null
/// for a key the form does not have is left alone.
#[test]
fn nulls_count_as_absent() {
    let content = json!({"name": null, "n": null, "other": null}).as_object().unwrap().clone();
    assert_eq!(Value::Object(form().with_defaults(&content)), json!({"other": null, "n": 1}));
}

#[test]
#[cfg_attr(
    not(feature = "client"),
    ignore = "property order survives a `serde_json::Map` only with `preserve_order` (feature `client`)"
)]
fn previous_answers_become_defaults_where_they_fit() {
    let content = json!({"name": "Ada", "n": "five", "ok": true, "c": "z", "m": ["b", "z", 3]});
    let prefilled = form().prefilled_with(content.as_object().unwrap());
    let defaults: Vec<_> = prefilled.properties.iter().map(|p| p.schema.default_value()).collect();
    assert_eq!(defaults, [Some(json!("Ada")), Some(json!(1)), Some(json!(true)), None, Some(json!(["b"]))]);
}

/// Asking again pre-fills an integer property only with an integer a peer can hold: `3.0` is
/// offered as `3`; a fraction or a value past `2^53 - 1` keeps the declared default.
#[test]
fn integer_re_ask_defaults_keep_a_valid_type() {
    let form = RequestedSchema::from_json(&json!({"type": "object", "properties": {
        "n": {"type": "integer", "default": 1},
        "x": {"type": "number"}
    }}))
    .unwrap();
    let default_after = |answer: Value| {
        let prefilled = form.prefilled_with(answer.as_object().unwrap());
        prefilled.properties.iter().map(|p| p.schema.default_value()).collect::<Vec<_>>()
    };
    assert_eq!(default_after(json!({"n": 3.0, "x": 2.5})), [Some(json!(3)), Some(json!(2.5))]);
    assert!(default_after(json!({"n": 3.0}))[0].as_ref().unwrap().is_i64(), "3.0 is offered as the integer 3");
    assert_eq!(default_after(json!({"n": 3.5}))[0], Some(json!(1)));
    assert_eq!(default_after(json!({"n": u64::MAX}))[0], Some(json!(1)));
    assert_eq!(default_after(json!({"n": i64::MIN}))[0], Some(json!(1)));
    assert_eq!(default_after(json!({"n": 9_007_199_254_740_992_i64}))[0], Some(json!(1)));
    assert_eq!(default_after(json!({"n": -9_007_199_254_740_991_i64}))[0], Some(json!(-9_007_199_254_740_991_i64)));
}

/// A refused answer longer than the field allows, or than any text a schema may carry, is not
/// echoed back as the re-ask's default: the client would refuse that form, and the server would
/// send the whole value again.
#[test]
fn re_ask_never_echoes_an_overlong_value() {
    let form = RequestedSchema::from_json(&json!({"type": "object", "properties": {
        "short": {"type": "string", "maxLength": 5, "default": "abc"},
        "free": {"type": "string"}
    }}))
    .unwrap();
    // By name: without `preserve_order` (the derive-only build) the properties come sorted.
    let default_after = |answer: Value| {
        let prefilled = form.prefilled_with(answer.as_object().unwrap());
        ["short", "free"].map(|name| prefilled.property(name).and_then(|p| p.schema.default_value()))
    };
    assert_eq!(default_after(json!({"short": "éééé", "free": "ok"})), [Some(json!("éééé")), Some(json!("ok"))]);
    assert_eq!(default_after(json!({"short": "toolong"}))[0], Some(json!("abc")));
    assert_eq!(default_after(json!({"free": "x".repeat(crate::schema::MAX_TEXT_LEN + 1)}))[1], None);
    let echoed = form.prefilled_with(json!({"free": "x".repeat(crate::schema::MAX_TEXT_LEN)}).as_object().unwrap());
    assert!(RequestedSchema::from_json(&echoed.to_json()).is_ok(), "a client accepts the re-ask");
}
