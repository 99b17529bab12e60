//! [`RedisStoreBuilder`]: a [`RedisStore`]'s settings, and connecting it.

use std::sync::Arc;
use std::time::Duration;

use redis::Script;
use tokio::sync::watch;

use super::wake::{AbortOnDrop, Waiters, subscribe_forever};
use super::{
    ABANDON_SCRIPT, CLAIM_SCRIPT, COMPLETE_SCRIPT, EXTEND_SCRIPT, FINISH_SCRIPT, LIB_LUA, RECORD_SCRIPT,
    REGISTER_SCRIPT, RedisStore, SNAPSHOT_SCRIPT, TAKE_SCRIPT, conn, tasks,
};
use crate::server::store::StoreError;
use crate::server::store::memory::{
    DEFAULT_MAX_FLOW_RECORDS_PER_PRINCIPAL, DEFAULT_MAX_RECORDS, DEFAULT_MAX_URL_RECORDS_PER_PRINCIPAL,
};

/// Builds a [`RedisStore`].
#[derive(Debug, Clone)]
pub struct RedisStoreBuilder {
    url: String,
    prefix: String,
    command_timeout: Duration,
    max_url_records: usize,
    max_flow_records: usize,
    max_url_records_per_principal: usize,
    max_flow_records_per_principal: usize,
    cluster_shards: u32,
    replica_acks: Option<(u32, Duration)>,
}

impl RedisStoreBuilder {
    pub(super) fn new(url: String) -> Self {
        RedisStoreBuilder {
            url,
            prefix: "elicit".to_owned(),
            command_timeout: Duration::from_secs(2),
            max_url_records: DEFAULT_MAX_RECORDS,
            max_flow_records: DEFAULT_MAX_RECORDS,
            max_url_records_per_principal: DEFAULT_MAX_URL_RECORDS_PER_PRINCIPAL,
            max_flow_records_per_principal: DEFAULT_MAX_FLOW_RECORDS_PER_PRINCIPAL,
            cluster_shards: 16,
            replica_acks: None,
        }
    }

    /// Prefixes every key and the channel (default `elicit`), so several deployments can share one
    /// Redis. Instances that must see each other's records use the same prefix.
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The longest any one store operation may take before it fails with a [`StoreError`]
    /// (default 2 s). Waiting in [`UrlCompletions::take`](crate::server::store::UrlCompletions::take) is bounded by its own timeout instead.
    pub fn command_timeout(mut self, timeout: Duration) -> Self {
        self.command_timeout = timeout;
        self
    }

    /// Caps the live records of each kind at `max` (see the two setters below).
    pub fn max_records(self, max: usize) -> Self {
        self.max_url_records(max).max_flow_records(max)
    }

    /// The most live URL-mode steps (default [`DEFAULT_MAX_RECORDS`]); one more is refused with
    /// [`StoreError::Full`] until some are taken or expire. The count lives in Redis: every
    /// instance on the same prefix shares it, and they should agree on the cap.
    pub fn max_url_records(mut self, max: usize) -> Self {
        self.max_url_records = max;
        self
    }

    /// The most live flow records (default [`DEFAULT_MAX_RECORDS`]); a flow's first record beyond
    /// it is refused with [`StoreError::Full`].
    pub fn max_flow_records(mut self, max: usize) -> Self {
        self.max_flow_records = max;
        self
    }

    /// The most live URL-mode steps one principal owns (default
    /// [`DEFAULT_MAX_URL_RECORDS_PER_PRINCIPAL`]); one more is refused with [`StoreError::Quota`].
    pub fn max_url_records_per_principal(mut self, max: usize) -> Self {
        self.max_url_records_per_principal = max;
        self
    }

    /// The most live flow records one [`FlowOwner`](crate::server::store::FlowOwner) holds
    /// (default [`DEFAULT_MAX_FLOW_RECORDS_PER_PRINCIPAL`]), so one principal or client cannot
    /// fill [`max_flow_records`](Self::max_flow_records) for everyone: a flow's first record
    /// beyond it is refused with [`StoreError::Quota`] of
    /// [`RecordKind::Flow`](crate::server::store::RecordKind::Flow). A record counts, finished or
    /// not, until it expires (or an abandoned claim leaves it empty); the count lives in Redis,
    /// shared by every instance on the prefix (split over the shards on a cluster, as every cap
    /// is). Records an earlier version wrote belong to no one.
    pub fn max_flow_records_per_principal(mut self, max: usize) -> Self {
        self.max_flow_records_per_principal = max;
        self
    }

