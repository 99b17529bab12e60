//! [`SqliteStore`]: URL-mode completions, the flow ledger and task records in one SQLite file,
//! so that what the server acknowledged survives the death of its process (feature `sqlite`).

mod db;
mod flow;
mod tasks;

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex, TryLockError};
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
use db::{Caps, Db, Delivery, Job, Pending};

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
        Ok(SqliteStore { jobs, db, pending, inline, waiters: Arc::default(), name })
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

    /// Runs `f` on this thread if the store allows it, no call waits for the connection and
    /// nobody holds it (then runs what was left pending meanwhile); else hands `f` back.
    fn here<T, F: FnOnce(&mut Db) -> Result<T, StoreError>>(&self, f: F) -> Result<Result<T, StoreError>, F> {
        if !self.inline || !self.pending.is_empty() {
            return Err(f);
        }
        let mut held = match self.db.try_lock() {
            Ok(held) => held,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return Err(f),
        };
        let answer = held.run_one(f);
        let due = held.checkpoint_to_ask();
        self.let_go(held, due);
        Ok(answer)
    }

    /// Queues `job`: with [`Synchronous::Normal`] for whoever holds the connection, which is
    /// this caller if nobody does; with [`Synchronous::Full`] for the store's thread.
    fn queue(&self, job: Job) -> Result<(), StoreError> {
        if !self.inline {
            return self.send(job);
        }
        self.pending.push(job);
        let held = match self.db.try_lock() {
            Ok(held) => held,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return Ok(()),
        };
        self.let_go(held, false);
        Ok(())
    }

    /// Runs what is pending, lets the connection go, and asks the store's thread for a
    /// checkpoint if one is due (it runs them: they sync the files).
    fn let_go(&self, held: std::sync::MutexGuard<'_, Db>, due: bool) {
        if db::run_pending(&self.db, held, &self.pending, due) {
            let _ = self.send(Box::new(|_: &mut Db| -> Delivery { Box::new(drop) }));
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
mod tests {
    use serde_json::json;

    use super::*;
    use crate::server::store::{RecordKind, mint_id};

    /// Schema 1, as the version before flow owners wrote it (copied from its `db.rs`).
    const SCHEMA_1: &str = "
CREATE TABLE IF NOT EXISTS urls (
  id TEXT PRIMARY KEY NOT NULL, owner TEXT, done INTEGER NOT NULL, outcome TEXT, expires INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS urls_expires ON urls (expires);
CREATE INDEX IF NOT EXISTS urls_owner ON urls (owner, expires);
CREATE TABLE IF NOT EXISTS flows (
  id TEXT PRIMARY KEY NOT NULL, slots TEXT NOT NULL, finished TEXT, expires INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS flows_expires ON flows (expires);
CREATE TABLE IF NOT EXISTS tasks (
  id TEXT PRIMARY KEY NOT NULL, doc TEXT NOT NULL, owner TEXT, running INTEGER NOT NULL,
  live_until INTEGER NOT NULL, updated INTEGER NOT NULL, expires INTEGER NOT NULL,
  answers TEXT NOT NULL, cancel INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tasks_expires ON tasks (expires);
CREATE INDEX IF NOT EXISTS tasks_live ON tasks (running, live_until);
CREATE INDEX IF NOT EXISTS tasks_live_owner ON tasks (owner, running, live_until);
CREATE INDEX IF NOT EXISTS tasks_changed ON tasks (running, updated);
";

    /// A fresh file in a folder of its own, removed when the test ends.
    struct Scratch(std::path::PathBuf);

    impl Scratch {
        fn new(what: &str) -> Scratch {
            let dir = std::env::temp_dir().join(format!("elicit-sqlite-{what}-{}", mint_id()));
            std::fs::create_dir_all(&dir).unwrap();
            Scratch(dir)
        }

        fn file(&self) -> std::path::PathBuf {
            self.0.join("store.db")
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            std::fs::remove_dir_all(&self.0).ok();
        }
    }

    /// A call made after a release sees the step released, whether the call runs on the caller's
    /// thread (`Normal`, nothing waiting), behind the release that waits for the connection, or on
    /// the store's thread (`Full`): a call never runs ahead of one made before it.
    #[tokio::test]
    async fn a_call_after_a_release_sees_it_released_on_either_thread() {
        for synchronous in [Synchronous::Normal, Synchronous::Full] {
            let scratch = Scratch::new("order");
            let store = SqliteStore::builder(scratch.file()).synchronous(synchronous).open().await.unwrap();
            let minute = Duration::from_secs(60);
            for round in 0..50 {
                let id = format!("step-{round}");
                store.register(&id, minute, None).await.unwrap();
                assert_eq!(store.status(&id).await.unwrap(), UrlStatus::Pending, "{synchronous:?}");
                store.release(&id);
                assert_eq!(store.status(&id).await.unwrap(), UrlStatus::Unknown, "{synchronous:?}, round {round}");
            }
        }
    }

    /// Calls made together from many tasks on several threads are all answered, each with what
    /// it committed: a call that finds the connection held waits for whoever holds it, and none
    /// is left waiting once the connection is let go (the holder looks again after letting go).
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn calls_made_together_are_all_run_by_whoever_holds_the_connection() {
        for synchronous in [Synchronous::Normal, Synchronous::Full] {
            let scratch = Scratch::new("together");
            let store = Arc::new(SqliteStore::builder(scratch.file()).synchronous(synchronous).open().await.unwrap());
            let minute = Duration::from_secs(60);
            let callers: Vec<_> = (0..16)
                .map(|caller| {
                    let store = Arc::clone(&store);
                    tokio::spawn(async move {
                        for n in 0..100 {
                            let id = format!("step-{caller}-{n}");
                            store.register(&id, minute, None).await.unwrap();
                            assert!(store.complete(&id, json!(n), None).await.unwrap());
                            store.release(&id);
                            // Released by the time it is looked at: the release went first.
                            assert_eq!(store.status(&id).await.unwrap(), UrlStatus::Unknown, "{id}");
                        }
                    })
                })
                .collect();
            // A call left waiting would hang its caller: the test's own limit fails it instead.
            let all = async {
                for caller in callers {
                    caller.await.unwrap();
                }
            };
            tokio::time::timeout(Duration::from_secs(120), all).await.expect("every call answered");
            assert_eq!(db::lock(&store.db).url_rows, 0, "{synchronous:?}");
        }
    }

    /// A call queued just as the holder lets the connection go (after its last look at the
    /// waiting calls, before it lets go: as a call from another thread may be) is run: the holder
    /// looks again once it has let go. Here the holder's own answer queues that call, which is
    /// the last moment before the holder looks again.
    #[tokio::test]
    async fn a_call_queued_as_the_connection_is_let_go_is_run() {
        let scratch = Scratch::new("let-go");
        let store = SqliteStore::open(scratch.file()).await.unwrap();
        let minute = Duration::from_secs(60);
        let (tx, rx) = oneshot::channel();
        let late: Job = Box::new(move |db: &mut Db| -> Delivery {
            let result = db.job(|db| db.register("late", minute, None));
            Box::new(move |committed: Result<(), StoreError>| {
                let _ = tx.send(committed.and(result));
            })
        });
        let pending = Arc::clone(&store.pending);
        let first: Job = Box::new(move |db: &mut Db| -> Delivery {
            let result = db.job(|db| db.register("first", minute, None));
            Box::new(move |committed: Result<(), StoreError>| {
                committed.and(result).unwrap();
                pending.push(late);
            })
        });
        store.queue(first).unwrap();
        // Left waiting, the late call would never be answered: the test's own limit fails it.
        let answered = tokio::time::timeout(Duration::from_secs(60), rx).await;
        answered.expect("the late call was run").unwrap().unwrap();
        assert_eq!(store.status("late").await.unwrap(), UrlStatus::Pending);
    }

    /// The log is checkpointed every few hundred commits, by the store's thread, on either
    /// setting: it is reused from its start rather than growing with every commit (SQLite's own
    /// checkpoints are off, so without these it would grow without end).
    #[tokio::test]
    async fn the_log_is_checkpointed_and_does_not_grow_with_every_commit() {
        for synchronous in [Synchronous::Normal, Synchronous::Full] {
            let scratch = Scratch::new("checkpoint");
            let store = SqliteStore::builder(scratch.file()).synchronous(synchronous).open().await.unwrap();
            let log = scratch.0.join("store.db-wal");
            let log_size = || std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0);
            let commits = |from: usize, to: usize| {
                let store = &store;
                async move {
                    for n in from..to {
                        store.register(&format!("step-{n}"), Duration::from_secs(60), None).await.unwrap();
                    }
                }
            };
            commits(0, db::CHECKPOINT_EVERY).await;
            let one_stretch = log_size();
            assert!(one_stretch > 0, "{synchronous:?}: the commits went to the log");
            commits(db::CHECKPOINT_EVERY, 8 * db::CHECKPOINT_EVERY).await;
            let after = log_size();
            assert!(after < 3 * one_stretch, "{synchronous:?}: the log grew from {one_stretch} to {after} bytes");
        }
    }

    /// The sweep that starts every transaction finds expired records through the expiry
    /// indexes and deletes them, and its statements are prepared once: binding the time and the
    /// budget anew for each transaction does not make SQLite prepare them again (it did, a
    /// third of the store's time under load). Steps, flows and tasks alike, with records due.
    #[tokio::test]
    async fn the_sweep_deletes_what_expired_and_its_statements_stay_prepared() {
        let scratch = Scratch::new("sweep");
        let clock = crate::server::clock::ManualClock::new();
        let store = SqliteStore::builder(scratch.file()).clock(Arc::new(clock.clone())).open().await.unwrap();
        let (second, alice) = (Duration::from_secs(1), FlowOwner::Principal("alice".into()));
        for round in 0..40 {
            store.register(&format!("step-{round}"), second, None).await.unwrap();
            let x = Slot::Once("x".into());
            let flow = format!("flow-{round}");
            assert_eq!(store.claim(&flow, &alice, &x, &ClaimToken::mint(), second, second).await.unwrap(), Claim::Run);
            clock.advance(Duration::from_millis(600));
        }
        clock.advance(Duration::from_secs(5));
        // Each commit sweeps a few: the rest go over the next commits.
        for round in 0..10 {
            store.register(&format!("late-{round}"), Duration::from_secs(60), None).await.unwrap();
        }
        let db = db::lock(&store.db);
        let count = |table: &str| -> i64 {
            db.conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |row| row.get(0)).unwrap()
        };
        assert_eq!((count("urls"), count("flows")), (10, 0), "every expired step and flow is swept");
        assert_eq!((db.url_rows, db.flow_rows), (10, 0), "and uncounted");
        for expiry in [db::URLS_EXPIRY, db::FLOWS_EXPIRY, db::TASKS_EXPIRY] {
            let statement = db.conn.prepare_cached(expiry.select).unwrap();
            let again = statement.get_status(rusqlite::StatementStatus::RePrepare);
            assert_eq!(again, 0, "{} was prepared again {again} times", expiry.select);
        }
    }

    /// A file of schema 1 opens: its flows read as they were, owned by no one (they count against
    /// no owner's quota), and new flows have owners.
    #[tokio::test]
    async fn a_file_of_the_schema_without_flow_owners_opens_with_its_flows_owned_by_no_one() {
        let scratch = Scratch::new("schema-1");
        let file = scratch.file();
        {
            let conn = rusqlite::Connection::open(&file).unwrap();
            conn.execute_batch(SCHEMA_1).unwrap();
            let expires = db::ms(std::time::SystemTime::now()) + 3_600_000;
            conn.execute(
                r#"INSERT INTO flows (id, slots, finished, expires) VALUES ('old', '{"o:x":{"v":7}}', NULL, ?1)"#,
                [expires],
            )
            .unwrap();
            conn.pragma_update(None, "user_version", 1).unwrap();
        }
        let store = SqliteStore::builder(&file).max_flow_records_per_principal(1).open().await.unwrap();
        let (alice, token, long) = (FlowOwner::Principal("alice".into()), ClaimToken::mint(), Duration::from_secs(60));
        let x = Slot::Once("x".into());
        assert_eq!(store.claim("old", &alice, &x, &token, long, long).await.unwrap(), Claim::Done(json!(7)));
        // The old flow is no one's: alice's quota of one is still free, then full.
        assert_eq!(store.claim("new", &alice, &x, &token, long, long).await.unwrap(), Claim::Run);
        assert_eq!(
            store.claim("newer", &alice, &x, &token, long, long).await,
            Err(StoreError::Quota { kind: RecordKind::Flow, cap: 1 })
        );
        drop(store);
    }
}
