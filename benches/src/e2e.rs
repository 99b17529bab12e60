//! The end-to-end benchmark's load generator: it drives any MCP server speaking revision
//! 2026-07-28 over Streamable HTTP, ours being the small server of [`crate::server`].
//!
//! Both sides of the comparison are the same for every server: the tool `ask_name` answers the
//! first call with `input_required` holding one form elicitation (`{name: string}`) and completes
//! on the retry that carries the answer and the echoed `requestState`; the tool `plain` completes
//! at once. A *flow* is the two calls of `ask_name`; a *plain call* is one call of `plain`.
//!
//! The bench server also serves `ask_name_task`: the same flow as a task-capable tool of the Tasks
//! extension (`io.modelcontextprotocol/tasks`), which starts its long work before it asks. A client
//! declaring the extension gets a task and drives it with `tasks/get` and `tasks/update`
//! ([`Client::task_flow`]); any other client gets the Multi Round-Trip flow of `ask_name`.
//!
//! The load generator is plain JSON-RPC over HTTP with the headers and `_meta` of the revision, so
//! the figures measure the servers, not a client library. It accepts `application/json` and SSE
//! replies alike (some servers stream every reply), and checks every reply: a flow whose first
//! reply is not `input_required`, or whose retry does not greet the name it sent, is an error.

use std::time::{Duration, Instant};

use elicit_runtime::wire::tasks::{self as task_wire, TaskStatus};
use elicit_runtime::wire::{META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION};
use elicit_test_support::mcp::McpHttp;
use serde_json::{Value, json};

use crate::server::{FLOW_TOOL, PLAIN_TOOL, TASK_TOOL};

/// The protocol revision spoken.
pub use elicit_runtime::wire::PROTOCOL_VERSION;

/// How long a task flow waits for its task to ask, or to finish, before it counts as an error.
const TASK_WAIT: Duration = Duration::from_secs(10);
/// The pause after the first `tasks/get` that finds the task not there yet; it doubles up to
/// [`POLL_BACKOFF_MAX`]. The first poll is sent at once: the server's suggested `pollIntervalMs`
/// (500 ms by default) is for clients that wait on a person, and would measure the sleep.
const POLL_BACKOFF_FIRST: Duration = Duration::from_millis(1);
/// The longest pause between two polls of one task.
const POLL_BACKOFF_MAX: Duration = Duration::from_millis(4);

/// What one load run exercises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Two-round flows of [`FLOW_TOOL`].
    Flow,
    /// Single calls of [`PLAIN_TOOL`].
    Plain,
    /// The flow of [`FLOW_TOOL`] on a 2025-11-25 session, its ask pushed (see [`crate::legacy`]);
    /// each worker opens one session before its first flow and keeps it.
    Legacy,
    /// The same flow as a task of [`TASK_TOOL`] (see [`Client::task_flow`]).
    Task,
}

impl Mode {
    /// The name used on the command line and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Flow => "flow",
            Mode::Plain => "plain",
            Mode::Legacy => "legacy",
            Mode::Task => "task",
        }
    }
}

/// A plain MCP client over HTTP (the workspace's one, `elicit_test_support::mcp`): one JSON-RPC request
/// per POST.
#[derive(Clone, Debug)]
pub struct Client {
    mcp: McpHttp,
    endpoint: String,
}

impl Client {
    /// A client of the MCP endpoint `endpoint` (e.g. `http://127.0.0.1:8931/mcp`).
    pub fn new(endpoint: &str) -> Result<Client, String> {
        Ok(Client { mcp: McpHttp::new(Duration::from_secs(30)), endpoint: endpoint.to_owned() })
    }

    /// `tools/call` of `tool` with the answers and state of the previous round, if any; returns the
    /// JSON-RPC `result`.
    pub async fn call_tool(
        &self,
        tool: &str,
        input_responses: Option<Value>,
        request_state: Option<&str>,
    ) -> Result<Value, String> {
        let mut params = json!({"name": tool, "arguments": {}, "_meta": meta(false)});
        if let Some(responses) = input_responses {
            params["inputResponses"] = responses;
        }
        if let Some(state) = request_state {
            params["requestState"] = json!(state);
        }
        let mut posted =
            self.mcp.post(&self.endpoint, "tools/call", params).await.map_err(|e| format!("tools/call {tool}: {e}"))?;
        match posted.body.get_mut("result") {
            Some(result) => Ok(result.take()),
            None => Err(format!("tools/call {tool}: HTTP {}: {}", posted.status, posted.body)),
        }
    }

