//! [`TaskRecords`]: where tasks live between requests, shared by every instance, and the records
//! it keeps.

use std::time::Duration;

use std::collections::BTreeSet;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::StoreFuture;
use crate::wire::tasks::TaskStatus;

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
///   refuses past the caps with [`StoreError::TaskCap`](crate::server::store::StoreError::TaskCap);
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

    /// Whether cancellation was asked for task `id` (`false` for an unknown task): the
    /// `cancel_requested` of [`TaskRecords::load`], which the running handler rereads each time it
    /// is woken. The default loads the whole record; a store that can read the flag alone should,
    /// as the in-process store does.
    fn cancel_requested(&self, id: &str) -> StoreFuture<'_, bool> {
        let loading = self.load(id);
        Box::pin(async move { Ok(loading.await?.is_some_and(|view| view.cancel_requested)) })
    }

    /// Waits until something lands for task `id`, at most `timeout`.
    fn wait(&self, id: &str, timeout: Duration) -> StoreFuture<'_, ()>;

    /// Something landing for task `id`, watched from this call on and with no timeout of its
    /// own: the future resolves once an answer, the cancel request or a save of the task lands
    /// after the call, from any instance. `None` (the default) where the store cannot promise that
    /// (it would miss some), or for an unknown task: the engine then rereads the record every
    /// [`TaskConfig::recheck`](crate::server::task::TaskConfig::recheck) with
    /// [`TaskRecords::wait`].
    ///
    /// Watched before the engine reads what it waits on, nothing lands unseen between the read
    /// and the wait; and where a store watches, a waiting task holds one timer for the deadline
    /// of its wait instead of a fresh one on every wake-up, each of which can wake a parked
    /// worker thread of the runtime. The in-process store watches.
    fn watch(&self, id: &str) -> Option<StoreFuture<'_, ()>> {
        let _ = id;
        None
    }
}

/// One task as stored: what the running instance writes. Answers and the cancel request are
/// written by any instance beside it (see [`TaskRecords`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// The task id (128 random bits, base64url).
    pub id: String,
    /// The principal that created it; every task request must come from the same.
    pub owner: Option<String>,
    /// The status.
    pub status: TaskStatus,
    /// The human-readable status (progress, what it waits on, why it ended).
    pub status_message: Option<String>,
    /// The input requests asked and not yet taken by the handler, by key, as on the wire.
    pub input_requests: Map<String, Value>,
    /// The result (`completed`) or the JSON-RPC error (`failed`).
    pub outcome: Option<Value>,
    /// Creation, milliseconds since the Unix epoch.
    pub created_ms: u64,
    /// Last change, milliseconds since the Unix epoch.
    pub updated_ms: u64,
    /// Lifetime from creation, milliseconds.
    pub ttl_ms: u64,
    /// Suggested poll interval, milliseconds.
    pub poll_interval_ms: u64,
    /// Until when the running instance holds the task, milliseconds since the Unix epoch.
    pub lease_until_ms: u64,
}

impl TaskRecord {
    /// Whether the record outlived its lifetime at `now_ms`.
    pub fn expired(&self, now_ms: u64) -> bool {
        now_ms >= self.created_ms.saturating_add(self.ttl_ms)
    }

    /// Whether the task still runs (not terminal, lease not passed) at `now_ms`.
    pub fn live(&self, now_ms: u64) -> bool {
        !self.status.is_terminal() && now_ms < self.lease_until_ms && !self.expired(now_ms)
    }
}

/// A task as read back: the record, the keys answered so far, and whether cancellation was asked.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskView {
    /// What the running instance wrote.
    pub record: TaskRecord,
    /// Keys of `input_requests` answered through `tasks/update` and not yet taken.
    pub answered: BTreeSet<String>,
    /// `tasks/cancel` was received.
    pub cancel_requested: bool,
}

/// Milliseconds since the Unix epoch.
pub(in crate::server) fn millis(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, millis_of)
}

/// Whole milliseconds of `duration` (`u64::MAX` past it).
pub(in crate::server) fn millis_of(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
