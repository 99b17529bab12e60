//! [`RedisStore`]: both store traits in Redis, shared by every instance that talks to one Redis
//! (feature `redis`).
//!
//! Several server instances behind a load balancer seal `requestState` with the same key ring, so
//! any of them can serve the next round of a flow. What cannot travel in the state lives here:
//! URL-mode completion (the payment page may be submitted to one instance while the client's
//! retry lands on another) and the flows' ledger.
//!
//! # Layout
//!
//! On one Redis (`redis://`) every key starts with the prefix (`{prefix}` below); on a Redis
//! Cluster (`redis+cluster://`) with the hash tag of the record's shard instead, as in
//! `{elicit#3}:flow:{id}` (the shard from the record's id, one of
//! [`RedisStoreBuilder::cluster_shards`]): a record and the sets counting it share a slot, so
//! every script touches one slot.
//!
//! - One string key per step, `{prefix}:url:{id}`: `pending` (or `pending:` and its owner), or
//!   `done:` followed by the JSON the page recorded. Redis expires it with the step; completion
//!   keeps the original expiry (`KEEPTTL`). Registering a live id changes nothing.
//! - One hash per flow, `{prefix}:flow:{id}`: a field per slot ([`Slot::name`]), `?TOKEN:UNTIL`
//!   while claimed (`UNTIL`: the lease's end, ms of Redis' own `TIME`) or `=` and the JSON once
//!   recorded, `final` (the answers the flow finished with), and `owner`: `?` and the key of the
//!   set that counts the record against its [`FlowOwner`]'s quota (written as a lapsed claim
//!   would be, so that the scripts of an earlier version, during a rolling upgrade, pass over it).
//! - Every state change is one Lua script, so two instances cannot both win a race. A resumed
//!   round's read of the flow (its finish and recorded slots, the record extended) is one script
//!   too: one round trip.
//! - Caps: the sorted sets `{prefix}:live:url` and `{prefix}:live:flow` hold the live records of
//!   each kind, scored by their expiry; `{prefix}:live:owner:{digest}` the steps one principal
//!   owns, `{prefix}:live:flows-of:{digest}` the flow records one [`FlowOwner`] made (the
//!   digest of [`FlowOwner::name`]; every script that extends a flow's record keeps its score
//!   in the owner's set too, reading the set's key from the record). A script about to create a
//!   record drops the members whose expiry passed
//!   (`ZREMRANGEBYSCORE`: each member once, no scan), then refuses with a clear error at the cap.
//!   A principal's set at its cap is also cleared of steps already taken (at most the cap's
//!   length of `EXISTS`). Every key this store writes carries a TTL. On a cluster these sets are
//!   per shard and each holds its share of the cap (see [`RedisStoreBuilder::cluster_shards`]):
//!   no key counts across slots.
//! - One pub/sub channel, `{prefix}:url-completed`, carries the ids of completed steps; each store
//!   keeps one subscriber connection and wakes its local waiters of that id. On a cluster the
//!   subscriber listens on one node (the next one the URL names when it is lost): a `PUBLISH`
//!   reaches every node's subscribers. Sharded pub/sub (`SPUBLISH`) would cost less per message
//!   but needs a subscription per shard on the node serving it, followed through failovers; a
//!   completion is published once per URL step (not per round), and scripts/bench.sh measures
//!   both on the same cluster.
//!
//! # Durability
//!
//! What the store acknowledged lives in Redis' memory. For the ledger's promise (one outcome per
//! flow, an approval never lost) to outlive a restart of Redis itself, run it with the
//! append-only file: `appendonly yes` with `appendfsync always` keeps every acknowledged write
//! through a crash of Redis or of its host; `appendfsync everysec` (Redis' default once AOF is
//! on) may lose the last second of writes to a host crash, but not to Redis' own crash. Snapshots
//! alone (`save`) lose everything since the last one. Where a replica takes over from a lost
//! master (Sentinel, a cluster's failover), replication is asynchronous: turn on
//! [`RedisStoreBuilder::wait_for_replicas`] so every write is on a replica before the engine
//! goes on.
//!
//! # Waiting without losing a wake-up
//!
//! [`UrlCompletions::take`] registers its interest locally and notes whether the subscriber is
//! live *before* it runs the `take` script; a completion published after that check reaches the
//! waiter. When the subscriber is down (Redis restarting) the waiter polls every 100 ms instead,
//! and when it comes back every waiter checks again, so completions made during the gap are seen.
//!
//! # Failures
//!
//! Every command is bounded (connect and answer timeouts, plus an overall bound per operation,
//! 2 s by default) and an unreachable Redis is a [`StoreError::Unavailable`] naming the server,
//! never a panic or an unbounded wait. A command that failed because the connection had dropped
//! is tried once more on a fresh connection: a claim retried so finds its own token and carries
//! on; a `take` at worst loses a completion (the engine starts the step again), never uses it twice.
//!
//! ```no_run
//! use std::sync::Arc;
//! use elicit_runtime::server::{Engine, store::RedisStore};
//! use elicit_runtime::state::KeyRing;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let store = RedisStore::builder("redis://127.0.0.1:6379").key_prefix("travel").connect().await?;
//! let engine = Engine::builder("travel-server", KeyRing::generate()).store(Arc::new(store)).build();
//! # let _ = engine;
//! # Ok(())
//! # }
//! ```

