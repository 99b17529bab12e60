//! The Tasks extension (`io.modelcontextprotocol/tasks`): a `tools/call` answered with a task
//! handle (`resultType: "task"`), the task read with `tasks/get`, its input requests answered with
//! `tasks/update`, cancelled with `tasks/cancel`, and its status pushed as `notifications/tasks` on
//! a `subscriptions/listen` stream.
//!
//! As in the rest of [`wire`](super), serialisation produces exactly the extension's JSON, and
//! parsing dispatches on the discriminating members (`resultType`, `status`), tolerating members the
//! extension does not define. A task's `inputRequests` are the same values as Multi Round-Trip
//! Requests' and parse with [`InputRequest::from_json`].
//!
//! ```
//! use elicit_runtime::wire::tasks::{CallResult, TaskState};
//! use serde_json::json;
//!
//! let created = json!({"resultType": "task", "taskId": "t1", "status": "working",
//!     "createdAt": "2026-08-01T10:00:00Z", "lastUpdatedAt": "2026-08-01T10:00:00Z", "ttlMs": null});
//! let CallResult::Task(task) = CallResult::from_json(&created).unwrap() else { panic!() };
//! assert_eq!(task.task.task_id, "t1");
//!
//! let got = json!({"resultType": "complete", "taskId": "t1", "status": "completed",
//!     "createdAt": "2026-08-01T10:00:00Z", "lastUpdatedAt": "2026-08-01T10:00:09Z", "ttlMs": 60000,
//!     "result": {"content": [{"type": "text", "text": "done"}]}});
//! let detailed = elicit_runtime::wire::tasks::DetailedTask::from_result(&got).unwrap();
//! assert!(matches!(detailed.state, TaskState::Completed(_)));
//! ```

use std::fmt;

use serde_json::{Map, Value, json};

use super::{
    INPUT_REQUESTS, INPUT_RESPONSES, InputRequest, InputRequiredResult, META, META_CLIENT_CAPABILITIES,
    RESULT_COMPLETE, RESULT_TYPE, ResultError, clip, clip_json, codes,
};

/// The extension's identifier, the key under `extensions` in client and server capabilities.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// The member of `ClientCapabilities` and `ServerCapabilities` listing extensions.
pub const EXTENSIONS: &str = "extensions";

/// `resultType` of a `CreateTaskResult`: the request runs as a task.
pub const RESULT_TASK: &str = "task";

/// The method reading a task's current state.
pub const TASKS_GET: &str = "tasks/get";
/// The method delivering answers to a task's outstanding input requests.
pub const TASKS_UPDATE: &str = "tasks/update";
/// The method asking a task to stop.
pub const TASKS_CANCEL: &str = "tasks/cancel";
/// The method opening a stream of notifications (with `taskIds`, of task status).
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
/// The notification acknowledging a `subscriptions/listen`.
pub const SUBSCRIPTIONS_ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
/// The notification carrying a task's state.
pub const NOTIFICATIONS_TASKS: &str = "notifications/tasks";
/// `_meta` key of the subscription (the listen request's JSON-RPC id) on notifications.
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// The 2025-11-25 blocking result method; removed, answered `-32601`.
pub const REMOVED_TASKS_RESULT: &str = "tasks/result";
/// The 2025-11-25 listing method; removed, answered `-32601`.
pub const REMOVED_TASKS_LIST: &str = "tasks/list";

/// Member of the task's identifier.
pub const TASK_ID: &str = "taskId";
/// Member of the task's status.
pub const STATUS: &str = "status";
/// Member of the completed task's result.
pub const RESULT: &str = "result";
/// Member of the failed task's error.
pub const ERROR: &str = "error";
/// Member of the task ids a listen request and its acknowledgement name.
pub const TASK_IDS: &str = "taskIds";
/// Member of a listen request's filter.
pub const NOTIFICATIONS: &str = "notifications";

/// The JSON-RPC error codes of the extension, by what they mean here.
pub mod errors {
    use super::codes;

