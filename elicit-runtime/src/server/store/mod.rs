//! What must not be forked lives here: the two narrow store traits and the types they speak.
//!
//! - [`UrlCompletions`]: out-of-band completion of URL-mode steps. A payment page needs this half
//!   only: it completes the step its URL names.
//! - [`FlowLedger`]: the exactly-once bookkeeping of flows. [`Flow::once`](super::Flow::once)
//!   claims a [`Slot`] with an owner token and a lease, records its value, or abandons the claim;
//!   a flow of several rounds records its finish; a replayed or forked state reads what the flow
//!   did from here, in one [`FlowLedger::snapshot`] as its round opens.
//!
//! Three implementations keep one contract, and one test suite runs against each:
//! [`InProcessStore`] (one process, gone with it), with the `sqlite` feature `SqliteStore` (one
//! process, its records in a file that outlives it) and, with the `redis` feature, `RedisStore`
//! (every instance that connects to the same Redis with the same prefix).
//!
//! The contract both keep is written on [`Store`].

mod memory;
#[cfg(feature = "redis")]
mod redis;
#[cfg(feature = "sqlite")]
mod sqlite;
mod tasks;

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::Rng as _;
use serde_json::{Value, value::RawValue};

pub use memory::{
    DEFAULT_MAX_FLOW_RECORDS_PER_PRINCIPAL, DEFAULT_MAX_RECORDS, DEFAULT_MAX_TASK_RECORDS,
    DEFAULT_MAX_URL_RECORDS_PER_PRINCIPAL, InProcessStore, InProcessTasks,
};
#[cfg(feature = "redis")]
pub use redis::{RedisStore, RedisStoreBuilder};
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteStore, SqliteStoreBuilder, Synchronous};
pub use tasks::{StoredJson, TaskLimits, TaskRecord, TaskRecords, TaskView};
pub(super) use tasks::{millis, millis_of};

/// A boxed future returned by the store traits' methods (the traits stay object-safe).
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

/// The kinds of record a store holds, each under its own cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RecordKind {
    /// A URL-mode step.
    Url,
    /// A flow's ledger record (its slots and its finish).
    Flow,
}

impl fmt::Display for RecordKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RecordKind::Url => "URL-mode",
            RecordKind::Flow => "flow",
        })
    }
}

/// Why a store operation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreError {
    /// The store could not be reached or did not answer in time.
    Unavailable {
        /// Which store (`redis at HOST:PORT`), never its credentials.
        store: String,
        /// What failed.
        detail: String,
    },
    /// The store holds as many live records of this kind as it may (a limit of the deployment).
    Full {
        /// The kind of record refused.
        kind: RecordKind,
        /// The configured cap.
        cap: usize,
    },
    /// One owner holds as many live records of this kind as one owner may: URL-mode steps per
    /// principal, flow records per [`FlowOwner`].
    Quota {
        /// The kind of record refused.
        kind: RecordKind,
        /// The configured cap per owner.
        cap: usize,
    },
    /// Too many tasks are running: `cap` over all principals, or `cap` for this principal when
    /// `per_principal`.
    TaskCap {
        /// The configured cap.
        cap: usize,
        /// Whether the cap is the one per principal.
        per_principal: bool,
    },
    /// A claim was no longer held by the token that recorded under it (its lease had passed and
    /// another round took the slot over).
    ClaimLost,
    /// The store answered something this library did not write, or an id it will not accept.
    Invalid {
        /// What was wrong.
        detail: String,
    },
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Unavailable { store, detail } => write!(f, "completion store: {store}: {detail}"),
            StoreError::Full { kind, cap } => {
                write!(f, "completion store: full: {cap} live {kind} records (the configured cap); try again later")
            }
            StoreError::Quota { kind: RecordKind::Flow, cap } => write!(
                f,
                "completion store: this user holds {cap} live flow records (the configured cap per principal); finish some flows or let them expire first"
            ),
            StoreError::Quota { cap, .. } => write!(
                f,
                "completion store: this user holds {cap} pending URL-mode steps (the configured cap per principal); finish or let some expire first"
            ),
            StoreError::TaskCap { cap, per_principal: true } => write!(
                f,
                "too many tasks: this user runs {cap} tasks (the configured cap per principal); wait for one to finish or cancel one"
            ),
            StoreError::TaskCap { cap, per_principal: false } => {
                write!(f, "too many tasks: the server runs {cap} tasks (the configured cap); try again later")
            }
            StoreError::ClaimLost => {
                f.write_str("completion store: the claim's lease passed and another round took the computation over")
            }
            StoreError::Invalid { detail } => write!(f, "completion store: {detail}"),
        }
    }
}

