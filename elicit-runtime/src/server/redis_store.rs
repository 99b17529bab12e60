//! [`RedisStore`]: URL-mode completion shared by every instance that talks to one Redis
//! (feature `redis`).
//!
//! Several server instances behind a load balancer seal `requestState` with the same key ring, so
//! any of them can serve the next round of a flow. URL-mode completion is the one thing that
//! cannot travel in the state: the payment page may be submitted to one instance while the
//! client's retry lands on another. This store keeps those records in Redis.
//!
//! # Layout
//!
//! - One string key per step, `{prefix}:url:{id}`, created by [`CompletionStore::register`] (a
//!   script: `SET … PX ttl` once the cap allows it). Its value is `pending`, or `done:` followed by the JSON the page recorded.
//!   Redis expires it with the step; completion keeps the original expiry (`KEEPTTL`).
//! - Two Lua scripts make the state changes atomic, so two instances cannot both win a race:
//!   `complete` turns a `pending` record into `done:…` and publishes the id — and does nothing to a
//!   record that is missing, expired or already done; `take` returns the record and deletes it in
//!   the same step when it is done, so a completion is consumed at most once.
//! - One pub/sub channel, `{prefix}:url-completed`, carries the ids of completed steps. Each store
//!   keeps one subscriber connection and wakes the local waiters of that id. One channel rather
//!   than one per id: a retry waiting for its page costs no SUBSCRIBE round trip and no extra
//!   connection, and every instance sees every id, which is cheap at completion rates.
//!
//! - One hash per flow with exactly-once records, `{prefix}:flow:{id}` (see `Flow::once`): a field
//!   per slot and the flow's final answers, changed only by Lua scripts (claim, record, abandon,
//!   finish), each extending the hash's expiry. Every key this store writes carries a TTL.
//! - One sorted set, `{prefix}:live`, caps the live records ([`RedisStoreBuilder::max_records`]):
//!   its members are the record keys above, scored by their expiry (ms of Redis' own `TIME`). Only
//!   the scripts change it, so every instance on the prefix shares one count. A script about to
//!   create a record first drops the members whose expiry passed (`ZREMRANGEBYSCORE`: each member
//!   is dropped once, no scan), then refuses with a clear "full" error when the set holds the cap;
//!   writing a record sets its score to its new expiry; `take` and `release` remove the member
//!   with the record, `abandon` when the hash became empty. The set's own TTL is extended to the
//!   longest record's, so it too expires.
//!
//! # Waiting without losing a wake-up
//!
//! [`CompletionStore::take`] registers its interest locally and notes whether the subscriber is
//! live *before* it runs the `take` script; a completion published after that check reaches the
//! waiter. When the subscriber is down (Redis restarting) the waiter polls every 100 ms instead,
//! and when it comes back every waiter checks again, so completions made during the gap are seen.
//!
//! # Failures
//!
//! Every command is bounded (connect and answer timeouts, plus an overall bound per operation,
//! 2 s by default) and an unreachable Redis is a [`StoreError`] naming the server, never a panic
//! or an unbounded wait. The connection is re-established on the next command after Redis comes
//! back. A command that failed because the connection had dropped is tried once more on a fresh
//! connection; for `take` that is safe too — at worst a completion is lost and the engine starts
//! the step again, never used twice.
//!
//! ```no_run
//! use std::sync::Arc;
//! use elicit_runtime::server::{Engine, RedisStore};
//! use elicit_runtime::state::KeyRing;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let store = RedisStore::builder("redis://127.0.0.1:6379").key_prefix("travel").connect().await?;
//! let engine = Engine::builder("travel-server", KeyRing::generate()).completion_store(Arc::new(store)).build();
//! # let _ = engine;
//! # Ok(())
//! # }
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, RedisError, Script};
use serde_json::Value;
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::completion::{CompletionStore, DEFAULT_MAX_RECORDS, Finish, OnceClaim, StoreError, StoreFuture, UrlStatus};