    /// The `taskId` is unknown, expired, or not the caller's (`tasks/get` must, `tasks/update` and
    /// `tasks/cancel` should answer it).
    pub const UNKNOWN_TASK: i32 = codes::INVALID_PARAMS;
    /// The request did not declare the extension: on `tasks/*`, on a listen for task ids, and on a
    /// `tools/call` that can only run as a task. Its `data` is [`missing_extension_data`](super::missing_extension_data).
    pub const EXTENSION_NOT_DECLARED: i32 = codes::MISSING_REQUIRED_CLIENT_CAPABILITY;
    /// `tasks/result` and `tasks/list` no longer exist.
    pub const REMOVED_METHOD: i32 = codes::METHOD_NOT_FOUND;
    /// `Mcp-Name` is not the request's `taskId` (or `Mcp-Method` is not its method).
    pub const HEADER_MISMATCH: i32 = codes::HEADER_MISMATCH;
    /// The server failed internally.
    pub const INTERNAL: i32 = codes::INTERNAL_ERROR;
}

/// The `data` of a `-32021` error for a request that did not declare the extension.
///
/// ```
/// assert_eq!(
///     elicit_runtime::wire::tasks::missing_extension_data(),
///     serde_json::json!({"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}})
/// );
/// ```
pub fn missing_extension_data() -> Value {
    json!({"requiredCapabilities": {EXTENSIONS: {EXTENSION: {}}}})
}

/// Adds the extension to a `ClientCapabilities` or `ServerCapabilities` object (`{}`, no settings),
/// keeping any other extension; a non-object `capabilities` is replaced by one.
pub fn declare(capabilities: &mut Value) {
    if !capabilities.is_object() {
        *capabilities = Value::Object(Map::new());
    }
    let Value::Object(caps) = capabilities else { return };
    let extensions = caps.entry(EXTENSIONS).or_insert_with(|| Value::Object(Map::new()));
    if !extensions.is_object() {
        *extensions = Value::Object(Map::new());
    }
    if let Value::Object(extensions) = extensions {
        extensions.insert(EXTENSION.into(), Value::Object(Map::new()));
    }
}

/// Declares the extension in one request's `_meta` (its `clientCapabilities`).
pub fn declare_in_meta(meta: &mut Map<String, Value>) {
    declare(meta.entry(META_CLIENT_CAPABILITIES).or_insert_with(|| Value::Object(Map::new())));
}

/// Whether a capabilities object declares the extension (as an object; its members are ignored).
pub fn declared(capabilities: Option<&Map<String, Value>>) -> bool {
    capabilities
        .and_then(|caps| caps.get(EXTENSIONS))
        .and_then(Value::as_object)
        .and_then(|extensions| extensions.get(EXTENSION))
        .is_some_and(Value::is_object)
}

/// Whether one request's `_meta` declares the extension. A legacy `tasks` capability does not.
///
/// ```
/// use elicit_runtime::wire::tasks::{declare_in_meta, declared_in_meta};
///
/// let mut meta = serde_json::Map::new();
/// assert!(!declared_in_meta(Some(&meta)));
/// declare_in_meta(&mut meta);
/// assert!(declared_in_meta(Some(&meta)));
/// ```
pub fn declared_in_meta(meta: Option<&Map<String, Value>>) -> bool {
    declared(meta.and_then(|m| m.get(META_CLIENT_CAPABILITIES)).and_then(Value::as_object))
}

/// A task's status. Serde spells it as the wire does ([`TaskStatus::as_str`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Running.
    Working,
    /// Waiting for answers to its `inputRequests`.
    InputRequired,
    /// Finished with a result (a tool error, `isError: true`, is a completed task too).
    Completed,
    /// Ended by a JSON-RPC error.
    Failed,
    /// Stopped on request.
    Cancelled,
}

impl TaskStatus {
    /// Every status, in the order of the state machine.
    pub const ALL: [TaskStatus; 5] = [
        TaskStatus::Working,
        TaskStatus::InputRequired,
        TaskStatus::Completed,
        TaskStatus::Failed,
        TaskStatus::Cancelled,
    ];

    /// The wire spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }

    /// Parses the wire spelling; anything else is `None`.
    pub fn parse(status: &str) -> Option<TaskStatus> {
        TaskStatus::ALL.into_iter().find(|s| s.as_str() == status)
    }

