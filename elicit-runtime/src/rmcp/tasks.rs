//! The Tasks extension on rmcp: a task-capable tool's call run by [`Engine::run_task`], and
//! `tasks/get`, `tasks/update` and `tasks/cancel` answered from the engine's task records.

use std::future::Future;

use ::rmcp::RoleServer;
use ::rmcp::handler::server::tool::IntoCallToolResult;
use ::rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, CreateTaskResult, DetailedTask,
    ErrorData, GetTaskParams, GetTaskResult, Task, TaskPayload, TaskStatus as RmcpTaskStatus, UpdateTaskParams,
};
use ::rmcp::service::RequestContext;
use serde_json::{Map, Value};

use super::convert::{handler_error_result, input_request_of_stored, input_required};
use super::extract::Elicitation;
use super::round::Round;
use crate::server::store::StoredJson;
use crate::server::task::{TaskSnapshot, TaskStart, TaskStatus, TaskSupport, no_error, no_result};
use crate::server::{Flow, FlowError};

/// Whether the request declares the Tasks extension on the 2026-07-28 wire (a 2025-era session's
/// `initialize` never enables it).
pub(super) fn declares_tasks(ctx: &RequestContext<RoleServer>) -> bool {
    super::round::declares_revision(ctx) && ctx.meta.client_capabilities().is_some_and(|c| c.supports_tasks())
}

/// The `-32021` of a task-only tool called by a client that does not declare the extension.
pub(super) fn tasks_required() -> ErrorData {
    ErrorData::missing_required_client_capability(ClientCapabilities::builder().enable_tasks().build())
}

fn internal(what: &str, error: impl std::fmt::Display) -> ErrorData {
    tracing::error!(target: "elicit_runtime", %error, "{what}");
    ErrorData::internal_error(format!("{what}: {error}"), None)
}

/// rmcp's status of ours (the same spelling on the wire).
fn rmcp_status(status: TaskStatus) -> RmcpTaskStatus {
    match status {
        TaskStatus::Working => RmcpTaskStatus::Working,
        TaskStatus::InputRequired => RmcpTaskStatus::InputRequired,
        TaskStatus::Completed => RmcpTaskStatus::Completed,
        TaskStatus::Failed => RmcpTaskStatus::Failed,
        TaskStatus::Cancelled => RmcpTaskStatus::Cancelled,
    }
}

/// A snapshot's task members as rmcp's `Task` (what [`TaskSnapshot::into_json`] writes without
/// `detailed`), built from them rather than decoded from their JSON.
fn task_of(
    task_id: String,
    status: TaskStatus,
    status_message: Option<String>,
    created_at: String,
    last_updated_at: String,
    ttl_ms: u64,
    poll_interval_ms: u64,
) -> Task {
    let task = Task::new(task_id, rmcp_status(status), created_at, last_updated_at)
        .with_ttl_ms(ttl_ms.max(1))
        .with_poll_interval_ms(poll_interval_ms.max(1));
    match status_message {
        Some(message) => task.with_status_message(message),
        None => task,
    }
}

/// The seed of a new task as rmcp's `CreateTaskResult`.
fn create_task_result(snapshot: TaskSnapshot) -> CreateTaskResult {
    let TaskSnapshot { task_id, status, status_message, created_at, last_updated_at, ttl_ms, poll_interval_ms, .. } =
        snapshot;
    CreateTaskResult::new(task_of(
        task_id,
        status,
        status_message,
        created_at,
        last_updated_at,
        ttl_ms,
        poll_interval_ms,
    ))
}

/// A task's result or error as the object rmcp holds, read straight from its text; `absent` when
/// the task recorded none.
fn outcome_object(
    stored: Option<StoredJson>,
    absent: impl FnOnce() -> Value,
    what: &str,
) -> Result<Map<String, Value>, ErrorData> {
    let not_an_object = |why: String| internal("a task cannot be encoded", format!("its {what} {why}"));
    match stored {
        Some(stored) => serde_json::from_str::<Map<String, Value>>(stored.get())
            .map_err(|e| not_an_object(format!("does not read as a JSON object: {e}"))),
        None => match absent() {
            Value::Object(object) => Ok(object),
            _ => Err(not_an_object("is not an object".to_owned())),
        },
    }
}

