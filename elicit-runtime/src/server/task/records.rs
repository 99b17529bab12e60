//! [`TaskRecords`]: where tasks live between requests, shared by every instance.

use std::time::Duration;

use serde_json::{Map, Value};

use super::{TaskRecord, TaskView};
use crate::server::store::StoreFuture;

/// The caps checked when a task is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskLimits {
    /// Tasks live at once, over all principals.
    pub max_live: usize,
    /// Tasks live at once for the new task's owner.
    pub max_live_per_principal: usize,
    /// The time the caps are counted at (milliseconds since the Unix epoch): a task is live while
    /// it is not terminal, its lease has not passed and it has not expired.
    pub now_ms: u64,
}

/// The task store. Three writers share a record and never overwrite each other's part: the
/// instance running the task writes the [`TaskRecord`] ([`TaskRecords::save`]); any instance
/// adds answers ([`TaskRecords::answer`]) and the cancel request ([`TaskRecords::cancel`]).
///
/// The contract:
/// - `create` is durable before it returns (a `load` on any instance finds the task), and
///   refuses past the caps with [`StoreError::TaskCap`](crate::server::StoreError::TaskCap);
/// - `save` never overwrites a terminal record (it returns `false`): a task marked `failed` because
///   its lease passed stays failed, and its instance learns it lost the task;
/// - an answer is kept at most once per key (the first one wins);
/// - `wait` returns when an answer or the cancel request lands for the task (from any instance,
///   if the store can tell; otherwise after `timeout`), or after `timeout`;
/// - records disappear once expired (`created + ttl`); a `load` of an expired record may still
///   return it, and the engine answers "expired".
pub trait TaskRecords: Send + Sync {
    /// Stores a new task, checking `limits` against the live tasks.
    fn create(&self, record: &TaskRecord, limits: TaskLimits) -> StoreFuture<'_, ()>;

    /// Replaces the record written by the running instance, unless the stored one is terminal.
    fn save(&self, record: &TaskRecord) -> StoreFuture<'_, bool>;

    /// The task, its answered keys and whether cancellation was asked; `None` if unknown.
    fn load(&self, id: &str) -> StoreFuture<'_, Option<TaskView>>;

    /// Adds answers (first answer per key wins) and wakes the task's waiters.
    fn answer(&self, id: &str, answers: Map<String, Value>) -> StoreFuture<'_, ()>;

    /// The answers received so far, by key.
    fn answers(&self, id: &str) -> StoreFuture<'_, Map<String, Value>>;

    /// Records that cancellation was asked, and wakes the task's waiters.
    fn cancel(&self, id: &str) -> StoreFuture<'_, ()>;

    /// Waits until something lands for task `id`, at most `timeout`.
    fn wait(&self, id: &str, timeout: Duration) -> StoreFuture<'_, ()>;
}
