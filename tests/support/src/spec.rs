//! The protocol's own schema and examples (vendored in `tests/fixtures/spec/`), and independent
//! validators built from them: for form parameters, and for the answers a generated schema admits.

use std::path::PathBuf;

use serde_json::{Value, json};

/// The protocol's schema and examples, vendored in `tests/fixtures/spec/` (see its README).
pub fn spec_dir() -> PathBuf {
    crate::process::workspace_dir().join("tests/fixtures/spec")
}

fn read_json(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e}\nthe golden tests need the protocol's schema and examples, vendored in \
             tests/fixtures/spec/",
            path.display()
        )
    });
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// The protocol's JSON Schema document.
pub fn spec_schema() -> Value {
    read_json(&spec_dir().join("schema-2026-07-28.json"))
}

/// The official example files whose names match `keep`, with their contents, sorted by name.
pub fn spec_examples(keep: impl Fn(&str) -> bool) -> Vec<(String, Value)> {
    let dir = spec_dir().join("examples");
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| {
        panic!("cannot list {}: {e} (the vendored examples of tests/fixtures/spec/)", dir.display())
    });
    let mut out: Vec<(String, Value)> = entries
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            let name = path.file_name()?.to_str()?.to_owned();
            keep(&name).then(|| (name, read_json(&path)))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// A validator for the spec's `ElicitRequestFormParams`, with the whole document's `$defs` in scope.
pub fn form_params_validator() -> jsonschema::Validator {
    let mut document = spec_schema();
    let root = document.as_object_mut().expect("the spec's schema document is an object");
    root.insert("$ref".to_owned(), json!("#/$defs/ElicitRequestFormParams"));
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&document)
        .unwrap_or_else(|e| panic!("the spec's schema document does not compile: {e}"))
}

/// Why `params` is not a valid `ElicitRequestFormParams`, if it is not.
pub fn form_params_errors(validator: &jsonschema::Validator, requested_schema: &Value) -> Vec<String> {
    let params = json!({"mode": "form", "message": "Please answer", "requestedSchema": requested_schema});
    validator.iter_errors(&params).map(|e| format!("{} at {}", e, e.instance_path())).collect()
}

/// An independent validator for a generated `requestedSchema`, with format assertions on, as a
/// client following JSON Schema 2020-12 would check an answer.
pub fn content_validator(requested_schema: &Value) -> jsonschema::Validator {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(requested_schema)
        .unwrap_or_else(|e| panic!("generated schema does not compile: {e}\n{requested_schema}"))
}