mod builder;
mod conn;
mod tasks;
mod wake;

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use redis::{FromRedisValue, RedisError, Script};
use serde_json::{Value, value::RawValue};
use sha2::{Digest, Sha256};
use tokio::sync::watch;
use tokio::time::Instant;

use super::{
    Claim, ClaimToken, Finish, FlowLedger, FlowOwner, LedgerSnapshot, RecordKind, Slot, StoreError, StoreFuture,
    UrlCompletions, UrlStatus,
};
pub use builder::RedisStoreBuilder;
use conn::Connection;
use wake::{AbortOnDrop, Waiters, subscription_changed};

/// The value of a registered, unfinished step.
const PENDING: &str = "pending";
/// The prefix of a finished step's value; the page's JSON follows.
const DONE: &str = "done:";
/// The prefix of the value of a registered, unfinished step owned by a principal, who follows.
const PENDING_FOR: &str = "pending:";

/// Turns a pending record into a done one and announces its id, atomically.
/// KEYS[1] record; ARGV[1] new value, ARGV[2] channel, ARGV[3] id, ARGV[4] the pending value of
/// a step without owner, ARGV[5] that of a step owned by the completing principal.
const COMPLETE_SCRIPT: &str = include_str!("complete.lua");

/// Returns a record and deletes it in the same step when it is done: consumed at most once.
/// KEYS[1] record, KEYS[2] live set; ARGV[1] the done prefix.
const TAKE_SCRIPT: &str = include_str!("take.lua");

/// Shared by the scripts that create records. KEYS[1] is the record, KEYS[2] its kind's live set
/// (members: record keys, score: expiry in ms).
/// `room(set, cap)`: whether KEYS[1] may be written; a record that exists already always may, a
/// new one only while fewer than `cap` members of `set` are live (expired ones dropped first).
/// `quota(set, cap)`: the same for a principal's set, whose members may also have been taken.
/// `track(set)`: after a write, scores KEYS[1] by its expiry and keeps the set's TTL as long.
/// `extend(ttl)`: KEYS[1] lives at least `ttl` ms from now, never shorter; tracked in KEYS[2]
/// and in its owner's set, `owner_set(hash)` (a key in KEYS[1]'s slot).
/// `new_flow(cap, quota)`: whether the flow KEYS[1] is new (`true`: the caller writes its
/// `owner` field), exists (`false`), or may not be made: `F` at the cap of KEYS[2], `Q` at the
/// owner's quota in KEYS[3].
/// `holder(value)`, `lease_end(value)`: the token and lease end of a claimed slot's value (a claim
/// written before claims had owners has neither: it is free).
const LIB_LUA: &str = include_str!("lib.lua");

