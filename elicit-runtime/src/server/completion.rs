//! Out-of-band completion of URL-mode elicitations.
//!
//! In URL mode `accept` means only "the user consented"; whether the step behind the URL finished
//! is known to whatever serves that page. The page records completion in a [`CompletionStore`];
//! on the client's retry the engine asks the store. The embedded default, [`InProcessStore`], lives
//! in one process; deployments with several instances plug in a shared store.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::Notify;

/// A boxed future returned by [`CompletionStore`] methods (the trait stays object-safe).
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Where an out-of-band step stands.
#[derive(Debug, Clone, PartialEq)]
pub enum UrlStatus {
    /// Registered, not finished yet.
    Pending,
    /// Finished; the value is what the page recorded (for example an approval decision).
    Completed(Value),
    /// Never registered, or expired.
    Unknown,
}

/// The store could not be reached or refused the operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreError(pub String);

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "completion store: {}", self.0)
    }
}

impl std::error::Error for StoreError {}

/// Records which URL-mode steps have finished.
///
/// A step is registered when its URL is handed out, completed by the page, and taken once by the
/// retry that continues the flow:
///
/// ```
/// use std::time::Duration;
///
/// use elicit_runtime::server::{CompletionStore, InProcessStore, UrlStatus};
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let store = InProcessStore::new();
/// store.register("step-1", Duration::from_secs(60), None).await?;
/// assert_eq!(store.status("step-1").await?, UrlStatus::Pending);
///
/// assert!(store.complete("step-1", json!({"approved": true}), None).await?);
/// // A page cannot complete a step twice, nor one that was never registered.
/// assert!(!store.complete("step-1", json!({"approved": false}), None).await?);
/// assert!(!store.complete("made-up", json!(null), None).await?);
///
/// // The completion is consumed by exactly one take.
/// let taken = store.take("step-1", Duration::ZERO).await?;
/// assert_eq!(taken, UrlStatus::Completed(json!({"approved": true})));
/// assert_eq!(store.take("step-1", Duration::ZERO).await?, UrlStatus::Unknown);
/// # Ok::<(), elicit_runtime::server::StoreError>(())
/// # }).unwrap();
/// ```
pub trait CompletionStore: Send + Sync {
    /// Registers a freshly minted id as pending for `ttl`, owned by `owner` (the authenticated
    /// principal of the flow that minted it) when there is one.
    fn register(&self, id: &str, ttl: Duration, owner: Option<&str>) -> StoreFuture<'_, ()>;

    /// Records completion of a pending id by `by` (the principal the page authenticated, if
    /// any). `false` when the id is unknown, expired or already completed — a page must not be
    /// able to complete a step twice or invent one — and when the step has an owner other than
    /// `by`: an approval of user A cannot be given by user B (nor anonymously).
    fn complete(&self, id: &str, outcome: Value, by: Option<&str>) -> StoreFuture<'_, bool>;

    /// The current status of `id`.
    fn status(&self, id: &str) -> StoreFuture<'_, UrlStatus>;

    /// Waits up to `timeout` for `id` to complete and consumes the completion: a completed step is
    /// returned by exactly one `take`, so a replayed older `requestState` cannot use the same
    /// approval twice. Pending and unknown steps are returned as they are.
    fn take(&self, id: &str, timeout: Duration) -> StoreFuture<'_, UrlStatus>;

    /// Forgets `id` now: the step it names will never be asked about again (a live task that
    /// minted it was dropped, or the user declined). Best effort and without waiting; the default
    /// leaves the record to expire.
    fn release(&self, id: &str) {
        let _ = id;
    }

    // Exactly-once bookkeeping of flows (see `Flow::once`). Every record below lives under one
    // flow id, minted by the engine and sealed in the flow's state; a store shared by several
    // instances makes the guarantee hold across them. The defaults refuse: a store that does not
    // implement them cannot serve `once`.