    /// Whether the status is final: once reached, the task never changes again.
    pub const fn is_terminal(self) -> bool {
        matches!(self, TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled)
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The extension's `Task`: the members every task representation carries, flat on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// The server-generated, unguessable identifier.
    pub task_id: String,
    /// The current status.
    pub status: TaskStatus,
    /// Human-readable progress, what it waits on, or why it ended.
    pub status_message: Option<String>,
    /// ISO 8601 creation time.
    pub created_at: String,
    /// ISO 8601 time of the last change.
    pub last_updated_at: String,
    /// Time to live from creation, in milliseconds; `None` = unlimited (`null` on the wire, always
    /// present).
    pub ttl_ms: Option<u64>,
    /// The suggested poll interval, in milliseconds.
    pub poll_interval_ms: Option<u64>,
}

impl Task {
    /// Writes the task's members into `object` (`ttlMs` always, as `null` when unlimited).
    pub fn write(&self, object: &mut Map<String, Value>) {
        object.insert(TASK_ID.into(), Value::String(self.task_id.clone()));
        object.insert(STATUS.into(), Value::String(self.status.as_str().into()));
        if let Some(message) = &self.status_message {
            object.insert("statusMessage".into(), Value::String(message.clone()));
        }
        object.insert("createdAt".into(), Value::String(self.created_at.clone()));
        object.insert("lastUpdatedAt".into(), Value::String(self.last_updated_at.clone()));
        object.insert("ttlMs".into(), self.ttl_ms.map_or(Value::Null, Value::from));
        if let Some(interval) = self.poll_interval_ms {
            object.insert("pollIntervalMs".into(), Value::from(interval));
        }
    }

    /// Reads the task's members from a result or notification object.
    ///
    /// `ttlMs` and `pollIntervalMs` that are not positive integers are read as absent (the schema
    /// allows any integer; zero or a negative interval means nothing useful), and an absent `ttlMs`
    /// as unlimited. The timestamps are kept as sent.
    pub fn read(object: &Map<String, Value>) -> Result<Task, TaskWireError> {
        let string = |member: &'static str| -> Result<String, TaskWireError> {
            match object.get(member) {
                Some(Value::String(s)) => Ok(s.clone()),
                Some(_) => Err(TaskWireError::NotAString(member)),
                None => Err(TaskWireError::Missing(member)),
            }
        };
        let task_id = string(TASK_ID)?;
        let status = string(STATUS)?;
        let status = TaskStatus::parse(&status).ok_or_else(|| TaskWireError::UnknownStatus(clip(&status)))?;
        let status_message = match object.get("statusMessage") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(TaskWireError::NotAString("statusMessage")),
        };
        let positive = |member: &'static str| -> Result<Option<u64>, TaskWireError> {
            match object.get(member) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Ok(n.as_u64().filter(|n| *n > 0)),
                Some(_) => Err(TaskWireError::NotAnInteger(member)),
            }
        };
        Ok(Task {
            task_id,
            status,
            status_message,
            created_at: string("createdAt")?,
            last_updated_at: string("lastUpdatedAt")?,
            ttl_ms: positive("ttlMs")?,
            poll_interval_ms: positive("pollIntervalMs")?,
        })
    }
}

/// The JSON-RPC error a failed task ended with (`{code, message, data?}`).
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorObject {
    /// The error code.
    pub code: i64,
    /// The error message.
    pub message: String,
    /// The error data.
    pub data: Option<Value>,
}

impl ErrorObject {
    /// The error as sent.
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert("code".into(), Value::from(self.code));
        object.insert("message".into(), Value::String(self.message.clone()));
        if let Some(data) = &self.data {
            object.insert("data".into(), data.clone());
        }
        Value::Object(object)
    }

    /// Parses an error object: an integer `code` and a string `message` are required.
    pub fn from_json(value: &Value) -> Result<ErrorObject, TaskWireError> {
        let object = value.as_object().ok_or(TaskWireError::NotAnObjectMember(ERROR))?;
        let code = object.get("code").and_then(Value::as_i64).ok_or(TaskWireError::NotAnInteger("error.code"))?;
        let message =
            object.get("message").and_then(Value::as_str).ok_or(TaskWireError::NotAString("error.message"))?.to_owned();
        Ok(ErrorObject { code, message, data: object.get("data").cloned() })
    }
}

/// What a task holds beside its [`Task`] members, by status: the extension's `DetailedTask` union.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskState {
    /// `working`.
    Working,
    /// `input_required`: every outstanding input request, in the order the server lists them.
    InputRequired(Vec<(String, InputRequest)>),
    /// `completed`: exactly what the original request would have returned (a `CallToolResult`).
    Completed(Map<String, Value>),
    /// `failed`: the JSON-RPC error of the execution.
    Failed(ErrorObject),
    /// `cancelled`.
    Cancelled,
}

