//! The third way of running a handler: as a task of the Tasks extension
//! (`io.modelcontextprotocol/tasks`).
//!
//! A `tools/call` from a client that declares the extension, to a tool registered as task-capable,
//! runs its handler as an ordinary Multi Round-Trip call until the handler first waits on
//! something that is not an ask (its long work). At that point the call becomes a task: the
//! request is answered `resultType: "task"` at once and the same handler future carries on in the
//! background. Its asks then become the task's `inputRequests` (keys unique for the task's life),
//! answered through `tasks/update`; its progress becomes the task's `statusMessage`;
//! `tasks/cancel` resolves [`Flow::cancelled`](super::Flow::cancelled). Asks made before that point
//! are MRTR rounds, so a tool may ask before it decides to run long (input before task creation).
//!
//! Task records live in a [`TaskRecords`](super::store::TaskRecords) store shared by every instance that serves the same
//! clients: `tasks/get`, `tasks/update` and `tasks/cancel` work on any of them. The instance that
//! runs the handler renews a lease on its record; a task whose lease passed (its instance died)
//! reads `failed`, never `working` forever.
//!
//! This module holds the extension's vocabulary and a running task's link (the `Task` executor's
//! state, below the flow); the engine's entry points, [`Engine::run_task`](super::Engine::run_task)
//! and the `tasks/*` requests, sit above the engine (`server/task_calls.rs`).

mod link;
mod start;

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Map, Value, json};

pub(super) use link::{TaskExec, TaskFuture, TaskLink, drive};
pub(crate) use start::AnonymousTasks;
pub use start::TaskStart;

use super::store::{StoredJson, TaskRecord, TaskView, millis_of};
use crate::wire::codes;

/// Whether a tool may run as a task (the extension's optional and required task support).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TaskSupport {
    /// Never a task (the default for a tool).
    #[default]
    Forbidden,
    /// A task when the client declares the extension, an ordinary call otherwise.
    Optional,
    /// Only as a task: a client that does not declare the extension gets `-32021`.
    Required,
}

/// Tunables of tasks; every field has a safe default and a setter on
/// [`EngineBuilder`](super::EngineBuilder).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TaskConfig {
    /// How long a task's record lives after its creation (`ttlMs`). Default one hour.
    pub ttl: Duration,
    /// The poll interval suggested to clients (`pollIntervalMs`). Default 500 ms.
    pub poll_interval: Duration,
    /// The lease of the instance running a task, renewed while it runs; once it passed without
    /// renewal the task reads `failed`. Default 30 s.
    pub lease: Duration,
    /// How often a handler waiting on an answer or on cancellation rereads its record when the
    /// store sends no wake-up (a store shared across instances). Default 250 ms.
    pub recheck: Duration,
    /// How long a cancelled handler may take to stop of its own accord before it is dropped.
    /// Default 5 s.
    pub cancel_grace: Duration,
    /// How long a handler waits, after URL-mode consent inside a task, for the page to record
    /// completion. Default 600 s.
    pub url_completion_timeout: Duration,
    /// Tasks running at once, over all principals (one more is refused). Default 1024.
    pub max_live_tasks: usize,
    /// Tasks running at once for one principal (anonymous callers share one count). Default 64.
    pub max_live_tasks_per_principal: usize,
    /// Tasks running at once on this instance for one anonymous client (a peer address,
    /// [`Request::client`](crate::server::Request::client)), within the count anonymous callers
    /// share: one client cannot take every anonymous place. Default 16.
    pub max_live_tasks_per_anonymous_client: usize,
    /// How long a task waits for the answer to one of its input requests; past it the task
    /// fails and frees its place under the caps above. Default 600 s.
    pub input_wait: Duration,
}

impl Default for TaskConfig {
    fn default() -> Self {
        TaskConfig {
            ttl: Duration::from_secs(3600),
            poll_interval: Duration::from_millis(500),
            lease: Duration::from_secs(30),
            recheck: Duration::from_millis(250),
            cancel_grace: Duration::from_secs(5),
            url_completion_timeout: Duration::from_secs(600),
            max_live_tasks: 1024,
            max_live_tasks_per_principal: 64,
            max_live_tasks_per_anonymous_client: 16,
            input_wait: Duration::from_secs(600),
        }
    }
}

/// A task's status, as on the wire and as stored (the same spelling).
pub use crate::wire::tasks::TaskStatus;

impl TaskRecord {
    /// A new task of `owner`, `working`, created at `now_ms`, with `config`'s lifetime, poll
    /// interval and lease.
    pub fn working(id: impl Into<String>, owner: Option<&str>, now_ms: u64, config: &TaskConfig) -> TaskRecord {
        TaskRecord {
            id: id.into(),
            owner: owner.map(str::to_owned),
            status: TaskStatus::Working,
            status_message: None,
            input_requests: BTreeMap::new(),
            outcome: None,
            created_ms: now_ms,
            updated_ms: now_ms,
            ttl_ms: millis_of(config.ttl).max(1),
            poll_interval_ms: millis_of(config.poll_interval).max(1),
            lease_until_ms: now_ms.saturating_add(millis_of(config.lease)),
        }
    }
}

/// A task as `tasks/get` shows it (a `DetailedTask`).
#[derive(Debug, Clone, PartialEq)]
pub struct TaskSnapshot {
    /// The task id.
    pub task_id: String,
    /// The status.
    pub status: TaskStatus,
    /// The status message.
    pub status_message: Option<String>,
    /// Creation time, ISO 8601 UTC.
    pub created_at: String,
    /// Last change, ISO 8601 UTC.
    pub last_updated_at: String,
    /// `ttlMs`.
    pub ttl_ms: u64,
    /// `pollIntervalMs`.
    pub poll_interval_ms: u64,
    /// Outstanding input requests (`input_required`).
    pub input_requests: BTreeMap<String, StoredJson>,
    /// The result (`completed`) or error (`failed`).
    pub outcome: Option<StoredJson>,
}

