//! [`SqliteStore`]: URL-mode completions, the flow ledger and task records in one SQLite file,
//! so that what the server acknowledged survives the death of its process (feature `sqlite`).

mod db;
mod flow;
mod pending;
mod tasks;

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, value::RawValue};
use tokio::sync::{Notify, oneshot};

use super::memory::{
    DEFAULT_MAX_FLOW_RECORDS_PER_PRINCIPAL, DEFAULT_MAX_RECORDS, DEFAULT_MAX_TASK_RECORDS,
    DEFAULT_MAX_URL_RECORDS_PER_PRINCIPAL,
};
use super::{
    Claim, ClaimToken, Finish, FlowLedger, FlowOwner, LedgerSnapshot, Slot, StoreError, StoreFuture, UrlCompletions,
    UrlStatus,
};
use crate::server::clock::{Clock, SystemClock};
use db::{Caps, Db, Delivery, Job};
use pending::Pending;

/// When a commit reaches the disk: what a power loss may take (see [`SqliteStore`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Synchronous {
    /// Survives a process crash; a power loss may lose the last commits. The default.
    #[default]
    Normal,
    /// Survives a power loss too: every commit is synced before it is acknowledged.
    Full,
}

impl Synchronous {
    fn pragma(self) -> &'static str {
        match self {
            Synchronous::Normal => "NORMAL",
            Synchronous::Full => "FULL",
        }
    }
}

/// Builds a [`SqliteStore`]: [`SqliteStore::builder`].
#[derive(Debug, Clone)]
pub struct SqliteStoreBuilder {
    path: PathBuf,
    synchronous: Synchronous,
    caps: Caps,
    clock: Arc<dyn Clock>,
}

impl SqliteStoreBuilder {
    /// When a commit reaches the disk (default [`Synchronous::Normal`]).
    pub fn synchronous(mut self, synchronous: Synchronous) -> Self {
        self.synchronous = synchronous;
        self
    }

    /// Caps the live records of each kind at `max` (URL-mode steps and flows).
    pub fn max_records(self, max: usize) -> Self {
        self.max_url_records(max).max_flow_records(max)
    }

    /// The most URL-mode steps (default [`DEFAULT_MAX_RECORDS`]); one more is refused with
    /// [`StoreError::Full`] until some are taken, released or expire.
    pub fn max_url_records(mut self, max: usize) -> Self {
        self.caps.url = max;
        self
    }

    /// The most flow records (default [`DEFAULT_MAX_RECORDS`]); a flow's first record beyond it
    /// is refused with [`StoreError::Full`].
    pub fn max_flow_records(mut self, max: usize) -> Self {
        self.caps.flow = max;
        self
    }

    /// The most live URL-mode steps one principal owns (default
    /// [`DEFAULT_MAX_URL_RECORDS_PER_PRINCIPAL`]); one more is refused with [`StoreError::Quota`].
    pub fn max_url_records_per_principal(mut self, max: usize) -> Self {
        self.caps.per_principal = max;
        self
    }

    /// The most live flow records one [`FlowOwner`] holds (default
    /// [`DEFAULT_MAX_FLOW_RECORDS_PER_PRINCIPAL`]), so one principal or client cannot fill
    /// [`max_flow_records`](Self::max_flow_records) for everyone: a flow's first record beyond it
    /// is refused with [`StoreError::Quota`] of
    /// [`RecordKind::Flow`](crate::server::store::RecordKind::Flow). A record counts, finished or
    /// not, until it expires (or an abandoned claim leaves it empty). Flows a file of an earlier
    /// version holds belong to no one.
    pub fn max_flow_records_per_principal(mut self, max: usize) -> Self {
        self.caps.flows_per_owner = max;
        self
    }

    /// The most task records, live or ended (default [`DEFAULT_MAX_TASK_RECORDS`]); past it the
    /// ended task changed longest ago makes room, and a live task is never dropped.
    pub fn max_task_records(mut self, max: usize) -> Self {
        self.caps.tasks = max.max(1);
        self
    }