/// Creates a step's record unless it is live, within the caps. KEYS[1] record, KEYS[2] URL live
/// set, KEYS[3] the owner's set; ARGV[1] the pending value, ARGV[2] ttl ms, ARGV[3] cap, ARGV[4]
/// the per-principal cap or empty (no owner). Returns `+`, `F` (full) or `Q` (over the quota).
const REGISTER_SCRIPT: &str = include_str!("register.lua");

/// Claims a slot. KEYS[1] flow hash, KEYS[2] flow live set, KEYS[3] the owner's flow set;
/// ARGV[1] slot field, ARGV[2] ttl ms, ARGV[3] cap, ARGV[4] token, ARGV[5] lease ms, ARGV[6] the
/// owner's quota. Returns `=json` (recorded), `?` (held by another token under a live lease), `!`
/// (the flow finished), `+` (held by this token now), `F` (a new flow, and the store is full) or
/// `Q` (a new flow, and its owner holds its quota).
const CLAIM_SCRIPT: &str = include_str!("claim.lua");

/// Records a slot's value under the token that holds it. KEYS[1] flow hash, KEYS[2] flow live
/// set; ARGV[1] slot field, ARGV[2] ttl ms, ARGV[3] `=json`, ARGV[4] token. Returns `+`, or `L`
/// (the claim is not this token's).
const RECORD_SCRIPT: &str = include_str!("record.lua");

/// Drops a claim held under a token. KEYS[1] flow hash, KEYS[2] flow live set; ARGV[1] slot
/// field, ARGV[2] token. A hash left empty is gone (Redis deletes it), and so is its member.
const ABANDON_SCRIPT: &str = include_str!("abandon.lua");

/// Records the final answers unless the flow finished or a slot the round did not see is
/// recorded or held under a live lease. KEYS[1] flow hash, KEYS[2] flow live set, KEYS[3] the
/// owner's flow set; ARGV[1] answers JSON, ARGV[2] ttl ms, ARGV[3] cap, ARGV[4] the owner's
/// quota, ARGV[5..] the slots seen. Returns `R` (recorded), `C` (conflict), `A` and the answers it
/// finished with, `F` (a new flow, and the store is full) or `Q` (a new flow over its owner's
/// quota).
const FINISH_SCRIPT: &str = include_str!("finish.lua");

/// Extends a flow's record when it has one. KEYS[1] flow hash, KEYS[2] flow live set; ARGV[1] ttl.
const EXTEND_SCRIPT: &str = include_str!("extend.lua");

/// Reads what a flow holds for good and extends its record when it has one: a resumed round's one
/// round trip. KEYS[1] flow hash, KEYS[2] flow live set; ARGV[1] ttl ms. Returns field, value
/// pairs: `final` and its answers, each recorded slot and its JSON (without the `=`).
const SNAPSHOT_SCRIPT: &str = include_str!("snapshot.lua");

/// How often a waiter re-checks while the subscriber is down.
const POLL_WHILE_UNSUBSCRIBED: Duration = Duration::from_millis(100);
/// Ids are minted by the engine (22 characters); anything much longer is not ours and is not
/// sent to Redis as a key.
const MAX_ID_LEN: usize = 256;

/// [`UrlCompletions`] and [`FlowLedger`] in Redis, shared by every instance that connects to the
/// same Redis with the same key prefix. The keys and scripts are described at the top of this
/// module's source.
pub struct RedisStore {
    connection: Connection,
    complete_script: Script,
    take_script: Script,
    register_script: Script,
    claim_script: Script,
    record_script: Script,
    abandon_script: Script,
    finish_script: Script,
    extend_script: Script,
    snapshot_script: Script,
    task_scripts: tasks::TaskScripts,
    prefix: String,
    /// 0 on one Redis (no hash tags: the keys are named as they always were); on a cluster the
    /// number of hash-tag shards (see [`RedisStoreBuilder::cluster_shards`]).
    shards: u32,
    replica_acks: Option<(u32, Duration)>,
    max_url_records: usize,
    max_flow_records: usize,
    max_url_records_per_principal: usize,
    max_flow_records_per_principal: usize,
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
            .field("prefix", &self.prefix)
            .field("shards", &self.shards)
            .field("subscribed", &*self.live.borrow())
            .field("subscriber_running", &!self.subscriber.0.is_finished())
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// Starts building a store for `url`: one Redis, `redis://[:password@]host[:port][/db]`, or
    /// a Redis Cluster, `redis+cluster://[:password@]host:port[,host:port…]` (any of its nodes;
    /// the others are learnt from them).
    pub fn builder(url: impl Into<String>) -> RedisStoreBuilder {
        RedisStoreBuilder::new(url.into())
    }

