//! The `Task` executor's state: how a running task's asks become its input requests, its progress
//! its status message, and `tasks/cancel` its flow's cancellation; and the background run that
//! records how it ended.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Value, json};

use super::TaskConfig;
use crate::server::answer::FlowError;
use crate::server::clock::Clock;
use crate::server::context::{AskingFlow, PeerFuture, Progress, RequestHandle};
use crate::server::request::EngineError;
use crate::server::store::{StoreFuture, StoredJson, TaskRecord, TaskRecords, millis, millis_of};
use crate::wire::tasks::TaskStatus;
use crate::wire::{InputRequest, clip};

/// The handler's future, run in the background once the call became a task.
pub(in crate::server) type TaskFuture = Pin<Box<dyn Future<Output = Result<StoredJson, FlowError>> + Send>>;

/// What the `Task` executor holds: nothing while the call is still a Multi Round-Trip round (asks
/// suspend it, as replayed), the task's link once the call became a task.
#[derive(Default)]
pub(in crate::server) struct TaskExec {
    link: Arc<OnceLock<Arc<TaskLink>>>,
}

impl TaskExec {
    /// The task, once the call became one.
    pub(in crate::server) fn link(&self) -> Option<&Arc<TaskLink>> {
        self.link.get()
    }

    pub(in crate::server) fn attach(&self, link: Arc<TaskLink>) {
        let _ = self.link.set(link);
    }

    /// The request handle a task's flow reports progress and sees cancellation through.
    pub(in crate::server) fn handle(&self) -> Arc<dyn RequestHandle> {
        Arc::new(TaskHandle(self.link.clone()))
    }
}

/// One running task, on the instance that runs its handler.
pub(in crate::server) struct TaskLink {
    pub(super) id: String,
    records: Arc<dyn TaskRecords>,
    clock: Arc<dyn Clock>,
    pub(in crate::server) config: TaskConfig,
    /// The record as this instance last wrote it; writes are serialised through it.
    record: tokio::sync::Mutex<TaskRecord>,
    /// Every input request key used so far: keys are unique for the task's life.
    keys: Mutex<HashSet<String>>,
    cancelled: AtomicBool,
}

impl TaskLink {
    pub(in crate::server) fn new(
        record: TaskRecord,
        records: Arc<dyn TaskRecords>,
        clock: Arc<dyn Clock>,
        config: TaskConfig,
    ) -> Self {
        TaskLink {
            id: record.id.clone(),
            records,
            clock,
            config,
            record: tokio::sync::Mutex::new(record),
            keys: Mutex::new(HashSet::new()),
            cancelled: AtomicBool::new(false),
        }
    }

    fn now(&self) -> u64 {
        millis(self.clock.now())
    }

    /// Changes the record and writes it; a record already terminal in the store (its lease
    /// passed and another instance marked it failed) is the end of this run.
    async fn update(&self, change: impl FnOnce(&mut TaskRecord)) -> Result<(), FlowError> {
        let mut record = self.record.lock().await;
        if record.status.is_terminal() {
            return Err(FlowError::Failed("this task has already ended".to_owned()));
        }
        change(&mut record);
        record.updated_ms = self.now();
        record.lease_until_ms = self.now().saturating_add(millis_of(self.config.lease));
        match self.records.save(&record).await {
            Ok(true) => Ok(()),
            Ok(false) => {
                record.status = TaskStatus::Failed;
                Err(FlowError::Failed("this task was ended meanwhile (its lease passed)".to_owned()))
            }
            Err(error) => Err(FlowError::Store(error)),
        }
    }

    /// Renews the lease.
    pub(super) async fn renew(&self) -> Result<(), FlowError> {
        self.update(|_| {}).await
    }

    /// A key for `key` never used before in this task.
    fn fresh_key(&self, key: &str) -> String {
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        if keys.insert(key.to_owned()) {
            return key.to_owned();
        }
        let mut n = 2u64;
        loop {
            let candidate = format!("{key}#{n}");
            if keys.insert(candidate.clone()) {
                return candidate;
            }
            n += 1;
        }
    }

    /// Whether `tasks/cancel` arrived (reads the store).
    async fn check_cancelled(&self) -> bool {
        if self.cancelled.load(Ordering::SeqCst) {
            return true;
        }
        let asked = matches!(self.records.cancel_requested(&self.id).await, Ok(true));
        if asked {
            self.cancelled.store(true, Ordering::SeqCst);
        }
        asked
    }