    /// Reads the time from `clock` (default: the system's), for tests of expiry.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Opens (creating it if need be) the file, on the store's own thread.
    ///
    /// Fails with [`StoreError::Unavailable`] when the file cannot be opened or is open in another
    /// process, and [`StoreError::Invalid`] when a later version wrote it.
    pub async fn open(self) -> Result<SqliteStore, StoreError> {
        let name = format!("sqlite at {}", self.path.display());
        let (jobs, queue) = channel::<Job>();
        let (opened_tx, opened) = oneshot::channel();
        let SqliteStoreBuilder { path, synchronous, caps, clock } = self;
        let pending = Arc::new(Pending::default());
        let served = Arc::clone(&pending);
        let thread = std::thread::Builder::new().name("elicit-sqlite".to_owned()).spawn(move || {
            match Db::open(&path, synchronous, caps, clock) {
                Ok(db) => {
                    let db = Arc::new(Mutex::new(db));
                    let _ = opened_tx.send(Ok(Arc::clone(&db)));
                    Db::serve(&db, queue, &served);
                }
                Err(error) => {
                    let _ = opened_tx.send(Err(error));
                }
            }
        });
        let stopped = |detail: &str| StoreError::Unavailable { store: name.clone(), detail: detail.to_owned() };
        thread.map_err(|e| stopped(&format!("cannot start the store's thread: {e}")))?;
        let db = opened.await.map_err(|_| stopped("the store's thread stopped while opening the file"))??;
        // A commit that waits for the disk (`Full`) never runs on a caller's thread.
        let inline = synchronous == Synchronous::Normal;
        let checkpoint_asked = db::lock(&db).checkpoint_asked();
        Ok(SqliteStore { jobs, db, pending, inline, checkpoint_asked, waiters: Arc::default(), name })
    }
}