/// The value of a registered, unfinished step.
const PENDING: &str = "pending";
/// The prefix of a finished step's value; the page's JSON follows.
const DONE: &str = "done:";

/// The prefix of the value of a registered, unfinished step owned by a principal, who follows.
const PENDING_FOR: &str = "pending:";

/// Turns a pending record into a done one and announces its id, atomically.
/// KEYS[1] record; ARGV[1] new value, ARGV[2] channel, ARGV[3] id, ARGV[4] the pending value of
/// a step without owner, ARGV[5] that of a step owned by the completing principal.
const COMPLETE_SCRIPT: &str = r"
local value = redis.call('GET', KEYS[1])
if value == ARGV[4] or value == ARGV[5] then
  redis.call('SET', KEYS[1], ARGV[1], 'KEEPTTL')
  redis.call('PUBLISH', ARGV[2], ARGV[3])
  return 1
end
return 0
";

/// Returns a record and deletes it in the same step when it is done: consumed at most once.
/// KEYS[1] record, KEYS[2] live set; ARGV[1] the done prefix.
const TAKE_SCRIPT: &str = r"
local value = redis.call('GET', KEYS[1])
if value and string.sub(value, 1, string.len(ARGV[1])) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', KEYS[2], KEYS[1])
end
return value
";

/// The live-record count, shared by every script that creates a record. KEYS[1] is the record,
/// KEYS[2] the `{prefix}:live` sorted set (members: record keys, score: expiry in ms).
/// `room(cap)`: whether KEYS[1] may be written; a record that exists already always may, a new one
/// only while fewer than `cap` records are live (expired members are dropped first, each once).
/// `track()`: after a write, scores KEYS[1] by its expiry and keeps the set's TTL at least as long.
const LIVE_LUA: &str = r"
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function room(cap)
  if redis.call('EXISTS', KEYS[1]) == 1 then
    return true
  end
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now_ms())
  redis.call('ZREM', KEYS[2], KEYS[1])
  return redis.call('ZCARD', KEYS[2]) < tonumber(cap)
end
local function track()
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl > 0 then
    redis.call('ZADD', KEYS[2], now_ms() + ttl, KEYS[1])
    if redis.call('PTTL', KEYS[2]) < ttl then
      redis.call('PEXPIRE', KEYS[2], ttl)
    end
  end
end
";

/// Exactly-once records of one flow live in one hash, `{prefix}:flow:{id}`: a field per slot
/// (`?` while claimed, `=` and the JSON once recorded) and `final` (the answers the flow finished
/// with). Every script that writes it extends its expiry to at least ARGV[2] ms, never shortens it,
/// and tracks it in the live set.
const EXTEND_LUA: &str = "local function extend() if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end track() end\n";

/// Creates a step's record, when there is room. KEYS[1] record, KEYS[2] live set; ARGV[1] the
/// pending value, ARGV[2] ttl ms, ARGV[3] cap. Returns `F` when full, else `+`.
const REGISTER_SCRIPT: &str = r"
if not room(ARGV[3]) then
  return 'F'
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
track()
return '+'
";

/// Claims a slot. KEYS[1] flow hash, KEYS[2] live set; ARGV[1] slot field, ARGV[2] ttl ms,
/// ARGV[3] cap. Returns `=json` (recorded), `?` (claimed by another), `!` (the flow finished),
/// `+` (claimed now), `F` (a new flow, and the store is full).
const CLAIM_SCRIPT: &str = r"
local value = redis.call('HGET', KEYS[1], ARGV[1])
if value then
  return value
end
if redis.call('HEXISTS', KEYS[1], 'final') == 1 then
  return '!'
end
if not room(ARGV[3]) then
  return 'F'
end
redis.call('HSET', KEYS[1], ARGV[1], '?')
extend()
return '+'
";

/// Records a slot's value. KEYS[1] flow hash, KEYS[2] live set; ARGV[1] slot field, ARGV[2] ttl
/// ms, ARGV[3] `=json`, ARGV[4] cap. Returns `+`, or `F` (the flow had expired, and the store is full).
const RECORD_SCRIPT: &str = r"
if not room(ARGV[4]) then
  return 'F'
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
extend()
return '+'
";

