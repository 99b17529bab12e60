//! [`InProcessTasks`]: the task store of one process.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::Notify;

use crate::server::clock::{Clock, SystemClock};
use crate::server::store::{StoreError, StoreFuture, TaskLimits, TaskRecord, TaskRecords, TaskView, millis};

/// How many expired records one `create` sweeps at most: expiry costs each operation O(log n)
/// amortised (one record in, at most this many out), never a scan.
const SWEEP_BUDGET: usize = 32;

struct Entry {
    record: TaskRecord,
    answers: Map<String, Value>,
    cancel: bool,
    wake: Arc<Notify>,
}

/// When `record` expires: `created + ttl`, as [`TaskRecord::expired`] reads it.
fn expires_ms(record: &TaskRecord) -> u64 {
    record.created_ms.saturating_add(record.ttl_ms)
}

/// Until when a running task is live: [`TaskRecord::live`] holds at `now` exactly while it is not
/// terminal and `now` is before this.
fn live_until_ms(record: &TaskRecord) -> u64 {
    record.lease_until_ms.min(expires_ms(record))
}

/// The records, the indices `create` reads instead of scanning them, and the live counts; one lock
/// for all.
///
/// The counts hold at `counted_at` (the `now_ms` of the last `create`): a running record whose
/// live-until is past it is counted, by owner and in total; every other record (terminal, or its
/// lease or lifetime passed) is in `ended`, where room is made from. Moving `counted_at` moves
/// the records in between, either way, so the counts are exactly what [`TaskRecord::live`] says
/// of every record at that time.
#[derive(Default)]
struct Records {
    map: HashMap<String, Entry>,
    /// Every record by when it expires, for the sweep.
    expiries: BTreeSet<(u64, String)>,
    /// Every running (not terminal) record by its live-until, live or not.
    running: BTreeSet<(u64, String)>,
    /// The records not live at `counted_at`, by last change (and id, for a fixed order).
    ended: BTreeSet<(u64, String)>,
    counted_at: u64,
    live: usize,
    /// Live records by owner; the anonymous ones share the `None` count.
    live_by_owner: HashMap<Option<String>, usize>,
}

impl Records {
    /// Removes up to `budget` records expired at `now`, earliest first.
    fn sweep(&mut self, now: u64, budget: usize) {
        for _ in 0..budget {
            match self.expiries.first() {
                Some((at, id)) if *at <= now => {
                    let id = id.clone();
                    self.remove(&id);
                }
                _ => return,
            }
        }
    }

    fn remove(&mut self, id: &str) -> Option<Entry> {
        let entry = self.map.remove(id)?;
        self.unindex(&entry.record);
        Some(entry)
    }

    fn insert(&mut self, record: &TaskRecord) {
        self.remove(&record.id);
        self.index(record);
        let entry = Entry { record: record.clone(), answers: Map::new(), cancel: false, wake: Arc::new(Notify::new()) };
        self.map.insert(record.id.clone(), entry);
    }

    fn index(&mut self, record: &TaskRecord) {
        let id = &record.id;
        self.expiries.insert((expires_ms(record), id.clone()));
        if !record.status.is_terminal() {
            let until = live_until_ms(record);
            self.running.insert((until, id.clone()));
            if until > self.counted_at {
                self.live += 1;
                *self.live_by_owner.entry(record.owner.clone()).or_default() += 1;
                return;
            }
        }
        self.ended.insert((record.updated_ms, id.clone()));
    }

    /// Takes `record` (as it is stored) out of the indices and counts: the mirror of `index`.
    fn unindex(&mut self, record: &TaskRecord) {
        let id = &record.id;
        self.expiries.remove(&(expires_ms(record), id.clone()));
        if !record.status.is_terminal() {
            let until = live_until_ms(record);
            self.running.remove(&(until, id.clone()));
            if until > self.counted_at {
                self.uncount(&record.owner);
                return;
            }
        }
        self.ended.remove(&(record.updated_ms, id.clone()));
    }

    fn uncount(&mut self, owner: &Option<String>) {
        self.live -= 1;
        if let Some(count) = self.live_by_owner.get_mut(owner) {
            *count -= 1;
            if *count == 0 {
                self.live_by_owner.remove(owner);
            }
        }
    }

    /// Moves the counts to `now`: the running records whose live-until lies between the old time
    /// and `now` stop (or, if `now` is earlier, start again) being live. Each record moves once
    /// per crossing, so with time going forward this is amortised O(log n) per operation. Time
    /// can step back a little: concurrent creates may take the lock in another order than they
    /// read their clocks, and the counts must still be what `live` says at each one's time.
    fn count_at(&mut self, now: u64) {
        let (from, to, forward) = match now.cmp(&self.counted_at) {
            std::cmp::Ordering::Greater => (self.counted_at, now, true),
            std::cmp::Ordering::Less => (now, self.counted_at, false),
            std::cmp::Ordering::Equal => return,
        };
        // Live-until in (from, to]; `from < to`, so `from + 1` cannot overflow.
        let crossing: Vec<String> = self
            .running
            .range((from + 1, String::new())..)
            .take_while(|(until, _)| *until <= to)
            .map(|(_, id)| id.clone())
            .collect();
        self.counted_at = now;
        for id in crossing {
            let Some(record) = self.map.get(&id).map(|entry| &entry.record) else { continue };
            let (owner, updated) = (record.owner.clone(), record.updated_ms);
            if forward {
                self.uncount(&owner);
                self.ended.insert((updated, id));
            } else {
                self.live += 1;
                *self.live_by_owner.entry(owner).or_default() += 1;
                self.ended.remove(&(updated, id));
            }
        }
    }