impl TaskState {
    /// The status this state goes with.
    pub fn status(&self) -> TaskStatus {
        match self {
            TaskState::Working => TaskStatus::Working,
            TaskState::InputRequired(_) => TaskStatus::InputRequired,
            TaskState::Completed(_) => TaskStatus::Completed,
            TaskState::Failed(_) => TaskStatus::Failed,
            TaskState::Cancelled => TaskStatus::Cancelled,
        }
    }
}

/// A task with its status-specific payload: what `tasks/get` answers and `notifications/tasks`
/// carries.
#[derive(Debug, Clone, PartialEq)]
pub struct DetailedTask {
    /// The task's members. On the wire its `status` is the state's (see [`DetailedTask::write`]).
    pub task: Task,
    /// The payload of its status.
    pub state: TaskState,
}

impl DetailedTask {
    /// Writes the task's members and its payload into `object`; the status written is
    /// `state`'s, whatever `task.status` says.
    pub fn write(&self, object: &mut Map<String, Value>) {
        let task = Task { status: self.state.status(), ..self.task.clone() };
        task.write(object);
        match &self.state {
            TaskState::Working | TaskState::Cancelled => {}
            TaskState::InputRequired(requests) => {
                let requests: Map<String, Value> =
                    requests.iter().map(|(key, request)| (key.clone(), request.to_json())).collect();
                object.insert(INPUT_REQUESTS.into(), Value::Object(requests));
            }
            TaskState::Completed(result) => {
                object.insert(RESULT.into(), Value::Object(result.clone()));
            }
            TaskState::Failed(error) => {
                object.insert(ERROR.into(), error.to_json());
            }
        }
    }

    /// Reads a task and the payload its status requires (members of other statuses are ignored).
    pub fn read(object: &Map<String, Value>) -> Result<DetailedTask, TaskWireError> {
        let task = Task::read(object)?;
        let state = match task.status {
            TaskStatus::Working => TaskState::Working,
            TaskStatus::Cancelled => TaskState::Cancelled,
            TaskStatus::InputRequired => {
                let requests = match object.get(INPUT_REQUESTS) {
                    Some(Value::Object(requests)) => requests,
                    Some(_) => return Err(TaskWireError::NotAnObjectMember(INPUT_REQUESTS)),
                    None => return Err(TaskWireError::Missing(INPUT_REQUESTS)),
                };
                let requests = requests
                    .iter()
                    .map(|(key, raw)| match InputRequest::from_json(raw) {
                        Ok(request) => Ok((key.clone(), request)),
                        Err(error) => Err(TaskWireError::Request(ResultError::Request { key: key.clone(), error })),
                    })
                    .collect::<Result<_, _>>()?;
                TaskState::InputRequired(requests)
            }
            TaskStatus::Completed => match object.get(RESULT) {
                Some(Value::Object(result)) => TaskState::Completed(result.clone()),
                Some(_) => return Err(TaskWireError::NotAnObjectMember(RESULT)),
                None => return Err(TaskWireError::Missing(RESULT)),
            },
            TaskStatus::Failed => match object.get(ERROR) {
                Some(error) => TaskState::Failed(ErrorObject::from_json(error)?),
                None => return Err(TaskWireError::Missing(ERROR)),
            },
        };
        Ok(DetailedTask { task, state })
    }

    /// The result of `tasks/get` (`resultType: "complete"`).
    pub fn to_result(&self) -> Value {
        let mut object = Map::new();
        object.insert(RESULT_TYPE.into(), Value::String(RESULT_COMPLETE.into()));
        self.write(&mut object);
        Value::Object(object)
    }

    /// Reads the result of `tasks/get`. Its `resultType` must be `complete`; an absent one and
    /// `task` (which some of the extension's own examples show) are tolerated.
    pub fn from_result(value: &Value) -> Result<DetailedTask, TaskWireError> {
        let object = value.as_object().ok_or(TaskWireError::NotAnObject)?;
        match object.get(RESULT_TYPE) {
            None => {}
            Some(Value::String(kind)) if kind == RESULT_COMPLETE || kind == RESULT_TASK => {}
            Some(other) => return Err(TaskWireError::UnexpectedResultType(clip_json(other))),
        }
        DetailedTask::read(object)
    }
}

