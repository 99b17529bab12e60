//! The spec's JSON Schema (`tests/fixtures/spec/schema-2026-07-28.json`, vendored) compiled
//! into validators for the JSON-RPC responses a server sends.

use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::{Value, json};

/// The protocol's schema, vendored in `tests/fixtures/spec/` (see its README).
pub fn schema_path() -> PathBuf {
    crate::process::workspace_dir().join("tests/fixtures/spec/schema-2026-07-28.json")
}

fn document() -> &'static Value {
    static DOCUMENT: OnceLock<Value> = OnceLock::new();
    DOCUMENT.get_or_init(|| {
        let path = schema_path();
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "cannot read the protocol's schema at {}: {e}\nthe wire tests validate every server message against \
                 it (vendored in tests/fixtures/spec/)",
                path.display()
            )
        });
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
    })
}

/// A validator for the definition `name` of the spec's schema (`"$ref": "#/$defs/<name>"` at the
/// root of a copy of the document).
pub fn validator(name: &str) -> jsonschema::Validator {
    let mut document = document().clone();
    let root = document.as_object_mut().expect("the spec's schema document is an object");
    assert!(root.get("$defs").and_then(|d| d.get(name)).is_some(), "the spec's schema has no definition `{name}`");
    root.insert("$ref".to_owned(), json!(format!("#/$defs/{name}")));
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&document)
        .unwrap_or_else(|e| panic!("the spec's schema does not compile for `{name}`: {e}"))
}

/// Which definition a server's reply to `method` must satisfy.
pub fn definition_for(method: &str, reply: &Value) -> &'static str {
    if reply.get("error").is_some() {
        return "JSONRPCErrorResponse";
    }
    match method {
        "tools/call" => "CallToolResultResponse",
        "tools/list" => "ListToolsResultResponse",
        "prompts/get" => "GetPromptResultResponse",
        "prompts/list" => "ListPromptsResultResponse",
        "server/discover" => "DiscoverResultResponse",
        other => panic!("no schema definition is mapped for replies to `{other}`"),
    }
}

struct Validators {
    call_tool: jsonschema::Validator,
    error: jsonschema::Validator,
    list_tools: jsonschema::Validator,
    get_prompt: jsonschema::Validator,
    list_prompts: jsonschema::Validator,
    discover: jsonschema::Validator,
    input_required: jsonschema::Validator,
    call_tool_result: jsonschema::Validator,
}

fn validators() -> &'static Validators {
    static VALIDATORS: OnceLock<Validators> = OnceLock::new();
    VALIDATORS.get_or_init(|| Validators {
        call_tool: validator("CallToolResultResponse"),
        error: validator("JSONRPCErrorResponse"),
        list_tools: validator("ListToolsResultResponse"),
        get_prompt: validator("GetPromptResultResponse"),
        list_prompts: validator("ListPromptsResultResponse"),
        discover: validator("DiscoverResultResponse"),
        input_required: validator("InputRequiredResult"),
        call_tool_result: validator("CallToolResult"),
    })
}

/// Why `reply` (a server's JSON-RPC response to `method`) does not satisfy the spec's schema;
/// empty when it does.
pub fn violations(method: &str, reply: &Value) -> Vec<String> {
    let v = validators();
    let validator = match definition_for(method, reply) {
        "JSONRPCErrorResponse" => &v.error,
        "CallToolResultResponse" => &v.call_tool,
        "ListToolsResultResponse" => &v.list_tools,
        "GetPromptResultResponse" => &v.get_prompt,
        "ListPromptsResultResponse" => &v.list_prompts,
        _ => &v.discover,
    };
    let mut errors: Vec<String> =
        validator.iter_errors(reply).map(|e| format!("{e} at `{}`", e.instance_path())).collect();
    // `result` of a `CallToolResultResponse` is `InputRequiredResult | CallToolResult`, and the
    // first branch needs only a string `resultType`: on its own the union would accept almost any
    // object. So the result is also held to the one branch its `resultType` names, plus the rule
    // the schema cannot state (at least one of `inputRequests` and `requestState`).
    if let Some(result) = reply.get("result").filter(|_| matches!(method, "tools/call" | "prompts/get")) {
        match result.get("resultType").and_then(Value::as_str) {
            Some("input_required") => {
                errors.extend(
                    v.input_required
                        .iter_errors(result)
                        .map(|e| format!("InputRequiredResult: {e} at `{}`", e.instance_path())),
                );
                if result.get("inputRequests").is_none() && result.get("requestState").is_none() {
                    errors.push("InputRequiredResult: neither `inputRequests` nor `requestState`".to_owned());
                }
            }
            Some("complete") | None if method == "tools/call" => {
                errors.extend(
                    v.call_tool_result
                        .iter_errors(result)
                        .map(|e| format!("CallToolResult: {e} at `{}`", e.instance_path())),
                );
            }
            Some("complete") | None => {}
            Some(other) => errors.push(format!("unknown resultType `{other}`")),
        }
    }
    errors
}

/// Panics unless `reply` satisfies the spec's schema for replies to `method`.
pub fn assert_valid(method: &str, reply: &Value) {
    let errors = violations(method, reply);
    assert!(
        errors.is_empty(),
        "the reply to {method} is not a valid {}:\n  {}\nreply: {reply}",
        definition_for(method, reply),
        errors.join("\n  ")
    );
}
