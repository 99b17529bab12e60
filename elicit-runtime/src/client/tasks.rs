//! Calls the server runs as a task (the `io.modelcontextprotocol/tasks` extension).
//!
//! A [`Driver`] built with [`Driver::tasks`] declares the extension on every request. When a
//! `tools/call` comes back with a task handle (`resultType: "task"`), the driver polls `tasks/get`
//! at the server's suggested interval, answers each of the task's input requests once through the
//! same [`Responder`] as Multi Round-Trip rounds (sending the answers with `tasks/update`), lets the
//! responder show the task's status and decide, while it waits, to poll now or to cancel (sent as
//! `tasks/cancel`), and returns the task's result, or its error as the call's own.
//!
//! Everything is bounded against a server that misbehaves: the interval is clamped, a task that
//! does not finish before the deadline is cancelled and reported, and a task that keeps asking is
//! stopped after a number of input requests.

use std::collections::HashSet;
use std::fmt;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::{AskContext, CallError, Caller, Consented, DriveError, Driver, ProtocolError, Responder, request_meta};
use crate::wire::tasks::{self as wire_tasks, CreateTaskResult, DetailedTask, Task, TaskState};
use crate::wire::{self, RESULT_TYPE, codes};

/// How a driver runs tasks: bounds and poll pacing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskPolicy {
    deadline: Duration,
    max_input_requests: usize,
    min_interval: Duration,
    max_interval: Duration,
}

impl Default for TaskPolicy {
    fn default() -> Self {
        TaskPolicy {
            deadline: Duration::from_secs(3600),
            max_input_requests: 256,
            min_interval: Duration::from_millis(100),
            max_interval: Duration::from_secs(60),
        }
    }
}

impl TaskPolicy {
    /// Gives up (and cancels the task) when it has not ended this long after its creation
    /// (default one hour).
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// Cancels a task that asks for more than this many input requests over its life (default 256).
    pub fn max_input_requests(mut self, count: usize) -> Self {
        self.max_input_requests = count;
        self
    }

    /// Clamps the server's `pollIntervalMs` to this range (default 100 ms to 60 s): a server
    /// cannot make the client poll in a tight loop, nor sleep past the point of being useful.
    pub fn poll_interval_range(mut self, min: Duration, max: Duration) -> Self {
        self.min_interval = min;
        self.max_interval = max.max(min);
        self
    }

    /// The wait before the next poll: the server's suggestion, clamped; without one, a backoff
    /// from 250 ms doubling to 5 s (also clamped).
    fn next_wait(&self, task: &Task, idle_polls: u32) -> Duration {
        let wait = match task.poll_interval_ms {
            Some(ms) => Duration::from_millis(ms),
            None => Duration::from_millis(250u64.saturating_mul(1 << idle_polls.min(5))).min(Duration::from_secs(5)),
        };
        wait.clamp(self.min_interval, self.max_interval)
    }
}

/// A task the driver is waiting on, as shown to the user between polls.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct TaskWait<'a> {
    /// The server running it (its name as the user knows it).
    pub server: &'a str,
    /// The task as last read: status, status message, poll interval.
    pub task: &'a Task,
    /// How long to wait before the next poll.
    pub next_poll: Duration,
    /// When the driver received the task handle.
    pub since: Instant,
    /// How many input requests of this task were answered so far.
    pub answered: usize,
}

/// What to do while a task works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskAction {
    /// Poll now (after waiting `next_poll`, or earlier: retry now).
    Poll,
    /// Ask the server to stop the task (`tasks/cancel`) and give up on the call.
    Cancel,
}

/// Why a task-backed call did not complete, beyond what any call can fail with.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskError {
    /// The task had not ended when the driver's deadline came; it was cancelled.
    Deadline {
        /// The task.
        task_id: String,
        /// The deadline.
        after: Duration,
    },
    /// The task asked for more input requests than the driver answers for one task; it was
    /// cancelled.
    TooManyInputRequests {
        /// The task.
        task_id: String,
        /// The limit.
        limit: usize,
    },
    /// A task handle answered a request other than `tools/call`.
    NotATaskRequest(String),
    /// The server cancelled the task (its status message, if any).
    CancelledByServer(Option<String>),
}

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskError::Deadline { task_id, after } => {
                write!(f, "task {} had not ended after {} s; cancelled it", wire::clip(task_id), after.as_secs())
            }
            TaskError::TooManyInputRequests { task_id, limit } => write!(
                f,
                "task {} kept asking for input (more than {limit} requests); cancelled it",
                wire::clip(task_id)
            ),
            TaskError::NotATaskRequest(method) => {
                write!(
                    f,
                    "the server answered `{}` with a task handle; only tools/call can run as a task",
                    wire::clip(method)
                )
            }
            TaskError::CancelledByServer(None) => f.write_str("the server cancelled the task"),
            TaskError::CancelledByServer(Some(message)) => {
                write!(f, "the server cancelled the task: {}", wire::clip(message))
            }
        }
    }
}

