//! The store's one connection: opening the file, the schema, a call's transaction on the
//! caller's thread, the batches of jobs its thread commits together, checkpoints, expiry, and the
//! URL-mode steps.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::config::DbConfig;
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, params};
use serde_json::Value;

use super::Synchronous;
use super::pending::{Pending, run_pending};
use crate::server::clock::Clock;
use crate::server::store::{RecordKind, StoreError, UrlStatus};

/// How many expired records of each kind a batch sweeps at most: expiry costs each batch a few
/// index steps, never a scan.
pub(super) const SWEEP_BUDGET: i64 = 32;

/// How many expired ids a sweep of every expired record (a cap reached) reads at a time.
const SWEEP_CHUNK: i64 = 1024;

/// How [`Db::delete_expired`] finds a table's expired rows (earliest first, through its index on
/// `expires`) and deletes one.
#[derive(Clone, Copy)]
pub(super) struct Expiry {
    pub(super) select: &'static str,
    delete: &'static str,
}

pub(super) const URLS_EXPIRY: Expiry = Expiry {
    select: "SELECT id FROM urls WHERE expires <= ?1 ORDER BY expires LIMIT ?2",
    delete: "DELETE FROM urls WHERE id = ?1",
};

pub(super) const FLOWS_EXPIRY: Expiry = Expiry {
    select: "SELECT id, owner FROM flows WHERE expires <= ?1 ORDER BY expires LIMIT ?2",
    delete: "DELETE FROM flows WHERE id = ?1",
};

pub(super) const TASKS_EXPIRY: Expiry = Expiry {
    select: "SELECT id FROM tasks WHERE expires <= ?1 ORDER BY expires LIMIT ?2",
    delete: "DELETE FROM tasks WHERE id = ?1",
};

/// How many prepared statements the connection keeps: more than the store has, so none is
/// parsed again.
const STATEMENTS: usize = 64;

/// How many queued jobs one transaction takes at most.
pub(super) const MAX_BATCH: usize = 256;

/// How many commits the log takes between two checkpoints, which the store's thread runs (about
/// SQLite's own default of 1,000 pages: a commit writes a few pages to the log).
pub(super) const CHECKPOINT_EVERY: usize = 256;

/// The schema's version, kept in `PRAGMA user_version`. 2: flows have an owner (see
/// [`Db::migrate`]).
const SCHEMA_VERSION: i64 = 2;

