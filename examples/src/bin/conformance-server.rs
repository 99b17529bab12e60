//! The fixture the official MCP conformance suite tests: the tools and prompt its
//! `input-required-result-*` and `server-stateless` scenarios call, each written as an ordinary
//! engine handler, and the content fixtures of its other scenarios (`tools-call-*`,
//! `prompts-get-*`, `resources-*`, `completion-complete`, `caching`, `json-schema-2020-12`,
//! `http-custom-header-server-validation`), with the content each scenario documents.
//!
//! The same server serves the suite's 2025-era scenarios (`server-initialize`, `ping`,
//! `tools-call-elicitation`, `tools-call-sampling`, `elicitation-sep1034-defaults`,
//! `elicitation-sep1330-enums`, ...): a client that opens with `initialize` gets a session, and
//! the handlers below run live, their asks pushed as requests.
//!
//! ```text
//! conformance-server --listen 127.0.0.1:3001     # then: conformance server --url http://127.0.0.1:3001/mcp ...
//! conformance-server --stdio
//! ```

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use elicit_examples::{default_store, exit_usage, key_ring_from_env, parse_args, serve, stores};
use elicit_runtime::Elicit;
use elicit_runtime::rmcp::{BuildError, McpServer, TemplateMatch};
use elicit_runtime::server::task::TaskSupport;
use elicit_runtime::server::{Answer, Engine, Flow, FlowError};
use elicit_runtime::wire::ElicitResult;
use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, CompleteRequestParams, CompleteResult,
    CompletionInfo, ContentBlock, ErrorData, GetPromptRequestParams, GetPromptResponse, GetPromptResult, JsonObject,
    ProgressNotificationParam, Prompt, PromptArgument, PromptMessage, ReadResourceResult, Reference, Resource,
    ResourceContents, ResourceTemplate, Role, Tool,
};
use rmcp::model::{CustomRequest, ServerRequest};
#[allow(deprecated, reason = "logging is deprecated by SEP-2577, but the suite still tests it")]
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::RequestContext;
use serde_json::{Value, json};

const USAGE: &str =
    "usage: conformance-server (--listen ADDR | --stdio) [--store sqlite:PATH|memory|redis://HOST:PORT]";

/// What is your name?
#[derive(Elicit)]
struct UserName {
    /// Your name
    name: String,
}

/// Please confirm.
#[derive(Elicit)]
struct Confirm {
    /// Confirm to continue
    ok: bool,
}

/// What is your favourite colour?
#[derive(Elicit)]
struct Colour {
    /// A colour
    color: String,
}

/// Some context for the prompt, please.
#[derive(Elicit)]
struct PromptContext {
    /// Context to include
    context: String,
}

/// Please provide your information.
#[derive(Elicit)]
struct UserInformation {
    /// User's response
    username: String,
    /// User's email address
    email: String,
}

/// Please review these defaults.
#[derive(Elicit)]
struct Defaults {
    #[elicit(default = "John Doe")]
    name: Option<String>,
    #[elicit(minimum = 0, maximum = 150, default = 30)]
    age: Option<u8>,
    #[elicit(minimum = 0, maximum = 100, default = 95.5)]
    score: Option<f64>,
    #[elicit(default = "active")]
    status: Option<Status>,
    #[elicit(default = true)]
    verified: Option<bool>,
}

#[derive(Elicit)]
#[elicit(rename_all = "lowercase")]
enum Status {
    Active,
    Inactive,
    Pending,
}

fn text(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text.into())])
}

fn tool(name: &'static str, description: &'static str) -> Tool {
    tool_with_schema(name, description, json!({"type": "object", "properties": {}}))
}

fn tool_with_schema(name: &'static str, description: &'static str, schema: Value) -> Tool {
    let schema: JsonObject = match schema {
        Value::Object(schema) => schema,
        _ => JsonObject::new(),
    };
    Tool::new(name, description, Arc::new(schema))
}

fn sampling_params() -> Value {
    json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": "Say hello."}}],
        "maxTokens": 50
    })
}

async fn elicitation(flow: Flow) -> Result<CallToolResult, FlowError> {
    Ok(match flow.form::<UserName>("user_name").await? {
        Answer::Accepted(user) => text(format!("Hello, {}!", user.name)),
        Answer::Declined => text("You declined to give your name."),
        Answer::Cancelled => text("Cancelled."),
    })
}

