//! [`InProcessStore`]: both store traits in this process's memory.

mod deadlines;
mod flow;
mod pages;
mod tasks;

pub use tasks::{DEFAULT_MAX_TASK_RECORDS, InProcessTasks};

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::Notify;

use super::{
    Claim, ClaimToken, Finish, FlowLedger, FlowOwner, LedgerSnapshot, RecordKind, Slot, StoreError, StoreFuture,
    UrlCompletions, UrlStatus,
};
use crate::server::clock::{Clock, SystemClock};
use deadlines::Deadlines;
use flow::{FlowKey, FlowOwners, FlowRecord, Held, read_answers};
use pages::Pages;

/// The default cap on live records of each kind (URL-mode steps, flows).
pub const DEFAULT_MAX_RECORDS: usize = 1_000_000;

/// The default cap on live URL-mode steps owned by one principal.
pub const DEFAULT_MAX_URL_RECORDS_PER_PRINCIPAL: usize = 1_000;

/// The default cap on live flow records one [`FlowOwner`] holds: a tenth of
/// [`DEFAULT_MAX_RECORDS`], so no one owner fills the store. A record lives as long as its flow's
/// states could be replayed (the state lifetime and a minute: 16 minutes by default), finished or
/// not, so the quota is also a rate: at the defaults, about a hundred multi-round flows a second
/// of one owner, sustained. Set it to what one principal (or one client address, or the anonymous
/// callers together) runs in a state lifetime, and the cap to a multiple of it.
pub const DEFAULT_MAX_FLOW_RECORDS_PER_PRINCIPAL: usize = 100_000;

/// How many expired records one operation sweeps at most, besides the one it touches: expiry
/// costs each operation O(log n) at worst, never a scan.
const SWEEP_BUDGET: usize = 32;

/// A record, when it expires, and the number it was made with, which its entry in the index of
/// deadlines names.
struct Record<T> {
    value: T,
    expires: SystemTime,
    seq: u64,
}

/// A URL-mode step. `owner`: the principal the step belongs to, if any; only they may complete it.
struct UrlRecord {
    status: UrlStatus,
    owner: Option<String>,
    notify: Arc<Notify>,
}

/// A record in the index of deadlines.
enum Expiring {
    Url(Arc<str>),
    Flow(FlowKey),
}

/// The caps, as configured.
#[derive(Clone, Copy)]
struct Caps {
    url: usize,
    flow: usize,
    per_principal: usize,
    flows_per_owner: usize,
}

/// The records of each kind by id, the index of their deadlines and the counts the caps read;
/// one lock for all. A URL-mode step's id is one allocation, shared by its table and the index;
/// a flow's id minted by the engine is none. Looking up a step, or a flow by a minted id,
/// allocates nothing.
#[derive(Default)]
struct Records {
    urls: HashMap<Arc<str>, Record<UrlRecord>>,
    flows: HashMap<FlowKey, Record<FlowRecord>>,
    deadlines: Deadlines<Expiring>,
    /// The finished flows' answers.
    pages: Pages,
    seq: u64,
    /// Live URL-mode steps by owner.
    owners: HashMap<String, usize>,
    flow_owners: FlowOwners,
}

impl Records {
    /// Removes up to `budget` records expired at `now`, earliest first. An entry of a record
    /// since removed (or remade) is dropped; one of a record whose life was extended goes back
    /// in at its new deadline.
    fn sweep(&mut self, now: SystemTime, budget: usize) {
        for _ in 0..budget {
            let Some((seq, expiring)) = self.deadlines.pop_due(now) else { return };
            match expiring {
                Expiring::Url(id) => match self.urls.get(&id) {
                    Some(record) if record.seq == seq && record.expires <= now => {
                        self.remove_url(&id);
                    }
                    Some(record) if record.seq == seq => {
                        self.deadlines.push(record.expires, seq, Expiring::Url(id));
                    }
                    _ => {}
                },
                Expiring::Flow(key) => match self.flows.get(&key) {
                    Some(record) if record.seq == seq && record.expires <= now => self.remove_flow(&key),
                    Some(record) if record.seq == seq => {
                        self.deadlines.push(record.expires, seq, Expiring::Flow(key));
                    }
                    _ => {}
                },
            }
        }
    }