    /// Connects to `url` with the default prefix and timeouts; see [`RedisStoreBuilder::connect`].
    pub async fn connect(url: &str) -> Result<RedisStore, StoreError> {
        RedisStore::builder(url).connect().await
    }

    /// What every key of the record `id` starts with: the prefix on one Redis; on a cluster the
    /// hash tag of the record's shard, `{prefix#N}`, so that the record and the sets counting it
    /// live in one slot.
    fn tag(&self, id: &str) -> String {
        if self.shards == 0 {
            return self.prefix.clone();
        }
        // FNV-1a: ids are random already, this only spreads them over the shards.
        let hash = id.bytes().fold(0x811c_9dc5_u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
        format!("{{{}#{}}}", self.prefix, hash % self.shards)
    }

    /// A cap as counted in one shard: the whole cap on one Redis, its share on a cluster.
    fn shard_cap(&self, cap: usize) -> usize {
        match usize::try_from(self.shards) {
            Ok(shards) if shards > 1 => cap.div_ceil(shards),
            _ => cap,
        }
    }

    fn url_key(&self, id: &str) -> String {
        format!("{}:url:{id}", self.tag(id))
    }

    /// The live URL steps of `id`'s shard, by expiry.
    fn live_urls(&self, id: &str) -> String {
        format!("{}:live:url", self.tag(id))
    }

    /// The live flow records of `flow`'s shard, by expiry.
    fn live_flows(&self, flow: &str) -> String {
        format!("{}:live:flow", self.tag(flow))
    }

    /// The set counting a principal's steps in `id`'s shard: named by a digest (principals can
    /// be long).
    fn owner_key(&self, id: &str, owner: &str) -> String {
        format!("{}:live:owner:{}", self.tag(id), digest(owner))
    }

    /// The set counting `owner`'s flow records in `flow`'s shard.
    fn flow_owner_key(&self, flow: &str, owner: &FlowOwner) -> String {
        format!("{}:live:flows-of:{}", self.tag(flow), digest(&owner.name()))
    }

    /// Runs a script that may create `flow`'s record for `owner` (KEYS: the hash, the flow live
    /// set, the owner's set).
    async fn owned_flow_script(
        &self,
        what: &str,
        script: &Script,
        flow: &str,
        owner: &FlowOwner,
        args: &[&str],
    ) -> Result<Option<String>, StoreError> {
        let hash = self.flow_key(flow)?;
        let keys = [hash.as_str(), &self.live_flows(flow), &self.flow_owner_key(flow, owner)];
        self.script(what, script, &keys, args).await
    }

    /// The error of a flow script's `Q`.
    fn flow_quota(&self) -> StoreError {
        StoreError::Quota { kind: RecordKind::Flow, cap: self.max_flow_records_per_principal }
    }

    fn invalid(&self, detail: String) -> StoreError {
        StoreError::Invalid { detail: format!("{}: {detail}", self.endpoint) }
    }

    /// Runs one operation under the overall bound, trying once more when the connection had
    /// dropped (the connection manager reconnects in between).
    async fn run<T, F, Fut>(&self, what: &str, op: F) -> Result<T, StoreError>
    where
        F: Fn(Connection) -> Fut,
        Fut: Future<Output = Result<T, RedisError>>,
    {
        let attempts = async {
            match op(self.connection.clone()).await {
                Err(e) if e.is_io_error() && !e.is_timeout() => op(self.connection.clone()).await,
                other => other,
            }
        };
        let unavailable = |detail: String| StoreError::Unavailable { store: self.endpoint.clone(), detail };
        match tokio::time::timeout(self.timeout, attempts).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(unavailable(format!("{what} failed: {e}"))),
            Err(_) => Err(unavailable(format!("{what} got no answer within {:?}", self.timeout))),
        }
    }