    /// On a cluster (`redis+cluster://`), how many hash-tag shards the records spread over
    /// (default 16; at least 1). Every key of one record, and the sets that count it, carry its
    /// shard's tag: every script touches one slot. Each cap and quota is split evenly over the
    /// shards and counted in each (`⌈cap / shards⌉` per shard), so the store holds at most
    /// `shards - 1` records above a cap, and may refuse a record a little before the cap is
    /// reached when its shard is full. One shard counts exactly, on one master.
    pub fn cluster_shards(mut self, shards: u32) -> Self {
        self.cluster_shards = shards.max(1);
        self
    }

    /// Every write (a step registered, completed or taken; a ledger slot claimed or recorded; a
    /// flow finished; a task's record) waits until `replicas` replicas acknowledged it (Redis'
    /// `WAIT`, at most `within`), and fails with [`StoreError::Unavailable`] when fewer did.
    /// For deployments that fail over to a replica: a write acknowledged this way survives the
    /// loss of its master when the replica that took it is the one promoted (Redis promotes
    /// the replica with the most replicated data). The write itself may still have happened
    /// when the store reports the error; the flow's next round reads it. Off by default.
    pub fn wait_for_replicas(mut self, replicas: u32, within: Duration) -> Self {
        self.replica_acks = (replicas > 0).then_some((replicas, within));
        self
    }

    /// Connects, checks that Redis answers, and starts the subscriber that wakes waiting retries.
    ///
    /// Fails with a [`StoreError`] when the URL is neither a plain `redis://` URL nor a
    /// `redis+cluster://` list of nodes (TLS is not built in), or Redis does not answer a `PING`
    /// within the command timeout. Must run inside a Tokio runtime, which the subscriber task is
    /// spawned on.
    pub async fn connect(self) -> Result<RedisStore, StoreError> {
        let target = conn::target(&self.url)?;
        let endpoint = target.endpoint.clone();
        let unavailable = |detail: String| StoreError::Unavailable { store: endpoint.clone(), detail };
        let timeout = self.command_timeout;
        let (connection, clients) = conn::open(&target, timeout).await.map_err(unavailable)?;
        let waiters = Arc::new(Waiters::default());
        let (live_tx, live) = watch::channel(false);
        let channel = format!("{}:url-completed", self.prefix);
        let subscriber = tokio::spawn(subscribe_forever(clients, channel.clone(), waiters.clone(), live_tx, timeout));
        let script = |body: &str| Script::new(&format!("{LIB_LUA}{body}"));
        let store = RedisStore {
            connection,
            complete_script: Script::new(COMPLETE_SCRIPT),
            take_script: Script::new(TAKE_SCRIPT),
            register_script: script(REGISTER_SCRIPT),
            claim_script: script(CLAIM_SCRIPT),
            record_script: script(RECORD_SCRIPT),
            abandon_script: script(ABANDON_SCRIPT),
            finish_script: script(FINISH_SCRIPT),
            extend_script: script(EXTEND_SCRIPT),
            snapshot_script: script(SNAPSHOT_SCRIPT),
            task_scripts: tasks::TaskScripts::new(),
            shards: if target.cluster { self.cluster_shards } else { 0 },
            prefix: self.prefix,
            replica_acks: self.replica_acks,
            max_url_records: self.max_url_records,
            max_flow_records: self.max_flow_records,
            max_url_records_per_principal: self.max_url_records_per_principal,
            max_flow_records_per_principal: self.max_flow_records_per_principal,
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
            return Err(store.invalid(format!("answered PING with {pong:?}")));
        }
        // Give the subscriber a moment so the first waiters need not poll; not an error if it is
        // slow, waiters poll until it is live.
        let mut live = store.live.clone();
        let _ = tokio::time::timeout(timeout, live.wait_for(|live| *live)).await;
        Ok(store)
    }
}