    /// One two-round flow of [`FLOW_TOOL`], every reply checked.
    pub async fn flow(&self, name: &str) -> Result<(), String> {
        let first = self.call_tool(FLOW_TOOL, None, None).await?;
        if first.get("resultType").and_then(Value::as_str) != Some("input_required") {
            return Err(format!("round 1 is not input_required: {first}"));
        }
        let key = first
            .get("inputRequests")
            .and_then(Value::as_object)
            .and_then(|requests| requests.keys().next())
            .ok_or_else(|| format!("round 1 has no input request: {first}"))?;
        let responses = json!({ key: {"action": "accept", "content": {"name": name}} });
        let state = first.get("requestState").and_then(Value::as_str);
        let second = self.call_tool(FLOW_TOOL, Some(responses), state).await?;
        let greeting = result_text(&second).ok_or_else(|| format!("round 2 is not a complete result: {second}"))?;
        if !greeting.contains(name) {
            return Err(format!("round 2 greets someone else: {greeting}"));
        }
        Ok(())
    }

    /// A request of the Tasks extension (`tasks/get`, `tasks/update`) declaring it; returns the
    /// JSON-RPC `result`.
    async fn task_request(&self, method: &str, mut params: serde_json::Map<String, Value>) -> Result<Value, String> {
        params.insert("_meta".into(), meta(true));
        let mut posted = self.mcp.post(&self.endpoint, method, Value::Object(params)).await?;
        match posted.body.get_mut("result") {
            Some(result) => Ok(result.take()),
            None => Err(format!("{method}: HTTP {}: {}", posted.status, posted.body)),
        }
    }