    fn len(&self) -> usize {
        self.urls.len() + self.flows.len()
    }

    fn live_url(&mut self, id: &str, now: SystemTime) -> Option<&mut UrlRecord> {
        self.urls.get_mut(id).filter(|r| r.expires > now).map(|r| &mut r.value)
    }

    fn live_flow(&mut self, key: &FlowKey, now: SystemTime) -> Option<(&mut FlowRecord, &mut Pages)> {
        let Records { flows, pages, .. } = self;
        flows.get_mut(key).filter(|r| r.expires > now).map(|r| (&mut r.value, pages))
    }

    fn remove_url(&mut self, id: &str) -> Option<UrlRecord> {
        // Its entry in the index of deadlines stays, stale, until it comes due or is compacted.
        let record = self.urls.remove(id)?;
        if let Some(owner) = &record.value.owner
            && let Some(count) = self.owners.get_mut(owner.as_str())
        {
            *count -= 1;
            if *count == 0 {
                self.owners.remove(owner.as_str());
            }
        }
        Some(record.value)
    }

    fn remove_flow(&mut self, key: &FlowKey) {
        // As for a URL-mode step: its entry in the index of deadlines goes later.
        let Some(record) = self.flows.remove(key) else { return };
        if let Some(finished) = record.value.finished {
            self.pages.free(finished);
        }
        if let Some(owner) = record.value.owner {
            self.flow_owners.remove(&owner);
        }
    }

    /// Room for one more record of `kind` (owned by `owner`): expired ones are swept first
    /// (amortised: each record is swept once), then the caps decide.
    fn room(&mut self, kind: RecordKind, owner: Option<&str>, now: SystemTime, caps: Caps) -> Result<(), StoreError> {
        let full = |records: &Records| match kind {
            RecordKind::Url => records.urls.len() >= caps.url,
            RecordKind::Flow => records.flows.len() >= caps.flow,
        };
        let over_quota = |records: &Records| {
            owner.is_some_and(|o| records.owners.get(o).copied().unwrap_or(0) >= caps.per_principal)
        };
        if full(self) || over_quota(self) {
            self.sweep(now, usize::MAX);
        }
        if full(self) {
            let cap = if kind == RecordKind::Url { caps.url } else { caps.flow };
            return Err(StoreError::Full { kind, cap });
        }
        if over_quota(self) {
            return Err(StoreError::Quota { kind, cap: caps.per_principal });
        }
        Ok(())
    }

    /// The next sequence number, with `key` put in the index of deadlines under it (the record is
    /// inserted after: stale entries are compacted away first, while it is not there yet).
    fn index(&mut self, expires: SystemTime, key: Expiring) -> u64 {
        let Records { urls, flows, deadlines, .. } = self;
        deadlines.compact_if_stale(urls.len() + flows.len(), |seq, key| match key {
            Expiring::Url(id) => urls.get(id).is_some_and(|record| record.seq == seq),
            Expiring::Flow(key) => flows.get(key).is_some_and(|record| record.seq == seq),
        });
        self.seq = self.seq.wrapping_add(1);
        self.deadlines.push(expires, self.seq, key);
        self.seq
    }

    fn insert_url(&mut self, id: &str, value: UrlRecord, expires: SystemTime) {
        self.remove_url(id);
        if let Some(owner) = &value.owner {
            *self.owners.entry(owner.clone()).or_default() += 1;
        }
        let id: Arc<str> = Arc::from(id);
        let seq = self.index(expires, Expiring::Url(Arc::clone(&id)));
        self.urls.insert(id, Record { value, expires, seq });
    }