impl std::error::Error for StoreError {}

/// A place in a flow's ledger: the value of a `once`, or the completion a URL-mode step took.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Slot {
    /// The value of [`Flow::once`](super::Flow::once) under this key.
    Once(String),
    /// The completion the URL-mode step under this key took.
    Url(String),
}

impl Slot {
    /// The slot's name in a store: `o:` or `u:` followed by the key. Stable: records written under
    /// it are read by later versions.
    pub fn name(&self) -> String {
        match self {
            Slot::Once(key) => format!("o:{key}"),
            Slot::Url(key) => format!("u:{key}"),
        }
    }

    /// The key the handler gave.
    pub fn key(&self) -> &str {
        match self {
            Slot::Once(key) | Slot::Url(key) => key,
        }
    }

    /// The slot a store names `name` ([`Slot::name`]'s inverse); `None` for a name it never gives.
    pub fn from_name(name: &str) -> Option<Slot> {
        if let Some(key) = name.strip_prefix("o:") {
            Some(Slot::Once(key.to_owned()))
        } else {
            name.strip_prefix("u:").map(|key| Slot::Url(key.to_owned()))
        }
    }
}

/// The random owner of a claim: only it may record or abandon the slot.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClaimToken(String);

impl ClaimToken {
    /// 128 random bits.
    pub fn mint() -> Self {
        ClaimToken(mint_id())
    }

    /// The token as stores keep it (URL-safe, no `:`).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Whom a flow's ledger record counts against: each owner may hold at most a store's
/// `max_flow_records_per_principal` live flow records (for example
/// [`InProcessStore::max_flow_records_per_principal`]), so that no one fills the store's cap of
/// flow records and locks everyone else out.
///
/// The engine names the owner from each round's request ([`FlowOwner::of`]), and a record counts
/// against the owner of the call that made it (the flow's first round to touch the store, as a
/// rule): the request's authenticated principal; for an anonymous request the client's peer
/// address when the transport knows it ([`Request::client`](super::Request::client), as the cap on
/// anonymous tasks keys it); otherwise
/// [`FlowOwner::Anonymous`], one owner shared by every anonymous caller the transport cannot tell
/// apart. That last rule is the safe one: a caller nobody can name gets no quota of its own to
/// multiply, so anonymous traffic together holds at most one owner's share of the store and can
/// never lock an authenticated principal out (it can crowd other unnamed anonymous callers, which
/// serving with connect info avoids). Peer addresses are a weaker name (one host may hold many
/// addresses): a deployment open to anonymous callers on the internet also wants a rate limit in
/// front of the server.
///
/// ```
/// use elicit_runtime::server::store::FlowOwner;
///
/// assert_eq!(FlowOwner::of(Some("alice"), Some("10.0.0.7")), FlowOwner::Principal("alice".into()));
/// assert_eq!(FlowOwner::of(None, Some("10.0.0.7")), FlowOwner::Client("10.0.0.7".into()));
/// assert_eq!(FlowOwner::of(None, None), FlowOwner::Anonymous);
/// // A principal and an address never share a count, whatever their text.
/// assert_ne!(FlowOwner::Principal("10.0.0.7".into()).name(), FlowOwner::Client("10.0.0.7".into()).name());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FlowOwner {
    /// An authenticated principal.
    Principal(String),
    /// An anonymous client, by its peer address.
    Client(String),
    /// Every anonymous caller whose address is unknown, together.
    #[default]
    Anonymous,
}

impl FlowOwner {
    /// The owner of a request's flow: its principal, else its client (peer address), else
    /// [`FlowOwner::Anonymous`].
    pub fn of(principal: Option<&str>, client: Option<&str>) -> FlowOwner {
        match (principal, client) {
            (Some(principal), _) => FlowOwner::Principal(principal.to_owned()),
            (None, Some(client)) => FlowOwner::Client(client.to_owned()),
            (None, None) => FlowOwner::Anonymous,
        }
    }

    /// The owner's name in a store: `p:` and the principal, `c:` and the address, or `a`. Stable:
    /// records written under it are counted by later versions.
    pub fn name(&self) -> String {
        match self {
            FlowOwner::Principal(principal) => format!("p:{principal}"),
            FlowOwner::Client(client) => format!("c:{client}"),
            FlowOwner::Anonymous => "a".to_owned(),
        }
    }
}

/// What [`FlowLedger::claim`] found.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// The caller holds the slot: run the computation, then record or abandon it.
    Run,
    /// Recorded earlier: the value, to reuse as-is.
    Done(Value),
    /// Another token holds the slot under a live lease.
    Busy,
    /// The flow has finished: nothing more may run in it.
    Finished,
}

