//! [`TaskRecords`] in Redis: the tasks of every instance that connects to the same Redis.
//!
//! # Layout
//!
//! - Keys start as the store's others do (the prefix, or a shard's hash tag on a cluster: the
//!   task's hash and the sets counting it share a slot).
//! - One hash per task, `{prefix}:task:{id}`: `doc` (the [`TaskRecord`] JSON the running instance
//!   writes), `a:{key}` (each answer, first one wins), `cancel`. It expires with the task's TTL.
//! - The sorted sets `{prefix}:live:task` and `{prefix}:live:task:owner:{digest}` hold the ids of
//!   tasks running, scored by their lease's end; the create script drops those whose lease passed,
//!   then counts them against the caps (on a cluster, each shard's share of them). A terminal save removes the task from both.
//! - Every change publishes `task:{id}` on the store's channel: a handler waiting on an answer or
//!   on cancellation, on whichever instance, is woken at once (and rereads anyway every
//!   [`TaskConfig::recheck`](crate::server::task::TaskConfig::recheck)).

use std::collections::BTreeSet;
use std::time::Duration;

use redis::Script;
use serde_json::{Map, Value};

use super::{MAX_ID_LEN, RedisStore};
use crate::server::store::{StoreError, StoreFuture, TaskLimits, TaskRecord, TaskRecords, TaskView};