/// A snapshot as rmcp's `DetailedTask`, built from its members: only the input requests go
/// through serde (rmcp's type for each), not the whole task through its flattened wire shape.
fn detailed_task(snapshot: TaskSnapshot) -> Result<DetailedTask, ErrorData> {
    let encoding = |e: serde_json::Error| internal("a task cannot be encoded", e);
    // The status is the payload's (`DetailedTask::new`).
    let task = task_of(
        snapshot.task_id,
        TaskStatus::Working,
        snapshot.status_message,
        snapshot.created_at,
        snapshot.last_updated_at,
        snapshot.ttl_ms,
        snapshot.poll_interval_ms,
    );
    let payload = match snapshot.status {
        TaskStatus::Working => TaskPayload::Working,
        TaskStatus::Cancelled => TaskPayload::Cancelled,
        TaskStatus::InputRequired => TaskPayload::InputRequired {
            input_requests: snapshot
                .input_requests
                .into_iter()
                .map(|(key, request)| Ok((key, input_request_of_stored(&request).map_err(encoding)?)))
                .collect::<Result<_, ErrorData>>()?,
        },
        TaskStatus::Completed => {
            TaskPayload::Completed { result: outcome_object(snapshot.outcome, no_result, "result")? }
        }
        TaskStatus::Failed => TaskPayload::Failed { error: outcome_object(snapshot.outcome, no_error, "error")? },
    };
    Ok(DetailedTask::new(task, payload))
}

impl Elicitation {
    /// Runs a call to a task-capable tool (`support`) for a client that declares the extension
    /// (see [`Engine::run_task`](crate::server::Engine::run_task)): an ordinary result, a Multi
    /// Round-Trip round, or `resultType: "task"` once the handler starts its long work. As in
    /// [`Elicitation::call_tool`], the handler's own error becomes a result with `isError: true`
    /// (inside a task: `completed`); engine errors become JSON-RPC errors (inside a task: `failed`).
    ///
    /// # Errors
    ///
    /// The JSON-RPC error to send.
    pub async fn call_tool_task<T, F, Fut>(
        &self,
        request: CallToolRequestParams,
        ctx: &RequestContext<RoleServer>,
        support: TaskSupport,
        handler: F,
    ) -> Result<CallToolResponse, ErrorData>
    where
        T: IntoCallToolResult,
        F: FnOnce(Flow) -> Fut,
        Fut: Future<Output = Result<T, FlowError>> + Send + 'static,
    {
        self.call_tool_task_round(Round::new(request, ctx)?, support, handler).await
    }