/// `tools-call-elicitation` (2025-era): one form with the caller's message.
async fn user_information(flow: Flow) -> Result<CallToolResult, FlowError> {
    let arguments = flow.arguments();
    let message = arguments.get("message").and_then(Value::as_str).unwrap_or("Please provide your information");
    let answer = flow
        .form_schema("user", message, Cow::Borrowed(UserInformation::requested_schema()), |content| {
            UserInformation::from_content(content).map(|_| content.clone())
        })
        .await?;
    Ok(text(format!("User response: {}", describe(answer))))
}

/// `elicitation-sep1034-defaults`: a form whose every kind of property has a default.
async fn defaults(flow: Flow) -> Result<CallToolResult, FlowError> {
    let answer = flow
        .form_schema("defaults", Defaults::MESSAGE, Cow::Borrowed(Defaults::requested_schema()), |content| {
            Defaults::from_content(content).map(|_| content.clone())
        })
        .await?;
    Ok(text(format!("Elicitation completed: {}", describe(answer))))
}

fn describe(answer: Answer<serde_json::Map<String, Value>>) -> String {
    match answer {
        Answer::Accepted(content) => format!("action=accept, content={}", Value::Object(content)),
        Answer::Declined => "action=decline".to_owned(),
        Answer::Cancelled => "action=cancel".to_owned(),
    }
}

/// `tools-call-sampling` (2025-era): the caller's prompt, sampled by the client's model.
async fn sample_prompt(flow: Flow) -> Result<CallToolResult, FlowError> {
    let arguments = flow.arguments();
    let prompt = arguments.get("prompt").and_then(Value::as_str).unwrap_or("Say hello.");
    let params = json!({"messages": [{"role": "user", "content": {"type": "text", "text": prompt}}], "maxTokens": 100});
    let result = flow.sampling("sample", params).await?;
    let answer = result.pointer("/content/text").and_then(Value::as_str).unwrap_or("(no text)");
    Ok(text(format!("LLM response: {answer}")))
}

/// `elicitation-sep1330-enums`: every enum form of 2025-11-25, including the legacy `enumNames`,
/// which this toolkit's schema model does not emit (revision 2026-07-28 removed it). So this
/// fixture writes its request by hand and sends it on the session's peer.
async fn enums(
    _request: CallToolRequestParams,
    ctx: RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    let titled = |values: [(&str, &str); 3]| -> Vec<Value> {
        values.iter().map(|(v, t)| json!({"const": v, "title": t})).collect()
    };
    let params = json!({
        "mode": "form",
        "message": "Pick from each kind of list.",
        "requestedSchema": {"type": "object", "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "oneOf": titled([("value1", "First Option"), ("value2", "Second Option"), ("value3", "Third Option")])},
            "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]},
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {"type": "array", "items": {"anyOf": titled([("value1", "First Choice"), ("value2", "Second Choice"), ("value3", "Third Choice")])}},
        }},
    });
    let request = ServerRequest::CustomRequest(CustomRequest::new("elicitation/create", Some(params)));
    let answer = ctx
        .peer
        .send_request(request)
        .await
        .map_err(|e| ErrorData::internal_error(format!("elicitation failed: {e}"), None))?;
    let answer = serde_json::to_value(answer).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    let answer = ElicitResult::from_json(&answer)
        .map_err(|e| ErrorData::invalid_params(format!("elicitation result: {e}"), None))?;
    Ok(CallToolResponse::Complete(text(format!("Elicitation completed: {}", answer.to_json()))))
}

async fn confirm(flow: Flow) -> Result<CallToolResult, FlowError> {
    Ok(match flow.form::<Confirm>("confirm").await? {
        Answer::Accepted(Confirm { ok: true }) => text("state-ok: confirmed"),
        Answer::Accepted(_) => text("state-ok: not confirmed"),
        Answer::Declined | Answer::Cancelled => text("state-ok: no answer"),
    })
}

async fn sampling(flow: Flow) -> Result<CallToolResult, FlowError> {
    let reply = flow.sampling("sample", sampling_params()).await?;
    let said = reply.pointer("/content/text").and_then(Value::as_str).unwrap_or("(no text)");
    Ok(text(format!("The model said: {said}")))
}

async fn roots(flow: Flow) -> Result<CallToolResult, FlowError> {
    let roots = flow.roots("roots").await?;
    let count = roots.get("roots").and_then(Value::as_array).map_or(0, Vec::len);
    Ok(text(format!("{count} root(s)")))
}