/// Drops a claim that was never recorded. KEYS[1] flow hash, KEYS[2] live set; ARGV[1] slot field.
/// A hash left empty is gone (Redis deletes it), and so is its member.
const ABANDON_SCRIPT: &str = r"
if redis.call('HGET', KEYS[1], ARGV[1]) == '?' then
  redis.call('HDEL', KEYS[1], ARGV[1])
  if redis.call('EXISTS', KEYS[1]) == 0 then
    redis.call('ZREM', KEYS[2], KEYS[1])
  end
end
return 1
";

/// Records the final answers unless the flow finished or claimed a slot the round did not see.
/// KEYS[1] flow hash, KEYS[2] live set; ARGV[1] answers JSON, ARGV[2] ttl ms, ARGV[3] cap,
/// ARGV[4..] the `o:` slots seen. Returns `R` (recorded), `C` (conflict), `A` and the answers it
/// finished with, or `F` (a new flow, and the store is full).
const FINISH_SCRIPT: &str = r"
local already = redis.call('HGET', KEYS[1], 'final')
if already then
  return 'A' .. already
end
local seen = {}
for i = 4, #ARGV do
  seen[ARGV[i]] = true
end
for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
  if string.sub(field, 1, 2) == 'o:' and not seen[field] then
    return 'C'
  end
end
if not room(ARGV[3]) then
  return 'F'
end
redis.call('HSET', KEYS[1], 'final', ARGV[1])
extend()
return 'R'
";

/// How often a waiter re-checks while the subscriber is down.
const POLL_WHILE_UNSUBSCRIBED: Duration = Duration::from_millis(100);
/// How often the subscriber pings Redis, so a silently dead connection is noticed.
const SUBSCRIBER_PING: Duration = Duration::from_secs(5);
/// The subscriber's reconnection backoff.
const RESUBSCRIBE_MIN: Duration = Duration::from_millis(50);
const RESUBSCRIBE_MAX: Duration = Duration::from_secs(2);
/// Ids are minted by the engine (22 characters); anything much longer is not ours and is not
/// sent to Redis as a key.
const MAX_ID_LEN: usize = 256;

/// Builds a [`RedisStore`].
#[derive(Debug, Clone)]
pub struct RedisStoreBuilder {
    url: String,
    prefix: String,
    command_timeout: Duration,
    max_records: usize,
}

impl RedisStoreBuilder {
    /// Prefixes every key and the channel (default `elicit`), so several deployments can share one
    /// Redis. Instances that must see each other's completions use the same prefix.
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The longest any one store operation may take before it fails with a [`StoreError`]
    /// (default 2 s). Waiting in [`CompletionStore::take`] is bounded by its own timeout instead.
    pub fn command_timeout(mut self, timeout: Duration) -> Self {
        self.command_timeout = timeout;
        self
    }

    /// The most live records (URL-mode steps and flows with exactly-once records) the store holds
    /// (default [`DEFAULT_MAX_RECORDS`]); a new one beyond it is refused with a "full" error until
    /// some are taken or expire. The count lives in Redis: every instance on the same prefix shares
    /// it, and they should agree on the cap.
    pub fn max_records(mut self, max: usize) -> Self {
        self.max_records = max;
        self
    }