    /// The live record of `flow` (and the pages its answers are in), its life extended to at
    /// least `ttl` from now; created (within the cap and its owner's quota) when missing and
    /// `create` names its owner.
    fn flow(
        &mut self,
        flow: &FlowKey,
        ttl: Duration,
        now: SystemTime,
        caps: Caps,
        create: Option<&FlowOwner>,
    ) -> Result<Option<(&mut FlowRecord, &mut Pages)>, StoreError> {
        let expires = now + ttl;
        let live = self.flows.get(flow).map(|r| r.expires > now);
        match live {
            Some(true) => {
                // Moves the deadline later, never earlier; the index finds out when the record's
                // entry comes due.
                let Some(record) = self.flows.get_mut(flow) else { return Ok(None) };
                if record.expires < expires {
                    record.expires = expires;
                }
            }
            _ => {
                if live.is_some() {
                    self.remove_flow(flow);
                }
                let Some(owner) = create else { return Ok(None) };
                self.room(RecordKind::Flow, None, now, caps)?;
                // The owner's quota, expired records swept first when it is reached.
                if self.flow_owners.holds(owner) >= caps.flows_per_owner {
                    self.sweep(now, usize::MAX);
                    if self.flow_owners.holds(owner) >= caps.flows_per_owner {
                        return Err(StoreError::Quota { kind: RecordKind::Flow, cap: caps.flows_per_owner });
                    }
                }
                let owner = self.flow_owners.add(owner);
                let seq = self.index(expires, Expiring::Flow(flow.clone()));
                let value = FlowRecord { owner: Some(owner), ..FlowRecord::default() };
                self.flows.insert(flow.clone(), Record { value, expires, seq });
            }
        }
        let Records { flows, pages, .. } = self;
        Ok(flows.get_mut(flow).map(|r| (&mut r.value, pages)))
    }
}

/// The embedded default store: URL-mode steps and flows' ledger records in this process's memory,
/// with expiry and a wake-up so a retry waiting for completion returns as soon as the page is
/// submitted.
///
/// Bounded and fast at scale: at most [`InProcessStore::max_url_records`] URL-mode steps,
/// [`InProcessStore::max_url_records_per_principal`] of them per principal,
/// [`InProcessStore::max_flow_records`] flows' records and
/// [`InProcessStore::max_flow_records_per_principal`] of them per [`FlowOwner`] (a new one over a cap is refused
/// with a clear [`StoreError`]); expiry through an index of deadlines swept a few records per
/// operation, so no operation scans the store.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// use elicit_runtime::server::store::{InProcessStore, UrlCompletions, UrlStatus};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let store = Arc::new(InProcessStore::new());
/// store.register("pay-7", Duration::from_secs(60), None).await?;
/// // A retry waits (here at most a minute) and wakes as soon as the page completes the step.
/// let page = Arc::clone(&store);
/// let completed = tokio::spawn(async move { page.complete("pay-7", "approved".into(), None).await });
/// let status = store.take("pay-7", Duration::from_secs(60)).await?;
/// assert_eq!(status, UrlStatus::Completed("approved".into()));
/// assert!(completed.await.unwrap()?);
/// # Ok::<(), elicit_runtime::server::store::StoreError>(())
/// # }).unwrap();
/// ```
pub struct InProcessStore {
    records: Mutex<Records>,
    caps: Caps,
    clock: Arc<dyn Clock>,
}

impl Default for InProcessStore {
    fn default() -> Self {
        InProcessStore {
            records: Mutex::default(),
            caps: Caps {
                url: DEFAULT_MAX_RECORDS,
                flow: DEFAULT_MAX_RECORDS,
                per_principal: DEFAULT_MAX_URL_RECORDS_PER_PRINCIPAL,
                flows_per_owner: DEFAULT_MAX_FLOW_RECORDS_PER_PRINCIPAL,
            },
            clock: Arc::new(SystemClock),
        }
    }
}