    /// [`Elicitation::call_tool_task`] of a checked round.
    pub(crate) async fn call_tool_task_round<T, F, Fut>(
        &self,
        round: Round<'_, CallToolRequestParams>,
        support: TaskSupport,
        handler: F,
    ) -> Result<CallToolResponse, ErrorData>
    where
        T: IntoCallToolResult,
        F: FnOnce(Flow) -> Fut,
        Fut: Future<Output = Result<T, FlowError>> + Send + 'static,
    {
        let (round, ctx) = round.into_owned();
        let principal = self.principal_of(ctx);
        // An anonymous caller counts against its peer address (served with connect info), as
        // its sessions do.
        let client = ctx
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<axum::extract::ConnectInfo<std::net::SocketAddr>>())
            .map(|axum::extract::ConnectInfo(address)| address.ip().to_string());
        let meta: &Map<String, Value> = &ctx.meta.0.0;
        let round = round.request().client(client.as_deref()).meta(Some(meta)).principal(principal.as_deref());
        let handler = |flow: Flow| {
            let running = handler(flow);
            async move {
                match running.await.map(IntoCallToolResult::into_call_tool_result) {
                    Ok(Ok(CallToolResponse::Complete(result))) => Ok(result),
                    Ok(Ok(_)) => Err(FlowError::Failed("the tool answered with something other than a result".into())),
                    Ok(Err(error)) => Err(FlowError::Failed(error.message.into_owned())),
                    Err(FlowError::Handler(error)) => Ok(handler_error_result(&*error)),
                    Err(error) => Err(error),
                }
            }
        };
        // Boxed, as `Elicitation::run` boxes a round: rmcp's task per request stays small.
        match Box::pin(self.engine().run_task(&round, support, handler)).await? {
            TaskStart::Complete(result) => Ok(CallToolResponse::Complete(result)),
            TaskStart::InputRequired(result) => Ok(CallToolResponse::InputRequired(input_required(&result)?)),
            TaskStart::Task(snapshot) => Ok(CallToolResponse::Task(create_task_result(*snapshot))),
        }
    }

    /// `tasks/get` for the caller's principal.
    ///
    /// # Errors
    ///
    /// `-32602` for an unknown or expired task, `-32603` when the store fails.
    pub async fn get_task(
        &self,
        request: GetTaskParams,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let principal = self.principal_of(ctx);
        let snapshot = Box::pin(self.engine().task_get(&request.task_id, principal.as_deref())).await?;
        detailed_task(snapshot).map(GetTaskResult::new)
    }

    /// `tasks/update` for the caller's principal: answers to outstanding input requests.
    ///
    /// # Errors
    ///
    /// As [`Elicitation::get_task`].
    pub async fn update_task(
        &self,
        request: UpdateTaskParams,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let principal = self.principal_of(ctx);
        let responses = Value::Object(request.input_responses.into_iter().collect());
        Ok(Box::pin(self.engine().task_update(&request.task_id, principal.as_deref(), Some(&responses))).await?)
    }

    /// `tasks/cancel` for the caller's principal.
    ///
    /// # Errors
    ///
    /// As [`Elicitation::get_task`].
    pub async fn cancel_task(
        &self,
        request: CancelTaskParams,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let principal = self.principal_of(ctx);
        Ok(Box::pin(self.engine().task_cancel(&request.task_id, principal.as_deref())).await?)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
mod tests {
    use serde_json::Value;

    use super::*;

    fn snapshot(status: TaskStatus, status_message: Option<&str>) -> TaskSnapshot {
        TaskSnapshot {
            task_id: "t-1".to_owned(),
            status,
            status_message: status_message.map(str::to_owned),
            created_at: "2026-12-04T00:45:30.000Z".to_owned(),
            last_updated_at: "2026-12-04T00:45:31.250Z".to_owned(),
            ttl_ms: 0,
            poll_interval_ms: 500,
            input_requests: std::collections::BTreeMap::new(),
            outcome: None,
        }
    }

    /// The seed built from the snapshot's members is what decoding its JSON gave, for every
    /// status, with and without a status message (and a `ttlMs` of 0 read as 1).
    #[test]
    fn a_seed_is_its_snapshots_json() {
        for status in TaskStatus::ALL {
            for message in [None, Some("The operation is now in progress.")] {
                let snapshot = snapshot(status, message);
                let decoded: Task = serde_json::from_value(Value::Object(snapshot.to_json(false))).unwrap();
                let built = create_task_result(snapshot);
                assert_eq!(
                    serde_json::to_value(&built).unwrap(),
                    serde_json::to_value(CreateTaskResult::new(decoded)).unwrap()
                );
            }
        }
    }

    /// `tasks/get` of an ended task gives its stored result or error as the snapshot's JSON
    /// writes it, the defaults when none was stored; a stored outcome that is not an object is a
    /// clear `-32603`, not a panic.
    #[test]
    fn an_ended_tasks_outcome_reads_from_its_text() {
        let stored = |json: Value| Some(StoredJson::from_json(&json));
        for (status, outcome) in [
            (TaskStatus::Completed, stored(serde_json::json!({"content": [{"type": "text", "text": "Hi"}]}))),
            (TaskStatus::Completed, None),
            (TaskStatus::Failed, stored(serde_json::json!({"code": -32603, "message": "gone"}))),
            (TaskStatus::Failed, None),
        ] {
            let snapshot = TaskSnapshot { outcome, ..snapshot(status, None) };
            let expected = Value::Object(snapshot.to_json(true));
            let served = serde_json::to_value(detailed_task(snapshot).unwrap()).unwrap();
            assert_eq!(served, expected);
        }
        let odd = TaskSnapshot { outcome: stored(Value::from("Hi")), ..snapshot(TaskStatus::Completed, None) };
        let error = detailed_task(odd).unwrap_err();
        assert_eq!(error.code, ::rmcp::model::ErrorCode::INTERNAL_ERROR);
        assert!(error.message.contains("result does not read as a JSON object"), "{error:?}");
    }
}