    /// Connects, checks that Redis answers, and starts the subscriber that wakes waiting retries.
    ///
    /// Fails with a [`StoreError`] when the URL is not a plain `redis://` URL (TLS is not built in)
    /// or Redis does not answer a `PING` within the command timeout. Must run inside a Tokio
    /// runtime, which the subscriber task is spawned on.
    pub async fn connect(self) -> Result<RedisStore, StoreError> {
        let endpoint = describe(&self.url)?;
        let client = Client::open(self.url.as_str())
            .map_err(|e| StoreError(format!("cannot use redis URL for {endpoint}: {e}")))?;
        let timeout = self.command_timeout;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout.min(Duration::from_secs(1))))
            .set_response_timeout(Some(timeout))
            // Few, short reconnection attempts: an outage must surface as an error within the
            // command timeout, not after the crate's default backoff of several seconds.
            .set_number_of_retries(2)
            .set_min_delay(Duration::from_millis(50))
            .set_max_delay(Duration::from_millis(500));
        let connection = ConnectionManager::new_lazy_with_config(client.clone(), config)
            .map_err(|e| StoreError(format!("{endpoint}: {e}")))?;
        let waiters = Arc::new(Waiters::default());
        let (live_tx, live) = watch::channel(false);
        let channel = format!("{}:url-completed", self.prefix);
        let subscriber = tokio::spawn(subscribe_forever(client, channel.clone(), waiters.clone(), live_tx, timeout));
        let store = RedisStore {
            connection,
            complete_script: Script::new(COMPLETE_SCRIPT),
            take_script: Script::new(TAKE_SCRIPT),
            register_script: Script::new(&format!("{LIVE_LUA}{REGISTER_SCRIPT}")),
            key_prefix: format!("{}:url:", self.prefix),
            flow_prefix: format!("{}:flow:", self.prefix),
            live_key: format!("{}:live", self.prefix),
            max_records: self.max_records.to_string(),
            claim_script: Script::new(&format!("{LIVE_LUA}{EXTEND_LUA}{CLAIM_SCRIPT}")),
            record_script: Script::new(&format!("{LIVE_LUA}{EXTEND_LUA}{RECORD_SCRIPT}")),
            abandon_script: Script::new(ABANDON_SCRIPT),
            finish_script: Script::new(&format!("{LIVE_LUA}{EXTEND_LUA}{FINISH_SCRIPT}")),
            channel,
            endpoint,
            timeout,
            waiters,
            live,
            subscriber: AbortOnDrop(subscriber),
        };
        let pong: String =
            store.run("PING", |mut c| async move { redis::cmd("PING").query_async(&mut c).await }).await?;
        if pong != "PONG" {
            return Err(StoreError(format!("{} answered PING with {pong:?}", store.endpoint)));
        }
        // Give the subscriber a moment so the first waiters need not poll; not an error if it is
        // slow, waiters poll until it is live.
        let mut live = store.live.clone();
        let _ = tokio::time::timeout(timeout, live.wait_for(|live| *live)).await;
        Ok(store)
    }
}

/// A [`CompletionStore`] in Redis, shared by every instance that connects to the same Redis with
/// the same key prefix. The keys and scripts are described at the top of this module's source.
pub struct RedisStore {
    connection: ConnectionManager,
    complete_script: Script,
    take_script: Script,
    register_script: Script,
    key_prefix: String,
    flow_prefix: String,
    /// `{prefix}:live`: the live records, scored by expiry.
    live_key: String,
    /// The cap on live records, as the scripts take it.
    max_records: String,
    claim_script: Script,
    record_script: Script,
    abandon_script: Script,
    finish_script: Script,
    channel: String,
    /// `redis at HOST:PORT`, for messages (never the password).
    endpoint: String,
    timeout: Duration,
    waiters: Arc<Waiters>,
    /// Whether the subscriber is subscribed right now.
    live: watch::Receiver<bool>,
    subscriber: AbortOnDrop,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("endpoint", &self.endpoint)
            .field("key_prefix", &self.key_prefix)
            .field("subscribed", &*self.live.borrow())
            .field("subscriber_running", &!self.subscriber.0.is_finished())
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// Starts building a store for `url` (`redis://[:password@]host[:port][/db]`).
    pub fn builder(url: impl Into<String>) -> RedisStoreBuilder {
        RedisStoreBuilder {
            url: url.into(),
            prefix: "elicit".to_owned(),
            command_timeout: Duration::from_secs(2),
            max_records: DEFAULT_MAX_RECORDS,
        }
    }

