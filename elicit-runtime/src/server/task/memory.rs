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
/// Expired records are swept when a task is created.
pub struct InProcessTasks {
    entries: Mutex<HashMap<String, Entry>>,
    clock: Arc<dyn Clock>,
}

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
        InProcessTasks { entries: Mutex::new(HashMap::new()), clock: Arc::new(SystemClock) }
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
