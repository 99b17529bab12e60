//! The derive: the schema a form asks with and the parser that reads the answer, checked field by
//! field, beside serde and schemars, against an independent validator and the protocol's own
//! schema, under hostile input. The mistakes it refuses at compile time are checked by
//! `tests/compile_fail/`, a package of its own.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking, with the reason")]

mod agreement;
mod corners;
mod fields;
mod flatten;
mod golden;
mod robustness;
mod round_trip;
mod schemars;
mod serde_names;

/// The JSON object in `value`.
fn object(value: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    match value {
        serde_json::Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// The names a schema lists in `required`.
fn required(schema: &serde_json::Value) -> Vec<&str> {
    schema["required"].as_array().map(|r| r.iter().filter_map(serde_json::Value::as_str).collect()).unwrap_or_default()
}