/// The params of `tasks/get` or `tasks/cancel` (without `_meta`, which the sender adds).
pub fn task_params(task_id: &str) -> Map<String, Value> {
    let mut params = Map::new();
    params.insert(TASK_ID.into(), Value::String(task_id.into()));
    params
}

/// The params of `tasks/update`: answers keyed like the task's input requests.
///
/// ```
/// use elicit_runtime::wire::ElicitResult;
/// use elicit_runtime::wire::tasks::update_params;
///
/// let mut answers = serde_json::Map::new();
/// answers.insert("confirm".into(), ElicitResult::decline().to_json());
/// assert_eq!(
///     serde_json::Value::Object(update_params("t1", answers)),
///     serde_json::json!({"taskId": "t1", "inputResponses": {"confirm": {"action": "decline"}}})
/// );
/// ```
pub fn update_params(task_id: &str, input_responses: Map<String, Value>) -> Map<String, Value> {
    let mut params = task_params(task_id);
    params.insert(INPUT_RESPONSES.into(), Value::Object(input_responses));
    params
}

/// The params of a `subscriptions/listen` asking for the status of these tasks.
pub fn listen_params(task_ids: &[String]) -> Map<String, Value> {
    let mut params = Map::new();
    params.insert(NOTIFICATIONS.into(), json!({ TASK_IDS: task_ids }));
    params
}

/// The task ids a listen request or its acknowledgement names (`notifications.taskIds`); none
/// when absent.
pub fn listened_task_ids(params: &Map<String, Value>) -> Result<Vec<String>, TaskWireError> {
    let Some(filter) = params.get(NOTIFICATIONS) else { return Ok(Vec::new()) };
    let filter = filter.as_object().ok_or(TaskWireError::NotAnObjectMember(NOTIFICATIONS))?;
    match filter.get(TASK_IDS) {
        None => Ok(Vec::new()),
        Some(Value::Array(ids)) => {
            ids.iter().map(|id| id.as_str().map(str::to_owned).ok_or(TaskWireError::NotAString(TASK_IDS))).collect()
        }
        Some(_) => Err(TaskWireError::NotAString(TASK_IDS)),
    }
}

/// The acknowledgement of `tasks/update` and `tasks/cancel`: an empty result,
/// `{"resultType": "complete"}`.
pub fn ack() -> Value {
    json!({ RESULT_TYPE: RESULT_COMPLETE })
}

/// Reads an acknowledgement: an object whose `resultType`, if any, is `complete`. Other members
/// (`_meta`) are ignored; the effect is observed with `tasks/get`.
pub fn read_ack(value: &Value) -> Result<(), TaskWireError> {
    let object = value.as_object().ok_or(TaskWireError::NotAnObject)?;
    match object.get(RESULT_TYPE) {
        None => Ok(()),
        Some(Value::String(kind)) if kind == RESULT_COMPLETE => Ok(()),
        Some(other) => Err(TaskWireError::UnexpectedResultType(clip_json(other))),
    }
}

/// A `CreateTaskResult`: the task handle a server answers a `tools/call` with.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateTaskResult {
    /// The task's seed state (typically `working`).
    pub task: Task,
    /// The result's `_meta`, if any.
    pub meta: Option<Map<String, Value>>,
}

impl CreateTaskResult {
    /// The result (`resultType: "task"`): no `result`, `error`, `inputRequests` or `requestState`.
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert(RESULT_TYPE.into(), Value::String(RESULT_TASK.into()));
        self.task.write(&mut object);
        if let Some(meta) = &self.meta {
            object.insert(META.into(), Value::Object(meta.clone()));
        }
        Value::Object(object)
    }

    /// Reads a result whose `resultType` is `task`.
    pub fn from_json(value: &Value) -> Result<CreateTaskResult, TaskWireError> {
        let object = value.as_object().ok_or(TaskWireError::NotAnObject)?;
        match object.get(RESULT_TYPE) {
            Some(Value::String(kind)) if kind == RESULT_TASK => {}
            Some(other) => return Err(TaskWireError::UnexpectedResultType(clip_json(other))),
            None => return Err(TaskWireError::Missing(RESULT_TYPE)),
        }
        let meta = match object.get(META) {
            None | Some(Value::Null) => None,
            Some(Value::Object(meta)) => Some(meta.clone()),
            Some(_) => return Err(TaskWireError::NotAnObjectMember(META)),
        };
        Ok(CreateTaskResult { task: Task::read(object)?, meta })
    }
}