/// Both store traits and [`TaskRecords`](crate::server::store::TaskRecords) in one SQLite file: the
/// durable store of a single instance.
///
/// # What survives what
///
/// Every write is committed before its caller is answered. The file is in WAL mode, and
/// [`Synchronous`] says when the log reaches the disk:
///
/// - [`Synchronous::Normal`] (the default): a commit is written to the log, which the OS holds.
///   A **process crash** (SIGKILL, an OOM kill, a panic, a deploy) loses nothing acknowledged.
///   A **power loss or OS crash** may lose the last commits (never the file's consistency):
///   the log is synced to the disk at checkpoints only.
/// - [`Synchronous::Full`]: every commit is synced to the disk before it is acknowledged; a
///   power loss loses nothing acknowledged either. Each commit waits for the disk (queued
///   writes share one commit, so the cost is per batch, not per write).
///
/// The loss of the host's disk loses the file: only a replicated store (Redis with replicas)
/// survives that.
///
/// # One process per file
///
/// The file is opened with an exclusive lock, held for as long as the store is open; the OS
/// drops it when the process exits or dies, so a restarted server opens the file at once. A second
/// process (or a second store in this one) opening the same file gets a clear
/// [`StoreError::Unavailable`] saying the file is in use, never a shared, corrupted file. Several
/// instances behind a load balancer share a `RedisStore` instead.
///
/// A task's handler dies with its process: as it opens the file, the store ends the lease of every
/// task still running there (one process at a time opens it, so the one that ran them is gone),
/// and they read `failed` at once rather than `working` until their lease would have passed.
///
/// # On the caller's thread, or the store's
///
/// With [`Synchronous::Normal`], a call that finds the connection free (and no call waiting for
/// it) runs on the caller's thread, in a transaction of its own: a few statements and a write to
/// the log, which the OS holds (no sync). A call that finds the connection held waits, and
/// whoever holds the connection runs the calls waiting before letting it go: those waiting
/// together run in one transaction, committed once (group commit), each in a savepoint of its
/// own, and no thread is woken to run them. A call never runs ahead of one made before it and
/// still waiting, so one caller's calls take effect in the order made. The store's own thread
/// runs the checkpoints (every few hundred commits), which sync the files; with
/// [`Synchronous::Full`] every commit syncs, and every call goes to that thread instead (no
/// caller's thread blocks on the disk). A retry waiting in [`UrlCompletions::take`] or a task
/// waiting in [`TaskRecords::wait`](crate::server::store::TaskRecords::wait) is woken in this
/// process as soon as the completion or the answer is committed.
///
/// # Bounded
///
/// The same caps as the other stores (URL-mode steps, flows, steps per principal, flows per
/// owner, task records); expiry through an index of deadlines, a few expired records swept per
/// transaction, never a scan. A file an earlier version wrote is brought to this version's
/// schema when it opens (schema 2 gave flows an owner); a file of a later version is refused.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// use elicit_runtime::server::store::{SqliteStore, UrlCompletions, UrlStatus};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let dir = std::env::temp_dir().join(format!("elicit-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let store = Arc::new(SqliteStore::open(dir.join("travel.db")).await?);
/// store.register("pay-7", Duration::from_secs(60), None).await?;
/// let page = Arc::clone(&store);
/// let completed = tokio::spawn(async move { page.complete("pay-7", "approved".into(), None).await });
/// // The retry waits (at most a minute here) and wakes as soon as the completion is committed.
/// let status = store.take("pay-7", Duration::from_secs(60)).await?;
/// assert_eq!(status, UrlStatus::Completed("approved".into()));
/// assert!(completed.await.unwrap()?);
/// # drop(store);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), elicit_runtime::server::store::StoreError>(())
/// # }).unwrap();
/// ```
pub struct SqliteStore {
    /// The store's thread's queue.
    jobs: Sender<Job>,
    /// The connection, shared with the store's thread.
    db: Arc<Mutex<Db>>,
    /// Calls waiting for whoever holds the connection ([`Synchronous::Normal`]).
    pending: Arc<Pending>,
    /// Whether calls may run on their callers' threads ([`Synchronous::Normal`]).
    inline: bool,
    /// Set while the store's thread is asked for a checkpoint: calls go to the thread meanwhile,
    /// so that callers holding the connection one after another do not keep it from the thread.
    checkpoint_asked: Arc<AtomicBool>,
    waiters: Arc<Waiters>,
    name: String,
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore").field("store", &self.name).finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// A builder for the file at `path`, with the default caps and [`Synchronous::Normal`].
    pub fn builder(path: impl Into<PathBuf>) -> SqliteStoreBuilder {
        SqliteStoreBuilder {
            path: path.into(),
            synchronous: Synchronous::default(),
            caps: Caps {
                url: DEFAULT_MAX_RECORDS,
                flow: DEFAULT_MAX_RECORDS,
                per_principal: DEFAULT_MAX_URL_RECORDS_PER_PRINCIPAL,
                flows_per_owner: DEFAULT_MAX_FLOW_RECORDS_PER_PRINCIPAL,
                tasks: DEFAULT_MAX_TASK_RECORDS,
            },
            clock: Arc::new(SystemClock),
        }
    }

    /// Opens the file at `path` with the defaults: `SqliteStore::builder(path).open()`.
    pub async fn open(path: impl Into<PathBuf>) -> Result<SqliteStore, StoreError> {
        SqliteStore::builder(path).open().await
    }