    fn flow_key(&self, flow: &str) -> Result<String, StoreError> {
        if flow.len() > MAX_ID_LEN {
            return Err(StoreError::Invalid { detail: "a flow id is too long".to_owned() });
        }
        Ok(format!("{}:flow:{flow}", self.tag(flow)))
    }

    /// Runs one of the record scripts on `keys` with these arguments; the answer is a string.
    async fn script(
        &self,
        what: &str,
        script: &Script,
        keys: &[&str],
        args: &[&str],
    ) -> Result<Option<String>, StoreError> {
        self.invoke(what, script, keys, args).await
    }

    /// Runs a script on `keys` with these arguments, its answer read as a `T`; with
    /// [`RedisStoreBuilder::wait_for_replicas`], then waits for the replicas of the node that ran
    /// it (every script writes, if only an extended TTL).
    async fn invoke<T: FromRedisValue>(
        &self,
        what: &str,
        script: &Script,
        keys: &[&str],
        args: &[&str],
    ) -> Result<T, StoreError> {
        let answer = self
            .run(what, |mut c| {
                let mut invocation = script.prepare_invoke();
                for key in keys {
                    invocation.key(*key);
                }
                for arg in args {
                    invocation.arg(*arg);
                }
                let first = keys.first().copied().unwrap_or_default();
                async move {
                    let answer: T = invocation.invoke_async(&mut c).await?;
                    let acked = match self.replica_acks {
                        Some((replicas, within)) => Some((c.wait_replicas(first, replicas, within).await?, replicas)),
                        None => None,
                    };
                    Ok((answer, acked))
                }
            })
            .await?;
        match answer {
            (_, Some((acked, wanted))) if acked < wanted => Err(StoreError::Unavailable {
                store: self.endpoint.clone(),
                detail: format!("{what}: written, but {acked} of {wanted} replicas acknowledged it in time"),
            }),
            (answer, _) => Ok(answer),
        }
    }

    /// Runs a script on a flow's hash (and the flow live set).
    async fn flow_script(
        &self,
        what: &str,
        script: &Script,
        flow: &str,
        args: &[&str],
    ) -> Result<Option<String>, StoreError> {
        let hash = self.flow_key(flow)?;
        self.script(what, script, &[&hash, &self.live_flows(flow)], args).await
    }

    fn json(&self, text: &str) -> Result<Value, StoreError> {
        serde_json::from_str(text).map_err(|e| self.invalid(format!("a ledger record is not JSON: {e}")))
    }

    /// One atomic `take` script run: consumes a done record.
    async fn take_now(&self, id: &str) -> Result<UrlStatus, StoreError> {
        let key = self.url_key(id);
        let value = self.script("take", &self.take_script, &[&key, &self.live_urls(id)], &[DONE]).await?;
        self.decode(value)
    }

    fn decode(&self, value: Option<String>) -> Result<UrlStatus, StoreError> {
        match value.as_deref() {
            None => Ok(UrlStatus::Unknown),
            Some(pending) if pending == PENDING || pending.starts_with(PENDING_FOR) => Ok(UrlStatus::Pending),
            Some(done) => match done.strip_prefix(DONE) {
                Some(json) => serde_json::from_str(json)
                    .map(UrlStatus::Completed)
                    .map_err(|e| self.invalid(format!("a completion record is not JSON: {e}"))),
                None => Err(self.invalid("an unexpected completion record".to_owned())),
            },
        }
    }
}