    /// Resolves once `tasks/cancel` arrived, on any instance.
    pub(super) async fn cancel_requested(&self) {
        loop {
            // Watched before the read: a cancel landing in between is not missed.
            let watch = self.records.watch(&self.id);
            if self.check_cancelled().await {
                return;
            }
            self.changed(watch, None).await;
        }
    }

    /// Waits for something to land for the task (an answer, the cancel request, a save), and for
    /// `deadline` at most. Where the store watches, `watch` (taken before the caller read what it
    /// waits on) is what lands; where it does not, the store's wait for one recheck, or up to
    /// `deadline` if that is sooner.
    async fn changed(&self, watch: Option<StoreFuture<'_, ()>>, deadline: Option<Pin<&mut tokio::time::Sleep>>) {
        match (watch, deadline) {
            (Some(changed), Some(deadline)) => {
                tokio::select! {
                    _ = changed => {}
                    () = deadline => {}
                }
            }
            (Some(changed), None) => {
                let _ = changed.await;
            }
            (None, deadline) => {
                let now = tokio::time::Instant::now();
                let recheck = now + self.config.recheck;
                let until = deadline.map_or(recheck, |deadline| deadline.deadline().min(recheck));
                let _ = self.records.wait(&self.id, until.saturating_duration_since(now)).await;
            }
        }
    }

    /// Makes `request` an input request of the task under a fresh key, and waits for its answer.
    pub(in crate::server) async fn ask(
        &self,
        flow: &dyn AskingFlow,
        key: &str,
        request: &InputRequest,
    ) -> Result<Value, FlowError> {
        let wire = self.fresh_key(key);
        let json = StoredJson::of(request)
            .map_err(|e| flow.fail(FlowError::Failed(format!("an input request cannot be encoded: {e}"))))?;
        self.update(|record| {
            record.input_requests.insert(wire.clone(), json);
            record.status = TaskStatus::InputRequired;
            record.status_message = Some(format!("waiting for input: {}", clip(key)));
        })
        .await
        .map_err(|e| flow.fail(e))?;
        // Unanswered asks would hold their task's place under the caps until its record expired.
        let deadline = tokio::time::Instant::now() + self.config.input_wait;
        // Where the store watches, the one timer of the whole wait (registered when first polled).
        let mut expiry = std::pin::pin!(tokio::time::sleep_until(deadline));
        loop {
            // Watched before the reads: an answer or a cancel landing in between is not missed.
            let watch = self.records.watch(&self.id);
            if self.check_cancelled().await {
                return Err(FlowError::Failed("the task was cancelled".to_owned()));
            }
            let answers = self.records.answers(&self.id).await.map_err(|e| flow.fail(FlowError::Store(e)))?;
            if let Some(answer) = answers.get(&wire) {
                let answer = answer.clone();
                self.update(|record| {
                    record.input_requests.remove(&wire);
                    if record.input_requests.is_empty() {
                        record.status = TaskStatus::Working;
                        record.status_message = None;
                    }
                })
                .await
                .map_err(|e| flow.fail(e))?;
                return Ok(answer);
            }
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return Err(flow.fail(FlowError::Failed(format!(
                    "no answer to `{}` came within {} s: the task gave up waiting",
                    clip(key),
                    self.config.input_wait.as_secs()
                ))));
            }
            self.changed(watch, Some(expiry.as_mut())).await;
        }
    }

    /// Records how the task ended (best effort: a store that fails leaves it to the lease).
    pub(super) async fn finish(&self, status: TaskStatus, outcome: Option<StoredJson>, message: Option<String>) {
        let ended = self
            .update(|record| {
                record.status = status;
                record.outcome = outcome;
                record.status_message = message;
                record.input_requests.clear();
            })
            .await;
        if let Err(error) = ended {
            tracing::warn!(target: "elicit_runtime", task = %self.id, %error, "could not record how a task ended");
        }
    }

    /// Sets the status message (progress).
    async fn progress(&self, message: String) -> Result<(), FlowError> {
        self.update(|record| {
            if record.status == TaskStatus::Working {
                record.status_message = Some(message);
            }
        })
        .await
    }
}

/// A task's flow's request handle: progress becomes the status message, `tasks/cancel` its
/// cancellation. Before the call became a task it reports nothing and is never cancelled.
struct TaskHandle(Arc<OnceLock<Arc<TaskLink>>>);

