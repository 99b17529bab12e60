//! [`TaskRecords`]: where tasks live between requests, shared by every instance, and the records
//! it keeps.

use std::time::Duration;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
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
    pub input_requests: BTreeMap<String, StoredJson>,
    /// The result (`completed`) or the JSON-RPC error (`failed`).
    pub outcome: Option<StoredJson>,
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

/// JSON kept as its text: a task's input requests (each as on the wire, an `inputRequests`
/// entry) and its outcome, written once by the running task. Every read of the task copies one
/// block of text per member rather than a tree of values, an ended task waiting out its lifetime
/// holds its result in one block, and a store that keeps records as JSON embeds it as it came.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct StoredJson(Box<RawValue>);

impl StoredJson {
    /// `value` as JSON text.
    ///
    /// # Errors
    ///
    /// When `value`'s `Serialize` fails (a map with keys that are not strings, an error of its
    /// own).
    pub fn of<T: Serialize + ?Sized>(value: &T) -> Result<StoredJson, serde_json::Error> {
        serde_json::value::to_raw_value(value).map(StoredJson)
    }

    /// `value` as JSON text.
    pub fn from_json(value: &Value) -> StoredJson {
        // A `Value` always writes as text: its keys are strings.
        StoredJson(serde_json::value::to_raw_value(value).unwrap_or_else(|_| RawValue::NULL.to_owned()))
    }

    /// The JSON text.
    pub fn get(&self) -> &str {
        self.0.get()
    }

    /// The JSON as values.
    ///
    /// # Errors
    ///
    /// Past serde_json's nesting limit (128), which what a handler returned, or the parameters of
    /// a sampling request it made, can reach.
    pub fn to_json(&self) -> Result<Value, serde_json::Error> {
        serde_json::from_str(self.0.get())
    }
}

/// The same JSON text.
impl PartialEq for StoredJson {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
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

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
mod tests {
    use serde_json::json;

    use super::*;

    /// A record as a store keeps it (JSON) embeds its input requests and outcome as JSON, not as
    /// strings of JSON, and reads back the same: a record a store kept before they were held as
    /// text reads as well.
    #[test]
    fn stored_json_is_embedded_and_reads_back() {
        let doc = json!({
            "id": "t1", "owner": null, "status": "input_required", "status_message": "waiting",
            "input_requests": {"who": {"method": "elicitation/create", "params": {"mode": "form",
                "message": "Who?", "requestedSchema": {"type": "object", "properties": {}}}}},
            "outcome": {"content": [{"type": "text", "text": "hi"}]},
            "created_ms": 1, "updated_ms": 2, "ttl_ms": 3, "poll_interval_ms": 4, "lease_until_ms": 5,
        });
        let record: TaskRecord = serde_json::from_str(&doc.to_string()).unwrap();
        assert_eq!(record.input_requests["who"].to_json().unwrap(), doc["input_requests"]["who"]);
        assert_eq!(record.outcome.as_ref().unwrap().to_json().unwrap(), doc["outcome"]);
        let written = serde_json::to_string(&record).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&written).unwrap(), doc);
        assert_eq!(serde_json::from_str::<TaskRecord>(&written).unwrap(), record);
        let other = StoredJson::from_json(&json!({"content": []}));
        assert_ne!(record.outcome.as_ref(), Some(&other));
    }
}