    /// Connects to `url` with the default prefix and timeouts; see [`RedisStoreBuilder::connect`].
    pub async fn connect(url: &str) -> Result<RedisStore, StoreError> {
        RedisStore::builder(url).connect().await
    }

    fn key(&self, id: &str) -> String {
        format!("{}{id}", self.key_prefix)
    }

    /// Runs one operation under the overall bound, trying once more when the connection had
    /// dropped (the connection manager reconnects in between).
    async fn run<T, F, Fut>(&self, what: &str, op: F) -> Result<T, StoreError>
    where
        F: Fn(ConnectionManager) -> Fut,
        Fut: Future<Output = Result<T, RedisError>>,
    {
        let attempts = async {
            match op(self.connection.clone()).await {
                Err(e) if e.is_io_error() && !e.is_timeout() => op(self.connection.clone()).await,
                other => other,
            }
        };
        match tokio::time::timeout(self.timeout, attempts).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(StoreError(format!("{}: {what} failed: {e}", self.endpoint))),
            Err(_) => Err(StoreError(format!("{}: {what} got no answer within {:?}", self.endpoint, self.timeout))),
        }
    }

    fn flow_key(&self, flow: &str) -> Result<String, StoreError> {
        if flow.len() > MAX_ID_LEN {
            return Err(StoreError("a flow id is too long".to_owned()));
        }
        Ok(format!("{}{flow}", self.flow_prefix))
    }

    /// Runs one of the record scripts with these arguments (the live set is KEYS[2]); the answer
    /// is a string.
    async fn flow_script(
        &self,
        what: &str,
        script: &Script,
        key: &str,
        args: &[&str],
    ) -> Result<Option<String>, StoreError> {
        self.run(what, |mut c| {
            let mut invocation = script.key(key);
            invocation.key(&self.live_key);
            for arg in args {
                invocation.arg(*arg);
            }
            async move { invocation.invoke_async(&mut c).await }
        })
        .await
    }

    /// The refusal of a new record when the cap is reached; the same words as the in-process store.
    fn full(&self) -> StoreError {
        StoreError(format!("full: {} live records (the configured cap); try again later", self.max_records))
    }

    fn json(&self, text: &str) -> Result<Value, StoreError> {
        serde_json::from_str(text)
            .map_err(|e| StoreError(format!("{}: an exactly-once record is not JSON: {e}", self.endpoint)))
    }

    /// One atomic `take` script run: consumes a done record.
    async fn take_now(&self, id: &str) -> Result<UrlStatus, StoreError> {
        let key = self.key(id);
        let value: Option<String> = self
            .run("take", |mut c| {
                let mut invocation = self.take_script.key(&key);
                invocation.key(&self.live_key).arg(DONE);
                async move { invocation.invoke_async(&mut c).await }
            })
            .await?;
        self.decode(value)
    }

    fn decode(&self, value: Option<String>) -> Result<UrlStatus, StoreError> {
        match value.as_deref() {
            None => Ok(UrlStatus::Unknown),
            Some(pending) if pending == PENDING || pending.starts_with(PENDING_FOR) => Ok(UrlStatus::Pending),
            Some(done) => match done.strip_prefix(DONE) {
                Some(json) => serde_json::from_str(json)
                    .map(UrlStatus::Completed)
                    .map_err(|e| StoreError(format!("{}: a completion record is not JSON: {e}", self.endpoint))),
                None => Err(StoreError(format!("{}: an unexpected completion record", self.endpoint))),
            },
        }
    }
}