impl TaskSnapshot {
    /// The snapshot of `view`, taking its record's members rather than copying them (a poll's
    /// record holds the input requests' schemas and the result).
    pub(in crate::server) fn of(view: TaskView) -> TaskSnapshot {
        let TaskView { record, answered, .. } = view;
        let mut input_requests = record.input_requests;
        input_requests.retain(|key, _| !answered.contains(key));
        let status = match record.status {
            // Every outstanding key answered: the handler is about to take them.
            TaskStatus::InputRequired if input_requests.is_empty() => TaskStatus::Working,
            status => status,
        };
        TaskSnapshot {
            task_id: record.id,
            status,
            status_message: record.status_message,
            created_at: iso8601(record.created_ms),
            last_updated_at: iso8601(record.updated_ms),
            ttl_ms: record.ttl_ms,
            poll_interval_ms: record.poll_interval_ms,
            input_requests: if status == TaskStatus::InputRequired { input_requests } else { BTreeMap::new() },
            outcome: record.outcome,
        }
    }

    /// The task fields on the wire (a `Task`, or with `detailed` a `DetailedTask`), flat.
    ///
    /// The stored JSON ([`StoredJson`]) is read back as values here, and what serde_json cannot
    /// read back (nested past 128 levels) is written as for no value: an input request as
    /// `null`, a result as empty content, an error as `-32603` "the task failed".
    pub fn to_json(&self, detailed: bool) -> Map<String, Value> {
        self.clone().into_json(detailed)
    }

    /// [`TaskSnapshot::to_json`], taking the snapshot's members rather than copying them.
    pub fn into_json(self, detailed: bool) -> Map<String, Value> {
        let mut task = Map::new();
        task.insert("taskId".into(), Value::String(self.task_id));
        task.insert("status".into(), serde_json::to_value(self.status).unwrap_or(Value::Null));
        if let Some(message) = self.status_message {
            task.insert("statusMessage".into(), Value::String(message));
        }
        task.insert("createdAt".into(), Value::String(self.created_at));
        task.insert("lastUpdatedAt".into(), Value::String(self.last_updated_at));
        task.insert("ttlMs".into(), Value::from(self.ttl_ms.max(1)));
        task.insert("pollIntervalMs".into(), Value::from(self.poll_interval_ms.max(1)));
        if detailed {
            match self.status {
                TaskStatus::InputRequired => {
                    let requests = self.input_requests.into_iter().map(|(key, request)| {
                        let json = request.to_json().unwrap_or(Value::Null);
                        (key, json)
                    });
                    task.insert("inputRequests".into(), Value::Object(requests.collect()));
                }
                TaskStatus::Completed => {
                    let result = self.outcome.and_then(|outcome| outcome.to_json().ok());
                    task.insert("result".into(), result.unwrap_or_else(no_result));
                }
                TaskStatus::Failed => {
                    let error = self.outcome.and_then(|outcome| outcome.to_json().ok());
                    let error = error.unwrap_or_else(no_error);
                    task.insert("error".into(), error);
                }
                TaskStatus::Working | TaskStatus::Cancelled => {}
            }
        }
        task
    }
}

/// The result a completed task that recorded none shows: no content.
pub(crate) fn no_result() -> Value {
    json!({"content": []})
}

/// The error a failed task that recorded none shows.
pub(crate) fn no_error() -> Value {
    json!({"code": codes::INTERNAL_ERROR, "message": "the task failed"})
}

/// `ms` since the Unix epoch as ISO 8601 UTC (`2026-12-04T00:30:00.123Z`).
pub(super) fn iso8601(ms: u64) -> String {
    let secs = ms / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    // Written digit by digit: the formatting machinery costs several times more, on every poll.
    let (year, month, day) =
        (u64::try_from(year).unwrap_or(0), u64::try_from(month).unwrap_or(0), u64::try_from(day).unwrap_or(0));
    let mut text = String::with_capacity(24);
    push_digits(&mut text, year, 4);
    text.push('-');
    push_digits(&mut text, month, 2);
    text.push('-');
    push_digits(&mut text, day, 2);
    text.push('T');
    push_digits(&mut text, rem / 3600, 2);
    text.push(':');
    push_digits(&mut text, rem % 3600 / 60, 2);
    text.push(':');
    push_digits(&mut text, rem % 60, 2);
    text.push('.');
    push_digits(&mut text, ms % 1000, 3);
    text.push('Z');
    text
}

/// `value` in decimal, zero-padded to `width` digits (more when it has more, as `{:0width$}`).
fn push_digits(text: &mut String, value: u64, width: u32) {
    let mut place = 10u64.pow(width.saturating_sub(1));
    while place.checked_mul(10).is_some_and(|next| next <= value) {
        place *= 10;
    }
    while place > 0 {
        text.push(char::from(b'0' + u8::try_from(value / place % 10).unwrap_or(0)));
        place /= 10;
    }
}

#[cfg(test)]
mod tests {
    use super::iso8601;

    #[test]
    fn timestamps_are_iso8601_utc() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso8601(1_796_345_130_000), "2026-12-04T00:45:30.000Z");
        assert_eq!(iso8601(1_796_345_130_007), "2026-12-04T00:45:30.007Z");
        assert_eq!(iso8601(u64::MAX), "584556019-04-03T14:25:51.615Z");
    }
}
