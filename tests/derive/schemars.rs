//! The `schemars` feature is additive (it is on for this test crate): a type that derives both
//! `Elicit` and `schemars::JsonSchema` compiles, each derive giving what it gives on its own, and
//! only a type that asks for it with `#[elicit(json_schema)]` gets the `requestedSchema` as its
//! JSON Schema.

#![allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]

use elicit_runtime::Elicit;
use serde_json::{Value, json};

/// A type another crate already describes with schemars.
#[derive(Elicit, schemars::JsonSchema, Debug, PartialEq)]
struct Contact {
    /// Your name
    #[elicit(min_length = 1)]
    name: String,
    age: Option<u8>,
}

/// A tool's parameters: the schema is the form's.
#[derive(Elicit, Debug, PartialEq)]
#[elicit(json_schema)]
struct Params {
    #[elicit(minimum = 1, maximum = 9)]
    count: u8,
}

fn json_schema_of<T: schemars::JsonSchema>() -> Value {
    serde_json::to_value(schemars::SchemaGenerator::default().into_root_schema_for::<T>()).unwrap()
}

#[test]
fn a_type_deriving_both_keeps_both() {
    // The Elicit side: its form and parser.
    let content = json!({"name": "Ada", "age": 36});
    assert_eq!(
        Contact::from_content(content.as_object().unwrap()).unwrap(),
        Contact { name: "Ada".into(), age: Some(36) }
    );
    assert_eq!(Contact::requested_schema().to_json()["properties"]["name"]["minLength"], json!(1));
    // The schemars side: schemars' own schema (its `title`, its `format` for a `u8`), not the form.
    let schema = json_schema_of::<Contact>();
    assert_eq!(schema["title"], json!("Contact"), "{schema}");
    assert_eq!(schema["properties"]["age"]["format"], json!("uint8"), "{schema}");
}

#[test]
fn json_schema_opts_in_to_the_requested_schema() {
    let schema = json_schema_of::<Params>();
    assert_eq!(schema["properties"], Params::requested_schema().to_json()["properties"], "{schema}");
    assert_eq!(schema["properties"]["count"]["maximum"], json!(9));
}