impl CompletionStore for RedisStore {
    fn register(&self, id: &str, ttl: Duration, owner: Option<&str>) -> StoreFuture<'_, ()> {
        let key = self.key(id);
        let pending = owner.map_or_else(|| PENDING.to_owned(), |owner| format!("{PENDING_FOR}{owner}"));
        Box::pin(async move {
            // PX 0 is an error in Redis; `ttl_ms` gives a step at least a millisecond.
            let args = [pending.as_str(), &ttl_ms(ttl), &self.max_records];
            match self.flow_script("register", &self.register_script, &key, &args).await?.as_deref() {
                Some("+") => Ok(()),
                Some("F") => Err(self.full()),
                _ => Err(StoreError(format!("{}: an unexpected register answer", self.endpoint))),
            }
        })
    }

    fn release(&self, id: &str) {
        // `release` may not wait: the DEL runs on its own, bounded, and a failure only leaves the
        // record to its expiry. Outside a Tokio runtime there is nothing to run it on: same result.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let key = self.key(id);
        let mut connection = self.connection.clone();
        let timeout = self.timeout;
        let mut pipe = redis::pipe();
        pipe.atomic().del(&key).ignore().zrem(&self.live_key, &key).ignore();
        runtime.spawn(async move {
            let _ = tokio::time::timeout(timeout, pipe.query_async::<()>(&mut connection)).await;
        });
    }

    fn complete(&self, id: &str, outcome: Value, by: Option<&str>) -> StoreFuture<'_, bool> {
        let id = id.to_owned();
        // Without a principal only an unowned step completes: ARGV[5] repeats ARGV[4].
        let owned = by.map_or_else(|| PENDING.to_owned(), |by| format!("{PENDING_FOR}{by}"));
        Box::pin(async move {
            if id.len() > MAX_ID_LEN {
                return Ok(false);
            }
            let key = self.key(&id);
            let value = format!("{DONE}{outcome}");
            let done: i64 = self
                .run("complete", |mut c| {
                    let mut invocation = self.complete_script.key(&key);
                    invocation.arg(&value).arg(&self.channel).arg(&id).arg(PENDING).arg(&owned);
                    async move { invocation.invoke_async(&mut c).await }
                })
                .await?;
            Ok(done == 1)
        })
    }

    fn status(&self, id: &str) -> StoreFuture<'_, UrlStatus> {
        let id = id.to_owned();
        Box::pin(async move {
            if id.len() > MAX_ID_LEN {
                return Ok(UrlStatus::Unknown);
            }
            let key = self.key(&id);
            let value: Option<String> = self
                .run("status", |mut c| {
                    let key = key.clone();
                    async move { redis::cmd("GET").arg(key).query_async(&mut c).await }
                })
                .await?;
            self.decode(value)
        })
    }

    fn take(&self, id: &str, timeout: Duration) -> StoreFuture<'_, UrlStatus> {
        let id = id.to_owned();
        Box::pin(async move {
            if id.len() > MAX_ID_LEN {
                return Ok(UrlStatus::Unknown);
            }
            let deadline = Instant::now() + timeout;
            let mut live = self.live.clone();
            loop {
                // Interest first, then the check: a completion published after the check wakes us.
                let waiter = self.waiters.watch(&id);
                let notified = waiter.notify.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                let subscribed = *live.borrow_and_update();
                let status = self.take_now(&id).await?;
                let now = Instant::now();
                if status != UrlStatus::Pending || now >= deadline {
                    return Ok(status);
                }
                let until = if subscribed { deadline } else { deadline.min(now + POLL_WHILE_UNSUBSCRIBED) };
                tokio::select! {
                    () = &mut notified => {}
                    () = subscription_changed(&mut live) => {}
                    () = tokio::time::sleep_until(until) => {}
                }
            }
        })
    }

    fn claim_once(&self, flow: &str, key: &str, ttl: Duration) -> StoreFuture<'_, OnceClaim> {
        let (flow, key) = (flow.to_owned(), key.to_owned());
        Box::pin(async move {
            let hash = self.flow_key(&flow)?;
            let answer =
                self.flow_script("claim", &self.claim_script, &hash, &[&key, &ttl_ms(ttl), &self.max_records]).await?;
            match answer.as_deref() {
                Some("+") => Ok(OnceClaim::Run),
                Some("F") => Err(self.full()),
                Some("?") => Ok(OnceClaim::Busy),
                Some("!") => Ok(OnceClaim::Finished),
                Some(done) => match done.strip_prefix('=') {
                    Some(json) => self.json(json).map(OnceClaim::Done),
                    None => Err(StoreError(format!("{}: an unexpected exactly-once record", self.endpoint))),
                },
                None => Err(StoreError(format!("{}: the claim script answered nothing", self.endpoint))),
            }
        })
    }

    fn record_once(&self, flow: &str, key: &str, value: Value, ttl: Duration) -> StoreFuture<'_, ()> {
        let (flow, key) = (flow.to_owned(), key.to_owned());
        Box::pin(async move {
            let hash = self.flow_key(&flow)?;
            let value = format!("={value}");
            match self
                .flow_script("record", &self.record_script, &hash, &[&key, &ttl_ms(ttl), &value, &self.max_records])
                .await?
                .as_deref()
            {
                Some("F") => Err(self.full()),
                _ => Ok(()),
            }
        })
    }

    fn abandon_once(&self, flow: &str, key: &str) -> StoreFuture<'_, ()> {
        let (flow, key) = (flow.to_owned(), key.to_owned());
        Box::pin(async move {
            let hash = self.flow_key(&flow)?;
            self.run("abandon", |mut c| {
                let mut invocation = self.abandon_script.key(&hash);
                invocation.key(&self.live_key).arg(&key);
                async move { invocation.invoke_async::<i64>(&mut c).await }
            })
            .await
            .map(drop)
        })
    }

    fn finished(&self, flow: &str) -> StoreFuture<'_, Option<Value>> {
        let flow = flow.to_owned();
        Box::pin(async move {
            let hash = self.flow_key(&flow)?;
            let value: Option<String> = self
                .run("finished", |mut c| {
                    let hash = hash.clone();
                    async move { redis::cmd("HGET").arg(hash).arg("final").query_async(&mut c).await }
                })
                .await?;
            value.as_deref().map(|json| self.json(json)).transpose()
        })
    }

    fn finish(&self, flow: &str, answers: Value, seen: &[String], ttl: Duration) -> StoreFuture<'_, Finish> {
        let flow = flow.to_owned();
        let seen = seen.to_vec();
        Box::pin(async move {
            let hash = self.flow_key(&flow)?;
            let answers = answers.to_string();
            let ttl = ttl_ms(ttl);
            let mut args: Vec<&str> = vec![&answers, &ttl, &self.max_records];
            args.extend(seen.iter().map(String::as_str));
            match self.flow_script("finish", &self.finish_script, &hash, &args).await?.as_deref() {
                Some("R") => Ok(Finish::Recorded),
                Some("F") => Err(self.full()),
                Some("C") => Ok(Finish::Conflict),
                Some(already) => match already.strip_prefix('A') {
                    Some(json) => self.json(json).map(Finish::Already),
                    None => Err(StoreError(format!("{}: an unexpected finish answer", self.endpoint))),
                },
                None => Err(StoreError(format!("{}: the finish script answered nothing", self.endpoint))),
            }
        })
    }
}