    /// Polls `tasks/get` until the task leaves `working` (and, when `answered` names the key just
    /// answered, until it is no longer asking that key): the first poll at once, then after a
    /// pause of [`POLL_BACKOFF_FIRST`] doubling up to [`POLL_BACKOFF_MAX`]. Returns the task and
    /// the number of polls; an error after [`TASK_WAIT`].
    async fn poll_task(&self, task_id: &str, answered: Option<&str>) -> Result<(Value, u64), String> {
        let deadline = Instant::now() + TASK_WAIT;
        let (mut polls, mut pause) = (0, POLL_BACKOFF_FIRST);
        loop {
            let task = self.task_request(task_wire::TASKS_GET, task_wire::task_params(task_id)).await?;
            polls += 1;
            let status = task.get(task_wire::STATUS).and_then(Value::as_str).and_then(TaskStatus::parse);
            let still_asking = |key: &str| task.pointer(&format!("/inputRequests/{key}")).is_some();
            match status {
                None => return Err(format!("tasks/get: not a task: {task}")),
                Some(TaskStatus::InputRequired) if answered.is_some_and(still_asking) => {}
                Some(TaskStatus::Working) => {}
                Some(_) => return Ok((task, polls)),
            }
            if Instant::now() >= deadline {
                return Err(format!("task {task_id} still {status:?} after {polls} polls: {task}"));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(POLL_BACKOFF_MAX);
        }
    }

    /// One flow of [`TASK_TOOL`] as a task, every reply checked: `tools/call` declaring the Tasks
    /// extension must answer with a task; `tasks/get` polls until it asks exactly one form;
    /// `tasks/update` answers it; `tasks/get` polls until it completes, and its result must greet
    /// the name sent. Returns the HTTP requests made (the call, the update, and every poll).
    pub async fn task_flow(&self, name: &str) -> Result<u64, String> {
        let params = json!({"name": TASK_TOOL, "arguments": {}, "_meta": meta(true)});
        let mut posted = self.mcp.post(&self.endpoint, "tools/call", params).await?;
        let created = posted
            .body
            .get_mut("result")
            .map(Value::take)
            .ok_or_else(|| format!("tools/call {TASK_TOOL}: HTTP {}: {}", posted.status, posted.body))?;
        if created.get("resultType").and_then(Value::as_str) != Some(task_wire::RESULT_TASK) {
            return Err(format!("tools/call {TASK_TOOL} is not a task: {created}"));
        }
        let task_id = created
            .get(task_wire::TASK_ID)
            .and_then(Value::as_str)
            .ok_or_else(|| format!("the task has no taskId: {created}"))?;
        let (asked, polls_asked) = self.poll_task(task_id, None).await?;
        if asked.get(task_wire::STATUS).and_then(Value::as_str) != Some(TaskStatus::InputRequired.as_str()) {
            return Err(format!("the task did not ask: {asked}"));
        }
        let requests = asked.get("inputRequests").and_then(Value::as_object);
        let key = match requests.map(|r| r.iter().collect::<Vec<_>>()).as_deref() {
            Some([(key, request)])
                if request.get("method").and_then(Value::as_str) == Some("elicitation/create")
                    && request.pointer("/params/mode").and_then(Value::as_str).is_none_or(|m| m == "form") =>
            {
                (*key).clone()
            }
            _ => return Err(format!("the task does not ask exactly one form: {asked}")),
        };
        let mut answers = serde_json::Map::new();
        answers.insert(key.clone(), json!({"action": "accept", "content": {"name": name}}));
        let ack = self.task_request(task_wire::TASKS_UPDATE, task_wire::update_params(task_id, answers)).await?;
        task_wire::read_ack(&ack).map_err(|e| format!("tasks/update: {e}: {ack}"))?;
        let (done, polls_done) = self.poll_task(task_id, Some(&key)).await?;
        if done.get(task_wire::STATUS).and_then(Value::as_str) != Some(TaskStatus::Completed.as_str()) {
            return Err(format!("the task did not complete: {done}"));
        }
        let result = done.get(task_wire::RESULT).ok_or_else(|| format!("the completed task has no result: {done}"))?;
        let greeting = result_text(result)
            .filter(|_| result.get("isError") != Some(&Value::Bool(true)))
            .ok_or_else(|| format!("the task's result is not a greeting: {done}"))?;
        if !greeting.contains(name) {
            return Err(format!("the task greets someone else: {greeting}"));
        }
        Ok(2 + polls_asked + polls_done)
    }

    /// One call of [`PLAIN_TOOL`], its reply checked.
    pub async fn plain(&self) -> Result<(), String> {
        let result = self.call_tool(PLAIN_TOOL, None, None).await?;
        match result_text(&result) {
            Some(_) => Ok(()),
            None => Err(format!("plain call is not a complete result: {result}")),
        }
    }
}

/// The request `_meta` of the load generator: the revision, form elicitation, and with `tasks` the
/// Tasks extension declared in the client capabilities.
fn meta(tasks: bool) -> Value {
    let mut capabilities = json!({"elicitation": {"form": {}}});
    if tasks {
        capabilities["extensions"] = json!({ task_wire::EXTENSION: {} });
    }
    json!({
        META_PROTOCOL_VERSION: PROTOCOL_VERSION,
        META_CLIENT_CAPABILITIES: capabilities,
        META_CLIENT_INFO: {"name": "elicit-bench-loadgen", "version": "0.1.0"},
    })
}

/// The text of a complete `CallToolResult`.
fn result_text(result: &Value) -> Option<&str> {
    if result.get("resultType").and_then(Value::as_str).is_some_and(|t| t != "complete") {
        return None;
    }
    result.pointer("/content/0/text").and_then(Value::as_str)
}

/// The outcome of one timed trial.
#[derive(Debug, Clone)]
pub struct Trial {
    /// Units completed (flows or plain calls) inside the window.
    pub completed: u64,
    /// Units that failed.
    pub errors: u64,
    /// The window.
    pub elapsed: Duration,
    /// Latency of each completed unit, sorted.
    pub latencies: Vec<Duration>,
    /// The first error seen, if any.
    pub first_error: Option<String>,
    /// Units completed at all, inside the window or just after it (for CPU per unit).
    pub finished: u64,
    /// HTTP requests made by the units completed inside the window (a task flow's polls vary).
    pub requests: u64,
}

impl Trial {
    /// Completed units per second.
    pub fn rate(&self) -> f64 {
        self.completed as f64 / self.elapsed.as_secs_f64()
    }