async fn multiple_inputs(flow: Flow) -> Result<CallToolResult, FlowError> {
    // Awaited together, so the three asks go out in one round.
    let (user, reply, roots) = tokio::join!(
        flow.form::<UserName>("user_name"),
        flow.sampling("sample", sampling_params()),
        flow.roots("roots"),
    );
    let name = match user? {
        Answer::Accepted(user) => user.name,
        Answer::Declined | Answer::Cancelled => "(anonymous)".to_owned(),
    };
    let (_, roots) = (reply?, roots?);
    let count = roots.get("roots").and_then(Value::as_array).map_or(0, Vec::len);
    Ok(text(format!("{name}: sampled, {count} root(s)")))
}

async fn multi_round(flow: Flow) -> Result<CallToolResult, FlowError> {
    let Answer::Accepted(user) = flow.form::<UserName>("user_name").await? else {
        return Ok(text("No name given."));
    };
    let Answer::Accepted(colour) = flow.form::<Colour>("color").await? else {
        return Ok(text(format!("{} kept their colour secret.", user.name)));
    };
    Ok(text(format!("{} likes {}.", user.name, colour.color)))
}

async fn capabilities(flow: Flow) -> Result<CallToolResult, FlowError> {
    // Prefer a form; fall back to sampling when the client cannot render one.
    match flow.form::<UserName>("user_name").await {
        Ok(Answer::Accepted(user)) => Ok(text(format!("Hello, {}!", user.name))),
        Ok(_) => Ok(text("No name given.")),
        Err(FlowError::Unsupported { .. }) => {
            let reply = flow.sampling("sample", sampling_params()).await?;
            Ok(text(format!("Sampled instead of asking: {reply}")))
        }
        Err(other) => Err(other),
    }
}

async fn prompt(flow: Flow) -> Result<GetPromptResult, FlowError> {
    let context = match flow.form::<PromptContext>("context").await? {
        Answer::Accepted(c) => c.context,
        Answer::Declined | Answer::Cancelled => "no context".to_owned(),
    };
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, format!("Answer using this context: {context}"))])
        .with_description("A prompt that asks for context first"))
}

// ---------------------------------------------------------------------------------------------
// The content fixtures: plain handlers that never ask, with the shapes the scenarios document.

/// A 1x1 red PNG.
const RED_PIXEL_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR42mP4z8AAAAMBAQD3A0FDAAAAAElFTkSuQmCC";
/// Eight samples of 8 kHz mono silence, as WAV.
const SILENT_WAV: &str = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";
const STATIC_TEXT_URI: &str = "test://static-text";
const STATIC_BINARY_URI: &str = "test://static-binary";
const DATA_TEMPLATE: &str = "test://template/{id}/data";
const PROMPT_WITH_ARGUMENTS: &str = "test_prompt_with_arguments";

async fn simple_text(_flow: Flow) -> Result<CallToolResult, FlowError> {
    Ok(text("This is a simple text response for testing."))
}

async fn image_content(_flow: Flow) -> Result<CallToolResult, FlowError> {
    Ok(CallToolResult::success(vec![ContentBlock::image(RED_PIXEL_PNG, "image/png")]))
}

async fn audio_content(_flow: Flow) -> Result<CallToolResult, FlowError> {
    Ok(CallToolResult::success(vec![ContentBlock::audio(SILENT_WAV, "audio/wav")]))
}

async fn embedded_resource(_flow: Flow) -> Result<CallToolResult, FlowError> {
    Ok(CallToolResult::success(vec![ContentBlock::embedded_text(
        "test://embedded-resource",
        "This is an embedded resource content.",
    )]))
}

async fn multiple_content_types(_flow: Flow) -> Result<CallToolResult, FlowError> {
    let data =
        ResourceContents::text(json!({"test": "data", "value": 123}).to_string(), "test://mixed-content-resource")
            .with_mime_type("application/json");
    Ok(CallToolResult::success(vec![
        ContentBlock::text("Multiple content types test:"),
        ContentBlock::image(RED_PIXEL_PNG, "image/png"),
        ContentBlock::resource(data),
    ]))
}

async fn error_handling(_flow: Flow) -> Result<CallToolResult, FlowError> {
    // A tool error is a result with `isError`, not a JSON-RPC error.
    Ok(CallToolResult::error(vec![ContentBlock::text("This tool intentionally returns an error for testing")]))
}