impl InProcessStore {
    /// An empty store with the default caps ([`DEFAULT_MAX_RECORDS`] of each kind,
    /// [`DEFAULT_MAX_URL_RECORDS_PER_PRINCIPAL`] steps per principal,
    /// [`DEFAULT_MAX_FLOW_RECORDS_PER_PRINCIPAL`] flow records per owner).
    pub fn new() -> Self {
        InProcessStore::default()
    }

    /// Caps the live records of each kind at `max` (see the two setters below).
    pub fn max_records(self, max: usize) -> Self {
        self.max_url_records(max).max_flow_records(max)
    }

    /// Caps the live URL-mode steps: registering one more fails with [`StoreError::Full`] until
    /// some are taken, released or expire.
    pub fn max_url_records(mut self, max: usize) -> Self {
        self.caps.url = max;
        self
    }

    /// Caps the live flow records: a flow's first ledger record beyond it fails with
    /// [`StoreError::Full`]. Flows that have their record carry on.
    pub fn max_flow_records(mut self, max: usize) -> Self {
        self.caps.flow = max;
        self
    }

    /// Caps the live URL-mode steps one principal owns, so one client cannot fill the store for
    /// everyone: one more fails with [`StoreError::Quota`]. Steps without an owner are counted
    /// by the global cap only.
    pub fn max_url_records_per_principal(mut self, max: usize) -> Self {
        self.caps.per_principal = max;
        self
    }

    /// Caps the live flow records one [`FlowOwner`] holds (default
    /// [`DEFAULT_MAX_FLOW_RECORDS_PER_PRINCIPAL`]), so one principal or client cannot fill
    /// [`max_flow_records`](Self::max_flow_records) for everyone: a flow's first record beyond
    /// it fails with [`StoreError::Quota`] of [`RecordKind::Flow`], which the engine sends the
    /// client as a `-32603` saying so. A record counts, finished or not, until it expires (or an
    /// abandoned claim leaves it empty); anonymous callers count as [`FlowOwner`] says.
    pub fn max_flow_records_per_principal(mut self, max: usize) -> Self {
        self.caps.flows_per_owner = max;
        self
    }

    /// Reads the time from `clock` (default: the system's), for tests of expiry.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// How many records are held right now (live ones, and expired ones not swept yet).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether the store holds no record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Records> {
        // A poisoned lock only means another thread panicked mid-update of plain maps; the
        // records themselves stay consistent, so keep serving.
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn with_records<T>(&self, f: impl FnOnce(&mut Records, SystemTime) -> T) -> T {
        let mut records = self.lock();
        let now = self.clock.now();
        records.sweep(now, SWEEP_BUDGET);
        f(&mut records, now)
    }

    /// Removes a completed record and returns it; another taker racing for it gets `Unknown`.
    fn consume(&self, id: &str) -> UrlStatus {
        self.with_records(|records, now| match records.live_url(id, now) {
            Some(UrlRecord { status: UrlStatus::Completed(_), .. }) => {
                records.remove_url(id).map_or(UrlStatus::Unknown, |record| record.status)
            }
            Some(record) => record.status.clone(),
            None => UrlStatus::Unknown,
        })
    }

    fn current(&self, id: &str) -> (UrlStatus, Option<Arc<Notify>>) {
        self.with_records(|records, now| match records.live_url(id, now) {
            Some(record) => (record.status.clone(), Some(record.notify.clone())),
            None => (UrlStatus::Unknown, None),
        })
    }
}