    /// Stores a new task if `max_records` and `limits` leave room; `now` is the store's clock.
    fn create(
        &mut self,
        record: &TaskRecord,
        limits: TaskLimits,
        now: u64,
        max_records: usize,
    ) -> Result<(), StoreError> {
        // At most `max_records` are held, so this sweep either makes room or leaves no expired
        // record behind: room is never made from an ended task while an expired one lingers.
        self.sweep(now, SWEEP_BUDGET);
        self.count_at(limits.now_ms);
        if self.map.len() >= max_records {
            // Room from the ended task least recently changed.
            let Some((_, id)) = self.ended.first() else {
                return Err(StoreError::TaskCap { cap: max_records, per_principal: false });
            };
            let id = id.clone();
            self.remove(&id);
        }
        let mine = self.live_by_owner.get(&record.owner).copied().unwrap_or(0);
        if self.live >= limits.max_live {
            return Err(StoreError::TaskCap { cap: limits.max_live, per_principal: false });
        }
        if mine >= limits.max_live_per_principal {
            return Err(StoreError::TaskCap { cap: limits.max_live_per_principal, per_principal: true });
        }
        self.insert(record);
        Ok(())
    }

    /// Replaces a stored record unless it is terminal; its indices follow the new status, lease
    /// and last change.
    fn save(&mut self, record: &TaskRecord) -> bool {
        let old = match self.map.get_mut(&record.id) {
            Some(entry) if !entry.record.status.is_terminal() => {
                // Answers the handler took are no longer outstanding: forget them with their keys.
                entry.answers.retain(|key, _| record.input_requests.contains_key(key));
                entry.wake.notify_waiters();
                std::mem::replace(&mut entry.record, record.clone())
            }
            _ => return false,
        };
        self.unindex(&old);
        self.index(record);
        true
    }
}

/// Task records in this process's memory: every instance that shares it is this process.
/// Past [`InProcessTasks::max_records`] records, the ended tasks least recently changed make
/// room (a live task is never dropped).
///
/// Fast at scale: expired records are swept a few per created task through an index of their
/// deadlines, the live tasks are counted as they start and stop, and room is made from an index
/// of the ended ones, so no operation scans the store (O(log n) amortised each).
pub struct InProcessTasks {
    records: Mutex<Records>,
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
            records: Mutex::default(),
            clock: Arc::new(SystemClock),
            max_records: DEFAULT_MAX_TASK_RECORDS,
        }
    }

    /// Keeps at most `max` records, live or ended (default [`DEFAULT_MAX_TASK_RECORDS`]).
    pub fn max_records(mut self, max: usize) -> Self {
        self.max_records = max.max(1);
        self
    }

    /// This store, reading the time (expiry) from `clock`.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    fn records(&self) -> MutexGuard<'_, Records> {
        // Never held across an await or user code, and every update of the indices completes
        // without panicking: a poisoned lock still guards consistent records.
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl TaskRecords for InProcessTasks {
    fn create(&self, record: &TaskRecord, limits: TaskLimits) -> StoreFuture<'_, ()> {
        let now = millis(self.clock.now());
        let result = self.records().create(record, limits, now, self.max_records);
        Box::pin(std::future::ready(result))
    }

    fn save(&self, record: &TaskRecord) -> StoreFuture<'_, bool> {
        let saved = self.records().save(record);
        Box::pin(std::future::ready(Ok(saved)))
    }

    fn load(&self, id: &str) -> StoreFuture<'_, Option<TaskView>> {
        let view = self.records().map.get(id).map(|entry| TaskView {
            record: entry.record.clone(),
            answered: entry.answers.keys().cloned().collect::<BTreeSet<_>>(),
            cancel_requested: entry.cancel,
        });
        Box::pin(std::future::ready(Ok(view)))
    }

    fn answer(&self, id: &str, answers: Map<String, Value>) -> StoreFuture<'_, ()> {
        if let Some(entry) = self.records().map.get_mut(id) {
            for (key, value) in answers {
                entry.answers.entry(key).or_insert(value);
            }
            entry.wake.notify_waiters();
        }
        Box::pin(std::future::ready(Ok(())))
    }

    fn answers(&self, id: &str) -> StoreFuture<'_, Map<String, Value>> {
        let answers = self.records().map.get(id).map(|entry| entry.answers.clone()).unwrap_or_default();
        Box::pin(std::future::ready(Ok(answers)))
    }

    fn cancel(&self, id: &str) -> StoreFuture<'_, ()> {
        if let Some(entry) = self.records().map.get_mut(id) {
            entry.cancel = true;
            entry.wake.notify_waiters();
        }
        Box::pin(std::future::ready(Ok(())))
    }

    /// The flag alone: the record, its input requests and outcome, is not copied.
    fn cancel_requested(&self, id: &str) -> StoreFuture<'_, bool> {
        let asked = self.records().map.get(id).is_some_and(|entry| entry.cancel);
        Box::pin(std::future::ready(Ok(asked)))
    }

    fn wait(&self, id: &str, timeout: Duration) -> StoreFuture<'_, ()> {
        let wake = self.records().map.get(id).map(|entry| entry.wake.clone());
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
mod tests;
