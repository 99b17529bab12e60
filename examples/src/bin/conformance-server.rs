//! The fixture the official MCP conformance suite tests: the tools and prompt its
//! `input-required-result-*` and `server-stateless` scenarios call, each written as an ordinary
//! engine handler.
//!
//! ```text
//! conformance-server --listen 127.0.0.1:3001     # then: conformance server --url http://127.0.0.1:3001/mcp ...
//! conformance-server --stdio
//! ```

use std::sync::Arc;

use elicit_examples::{exit_usage, key_ring_from_env, parse_args, serve};
use elicit_runtime::Elicit;
use elicit_runtime::rmcp::McpServer;
use elicit_runtime::server::{Answer, Engine, Flow, FlowError};
#[allow(deprecated, reason = "logging is deprecated by SEP-2577, but the suite still tests it")]
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::model::{
    CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock, ErrorData, GetPromptResult, JsonObject,
    Prompt, PromptArgument, PromptMessage, Role, Tool,
};
use serde_json::{Value, json};

const USAGE: &str = "usage: conformance-server (--listen ADDR | --stdio)";

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

fn text(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text.into())])
}

fn tool(name: &'static str, description: &'static str) -> Tool {
    let schema: JsonObject = match json!({"type": "object", "properties": {}}) {
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

fn build(engine: Engine) -> McpServer {
    McpServer::builder("elicit-conformance-server", env!("CARGO_PKG_VERSION"), engine)
        .tool(tool("test_input_required_result_elicitation", "Asks for your name, then greets you"), elicitation)
        .tool(tool("test_input_required_result_sampling", "Asks the client's model for a completion"), sampling)
        .tool(tool("test_input_required_result_list_roots", "Asks the client for its roots"), roots)
        .tool(tool("test_input_required_result_request_state", "Asks for a confirmation, resuming from sealed state"), confirm)
        .tool(tool("test_input_required_result_multiple_inputs", "Asks for a name, a completion and roots in one round"), multiple_inputs)
        .tool(tool("test_input_required_result_multi_round", "Asks for a name, then a colour"), multi_round)
        .tool(tool("test_input_required_result_tampered_state", "Asks for a confirmation; refuses tampered state"), confirm)
        .tool(tool("test_input_required_result_capabilities", "Asks with a form, or samples when forms are not supported"), capabilities)
        .tool(tool("test_streaming_elicitation", "Asks for your name (never over a server-to-client request)"), elicitation)
        .raw_tool(tool("test_missing_capability", "Needs sampling"), |_request, ctx| async move {
            let declared = ctx.meta.client_capabilities().is_some_and(|c| c.sampling.is_some());
            if !declared {
                let mut required = ClientCapabilities::default();
                required.sampling = Some(Default::default());
                return Err(ErrorData::missing_required_client_capability(required));
            }
            Ok(CallToolResponse::Complete(text("sampling is declared")))
        })
        .raw_tool(tool("test_logging_tool", "Logs a message when the request asks for logs"), |_request, ctx| async move {
            #[allow(deprecated, reason = "logging is deprecated by SEP-2577 but still tested")]
            if let Some(min) = ctx.meta.log_level() {
                if level_rank(LoggingLevel::Info) >= level_rank(min) {
                    let param = LoggingMessageNotificationParam::new(LoggingLevel::Info, json!("logging tool called"));
                    let _ = ctx.peer.notify_logging_message(param).await;
                }
            }
            Ok(CallToolResponse::Complete(text("logged")))
        })
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
        .build()
}

#[tokio::main]
async fn main() {
    let options = parse_args(std::env::args().skip(1), USAGE, &[]).unwrap_or_else(|e| exit_usage(&e));
    let keys = key_ring_from_env().unwrap_or_else(|e| exit_usage(&e));
    let engine = Engine::builder("elicit-conformance-server", keys).build();
    if let Err(error) = serve(build(engine), &options.transport, axum::Router::new()).await {
        eprintln!("conformance-server: {error}");
        std::process::exit(1);
    }
}