impl UrlCompletions for InProcessStore {
    fn register(&self, id: &str, ttl: Duration, owner: Option<&str>) -> StoreFuture<'_, ()> {
        let id = id.to_owned();
        let owner = owner.map(str::to_owned);
        Box::pin(async move {
            self.with_records(|records, now| {
                if records.live_url(&id, now).is_some() {
                    return Ok(());
                }
                records.room(RecordKind::Url, owner.as_deref(), now, self.caps)?;
                let notify = Arc::new(Notify::new());
                records.insert_url(&id, UrlRecord { status: UrlStatus::Pending, owner, notify }, now + ttl);
                Ok(())
            })
        })
    }

    fn complete(&self, id: &str, outcome: Value, by: Option<&str>) -> StoreFuture<'_, bool> {
        let id = id.to_owned();
        let by = by.map(str::to_owned);
        Box::pin(async move {
            Ok(self.with_records(|records, now| match records.live_url(&id, now) {
                Some(UrlRecord { status, owner, notify })
                    if *status == UrlStatus::Pending
                        && owner.as_ref().is_none_or(|owner| by.as_ref() == Some(owner)) =>
                {
                    *status = UrlStatus::Completed(outcome);
                    notify.notify_waiters();
                    true
                }
                _ => false,
            }))
        })
    }

    fn status(&self, id: &str) -> StoreFuture<'_, UrlStatus> {
        let id = id.to_owned();
        Box::pin(async move { Ok(self.current(&id).0) })
    }

    fn take(&self, id: &str, timeout: Duration) -> StoreFuture<'_, UrlStatus> {
        let id = id.to_owned();
        Box::pin(async move {
            let deadline = tokio::time::Instant::now() + timeout;
            loop {
                let (status, notify) = self.current(&id);
                if matches!(status, UrlStatus::Completed(_)) {
                    return Ok(self.consume(&id));
                }
                let Some(notify) = notify.filter(|_| status == UrlStatus::Pending) else { return Ok(status) };
                let notified = notify.notified();
                tokio::pin!(notified);
                // Register interest before re-checking, so a completion in between is not missed.
                notified.as_mut().enable();
                if self.current(&id).0 != UrlStatus::Pending {
                    continue;
                }
                if tokio::time::timeout_at(deadline, notified).await.is_err() {
                    return Ok(match self.current(&id).0 {
                        UrlStatus::Completed(_) => self.consume(&id),
                        other => other,
                    });
                }
            }
        })
    }

    fn release(&self, id: &str) {
        self.with_records(|records, _| records.remove_url(id));
    }
}

