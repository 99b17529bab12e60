//! [`TaskRecords`] on the store's connection: one row per task, with the columns its caps and its
//! expiry are found by (whether it runs, until when it is live, its last change, its expiry).
//!
//! Live tasks are counted through an index of `(running, live_until)` (and the same by owner),
//! each count stopping at its cap; expired tasks are swept a few per created task, earliest first;
//! past the store's bound on records, room is made from an ended task (a live one is never
//! dropped).

use std::collections::BTreeSet;
use std::time::Duration;

use rusqlite::params;
use serde_json::{Map, Value};

use super::SqliteStore;
use super::db::{Db, SWEEP_BUDGET, TASKS_EXPIRY};
use crate::server::store::{StoreError, StoreFuture, TaskLimits, TaskRecord, TaskRecords, TaskView};

fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// When `record` expires: `created + ttl`.
fn expires(record: &TaskRecord) -> i64 {
    int(record.created_ms.saturating_add(record.ttl_ms))
}

/// Until when a running task is live: its lease's end or its expiry, whichever comes first.
fn live_until(record: &TaskRecord) -> i64 {
    int(record.lease_until_ms).min(expires(record))
}

fn doc(record: &TaskRecord) -> Result<String, StoreError> {
    serde_json::to_string(record).map_err(|e| StoreError::Invalid { detail: format!("a task cannot be encoded: {e}") })
}

impl Db {
    /// Ends the lease of every task still running in the file: one process at a time opens it, so
    /// the process that ran them is gone, and their handlers with it. They read `failed` at once
    /// (the engine's answer for a task whose lease passed) instead of `working` until the lease
    /// would have passed.
    pub(super) fn end_orphaned_tasks(&mut self) -> Result<(), StoreError> {
        let now = self.now();
        let orphans: Vec<(String, String)> = {
            let mut statement = self
                .conn
                .prepare("SELECT id, doc FROM tasks WHERE running = 1 AND live_until > ?1")
                .map_err(|e| self.unavailable(e))?;
            let rows = statement
                .query_map([now], |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?)))
                .map_err(|e| self.unavailable(e))?;
            rows.collect::<Result<_, _>>().map_err(|e| self.unavailable(e))?
        };
        for (id, doc) in orphans {
            // A record that does not read back is left to its lease.
            let Ok(mut record) = serde_json::from_str::<TaskRecord>(&doc) else { continue };
            record.lease_until_ms = record.lease_until_ms.min(u64::try_from(now).unwrap_or(0));
            self.exec(
                "UPDATE tasks SET doc = ?2, live_until = ?3 WHERE id = ?1",
                params![id, self::doc(&record)?, live_until(&record)],
            )?;
        }
        Ok(())
    }

    fn answers_of(&self, text: &str) -> Result<Map<String, Value>, StoreError> {
        match self.json(text, "a task's answers")? {
            Value::Object(answers) => Ok(answers),
            _ => Err(StoreError::Invalid { detail: format!("{}: a task's answers are not an object", self.name) }),
        }
    }

    /// How many tasks of `owner` (all owners when `mine` is false) are live at `at`, counted up to
    /// `cap` at most.
    fn live_tasks(&self, owner: Option<&str>, mine: bool, at: i64, cap: usize) -> Result<usize, StoreError> {
        let n: i64 = if mine {
            self.row(
                "SELECT count(*) FROM (SELECT 1 FROM tasks WHERE owner IS ?1 AND running = 1 AND live_until > ?2 LIMIT ?3)",
                params![owner, at, count(cap)],
                |row| row.get(0),
            )?
        } else {
            self.row(
                "SELECT count(*) FROM (SELECT 1 FROM tasks WHERE running = 1 AND live_until > ?1 LIMIT ?2)",
                params![at, count(cap)],
                |row| row.get(0),
            )?
        }
        .unwrap_or(0);
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    /// Drops one task that is not live at `at` (the one changed longest ago of the terminal ones,
    /// or the running one whose lease passed first); `false` when every task is live.
    fn drop_an_ended_task(&mut self, at: i64) -> Result<bool, StoreError> {
        let pick = |row: &rusqlite::Row<'_>| Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?));
        let terminal =
            self.row("SELECT id, updated FROM tasks WHERE running = 0 ORDER BY updated LIMIT 1", [], pick)?;
        let lapsed = self.row(
            "SELECT id, updated FROM tasks WHERE running = 1 AND live_until <= ?1 ORDER BY live_until LIMIT 1",
            [at],
            pick,
        )?;
        let oldest = match (terminal, lapsed) {
            (Some(a), Some(b)) => Some(if a.1 <= b.1 { a } else { b }),
            (a, b) => a.or(b),
        };
        let Some((id, _)) = oldest else { return Ok(false) };
        let gone = self.exec("DELETE FROM tasks WHERE id = ?1", [id])?;
        self.task_rows = self.task_rows.saturating_sub(gone);
        Ok(true)
    }

    fn create_task(&mut self, record: &TaskRecord, limits: TaskLimits) -> Result<(), StoreError> {
        let now = self.now();
        let swept =
            self.delete_expired(TASKS_EXPIRY, now, SWEEP_BUDGET, |_| Ok(())).map_err(|e| self.unavailable(e))?;
        self.task_rows = self.task_rows.saturating_sub(swept.len());
        let at = int(limits.now_ms);
        if self.task_rows >= self.caps.tasks && !self.drop_an_ended_task(at)? {
            return Err(StoreError::TaskCap { cap: self.caps.tasks, per_principal: false });
        }
        if self.live_tasks(None, false, at, limits.max_live)? >= limits.max_live {
            return Err(StoreError::TaskCap { cap: limits.max_live, per_principal: false });
        }
        let owner = record.owner.as_deref();
        if self.live_tasks(owner, true, at, limits.max_live_per_principal)? >= limits.max_live_per_principal {
            return Err(StoreError::TaskCap { cap: limits.max_live_per_principal, per_principal: true });
        }
        let replaced = self.exec("DELETE FROM tasks WHERE id = ?1", [&record.id])?;
        self.task_rows = self.task_rows.saturating_sub(replaced);
        self.exec(
            "INSERT INTO tasks (id, doc, owner, running, live_until, updated, expires, answers, cancel)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, '{}', 0)",
            params![
                record.id,
                doc(record)?,
                owner,
                !record.status.is_terminal(),
                live_until(record),
                int(record.updated_ms),
                expires(record)
            ],
        )?;
        self.task_rows += 1;
        Ok(())
    }

    fn save_task(&mut self, record: &TaskRecord) -> Result<bool, StoreError> {
        let stored = self.row("SELECT answers FROM tasks WHERE id = ?1 AND running = 1", [&record.id], |row| {
            row.get::<_, String>(0)
        })?;
        let Some(answers) = stored else { return Ok(false) };
        // Answers the handler took are no longer outstanding: forget them with their keys.
        let mut answers = self.answers_of(&answers)?;
        answers.retain(|key, _| record.input_requests.contains_key(key));
        self.exec(
            "UPDATE tasks SET doc = ?2, running = ?3, live_until = ?4, updated = ?5, expires = ?6, answers = ?7
             WHERE id = ?1",
            params![
                record.id,
                doc(record)?,
                !record.status.is_terminal(),
                live_until(record),
                int(record.updated_ms),
                expires(record),
                Value::Object(answers).to_string()
            ],
        )?;
        Ok(true)
    }

    fn load_task(&mut self, id: &str) -> Result<Option<TaskView>, StoreError> {
        let row = self.row("SELECT doc, answers, cancel FROM tasks WHERE id = ?1", [id], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?, row.get::<_, bool>(2)?))
        })?;
        let Some((doc, answers, cancel_requested)) = row else { return Ok(None) };
        let record: TaskRecord = serde_json::from_str(&doc)
            .map_err(|e| StoreError::Invalid { detail: format!("{}: a task record is not one: {e}", self.name) })?;
        let answered: BTreeSet<String> = self.answers_of(&answers)?.keys().cloned().collect();
        Ok(Some(TaskView { record, answered, cancel_requested }))
    }

    /// Adds answers, the first per key winning; whether the task exists.
    fn answer_task(&mut self, id: &str, new: Map<String, Value>) -> Result<bool, StoreError> {
        let stored = self.row("SELECT answers FROM tasks WHERE id = ?1", [id], |row| row.get::<_, String>(0))?;
        let Some(answers) = stored else { return Ok(false) };
        let mut answers = self.answers_of(&answers)?;
        for (key, value) in new {
            answers.entry(key).or_insert(value);
        }
        self.exec("UPDATE tasks SET answers = ?2 WHERE id = ?1", params![id, Value::Object(answers).to_string()])?;
        Ok(true)
    }

    fn task_answers(&mut self, id: &str) -> Result<Map<String, Value>, StoreError> {
        match self.row("SELECT answers FROM tasks WHERE id = ?1", [id], |row| row.get::<_, String>(0))? {
            Some(answers) => self.answers_of(&answers),
            None => Ok(Map::new()),
        }
    }

    fn cancel_task(&mut self, id: &str) -> Result<bool, StoreError> {
        Ok(self.exec("UPDATE tasks SET cancel = 1 WHERE id = ?1", [id])? == 1)
    }
}

