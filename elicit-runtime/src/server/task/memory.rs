//! [`InProcessTasks`]: the task store of one process.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::Notify;

use super::records::{TaskLimits, TaskRecords};
use super::{TaskRecord, TaskView, millis};
use crate::server::store::{StoreError, StoreFuture};
use crate::server::{Clock, SystemClock};

struct Entry {
    record: TaskRecord,
    answers: Map<String, Value>,
    cancel: bool,
    wake: Arc<Notify>,
}

/// Task records in this process's memory: every instance that shares it is this process.
/// Expired records are swept when a task is created; past [`InProcessTasks::with_max_records`]
/// records, the ended tasks least recently changed make room (a live task is never dropped).
pub struct InProcessTasks {
    entries: Mutex<HashMap<String, Entry>>,
    clock: Arc<dyn Clock>,
    max_records: usize,
}

/// The default bound on the records an [`InProcessTasks`] keeps, live or ended.
pub const DEFAULT_MAX_TASK_RECORDS: usize = 10_000;

impl std::fmt::Debug for InProcessTasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InProcessTasks").finish_non_exhaustive()
    }
}

impl Default for InProcessTasks {
    fn default() -> Self {
        InProcessTasks::new()
    }
}

impl InProcessTasks {
    /// An empty store on the system clock.
    pub fn new() -> Self {
        InProcessTasks {
            entries: Mutex::new(HashMap::new()),
            clock: Arc::new(SystemClock),
            max_records: DEFAULT_MAX_TASK_RECORDS,
        }
    }

    /// Keeps at most `max` records, live or ended (default [`DEFAULT_MAX_TASK_RECORDS`]).
    pub fn with_max_records(mut self, max: usize) -> Self {
        self.max_records = max.max(1);
        self
    }

    /// This store, reading the time (expiry) from `clock`.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    fn entries(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        // Never held across an await or user code: a poisoned map is still consistent.
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl TaskRecords for InProcessTasks {
    fn create(&self, record: &TaskRecord, limits: TaskLimits) -> StoreFuture<'_, ()> {
        let now = millis(self.clock.now());
        let mut entries = self.entries();
        entries.retain(|_, entry| !entry.record.expired(now));
        if entries.len() >= self.max_records {
            // Room from the ended tasks least recently changed.
            let mut ended: Vec<(u64, String)> = entries
                .iter()
                .filter(|(_, e)| !e.record.live(limits.now_ms))
                .map(|(id, e)| (e.record.updated_ms, id.clone()))
                .collect();
            ended.sort_unstable();
            let excess = entries.len() + 1 - self.max_records;
            for (_, id) in ended.into_iter().take(excess) {
                entries.remove(&id);
            }
            if entries.len() >= self.max_records {
                let refused = Err(StoreError::TaskCap { cap: self.max_records, per_principal: false });
                return Box::pin(std::future::ready(refused));
            }
        }
        let live = entries.values().filter(|e| e.record.live(limits.now_ms));
        let (mut total, mut mine) = (0, 0);
        for entry in live {
            total += 1;
            if entry.record.owner == record.owner {
                mine += 1;
            }
        }
        let result = if total >= limits.max_live {
            Err(StoreError::TaskCap { cap: limits.max_live, per_principal: false })
        } else if mine >= limits.max_live_per_principal {
            Err(StoreError::TaskCap { cap: limits.max_live_per_principal, per_principal: true })
        } else {
            let entry =
                Entry { record: record.clone(), answers: Map::new(), cancel: false, wake: Arc::new(Notify::new()) };
            entries.insert(record.id.clone(), entry);
            Ok(())
        };
        Box::pin(std::future::ready(result))
    }

    fn save(&self, record: &TaskRecord) -> StoreFuture<'_, bool> {
        let mut entries = self.entries();
        let saved = match entries.get_mut(&record.id) {
            Some(entry) if !entry.record.status.is_terminal() => {
                // Answers the handler took are no longer outstanding: forget them with their keys.
                entry.answers.retain(|key, _| record.input_requests.contains_key(key));
                entry.record = record.clone();
                entry.wake.notify_waiters();
                true
            }
            _ => false,
        };
        Box::pin(std::future::ready(Ok(saved)))
    }

    fn load(&self, id: &str) -> StoreFuture<'_, Option<TaskView>> {
        let view = self.entries().get(id).map(|entry| TaskView {
            record: entry.record.clone(),
            answered: entry.answers.keys().cloned().collect::<BTreeSet<_>>(),
            cancel_requested: entry.cancel,
        });
        Box::pin(std::future::ready(Ok(view)))
    }

    fn answer(&self, id: &str, answers: Map<String, Value>) -> StoreFuture<'_, ()> {
        if let Some(entry) = self.entries().get_mut(id) {
            for (key, value) in answers {
                entry.answers.entry(key).or_insert(value);
            }
            entry.wake.notify_waiters();
        }
        Box::pin(std::future::ready(Ok(())))
    }

    fn answers(&self, id: &str) -> StoreFuture<'_, Map<String, Value>> {
        let answers = self.entries().get(id).map(|entry| entry.answers.clone()).unwrap_or_default();
        Box::pin(std::future::ready(Ok(answers)))
    }

    fn cancel(&self, id: &str) -> StoreFuture<'_, ()> {
        if let Some(entry) = self.entries().get_mut(id) {
            entry.cancel = true;
            entry.wake.notify_waiters();
        }
        Box::pin(std::future::ready(Ok(())))
    }

    fn wait(&self, id: &str, timeout: Duration) -> StoreFuture<'_, ()> {
        let wake = self.entries().get(id).map(|entry| entry.wake.clone());
        Box::pin(async move {
            match wake {
                Some(wake) => {
                    let _ = tokio::time::timeout(timeout, wake.notified()).await;
                }
                None => tokio::time::sleep(timeout).await,
            }
            Ok(())
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
mod tests {
    use super::*;
    use crate::server::task::TaskStatus;

    fn record(id: &str, now: u64) -> TaskRecord {
        TaskRecord {
            id: id.to_owned(),
            owner: None,
            status: TaskStatus::Working,
            status_message: None,
            input_requests: Map::new(),
            outcome: None,
            created_ms: now,
            updated_ms: now,
            ttl_ms: 60_000,
            poll_interval_ms: 500,
            lease_until_ms: now + 30_000,
        }
    }

    #[tokio::test]
    async fn past_its_bound_the_store_drops_ended_tasks_never_live_ones() {
        let store = InProcessTasks::new().with_max_records(2);
        let now = millis(SystemClock.now());
        let limits = TaskLimits { max_live: 100, max_live_per_principal: 100, now_ms: now };
        let mut first = record("t1", now);
        store.create(&first, limits).await.unwrap();
        store.create(&record("t2", now), limits).await.unwrap();
        let refused = store.create(&record("t3", now), limits).await.unwrap_err();
        assert_eq!(refused, StoreError::TaskCap { cap: 2, per_principal: false });
        first.status = TaskStatus::Completed;
        assert!(store.save(&first).await.unwrap());
        store.create(&record("t3", now), limits).await.unwrap();
        assert!(store.load("t1").await.unwrap().is_none());
        assert!(store.load("t2").await.unwrap().is_some() && store.load("t3").await.unwrap().is_some());
    }
}