/// What a flow's ledger holds for good, as [`FlowLedger::snapshot`] read it: what a round may use
/// without asking the store again, since neither changes once written.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LedgerSnapshot {
    /// The answers the flow finished with, if it has finished.
    pub finished: Option<Value>,
    /// The value of every recorded slot (a slot only claimed is not here).
    pub recorded: HashMap<Slot, Value>,
}

/// What [`FlowLedger::finish`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Finish {
    /// The answers are recorded as the flow's final ones.
    Recorded,
    /// The flow had already finished, with these answers.
    Already(Value),
    /// Another round of the flow recorded or holds a slot this round did not see.
    Conflict,
}

/// Out-of-band completion of URL-mode steps: what a page completing a step needs. The contract
/// is written on [`Store`].
///
/// ```
/// use std::time::Duration;
///
/// use elicit_runtime::server::store::{InProcessStore, UrlCompletions, UrlStatus};
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
/// # Ok::<(), elicit_runtime::server::store::StoreError>(())
/// # }).unwrap();
/// ```
pub trait UrlCompletions: Send + Sync {
    /// Registers `id` as pending for `ttl`, owned by `owner` (the principal of the flow that
    /// minted it) when there is one; a live `id` keeps its record.
    fn register(&self, id: &str, ttl: Duration, owner: Option<&str>) -> StoreFuture<'_, ()>;

    /// Records completion of a pending id by `by` (the principal the page authenticated).
    /// `false` when the id is unknown, expired or completed, or owned by someone other than `by`.
    fn complete(&self, id: &str, outcome: Value, by: Option<&str>) -> StoreFuture<'_, bool>;

    /// The current status of `id`.
    fn status(&self, id: &str) -> StoreFuture<'_, UrlStatus>;

    /// Waits up to `timeout` for `id` to complete and consumes the completion; pending and
    /// unknown steps are returned as they are.
    fn take(&self, id: &str, timeout: Duration) -> StoreFuture<'_, UrlStatus>;

    /// Forgets `id` now, without waiting (best effort: a failure leaves it to expire).
    fn release(&self, id: &str);
}

/// The exactly-once bookkeeping of flows; the contract is written on [`Store`].
pub trait FlowLedger: Send + Sync {
    /// Claims the slot `at` of `flow` for the token `by`, for `lease`. A claim that creates the
    /// flow's record counts it against `owner`'s quota.
    fn claim(
        &self,
        flow: &str,
        owner: &FlowOwner,
        at: &Slot,
        by: &ClaimToken,
        lease: Duration,
        ttl: Duration,
    ) -> StoreFuture<'_, Claim>;

    /// Records the value of a slot held under `token`.
    fn record(&self, flow: &str, slot: &Slot, token: &ClaimToken, value: Value, ttl: Duration) -> StoreFuture<'_, ()>;

    /// Frees a slot held under `token` without a value.
    fn abandon(&self, flow: &str, slot: &Slot, token: &ClaimToken) -> StoreFuture<'_, ()>;

    /// Records that `flow` finished with `answers` (a JSON object, as the engine wrote it: a store
    /// keeps the text as it is), having seen the slots `seen`. A finish that creates the flow's
    /// record counts it against `owner`'s quota.
    fn finish(
        &self,
        flow: &str,
        owner: &FlowOwner,
        answers: &RawValue,
        seen: &[Slot],
        ttl: Duration,
    ) -> StoreFuture<'_, Finish>;

    /// The answers `flow` finished with, if it has finished.
    fn finished(&self, flow: &str) -> StoreFuture<'_, Option<Value>>;

    /// What `flow` holds for good — its finish and its recorded slots — read in one step, its
    /// record kept at least `ttl` from now as [`extend`](Self::extend) keeps it.
    fn snapshot(&self, flow: &str, ttl: Duration) -> StoreFuture<'_, LedgerSnapshot>;

    /// Keeps `flow`'s record at least `ttl` from now.
    fn extend(&self, flow: &str, ttl: Duration) -> StoreFuture<'_, ()>;
}