/// A `notifications/tasks`: a complete [`DetailedTask`] (no `resultType`) and the subscription's
/// id in `_meta`.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskNotification {
    /// The listen request's JSON-RPC id, as sent in `_meta`.
    pub subscription_id: Option<Value>,
    /// The task, as `tasks/get` would have returned it.
    pub task: DetailedTask,
}

impl TaskNotification {
    /// The notification's params.
    pub fn to_params(&self) -> Map<String, Value> {
        let mut params = Map::new();
        if let Some(id) = &self.subscription_id {
            params.insert(META.into(), json!({ META_SUBSCRIPTION_ID: id }));
        }
        self.task.write(&mut params);
        params
    }

    /// Reads the notification's params.
    pub fn from_params(params: &Map<String, Value>) -> Result<TaskNotification, TaskWireError> {
        let subscription_id = params.get(META).and_then(Value::as_object).and_then(|m| m.get(META_SUBSCRIPTION_ID));
        Ok(TaskNotification { subscription_id: subscription_id.cloned(), task: DetailedTask::read(params)? })
    }
}

/// The result of a `tools/call` made by a client that declared the extension: final, a Multi
/// Round-Trip round, or a task handle.
#[derive(Debug, Clone, PartialEq)]
pub enum CallResult {
    /// `resultType: "complete"` or absent: the final result, as received.
    Complete(Value),
    /// `resultType: "input_required"`: answer and call again.
    InputRequired(InputRequiredResult),
    /// `resultType: "task"`: poll the task.
    Task(CreateTaskResult),
}

impl CallResult {
    /// Dispatches on `resultType`. Only a client that declared the extension on the request may
    /// accept [`CallResult::Task`]; any other value is an error.
    pub fn from_json(value: &Value) -> Result<CallResult, TaskWireError> {
        let object = value.as_object().ok_or(TaskWireError::NotAnObject)?;
        if matches!(object.get(RESULT_TYPE), Some(Value::String(kind)) if kind == RESULT_TASK) {
            return CreateTaskResult::from_json(value).map(CallResult::Task);
        }
        match InputRequiredResult::from_json(value).map_err(TaskWireError::Request)? {
            Some(asked) => Ok(CallResult::InputRequired(asked)),
            None => Ok(CallResult::Complete(value.clone())),
        }
    }
}

/// A task message that does not follow the extension.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TaskWireError {
    /// The result or params are not a JSON object.
    NotAnObject,
    /// A required member is absent.
    Missing(&'static str),
    /// This member is present but not a string.
    NotAString(&'static str),
    /// This member is present but not an integer.
    NotAnInteger(&'static str),
    /// This member is present but not an object.
    NotAnObjectMember(&'static str),
    /// `status` is none of the five (the value, clipped).
    UnknownStatus(String),
    /// `resultType` is not the one this message has (the value, as JSON, clipped).
    UnexpectedResultType(String),
    /// An input request, or the Multi Round-Trip result, does not follow the protocol.
    Request(ResultError),
}

impl fmt::Display for TaskWireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskWireError::NotAnObject => f.write_str("the task message is not an object"),
            TaskWireError::Missing(member) => write!(f, "the task message has no `{member}`"),
            TaskWireError::NotAString(member) => write!(f, "`{member}` is not a string"),
            TaskWireError::NotAnInteger(member) => write!(f, "`{member}` is not an integer"),
            TaskWireError::NotAnObjectMember(member) => write!(f, "`{member}` is not an object"),
            TaskWireError::UnknownStatus(status) => write!(f, "unknown task status \"{status}\""),
            TaskWireError::UnexpectedResultType(kind) => write!(f, "unexpected resultType {kind}"),
            TaskWireError::Request(error) => write!(f, "{error}"),
        }
    }
}

impl std::error::Error for TaskWireError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TaskWireError::Request(error) => Some(error),
            _ => None,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
mod tests {
    use super::*;

    #[test]
    fn serde_spells_each_status_as_the_wire_does() {
        for status in TaskStatus::ALL {
            assert_eq!(serde_json::to_value(status).unwrap(), json!(status.as_str()));
            assert_eq!(serde_json::from_value::<TaskStatus>(json!(status.as_str())).unwrap(), status);
        }
    }

