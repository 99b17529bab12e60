//! The end-to-end bench server: the tools `ask_name`, `plain` and `ask_name_task` as engine
//! handlers on the runtime's rmcp adapter, and the tool names every server under test serves and
//! every load generator ([`crate::e2e`], [`crate::legacy`]) calls.

use std::sync::Arc;
use std::time::Duration;

use elicit_runtime::Elicit;
use elicit_runtime::rmcp::McpServer;
use elicit_runtime::server::store::{DEFAULT_MAX_RECORDS, InProcessStore, SqliteStore};
use elicit_runtime::server::task::{TaskConfig, TaskSupport};
use elicit_runtime::server::{Answer, Engine, Flow, FlowError};
use elicit_runtime::state::KeyRing;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use serde_json::{Value, json};

/// The tool that asks one form.
pub const FLOW_TOOL: &str = "ask_name";
/// The tool that asks nothing.
pub const PLAIN_TOOL: &str = "plain";
/// The flow of [`FLOW_TOOL`] as a task-capable tool: it starts its long work first, so a client
/// declaring the Tasks extension gets a task whose one input request is the form.
pub const TASK_TOOL: &str = "ask_name_task";

/// What is your name?
#[derive(Elicit)]
pub struct Name {
    /// Your name
    pub name: String,
}

pub(crate) fn tool(name: &'static str, description: &'static str) -> Tool {
    let schema: JsonObject = match json!({"type": "object", "properties": {}}) {
        Value::Object(schema) => schema,
        _ => JsonObject::new(),
    };
    Tool::new(name, description, Arc::new(schema))
}

pub(crate) fn text(text: String) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

async fn ask_name(flow: Flow) -> Result<CallToolResult, FlowError> {
    Ok(match flow.form::<Name>("name").await? {
        Answer::Accepted(who) => text(format!("Hello, {}!", who.name)),
        Answer::Declined | Answer::Cancelled => text("Hello, stranger!".to_owned()),
    })
}

/// [`ask_name`] as a task: the long work starts before the ask, so the ask is the task's input
/// request.
async fn ask_name_task(flow: Flow) -> Result<CallToolResult, FlowError> {
    flow.background().await;
    ask_name(flow).await
}

async fn plain(_flow: Flow) -> Result<CallToolResult, FlowError> {
    Ok(text("pong".to_owned()))
}

/// The bench server: the three tools, engine handlers on the runtime's rmcp adapter (task
/// records in the engine's default in-process store), with the runtime's default caps on 2025-era
/// sessions.
pub fn bench_server() -> McpServer {
    bench_server_with(None)
}

/// [`bench_server`], with the caps on 2025-era sessions (overall and per client) set to
/// `max_sessions` when given. The load generator's sessions come from a few loopback addresses,
/// each one client against the per-client cap (32 by default): parking thousands of flows at 16
/// per session needs both caps raised. A cap only refuses; raising it costs no memory.
pub fn bench_server_with(max_sessions: Option<usize>) -> McpServer {
    bench_server_on(max_sessions, None, None)
}

/// [`bench_server_with`], with the 2025-era heartbeat period when given (the engine's default
/// otherwise; zero sends none), keeping URL-mode completions, the flow ledger and task records in
/// `store` (a SQLite file) when given, instead of this process's memory.
pub fn bench_server_on(
    max_sessions: Option<usize>,
    heartbeat: Option<Duration>,
    store: Option<Arc<SqliteStore>>,
) -> McpServer {
    // The load generator is one anonymous client (one address: `serve_http` hands the engine
    // each request's) standing for many people, with up to 32 task flows in flight, where the
    // runtime lets one anonymous client run 16 tasks at once: it may run as many as one
    // principal, and its flows may fill the store's cap, not only one owner's quota of it.
    let per_principal = TaskConfig::default().max_live_tasks_per_principal;
    let mut engine =
        Engine::builder("elicit-bench", KeyRing::generate()).max_live_tasks_per_anonymous_client(per_principal);
    if let Some(period) = heartbeat {
        engine = engine.session_heartbeat(period);
    }
    match store {
        Some(store) => engine = engine.store(store.clone()).tasks(store),
        None => {
            engine = engine.store(Arc::new(InProcessStore::new().max_flow_records_per_principal(DEFAULT_MAX_RECORDS)))
        }
    }
    let engine = engine.build();
    let mut builder = McpServer::builder("elicit-bench", env!("CARGO_PKG_VERSION"), engine);
    if let Some(max) = max_sessions {
        builder = builder.max_sessions(max).max_sessions_per_client(max);
    }
    builder
        .tool(tool(FLOW_TOOL, "Asks for a name with one form, then greets it"), ask_name)
        .tool(tool(PLAIN_TOOL, "Answers at once"), plain)
        .task_tool(
            tool(TASK_TOOL, "Asks for a name with one form inside a task, then greets it"),
            TaskSupport::Optional,
            ask_name_task,
        )
        .build()
        .expect("three tools with distinct names")
}