fn ttl_ms(ttl: Duration) -> String {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1).to_string()
}

/// Resolves when the subscriber goes up or down; never, once the subscriber is gone.
async fn subscription_changed(live: &mut watch::Receiver<bool>) {
    if live.changed().await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// `redis at HOST:PORT` for `url`, without credentials; refuses anything but `redis://`.
fn describe(url: &str) -> Result<String, StoreError> {
    // Not echoed: the URL may carry a password.
    let parsed = url::Url::parse(url).map_err(|e| StoreError(format!("the store URL is not a redis URL: {e}")))?;
    if parsed.scheme() != "redis" {
        return Err(StoreError(format!(
            "`{}://…` is not supported: give redis://HOST:PORT (TLS is not built in)",
            parsed.scheme()
        )));
    }
    let host = parsed.host_str().unwrap_or("localhost");
    Ok(format!("redis at {host}:{}", parsed.port().unwrap_or(6379)))
}

/// The retries waiting in `take` in this process, by step id.
#[derive(Default)]
struct Waiters {
    by_id: Mutex<HashMap<String, (Arc<Notify>, usize)>>,
}

/// One waiter's registration; removes itself when dropped.
struct Waiter<'a> {
    waiters: &'a Waiters,
    id: &'a str,
    notify: Arc<Notify>,
}

