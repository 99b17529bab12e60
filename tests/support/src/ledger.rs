//! A store whose claims the test delays or loses: [`FaultyClaims`] hands every call of
//! [`UrlCompletions`] and [`FlowLedger`] to an inner store, and answers a claim as its current
//! [`ClaimFault`] says. The engine tests and the fuzz target `exactly_once` put it between an engine
//! and a real store.

use std::sync::Mutex;
use std::time::Duration;

use elicit_runtime::server::store::{
    Claim, ClaimToken, Finish, FlowLedger, FlowOwner, LedgerSnapshot, Slot, StoreError, StoreFuture, UrlCompletions,
    UrlStatus,
};
use serde_json::Value;
use serde_json::value::RawValue;

/// How the next claims reach the inner store and come back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClaimFault {
    /// At once.
    #[default]
    None,
    /// The claim reaches the store this long after it was made.
    Before(Duration),
    /// The store's reply comes back this long after the store answered.
    After(Duration),
    /// The claim lands in the store and its reply is lost: the caller sees
    /// [`StoreError::Unavailable`].
    ReplyLost,
}

/// A store that passes every call to `inner`, its claims late or unanswered as [`ClaimFault`] says
/// (changed between calls with [`set_fault`](Self::set_fault)).
#[derive(Debug)]
pub struct FaultyClaims<S> {
    inner: S,
    fault: Mutex<ClaimFault>,
}

impl<S> FaultyClaims<S> {
    /// `inner`, its claims answered as `fault` says.
    pub fn new(inner: S, fault: ClaimFault) -> Self {
        FaultyClaims { inner, fault: Mutex::new(fault) }
    }

    /// How the claims made from now on are answered.
    pub fn set_fault(&self, fault: ClaimFault) {
        *self.fault.lock().unwrap_or_else(|e| e.into_inner()) = fault;
    }

    fn fault(&self) -> ClaimFault {
        *self.fault.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<S: UrlCompletions> UrlCompletions for FaultyClaims<S> {
    fn register(&self, id: &str, ttl: Duration, owner: Option<&str>) -> StoreFuture<'_, ()> {
        self.inner.register(id, ttl, owner)
    }
    fn complete(&self, id: &str, outcome: Value, by: Option<&str>) -> StoreFuture<'_, bool> {
        self.inner.complete(id, outcome, by)
    }
    fn status(&self, id: &str) -> StoreFuture<'_, UrlStatus> {
        self.inner.status(id)
    }
    fn take(&self, id: &str, timeout: Duration) -> StoreFuture<'_, UrlStatus> {
        self.inner.take(id, timeout)
    }
    fn release(&self, id: &str) {
        self.inner.release(id);
    }
}

impl<S: FlowLedger> FlowLedger for FaultyClaims<S> {
    fn claim(
        &self,
        flow: &str,
        owner: &FlowOwner,
        slot: &Slot,
        token: &ClaimToken,
        lease: Duration,
        ttl: Duration,
    ) -> StoreFuture<'_, Claim> {
        let (flow, owner, slot, token) = (flow.to_owned(), owner.clone(), slot.clone(), token.clone());
        Box::pin(async move {
            let fault = self.fault();
            if let ClaimFault::Before(delay) = fault {
                tokio::time::sleep(delay).await;
            }
            let claimed = self.inner.claim(&flow, &owner, &slot, &token, lease, ttl).await;
            match fault {
                ClaimFault::After(delay) => tokio::time::sleep(delay).await,
                ClaimFault::ReplyLost => {
                    return Err(StoreError::Unavailable { store: "faulty".into(), detail: "reply lost".into() });
                }
                ClaimFault::None | ClaimFault::Before(_) => {}
            }
            claimed
        })
    }
    fn record(&self, flow: &str, slot: &Slot, token: &ClaimToken, value: Value, ttl: Duration) -> StoreFuture<'_, ()> {
        self.inner.record(flow, slot, token, value, ttl)
    }
    fn abandon(&self, flow: &str, slot: &Slot, token: &ClaimToken) -> StoreFuture<'_, ()> {
        self.inner.abandon(flow, slot, token)
    }
    fn finish(
        &self,
        flow: &str,
        owner: &FlowOwner,
        answers: &RawValue,
        seen: &[Slot],
        ttl: Duration,
    ) -> StoreFuture<'_, Finish> {
        self.inner.finish(flow, owner, answers, seen, ttl)
    }
    fn finished(&self, flow: &str) -> StoreFuture<'_, Option<Value>> {
        self.inner.finished(flow)
    }
    fn extend(&self, flow: &str, ttl: Duration) -> StoreFuture<'_, ()> {
        self.inner.extend(flow, ttl)
    }
    fn snapshot(&self, flow: &str, ttl: Duration) -> StoreFuture<'_, LedgerSnapshot> {
        self.inner.snapshot(flow, ttl)
    }
}