impl UrlCompletions for RedisStore {
    fn register(&self, id: &str, ttl: Duration, owner: Option<&str>) -> StoreFuture<'_, ()> {
        let key = self.url_key(id);
        let pending = owner.map_or_else(|| PENDING.to_owned(), |owner| format!("{PENDING_FOR}{owner}"));
        let owner_key = self.owner_key(id, owner.unwrap_or_default());
        let quota = owner.map_or_else(String::new, |_| self.shard_cap(self.max_url_records_per_principal).to_string());
        let live = self.live_urls(id);
        Box::pin(async move {
            if id_too_long(&key) {
                return Err(StoreError::Invalid { detail: "a URL-mode id is too long".to_owned() });
            }
            // PX 0 is an error in Redis; `ttl_ms` gives a step at least a millisecond.
            let args = [pending.as_str(), &ttl_ms(ttl), &self.shard_cap(self.max_url_records).to_string(), &quota];
            let keys = [key.as_str(), &live, &owner_key];
            match self.script("register", &self.register_script, &keys, &args).await?.as_deref() {
                Some("+") => Ok(()),
                Some("F") => Err(StoreError::Full { kind: RecordKind::Url, cap: self.max_url_records }),
                Some("Q") => Err(StoreError::Quota { kind: RecordKind::Url, cap: self.max_url_records_per_principal }),
                _ => Err(self.invalid("an unexpected register answer".to_owned())),
            }
        })
    }

    fn release(&self, id: &str) {
        // `release` may not wait: the DEL runs on its own, bounded, and a failure only leaves the
        // record to its expiry. Outside a Tokio runtime there is nothing to run it on: same result.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let key = self.url_key(id);
        let mut connection = self.connection.clone();
        let timeout = self.timeout;
        let mut pipe = redis::pipe();
        pipe.atomic().del(&key).ignore().zrem(self.live_urls(id), &key).ignore();
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
            let key = self.url_key(&id);
            let value = format!("{DONE}{outcome}");
            let args = [value.as_str(), &self.channel, &id, PENDING, &owned];
            let done: i64 = self.invoke("complete", &self.complete_script, &[&key], &args).await?;
            Ok(done == 1)
        })
    }

    fn status(&self, id: &str) -> StoreFuture<'_, UrlStatus> {
        let id = id.to_owned();
        Box::pin(async move {
            if id.len() > MAX_ID_LEN {
                return Ok(UrlStatus::Unknown);
            }
            let key = self.url_key(&id);
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
}

impl FlowLedger for RedisStore {
    fn claim(
        &self,
        flow: &str,
        owner: &FlowOwner,
        at: &Slot,
        by: &ClaimToken,
        lease: Duration,
        ttl: Duration,
    ) -> StoreFuture<'_, Claim> {
        let (flow, field, token, owner) = (flow.to_owned(), at.name(), by.as_str().to_owned(), owner.clone());
        Box::pin(async move {
            let cap = self.shard_cap(self.max_flow_records).to_string();
            let quota = self.shard_cap(self.max_flow_records_per_principal).to_string();
            let args = [field.as_str(), &ttl_ms(ttl), &cap, &token, &ttl_ms(lease), &quota];
            match self.owned_flow_script("claim", &self.claim_script, &flow, &owner, &args).await?.as_deref() {
                Some("+") => Ok(Claim::Run),
                Some("F") => Err(StoreError::Full { kind: RecordKind::Flow, cap: self.max_flow_records }),
                Some("Q") => Err(self.flow_quota()),
                Some("?") => Ok(Claim::Busy),
                Some("!") => Ok(Claim::Finished),
                Some(done) => match done.strip_prefix('=') {
                    Some(json) => self.json(json).map(Claim::Done),
                    None => Err(self.invalid("an unexpected ledger record".to_owned())),
                },
                None => Err(self.invalid("the claim script answered nothing".to_owned())),
            }
        })
    }

    fn record(&self, flow: &str, slot: &Slot, token: &ClaimToken, value: Value, ttl: Duration) -> StoreFuture<'_, ()> {
        let (flow, field, token) = (flow.to_owned(), slot.name(), token.as_str().to_owned());
        Box::pin(async move {
            let value = format!("={value}");
            let args = [field.as_str(), &ttl_ms(ttl), &value, &token];
            match self.flow_script("record", &self.record_script, &flow, &args).await?.as_deref() {
                Some("+") => Ok(()),
                Some("L") => Err(StoreError::ClaimLost),
                _ => Err(self.invalid("an unexpected record answer".to_owned())),
            }
        })
    }

    fn abandon(&self, flow: &str, slot: &Slot, token: &ClaimToken) -> StoreFuture<'_, ()> {
        let (flow, field, token) = (flow.to_owned(), slot.name(), token.as_str().to_owned());
        Box::pin(
            async move { self.flow_script("abandon", &self.abandon_script, &flow, &[&field, &token]).await.map(drop) },
        )
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
        Box::pin(async move {
            let (ttl, cap) = (ttl_ms(ttl), self.shard_cap(self.max_flow_records).to_string());
            let quota = self.shard_cap(self.max_flow_records_per_principal).to_string();
            let mut args: Vec<&str> = vec![&answers, &ttl, &cap, &quota];
            args.extend(seen.iter().map(String::as_str));
            match self.owned_flow_script("finish", &self.finish_script, &flow, &owner, &args).await?.as_deref() {
                Some("R") => Ok(Finish::Recorded),
                Some("F") => Err(StoreError::Full { kind: RecordKind::Flow, cap: self.max_flow_records }),
                Some("Q") => Err(self.flow_quota()),
                Some("C") => Ok(Finish::Conflict),
                Some(already) => match already.strip_prefix('A') {
                    Some(json) => self.json(json).map(Finish::Already),
                    None => Err(self.invalid("an unexpected finish answer".to_owned())),
                },
                None => Err(self.invalid("the finish script answered nothing".to_owned())),
            }
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

    fn extend(&self, flow: &str, ttl: Duration) -> StoreFuture<'_, ()> {
        let flow = flow.to_owned();
        Box::pin(async move { self.flow_script("extend", &self.extend_script, &flow, &[&ttl_ms(ttl)]).await.map(drop) })
    }

    fn snapshot(&self, flow: &str, ttl: Duration) -> StoreFuture<'_, LedgerSnapshot> {
        let flow = flow.to_owned();
        Box::pin(async move {
            let (hash, ttl) = (self.flow_key(&flow)?, ttl_ms(ttl));
            let fields: Vec<String> =
                self.invoke("snapshot", &self.snapshot_script, &[&hash, &self.live_flows(&flow)], &[&ttl]).await?;
            let mut snapshot = LedgerSnapshot::default();
            for pair in fields.chunks(2) {
                let [field, json] = pair else { return Err(self.invalid("an odd ledger snapshot".to_owned())) };
                let value = self.json(json)?;
                if field == "final" {
                    snapshot.finished = Some(value);
                } else {
                    let slot =
                        Slot::from_name(field).ok_or_else(|| self.invalid("an unknown ledger slot".to_owned()))?;
                    snapshot.recorded.insert(slot, value);
                }
            }
            Ok(snapshot)
        })
    }
}