/// Reports 0, 50 and 100 of 100, 50 ms apart, when the request carries a `progressToken`.
/// Notifications turn the HTTP reply into an SSE stream.
async fn with_progress(
    _request: CallToolRequestParams,
    ctx: RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    let token = ctx.meta.get_progress_token();
    for (step, progress) in [0.0, 50.0, 100.0].into_iter().enumerate() {
        if step > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if let Some(token) = &token {
            let param = ProgressNotificationParam::new(token.clone(), progress).with_total(100.0);
            let _ = ctx.peer.notify_progress(param).await;
        }
    }
    Ok(CallToolResponse::Complete(text("Progress reported: 0, 50 and 100 of 100.")))
}

/// The input schema `json-schema-2020-12` expects back verbatim from `tools/list`.
fn json_schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    })
}

async fn echo_arguments(flow: Flow) -> Result<CallToolResult, FlowError> {
    Ok(text(format!("Arguments: {}", flow.arguments())))
}

/// A tool whose `region` travels in the `Mcp-Param-Region` header too (SEP-2243); rmcp checks
/// the header against the body before the handler runs.
fn custom_header_tool() -> Tool {
    tool_with_schema(
        "test_custom_header",
        "Echoes a region sent both in the body and in the Mcp-Param-Region header",
        json!({
            "type": "object",
            "properties": {"region": {"type": "string", "description": "A region", "x-mcp-header": "Region"}},
            "required": ["region"]
        }),
    )
}

async fn custom_header(flow: Flow) -> Result<CallToolResult, FlowError> {
    let arguments = flow.arguments();
    let region = arguments.get("region").and_then(Value::as_str).unwrap_or("(none)");
    Ok(text(format!("Region: {region}")))
}

fn user_text(text: &str) -> PromptMessage {
    PromptMessage::new_text(Role::User, text)
}

async fn simple_prompt(_flow: Flow) -> Result<GetPromptResult, FlowError> {
    Ok(GetPromptResult::new(vec![user_text("This is a simple prompt for testing.")]))
}

/// Reads its arguments straight off the rmcp request: nothing to ask, so no engine.
async fn prompt_with_arguments(
    request: GetPromptRequestParams,
    _ctx: RequestContext<RoleServer>,
) -> Result<GetPromptResponse, ErrorData> {
    let argument = |name: &str| {
        request
            .arguments
            .as_ref()
            .and_then(|a| a.get(name))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| ErrorData::invalid_params(format!("the string argument `{name}` is required"), None))
    };
    let (arg1, arg2) = (argument("arg1")?, argument("arg2")?);
    Ok(GetPromptResponse::Complete(GetPromptResult::new(vec![user_text(&format!(
        "Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"
    ))])))
}

async fn prompt_with_embedded_resource(flow: Flow) -> Result<GetPromptResult, FlowError> {
    let arguments = flow.arguments();
    let Some(uri) = arguments.get("resourceUri").and_then(Value::as_str) else {
        return Err(FlowError::InvalidInput("the string argument `resourceUri` is required".to_owned()));
    };
    let resource = ResourceContents::text("Embedded resource content for testing.", uri);
    Ok(GetPromptResult::new(vec![
        PromptMessage::new(Role::User, ContentBlock::resource(resource)),
        user_text("Please process the embedded resource above."),
    ]))
}

async fn prompt_with_image(_flow: Flow) -> Result<GetPromptResult, FlowError> {
    Ok(GetPromptResult::new(vec![
        PromptMessage::new(Role::User, ContentBlock::image(RED_PIXEL_PNG, "image/png")),
        user_text("Please analyze the image above."),
    ]))
}

async fn static_text(_flow: Flow) -> Result<ReadResourceResult, FlowError> {
    Ok(ReadResourceResult::new(vec![ResourceContents::text(
        "This is the content of the static text resource.",
        STATIC_TEXT_URI,
    )]))
}

async fn static_binary(_flow: Flow) -> Result<ReadResourceResult, FlowError> {
    Ok(ReadResourceResult::new(vec![
        ResourceContents::blob(RED_PIXEL_PNG, STATIC_BINARY_URI).with_mime_type("image/png"),
    ]))
}

async fn template_data(matched: TemplateMatch, _flow: Flow) -> Result<ReadResourceResult, FlowError> {
    let id = matched.get("id").unwrap_or_default();
    let data = json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
    Ok(ReadResourceResult::new(vec![
        ResourceContents::text(data.to_string(), matched.uri.clone()).with_mime_type("application/json"),
    ]))
}