impl TaskRecords for SqliteStore {
    fn create(&self, record: &TaskRecord, limits: TaskLimits) -> StoreFuture<'_, ()> {
        let record = record.clone();
        Box::pin(self.call(move |db| db.create_task(&record, limits)))
    }

    fn save(&self, record: &TaskRecord) -> StoreFuture<'_, bool> {
        let record = record.clone();
        Box::pin(async move {
            let id = record.id.clone();
            let saved = self.call(move |db| db.save_task(&record)).await?;
            if saved {
                self.waiters.wake(&task_key(&id));
            }
            Ok(saved)
        })
    }

    fn load(&self, id: &str) -> StoreFuture<'_, Option<TaskView>> {
        let id = id.to_owned();
        Box::pin(self.call(move |db| db.load_task(&id)))
    }

    fn answer(&self, id: &str, answers: Map<String, Value>) -> StoreFuture<'_, ()> {
        let id = id.to_owned();
        Box::pin(async move {
            let key = task_key(&id);
            if self.call(move |db| db.answer_task(&id, answers)).await? {
                self.waiters.wake(&key);
            }
            Ok(())
        })
    }

    fn answers(&self, id: &str) -> StoreFuture<'_, Map<String, Value>> {
        let id = id.to_owned();
        Box::pin(self.call(move |db| db.task_answers(&id)))
    }

    fn cancel(&self, id: &str) -> StoreFuture<'_, ()> {
        let id = id.to_owned();
        Box::pin(async move {
            let key = task_key(&id);
            if self.call(move |db| db.cancel_task(&id)).await? {
                self.waiters.wake(&key);
            }
            Ok(())
        })
    }

    fn wait(&self, id: &str, timeout: Duration) -> StoreFuture<'_, ()> {
        let watch = self.waiters.watch(&task_key(id));
        Box::pin(async move {
            let notified = watch.notify.notified();
            let _ = tokio::time::timeout(timeout, notified).await;
            Ok(())
        })
    }
}

/// A task's name among the waiters (URL-mode steps have theirs).
fn task_key(id: &str) -> String {
    format!("t:{id}")
}
