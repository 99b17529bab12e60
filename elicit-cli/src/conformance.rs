//! `elicit --conformance URL`: the client side of the official conformance suite. Every tool the
//! mock server lists is called through the same driver the `call` command uses, answering forms
//! with values built from their schemas.

use elicit_runtime::client::{AskContext, CallError, CheckedUrl, DriveError, PendingAction, PendingUrl, Responder};
use elicit_runtime::rmcp::client::auth::OAuth;
use elicit_runtime::rmcp::client::{Client, ClientOptions, Protocol, Target};
use elicit_runtime::schema::{MAX_TEXT_LEN, PrimitiveSchema, RequestedSchema};
use elicit_runtime::wire::{self, Capabilities, ElicitAction, ElicitResult, Revision};
use serde_json::{Map, Value, json};

use crate::printable::one_line;

/// Answers every form with plausible values. It shows no pages (no scenario uses them): a URL
/// ends the call rather than being declined on anyone's behalf.
#[derive(Default)]
struct Automatic {
    unpresented: Option<String>,
}

fn sample(schema: &PrimitiveSchema) -> Option<Value> {
    if let Some(default) = schema.default_value() {
        return Some(default);
    }
    Some(match schema {
        PrimitiveSchema::String(s) => json!("x".repeat(sample_length(s.min_length))),
        PrimitiveSchema::Number(n) => n.minimum.clone().map_or(json!(1), Value::Number),
        PrimitiveSchema::Boolean(_) => json!(true),
        PrimitiveSchema::SingleSelect(s) => json!(s.options.first()?.value),
        PrimitiveSchema::MultiSelect(m) => {
            let n = usize::try_from(m.min_items.unwrap_or(0)).unwrap_or(0);
            Value::Array(m.options.iter().take(n).map(|o| json!(o.value)).collect())
        }
    })
}

/// How long a sample string is: the server's `minLength` (4 when it names none), but never longer
/// than the longest text a schema may carry, whatever length the server asks for.
fn sample_length(min_length: Option<u64>) -> usize {
    let wanted = usize::try_from(min_length.unwrap_or(4).max(1)).unwrap_or(usize::MAX);
    wanted.min(MAX_TEXT_LEN)
}

impl Responder for Automatic {
    async fn form(&mut self, _ctx: AskContext<'_>, _message: &str, schema: &RequestedSchema) -> ElicitResult {
        let mut content = Map::new();
        for property in &schema.properties {
            if let Some(value) = sample(&property.schema) {
                content.insert(property.name.to_string(), value);
            }
        }
        ElicitResult::accept(content)
    }

    async fn url(&mut self, _ctx: AskContext<'_>, _message: &str, _url: &CheckedUrl) -> ElicitAction {
        self.unpresented = Some("conformance mode opens no pages".to_owned());
        ElicitAction::Cancel
    }

    fn unpresented(&mut self) -> Option<String> {
        self.unpresented.take()
    }

    async fn pending(&mut self, _ctx: AskContext<'_>, _pending: PendingUrl<'_>) -> PendingAction {
        PendingAction::Cancel
    }
}

/// Arguments for a tool: every property of its input schema filled with a plain value of its type
/// (`tools_call`'s `add_numbers` needs numbers); an object property named `schema` gets the input
/// schema of another tool, verbatim (`json-schema-2020-12-preservation` echoes it back).
fn arguments(schema: &Map<String, Value>, other: Option<&Map<String, Value>>) -> Map<String, Value> {
    let mut arguments = Map::new();
    let properties = schema.get("properties").and_then(Value::as_object);
    for (number, (name, property)) in properties.into_iter().flatten().enumerate() {
        let value = match property.get("type").and_then(Value::as_str) {
            Some("number" | "integer") => json!(number + 2),
            Some("boolean") => json!(true),
            Some("string") => json!("test"),
            Some("object") if name == "schema" => match other {
                Some(other) => Value::Object(other.clone()),
                None => continue,
            },
            _ => continue,
        };
        arguments.insert(name.clone(), value);
    }
    arguments
}