/// Suggestions for the arguments of `test_prompt_with_arguments` and the `id` of the data
/// template, by prefix.
async fn complete(
    request: CompleteRequestParams,
    _ctx: RequestContext<RoleServer>,
) -> Result<CompleteResult, ErrorData> {
    let candidates: &[&str] = match (&request.r#ref, request.argument.name.as_str()) {
        (Reference::Prompt(prompt), "arg1" | "arg2") if prompt.name == PROMPT_WITH_ARGUMENTS => {
            &["paris", "park", "party", "testValue1", "testValue2"]
        }
        (Reference::Resource(template), "id") if template.uri == DATA_TEMPLATE => &["123", "456", "789"],
        _ => return Err(ErrorData::invalid_params("no completions for this reference and argument", None)),
    };
    let values =
        candidates.iter().filter(|c| c.starts_with(&request.argument.value)).map(|c| (*c).to_owned()).collect();
    let completion = CompletionInfo::with_all_values(values).map_err(|e| ErrorData::internal_error(e, None))?;
    Ok(CompleteResult::new(completion))
}

#[allow(deprecated, reason = "the suite still exercises logging, deprecated by SEP-2577")]
fn level_rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

// ---- The Tasks extension's fixtures (`tasks-*` scenarios) ----

/// Delete this file?
#[derive(Elicit)]
struct ConfirmDelete {
    /// Confirm the deletion
    confirm: bool,
}

/// Your name, and a confirmation.
#[derive(Elicit)]
struct NameAndConfirm {
    /// A name
    name: String,
    /// Confirm to continue
    confirm: bool,
}

/// `greet`: never a task.
async fn greet(flow: Flow) -> Result<CallToolResult, FlowError> {
    let arguments = flow.arguments();
    Ok(text(format!("Hello, {}!", arguments.get("name").and_then(Value::as_str).unwrap_or("World"))))
}

/// `slow_compute`: sleeps `seconds` (a task for clients that declare the extension, unless
/// `seconds` is 0), reporting progress each second, and stops early when cancelled.
async fn slow_compute(flow: Flow) -> Result<CallToolResult, FlowError> {
    let arguments = flow.arguments();
    let seconds = arguments.get("seconds").and_then(Value::as_u64).unwrap_or(1).min(3600);
    let label = arguments.get("label").and_then(Value::as_str).unwrap_or("job").to_owned();
    for done in 0..seconds {
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
            () = flow.cancelled() => return Ok(text(format!("{label}: cancelled after {done}s"))),
        }
        let _ = flow
            .progress((done + 1) as f64, Some(seconds as f64), Some(&format!("{label}: {}s of {seconds}s", done + 1)))
            .await;
    }
    Ok(text(format!("{label}: computed in {seconds}s")))
}

/// `failing_job`: task only; after a second, a tool error (`completed` with `isError`).
async fn failing_job(_flow: Flow) -> Result<CallToolResult, FlowError> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    Err(FlowError::handler("the job failed: the upstream service refused it"))
}

/// `protocol_error_job`: task only; ends `failed` with a JSON-RPC error.
async fn protocol_error_job(flow: Flow) -> Result<CallToolResult, FlowError> {
    flow.background().await;
    Err(FlowError::Failed("the job could not run: its backend is unavailable".to_owned()))
}

/// `confirm_delete`: a task that asks for a confirmation.
async fn confirm_delete(flow: Flow) -> Result<CallToolResult, FlowError> {
    let arguments = flow.arguments();
    let filename = arguments.get("filename").and_then(Value::as_str).unwrap_or("the file").to_owned();
    flow.background().await;
    Ok(match flow.form_with::<ConfirmDelete>("confirm", &format!("Delete {filename}?")).await? {
        Answer::Accepted(ConfirmDelete { confirm: true }) => text(format!("Deleted {filename}.")),
        _ => text(format!("Kept {filename}.")),
    })
}

/// `multi_input`: a task with two input requests outstanding at once.
async fn multi_input(flow: Flow) -> Result<CallToolResult, FlowError> {
    flow.background().await;
    let (first, second) = tokio::join!(flow.form::<NameAndConfirm>("first"), flow.form::<NameAndConfirm>("second"));
    let name = |answer: Answer<NameAndConfirm>| match answer {
        Answer::Accepted(answer) => answer.name,
        Answer::Declined | Answer::Cancelled => "(none)".to_owned(),
    };
    Ok(text(format!("Got {} and {}.", name(first?), name(second?))))
}

