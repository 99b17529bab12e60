//! [`InProcessTasks`]: the task store of one process.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::Notify;

use crate::server::clock::{Clock, SystemClock};
use crate::server::store::{StoreError, StoreFuture, TaskLimits, TaskRecord, TaskRecords, TaskView, millis};

/// How many expired records one `create` sweeps at most: expiry costs each operation O(log n)
/// amortised (one record in, at most this many out), never a scan.
const SWEEP_BUDGET: usize = 32;

/// Entries an index may hold beyond twice its members before it is compacted: small stores do
/// not compact at every step.
const INDEX_SLACK: usize = 64;

struct Entry {
    /// The id, shared with the map's key and the indices' entries (no copy per index).
    id: Arc<str>,
    record: TaskRecord,
    answers: Map<String, Value>,
    cancel: bool,
    wake: Arc<Notify>,
    /// The stamp of the record's creation: its entry in `expiries` carries it.
    born: u64,
    /// The stamp of the record's last write: its entries in the other indices carry it.
    stamp: u64,
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

/// One entry of an index: a time (deadline or last change), the record's id and the stamp of the
/// record it was written for. An entry whose record was written since (another stamp), removed,
/// or left the index's state is stale: it is skipped where it is met, and dropped when the index
/// is compacted.
type Mark = (u64, Arc<str>, u64);

/// The index compaction of the flow store ([`super::deadlines::compact`]) with this store's slack;
/// duplicates here are a record that left a state and came back.
fn compact<T: Ord>(index: &mut BinaryHeap<T>, members: usize, valid: impl FnMut(&T) -> bool) {
    super::deadlines::compact(index, members, INDEX_SLACK, valid);
}

/// The records, the indices `create` reads instead of scanning them, and the live counts; one lock
/// for all.
///
/// The counts hold at `counted_at` (the `now_ms` of the last `create`): a running record whose
/// live-until is past it is counted, by owner and in total; every other record (terminal, or its
/// lease or lifetime passed) is ended, where room is made from. Moving `counted_at` moves the
/// records in between, either way, so the counts are exactly what [`TaskRecord::live`] says of
/// every record at that time.
///
/// The indices are binary heaps of [`Mark`]s, each one allocation however many records it
/// indexes (a tree of nodes would leave long-lived small blocks among every request's short-lived
/// ones, and send the allocator to its slow paths). They are lazy: a write pushes the record's new
/// entries and leaves its old ones stale; the record itself is the truth they are checked against.
/// Each valid record has exactly one valid entry in `live` or `lapsed` (whichever its state is),
/// which is what keeps the counts exact; `expiries` and `ended` may hold a valid entry twice,
/// which only costs a skip.
#[derive(Default)]
struct Records {
    map: HashMap<Arc<str>, Entry>,
    /// Every record by when it expires, for the sweep (earliest on top).
    expiries: BinaryHeap<Reverse<Mark>>,
    /// The running records live at `counted_at`, by live-until (earliest on top).
    live_until: BinaryHeap<Reverse<Mark>>,
    /// The running records not live at `counted_at` (lease or lifetime passed), by live-until
    /// (latest on top): the ones a step back of `counted_at` makes live again.
    lapsed: BinaryHeap<Mark>,
    /// The records not live at `counted_at`, by last change and id (least recent on top).
    ended: BinaryHeap<Reverse<Mark>>,
    /// The stamp of the next write.
    next_stamp: u64,
    counted_at: u64,
    /// Records not terminal, live or lapsed.
    running: usize,
    live: usize,
    /// Live records by owner; the anonymous ones share the `None` count.
    live_by_owner: HashMap<Option<String>, usize>,
}

/// The entry of `id` if it was last written under `stamp`.
fn written<'a>(map: &'a HashMap<Arc<str>, Entry>, id: &str, stamp: u64) -> Option<&'a TaskRecord> {
    map.get(id).filter(|entry| entry.stamp == stamp).map(|entry| &entry.record)
}

/// Whether `record` counts as live at `at`: running, and its live-until past `at`.
fn live_at(record: &TaskRecord, at: u64) -> bool {
    !record.status.is_terminal() && live_until_ms(record) > at
}

fn count(live: &mut usize, by_owner: &mut HashMap<Option<String>, usize>, owner: &Option<String>) {
    *live += 1;
    match by_owner.get_mut(owner) {
        Some(count) => *count += 1,
        None => {
            by_owner.insert(owner.clone(), 1);
        }
    }
}

fn uncount(live: &mut usize, by_owner: &mut HashMap<Option<String>, usize>, owner: &Option<String>) {
    *live -= 1;
    if let Some(count) = by_owner.get_mut(owner) {
        *count -= 1;
        if *count == 0 {
            by_owner.remove(owner);
        }
    }
}

impl Records {
    fn stamp(&mut self) -> u64 {
        self.next_stamp += 1;
        self.next_stamp
    }