    /// Claims the exactly-once slot `key` of `flow`, atomically: [`OnceClaim::Run`] to exactly one
    /// caller until it records or abandons the slot; the recorded value to every caller after
    /// that; [`OnceClaim::Busy`] while the claimant runs; [`OnceClaim::Finished`] (and no claim)
    /// once the flow has recorded its final answers. The flow's records live at least `ttl` from
    /// this call.
    fn claim_once(&self, flow: &str, key: &str, ttl: Duration) -> StoreFuture<'_, OnceClaim> {
        let _ = (flow, key, ttl);
        Box::pin(async { Err(unsupported()) })
    }

    /// Records the value of a slot this caller claimed, releasing its waiters.
    fn record_once(&self, flow: &str, key: &str, value: Value, ttl: Duration) -> StoreFuture<'_, ()> {
        let _ = (flow, key, value, ttl);
        Box::pin(async { Err(unsupported()) })
    }

    /// Gives up a slot this caller claimed without recording a value (its computation failed):
    /// the next claimant runs it.
    fn abandon_once(&self, flow: &str, key: &str) -> StoreFuture<'_, ()> {
        let _ = (flow, key);
        Box::pin(async { Err(unsupported()) })
    }

    /// The final answers `flow` finished with, if it has finished.
    fn finished(&self, flow: &str) -> StoreFuture<'_, Option<Value>> {
        let _ = flow;
        Box::pin(async { Err(unsupported()) })
    }

    /// Records that `flow` finished with `answers`, atomically, unless it already finished
    /// ([`Finish::Already`] with the answers it finished with) or claimed an exactly-once slot
    /// whose key (prefixed `o:`) is not in `seen` — a concurrent round of the same flow ran a side
    /// effect this round did not see ([`Finish::Conflict`]).
    fn finish(&self, flow: &str, answers: Value, seen: &[String], ttl: Duration) -> StoreFuture<'_, Finish> {
        let _ = (flow, answers, seen, ttl);
        Box::pin(async { Err(unsupported()) })
    }
}

fn unsupported() -> StoreError {
    StoreError("this completion store does not keep exactly-once records".to_owned())
}

/// What [`CompletionStore::claim_once`] found.
#[derive(Debug, Clone, PartialEq)]
pub enum OnceClaim {
    /// The caller holds the slot: run the computation, then record or abandon it.
    Run,
    /// Recorded earlier: the value, to reuse as-is.
    Done(Value),
    /// Another caller holds the slot and has not recorded yet.
    Busy,
    /// The flow has finished: nothing more may run in it.
    Finished,
}

/// What [`CompletionStore::finish`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Finish {
    /// The answers are recorded as the flow's final ones.
    Recorded,
    /// The flow had already finished, with these answers.
    Already(Value),
    /// A concurrent round of the flow claimed a slot this round did not see.
    Conflict,
}

/// The default cap on live records of an [`InProcessStore`].
pub const DEFAULT_MAX_RECORDS: usize = 1_000_000;

/// How many expired records one operation sweeps at most, besides the one it touches: expiry
/// costs each operation O(log n) at worst, never a scan.
const SWEEP_BUDGET: usize = 32;

/// One record: a URL-mode step or a flow's exactly-once slots.
struct Record {
    kind: Kind,
    expires: Instant,
    /// Breaks ties between equal deadlines in the index.
    seq: u64,
}

enum Kind {
    /// `owner`: the principal the step belongs to, if any; only they may complete it.
    Url {
        status: UrlStatus,
        owner: Option<String>,
        notify: Arc<Notify>,
    },
    Flow(FlowRecord),
}

#[derive(Default)]
struct FlowRecord {
    /// Slot → recorded value (`None`: claimed, not recorded yet).
    slots: HashMap<String, Option<Value>>,
    finished: Option<Value>,
}

/// The records and the index of their deadlines; one lock for both.
#[derive(Default)]
struct Records {
    /// By key: `u` + the URL id, or `f` + the flow id.
    map: HashMap<String, Record>,
    /// (deadline, seq) → key: the next record to expire is the first entry.
    deadlines: BTreeMap<(Instant, u64), String>,
    seq: u64,
}

impl Records {
    /// Drops up to `budget` records whose deadline passed.
    fn sweep(&mut self, now: Instant, budget: usize) {
        for _ in 0..budget {
            match self.deadlines.first_key_value() {
                Some(((at, _), _)) if *at <= now => {}
                _ => return,
            }
            if let Some((_, key)) = self.deadlines.pop_first() {
                self.map.remove(&key);
            }
        }
    }

    fn live(&mut self, key: &str, now: Instant) -> Option<&mut Record> {
        self.map.get_mut(key).filter(|r| r.expires > now)
    }

    fn remove(&mut self, key: &str) -> Option<Record> {
        let record = self.map.remove(key)?;
        self.deadlines.remove(&(record.expires, record.seq));
        Some(record)
    }