impl std::error::Error for TaskError {}

impl Driver {
    /// Declares the Tasks extension on every request and drives task handles to their end, bounded
    /// by `policy` (`TaskPolicy::default()` for the defaults).
    ///
    /// ```
    /// use std::time::Duration;
    /// use elicit_runtime::client::{Driver, TaskPolicy};
    /// use elicit_runtime::wire::Capabilities;
    ///
    /// let driver = Driver::new(Capabilities::ELICITATION, serde_json::json!({"name": "app", "version": "1"}), "server")
    ///     .tasks(TaskPolicy::default().deadline(Duration::from_secs(600)));
    /// assert!(driver.declares_tasks());
    /// ```
    pub fn tasks(mut self, policy: TaskPolicy) -> Self {
        self.tasks = Some(policy);
        self
    }

    /// Whether this driver declares the Tasks extension.
    pub fn declares_tasks(&self) -> bool {
        self.tasks.is_some()
    }

    /// The `_meta` of this driver's requests: protocol version, capabilities (with the Tasks
    /// extension when declared) and client info.
    pub(super) fn meta(&self) -> Map<String, Value> {
        let mut meta = request_meta(self.capabilities, &self.client_info);
        if self.tasks.is_some() {
            wire_tasks::declare_in_meta(&mut meta);
        }
        meta
    }

    /// `params` as one request of this driver: with its `_meta` (every request of a call, task
    /// requests included, carries it).
    pub(super) fn with_meta(&self, mut params: Map<String, Value>) -> Map<String, Value> {
        params.insert(wire::META.into(), Value::Object(self.meta()));
        params
    }

    /// The task handle in a call's result, if the result is one this driver must follow.
    ///
    /// Without the extension declared a `"task"` result is left to the caller, which refuses it as
    /// an unknown `resultType`.
    pub(super) fn task_handle(&self, method: &str, result: &Value) -> Result<Option<CreateTaskResult>, DriveError> {
        if self.tasks.is_none()
            || !matches!(result.get(RESULT_TYPE), Some(Value::String(kind)) if kind == wire_tasks::RESULT_TASK)
        {
            return Ok(None);
        }
        if method != wire::TOOLS_CALL {
            return Err(DriveError::Task(TaskError::NotATaskRequest(method.to_owned())));
        }
        CreateTaskResult::from_json(result).map(Some).map_err(|e| DriveError::Protocol(e.into()))
    }

    /// Follows a task created earlier (by this process or one before it: clients should keep task
    /// ids to resume after a restart) to its end, exactly as a call that just received its handle:
    /// it polls at once, then as [`Driver::call`] does. The driver must declare the extension
    /// ([`Driver::tasks`]); the server refuses `tasks/get` otherwise.
    pub async fn resume_task<C: Caller, R: Responder>(
        &self,
        caller: &mut C,
        responder: &mut R,
        task_id: &str,
    ) -> Result<Value, DriveError> {
        // Only its id is read before the first poll replaces it.
        let unknown = Task {
            task_id: task_id.to_owned(),
            status: wire_tasks::TaskStatus::Working,
            status_message: None,
            created_at: String::new(),
            last_updated_at: String::new(),
            ttl_ms: None,
            poll_interval_ms: None,
        };
        self.drive_task(caller, responder, unknown, false).await
    }