/// `test_tool_with_task`: asks for a name over Multi Round-Trip, then runs as a task.
async fn tool_with_task(flow: Flow) -> Result<CallToolResult, FlowError> {
    let name = match flow.form::<UserName>("name").await? {
        Answer::Accepted(user) => user.name,
        Answer::Declined | Answer::Cancelled => "stranger".to_owned(),
    };
    flow.background().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    Ok(text(format!("Hello, {name}! Your task is done.")))
}

fn build(engine: Engine) -> Result<McpServer, BuildError> {
    McpServer::builder("elicit-conformance-server", env!("CARGO_PKG_VERSION"), engine)
        .tool(tool("test_input_required_result_elicitation", "Asks for your name, then greets you"), elicitation)
        .tool(tool("test_input_required_result_sampling", "Asks the client's model for a completion"), sampling)
        .tool(tool("test_input_required_result_list_roots", "Asks the client for its roots"), roots)
        .tool(
            tool("test_input_required_result_request_state", "Asks for a confirmation, resuming from sealed state"),
            confirm,
        )
        .tool(
            tool("test_input_required_result_multiple_inputs", "Asks for a name, a completion and roots in one round"),
            multiple_inputs,
        )
        .tool(tool("test_input_required_result_multi_round", "Asks for a name, then a colour"), multi_round)
        .tool(
            tool("test_input_required_result_tampered_state", "Asks for a confirmation; refuses tampered state"),
            confirm,
        )
        .tool(
            tool(
                "test_input_required_result_capabilities",
                "Asks with a form, or samples when forms are not supported",
            ),
            capabilities,
        )
        .tool(
            tool("test_streaming_elicitation", "Asks for your name (never over a server-to-client request)"),
            elicitation,
        )
        .raw_tool(tool("test_missing_capability", "Needs sampling"), |_request, ctx| async move {
            let declared = ctx.meta.client_capabilities().is_some_and(|c| c.sampling.is_some());
            if !declared {
                let mut required = ClientCapabilities::default();
                required.sampling = Some(Default::default());
                return Err(ErrorData::missing_required_client_capability(required));
            }
            Ok(CallToolResponse::Complete(text("sampling is declared")))
        })
        .raw_tool(
            tool("test_logging_tool", "Logs a message when the request asks for logs"),
            |_request, ctx| async move {
                #[allow(deprecated, reason = "logging is deprecated by SEP-2577 but still tested")]
                if let Some(min) = ctx.meta.log_level()
                    && level_rank(LoggingLevel::Info) >= level_rank(min)
                {
                    let param = LoggingMessageNotificationParam::new(LoggingLevel::Info, json!("logging tool called"));
                    let _ = ctx.peer.notify_logging_message(param).await;
                }
                Ok(CallToolResponse::Complete(text("logged")))
            },
        )
        .raw_tool(tool("test_trigger_tool_change", "Pretends the tool list changed"), |_r, _c| async {
            Ok(CallToolResponse::Complete(text("tool list unchanged (no subscriptions advertised)")))
        })
        .raw_tool(tool("test_trigger_prompt_change", "Pretends the prompt list changed"), |_r, _c| async {
            Ok(CallToolResponse::Complete(text("prompt list unchanged (no subscriptions advertised)")))
        })
        .prompt(
            Prompt::new(
                "test_input_required_result_prompt",
                Some("Asks for context before producing its messages"),
                Some(vec![PromptArgument::new("topic").with_description("Optional topic")]),
            ),
            prompt,
        )
        // The 2025-era elicitation and sampling fixtures.
        .tool(
            tool_with_schema(
                "test_elicitation",
                "Asks the user for a username and an e-mail address with the given message",
                json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}),
            ),
            user_information,
        )
        .tool(tool("test_elicitation_sep1034_defaults", "Asks with a form whose every field has a default"), defaults)
        .raw_tool(tool("test_elicitation_sep1330_enums", "Asks with every kind of enum field"), enums)
        .tool(
            tool_with_schema(
                "test_sampling",
                "Asks the client's model to answer the prompt",
                json!({"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]}),
            ),
            sample_prompt,
        )
        // The content fixtures.
        .tool(tool("test_simple_text", "Returns simple text"), simple_text)
        .tool(tool("test_image_content", "Returns an image"), image_content)
        .tool(tool("test_audio_content", "Returns audio"), audio_content)
        .tool(tool("test_embedded_resource", "Returns an embedded resource"), embedded_resource)
        .tool(tool("test_multiple_content_types", "Returns text, an image and a resource"), multiple_content_types)
        .tool(tool("test_error_handling", "Always returns a tool error"), error_handling)
        .raw_tool(tool("test_tool_with_progress", "Reports progress while it works"), with_progress)
        .tool(
            tool_with_schema(
                "json_schema_2020_12_tool",
                "Tool with JSON Schema 2020-12 features",
                json_schema_2020_12(),
            ),
            echo_arguments,
        )
        .tool(custom_header_tool(), custom_header)
        .tool(
            tool_with_schema(
                "greet",
                "Greets by name",
                json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
            ),
            greet,
        )
        .task_tool(
            tool_with_schema(
                "slow_compute",
                "Computes for a number of seconds",
                json!({"type": "object", "properties": {"seconds": {"type": "integer"}, "label": {"type": "string"}}}),
            ),
            TaskSupport::Optional,
            slow_compute,
        )
        .task_tool(tool("failing_job", "A job that ends in a tool error"), TaskSupport::Required, failing_job)
        .task_tool(
            tool("protocol_error_job", "A job that ends in a protocol error"),
            TaskSupport::Required,
            protocol_error_job,
        )
        .task_tool(
            tool_with_schema(
                "confirm_delete",
                "Asks before deleting a file",
                json!({"type": "object", "properties": {"filename": {"type": "string"}}}),
            ),
            TaskSupport::Optional,
            confirm_delete,
        )
        .task_tool(tool("multi_input", "Asks two questions at once"), TaskSupport::Optional, multi_input)
        .task_tool(
            tool("test_tool_with_task", "Asks for a name, then runs as a task"),
            TaskSupport::Optional,
            tool_with_task,
        )
        .prompt(Prompt::new("test_simple_prompt", Some("A prompt without arguments"), None), simple_prompt)
        .raw_prompt(
            Prompt::new(
                PROMPT_WITH_ARGUMENTS,
                Some("A prompt with two arguments"),
                Some(vec![
                    PromptArgument::new("arg1").with_description("First test argument").with_required(true),
                    PromptArgument::new("arg2").with_description("Second test argument").with_required(true),
                ]),
            ),
            prompt_with_arguments,
        )
        .prompt(
            Prompt::new(
                "test_prompt_with_embedded_resource",
                Some("A prompt embedding a resource"),
                Some(vec![
                    PromptArgument::new("resourceUri")
                        .with_description("URI of the resource to embed")
                        .with_required(true),
                ]),
            ),
            prompt_with_embedded_resource,
        )
        .prompt(Prompt::new("test_prompt_with_image", Some("A prompt with an image"), None), prompt_with_image)
        .resource(
            Resource::new(STATIC_TEXT_URI, "static-text")
                .with_description("A static text resource")
                .with_mime_type("text/plain"),
            static_text,
        )
        .resource(
            Resource::new(STATIC_BINARY_URI, "static-binary")
                .with_description("A static PNG image")
                .with_mime_type("image/png"),
            static_binary,
        )
        .resource_template(
            ResourceTemplate::new(DATA_TEMPLATE, "template-data")
                .with_description("JSON data for an id")
                .with_mime_type("application/json"),
            template_data,
        )
        .completion(complete)
        .build()
}

#[tokio::main]
async fn main() {
    let options = parse_args(std::env::args().skip(1), USAGE, &["store"]).unwrap_or_else(|e| exit_usage(&e));
    let keys = key_ring_from_env().unwrap_or_else(|e| exit_usage(&e));
    let store = options.get("store").map_or_else(|| default_store("conformance-server"), str::to_owned);
    let stores = stores(Some(&store)).await.unwrap_or_else(|e| {
        eprintln!("conformance-server: {e}");
        std::process::exit(1)
    });
    let engine = stores.apply(Engine::builder("elicit-conformance-server", keys)).build();
    let server = build(engine).unwrap_or_else(|e| exit_usage(&format!("conformance-server: {e}")));
    if let Err(error) = serve(server, &options.transport, axum::Router::new()).await {
        eprintln!("conformance-server: {error}");
        std::process::exit(1);
    }
}