    /// The latency at quantile `q` (0..=1).
    pub fn latency(&self, q: f64) -> Duration {
        if self.latencies.is_empty() {
            return Duration::ZERO;
        }
        let at = ((self.latencies.len() - 1) as f64 * q).round() as usize;
        self.latencies[at.min(self.latencies.len() - 1)]
    }
}

/// Runs `concurrency` workers doing `mode` back to back for `duration`, and reports what finished
/// inside the window (a unit started before the deadline and finished after it is not counted).
/// In [`Mode::Legacy`] each worker first opens its session (inside the window, not in a latency).
pub async fn trial(client: &Client, mode: Mode, concurrency: usize, duration: Duration) -> Trial {
    let start = Instant::now();
    let deadline = start + duration;
    let mut workers = tokio::task::JoinSet::new();
    for worker in 0..concurrency {
        let client = client.clone();
        workers.spawn(async move {
            let name = format!("Ada-{worker}");
            let mut latencies = Vec::new();
            let (mut errors, mut first_error, mut late, mut requests) = (0u64, None, 0u64, 0u64);
            let session = match mode {
                Mode::Legacy => match crate::legacy::Session::open(client.mcp.http(), &client.endpoint).await {
                    Ok(session) => Some(session),
                    Err(error) => return (latencies, 1, Some(error), late, requests),
                },
                Mode::Flow | Mode::Plain | Mode::Task => None,
            };
            loop {
                let began = Instant::now();
                if began >= deadline {
                    break;
                }
                // Each unit's HTTP requests: a 2025-era flow POSTs the call and the answer.
                let outcome = match (mode, &session) {
                    (Mode::Legacy, Some(session)) => session.flow(&name).await.map(|()| 2),
                    (Mode::Flow | Mode::Legacy, _) => client.flow(&name).await.map(|()| 2),
                    (Mode::Plain, _) => client.plain().await.map(|()| 1),
                    (Mode::Task, _) => client.task_flow(&name).await,
                };
                let ended = Instant::now();
                match outcome {
                    Ok(made) if ended <= deadline => {
                        latencies.push(ended - began);
                        requests += made;
                    }
                    Ok(_) => late += 1,
                    Err(error) => {
                        errors += 1;
                        first_error.get_or_insert(error);
                        // A server that refuses everything should not spin the CPU the others share.
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            }
            if let Some(session) = session {
                session.close().await;
            }
            (latencies, errors, first_error, late, requests)
        });
    }
    let mut trial = Trial {
        completed: 0,
        errors: 0,
        elapsed: Duration::ZERO,
        latencies: Vec::new(),
        first_error: None,
        finished: 0,
        requests: 0,
    };
    while let Some(joined) = workers.join_next().await {
        match joined {
            Ok((latencies, errors, first_error, late, requests)) => {
                trial.finished += late;
                trial.requests += requests;
                trial.latencies.extend(latencies);
                trial.errors += errors;
                if trial.first_error.is_none() {
                    trial.first_error = first_error;
                }
            }
            Err(error) => {
                trial.errors += 1;
                trial.first_error.get_or_insert(format!("worker failed: {error}"));
            }
        }
    }
    trial.elapsed = duration;
    trial.completed = trial.latencies.len() as u64;
    trial.finished += trial.completed;
    trial.latencies.sort_unstable();
    trial
}

/// The median of `values` (the mean of the middle two for an even count); `0` when empty.
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
mod tests {
    use elicit_runtime::rmcp::McpServer;
    use elicit_runtime::server::task::TaskSupport;
    use elicit_runtime::server::{Engine, Flow, FlowError};
    use elicit_runtime::state::KeyRing;
    use rmcp::model::CallToolResult;

    use super::*;
    use crate::server::{Name, bench_server, text, tool};

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_flow_and_a_plain_call_against_the_bench_server() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = bench_server().http_router(&[]);
        tokio::spawn(async move { axum::serve(listener, app).await });
        let client = Client::new(&format!("http://{addr}/mcp")).unwrap();
        client.flow("Grace").await.unwrap();
        client.plain().await.unwrap();
        assert!(client.task_flow("Grace").await.unwrap() >= 4);
        for mode in [Mode::Flow, Mode::Task] {
            let trial = trial(&client, mode, 4, Duration::from_millis(200)).await;
            assert_eq!(trial.errors, 0, "{:?}", trial.first_error);
            assert!(trial.completed > 0);
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_task_flow_fails_when_the_greeting_is_wrong() {
        // A server whose task tool greets a fixed name: the load generator must count an error.
        async fn wrong(flow: Flow) -> Result<CallToolResult, FlowError> {
            flow.background().await;
            flow.form::<Name>("name").await?;
            Ok(text("Hello, Mallory!".to_owned()))
        }
        let engine = Engine::builder("elicit-bench", KeyRing::generate()).build();
        let server = McpServer::builder("elicit-bench", "0", engine)
            .task_tool(tool(TASK_TOOL, "greets the wrong name"), TaskSupport::Optional, wrong)
            .build()
            .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = server.http_router(&[]);
        tokio::spawn(async move { axum::serve(listener, app).await });
        let client = Client::new(&format!("http://{addr}/mcp")).unwrap();
        let error = client.task_flow("Grace").await.unwrap_err();
        assert!(error.contains("greets someone else"), "{error}");
    }
}