    /// Runs `f` in a transaction and answers once it is committed. With [`Synchronous::Normal`],
    /// on the caller's thread in a transaction of its own when the connection is free and no call
    /// waits for it; else it waits with the others for whoever holds the connection, who runs
    /// them together. With [`Synchronous::Full`], on the store's thread.
    async fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Db) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let f = match self.here(f) {
            Ok(answer) => return answer,
            Err(f) => f,
        };
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move |db: &mut Db| -> Delivery {
            let result = db.job(f);
            Box::new(move |committed: Result<(), StoreError>| {
                let _ = tx.send(committed.and(result));
            })
        });
        self.queue(job)?;
        rx.await.map_err(|_| self.stopped())?
    }

    /// Runs `f` on this thread if the store allows it, no call waits for the connection, no
    /// checkpoint waits for the store's thread and nobody holds it (then runs what was left
    /// pending meanwhile); else hands `f` back.
    fn here<T, F: FnOnce(&mut Db) -> Result<T, StoreError>>(&self, f: F) -> Result<Result<T, StoreError>, F> {
        if !self.inline || !self.pending.is_empty() || self.checkpoint_asked.load(Ordering::Relaxed) {
            return Err(f);
        }
        let Some(mut held) = db::try_lock(&self.db) else { return Err(f) };
        let _handover = Handover(self);
        let answer = held.run_one(f);
        let due = held.checkpoint_to_ask();
        self.let_go(held, due);
        Ok(answer)
    }

    /// Queues `job`: with [`Synchronous::Normal`] for whoever holds the connection, which is
    /// this caller if nobody does; with [`Synchronous::Full`], or while a checkpoint waits for
    /// the store's thread, for that thread.
    fn queue(&self, job: Job) -> Result<(), StoreError> {
        if !self.inline || self.checkpoint_asked.load(Ordering::Relaxed) {
            return self.send(job);
        }
        self.pending.push(job);
        let Some(held) = db::try_lock(&self.db) else { return Ok(()) };
        let _handover = Handover(self);
        self.let_go(held, false);
        Ok(())
    }

    /// Runs what is pending, lets the connection go, and asks the store's thread for a
    /// checkpoint if one is due (it runs them: they sync the files).
    fn let_go(&self, held: std::sync::MutexGuard<'_, Db>, due: bool) {
        if pending::run_pending(&self.db, held, &self.pending, due) {
            let _ = self.send(wake());
        }
    }

    /// Sends `job` to the store's thread.
    fn send(&self, job: Job) -> Result<(), StoreError> {
        self.jobs.send(job).map_err(|_| self.stopped())
    }

    fn stopped(&self) -> StoreError {
        StoreError::Unavailable { store: self.name.clone(), detail: "the store's thread has stopped".to_owned() }
    }
}

/// A job that does nothing: it wakes the store's thread, which then runs what waits (and
/// checkpoints, if due).
fn wake() -> Job {
    Box::new(|_: &mut Db| -> Delivery { Box::new(drop) })
}

/// Held by a caller's thread while it holds the connection and answers what it ran: if that
/// thread unwinds (a job or an answer that panicked), the calls still waiting would wait for a
/// next call to run them, which may never come; the store's thread, woken, runs them instead.
struct Handover<'a>(&'a SqliteStore);

impl Drop for Handover<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let _ = self.0.send(wake());
        }
    }
}

/// The local waiters of URL-mode steps (`u:ID`) and tasks (`t:ID`), woken once a change to theirs
/// is committed.
#[derive(Default)]
struct Waiters(Mutex<HashMap<String, Arc<Notify>>>);

/// One waiter's interest; the entry goes with its last waiter.
struct Watch {
    waiters: Arc<Waiters>,
    key: String,
    notify: Arc<Notify>,
}

impl Waiters {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Notify>>> {
        // Only plain map updates happen under the lock: a poisoned one still guards a whole map.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn watch(self: &Arc<Self>, key: &str) -> Watch {
        let notify = self.map().entry(key.to_owned()).or_default().clone();
        Watch { waiters: Arc::clone(self), key: key.to_owned(), notify }
    }

    fn wake(&self, key: &str) {
        if let Some(notify) = self.map().get(key) {
            notify.notify_waiters();
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let mut map = self.waiters.map();
        // The map's reference and this one: no other waiter.
        if Arc::strong_count(&self.notify) == 2 {
            map.remove(&self.key);
        }
    }
}

impl UrlCompletions for SqliteStore {
    fn register(&self, id: &str, ttl: Duration, owner: Option<&str>) -> StoreFuture<'_, ()> {
        let (id, owner) = (id.to_owned(), owner.map(str::to_owned));
        Box::pin(self.call(move |db| db.register(&id, ttl, owner.as_deref())))
    }