/// Whether a record key is longer than an id of ours could make it.
fn id_too_long(key: &str) -> bool {
    key.len() > MAX_ID_LEN * 2
}

fn ttl_ms(ttl: Duration) -> String {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1).to_string()
}

/// A principal's name in a key: a digest (principals can be long).
fn digest(owner: &str) -> String {
    URL_SAFE_NO_PAD.encode(&Sha256::digest(owner.as_bytes())[..16])
}

/// `redis at HOST:PORT` (or `redis cluster at HOST:PORT,…`) for `url`, without credentials.
#[cfg(test)]
fn describe(url: &str) -> Result<String, StoreError> {
    conn::target(url).map(|target| target.endpoint)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, reason = "a failing test should stop loudly")]
mod tests {
    use super::*;

    #[test]
    fn describes_the_endpoint_without_credentials() {
        assert_eq!(describe("redis://:secret@10.1.2.3:7000/2").unwrap(), "redis at 10.1.2.3:7000");
        assert_eq!(describe("redis://cache").unwrap(), "redis at cache:6379");
        assert!(describe("rediss://cache:6380").unwrap_err().to_string().contains("TLS is not built in"));
        assert!(describe("not a url").is_err());
        assert_eq!(
            describe("redis+cluster://:secret@10.0.0.1:7000,10.0.0.2:7001").unwrap(),
            "redis cluster at 10.0.0.1:7000,10.0.0.2:7001"
        );
        let refused = describe("redis+cluster://:secret@10.0.0.1:7000/3").unwrap_err().to_string();
        assert!(refused.contains("one database") && !refused.contains("secret"), "{refused}");
        assert!(describe("redis+cluster://").is_err());
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