impl Waiters {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Arc<Notify>, usize)>> {
        // Only plain map updates happen under the lock; a poisoned lock holds a consistent map.
        self.by_id.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn watch<'a>(&'a self, id: &'a str) -> Waiter<'a> {
        let mut map = self.lock();
        let entry = map.entry(id.to_owned()).or_insert_with(|| (Arc::new(Notify::new()), 0));
        entry.1 += 1;
        Waiter { waiters: self, id, notify: entry.0.clone() }
    }

    fn wake(&self, id: &str) {
        if let Some((notify, _)) = self.lock().get(id) {
            notify.notify_waiters();
        }
    }
}

impl Drop for Waiter<'_> {
    fn drop(&mut self) {
        let mut map = self.waiters.lock();
        if let Some(entry) = map.get_mut(self.id) {
            entry.1 -= 1;
            if entry.1 == 0 {
                map.remove(self.id);
            }
        }
    }
}

/// Keeps one subscription to `channel` alive for the life of the store, waking local waiters
/// for every id announced; `live` tells waiters whether they may rely on it.
async fn subscribe_forever(
    client: Client,
    channel: String,
    waiters: Arc<Waiters>,
    live: watch::Sender<bool>,
    timeout: Duration,
) {
    let mut backoff = RESUBSCRIBE_MIN;
    loop {
        let subscribed = tokio::time::timeout(timeout, async {
            let mut pubsub = client.get_async_pubsub().await?;
            pubsub.subscribe(&channel).await?;
            Ok::<_, RedisError>(pubsub)
        })
        .await;
        if let Ok(Ok(pubsub)) = subscribed {
            backoff = RESUBSCRIBE_MIN;
            let (mut sink, mut messages) = pubsub.split();
            live.send_replace(true);
            let mut ping = tokio::time::interval_at(Instant::now() + SUBSCRIBER_PING, SUBSCRIBER_PING);
            loop {
                tokio::select! {
                    message = messages.next() => match message {
                        Some(message) => {
                            if let Ok(id) = message.get_payload::<String>() {
                                waiters.wake(&id);
                            }
                        }
                        None => break,
                    },
                    _ = ping.tick() => {
                        let pong = tokio::time::timeout(timeout, sink.ping::<redis::Value>()).await;
                        if !matches!(pong, Ok(Ok(_))) {
                            break;
                        }
                    }
                }
            }
            live.send_replace(false);
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(RESUBSCRIBE_MAX);
    }
}

/// Stops the subscriber when the store goes away.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, reason = "a failing test should stop loudly")]
mod tests {
    use super::*;

    #[test]
    fn describes_the_endpoint_without_credentials() {
        assert_eq!(describe("redis://:secret@10.1.2.3:7000/2").unwrap(), "redis at 10.1.2.3:7000");
        assert_eq!(describe("redis://cache").unwrap(), "redis at cache:6379");
        assert!(describe("rediss://cache:6380").unwrap_err().0.contains("TLS is not built in"));
        assert!(describe("not a url").is_err());
    }

    #[tokio::test]
    async fn an_unreachable_redis_is_a_bounded_store_error() {
        // Port 1 on loopback: nothing listens there, the connection is refused at once.
        let started = std::time::Instant::now();
        let error = RedisStore::builder("redis://127.0.0.1:1")
            .command_timeout(Duration::from_millis(500))
            .connect()
            .await
            .unwrap_err();
        assert!(error.to_string().starts_with("completion store: redis at 127.0.0.1:1: PING"), "{error}");
        assert!(started.elapsed() < Duration::from_secs(3), "took {:?}", started.elapsed());
    }
}