    /// Room for one more record: expired ones are swept first (amortised: each record is swept
    /// once), then the cap decides.
    fn room(&mut self, now: Instant, max: usize) -> Result<(), StoreError> {
        if self.map.len() >= max {
            self.sweep(now, usize::MAX);
        }
        if self.map.len() >= max {
            return Err(StoreError(format!("full: {max} live records (the configured cap); try again later")));
        }
        Ok(())
    }

    fn insert(&mut self, key: String, kind: Kind, expires: Instant) {
        self.remove(&key);
        self.seq = self.seq.wrapping_add(1);
        self.deadlines.insert((expires, self.seq), key.clone());
        self.map.insert(key, Record { kind, expires, seq: self.seq });
    }

    /// Moves a record's deadline to `expires` if that is later.
    fn extend(&mut self, key: &str, expires: Instant) {
        let Some(record) = self.map.get_mut(key) else { return };
        if record.expires >= expires {
            return;
        }
        self.deadlines.remove(&(record.expires, record.seq));
        record.expires = expires;
        self.deadlines.insert((expires, record.seq), key.to_owned());
    }

    /// The live flow record of `flow`, created (within the cap) when missing, its life extended
    /// to at least `ttl` from now.
    fn flow(&mut self, flow: &str, ttl: Duration, now: Instant, max: usize) -> Result<&mut FlowRecord, StoreError> {
        let key = flow_key(flow);
        if self.live(&key, now).is_none() {
            self.remove(&key);
            self.room(now, max)?;
            self.insert(key.clone(), Kind::Flow(FlowRecord::default()), now + ttl);
        } else {
            self.extend(&key, now + ttl);
        }
        match self.map.get_mut(&key).map(|r| &mut r.kind) {
            Some(Kind::Flow(record)) => Ok(record),
            _ => Err(StoreError("a flow record went missing".to_owned())),
        }
    }
}

fn url_key(id: &str) -> String {
    format!("u{id}")
}

fn flow_key(flow: &str) -> String {
    format!("f{flow}")
}

/// The embedded default store: completion records in this process's memory, with expiry and a
/// wake-up so a retry waiting for completion returns as soon as the page is submitted.
///
/// Bounded and fast at scale: at most [`InProcessStore::with_max_records`] live records (URL-mode
/// steps and flows' exactly-once records; a new URL ask is refused with a clear error when full),
/// and expiry through an index of deadlines swept a few records per operation, so no operation
/// scans the store.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// use elicit_runtime::server::{CompletionStore, InProcessStore, UrlStatus};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let store = Arc::new(InProcessStore::new());
/// store.register("pay-7", Duration::from_secs(60), None).await?;
/// // A retry waits (here at most a minute) and wakes as soon as the page completes the step.
/// let page = Arc::clone(&store);
/// let completed = tokio::spawn(async move { page.complete("pay-7", "approved".into(), None).await });
/// let status = store.take("pay-7", Duration::from_secs(60)).await?;
/// assert_eq!(status, UrlStatus::Completed("approved".into()));
/// assert!(completed.await.unwrap()?);
/// # Ok::<(), elicit_runtime::server::StoreError>(())
/// # }).unwrap();
/// ```
pub struct InProcessStore {
    records: Mutex<Records>,
    max_records: usize,
}

impl Default for InProcessStore {
    fn default() -> Self {
        InProcessStore { records: Mutex::default(), max_records: DEFAULT_MAX_RECORDS }
    }
}

impl InProcessStore {
    /// An empty store holding at most [`DEFAULT_MAX_RECORDS`] live records.
    pub fn new() -> Self {
        InProcessStore::default()
    }

    /// Caps the live records (URL-mode steps plus flows with exactly-once records). When the store
    /// is full, registering a step or starting a flow's first record fails with a [`StoreError`]
    /// until records expire or are consumed.
    pub fn with_max_records(mut self, max: usize) -> Self {
        self.max_records = max;
        self
    }

    /// How many records are held right now (live ones, and expired ones not swept yet).
    pub fn len(&self) -> usize {
        self.lock().map.len()
    }

    /// Whether the store holds no record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Records> {
        // A poisoned lock only means another thread panicked mid-update of plain maps; the
        // records themselves stay consistent, so keep serving.
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn with_records<T>(&self, f: impl FnOnce(&mut Records, Instant) -> T) -> T {
        let mut records = self.lock();
        let now = Instant::now();
        records.sweep(now, SWEEP_BUDGET);
        f(&mut records, now)
    }