    fn complete(&self, id: &str, outcome: Value, by: Option<&str>) -> StoreFuture<'_, bool> {
        let (id, by) = (id.to_owned(), by.map(str::to_owned));
        Box::pin(async move {
            let key = format!("u:{id}");
            let completed = self.call(move |db| db.complete(&id, &outcome, by.as_deref())).await?;
            if completed {
                self.waiters.wake(&key);
            }
            Ok(completed)
        })
    }

    fn status(&self, id: &str) -> StoreFuture<'_, UrlStatus> {
        let id = id.to_owned();
        Box::pin(self.call(move |db| db.status(&id)))
    }

    fn take(&self, id: &str, timeout: Duration) -> StoreFuture<'_, UrlStatus> {
        let id = id.to_owned();
        Box::pin(async move {
            let deadline = tokio::time::Instant::now() + timeout;
            let watch = self.waiters.watch(&format!("u:{id}"));
            loop {
                let notified = watch.notify.notified();
                tokio::pin!(notified);
                // Interest registered before the look, so a completion in between is not missed.
                notified.as_mut().enable();
                let look = id.clone();
                let status = self.call(move |db| db.consume(&look)).await?;
                if status != UrlStatus::Pending {
                    return Ok(status);
                }
                if tokio::time::timeout_at(deadline, notified).await.is_err() {
                    let look = id.clone();
                    return self.call(move |db| db.consume(&look)).await;
                }
            }
        })
    }

    fn release(&self, id: &str) {
        let id = id.to_owned();
        let job: Job = Box::new(move |db: &mut Db| -> Delivery {
            if let Err(error) = db.job(|db| db.release(&id)) {
                tracing::warn!("releasing a URL-mode step: {error}");
            }
            Box::new(drop)
        });
        // Best effort: a store that stopped leaves the step to expire.
        let _ = self.queue(job);
    }
}

impl FlowLedger for SqliteStore {
    fn claim(
        &self,
        flow: &str,
        owner: &FlowOwner,
        at: &Slot,
        by: &ClaimToken,
        lease: Duration,
        ttl: Duration,
    ) -> StoreFuture<'_, Claim> {
        let (flow, name, token, owner) = (flow.to_owned(), at.name(), by.as_str().to_owned(), owner.clone());
        Box::pin(self.call(move |db| db.claim(&flow, &owner, &name, &token, lease, ttl)))
    }

    fn record(&self, flow: &str, slot: &Slot, token: &ClaimToken, value: Value, ttl: Duration) -> StoreFuture<'_, ()> {
        let (flow, name, token) = (flow.to_owned(), slot.name(), token.as_str().to_owned());
        Box::pin(self.call(move |db| db.record(&flow, &name, &token, value, ttl)))
    }

    fn abandon(&self, flow: &str, slot: &Slot, token: &ClaimToken) -> StoreFuture<'_, ()> {
        let (flow, name, token) = (flow.to_owned(), slot.name(), token.as_str().to_owned());
        Box::pin(self.call(move |db| db.abandon(&flow, &name, &token)))
    }

    fn finish(
        &self,
        flow: &str,
        owner: &FlowOwner,
        answers: &RawValue,
        seen: &[Slot],
        ttl: Duration,
    ) -> StoreFuture<'_, Finish> {
        let (flow, answers, owner) = (flow.to_owned(), answers.get().to_owned(), owner.clone());
        let seen: Vec<String> = seen.iter().map(Slot::name).collect();
        Box::pin(self.call(move |db| db.finish(&flow, &owner, &answers, &seen, ttl)))
    }

    fn finished(&self, flow: &str) -> StoreFuture<'_, Option<Value>> {
        let flow = flow.to_owned();
        Box::pin(self.call(move |db| db.finished(&flow)))
    }

    fn snapshot(&self, flow: &str, ttl: Duration) -> StoreFuture<'_, LedgerSnapshot> {
        let flow = flow.to_owned();
        Box::pin(self.call(move |db| db.snapshot(&flow, ttl)))
    }

    fn extend(&self, flow: &str, ttl: Duration) -> StoreFuture<'_, ()> {
        let flow = flow.to_owned();
        Box::pin(self.call(move |db| db.extend(&flow, ttl)))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
mod tests;