/// KEYS[1] task hash, KEYS[2] live set, KEYS[3] the owner's live set; ARGV[1] doc, ARGV[2] ttl ms,
/// ARGV[3] now ms, ARGV[4] cap, ARGV[5] per-principal cap, ARGV[6] lease end ms, ARGV[7] id.
/// Returns `+`, `F` (at the cap) or `Q` (at the principal's cap).
pub(super) const CREATE_TASK: &str = r"
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[3])
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then return 'F' end
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[5]) then return 'Q' end
redis.call('HSET', KEYS[1], 'doc', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
for i = 2, 3 do
  redis.call('ZADD', KEYS[i], ARGV[6], ARGV[7])
  if redis.call('PTTL', KEYS[i]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[i], ARGV[2]) end
end
return '+'
";

/// KEYS as for create; ARGV[1] doc, ARGV[2] `1` when terminal, ARGV[3] lease end ms, ARGV[4] id,
/// ARGV[5] channel, ARGV[6..] the outstanding keys. Returns 1, or 0 when the stored record is
/// terminal or gone.
pub(super) const SAVE_TASK: &str = r"
local doc = redis.call('HGET', KEYS[1], 'doc')
if not doc then return 0 end
local status = cjson.decode(doc).status
if status == 'completed' or status == 'failed' or status == 'cancelled' then return 0 end
redis.call('HSET', KEYS[1], 'doc', ARGV[1])
local keep = {}
for i = 6, #ARGV do keep['a:' .. ARGV[i]] = true end
for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
  if string.sub(field, 1, 2) == 'a:' and not keep[field] then redis.call('HDEL', KEYS[1], field) end
end
for i = 2, 3 do
  if ARGV[2] == '1' then redis.call('ZREM', KEYS[i], ARGV[4]) else redis.call('ZADD', KEYS[i], ARGV[3], ARGV[4]) end
end
redis.call('PUBLISH', ARGV[5], 'task:' .. ARGV[4])
return 1
";

/// KEYS[1] task hash; ARGV[1] channel, ARGV[2] id, then key, value pairs (none: a cancel).
pub(super) const TOUCH_TASK: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if #ARGV == 2 then redis.call('HSET', KEYS[1], 'cancel', '1') end
for i = 3, #ARGV, 2 do redis.call('HSETNX', KEYS[1], 'a:' .. ARGV[i], ARGV[i + 1]) end
redis.call('PUBLISH', ARGV[1], 'task:' .. ARGV[2])
return 1
";

/// The scripts, built once per store.
pub(super) struct TaskScripts {
    pub(super) create: Script,
    pub(super) save: Script,
    pub(super) touch: Script,
}

impl TaskScripts {
    pub(super) fn new() -> Self {
        TaskScripts { create: Script::new(CREATE_TASK), save: Script::new(SAVE_TASK), touch: Script::new(TOUCH_TASK) }
    }
}

impl RedisStore {
    fn task_key(&self, id: &str) -> String {
        format!("{}:task:{id}", self.tag(id))
    }

    /// The running tasks of `id`'s shard.
    fn live_tasks(&self, id: &str) -> String {
        format!("{}:live:task", self.tag(id))
    }

    /// One principal's running tasks in `id`'s shard.
    fn live_tasks_of(&self, id: &str, owner: Option<&str>) -> String {
        format!("{}:live:task:owner:{}", self.tag(id), super::digest(owner.unwrap_or("")))
    }

    /// The task's hash and the two sets counting it.
    fn task_keys(&self, record: &TaskRecord) -> (String, String, String) {
        let id = &record.id;
        (self.task_key(id), self.live_tasks(id), self.live_tasks_of(id, record.owner.as_deref()))
    }

    async fn fields(&self, id: &str) -> Result<Vec<(String, String)>, StoreError> {
        if id.len() > MAX_ID_LEN {
            return Ok(Vec::new());
        }
        let key = self.task_key(id);
        self.run("HGETALL task", |mut c| {
            let key = key.clone();
            async move { redis::cmd("HGETALL").arg(key).query_async(&mut c).await }
        })
        .await
    }

    async fn touch(&self, id: &str, pairs: Vec<String>) -> Result<(), StoreError> {
        if id.len() > MAX_ID_LEN {
            return Ok(());
        }
        let key = self.task_key(id);
        let mut args = vec![self.channel.clone(), id.to_owned()];
        args.extend(pairs);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let _: Option<String> =
            self.script("update task", &self.task_scripts.touch, &[&key], &args).await.map(|_| None)?;
        Ok(())
    }
}

fn doc(record: &TaskRecord) -> Result<String, StoreError> {
    serde_json::to_string(record).map_err(|e| StoreError::Invalid { detail: format!("a task cannot be encoded: {e}") })
}

impl TaskRecords for RedisStore {
    fn create(&self, record: &TaskRecord, limits: TaskLimits) -> StoreFuture<'_, ()> {
        let record = record.clone();
        Box::pin(async move {
            let doc = doc(&record)?;
            let (key, live, mine) = self.task_keys(&record);
            let args = [
                doc,
                record.ttl_ms.max(1).to_string(),
                limits.now_ms.to_string(),
                self.shard_cap(limits.max_live).to_string(),
                self.shard_cap(limits.max_live_per_principal).to_string(),
                record.lease_until_ms.to_string(),
                record.id.clone(),
            ];
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            match self.script("create task", &self.task_scripts.create, &[&key, &live, &mine], &args).await?.as_deref()
            {
                Some("+") => Ok(()),
                Some("F") => Err(StoreError::TaskCap { cap: limits.max_live, per_principal: false }),
                Some("Q") => Err(StoreError::TaskCap { cap: limits.max_live_per_principal, per_principal: true }),
                other => Err(self.invalid(format!("create task answered {other:?}"))),
            }
        })
    }

    fn save(&self, record: &TaskRecord) -> StoreFuture<'_, bool> {
        let record = record.clone();
        Box::pin(async move {
            let doc = doc(&record)?;
            let (key, live, mine) = self.task_keys(&record);
            let mut args = vec![
                doc,
                if record.status.is_terminal() { "1" } else { "0" }.to_owned(),
                record.lease_until_ms.to_string(),
                record.id.clone(),
                self.channel.clone(),
            ];
            args.extend(record.input_requests.keys().cloned());
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let saved: i64 = self.invoke("save task", &self.task_scripts.save, &[&key, &live, &mine], &args).await?;
            Ok(saved == 1)
        })
    }

    fn load(&self, id: &str) -> StoreFuture<'_, Option<TaskView>> {
        let id = id.to_owned();
        Box::pin(async move {
            let mut record = None;
            let mut answered = BTreeSet::new();
            let mut cancel_requested = false;
            for (field, value) in self.fields(&id).await? {
                if field == "doc" {
                    let parsed: TaskRecord = serde_json::from_str(&value)
                        .map_err(|e| self.invalid(format!("a task record is not one: {e}")))?;
                    record = Some(parsed);
                } else if field == "cancel" {
                    cancel_requested = true;
                } else if let Some(key) = field.strip_prefix("a:") {
                    answered.insert(key.to_owned());
                }
            }
            Ok(record.map(|record| TaskView { record, answered, cancel_requested }))
        })
    }

    fn answer(&self, id: &str, answers: Map<String, Value>) -> StoreFuture<'_, ()> {
        let id = id.to_owned();
        Box::pin(async move {
            let mut pairs = Vec::with_capacity(answers.len() * 2);
            for (key, value) in answers {
                pairs.push(key);
                pairs.push(value.to_string());
            }
            if pairs.is_empty() {
                return Ok(());
            }
            self.touch(&id, pairs).await
        })
    }

    fn answers(&self, id: &str) -> StoreFuture<'_, Map<String, Value>> {
        let id = id.to_owned();
        Box::pin(async move {
            let mut answers = Map::new();
            for (field, value) in self.fields(&id).await? {
                if let Some(key) = field.strip_prefix("a:") {
                    let value = serde_json::from_str(&value)
                        .map_err(|e| self.invalid(format!("an answer is not JSON: {e}")))?;
                    answers.insert(key.to_owned(), value);
                }
            }
            Ok(answers)
        })
    }

    fn cancel(&self, id: &str) -> StoreFuture<'_, ()> {
        let id = id.to_owned();
        Box::pin(async move { self.touch(&id, Vec::new()).await })
    }

    fn wait(&self, id: &str, timeout: Duration) -> StoreFuture<'_, ()> {
        let name = format!("task:{id}");
        Box::pin(async move {
            let subscribed = *self.live.borrow();
            let waiter = self.waiters.watch(&name);
            let until = if subscribed { timeout } else { timeout.min(super::POLL_WHILE_UNSUBSCRIBED) };
            let _ = tokio::time::timeout(until, waiter.notify.notified()).await;
            Ok(())
        })
    }
}