impl RequestHandle for TaskHandle {
    fn progress(&self, report: Progress) -> PeerFuture<'_, Result<(), FlowError>> {
        Box::pin(async move {
            match self.0.get() {
                Some(link) => link.progress(report.into_text()).await,
                None => Ok(()),
            }
        })
    }

    fn is_cancelled(&self) -> bool {
        self.0.get().is_some_and(|link| link.cancelled.load(Ordering::SeqCst))
    }

    fn cancelled(&self) -> PeerFuture<'_, ()> {
        Box::pin(async move {
            match self.0.get() {
                Some(link) => link.cancel_requested().await,
                None => std::future::pending().await,
            }
        })
    }
}

/// Runs a task's handler to its end in the background, renewing the lease, and records how it
/// ended: `completed` with the result, `failed` with the JSON-RPC error, `cancelled` when
/// `tasks/cancel` came first (the handler then has [`TaskConfig::cancel_grace`] to stop), `failed`
/// when it outlives its time-to-live.
/// `take_fatal` takes the error that failed the flow whatever the handler did with it, once the
/// handler is gone.
///
/// Beside the handler, one wait at a time, on one timer: for a wake-up from the store (an answer,
/// `tasks/cancel`, the handler's own writes), the recheck, the lease's renewal or the end of the
/// task's lifetime, whichever comes first. (A timer of its own for each would register three with
/// the runtime's timer wheel per task, for a task that usually ends long before any fires.) Where
/// the store watches ([`TaskRecords::watch`]) there is no recheck, and the timer lives as long as
/// the run, moved at each renewal: a fresh one on every wake-up would be registered anew each
/// time, and registering a timer earlier than any other wakes a parked worker thread. The
/// renewal and the cancel check run beside the handler, never instead of it: a handler holding
/// the record's lock across a write to a remote store must go on being polled to release it.
pub(in crate::server) async fn drive(
    link: Arc<TaskLink>,
    take_fatal: impl FnOnce() -> Option<FlowError>,
    mut handler: TaskFuture,
) {
    // Never 0: each renewal is followed by a wait, which yields to the runtime.
    let renew_every = (link.config.lease / 3).max(std::time::Duration::from_millis(1));
    let ttl = std::time::Duration::from_millis(link.record.lock().await.ttl_ms);
    let started = tokio::time::Instant::now();
    let expires = started + ttl;
    let mut renew_at = started + renew_every;
    // Where the store watches, the one timer of the run: the renewal or the end of the lifetime,
    // moved only when the lease is renewed (registered when first polled).
    let mut timer = std::pin::pin!(tokio::time::sleep_until(expires.min(renew_at)));
    let ended = loop {
        let now = tokio::time::Instant::now();
        if now >= expires {
            break Some(Err(FlowError::Failed("the task outlived its time-to-live".to_owned())));
        }
        let renew = now >= renew_at;
        // Watched before the cancel check reads the store: a cancel landing in between is seen.
        let watch = if renew { None } else { link.records.watch(&link.id) };
        let waiting = timer.as_mut();
        let beside = async {
            if link.check_cancelled().await {
                return true;
            }
            if renew {
                if let Err(error) = link.renew().await {
                    tracing::warn!(target: "elicit_runtime", task = %link.id, %error, "could not renew a task's lease");
                }
            } else {
                link.changed(watch, Some(waiting)).await;
            }
            false
        };
        tokio::select! {
            biased;
            finished = &mut handler => break Some(finished),
            cancelled = beside => {
                if cancelled {
                    break None;
                }
            }
        }
        if renew {
            renew_at = tokio::time::Instant::now() + renew_every;
            timer.as_mut().reset(expires.min(renew_at));
        }
    };
    let finished = match ended {
        // A handler that ended after `tasks/cancel` arrived (having seen it, or failing an ask
        // it cut short) ends the task cancelled.
        Some(_) if link.check_cancelled().await => None,
        Some(finished) => Some(finished),
        None => {
            // Cancelled: the handler sees `flow.cancelled()` resolve; an ask it waits on fails.
            let _ = tokio::time::timeout(link.config.cancel_grace, &mut handler).await;
            None
        }
    };
    let Some(finished) = finished else {
        drop(handler);
        link.finish(TaskStatus::Cancelled, None, Some("Cancelled by client".to_owned())).await;
        return;
    };
    drop(handler);
    match take_fatal().map_or(finished, Err) {
        Ok(result) => link.finish(TaskStatus::Completed, Some(result), None).await,
        Err(error) => {
            let error = EngineError::from(error);
            let message = error.message.clone();
            let mut json = json!({"code": error.code, "message": error.message});
            if let Some(data) = error.data {
                json["data"] = data;
            }
            link.finish(TaskStatus::Failed, Some(StoredJson::from_json(&json)), Some(message)).await;
        }
    }
}