    /// Drives a task to its end: wait (through the responder; not before the first poll unless
    /// `wait_first`), poll, answer new input requests, until a terminal status, the user's cancel
    /// or a bound.
    pub(super) async fn drive_task<C: Caller, R: Responder>(
        &self,
        caller: &mut C,
        responder: &mut R,
        task: Task,
        wait_first: bool,
    ) -> Result<Value, DriveError> {
        let policy = self.tasks.clone().unwrap_or_default();
        let task_id = task.task_id.clone();
        let since = Instant::now();
        let deadline = since + policy.deadline;
        let mut task = task;
        let mut wait_now = wait_first;
        let mut answered: HashSet<String> = HashSet::new();
        let mut consented = Consented::new();
        let mut batches = 0usize;
        let mut idle_polls = 0u32;
        let outcome = loop {
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                break Err(DriveError::Task(TaskError::Deadline { task_id: task_id.clone(), after: policy.deadline }));
            }
            if wait_now {
                let shown = TaskWait {
                    server: &self.server_name,
                    task: &task,
                    next_poll: policy.next_wait(&task, idle_polls).min(remaining),
                    since,
                    answered: answered.len(),
                };
                match tokio::time::timeout(remaining, responder.task_waiting(shown)).await {
                    Ok(TaskAction::Poll) => {}
                    Ok(TaskAction::Cancel) => break Err(DriveError::Cancelled),
                    Err(_) => {
                        break Err(DriveError::Task(TaskError::Deadline {
                            task_id: task_id.clone(),
                            after: policy.deadline,
                        }));
                    }
                }
            }
            wait_now = true;
            let got = caller
                .call(wire_tasks::TASKS_GET, self.with_meta(wire_tasks::task_params(&task_id)))
                .await
                .map_err(DriveError::Call)?;
            // A snapshot lists every outstanding request, answered or not: one listing far more
            // than a batch is refused before any of it is parsed.
            let listed = got.get(wire::INPUT_REQUESTS).and_then(Value::as_object).map_or(0, Map::len);
            if listed > self.max_input_requests.saturating_add(answered.len()) {
                break Err(DriveError::Protocol(ProtocolError::new(format!(
                    "the task listed {listed} input requests; at most {} are answered at once",
                    self.max_input_requests
                ))));
            }
            let detailed = match DetailedTask::from_result(&got) {
                Ok(detailed) => detailed,
                Err(error) => break Err(DriveError::Protocol(error.into())),
            };
            if detailed.task.task_id != task_id {
                break Err(DriveError::Protocol(ProtocolError::new(format!(
                    "tasks/get for {} answered task {}",
                    wire::clip(&task_id),
                    wire::clip(&detailed.task.task_id)
                ))));
            }
            task = detailed.task;
            let requests = match detailed.state {
                TaskState::Completed(result) => return Ok(Value::Object(result)),
                TaskState::Failed(error) => {
                    return Err(DriveError::Call(CallError::Rpc {
                        code: i32::try_from(error.code).unwrap_or(codes::INTERNAL_ERROR),
                        message: error.message,
                        data: error.data,
                    }));
                }
                TaskState::Cancelled => {
                    return Err(DriveError::Task(TaskError::CancelledByServer(task.status_message.clone())));
                }
                TaskState::Working => {
                    idle_polls += 1;
                    continue;
                }
                TaskState::InputRequired(requests) => requests,
            };
            // Every poll lists every outstanding request; a key answered earlier can still show
            // while the server catches up with the update. Each key is answered once.
            let new: Vec<_> = requests.into_iter().filter(|(key, _)| !answered.contains(key)).collect();
            if new.is_empty() {
                idle_polls += 1;
                continue;
            }
            idle_polls = 0;
            if new.len() > self.max_input_requests {
                break Err(DriveError::Protocol(ProtocolError::new(format!(
                    "the task listed {} new input requests at once; at most {} are answered",
                    new.len(),
                    self.max_input_requests
                ))));
            }
            if answered.len() + new.len() > policy.max_input_requests {
                break Err(DriveError::Task(TaskError::TooManyInputRequests {
                    task_id: task_id.clone(),
                    limit: policy.max_input_requests,
                }));
            }
            batches += 1;
            let mut answers = Map::new();
            let mut failed = None;
            for (key, request) in new {
                let ctx = AskContext { server: &self.server_name, key: &key, round: batches };
                match self.answer(ctx, request, responder, &mut consented).await {
                    Ok(answer) => {
                        answers.insert(key, answer);
                    }
                    Err(error) => {
                        failed = Some(error);
                        break;
                    }
                }
            }
            if let Some(error) = failed {
                break Err(error);
            }
            answered.extend(answers.keys().cloned());
            let ack = caller
                .call(wire_tasks::TASKS_UPDATE, self.with_meta(wire_tasks::update_params(&task_id, answers)))
                .await
                .map_err(DriveError::Call)?;
            wire_tasks::read_ack(&ack).map_err(|e| DriveError::Protocol(e.into()))?;
        };
        // The call is given up on: ask the server to stop the task. Cancelling is cooperative and
        // its ack carries nothing, so its failure changes nothing about the outcome.
        let _ = caller.call(wire_tasks::TASKS_CANCEL, self.with_meta(wire_tasks::task_params(&task_id))).await;
        outcome
    }
}
