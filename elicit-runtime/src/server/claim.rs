//! The claims of ledger slots that [`Flow::once`](super::Flow::once) and URL-mode steps share: a
//! claim made under a random token with a lease, then recorded or abandoned through its guard;
//! and the envelope a claimed value is recorded in, with the history it belongs to. Below the
//! flow and the executors (a URL-mode wait records its completion under a claim).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use super::answer::FlowError;
use super::config::EngineConfig;
use super::store::{Claim, ClaimToken, FlowOwner, Slot, Store, StoreError};
use crate::wire::clip;

/// The key of the envelope a `once` value (and a URL-mode completion a flow took) is recorded in
/// (in the flow's ledger, and for `once` in the sealed state's cache): `{ENVELOPE: {"value": .., "answers": {key: digest, ..}}}`, the answers the round
/// had consumed when the value was computed. A value recorded without it (by an earlier version)
/// belongs to no history and is taken as it is.
const ENVELOPE: &str = "elicit.once";

/// A computed value in its envelope, with the history it belongs to.
pub(super) fn envelope(value: Value, history: &Map<String, Value>) -> Value {
    serde_json::json!({ ENVELOPE: { "value": value, "answers": history } })
}

/// A recorded value out of its envelope, and the history it belongs to (`None` for a value
/// recorded without one).
pub(super) fn unwrap_envelope(mut recorded: Value) -> (Value, Option<Map<String, Value>>) {
    let single = recorded.as_object().is_some_and(|outer| outer.len() == 1);
    let inner = recorded.get_mut(ENVELOPE).filter(|_| single).and_then(Value::as_object_mut);
    let wrapped = |inner: &&mut Map<String, Value>| {
        inner.contains_key("value") && inner.get("answers").is_some_and(Value::is_object)
    };
    let Some(inner) = inner.filter(wrapped) else { return (recorded, None) };
    let history = match inner.remove("answers") {
        Some(Value::Object(history)) => Some(history),
        _ => None,
    };
    (inner.remove("value").unwrap_or(Value::Null), history)
}

/// What claiming a slot gave.
pub(super) enum Claimed {
    /// The slot's recorded value.
    Done(Value),
    /// This round holds the slot: record or abandon it through the guard.
    Held(ClaimGuard),
}

/// A claim this round holds. Dropped without [`ClaimGuard::record`] or [`ClaimGuard::abandon`]
/// (the round was dropped half-way, even while the claim itself was still on the wire), it
/// abandons the claim with its token.
pub(super) struct ClaimGuard {
    store: Arc<dyn Store>,
    flow: String,
    /// Whom the flow's record counts against, should the claim (or a renewal) make it.
    owner: FlowOwner,
    slot: Slot,
    token: Option<ClaimToken>,
    ttl: Duration,
}

impl ClaimGuard {
    /// Claims `slot` of `flow` in `store` under a fresh token: its recorded value, or the claim
    /// (a claim that makes the flow's record counts it against `owner`).
    /// Waits, bounded by [`EngineConfig::once_wait`], while another token holds it; the lease is
    /// [`EngineConfig::claim_lease`], the record lives `ttl` after each write. The error fails
    /// the whole request (the caller records it so).
    pub(super) async fn claim(
        store: &Arc<dyn Store>,
        flow: String,
        owner: FlowOwner,
        slot: &Slot,
        config: &EngineConfig,
        ttl: Duration,
    ) -> Result<Claimed, FlowError> {
        let mut guard =
            ClaimGuard { store: store.clone(), flow, owner, slot: slot.clone(), token: Some(ClaimToken::mint()), ttl };
        let deadline = tokio::time::Instant::now() + config.once_wait;
        let mut pause = Duration::from_millis(2);
        loop {
            let token = guard.token().map_err(FlowError::Store)?;
            let claim = store.claim(&guard.flow, &guard.owner, slot, token, config.claim_lease, guard.ttl).await;
            match claim.map_err(FlowError::Store)? {
                Claim::Run => return Ok(Claimed::Held(guard)),
                Claim::Done(value) => {
                    guard.token = None;
                    return Ok(Claimed::Done(value));
                }
                Claim::Finished => {
                    guard.token = None;
                    return Err(FlowError::Failed(
                        "this flow has already finished: retry with the same requestState to get its result".to_owned(),
                    ));
                }
                Claim::Busy if tokio::time::Instant::now() >= deadline => {
                    guard.token = None;
                    return Err(FlowError::Failed(format!(
                        "`{}` is still being run by another round of this flow; retry later",
                        clip(slot.key())
                    )));
                }
                Claim::Busy => {
                    tokio::time::sleep(pause.min(deadline.saturating_duration_since(tokio::time::Instant::now())))
                        .await;
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
            }
        }
    }

    fn token(&self) -> Result<&ClaimToken, StoreError> {
        self.token.as_ref().ok_or(StoreError::ClaimLost)
    }

    /// Records the slot's value and lets the claim go.
    pub(super) async fn record(mut self, value: Value) -> Result<(), StoreError> {
        let recorded = self.store.record(&self.flow, &self.slot, self.token()?, value, self.ttl).await;
        if !matches!(recorded, Err(StoreError::Unavailable { .. })) {
            self.token = None;
        }
        recorded
    }

    /// Lets the claim go without a value; best effort (a failure leaves it to its lease).
    pub(super) async fn abandon(mut self) {
        let Some(token) = self.token.take() else { return };
        if let Err(error) = self.store.abandon(&self.flow, &self.slot, &token).await {
            tracing::warn!(target: "elicit_runtime", %error, "could not abandon an exactly-once claim");
        }
    }

    /// Renews the lease (a claim by the same token carries on).
    pub(super) async fn renew(&self, lease: Duration) {
        let Ok(token) = self.token() else { return };
        match self.store.claim(&self.flow, &self.owner, &self.slot, token, lease, self.ttl).await {
            Ok(Claim::Run) => {}
            Ok(_) => tracing::warn!(target: "elicit_runtime", "an exactly-once claim was taken over while it ran"),
            Err(error) => tracing::warn!(target: "elicit_runtime", %error, "could not renew an exactly-once claim"),
        }
    }
}

impl Drop for ClaimGuard {
    fn drop(&mut self) {
        let Some(token) = self.token.take() else { return };
        let (store, flow, slot) = (self.store.clone(), std::mem::take(&mut self.flow), self.slot.clone());
        let mut release = Box::pin(async move {
            let _ = store.abandon(&flow, &slot, &token).await;
        });
        // A store that answers at once (the in-process one) is released here, before the next
        // round can find the slot still claimed; one that needs I/O finishes on the runtime.
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        if release.as_mut().poll(&mut cx).is_ready() {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(release);
        }
    }
}