/// The suite names the revision it runs in `MCP_CONFORMANCE_PROTOCOL_VERSION`: a 2025-era one
/// means `initialize` directly (its fixtures answer a probe in ways a real server would not, such
/// as `{}` for any method); otherwise the probe decides.
fn protocol() -> Protocol {
    match std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").as_deref() {
        Ok("2025-11-25") => Protocol::Only(Revision::V2025_11_25),
        Ok("2025-06-18") => Protocol::Only(Revision::V2025_06_18),
        _ => Protocol::Auto,
    }
}

/// What the suite tells the client in `MCP_CONFORMANCE_CONTEXT` (JSON), or `null`.
fn context() -> Value {
    std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null)
}

/// The client ID metadata document the suite's authorization server expects.
const CONFORMANCE_CLIENT_METADATA: &str = "https://conformance-test.local/client-metadata.json";

/// Authorization without a person, with the pre-registered credentials the suite gives in
/// `MCP_CONFORMANCE_CONTEXT` when a scenario has them.
fn oauth() -> Result<OAuth, String> {
    let context = context();
    let text = |key: &str| context.get(key).and_then(Value::as_str).map(str::to_owned);
    let mut oauth =
        OAuth::new(crate::authorize::Headless::new()?, "elicit").client_metadata_url(CONFORMANCE_CLIENT_METADATA);
    if let Some(id) = text("client_id") {
        oauth = oauth.preregistered(id, text("client_secret"));
    }
    Ok(oauth)
}

/// Runs the scenario named by `MCP_CONFORMANCE_SCENARIO` against `url`.
pub(crate) async fn run(url: &str) -> Result<(), String> {
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    // The suite itself gives a scenario 30 s.
    let caps = Capabilities { form: true, url: false, sampling: false, roots: false };
    let mut options = ClientOptions::new("elicit", env!("CARGO_PKG_VERSION"))
        .protocol(protocol())
        .capabilities(caps)
        .timeout(std::time::Duration::from_secs(30));
    if scenario.starts_with("auth/") {
        options = options.oauth(oauth()?);
    }
    let mut client = Client::connect(&Target::http(url), options).await.map_err(|e| e.to_string())?;
    let driver = client.driver().max_rounds(10);
    let tools = client.list_all_tools().await.map_err(|e| e.to_string())?;
    // The calls the suite names (with their arguments), else every tool it lists.
    let calls: Vec<(String, Map<String, Value>)> = match context().get("toolCalls").and_then(Value::as_array) {
        Some(calls) => calls
            .iter()
            .filter_map(|call| {
                let name = call.get("name")?.as_str()?.to_owned();
                Some((name, call.get("arguments").and_then(Value::as_object).cloned().unwrap_or_default()))
            })
            .collect(),
        None => tools
            .iter()
            .map(|tool| {
                let other = tools.iter().find(|t| t.name != tool.name).map(|t| t.input_schema.as_ref());
                (tool.name.to_string(), arguments(&tool.input_schema, other))
            })
            .collect(),
    };
    let mut failures = Vec::new();
    for (name, arguments) in calls {
        let mut params = Map::new();
        params.insert("name".into(), Value::String(name.clone()));
        params.insert("arguments".into(), Value::Object(arguments));
        match client.call_with(&driver, &mut Automatic::default(), wire::TOOLS_CALL, params).await {
            Ok(_) => eprintln!("[{scenario}] {} completed", one_line(&name)),
            // A fixture that serves only `tools/list` (the schema scenarios check what the client
            // does with the listing): it has no `tools/call` to exercise, which is no failure.
            Err(DriveError::Call(CallError::Rpc { code: wire::codes::METHOD_NOT_FOUND, .. })) => {
                eprintln!("[{scenario}] {}: the server serves no tools/call", one_line(&name))
            }
            Err(error) => failures.push(format!("{name}: {error}")),
        }
    }
    client.close().await;
    if failures.is_empty() { Ok(()) } else { Err(failures.join("; ")) }
}
