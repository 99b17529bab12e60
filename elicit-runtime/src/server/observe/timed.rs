//! Store latency: the engine's store and task records, wrapped once as the engine is built, so
//! every call the engine (and its pages) makes through the store traits is timed in one place,
//! whatever the store — never inside a store.
//!
//! `elicit_store_seconds` is labelled by `store` (the trait called: `completions`, `ledger` or
//! `tasks`) and `op` (the method). `take` and `wait` include the time they wait by design.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::server::store::{
    Claim, ClaimToken, Finish, FlowLedger, FlowOwner, LedgerSnapshot, Slot, Store, StoreFuture, TaskLimits, TaskRecord,
    TaskRecords, TaskView, UrlCompletions, UrlStatus,
};

/// `store`, every call timed.
pub(in crate::server) fn timed_store(store: Arc<dyn Store>) -> Arc<dyn Store> {
    Arc::new(TimedStore(store))
}

/// `tasks`, every call timed.
pub(in crate::server) fn timed_tasks(tasks: Arc<dyn TaskRecords>) -> Arc<dyn TaskRecords> {
    Arc::new(TimedTasks(tasks))
}

struct TimedStore(Arc<dyn Store>);

struct TimedTasks(Arc<dyn TaskRecords>);

/// Records how long `work` took.
async fn timed<T>(store: &'static str, op: &'static str, work: impl Future<Output = T>) -> T {
    let started = Instant::now();
    let done = work.await;
    metrics::histogram!("elicit_store_seconds", "store" => store, "op" => op).record(started.elapsed().as_secs_f64());
    done
}

impl UrlCompletions for TimedStore {
    fn register(&self, id: &str, ttl: Duration, owner: Option<&str>) -> StoreFuture<'_, ()> {
        Box::pin(timed("completions", "register", self.0.register(id, ttl, owner)))
    }

    fn complete(&self, id: &str, outcome: Value, by: Option<&str>) -> StoreFuture<'_, bool> {
        Box::pin(timed("completions", "complete", self.0.complete(id, outcome, by)))
    }

    fn status(&self, id: &str) -> StoreFuture<'_, UrlStatus> {
        Box::pin(timed("completions", "status", self.0.status(id)))
    }

    fn take(&self, id: &str, timeout: Duration) -> StoreFuture<'_, UrlStatus> {
        Box::pin(timed("completions", "take", self.0.take(id, timeout)))
    }

    fn release(&self, id: &str) {
        let started = Instant::now();
        self.0.release(id);
        metrics::histogram!("elicit_store_seconds", "store" => "completions", "op" => "release")
            .record(started.elapsed().as_secs_f64());
    }
}

impl FlowLedger for TimedStore {
    fn claim(
        &self,
        flow: &str,
        owner: &FlowOwner,
        at: &Slot,
        by: &ClaimToken,
        lease: Duration,
        ttl: Duration,
    ) -> StoreFuture<'_, Claim> {
        Box::pin(timed("ledger", "claim", self.0.claim(flow, owner, at, by, lease, ttl)))
    }

    fn record(&self, flow: &str, slot: &Slot, token: &ClaimToken, value: Value, ttl: Duration) -> StoreFuture<'_, ()> {
        Box::pin(timed("ledger", "record", self.0.record(flow, slot, token, value, ttl)))
    }

    fn abandon(&self, flow: &str, slot: &Slot, token: &ClaimToken) -> StoreFuture<'_, ()> {
        Box::pin(timed("ledger", "abandon", self.0.abandon(flow, slot, token)))
    }

    fn finish(
        &self,
        flow: &str,
        owner: &FlowOwner,
        answers: &RawValue,
        seen: &[Slot],
        ttl: Duration,
    ) -> StoreFuture<'_, Finish> {
        Box::pin(timed("ledger", "finish", self.0.finish(flow, owner, answers, seen, ttl)))
    }

    fn finished(&self, flow: &str) -> StoreFuture<'_, Option<Value>> {
        Box::pin(timed("ledger", "finished", self.0.finished(flow)))
    }

    fn snapshot(&self, flow: &str, ttl: Duration) -> StoreFuture<'_, LedgerSnapshot> {
        Box::pin(timed("ledger", "snapshot", self.0.snapshot(flow, ttl)))
    }

    fn extend(&self, flow: &str, ttl: Duration) -> StoreFuture<'_, ()> {
        Box::pin(timed("ledger", "extend", self.0.extend(flow, ttl)))
    }
}

impl TaskRecords for TimedTasks {
    fn create(&self, record: &TaskRecord, limits: TaskLimits) -> StoreFuture<'_, ()> {
        Box::pin(timed("tasks", "create", self.0.create(record, limits)))
    }

    fn save(&self, record: &TaskRecord) -> StoreFuture<'_, bool> {
        Box::pin(timed("tasks", "save", self.0.save(record)))
    }

    fn load(&self, id: &str) -> StoreFuture<'_, Option<TaskView>> {
        Box::pin(timed("tasks", "load", self.0.load(id)))
    }

    fn answer(&self, id: &str, answers: Map<String, Value>) -> StoreFuture<'_, ()> {
        Box::pin(timed("tasks", "answer", self.0.answer(id, answers)))
    }

    fn answers(&self, id: &str) -> StoreFuture<'_, Map<String, Value>> {
        Box::pin(timed("tasks", "answers", self.0.answers(id)))
    }

    fn cancel(&self, id: &str) -> StoreFuture<'_, ()> {
        Box::pin(timed("tasks", "cancel", self.0.cancel(id)))
    }

    fn cancel_requested(&self, id: &str) -> StoreFuture<'_, bool> {
        Box::pin(timed("tasks", "cancel_requested", self.0.cancel_requested(id)))
    }

    fn wait(&self, id: &str, timeout: Duration) -> StoreFuture<'_, ()> {
        Box::pin(timed("tasks", "wait", self.0.wait(id, timeout)))
    }

    fn watch(&self, id: &str) -> Option<StoreFuture<'_, ()>> {
        let watching = self.0.watch(id)?;
        Some(Box::pin(timed("tasks", "watch", watching)))
    }
}