/// Both halves: what an engine is given ([`EngineBuilder::store`](super::EngineBuilder::store)).
/// Implemented for every type with both.
///
/// # The contract
///
/// URL completions:
/// - `register(id, ttl, owner)` creates a pending step that lives `ttl`. Registering an id that
///   is live already changes nothing (a replay of a state before the step reuses its record).
///   New steps count against the store's caps; a step over a cap is refused with
///   [`StoreError::Full`] or [`StoreError::Quota`].
/// - `complete(id, outcome, by)` turns a pending step into a completed one, once, and only for
///   its owner when it has one: `false` for an unknown, expired or completed step, or another
///   principal (or none) completing an owned one.
/// - `take(id, wait)` waits up to `wait` for completion and consumes it: a completion is taken
///   exactly once. `status(id)` reads without consuming. `release(id)` forgets a step at once.
///
/// Flow ledger, per flow id (minted by the engine, 128 random bits, sealed in the flow's state):
/// - `claim(flow, owner, slot, token, lease, ttl)`: [`Claim::Run`] when the slot is free, when its
///   claim's lease has passed (a crashed claimant heals), or when it is held under this very
///   `token` (a retried claim carries on; the lease is renewed); [`Claim::Done`] with the value
///   once recorded; [`Claim::Busy`] while another token holds a live lease; [`Claim::Finished`]
///   when the flow has finished and the slot holds no value.
/// - `record(flow, slot, token, value, ttl)` stores the value of a slot held under `token` (or
///   already holding this very value: a retried record); any other case is
///   [`StoreError::ClaimLost`].
/// - `abandon(flow, slot, token)` frees a slot held under `token`; anything else is left alone.
///   A flow record left with nothing in it is gone.
/// - `finish(flow, owner, answers, seen, ttl)`: [`Finish::Already`] with the answers the flow finished
///   with when it has; [`Finish::Conflict`] when a slot the round did not see is recorded or held
///   under a live lease; otherwise the answers are recorded, [`Finish::Recorded`].
/// - `finished(flow)` reads the finish. `extend(flow, ttl)` makes the record live at least `ttl`
///   from now (nothing when there is none).
/// - `snapshot(flow, ttl)` reads, in one step, the finish and the value of every recorded slot
///   (the [`LedgerSnapshot`]; empty when there is no record), and extends the record as `extend`
///   does. Both are final once written: a later `claim` of a slot in the snapshot is
///   [`Claim::Done`] with that value, and a later `finish` of a flow finished in it is
///   [`Finish::Already`] with those answers.
/// - Every call but `finished` and `abandon` extends the flow's record to at least `ttl` from now,
///   never shortens it; a call that creates a record counts against the store's cap of flow
///   records (`extend` and `snapshot` create none), refused with [`StoreError::Full`] over it.
/// - A record is owned by the [`FlowOwner`] of the `claim` or `finish` that created it, and counts
///   against that owner's quota of flow records for as long as it lives, finished or not (a
///   finished record is kept for replays, and finished records are what fills a store): a record
///   that would put its owner over the quota is refused with [`StoreError::Quota`] of
///   [`RecordKind::Flow`]. A record that expires, or that an `abandon` leaves empty, frees its
///   place; calls on an existing record never check the quota, whoever makes them.
///
/// A store that cannot answer says so with [`StoreError::Unavailable`]; the engine then fails
/// the round, it never skips a check.
pub trait Store: UrlCompletions + FlowLedger {}

impl<T: UrlCompletions + FlowLedger + ?Sized> Store for T {}

/// 128 random bits, URL-safe: flows', tasks' and claims' ids, minted on every flow.
///
/// The bits come from the thread's CSPRNG (`rand`'s `ThreadRng`: ChaCha12, seeded from the OS and
/// reseeded from it every 64 KiB of output), not from a system call per id. Ids must never
/// repeat, and a generator's state copied (a process forked, a VM restored from a snapshot) would
/// draw the same bits again; the copies differ in their process id or in the time, so both are
/// mixed into the last 8 bytes. The result stays uniform and unpredictable: known values XORed
/// into independent random bits.
pub(super) fn mint_id() -> String {
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let salt = (u64::from(std::process::id()) << 32) ^ (nanos as u64);
    for (byte, salt) in bytes[8..].iter_mut().zip(salt.to_le_bytes()) {
        *byte ^= salt;
    }
    URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn minted_ids_are_128_bits_each_one_of_a_kind_from_every_thread() {
        let threads: Vec<_> =
            (0..4).map(|_| std::thread::spawn(|| (0..10_000).map(|_| mint_id()).collect::<Vec<_>>())).collect();
        let mut seen = HashSet::new();
        for thread in threads {
            for id in thread.join().unwrap() {
                assert_eq!(URL_SAFE_NO_PAD.decode(&id).unwrap().len(), 16, "{id}");
                assert!(seen.insert(id), "an id was minted twice");
            }
        }
        // Every bit varies: no byte is stuck at one value across the ids.
        let ids: Vec<Vec<u8>> = seen.iter().map(|id| URL_SAFE_NO_PAD.decode(id).unwrap()).collect();
        for byte in 0..16 {
            let values: HashSet<u8> = ids.iter().map(|id| id[byte]).collect();
            assert!(values.len() > 200, "byte {byte} takes only {} values", values.len());
        }
    }
}