impl FlowLedger for InProcessStore {
    fn claim(
        &self,
        flow: &str,
        owner: &FlowOwner,
        at: &Slot,
        by: &ClaimToken,
        lease: Duration,
        ttl: Duration,
    ) -> StoreFuture<'_, Claim> {
        let (flow, name, token, owner) = (FlowKey::of(flow), at.name(), by.as_str().to_owned(), owner.clone());
        Box::pin(async move {
            self.with_records(|records, now| {
                let Some((record, _)) = records.flow(&flow, ttl, now, self.caps, Some(&owner))? else {
                    return Err(StoreError::Invalid { detail: "a flow record went missing".to_owned() });
                };
                let claim = Held::Claimed { token: token.clone(), until: now + lease };
                Ok(match record.slots.get(&name) {
                    Some(Held::Recorded(value)) => Claim::Done(value.clone()),
                    // A finished flow runs nothing more, a slot left claimed (a stale lease, a
                    // retried claim) included.
                    _ if record.finished.is_some() => Claim::Finished,
                    Some(Held::Claimed { token: holder, until }) if *holder != token && *until > now => Claim::Busy,
                    Some(Held::Claimed { .. }) => {
                        record.slots.insert(name, claim);
                        Claim::Run
                    }
                    None if record.finished.is_some() => Claim::Finished,
                    None => {
                        record.slots.insert(name, claim);
                        Claim::Run
                    }
                })
            })
        })
    }

    fn record(&self, flow: &str, slot: &Slot, token: &ClaimToken, value: Value, ttl: Duration) -> StoreFuture<'_, ()> {
        let (flow, name, token) = (FlowKey::of(flow), slot.name(), token.as_str().to_owned());
        Box::pin(async move {
            self.with_records(|records, now| {
                let (record, _) = records.flow(&flow, ttl, now, self.caps, None)?.ok_or(StoreError::ClaimLost)?;
                match record.slots.get(&name) {
                    Some(Held::Claimed { token: holder, .. }) if *holder == token => {}
                    Some(Held::Recorded(recorded)) if *recorded == value => return Ok(()),
                    _ => return Err(StoreError::ClaimLost),
                }
                record.slots.insert(name, Held::Recorded(value));
                Ok(())
            })
        })
    }

    fn abandon(&self, flow: &str, slot: &Slot, token: &ClaimToken) -> StoreFuture<'_, ()> {
        let (flow, name, token) = (FlowKey::of(flow), slot.name(), token.as_str().to_owned());
        Box::pin(async move {
            self.with_records(|records, now| {
                let Some((record, _)) = records.live_flow(&flow, now) else { return };
                if matches!(record.slots.get(&name), Some(Held::Claimed { token: holder, .. }) if *holder == token) {
                    record.slots.remove(&name);
                }
                if record.slots.is_empty() && record.finished.is_none() {
                    records.remove_flow(&flow);
                }
            });
            Ok(())
        })
    }

    fn finish(
        &self,
        flow: &str,
        owner: &FlowOwner,
        answers: &RawValue,
        seen: &[Slot],
        ttl: Duration,
    ) -> StoreFuture<'_, Finish> {
        let (flow, owner) = (FlowKey::of(flow), owner.clone());
        let seen: Vec<String> = seen.iter().map(Slot::name).collect();
        let text = answers.get().to_owned();
        Box::pin(async move {
            self.with_records(|records, now| {
                let Some((record, pages)) = records.flow(&flow, ttl, now, self.caps, Some(&owner))? else {
                    return Err(StoreError::Invalid { detail: "a flow record went missing".to_owned() });
                };
                if let Some(already) = &record.finished {
                    return Ok(Finish::Already(read_answers(pages, already)?));
                }
                let unseen = record.slots.iter().any(|(name, held)| {
                    !seen.contains(name) && !matches!(held, Held::Claimed { until, .. } if *until <= now)
                });
                if unseen {
                    return Ok(Finish::Conflict);
                }
                record.finished = Some(pages.keep(&text));
                Ok(Finish::Recorded)
            })
        })
    }

    fn finished(&self, flow: &str) -> StoreFuture<'_, Option<Value>> {
        let flow = FlowKey::of(flow);
        Box::pin(async move {
            self.with_records(|records, now| match records.live_flow(&flow, now) {
                Some((record, pages)) => record.finished.as_ref().map(|text| read_answers(pages, text)).transpose(),
                None => Ok(None),
            })
        })
    }

    fn extend(&self, flow: &str, ttl: Duration) -> StoreFuture<'_, ()> {
        let flow = FlowKey::of(flow);
        Box::pin(
            async move { self.with_records(|records, now| records.flow(&flow, ttl, now, self.caps, None).map(drop)) },
        )
    }

    fn snapshot(&self, flow: &str, ttl: Duration) -> StoreFuture<'_, LedgerSnapshot> {
        let flow = FlowKey::of(flow);
        Box::pin(async move {
            self.with_records(|records, now| {
                let Some((record, pages)) = records.flow(&flow, ttl, now, self.caps, None)? else {
                    return Ok(LedgerSnapshot::default());
                };
                let recorded = record.slots.iter().filter_map(|(name, held)| match held {
                    Held::Recorded(value) => Slot::from_name(name).map(|slot| (slot, value.clone())),
                    Held::Claimed { .. } => None,
                });
                Ok(LedgerSnapshot {
                    finished: record.finished.as_ref().map(|text| read_answers(pages, text)).transpose()?,
                    recorded: recorded.collect(),
                })
            })
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
mod tests;