    /// Removes up to `budget` records expired at `now`, earliest first.
    fn sweep(&mut self, now: u64, budget: usize) {
        let mut removed = 0;
        while removed < budget {
            let Some(Reverse((at, _, _))) = self.expiries.peek() else { return };
            if *at > now {
                return;
            }
            let Some(Reverse((at, id, born))) = self.expiries.pop() else { return };
            let current = self.map.get(&id).is_some_and(|e| e.born == born && expires_ms(&e.record) == at);
            if current {
                self.remove(&id);
                removed += 1;
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
        let stamp = self.stamp();
        let id: Arc<str> = Arc::from(record.id.as_str());
        self.index(&id, record, stamp);
        self.expiries.push(Reverse((expires_ms(record), id.clone(), stamp)));
        let entry = Entry {
            id: id.clone(),
            record: record.clone(),
            answers: Map::new(),
            cancel: false,
            wake: Arc::new(Notify::new()),
            born: stamp,
            stamp,
        };
        self.map.insert(id, entry);
    }

    /// Counts `record`, written under `stamp`, and pushes its entries for its state at
    /// `counted_at`.
    fn index(&mut self, id: &Arc<str>, record: &TaskRecord, stamp: u64) {
        if !record.status.is_terminal() {
            self.running += 1;
            let until = live_until_ms(record);
            if until > self.counted_at {
                count(&mut self.live, &mut self.live_by_owner, &record.owner);
                self.live_until.push(Reverse((until, id.clone(), stamp)));
                return;
            }
            self.lapsed.push((until, id.clone(), stamp));
        }
        self.ended.push(Reverse((record.updated_ms, id.clone(), stamp)));
    }

    /// Takes `record` (as it is stored) out of the counts: the mirror of `index`. Its entries
    /// are stale from now on (its entry is removed or written under another stamp).
    fn unindex(&mut self, record: &TaskRecord) {
        if !record.status.is_terminal() {
            self.running -= 1;
            if live_until_ms(record) > self.counted_at {
                uncount(&mut self.live, &mut self.live_by_owner, &record.owner);
            }
        }
    }

    /// Moves the counts to `now`: the running records whose live-until lies between the old time
    /// and `now` stop (or, if `now` is earlier, start again) being live. Each record moves once
    /// per crossing, so with time going forward this is amortised O(log n) per operation. Time
    /// can step back a little: concurrent creates may take the lock in another order than they
    /// read their clocks, and the counts must still be what `live` says at each one's time.
    fn count_at(&mut self, now: u64) {
        let before = self.counted_at;
        self.counted_at = now;
        // Forward: live-until in (before, now] stop being live.
        while let Some(Reverse((until, _, _))) = self.live_until.peek() {
            if *until > now {
                break;
            }
            let Some(Reverse((until, id, stamp))) = self.live_until.pop() else { break };
            let Some(record) = written(&self.map, &id, stamp) else { continue };
            if !live_at(record, before) {
                continue;
            }
            uncount(&mut self.live, &mut self.live_by_owner, &record.owner);
            self.ended.push(Reverse((record.updated_ms, id.clone(), stamp)));
            self.lapsed.push((until, id, stamp));
        }
        // Back: live-until in (now, before] are live again (their `ended` entries go stale).
        while let Some((until, _, _)) = self.lapsed.peek() {
            if *until <= now {
                break;
            }
            let Some((until, id, stamp)) = self.lapsed.pop() else { break };
            let Some(record) = written(&self.map, &id, stamp) else { continue };
            if record.status.is_terminal() || live_until_ms(record) > before {
                continue;
            }
            count(&mut self.live, &mut self.live_by_owner, &record.owner);
            self.live_until.push(Reverse((until, id, stamp)));
        }
    }

    /// The ended record least recently changed (and least id), at `counted_at`.
    fn first_ended(&mut self) -> Option<Arc<str>> {
        while let Some(Reverse((_, id, stamp))) = self.ended.peek() {
            if written(&self.map, id, *stamp).is_some_and(|record| !live_at(record, self.counted_at)) {
                return Some(id.clone());
            }
            self.ended.pop();
        }
        None
    }

    /// Compacts every index whose stale entries outnumber its members.
    fn tidy(&mut self) {
        let (map, at) = (&self.map, self.counted_at);
        compact(&mut self.expiries, map.len(), |Reverse((until, id, born))| {
            map.get(id).is_some_and(|e| e.born == *born && expires_ms(&e.record) == *until)
        });
        compact(&mut self.live_until, self.live, |Reverse((_, id, stamp))| {
            written(map, id, *stamp).is_some_and(|record| live_at(record, at))
        });
        compact(&mut self.lapsed, self.running - self.live, |(_, id, stamp)| {
            written(map, id, *stamp).is_some_and(|record| !record.status.is_terminal() && !live_at(record, at))
        });
        compact(&mut self.ended, map.len() - self.live, |Reverse((_, id, stamp))| {
            written(map, id, *stamp).is_some_and(|record| !live_at(record, at))
        });
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
        let decided = self.admit(record, limits, max_records);
        self.tidy();
        decided
    }

    fn admit(&mut self, record: &TaskRecord, limits: TaskLimits, max_records: usize) -> Result<(), StoreError> {
        if self.map.len() >= max_records {
            // Room from the ended task least recently changed.
            let Some(id) = self.first_ended() else {
                return Err(StoreError::TaskCap { cap: max_records, per_principal: false });
            };
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
        let stamp = self.stamp();
        let (id, old, born) = match self.map.get_mut(record.id.as_str()) {
            Some(entry) if !entry.record.status.is_terminal() => {
                // Answers the handler took are no longer outstanding: forget them with their keys.
                entry.answers.retain(|key, _| record.input_requests.contains_key(key));
                entry.wake.notify_waiters();
                entry.stamp = stamp;
                (entry.id.clone(), std::mem::replace(&mut entry.record, record.clone()), entry.born)
            }
            _ => return false,
        };
        self.unindex(&old);
        self.index(&id, record, stamp);
        if expires_ms(&old) != expires_ms(record) {
            self.expiries.push(Reverse((expires_ms(record), id, born)));
        }
        self.tidy();
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

    /// Every answer, cancel request and save of a task wakes its watchers: the watch is armed
    /// here, before the caller reads anything.
    fn watch(&self, id: &str) -> Option<StoreFuture<'_, ()>> {
        let wake = self.records().map.get(id).map(|entry| entry.wake.clone())?;
        let mut notified = Box::pin(wake.notified_owned());
        notified.as_mut().enable();
        Some(Box::pin(async move {
            notified.await;
            Ok(())
        }))
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