    /// Removes a completed record and returns it; another taker racing for it gets `Unknown`.
    fn consume(&self, id: &str) -> UrlStatus {
        let key = url_key(id);
        self.with_records(|records, now| match records.live(&key, now).map(|r| &r.kind) {
            Some(Kind::Url { status: UrlStatus::Completed(_), .. }) => match records.remove(&key).map(|r| r.kind) {
                Some(Kind::Url { status, .. }) => status,
                _ => UrlStatus::Unknown,
            },
            Some(Kind::Url { status, .. }) => status.clone(),
            _ => UrlStatus::Unknown,
        })
    }

    fn current(&self, id: &str) -> (UrlStatus, Option<Arc<Notify>>) {
        let key = url_key(id);
        self.with_records(|records, now| match records.live(&key, now).map(|r| &r.kind) {
            Some(Kind::Url { status, notify, .. }) => (status.clone(), Some(notify.clone())),
            _ => (UrlStatus::Unknown, None),
        })
    }
}

impl CompletionStore for InProcessStore {
    fn register(&self, id: &str, ttl: Duration, owner: Option<&str>) -> StoreFuture<'_, ()> {
        let key = url_key(id);
        let owner = owner.map(str::to_owned);
        Box::pin(async move {
            self.with_records(|records, now| {
                if records.live(&key, now).is_none() {
                    records.room(now, self.max_records)?;
                }
                records.insert(
                    key,
                    Kind::Url { status: UrlStatus::Pending, owner, notify: Arc::new(Notify::new()) },
                    now + ttl,
                );
                Ok(())
            })
        })
    }

    fn complete(&self, id: &str, outcome: Value, by: Option<&str>) -> StoreFuture<'_, bool> {
        let key = url_key(id);
        let by = by.map(str::to_owned);
        Box::pin(async move {
            Ok(self.with_records(|records, now| match records.live(&key, now).map(|r| &mut r.kind) {
                Some(Kind::Url { status, owner, notify })
                    if *status == UrlStatus::Pending
                        && owner.as_ref().is_none_or(|owner| by.as_ref() == Some(owner)) =>
                {
                    *status = UrlStatus::Completed(outcome);
                    notify.notify_waiters();
                    true
                }
                _ => false,
            }))
        })
    }

    fn status(&self, id: &str) -> StoreFuture<'_, UrlStatus> {
        let id = id.to_owned();
        Box::pin(async move { Ok(self.current(&id).0) })
    }

    fn release(&self, id: &str) {
        let key = url_key(id);
        self.with_records(|records, _| records.remove(&key));
    }

    fn take(&self, id: &str, timeout: Duration) -> StoreFuture<'_, UrlStatus> {
        let id = id.to_owned();
        Box::pin(async move {
            let deadline = tokio::time::Instant::now() + timeout;
            loop {
                let (status, notify) = self.current(&id);
                if matches!(status, UrlStatus::Completed(_)) {
                    return Ok(self.consume(&id));
                }
                let Some(notify) = notify.filter(|_| status == UrlStatus::Pending) else { return Ok(status) };
                let notified = notify.notified();
                tokio::pin!(notified);
                // Register interest before re-checking, so a completion in between is not missed.
                notified.as_mut().enable();
                if self.current(&id).0 != UrlStatus::Pending {
                    continue;
                }
                if tokio::time::timeout_at(deadline, notified).await.is_err() {
                    return Ok(match self.current(&id).0 {
                        UrlStatus::Completed(_) => self.consume(&id),
                        other => other,
                    });
                }
            }
        })
    }

    fn claim_once(&self, flow: &str, key: &str, ttl: Duration) -> StoreFuture<'_, OnceClaim> {
        let (flow, key) = (flow.to_owned(), key.to_owned());
        Box::pin(async move {
            self.with_records(|records, now| {
                let record = records.flow(&flow, ttl, now, self.max_records)?;
                Ok(match record.slots.get(&key) {
                    Some(Some(value)) => OnceClaim::Done(value.clone()),
                    Some(None) => OnceClaim::Busy,
                    None if record.finished.is_some() => OnceClaim::Finished,
                    None => {
                        record.slots.insert(key, None);
                        OnceClaim::Run
                    }
                })
            })
        })
    }

    fn record_once(&self, flow: &str, key: &str, value: Value, ttl: Duration) -> StoreFuture<'_, ()> {
        let (flow, key) = (flow.to_owned(), key.to_owned());
        Box::pin(async move {
            self.with_records(|records, now| {
                records.flow(&flow, ttl, now, self.max_records)?.slots.insert(key, Some(value));
                Ok(())
            })
        })
    }

    fn abandon_once(&self, flow: &str, key: &str) -> StoreFuture<'_, ()> {
        let (flow, key) = (flow_key(flow), key.to_owned());
        Box::pin(async move {
            self.with_records(|records, now| {
                if let Some(Kind::Flow(record)) = records.live(&flow, now).map(|r| &mut r.kind)
                    && record.slots.get(&key).is_some_and(Option::is_none)
                {
                    record.slots.remove(&key);
                }
            });
            Ok(())
        })
    }

    fn finished(&self, flow: &str) -> StoreFuture<'_, Option<Value>> {
        let flow = flow_key(flow);
        Box::pin(async move {
            Ok(self.with_records(|records, now| match records.live(&flow, now).map(|r| &r.kind) {
                Some(Kind::Flow(record)) => record.finished.clone(),
                _ => None,
            }))
        })
    }

    fn finish(&self, flow: &str, answers: Value, seen: &[String], ttl: Duration) -> StoreFuture<'_, Finish> {
        let flow = flow.to_owned();
        let seen: Vec<String> = seen.to_vec();
        Box::pin(async move {
            self.with_records(|records, now| {
                let record = records.flow(&flow, ttl, now, self.max_records)?;
                if let Some(already) = &record.finished {
                    return Ok(Finish::Already(already.clone()));
                }
                if record.slots.keys().any(|k| k.starts_with("o:") && !seen.contains(k)) {
                    return Ok(Finish::Conflict);
                }
                record.finished = Some(answers);
                Ok(Finish::Recorded)
            })
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn an_owned_step_completes_only_for_its_owner() {
        let store = InProcessStore::new();
        store.register("owned", Duration::from_secs(60), Some("alice")).await.unwrap();
        assert!(!store.complete("owned", json!(true), Some("bob")).await.unwrap(), "completed by another user");
        assert!(!store.complete("owned", json!(true), None).await.unwrap(), "completed anonymously");
        assert_eq!(store.status("owned").await.unwrap(), UrlStatus::Pending);
        assert!(store.complete("owned", json!(true), Some("alice")).await.unwrap());
        // A step minted without a principal completes for anyone, as before.
        store.register("open", Duration::from_secs(60), None).await.unwrap();
        assert!(store.complete("open", json!(true), Some("bob")).await.unwrap());
    }

    #[tokio::test]
    async fn completes_once_wakes_waiters_and_is_taken_once() {
        let store = Arc::new(InProcessStore::new());
        store.register("a", Duration::from_secs(60), None).await.unwrap();
        assert_eq!(store.status("a").await.unwrap(), UrlStatus::Pending);
        assert_eq!(store.take("a", Duration::from_millis(10)).await.unwrap(), UrlStatus::Pending);
        let waiter = {
            let store = store.clone();
            tokio::spawn(async move { store.take("a", Duration::from_secs(30)).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(store.complete("a", json!({"approved": true}), None).await.unwrap());
        assert!(!store.complete("a", json!({"approved": false}), None).await.unwrap(), "completed twice");
        let status = waiter.await.unwrap().unwrap();
        assert_eq!(status, UrlStatus::Completed(json!({"approved": true})));
        // Consumed: a second take (a replayed older state) does not see the approval again.
        assert_eq!(store.take("a", Duration::from_millis(10)).await.unwrap(), UrlStatus::Unknown);
        assert!(!store.complete("never-minted", json!(null), None).await.unwrap());
        assert_eq!(store.status("never-minted").await.unwrap(), UrlStatus::Unknown);
    }

    #[tokio::test]
    async fn a_released_record_is_gone() {
        let store = InProcessStore::new();
        store.register("c", Duration::from_secs(60), None).await.unwrap();
        store.release("c");
        assert_eq!(store.status("c").await.unwrap(), UrlStatus::Unknown);
        assert!(!store.complete("c", json!(null), None).await.unwrap());
    }

    #[tokio::test]
    async fn a_full_store_refuses_new_records_with_a_clear_error_until_some_expire() {
        let store = InProcessStore::new().with_max_records(3);
        store.register("a", Duration::from_secs(60), None).await.unwrap();
        store.register("b", Duration::from_millis(1), None).await.unwrap();
        store.claim_once("flow-1", "o:x", Duration::from_secs(60)).await.unwrap();
        // Re-registering a live id takes no extra room; a new one does.
        store.register("a", Duration::from_secs(60), None).await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
        // `b` expired: its room is reused.
        store.register("c", Duration::from_secs(60), None).await.unwrap();
        let error = store.register("d", Duration::from_secs(60), None).await.unwrap_err();
        assert!(error.to_string().contains("full") && error.to_string().contains('3'), "{error}");
        let error = store.claim_once("flow-2", "o:x", Duration::from_secs(60)).await.unwrap_err();
        assert!(error.to_string().contains("full"), "{error}");
        // A flow that already has its record is not refused.
        assert_eq!(store.claim_once("flow-1", "o:y", Duration::from_secs(60)).await.unwrap(), OnceClaim::Run);
        // Consuming a record makes room.
        assert!(store.complete("c", json!(1), None).await.unwrap());
        assert_eq!(store.take("c", Duration::ZERO).await.unwrap(), UrlStatus::Completed(json!(1)));
        store.register("d", Duration::from_secs(60), None).await.unwrap();
        assert_eq!(store.len(), 3);
    }

    #[tokio::test]
    async fn expired_records_are_swept_a_few_per_operation() {
        let store = InProcessStore::new();
        for i in 0..200 {
            store.register(&format!("old-{i}"), Duration::from_millis(1), None).await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
        store.register("new", Duration::from_secs(60), None).await.unwrap();
        // One operation swept at most its budget, not everything.
        assert_eq!(store.len(), 201 - SWEEP_BUDGET);
        for _ in 0..10 {
            store.status("new").await.unwrap();
        }
        assert_eq!(store.len(), 1, "every expired record is gone after a few operations");
        assert_eq!(store.status("old-3").await.unwrap(), UrlStatus::Unknown);
    }

    #[tokio::test]
    async fn a_slot_is_claimed_once_recorded_reused_abandoned_and_closed_by_finish() {
        let store = InProcessStore::new();
        let ttl = Duration::from_secs(60);
        assert_eq!(store.claim_once("f", "o:a", ttl).await.unwrap(), OnceClaim::Run);
        assert_eq!(store.claim_once("f", "o:a", ttl).await.unwrap(), OnceClaim::Busy);
        store.record_once("f", "o:a", json!("A"), ttl).await.unwrap();
        assert_eq!(store.claim_once("f", "o:a", ttl).await.unwrap(), OnceClaim::Done(json!("A")));
        // Abandoned: the next claimant runs it; a recorded slot is not abandoned.
        assert_eq!(store.claim_once("f", "o:b", ttl).await.unwrap(), OnceClaim::Run);
        store.abandon_once("f", "o:b").await.unwrap();
        store.abandon_once("f", "o:a").await.unwrap();
        assert_eq!(store.claim_once("f", "o:b", ttl).await.unwrap(), OnceClaim::Run);
        assert_eq!(store.claim_once("f", "o:a", ttl).await.unwrap(), OnceClaim::Done(json!("A")));
        // A round that did not see `o:b` (claimed by a concurrent round) cannot finish the flow.
        assert_eq!(store.finish("f", json!({"x": 1}), &["o:a".into()], ttl).await.unwrap(), Finish::Conflict);
        store.record_once("f", "o:b", json!("B"), ttl).await.unwrap();
        assert_eq!(store.finished("f").await.unwrap(), None);
        assert_eq!(
            store.finish("f", json!({"x": 1}), &["o:a".into(), "o:b".into()], ttl).await.unwrap(),
            Finish::Recorded
        );
        assert_eq!(store.finished("f").await.unwrap(), Some(json!({"x": 1})));
        assert_eq!(store.finish("f", json!({"x": 2}), &[], ttl).await.unwrap(), Finish::Already(json!({"x": 1})));
        // Finished: recorded slots are still read, nothing new runs.
        assert_eq!(store.claim_once("f", "o:a", ttl).await.unwrap(), OnceClaim::Done(json!("A")));
        assert_eq!(store.claim_once("f", "o:c", ttl).await.unwrap(), OnceClaim::Finished);
        // Flows are apart, and a URL id never names a flow record.
        assert_eq!(store.claim_once("g", "o:a", ttl).await.unwrap(), OnceClaim::Run);
        assert!(!store.complete("f", json!(null), None).await.unwrap());
        assert_eq!(store.status("f").await.unwrap(), UrlStatus::Unknown);
    }

    #[tokio::test]
    async fn records_expire() {
        let store = InProcessStore::new();
        store.register("b", Duration::from_millis(1), None).await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(store.status("b").await.unwrap(), UrlStatus::Unknown);
        assert!(!store.complete("b", json!(null), None).await.unwrap());
    }
}