    fn task(status: TaskStatus) -> Task {
        Task {
            task_id: "t".into(),
            status,
            status_message: None,
            created_at: "2026-08-01T10:00:00Z".into(),
            last_updated_at: "2026-08-01T10:00:00Z".into(),
            ttl_ms: None,
            poll_interval_ms: Some(500),
        }
    }

    #[test]
    fn ttl_is_always_written_and_non_positive_numbers_read_as_absent() {
        let mut object = Map::new();
        task(TaskStatus::Working).write(&mut object);
        assert_eq!(object["ttlMs"], Value::Null);
        object.insert("ttlMs".into(), json!(0));
        object.insert("pollIntervalMs".into(), json!(-5));
        let read = Task::read(&object).unwrap();
        assert_eq!((read.ttl_ms, read.poll_interval_ms), (None, None));
        object.insert("ttlMs".into(), json!(1.5));
        assert_eq!(Task::read(&object), Err(TaskWireError::NotAnInteger("ttlMs")));
    }

    #[test]
    fn status_payloads_are_required_and_checked() {
        let mut object = Map::new();
        task(TaskStatus::Completed).write(&mut object);
        assert_eq!(DetailedTask::read(&object), Err(TaskWireError::Missing(RESULT)));
        object.insert(RESULT.into(), json!([]));
        assert_eq!(DetailedTask::read(&object), Err(TaskWireError::NotAnObjectMember(RESULT)));
        object.insert(STATUS.into(), json!("failed"));
        object.insert(ERROR.into(), json!({"code": "x", "message": "m"}));
        assert!(DetailedTask::read(&object).is_err());
        object.insert(STATUS.into(), json!("input_required"));
        object.insert(INPUT_REQUESTS.into(), json!({"k": {"method": "tools/call"}}));
        assert!(
            matches!(DetailedTask::read(&object), Err(TaskWireError::Request(ResultError::Request { key, .. })) if key == "k")
        );
        object.insert(STATUS.into(), json!("paused"));
        assert_eq!(DetailedTask::read(&object), Err(TaskWireError::UnknownStatus("paused".into())));
    }

    #[test]
    fn detailed_task_writes_the_status_of_its_state() {
        let detailed = DetailedTask { task: task(TaskStatus::Working), state: TaskState::Cancelled };
        assert_eq!(detailed.to_result()["status"], "cancelled");
        assert_eq!(DetailedTask::from_result(&detailed.to_result()).unwrap().task.status, TaskStatus::Cancelled);
    }

    #[test]
    fn call_results_dispatch_on_result_type() {
        assert!(matches!(CallResult::from_json(&json!({"content": []})), Ok(CallResult::Complete(_))));
        let created = CreateTaskResult { task: task(TaskStatus::Working), meta: None }.to_json();
        assert!(matches!(CallResult::from_json(&created), Ok(CallResult::Task(_))));
        assert!(CallResult::from_json(&json!({"resultType": "later"})).is_err());
        assert!(CallResult::from_json(&json!({"resultType": "task", "taskId": 7})).is_err());
    }

    #[test]
    fn declaring_keeps_other_extensions() {
        let mut caps = json!({"elicitation": {}, "extensions": {"x/y": {"a": 1}}});
        declare(&mut caps);
        assert_eq!(caps["extensions"], json!({"x/y": {"a": 1}, "io.modelcontextprotocol/tasks": {}}));
        assert!(declared(caps.as_object()));
        assert!(
            !declared(json!({"tasks": {"requests": {}}}).as_object()),
            "the legacy capability is not the extension"
        );
        let mut scalar = json!(3);
        declare(&mut scalar);
        assert!(declared(scalar.as_object()));
    }

    #[test]
    fn acks_and_listen_filters() {
        assert_eq!(read_ack(&ack()), Ok(()));
        assert_eq!(read_ack(&json!({})), Ok(()));
        assert!(read_ack(&json!({"resultType": "task"})).is_err());
        let ids = vec!["a".to_owned(), "b".to_owned()];
        assert_eq!(listened_task_ids(&listen_params(&ids)).unwrap(), ids);
        assert!(listened_task_ids(json!({"notifications": {"taskIds": [1]}}).as_object().unwrap()).is_err());
    }
}