/// Every table is keyed by its id and indexed by expiry (ms since the Unix epoch): a sweep reads
/// the earliest deadlines first and stops at the first live one. Flows have no index by owner
/// (files written before had one, dropped here): the owners' counts are kept in memory and
/// counted from the table only when the file is opened or a transaction rolled back, and every
/// index is one more page a flow's commit writes to the log.
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS urls (
  id TEXT PRIMARY KEY NOT NULL, owner TEXT, done INTEGER NOT NULL, outcome TEXT, expires INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS urls_expires ON urls (expires);
CREATE INDEX IF NOT EXISTS urls_owner ON urls (owner, expires);
CREATE TABLE IF NOT EXISTS flows (
  id TEXT PRIMARY KEY NOT NULL, slots TEXT NOT NULL, finished TEXT, expires INTEGER NOT NULL, owner TEXT
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS flows_expires ON flows (expires);
DROP INDEX IF EXISTS flows_owner;
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

/// The caps, as configured.
#[derive(Debug, Clone, Copy)]
pub(super) struct Caps {
    pub(super) url: usize,
    pub(super) flow: usize,
    pub(super) per_principal: usize,
    pub(super) flows_per_owner: usize,
    pub(super) tasks: usize,
}

/// What a job hands back, to be called once its transaction committed (or failed to).
pub(super) type Delivery = Box<dyn FnOnce(Result<(), StoreError>) + Send>;

/// A unit of work on the connection; it runs inside the batch's transaction.
pub(super) type Job = Box<dyn FnOnce(&mut Db) -> Delivery + Send>;

/// The connection and what the store knows of it: the rows of each kind (kept as they change,
/// so a cap is checked without counting), the caps and the clock.
pub(super) struct Db {
    pub(super) conn: Connection,
    pub(super) caps: Caps,
    clock: Arc<dyn Clock>,
    /// `sqlite at PATH`, for errors.
    pub(super) name: String,
    pub(super) url_rows: usize,
    pub(super) flow_rows: usize,
    /// The flows' rows by owner ([`FlowOwner::name`](crate::server::store::FlowOwner::name)),
    /// expired ones not swept yet included: a quota is checked without counting either.
    pub(super) flow_owners: HashMap<String, usize>,
    pub(super) task_rows: usize,
    /// Commits since the last checkpoint.
    commits: usize,
    /// Whether the store's thread was asked for a checkpoint it has not run yet: read without
    /// the connection by callers, who leave the connection to the store's thread meanwhile.
    checkpoint_asked: Arc<AtomicBool>,
}

/// Milliseconds since the Unix epoch (0 before it; saturating far after it).
pub(super) fn ms(time: SystemTime) -> i64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A duration in milliseconds, saturating.
pub(super) fn ms_of(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// The connection, waiting for whoever holds it. A job that panicked holding it poisons the lock;
/// the connection is still whole (its open transaction is undone by the next `begin`).
pub(super) fn lock(db: &Mutex<Db>) -> MutexGuard<'_, Db> {
    db.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The connection if nobody holds it (poisoned or not, as [`lock`]); `None` while someone does.
pub(super) fn try_lock(db: &Mutex<Db>) -> Option<MutexGuard<'_, Db>> {
    match db.try_lock() {
        Ok(held) => Some(held),
        Err(std::sync::TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => None,
    }
}

impl Db {
    /// Opens (creating if need be) the file at `path` for this process alone: WAL, exclusive
    /// locking, `synchronous` as asked, the schema in place and the rows counted.
    pub(super) fn open(
        path: &Path,
        synchronous: Synchronous,
        caps: Caps,
        clock: Arc<dyn Clock>,
    ) -> Result<Db, StoreError> {
        let name = format!("sqlite at {}", path.display());
        let failed = |e: rusqlite::Error| opening_error(&name, path, e);
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(failed)?;
        // A file held by another process is an error at once, never a wait.
        conn.busy_timeout(Duration::ZERO).map_err(failed)?;
        // Every statement the store runs stays prepared (some forty; rusqlite keeps 16 unless told).
        conn.set_prepared_statement_cache_capacity(STATEMENTS);
        // And stays as prepared: without the planner's stability guarantee, SQLite prepares a
        // statement again after a new value is bound to a parameter its plan may depend on (a
        // `LIMIT ?`, a range on an index; this build has STAT4), which the sweep at the start of
        // every transaction did each time. The store's plans depend on no value.
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true).map_err(failed)?;
        // Exclusive before WAL: the lock taken by the first write is kept until the connection
        // closes (the process exits or dies: the OS drops it), and the WAL index lives in this
        // process's memory rather than a shared file.
        conn.pragma_update(None, "locking_mode", "EXCLUSIVE").map_err(failed)?;
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0)).map_err(failed)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Unavailable {
                store: name,
                detail: format!("cannot use WAL (journal mode {mode})"),
            });
        }
        conn.pragma_update(None, "synchronous", synchronous.pragma()).map_err(failed)?;
        // A checkpoint syncs the files: the store's thread runs them (`CHECKPOINT_EVERY`), never a
        // commit on a caller's thread, which SQLite's automatic checkpoints would.
        conn.pragma_update(None, "wal_autocheckpoint", 0).map_err(failed)?;
        conn.execute_batch("BEGIN IMMEDIATE").map_err(failed)?;
        let version: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0)).map_err(failed)?;
        if version > SCHEMA_VERSION {
            let _ = conn.execute_batch("ROLLBACK");
            return Err(StoreError::Invalid {
                detail: format!(
                    "{name}: written by a later version (schema {version}, this one reads {SCHEMA_VERSION})"
                ),
            });
        }
        migrate(&conn).map_err(failed)?;
        conn.execute_batch(SCHEMA).map_err(failed)?;
        conn.pragma_update(None, "user_version", SCHEMA_VERSION).map_err(failed)?;
        let flow_owners = HashMap::new();
        let mut db = Db {
            conn,
            caps,
            clock,
            name,
            url_rows: 0,
            flow_rows: 0,
            flow_owners,
            task_rows: 0,
            commits: 0,
            checkpoint_asked: Arc::default(),
        };
        db.end_orphaned_tasks()?;
        db.conn.execute_batch("COMMIT").map_err(|e| db.unavailable(e))?;
        db.recount()?;
        Ok(db)
    }

    /// Runs batches of the jobs sent to the store's thread until every sender is gone, each
    /// batch in one transaction under the connection's lock, then the calls left `pending` by
    /// callers who found the connection held. A checkpoint runs once `CHECKPOINT_EVERY` commits
    /// have gone by. The connection closes (and the file's lock is released) once the store is
    /// dropped and this returns.
    pub(super) fn serve(db: &Mutex<Db>, jobs: Receiver<Job>, pending: &Pending) {
        while let Ok(first) = jobs.recv() {
            let mut batch = vec![first];
            while batch.len() < MAX_BATCH {
                match jobs.try_recv() {
                    Ok(job) => batch.push(job),
                    Err(_) => break,
                }
            }
            let mut held = lock(db);
            let (deliveries, committed) = held.run_batch(batch);
            let mut due = held.commits >= CHECKPOINT_EVERY;
            for deliver in deliveries {
                deliver(committed.clone());
            }
            loop {
                if due {
                    held.checkpoint();
                }
                due = run_pending(db, held, pending, false);
                if !due {
                    break;
                }
                held = lock(db);
            }
        }
    }

    /// Runs `batch` in one transaction (after a few expired records are swept), each job in a
    /// savepoint of its own; what each hands back, and whether the transaction committed.
    pub(super) fn run_batch(&mut self, batch: Vec<Job>) -> (Vec<Delivery>, Result<(), StoreError>) {
        let begun = self.begin();
        let deliveries: Vec<Delivery> = match begun {
            Ok(()) => batch.into_iter().map(|job| job(self)).collect(),
            Err(_) => Vec::new(),
        };
        let committed = begun.and_then(|()| self.commit());
        (deliveries, committed)
    }

    /// Runs `f` alone in a transaction of its own (after a few expired records are swept), on
    /// the calling thread: its answer once committed. Its writes are undone if it fails on the
    /// database, as a job's are.
    pub(super) fn run_one<T>(&mut self, f: impl FnOnce(&mut Db) -> Result<T, StoreError>) -> Result<T, StoreError> {
        self.begin()?;
        let result = f(self);
        if let Err(StoreError::Unavailable { .. }) = result {
            self.roll_back();
            return result;
        }
        self.commit().and(result)
    }

    /// Begins a transaction, taking the write lock at once, and sweeps a few expired records.
    fn begin(&mut self) -> Result<(), StoreError> {
        // A transaction left open (a job that panicked) is undone rather than joined.
        if !self.conn.is_autocommit() {
            self.roll_back();
        }
        self.exec("BEGIN IMMEDIATE", [])?;
        self.sweep(SWEEP_BUDGET);
        Ok(())
    }

    /// Commits the transaction; one that cannot be is rolled back.
    fn commit(&mut self) -> Result<(), StoreError> {
        let committed = self.exec("COMMIT", []).map(drop);
        match committed {
            Ok(()) => self.commits += 1,
            Err(_) => self.roll_back(),
        }
        committed
    }

    /// Rolls the transaction back.
    fn roll_back(&mut self) {
        self.undo("ROLLBACK");
    }

    /// Runs `rollback` (the transaction's or a savepoint's) and counts the rows again (the counts
    /// kept as rows changed included the undone changes).
    fn undo(&mut self, rollback: &str) {
        let _ = self.conn.execute_batch(rollback);
        if let Err(error) = self.recount() {
            tracing::error!("{error}");
        }
    }

    /// Whether a checkpoint is due and nobody asked the store's thread for it yet; asking is
    /// then the caller's.
    pub(super) fn checkpoint_to_ask(&mut self) -> bool {
        let due = self.commits >= CHECKPOINT_EVERY && !self.checkpoint_asked.load(Ordering::Relaxed);
        if due {
            self.checkpoint_asked.store(true, Ordering::Relaxed);
        }
        due
    }

    /// Set while a checkpoint the store's thread was asked for has not run (see
    /// [`Db::checkpoint_to_ask`]).
    pub(super) fn checkpoint_asked(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.checkpoint_asked)
    }

    /// Copies the log's committed pages into the file (syncing both), so the log is reused from
    /// its start rather than growing.
    fn checkpoint(&mut self) {
        if let Err(error) = self.conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
            tracing::warn!("{}: checkpointing the log: {error}", self.name);
        }
        self.commits = 0;
        self.checkpoint_asked.store(false, Ordering::Relaxed);
    }

    /// Runs `f` as one job: its writes are undone if it fails on the database.
    pub(super) fn job<T>(&mut self, f: impl FnOnce(&mut Db) -> Result<T, StoreError>) -> Result<T, StoreError> {
        self.exec("SAVEPOINT job", [])?;
        let result = f(self);
        match &result {
            Err(StoreError::Unavailable { .. }) => self.undo("ROLLBACK TO job; RELEASE job"),
            _ => drop(self.exec("RELEASE job", [])?),
        }
        result
    }

    /// The store's time, in ms.
    pub(super) fn now(&self) -> i64 {
        ms(self.clock.now())
    }

    pub(super) fn unavailable(&self, error: rusqlite::Error) -> StoreError {
        StoreError::Unavailable { store: self.name.clone(), detail: error.to_string() }
    }

    /// The rows of each kind, counted from the tables.
    fn recount(&mut self) -> Result<(), StoreError> {
        let count = |table: &str| -> Result<usize, StoreError> {
            let n: i64 = self
                .conn
                .query_row(&format!("SELECT count(*) FROM {table}"), [], |row| row.get(0))
                .map_err(|e| self.unavailable(e))?;
            Ok(usize::try_from(n).unwrap_or(0))
        };
        let (urls, flows, tasks) = (count("urls")?, count("flows")?, count("tasks")?);
        (self.url_rows, self.flow_rows, self.task_rows) = (urls, flows, tasks);
        let owners = self
            .conn
            .prepare("SELECT owner, count(*) FROM flows WHERE owner IS NOT NULL GROUP BY owner")
            .and_then(|mut counts| {
                let rows = counts.query_map([], |row| Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?)))?;
                rows.map(|row| row.map(|(owner, n)| (owner, usize::try_from(n).unwrap_or(0)))).collect()
            })
            .map_err(|e| self.unavailable(e))?;
        self.flow_owners = owners;
        Ok(())
    }

    /// Counts one flow row of `owner` less (a row deleted).
    pub(super) fn flow_gone(&mut self, owner: Option<String>) {
        self.flow_rows = self.flow_rows.saturating_sub(1);
        if let Some(owner) = owner
            && let Some(count) = self.flow_owners.get_mut(&owner)
        {
            *count -= 1;
            if *count == 0 {
                self.flow_owners.remove(&owner);
            }
        }
    }

    /// Deletes up to `budget` expired URL-mode steps and as many flows, earliest first.
    pub(super) fn sweep(&mut self, budget: i64) {
        let now = self.now();
        let urls = self.delete_expired(URLS_EXPIRY, now, budget, |_| Ok(()));
        let flows = self.delete_expired(FLOWS_EXPIRY, now, budget, |row| row.get::<_, Option<String>>(1));
        match (urls, flows) {
            (Ok(urls), Ok(owners)) => {
                self.url_rows = self.url_rows.saturating_sub(urls.len());
                // Flows say whose they were, for the owners' counts.
                owners.into_iter().for_each(|owner| self.flow_gone(owner));
            }
            (Err(error), _) | (_, Err(error)) => {
                tracing::warn!("{}: sweeping expired records: {error}", self.name);
                // What was deleted before the error is still counted.
                if let Err(error) = self.recount() {
                    tracing::error!("{error}");
                }
            }
        }
    }

    /// Deletes up to `budget` rows expired at `now` of the table `expiry` names, earliest first:
    /// what `read` reads of each deleted row (its id is column 0; a flow's `owner`, column 1).
    /// The rows are found through the table's index on `expires` and deleted one by one by id:
    /// an `id IN (SELECT …)` or a `RETURNING` would make SQLite build a temporary B-tree, page
    /// cache and all, and free it again, on every transaction (memory the allocator hands back to
    /// the system and faults in again each time).
    pub(super) fn delete_expired<T>(
        &self,
        expiry: Expiry,
        now: i64,
        budget: i64,
        read: impl Fn(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<Vec<T>> {
        let Expiry { select, delete } = expiry;
        let mut gone = Vec::new();
        let mut left = budget;
        while left > 0 {
            // A sweep of everything expired reads the ids a chunk at a time.
            let chunk = left.min(SWEEP_CHUNK);
            let rows: Vec<(String, T)> = self
                .conn
                .prepare_cached(select)?
                .query_map(params![now, chunk], |row| Ok((row.get(0)?, read(row)?)))?
                .collect::<rusqlite::Result<_>>()?;
            if rows.is_empty() {
                break;
            }
            let (found, before) = (rows.len(), gone.len());
            let mut delete = self.conn.prepare_cached(delete)?;
            for (id, value) in rows {
                if delete.execute([id])? == 1 {
                    gone.push(value);
                }
            }
            // Fewer than asked: nothing more has expired. None deleted (which cannot happen in
            // the one transaction): the same rows would be found again.
            if i64::try_from(found).unwrap_or(i64::MAX) < chunk || gone.len() == before {
                break;
            }
            left -= chunk;
        }
        Ok(gone)
    }

    /// Room for one more record of `kind`: at the cap, every expired record is swept first.
    pub(super) fn room(&mut self, kind: RecordKind) -> Result<(), StoreError> {
        let full = |db: &Db| match kind {
            RecordKind::Url => db.url_rows >= db.caps.url,
            RecordKind::Flow => db.flow_rows >= db.caps.flow,
        };
        if full(self) {
            self.sweep(i64::MAX);
        }
        if full(self) {
            let cap = if kind == RecordKind::Url { self.caps.url } else { self.caps.flow };
            return Err(StoreError::Full { kind, cap });
        }
        Ok(())
    }

    /// Reads one optional row with a cached statement.
    pub(super) fn row<T>(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        f: impl FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Option<T>, StoreError> {
        let mut statement = self.conn.prepare_cached(sql).map_err(|e| self.unavailable(e))?;
        statement.query_row(params, f).optional().map_err(|e| self.unavailable(e))
    }

    /// Runs one statement with a cached statement; the rows it changed.
    pub(super) fn exec(&self, sql: &str, params: impl rusqlite::Params) -> Result<usize, StoreError> {
        let mut statement = self.conn.prepare_cached(sql).map_err(|e| self.unavailable(e))?;
        statement.execute(params).map_err(|e| self.unavailable(e))
    }

    /// JSON read back from the file.
    pub(super) fn json(&self, text: &str, what: &str) -> Result<Value, StoreError> {
        serde_json::from_str(text)
            .map_err(|e| StoreError::Invalid { detail: format!("{}: {what} does not read back: {e}", self.name) })
    }

    // ---- URL-mode steps ----

    pub(super) fn register(&mut self, id: &str, ttl: Duration, owner: Option<&str>) -> Result<(), StoreError> {
        let now = self.now();
        match self.row("SELECT expires FROM urls WHERE id = ?1", [id], |row| row.get::<_, i64>(0))? {
            Some(expires) if expires > now => return Ok(()),
            Some(_) => {
                let gone = self.exec("DELETE FROM urls WHERE id = ?1", [id])?;
                self.url_rows = self.url_rows.saturating_sub(gone);
            }
            None => {}
        }
        self.room(RecordKind::Url)?;
        if let Some(owner) = owner {
            let cap = self.caps.per_principal;
            let held: i64 = self
                .row(
                    "SELECT count(*) FROM (SELECT 1 FROM urls WHERE owner = ?1 AND expires > ?2 LIMIT ?3)",
                    params![owner, now, i64::try_from(cap).unwrap_or(i64::MAX)],
                    |row| row.get(0),
                )?
                .unwrap_or(0);
            if usize::try_from(held).unwrap_or(usize::MAX) >= cap {
                return Err(StoreError::Quota { kind: RecordKind::Url, cap });
            }
        }
        let expires = now.saturating_add(ms_of(ttl));
        self.exec(
            "INSERT INTO urls (id, owner, done, outcome, expires) VALUES (?1, ?2, 0, NULL, ?3)",
            params![id, owner, expires],
        )?;
        self.url_rows += 1;
        Ok(())
    }

    pub(super) fn complete(&mut self, id: &str, outcome: &Value, by: Option<&str>) -> Result<bool, StoreError> {
        let now = self.now();
        let changed = self.exec(
            "UPDATE urls SET done = 1, outcome = ?2
             WHERE id = ?1 AND done = 0 AND expires > ?3 AND (owner IS NULL OR owner = ?4)",
            params![id, outcome.to_string(), now, by],
        )?;
        Ok(changed == 1)
    }

    pub(super) fn status(&mut self, id: &str) -> Result<UrlStatus, StoreError> {
        let now = self.now();
        let row =
            self.row("SELECT done, outcome FROM urls WHERE id = ?1 AND expires > ?2", params![id, now], |row| {
                Ok((row.get::<_, bool>(0)?, row.get::<_, Option<String>>(1)?))
            })?;
        Ok(match row {
            None => UrlStatus::Unknown,
            Some((false, _)) => UrlStatus::Pending,
            Some((true, outcome)) => {
                UrlStatus::Completed(self.json(outcome.as_deref().unwrap_or("null"), "an outcome")?)
            }
        })
    }

    /// Deletes a completed step and returns its completion; a pending or unknown one as it is.
    pub(super) fn consume(&mut self, id: &str) -> Result<UrlStatus, StoreError> {
        let now = self.now();
        // Read, then deleted: a `RETURNING` builds a temporary B-tree (see `delete_expired`).
        let taken = self.row(
            "SELECT outcome FROM urls WHERE id = ?1 AND done = 1 AND expires > ?2",
            params![id, now],
            |row| row.get::<_, Option<String>>(0),
        )?;
        match taken {
            Some(outcome) => {
                self.release(id)?;
                Ok(UrlStatus::Completed(self.json(outcome.as_deref().unwrap_or("null"), "an outcome")?))
            }
            None => self.status(id),
        }
    }

    pub(super) fn release(&mut self, id: &str) -> Result<(), StoreError> {
        let gone = self.exec("DELETE FROM urls WHERE id = ?1", [id])?;
        self.url_rows = self.url_rows.saturating_sub(gone);
        Ok(())
    }
}

/// Brings a file an earlier version wrote to this schema, inside the opening transaction (before
/// [`SCHEMA`], whose indexes name the new columns). Schema 1 had flows without an owner: the
/// column is added, and the flows already there belong to no one (they count against the cap of
/// flow records, no owner's quota, and expire as they would have).
fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    let columns = conn
        .prepare("SELECT name FROM pragma_table_info('flows')")?
        .query_map([], |row| row.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<String>>>()?;
    // No columns: a new file, which SCHEMA creates whole.
    if !columns.is_empty() && !columns.iter().any(|column| column == "owner") {
        conn.execute_batch("ALTER TABLE flows ADD COLUMN owner TEXT")?;
    }
    Ok(())
}

/// An error opening the file, said plainly: another process holding it is named as such.
fn opening_error(name: &str, path: &Path, error: rusqlite::Error) -> StoreError {
    let busy = matches!(error.sqlite_error_code(), Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked));
    let detail = if busy {
        format!(
            "{} is in use by another process: one process at a time may open a SQLite store (stop the other one, or give this one its own file)",
            path.display()
        )
    } else {
        format!("cannot open {}: {error}", path.display())
    };
    StoreError::Unavailable { store: name.to_owned(), detail }
}
